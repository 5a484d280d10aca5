// Hardware rules are enforced: each violation raises PimError naming the kernel, DPU and tasklet.
#include <gtest/gtest.h>

#include <map>

#include <functional>

#include "pimopt/pim/machine.h"
#include "pimopt/pim/system.h"

namespace pimopt::pim {
namespace {

// A kernel whose Main runs a test-supplied body on one chosen tasklet of one chosen DPU.
class Probe final : public Kernel {
 public:
  Probe(std::function<void(Tasklet&)> body, uint32_t dpu = 1, uint32_t tasklet = 2)
      : body_(std::move(body)), dpu_(dpu), tasklet_(tasklet) {}
  KernelSpec Spec() const override { return {"probe", 4, 0, {{"args", 16}}, {{"table", 64}}}; }
  void Main(Tasklet& t) override {
    if (t.dpu_index() == dpu_ && t.me() == tasklet_) body_(t);
  }

 private:
  std::function<void(Tasklet&)> body_;
  uint32_t dpu_, tasklet_;
};

void ExpectLaunchError(const std::function<void(Tasklet&)>& body, const std::string& fragment) {
  PimSystem system(MakeProfile("pim-opt"), 2);
  DpuSet set = system.Allocate(3);
  set.Load(std::make_shared<Probe>(body));
  try {
    set.Launch();
    FAIL() << "no error; expected: " << fragment;
  } catch (const PimError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("kernel 'probe', DPU 1, tasklet 2:"), std::string::npos) << what;
    EXPECT_NE(what.find(fragment), std::string::npos) << what;
  }
}

// (Unaligned addresses are not errors: the DPU ignores their low bits; kernel_api_test checks that.)
TEST(PimRules, DmaMustBeSizedAndInRange) {
  ExpectLaunchError([](Tasklet& t) { t.MramRead(t.MramHeap(), t.MemAlloc(4096), 4096); }, "multiple of 8 in [8, 2048]");
  ExpectLaunchError([](Tasklet& t) { t.MramWrite(t.MemAlloc(16), t.MramHeap(), 12); }, "multiple of 8 in [8, 2048]");
  ExpectLaunchError([](Tasklet& t) { t.MramRead(t.MramHeap(), t.MemAlloc(8), 0); }, "multiple of 8 in [8, 2048]");
  ExpectLaunchError([](Tasklet& t) { t.MramRead((64ull << 20) - 8, t.MemAlloc(16), 16); }, "out of range");
  static uint8_t host_buffer[64];
  ExpectLaunchError([](Tasklet& t) { t.MramRead(t.MramHeap(), host_buffer, 64); },
                    "neither inside this DPU's WRAM nor on the tasklet's stack");
}

TEST(PimRules, WramExhaustionAtAllocationAndAtLoad) {
  ExpectLaunchError([](Tasklet& t) { t.MemAlloc(70000); }, "WRAM exhausted");
  ExpectLaunchError(
      [](Tasklet& t) {
        for (int i = 0; i < 100; ++i) t.MemAlloc(1024);
      },
      "WRAM exhausted");
  class Huge final : public Kernel {
   public:
    KernelSpec Spec() const override { return {"huge", 16, 2048, {{"big", 40000}}, {}}; }
    void Main(Tasklet&) override {}
  };
  PimSystem system(MakeProfile("pim-opt"), 1);
  DpuSet set = system.Allocate(2);
  try {
    set.Load(std::make_shared<Huge>());
    FAIL();
  } catch (const PimError& e) {
    EXPECT_NE(std::string(e.what()).find("kernel 'huge', DPU 0: WRAM exhausted at load"), std::string::npos)
        << e.what();
  }
}

// A kernel that declares its WRAM heap per tasklet: 4 KB of variables, 1 KB stacks, `heap` bytes each.
class DeclaredHeap final : public Kernel {
 public:
  DeclaredHeap(uint32_t heap, uint32_t allocate) : heap_(heap), allocate_(allocate) {}
  KernelSpec Spec() const override {
    KernelSpec spec{"declared", 16, 1024, {{"vars", 4096}}, {}};
    spec.heap_bytes_per_tasklet = heap_;
    return spec;
  }
  void Main(Tasklet& t) override {
    if (t.me() == 0) t.MemReset();  // the heap persists across launches, as on the DPU
    t.BarrierWait();
    t.MemAlloc(allocate_);
  }

 private:
  uint32_t heap_, allocate_;
};

TEST(PimRules, DeclaredHeapDecidesHowManyTaskletsFitAtLoad) {
  const HardwareProfile p = MakeProfile("pim-opt");
  // (65536 - 4096) / (1024 + 2200) = 19.06 -> 19 tasklets.
  EXPECT_EQ(MaxTasklets(DeclaredHeap(2200, 0).Spec(), p), 19u);
  EXPECT_EQ(MaxTasklets(DeclaredHeap(0, 0).Spec(), p), 24u);     // undeclared: only stacks count (60 fit)
  EXPECT_EQ(MaxTasklets(DeclaredHeap(61000, 0).Spec(), p), 0u);  // not even one
  PimSystem system(p, 1);
  DpuSet set = system.Allocate(2);
  try {
    set.Load(std::make_shared<DeclaredHeap>(2200, 2200), 20);
    FAIL() << "20 tasklets loaded where 19 fit";
  } catch (const PimError& e) {
    EXPECT_NE(std::string(e.what()).find("WRAM exhausted at load: 4096 bytes of variables + 20 tasklets x (1024 bytes "
                                         "of stack + 2200 bytes of heap) > 65536 bytes of WRAM: at most 19 tasklets "
                                         "fit"),
              std::string::npos)
        << e.what();
  }
  set.Load(std::make_shared<DeclaredHeap>(2200, 2200), 19);
  for (int launch = 0; launch < 3; ++launch) EXPECT_NO_THROW(set.Launch());
  set.Load(std::make_shared<DeclaredHeap>(2200, 2208), 4);  // takes more than it declared
  try {
    set.Launch();
    FAIL() << "a tasklet took more heap than its kernel declared";
  } catch (const PimError& e) {
    EXPECT_NE(std::string(e.what()).find("beyond the 8800 its kernel declares (4 tasklets x "
                                         "KernelSpec::heap_bytes_per_tasklet)"),
              std::string::npos)
        << e.what();
  }
}

TEST(PimRules, TooManyTasklets) {
  PimSystem system(MakeProfile("pim-opt"), 1);
  DpuSet set = system.Allocate(1);
  try {
    set.Load(std::make_shared<Probe>([](Tasklet&) {}), 25);
    FAIL();
  } catch (const PimError& e) {
    EXPECT_NE(std::string(e.what()).find("25 tasklets requested; this DPU runs 1 to 24"), std::string::npos);
  }
  EXPECT_NO_THROW(set.Load(std::make_shared<Probe>([](Tasklet&) {}), 24));
}

TEST(PimRules, UnknownSymbolsOnBothSides) {
  ExpectLaunchError([](Tasklet& t) { t.Wram<uint64_t>("nope"); }, "unknown WRAM symbol 'nope'");
  ExpectLaunchError([](Tasklet& t) { t.MramSymbol("nope"); }, "unknown MRAM symbol 'nope'");
  ExpectLaunchError([](Tasklet& t) { t.WramSymbol("args", 32); }, "holds 16 bytes, 32 requested");
  PimSystem system(MakeProfile("pim-opt"), 1);
  DpuSet set = system.Allocate(2);
  set.Load(std::make_shared<Probe>([](Tasklet&) {}));
  uint64_t v = 0;
  try {
    set.CopyTo(1, "nope", 0, &v, 8);
    FAIL();
  } catch (const PimError& e) {
    EXPECT_NE(std::string(e.what()).find("kernel 'probe', DPU 1: host write: unknown symbol 'nope'"), std::string::npos)
        << e.what();
  }
}

TEST(PimRules, HostTransfersCheckSizesAlignmentAndBounds) {
  PimSystem system(MakeProfile("pim-opt"), 2);
  DpuSet set = system.Allocate(4);
  set.Load(std::make_shared<Probe>([](Tasklet&) {}));
  std::vector<uint8_t> big(64), small(32);
  for (uint32_t i = 0; i < 4; ++i) set.PrepareXfer(i, i == 2 ? small.data() : big.data(), i == 2 ? 32 : 64);
  try {
    set.PushXfer(XferDirection::kToDpu, kMramHeapSymbol, 0, 64);
    FAIL();
  } catch (const PimError& e) {
    EXPECT_NE(std::string(e.what()).find("DPU 2: push to DPUs of 64 bytes per DPU, but the buffer prepared for this "
                                         "DPU holds 32 bytes"),
              std::string::npos)
        << e.what();
  }
  for (uint32_t i = 0; i < 4; ++i) set.PrepareXfer(i, big.data(), 64);
  EXPECT_THROW(set.PushXfer(XferDirection::kToDpu, "table", 8, 64), PimError);  // overruns the 64-byte symbol
  for (uint32_t i = 0; i < 4; ++i) set.PrepareXfer(i, big.data(), 64);
  EXPECT_THROW(set.PushXfer(XferDirection::kToDpu, kMramHeapSymbol, 4, 8), PimError);    // MRAM: multiple of 8
  EXPECT_THROW(set.CopyTo(0, "args", 2, big.data(), 4), PimError);                       // WRAM: multiple of 4
  EXPECT_THROW(set.CopyTo(7, "args", 0, big.data(), 8), PimError);                       // no such DPU
  EXPECT_THROW(set.PushXfer(XferDirection::kFromDpu, kMramHeapSymbol, 0, 8), PimError);  // nothing prepared
  EXPECT_THROW(system.Allocate(4096), ConfigError);
}

TEST(PimRules, DeadlockAndMutexMisuseAreReported) {
  ExpectLaunchError([](Tasklet& t) { t.MutexUnlock(3); }, "mutex_unlock of a mutex no tasklet holds");
  ExpectLaunchError(
      [](Tasklet& t) {
        t.MutexLock(1);
        t.MutexLock(1);
      },
      "locked twice");
  // Only one tasklet waits at the barrier: the others finish and never arrive.
  PimSystem system(MakeProfile("pim-opt"), 1);
  DpuSet set = system.Allocate(1);
  set.Load(std::make_shared<Probe>([](Tasklet& t) { t.BarrierWait(); }, 0, 1));
  try {
    set.Launch();
    FAIL();
  } catch (const PimError& e) {
    EXPECT_NE(std::string(e.what()).find("deadlock"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("tasklet 1 waits at barrier 0"), std::string::npos) << e.what();
  }
}

TEST(PimRules, KernelExceptionsCarryContextAndTheSetStaysUsable) {
  ExpectLaunchError([](Tasklet& t) { t.Fail("custom check failed"); }, "custom check failed");
  // A failure while other tasklets wait at a barrier or have not started: they are ended, not run further.
  class FailWhileOthersWait final : public Kernel {
   public:
    KernelSpec Spec() const override { return {"fail_while_waiting", 8, 0, {{"after", 8}}, {}}; }
    void Main(Tasklet& t) override {
      if (t.me() < 3) t.BarrierWait();  // tasklets 0..2 suspend here
      if (t.me() == 3) t.Fail("boom");
      *t.Wram<uint64_t>("after") += 1;  // must never run: tasklets 4..7 were not started yet
    }
  };
  PimSystem system(MakeProfile("pim-opt"), 1);
  DpuSet set = system.Allocate(2);
  set.Load(std::make_shared<FailWhileOthersWait>());
  EXPECT_THROW(set.Launch(), PimError);
  uint64_t after = 1;
  set.CopyFrom(0, "after", 0, &after, 8);
  EXPECT_EQ(after, 0u);
  // The set can be loaded and launched again.
  set.Load(std::make_shared<Probe>([](Tasklet&) {}));
  EXPECT_NO_THROW(set.Launch());
}

TEST(PimProfiles, PresetsOverridesAndValidation) {
  EXPECT_EQ(MakeProfile("prim-640").dpu_frequency_hz, 267e6);
  EXPECT_EQ(MakeProfile("upmem-2524").num_dpus, 2524u);
  EXPECT_THROW(MakeProfile("cray"), ConfigError);
  HardwareProfile p = MakeProfile("pim-opt");
  ApplyOverrides(p, "dpu_frequency_hz=400e6,slots.float_mul=10,num_dpus=128");
  EXPECT_EQ(p.dpu_frequency_hz, 400e6);
  EXPECT_EQ(p.slots(Op::kFloatMul), 10);
  EXPECT_EQ(p.num_dpus, 128u);
  EXPECT_THROW(ApplyOverrides(p, "colour=3"), ConfigError);
  EXPECT_THROW(ApplyOverrides(p, "dpu_frequency_hz=fast"), ConfigError);
  EXPECT_THROW(ApplyOverrides(p, "dpu_frequency_hz=0"), ConfigError);
}

}  // namespace
}  // namespace pimopt::pim

namespace pimopt::pim {
namespace {

class Named final : public Kernel {
 public:
  KernelSpec Spec() const override { return {"named", 2, 0, {{"out", 8}}, {}}; }
  void Main(Tasklet& t) override {
    if (t.me() == 1) *t.Wram<uint64_t>("out") = 7 + t.dpu_index();
  }
};

TEST(PimKernels, LoadByRegisteredName) {
  RegisterKernel("named", [] { return std::make_unique<Named>(); });
  PimSystem system(MakeProfile("pim-opt"), 1);
  DpuSet set = system.Allocate(3);
  set.Load("named");
  set.Launch();
  uint64_t out = 0;
  set.CopyFrom(2, "out", 0, &out, 8);
  EXPECT_EQ(out, 9u);
  try {
    set.Load("no_such_kernel");
    FAIL();
  } catch (const PimError& e) {
    EXPECT_NE(std::string(e.what()).find("no kernel named 'no_such_kernel'"), std::string::npos);
  }
  DpuSet empty = system.Allocate(1);
  EXPECT_THROW(empty.Launch(), PimError);  // nothing loaded
}

// The machine seam (machine.h): the emulator behind PimMachine answers as the DPU set does, every time modeled.
TEST(PimMachine, TheEmulatedMachineIsTheDpuSetWithModeledTimes) {
  RegisterKernel("named", [] { return std::make_unique<Named>(); });
  const HardwareProfile profile = MakeProfile("pim-opt");
  std::unique_ptr<PimMachine> machine = AllocateEmulatedMachine(profile, 3, {1, Scheduler::kReference});
  EXPECT_EQ(machine->size(), 3u);
  EXPECT_EQ(machine->profile().name, "pim-opt");
  machine->Load("named", 2);
  const MachineLaunch launch = machine->Launch();
  EXPECT_FALSE(launch.measured);
  EXPECT_EQ(launch.stats.kernel, "named");
  uint64_t out[3] = {};
  for (uint32_t k = 0; k < 3; ++k) machine->PrepareXfer(k, &out[k], 8);
  const MachineTime pull = machine->PushXfer(XferDirection::kFromDpu, "out", 0, 8, 1);
  EXPECT_FALSE(pull.measured);
  EXPECT_EQ(out[0] + out[1] + out[2], 7u + 8u + 9u);
  // The same verbs on a DpuSet take the same modeled times.
  PimSystem system(profile, 1);
  DpuSet set = system.Allocate(3);
  set.SetScheduler(Scheduler::kReference);
  set.Load("named", 2);
  EXPECT_EQ(set.Launch().kernel_s, launch.stats.kernel_s);
  for (uint32_t k = 0; k < 3; ++k) set.PrepareXfer(k, &out[k], 8);
  EXPECT_EQ(set.PushXfer(XferDirection::kFromDpu, "out", 0, 8), pull.seconds);
  uint64_t value = 0;
  const MachineTime copy = machine->CopyFrom(1, "out", 0, &value, 8, 2);
  EXPECT_EQ(value, 8u);
  EXPECT_EQ(copy.seconds, set.CopyFrom(1, "out", 0, &value, 8));
  EXPECT_EQ(machine->BroadcastTo(kMramHeapSymbol, 0, &value, 8, 3).seconds, set.BroadcastTo(kMramHeapSymbol, 0, &value, 8));
  // An encoded pull: the emulator copies the dense bytes, the machine's time and log are the encoded pull's.
  for (uint32_t k = 0; k < 3; ++k) machine->PrepareXfer(k, &out[k], 8);
  out[0] = out[1] = out[2] = 0;
  const MachineTime encoded = machine->PullEncoded("out", 0, 8, 16, 4);
  EXPECT_EQ(out[0] + out[1] + out[2], 7u + 8u + 9u);
  EXPECT_EQ(encoded.seconds, ModelParallelTransferSeconds(profile, XferDirection::kFromDpu, 3, 16));
  // Every transfer in the machine's log, under its tag, and the set's log has its own (tag 0).
  using Kind = TransferVerb::Kind;
  const std::map<MachineLog::Key, uint64_t> logged = {{{1, {Kind::kPull, 3, 8, 0}}, 1},
                                                      {{2, {Kind::kCopyFrom, 3, 8, 0}}, 1},
                                                      {{3, {Kind::kBroadcast, 3, 8, 0}}, 1},
                                                      {{4, {Kind::kPull, 3, 16, 0}}, 1}};
  EXPECT_EQ(machine->log().transfers(), logged);
  EXPECT_EQ(set.log().transfers().size(), 3u);
  EXPECT_THROW(machine->Load("no_such_kernel", 1), PimError);
  EXPECT_THROW(AllocateEmulatedMachine(profile, profile.num_dpus + 1), ConfigError);  // as dpu_alloc refuses
}

}  // namespace
}  // namespace pimopt::pim
