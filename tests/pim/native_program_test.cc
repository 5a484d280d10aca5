// DPU C programs on the emulator (pimopt/pim/native_program.h): a program written for the UPMEM SDK, compiled by
// build/pimopt-dpu-cc (clang with pimopt's DPU pass), runs on any number of DPUs with each DPU's own globals, its
// initialized variables set at load, its barrier holding, its results right, and its time charged.
#include "pimopt/pim/native_program.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "pimopt/core/error.h"
#include "pimopt/pim/system.h"

namespace pimopt::pim {
namespace native_program_test {

TEST(NativeProgram, VectorAddRunsOnEveryDpuWithItsOwnGlobals) {
  PimSystem system(MakeProfile("pim-opt"));
  const uint32_t dpus = 4, n = 4096;
  DpuSet set = system.Allocate(dpus);
  set.Load(LoadNativeProgram(std::string(PIMOPT_DPU_PROGRAMS) + "/vector_add.dpu"));
  std::vector<std::vector<int32_t>> in(dpus, std::vector<int32_t>(2 * n));
  for (uint32_t d = 0; d < dpus; ++d) {
    for (uint32_t i = 0; i < n; ++i) {
      in[d][i] = static_cast<int32_t>(d * 1000 + i);
      in[d][n + i] = static_cast<int32_t>(3 * i);
    }
    set.PrepareXfer(d, in[d].data(), 8 * n);
  }
  set.PushXfer(XferDirection::kToDpu, kMramHeapSymbol, 0, 8 * n);
  set.BroadcastTo("n", 0, &n, sizeof(n));
  const LaunchStats first = set.Launch();
  set.Launch();
  std::vector<std::vector<int32_t>> out(dpus, std::vector<int32_t>(n));
  for (uint32_t d = 0; d < dpus; ++d) set.PrepareXfer(d, out[d].data(), 4 * n);
  set.PushXfer(XferDirection::kFromDpu, kMramHeapSymbol, 8 * n, 4 * n);
  for (uint32_t d = 0; d < dpus; ++d) {
    for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(out[d][i], static_cast<int32_t>(d * 1000 + 4 * i)) << d << " " << i;
    uint32_t launches = 0;
    uint64_t cycles = 0;
    set.CopyFrom(d, "launches", 0, &launches, sizeof(launches));
    set.CopyFrom(d, "cycles", 0, &cycles, sizeof(cycles));
    EXPECT_EQ(launches, 102u);  // initialized to 100 at load, one more per launch on each DPU
    EXPECT_GT(cycles, 0u);
  }
  EXPECT_GT(first.slowest.total, 0.0);
  std::printf("vector_add: %u DPUs x %u elements, %.0f cycles per launch, %llu issue slots\n", dpus, n,
              first.slowest.total, static_cast<unsigned long long>(first.issue_slots));
  for (size_t op = 0; op < kNumOps; ++op) {
    if (first.op_counts[op]) std::printf("  %s %llu\n", OpName(static_cast<Op>(op)), static_cast<unsigned long long>(first.op_counts[op]));
  }
}

std::string Program(const char* name) { return std::string(PIMOPT_DPU_PROGRAMS) + "/" + name + ".dpu"; }

// The message of the PimError a launch of `set` must fail with; a test failure saying `what_ran` when it does not.
std::string LaunchFault(DpuSet& set, const std::string& what_ran) {
  try {
    set.Launch();
  } catch (const PimError& e) {
    return e.what();
  }
  ADD_FAILURE() << what_ran;
  return "";
}

// A mutex the tasklets of each DPU share: every increment counts, on every DPU (one object per DPU's WRAM).
TEST(NativeProgram, AMutexSerializesTheTaskletsOfEachDpu) {
  PimSystem system(MakeProfile("pim-opt"));
  DpuSet set = system.Allocate(3);
  set.Load(LoadNativeProgram(Program("mutex_counter")));
  const uint32_t rounds = 25;
  set.BroadcastTo("rounds", 0, &rounds, sizeof(rounds));
  const LaunchStats stats = set.Launch();
  for (uint32_t d = 0; d < 3; ++d) {
    uint32_t counter = 0;
    set.CopyFrom(d, "counter", 0, &counter, sizeof(counter));
    EXPECT_EQ(counter, 16 * rounds) << "DPU " << d;
  }
  EXPECT_GT(stats.lock_contentions, 0u);  // 16 tasklets on one mutex
}

// A block that takes a lock, works and releases it is charged its work while the lock is held: the tasklets wait
// for each other. Charged whole at the block's start (as the pass did before), the work ran before the lock was taken
// and the locked rounds took no longer than the unlocked ones.
TEST(NativeProgram, WorkBetweenTwoEventsOfABlockIsChargedBetweenThem) {
  PimSystem system(MakeProfile("pim-opt"));
  auto run = [&](uint32_t inside) {
    DpuSet set = system.Allocate(1);
    set.Load(LoadNativeProgram(Program("locked_work")));
    const uint32_t rounds = 20;
    set.BroadcastTo("rounds", 0, &rounds, sizeof(rounds));
    set.BroadcastTo("inside", 0, &inside, sizeof(inside));
    return set.Launch();
  };
  const LaunchStats locked = run(1), unlocked = run(0);
  EXPECT_NEAR(static_cast<double>(locked.issue_slots), static_cast<double>(unlocked.issue_slots),
              0.05 * static_cast<double>(unlocked.issue_slots));
  // 16 tasklets one after another at one instruction per 11 cycles, against the pipeline kept full.
  EXPECT_GT(locked.slowest.total, 4 * unlocked.slowest.total);
  EXPECT_GT(locked.slowest.sync, 0.5 * locked.slowest.total);
}

// A DMA size known only at run time goes through the DPU's 8-bit length field (0 bytes move 2,048, 12 move 8) and is
// counted as resized; the same size as a constant is refused (ABrokenDpuRuleIsTheEmulatorsError).
TEST(NativeProgram, ARunTimeDmaSizeGoesThroughTheLengthField) {
  PimSystem system(MakeProfile("pim-opt"));
  DpuSet set = system.Allocate(1);
  set.Load(LoadNativeProgram(Program("runtime_dma_size")));
  std::vector<uint8_t> mram(4096);
  for (size_t i = 0; i < mram.size(); ++i) mram[i] = static_cast<uint8_t>(i * 7 + 1);
  set.CopyTo(0, kMramHeapSymbol, 0, mram.data(), mram.size());
  for (uint32_t size : {0u, 12u, 2056u, 64u}) {
    set.CopyTo(0, "size", 0, &size, sizeof(size));
    const LaunchStats stats = set.Launch();
    uint32_t moved = 0;
    set.CopyFrom(0, "moved", 0, &moved, sizeof(moved));
    const uint32_t expected = size == 0 ? 2048 : size == 12 ? 8 : size == 2056 ? 8 : size;
    EXPECT_EQ(moved, expected) << "size " << size;
    EXPECT_EQ(stats.resized_dmas, expected == size ? 0u : 1u) << "size " << size;
  }
}

// A pool of mutexes chosen by key (mutex_pool.h): keys that map to the same mutex serialize, every count is exact.
TEST(NativeProgram, AMutexPoolSerializesTheKeysThatShareAMutex) {
  PimSystem system(MakeProfile("pim-opt"));
  DpuSet set = system.Allocate(2);
  set.Load(LoadNativeProgram(Program("mutex_pool_counter")));
  const uint32_t rounds = 40;
  set.BroadcastTo("rounds", 0, &rounds, sizeof(rounds));
  const LaunchStats stats = set.Launch();
  for (uint32_t d = 0; d < 2; ++d) {
    uint32_t counters[4] = {};
    set.CopyFrom(d, "counters", 0, counters, sizeof(counters));
    EXPECT_EQ(counters[0] + counters[1] + counters[2] + counters[3], 16 * rounds) << "DPU " << d;
    for (uint32_t k = 0; k < 4; ++k) EXPECT_EQ(counters[k], 4 * rounds) << "DPU " << d << " counter " << k;
  }
  EXPECT_GT(stats.lock_contentions, 0u);
}

// MRAM variables (an initialized table, buffers without initial values) and the DPU's software multiply and divide:
// the results are C's, and the multiplies and divides are charged by their data-dependent steps.
TEST(NativeProgram, MramVariablesAndSoftwareArithmetic) {
  PimSystem system(MakeProfile("pim-opt"));
  DpuSet set = system.Allocate(2);
  set.Load(LoadNativeProgram(Program("mram_arith")));
  const int32_t divisors[8] = {1, 2, 3, 5, 7, 11, 13, -17};
  std::vector<std::vector<int32_t>> values(2, std::vector<int32_t>(64));
  for (uint32_t d = 0; d < 2; ++d) {
    for (int i = 0; i < 64; ++i) values[d][i] = (i - 20) * 1237 + static_cast<int>(d) * 99991;
    set.CopyTo(d, "values", 0, values[d].data(), 4 * 64);
  }
  const LaunchStats stats = set.Launch();
  for (uint32_t d = 0; d < 2; ++d) {
    std::vector<int32_t> products(64), quotients(64);
    set.CopyFrom(d, "products", 0, products.data(), 4 * 64);
    set.CopyFrom(d, "quotients", 0, quotients.data(), 4 * 64);
    for (int i = 0; i < 64; ++i) {
      EXPECT_EQ(products[i], values[d][i] * divisors[i % 8]) << d << " " << i;
      EXPECT_EQ(quotients[i], values[d][i] / divisors[i % 8]) << d << " " << i;
    }
  }
  EXPECT_GT(stats.op_counts[static_cast<size_t>(Op::kMulStep)], 0u);
  EXPECT_GT(stats.op_counts[static_cast<size_t>(Op::kDivStep)], 0u);
}

// A DMA the DPU refuses fails the launch with the emulator's error, naming the program, the DPU and the tasklet.
TEST(NativeProgram, ABrokenDpuRuleIsTheEmulatorsError) {
  PimSystem system(MakeProfile("pim-opt"));
  DpuSet set = system.Allocate(1);
  set.Load(LoadNativeProgram(Program("bad_dma")));
  const std::string what = LaunchFault(set, "a 12-byte DMA was accepted");
  EXPECT_NE(what.find("bad_dma.dpu"), std::string::npos) << what;
  EXPECT_NE(what.find("12"), std::string::npos) << what;
}

// A program's own definition of a C library function (PIM-Opt's programs bring a table-based expf) is what its calls
// reach: the emulator's process has the C library's too, and a call that went there would silently compute and
// charge something else.
// The tasklets are the command line's NR_TASKLETS whatever the program includes; 1 (the SDK's default) without it.
TEST(NativeProgram, TheTaskletsAreTheCommandLinesWhateverTheProgramIncludes) {
  EXPECT_EQ(LoadNativeProgram(Program("no_defs_t3"))->Spec().tasklets, 3u);
  EXPECT_EQ(LoadNativeProgram(Program("no_defs_default"))->Spec().tasklets, 1u);
  PimSystem system(MakeProfile("pim-opt"));
  DpuSet set = system.Allocate(1);
  set.Load(LoadNativeProgram(Program("no_defs_t3")));
  set.Launch();
  uint32_t runs = 0;
  set.CopyFrom(0, "runs", 0, &runs, 4);
  EXPECT_EQ(runs, 3u);
}

// The SDK compiler's __builtin_nop_ is one issue slot each, never optimized away; the SDK's macros and attributes
// that programs write without a header of their own compile and run.
TEST(NativeProgram, TheSdkCompilersBuiltinsAndMacrosWork) {
  PimSystem system(MakeProfile("pim-opt"));
  DpuSet set = system.Allocate(1);
  set.Load(LoadNativeProgram(Program("sdk_builtins")));
  const uint64_t idle = set.Launch().issue_slots;
  uint64_t section[2] = {};  // dpu_profiling_t: start, cycles (summed over the launches)
  set.CopyFrom(0, "section", 0, section, sizeof section);
  const uint64_t idle_cycles = section[1];
  const uint32_t spins = 1000;
  set.CopyTo(0, "spins", 0, &spins, 4);
  const uint64_t spinning = set.Launch().issue_slots;
  set.CopyFrom(0, "section", 0, section, sizeof section);
  EXPECT_GE(section[1] - idle_cycles, spins);  // the profiling section counted at least tasklet 0's 1,000 nops
  EXPECT_GE(spinning - idle, 16u * spins);      // at least the nops of 16 tasklets
  EXPECT_LE(spinning - idle, 16u * spins * 6);  // and the loop around them
  uint32_t passed = 0;
  set.CopyFrom(0, "passed", 0, &passed, 4);
  EXPECT_EQ(passed, 32u);
}

// A semaphore's count stays between launches (a WRAM variable of the program) and is set again only by a load.
TEST(NativeProgram, ASemaphoreKeepsItsCountBetweenLaunches) {
  for (const uint32_t dpus : {1u, 8u}) {  // 8 DPUs on the test's threads also follow each other's logged launches
    PimSystem system(MakeProfile("pim-opt"), 2);
    DpuSet set = system.Allocate(dpus);
    set.Load(LoadNativeProgram(Program("sem_across_launches")));
    auto launch = [&](uint32_t give) {
      set.BroadcastTo("give", 0, &give, 4);
      set.Launch();
    };
    launch(1);
    launch(1);
    launch(0);
    launch(0);  // both tokens of the two earlier launches
    for (uint32_t d = 0; d < dpus; ++d) {
      uint32_t taken = 0;
      set.CopyFrom(d, "taken", 0, &taken, 4);
      EXPECT_EQ(taken, 2u) << d;
    }
    EXPECT_THROW(launch(0), PimError) << dpus;  // none left: a deadlock
    set.Load(LoadNativeProgram(Program("sem_across_launches")));
    launch(1);
    launch(0);  // a load starts from the SEMAPHORE_INIT count again, then the given token
  }
}

// Mutexes are the SDK's bytes: the bytes of a program's array, held by different tasklets at once, each count exact.
TEST(NativeProgram, TheBytesOfAnArrayAreMutexesOfTheirOwn) {
  PimSystem system(MakeProfile("pim-opt"));
  DpuSet set = system.Allocate(2);
  set.Load(LoadNativeProgram(Program("mutex_bytes")));
  set.Launch();
  for (uint32_t d = 0; d < 2; ++d) {
    uint32_t counters[16] = {};
    set.CopyFrom(d, "counters", 0, counters, sizeof counters);
    for (uint32_t k = 0; k < 16; ++k) EXPECT_EQ(counters[k], 16u * 20u) << "DPU " << d << ", lock " << k;
  }
}

// A false assert() is the DPU's fault, with the expression, the line and the tasklet; the emulator's process lives on.
TEST(NativeProgram, AFalseAssertionIsTheDpusFaultNamingItsLine) {
  PimSystem system(MakeProfile("pim-opt"));
  DpuSet set = system.Allocate(2);
  set.Load(LoadNativeProgram(Program("assert_fault")));
  uint32_t value = 1;
  set.CopyTo(1, "value", 0, &value, 4);
  set.Launch();  // true: nothing happens
  value = 3;
  set.CopyTo(1, "value", 0, &value, 4);
  const std::string what = LaunchFault(set, "a false assertion ran on");
  EXPECT_NE(what.find("assert_fault.c:9: assertion failed: value != 3"), std::string::npos) << what;
  EXPECT_NE(what.find("DPU 1"), std::string::npos) << what;
}

// WRAM and stack pointers kept in 32 bits come back whole (the emulator maps them below 2 GiB on x86-64 Linux).
TEST(NativeProgram, AWramPointerKeptIn32BitsComesBackWhole) {
  PimSystem system(MakeProfile("pim-opt"));
  DpuSet set = system.Allocate(3);
  set.Load(LoadNativeProgram(Program("wram_pointer_32")));
  set.Launch();
  for (uint32_t d = 0; d < 3; ++d) {
    uint32_t heap = 0, stack = 0;
    set.CopyFrom(d, "from_heap", 0, &heap, 4);
    set.CopyFrom(d, "from_stack", 0, &stack, 4);
    EXPECT_EQ(heap, 42u) << d;
    EXPECT_EQ(stack, 9u) << d;
  }
}

// A loop that stops at a null pointer stops there (an optimizer once deleted the test: pointer_chain.c).
TEST(NativeProgram, AWalkAlongAPointerChainStopsAtItsEnd) {
  PimSystem system(MakeProfile("pim-opt"));
  DpuSet set = system.Allocate(1);
  set.Load(LoadNativeProgram(Program("pointer_chain")));
  set.Launch();
  uint32_t steps = 0, sum = 0;
  set.CopyFrom(0, "steps", 0, &steps, 4);
  set.CopyFrom(0, "sum", 0, &sum, 4);
  EXPECT_EQ(steps, 5u);
  EXPECT_EQ(sum, 15u);
}

// The SDK's fixed-size block allocator: the tasklets share its blocks, each taken once, none overlapping, every one
// back after fsb_free, NULL when none is left.
TEST(NativeProgram, TheFixedSizeBlockAllocatorSharesItsBlocksAmongTheTasklets) {
  PimSystem system(MakeProfile("pim-opt"));
  DpuSet set = system.Allocate(1);
  set.Load(LoadNativeProgram(Program("fsb_blocks")));
  for (int launch = 0; launch < 2; ++launch) {  // mem_reset: the heap starts afresh at each launch
    set.Launch();
    uint32_t got[16] = {}, intact = 0, regot = 0, refused = 0;
    set.CopyFrom(0, "got", 0, got, sizeof got);
    set.CopyFrom(0, "intact", 0, &intact, 4);
    set.CopyFrom(0, "regot", 0, &regot, 4);
    set.CopyFrom(0, "refused", 0, &refused, 4);
    uint32_t total = 0;
    for (uint32_t n : got) total += n;
    EXPECT_EQ(total, 20u);  // 16 tasklets asked for 8 each
    EXPECT_EQ(intact, 1u);
    EXPECT_EQ(regot, 20u);
    EXPECT_EQ(refused, 1u);
  }
}

// The runtime's CLOCKS_PER_SEC: the profile's DPU frequency, for the program and for its host by name.
TEST(NativeProgram, ClocksPerSecIsTheProfilesFrequency) {
  for (const char* name : {"pim-opt", "prim-2556"}) {
    const HardwareProfile profile = MakeProfile(name);
    PimSystem system(profile);
    DpuSet set = system.Allocate(2);
    set.Load(LoadNativeProgram(Program("clocks_per_sec")));
    uint32_t hz = 0;
    set.CopyFrom(1, "CLOCKS_PER_SEC", 0, &hz, sizeof hz);
    EXPECT_EQ(hz, static_cast<uint32_t>(profile.dpu_frequency_hz)) << name;
    set.Launch();
    uint32_t seen = 0;
    set.CopyFrom(0, "seen", 0, &seen, sizeof seen);
    EXPECT_EQ(seen, hz) << name;
  }
}

// A program's own definition of a C library function is the one its calls run, even where the host's compiler knows
// the function as an instruction.
TEST(NativeProgram, AProgramsOwnLibraryFunctionIsTheOneItCalls) {
  PimSystem system(MakeProfile("pim-opt"));
  DpuSet set = system.Allocate(1);
  set.Load(LoadNativeProgram(Program("own_expf")));
  const float in = 3.0f;
  set.CopyTo(0, "in", 0, &in, sizeof in);
  set.Launch();
  float out = 0;
  set.CopyFrom(0, "out", 0, &out, sizeof out);
  EXPECT_EQ(out, 6.0f);  // the C library's expf(3) is 20.09
  // Functions the host's compiler would make an instruction of (sqrtss, andps, roundss): the program's own.
  set.CopyFrom(0, "out_sqrt", 0, &out, sizeof out);
  EXPECT_EQ(out, 1.5f);  // sqrt(3) is 1.73
  set.CopyFrom(0, "out_fabs", 0, &out, sizeof out);
  EXPECT_EQ(out, -2.0f);
  set.CopyFrom(0, "out_floor", 0, &out, sizeof out);
  EXPECT_EQ(out, 2.0f);
}

// A WRAM load through an MRAM variable's address (PIM-Opt's programs read the first MRAM variable's address that
// way): where it lands on the DPU's zero word at WRAM address 0 it reads zero, as on the DPU; anywhere else its value
// depends on the SDK's WRAM layout, and the tasklet stops with an error naming the line, instead of reading host
// memory at a meaningless address.
TEST(NativeProgram, AWramLoadThroughAnMramAddressReadsTheZeroWordOrIsAnErrorNamingTheLine) {
  PimSystem system(MakeProfile("pim-opt"));
  DpuSet set = system.Allocate(1);
  set.Load(LoadNativeProgram(Program("mram_as_wram")));
  set.Launch();
  uint32_t base = 0;
  set.CopyFrom(0, "base", 0, &base, 4);
  EXPECT_EQ(base, 1u);  // 0 + 1
  const uint32_t which = 1;
  set.CopyTo(0, "which", 0, &which, 4);
  const std::string load = LaunchFault(set, "the load through an MRAM address beyond the zero word ran");
  EXPECT_NE(load.find("mram_as_wram.c:17"), std::string::npos) << load;
  EXPECT_NE(load.find("MRAM variable 'RESULTS'"), std::string::npos) << load;
  const uint32_t store = 2;  // a store through it: an error too, even where a load would read the zero word
  set.CopyTo(0, "which", 0, &store, 4);
  const std::string store_fault = LaunchFault(set, "the store through an MRAM address ran");
  EXPECT_NE(store_fault.find("mram_as_wram.c:18"), std::string::npos) << store_fault;
  EXPECT_NE(store_fault.find("a WRAM store through the address of MRAM variable 'RESULTS'"), std::string::npos)
      << store_fault;
}

// What is not a program of pimopt-dpu-cc is refused naming the file.
TEST(NativeProgram, AProgramOfTwoFilesHasOneLayout) {
  PimSystem system(MakeProfile("pim-opt"));
  DpuSet set = system.Allocate(2);
  set.Load(LoadNativeProgram(std::string(PIMOPT_DPU_PROGRAMS) + "/two_files.dpu"));
  EXPECT_EQ(set.Launch().tasklets, 4u);
  for (uint32_t d = 0; d < 2; ++d) {
    uint32_t main_value = 0, helper_counter = 0;
    set.CopyFrom(d, "main_value", 0, &main_value, 4);
    set.CopyFrom(d, "helper_counter", 0, &helper_counter, 4);
    EXPECT_EQ(main_value, 5u * 2 + 100) << "DPU " << d;
    EXPECT_EQ(helper_counter, 100u) << "DPU " << d;
  }
}

TEST(NativeProgram, CopyingLoopsAreChargedPerWordAsTheDpuRunsThem) {
  PimSystem system(MakeProfile("pim-opt"));
  DpuSet set = system.Allocate(1);
  set.Load(LoadNativeProgram(std::string(PIMOPT_DPU_PROGRAMS) + "/copy_loop.dpu"));
  std::vector<uint32_t> words(257), cleared(256, 7);
  for (uint32_t i = 0; i < 257; ++i) words[i] = i * 3;
  set.CopyTo(0, "words", 0, words.data(), 4 * 257);
  set.CopyTo(0, "cleared", 0, cleared.data(), 4 * 256);
  const LaunchStats stats = set.Launch();
  set.CopyFrom(0, "words", 0, words.data(), 4 * 257);
  set.CopyFrom(0, "cleared", 0, cleared.data(), 4 * 256);
  EXPECT_EQ(words[0], 3u);
  EXPECT_EQ(words[255], 768u);
  EXPECT_EQ(cleared[100], 0u);
  // 256 words copied (a load and a store each) and 256 cleared (a store each), whatever clang made of the loops.
  EXPECT_GE(stats.op_counts[static_cast<size_t>(Op::kWramLoad)], 256u);
  EXPECT_GE(stats.op_counts[static_cast<size_t>(Op::kWramStore)], 512u);
  EXPECT_GE(stats.op_counts[static_cast<size_t>(Op::kBranch)], 512u);
}

// The pass keeps a function's counts in registers and adds them to the clock's counters before each call that may
// reach an event and at each return: the cycle counter read after a loop includes the loop, and the multiply steps
// of the loop and of a helper called in a loop are counted exactly (one per bit of the smaller operand, as __mulsi3
// runs them).
TEST(NativeProgram, CountsKeptInRegistersReachTheClockBeforeEachEvent) {
  PimSystem system(MakeProfile("pim-opt"));
  DpuSet set = system.Allocate(1);
  set.Load(LoadNativeProgram(std::string(PIMOPT_DPU_PROGRAMS) + "/count_flush.dpu"));
  std::vector<uint32_t> a(512), b(512);
  for (uint32_t i = 0; i < 512; ++i) {
    a[i] = (i * 2654435761u) >> (i % 32);
    b[i] = (i * 40503u) % 70000u;
  }
  set.CopyTo(0, "a", 0, a.data(), 4 * 512);
  set.CopyTo(0, "b", 0, b.data(), 4 * 512);
  auto run = [&](uint32_t n, uint64_t* cycles) {
    set.BroadcastTo("n", 0, &n, 4);
    const LaunchStats stats = set.Launch();
    uint32_t result = 0;
    set.CopyFrom(0, "result", 0, &result, 4);
    set.CopyFrom(0, "cycles_after_loop", 0, cycles, 8);
    uint32_t expected = 0;
    for (uint32_t i = 0; i < n; ++i) expected += 2 * a[i] * b[i];
    EXPECT_EQ(result, expected) << n;
    return stats;
  };
  uint64_t cycles_none = 0, cycles_all = 0;
  const LaunchStats none = run(0, &cycles_none);
  const LaunchStats all = run(512, &cycles_all);
  uint64_t steps = 0;
  for (uint32_t i = 0; i < 512; ++i) steps += std::max(1u, static_cast<uint32_t>(std::bit_width(std::min(a[i], b[i]))));
  const auto mul_steps = [](const LaunchStats& s) { return s.op_counts[static_cast<size_t>(Op::kMulStep)]; };
  EXPECT_EQ(mul_steps(all) - mul_steps(none), 2 * steps);
  const auto calls = [](const LaunchStats& s) { return s.op_counts[static_cast<size_t>(Op::kCall)]; };
  EXPECT_EQ(calls(all) - calls(none), 512u);
  // One tasklet issues once per pipeline pass (11 cycles): the first loop's steps alone take 11 x steps cycles.
  EXPECT_GT(cycles_all - cycles_none, 11 * steps);
}

// A multiply of two narrow operands is charged as the DPU compiler makes it (its 8 x 8 multiplies, no __mulsi3):
// char x char one mul8, char x short four and three adds, char x int __mulsi3's call and steps.
TEST(NativeProgram, NarrowMultipliesAreTheDpusByteMultiplies) {
  PimSystem system(MakeProfile("pim-opt"));
  DpuSet set = system.Allocate(1);
  set.Load(LoadNativeProgram(Program("narrow_mul")));
  std::vector<int8_t> bytes(512);
  std::vector<int16_t> shorts(512);
  std::vector<int32_t> ints(512);
  for (int i = 0; i < 512; ++i) {
    bytes[i] = static_cast<int8_t>(i * 37 - 100);
    shorts[i] = static_cast<int16_t>(i * 911 - 30000);
    ints[i] = i * 1234567 - 300000000;
  }
  set.CopyTo(0, "bytes", 0, bytes.data(), bytes.size());
  set.CopyTo(0, "shorts", 0, shorts.data(), 2 * shorts.size());
  set.CopyTo(0, "ints", 0, ints.data(), 4 * ints.size());
  const auto op = [](const LaunchStats& s, Op o) { return s.op_counts[static_cast<size_t>(o)]; };
  auto run = [&](uint32_t which, uint32_t n) {
    set.BroadcastTo("which", 0, &which, 4);
    set.BroadcastTo("n", 0, &n, 4);
    const LaunchStats stats = set.Launch();
    int32_t sum = 0;
    set.CopyFrom(0, "sum", 0, &sum, 4);
    int32_t expected = 0;
    for (uint32_t i = 0; i < n; ++i) {
      const int32_t x = bytes[i];
      const int32_t y = which == 8 ? bytes[511 - i] : which == 16 ? shorts[i] : ints[i];
      const auto product = static_cast<uint32_t>(x * static_cast<int64_t>(y));
      expected = static_cast<int32_t>(static_cast<uint32_t>(expected) + product);
    }
    EXPECT_EQ(sum, expected) << which;
    return stats;
  };
  for (uint32_t which : {8u, 16u, 32u}) {
    const LaunchStats none = run(which, 0), all = run(which, 512);
    const uint64_t mul8 = op(all, Op::kMul8) - op(none, Op::kMul8);
    const uint64_t steps = op(all, Op::kMulStep) - op(none, Op::kMulStep);
    EXPECT_EQ(mul8, which == 8 ? 512u : which == 16 ? 4 * 512u : 0u) << which;
    EXPECT_EQ(steps == 0, which != 32) << which;
  }
}

// The SDK's 8 x 8 multiply builtins (built_ins.h): each its byte product and one mul8.
TEST(NativeProgram, TheMultiplyBuiltinsAreTheDpusByteMultiplies) {
  PimSystem system(MakeProfile("pim-opt"));
  DpuSet set = system.Allocate(1);
  set.Load(LoadNativeProgram(Program("builtin_mul")));
  std::vector<int16_t> a(256), b(256);
  for (int i = 0; i < 256; ++i) {
    a[i] = static_cast<int16_t>(i * 257 - 32768);
    b[i] = static_cast<int16_t>(30000 - i * 233);
  }
  set.CopyTo(0, "a", 0, a.data(), 2 * a.size());
  set.CopyTo(0, "b", 0, b.data(), 2 * b.size());
  const uint32_t n = 256;
  set.BroadcastTo("n", 0, &n, 4);
  const LaunchStats stats = set.Launch();
  std::vector<int32_t> product(256);
  set.CopyFrom(0, "product", 0, product.data(), 4 * product.size());
  for (int i = 0; i < 256; ++i) EXPECT_EQ(product[i], int32_t{a[i]} * int32_t{b[i]}) << i;
  EXPECT_EQ(stats.op_counts[static_cast<size_t>(Op::kMul8)], 4u * 256u);
  EXPECT_EQ(stats.op_counts[static_cast<size_t>(Op::kMulStep)], 0u);
}

// A published Makefile passes its own -O2 (and -g) after the toolchain's flags: the program must still be charged
// as the scalar code the DPU runs (an -O after -fno-vectorize re-enabled clang's vectorizer, and a vector add of four
// elements was charged as one add: PrIM's VA was charged a quarter of its loop).
TEST(NativeProgram, APublishedMakefilesFlagsDoNotChangeTheCounts) {
  PimSystem system(MakeProfile("pim-opt"));
  auto counts = [&](const std::string& program) {
    DpuSet set = system.Allocate(1);
    set.Load(LoadNativeProgram(std::string(PIMOPT_DPU_PROGRAMS) + "/" + program));
    const uint32_t n = 4096;
    std::vector<int32_t> in(2 * n, 3);
    set.CopyTo(0, kMramHeapSymbol, 0, in.data(), 8 * n);
    set.BroadcastTo("n", 0, &n, sizeof(n));
    return set.Launch().op_counts;
  };
  const auto plain = counts("vector_add.dpu");
  const auto makefile = counts("vector_add_makefile_flags.dpu");
  for (size_t op = 0; op < kNumOps; ++op) EXPECT_EQ(makefile[op], plain[op]) << kOpNames[op];
  EXPECT_GE(plain[static_cast<size_t>(Op::kWramLoad)], 2u * 4096);
}

// A 64-bit multiply by a constant other than a power of two is one __muldi3 (int64_mul) per element, as the DPU
// backend compiles it ([DPU-LLVM] in docs/sources.md); by a power of two, a shift. The results are the host's.
TEST(NativeProgram, ASixtyFourBitMultiplyByAConstantIsTheRuntimesUnlessAPowerOfTwo) {
  PimSystem system(MakeProfile("pim-opt"));
  DpuSet set = system.Allocate(1);
  set.Load(LoadNativeProgram(Program("mul64_constant")));
  for (const uint32_t power_of_two : {0u, 1u}) {
    set.CopyTo(0, "power_of_two", 0, &power_of_two, 4);
    auto run = [&](uint32_t n) {
      const uint64_t seed = 12345;
      set.CopyTo(0, "state", 0, &seed, 8);
      set.CopyTo(0, "n", 0, &n, 4);
      return set.Launch().op_counts[static_cast<size_t>(Op::kInt64Mul)];
    };
    const uint64_t few = run(100), many = run(300);
    EXPECT_EQ(many - few, power_of_two ? 0u : 200u) << power_of_two;
    uint64_t expected = 12345, state = 0;
    for (uint32_t i = 0; i < 300; ++i) {
      expected = power_of_two ? expected * 8 + i : expected * 6364136223846793005ull + 1442695040888963407ull;
    }
    set.CopyFrom(0, "state", 0, &state, 8);
    EXPECT_EQ(state, expected) << power_of_two;
  }
}

// Per element of a loop (the counts of n = 512 less those of n = 256, over 256): one `ld` and one `lw`, no 64-bit
// logic, add or compare (the low-bit test of a 64-bit value is a 32-bit `and`; the index stays 32-bit).
TEST(NativeProgram, TheLoopIsChargedAsTheDpusThirtyTwoBitCode) {
  PimSystem system(MakeProfile("pim-opt"));
  DpuSet set = system.Allocate(1);
  set.Load(LoadNativeProgram(std::string(PIMOPT_DPU_PROGRAMS) + "/cost_rules.dpu"));
  std::vector<uint64_t> wide(512);
  std::vector<uint32_t> narrow(512);
  uint32_t even = 0, largest = 0;
  for (uint32_t i = 0; i < 512; ++i) {
    wide[i] = (uint64_t{i} * 0x9E3779B97F4A7C15u) >> 7;
    narrow[i] = (i * 2654435761u) >> 3;
    even += (wide[i] & 1) == 0 ? 1 : 0;
    largest = std::max(largest, narrow[i]);
  }
  set.CopyTo(0, "wide", 0, wide.data(), 8 * 512);
  set.CopyTo(0, "narrow", 0, narrow.data(), 4 * 512);
  auto run = [&](uint32_t n) {
    set.BroadcastTo("n", 0, &n, 4);
    return set.Launch().op_counts;
  };
  const auto half = run(256), all = run(512);
  uint32_t result = 0;
  set.CopyFrom(0, "even", 0, &result, 4);
  EXPECT_EQ(result, even);
  set.CopyFrom(0, "largest", 0, &result, 4);
  EXPECT_EQ(result, largest);
  const auto per_element = [&](Op op) {
    const size_t k = static_cast<size_t>(op);
    return static_cast<double>(all[k] - half[k]) / 256;
  };
  EXPECT_EQ(per_element(Op::kWramLoad), 2.0);
  EXPECT_EQ(per_element(Op::kInt64Logic), 0.0);
  EXPECT_EQ(per_element(Op::kInt64Add), 0.0);
  EXPECT_EQ(per_element(Op::kInt64Compare), 0.0);
  EXPECT_GE(per_element(Op::kInt32Add), 3.0);  // the max's compare and select, the index
}

// A loop over a tasklet's row of a two-dimensional array: rows[me()][i] is charged per element as the same loop over
// a row pointer taken before it. me() reads no memory, so the loop calls it once and keeps its bound in a register
// (before 2026-12-07 it called me() and reloaded n every iteration), and the part of the address that does not change
// in the loop is computed once: one lsl_add per element, not one per index (two before).
TEST(NativeProgram, AnIndexThatDoesNotChangeInTheLoopIsNotChargedPerIteration) {
  PimSystem system(MakeProfile("pim-opt"));
  DpuSet set = system.Allocate(1);
  set.Load(LoadNativeProgram(std::string(PIMOPT_DPU_PROGRAMS) + "/row_index.dpu"));
  std::vector<uint8_t> rows(16 * 256);
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<uint8_t>(i * 37 + 11);
  set.CopyTo(0, "rows", 0, rows.data(), rows.size());
  auto run = [&](uint32_t mode, uint32_t n) {
    set.BroadcastTo("mode", 0, &mode, 4);
    set.BroadcastTo("n", 0, &n, 4);
    const auto counts = set.Launch().op_counts;
    std::vector<uint32_t> sums(16);
    set.CopyFrom(0, "sums", 0, sums.data(), 4 * 16);
    for (uint32_t t = 0; t < 16; ++t) {
      uint32_t expect = 0;
      for (uint32_t i = 0; i < n; ++i) expect += rows[t * 256 + i];
      EXPECT_EQ(sums[t], expect) << "mode " << mode << ", tasklet " << t;
    }
    return counts;
  };
  auto per_element = [&](uint32_t mode, Op op) {
    const size_t k = static_cast<size_t>(op);
    return static_cast<double>(run(mode, 256)[k] - run(mode, 128)[k]) / (16 * 128);
  };
  for (Op op : {Op::kInt32Add, Op::kWramLoad, Op::kBranch}) {
    EXPECT_EQ(per_element(0, op), per_element(1, op)) << static_cast<int>(op);
  }
  // The element's load, the sum's add, the index's lsl_add and increment, the compare fused into the branch.
  EXPECT_EQ(per_element(0, Op::kWramLoad), 1.0);
  EXPECT_EQ(per_element(0, Op::kInt32Add), 3.0);
  EXPECT_EQ(per_element(0, Op::kBranch), 1.0);
}

TEST(NativeProgram, AFileThatIsNotAProgramIsRefusedNamingIt) {
  const std::string text = (std::filesystem::temp_directory_path() / "pimopt_not_a_program.dpu").string();
  std::ofstream(text) << "not a shared object";
  try {
    LoadNativeProgram(text);
    ADD_FAILURE() << "a text file loaded";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("pimopt_not_a_program.dpu"), std::string::npos) << e.what();
  }
  try {
    LoadNativeProgram("/nonexistent/x.dpu");
    ADD_FAILURE() << "a missing file loaded";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/x.dpu"), std::string::npos) << e.what();
  }
}

}  // namespace native_program_test
}  // namespace pimopt::pim
