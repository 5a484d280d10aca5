// Speed of the UPMEM emulator on this host: wall time to emulate a dense multiply-accumulate kernel on 2,048 DPUs
// x 16 tasklets, against the same arithmetic as a plain native loop over the same data (the physical limit), both
// on all host threads, under the batched scheduler and the reference one; plus the cost of an event (a DMA, a
// barrier) under each, and the host memory the emulated DPUs occupy.
// With --program FILE (bench/dpu_programs/mac_dpu.c built by pimopt-dpu-cc; the build passes it), the same kernel
// as a DPU C program runs too, against the same native loop.
// Usage: pimopt_pim_speed [--dpus 2048] [--kib-per-dpu 64] [--repeats 5] [--program mac_dpu.dpu]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "pimopt/core/thread_pool.h"
#include "pimopt/pim/native_program.h"
#include "pimopt/pim/system.h"

using namespace pimopt;
using namespace pimopt::pim;

namespace {

constexpr uint32_t kBlock = 256;  // int32 elements per 1 KB DMA

// acc += x[i] * w[i % 256] over the DPU's MRAM heap; per-tasklet partial sums combined by tasklet 0. Written with
// the kernel API's operand types: the emulator counts what it does (a 32-bit multiply by its operands' bits, the
// loads, the 64-bit accumulation, the loop's add and compare-and-branch).
class MacKernel final : public Kernel {
 public:
  KernelSpec Spec() const override {
    return {"mac", 16, 0, {{"n", 8}, {"w", 4 * kBlock}, {"partials", 8 * 24}, {"result", 8}}, {}};
  }
  void Main(Tasklet& t) override {
    const u64 n = Load(t.Wram<uint64_t>("n"));
    const WramPtr<int32_t> w = t.WramVar<int32_t>("w");
    const WramPtr<int32_t> x = t.Alloc<int32_t>(kBlock);
    const WramPtr<int64_t> partials = t.WramVar<int64_t>("partials");
    const u32 me = t.me();
    i64 acc = 0;
    for (u64 i = Cast<uint64_t>(me) * kBlock; i < n; i += u64(t.nr_tasklets()) * kBlock) {
      t.MramRead(t.MramHeap() + i * 4, x, 4 * kBlock);
      for (u32 j = 0; j < kBlock; ++j) acc += Cast<int64_t>(x[j] * w[j]);
    }
    partials[me] = acc;
    t.BarrierWait();
    if (me == 0) {
      i64 total = 0;
      for (u32 k = 0; k < t.nr_tasklets(); ++k) total += partials[k];
      Store(t.Wram<int64_t>("result"), total);
    }
    t.MemReset();
  }
};

// The cost of an event: every tasklet does `events` barriers, or `events` 8-byte DMAs each after a few issue slots
// that differ from DPU to DPU, the first run of each tasklet by the DPU's index (so that no two DPUs' clocks do the
// same work: DPUs whose events were those of a DPU before would share its clock's, dpu.h LaunchTree).
class EventKernel final : public Kernel {
 public:
  enum Kind { kBarrier, kDma };
  EventKernel(Kind kind, int events) : kind_(kind), events_(events) {}
  KernelSpec Spec() const override { return {"events", 16, 0, {}, {}}; }
  void Main(Tasklet& t) override {
    uint64_t word = 0;
    for (int e = 0; e < events_; ++e) {
      if (kind_ == kBarrier) {
        t.BarrierWait();
      } else {
        t.Charge(Op::kInt32Add, 1 + (t.dpu_index() + e) % 7 + (e == 0 ? t.dpu_index() : 0));
        t.MramRead(t.MramHeap() + 8 * static_cast<uint64_t>(e % 64), &word, 8);
      }
    }
  }

 private:
  Kind kind_;
  int events_;
};

double Seconds(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  uint32_t dpus = 2048, kib = 64;
  int repeats = 5;
  std::string program;
#ifdef PIMOPT_MAC_PROGRAM
  program = PIMOPT_MAC_PROGRAM;
#endif
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--program")) program = argv[i + 1];
    if (!std::strcmp(argv[i], "--dpus")) dpus = static_cast<uint32_t>(std::stoul(argv[i + 1]));
    if (!std::strcmp(argv[i], "--kib-per-dpu")) kib = static_cast<uint32_t>(std::stoul(argv[i + 1]));
    if (!std::strcmp(argv[i], "--repeats")) repeats = std::stoi(argv[i + 1]);
  }
  const uint64_t n = uint64_t{kib} * 1024 / 4;
  PimSystem system(MakeProfile("pim-opt"), 0);
  DpuSet set = system.Allocate(dpus);
  set.Load(std::make_shared<MacKernel>());
  std::vector<int32_t> data(uint64_t{dpus} * n), w(kBlock);
  for (uint64_t i = 0; i < data.size(); ++i) data[i] = static_cast<int32_t>((i * 2654435761u) % 1000) - 500;
  for (uint32_t j = 0; j < kBlock; ++j) w[j] = static_cast<int32_t>(j % 17) - 8;
  // Each DPU's data into its MRAM heap, n and the weights into every DPU's WRAM (both versions of the kernel).
  auto load_inputs = [&](DpuSet& s) {
    for (uint32_t d = 0; d < dpus; ++d) s.PrepareXfer(d, data.data() + d * n, 4 * n);
    s.PushXfer(XferDirection::kToDpu, kMramHeapSymbol, 0, 4 * n);
    s.BroadcastTo("n", 0, &n, 8);
    s.BroadcastTo("w", 0, w.data(), 4 * kBlock);
  };
  load_inputs(set);

  // The multiply-accumulate kernel under both schedulers (the same modeled cycles).
  double emulated = 1e30, emulated_reference = 1e30, native = 1e30;
  LaunchStats stats, reference_stats;
  for (int r = 0; r < repeats; ++r) {
    set.SetScheduler(Scheduler::kBatched);
    stats = set.Launch();
    emulated = std::min(emulated, stats.host_wall_s);
    set.SetScheduler(Scheduler::kReference);
    reference_stats = set.Launch();
    emulated_reference = std::min(emulated_reference, reference_stats.host_wall_s);
  }
  if (reference_stats.slowest.total != stats.slowest.total) {
    std::fprintf(stderr, "the schedulers' cycles differ: %.17g and %.17g\n", stats.slowest.total,
                 reference_stats.slowest.total);
    return 1;
  }
  // Native: the same arithmetic over the same data, DPU by DPU on the same threads.
  ThreadPool pool(0);
  std::vector<int64_t> native_result(dpus);
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    pool.ParallelFor(dpus, [&](size_t d) {
      const int32_t* x = data.data() + d * n;
      int64_t acc = 0;
      for (uint64_t i = 0; i < n; i += kBlock) {
        for (uint32_t j = 0; j < kBlock; ++j) acc += static_cast<int64_t>(x[i + j]) * w[j];
      }
      native_result[d] = acc;
    });
    native = std::min(native, Seconds(t0));
  }
  // The first DPU whose result differs from the native loop's, or -1.
  auto first_mismatch = [&](DpuSet& s) {
    for (uint32_t d = 0; d < dpus; ++d) {
      int64_t v = 0;
      s.CopyFrom(d, "result", 0, &v, 8);
      if (v != native_result[d]) return static_cast<int64_t>(d);
    }
    return int64_t{-1};
  };
  if (const int64_t d = first_mismatch(set); d >= 0) {
    std::fprintf(stderr, "mismatch on DPU %lld\n", static_cast<long long>(d));
    return 1;
  }
  // The same kernel as a DPU C program (its costs come from the pass's IR table, not the operand types).
  double program_wall = 0, program_kernel_s = 0;
  if (!program.empty()) {
    DpuSet cset = system.Allocate(dpus);
    cset.Load(LoadNativeProgram(program));
    load_inputs(cset);
    program_wall = 1e30;
    for (int r = 0; r < repeats; ++r) {
      const LaunchStats s = cset.Launch();
      program_wall = std::min(program_wall, s.host_wall_s);
      program_kernel_s = s.kernel_s;
    }
    if (const int64_t d = first_mismatch(cset); d >= 0) {
      std::fprintf(stderr, "the C program's result differs on DPU %lld\n", static_cast<long long>(d));
      return 1;
    }
  }
  // The cost of one event (host ns per tasklet event) under each scheduler: 16 tasklets x E events on every DPU,
  // less an empty launch.
  DpuSet eset = system.Allocate(dpus);
  const int events = 64;
  auto wall = [&](EventKernel::Kind kind, int count, Scheduler scheduler) {
    eset.Load(std::make_shared<EventKernel>(kind, count));
    eset.SetScheduler(scheduler);
    double best = 1e30;
    for (int r = 0; r < repeats; ++r) best = std::min(best, eset.Launch().host_wall_s);
    return best;
  };
  const double tasklet_events = static_cast<double>(dpus) * 16 * events;
  const double empty_wall = wall(EventKernel::kBarrier, 0, Scheduler::kBatched);
  auto ns_per_event = [&](EventKernel::Kind kind, Scheduler scheduler) {
    return 1e9 * (wall(kind, events, scheduler) - empty_wall) / tasklet_events;
  };

  std::printf("{\n  \"dpus\": %u, \"tasklets\": 16, \"bytes_per_dpu\": %llu, \"host_threads\": %d,\n", dpus,
              static_cast<unsigned long long>(4 * n), pool.NumThreads());
  std::printf("  \"emulated_wall_s\": %.4f, \"native_wall_s\": %.4f, \"slowdown_vs_native\": %.2f,\n", emulated, native,
              emulated / native);
  std::printf("  \"reference_scheduler_wall_s\": %.4f, \"reference_slowdown_vs_native\": %.2f,\n",
              emulated_reference, emulated_reference / native);
  std::printf("  \"modeled_kernel_s\": %.6f, \"modeled_over_wall\": %.3f,\n", stats.kernel_s,
              stats.kernel_s / emulated);
  if (!program.empty()) {
    std::printf("  \"c_program_wall_s\": %.4f, \"c_program_slowdown_vs_native\": %.2f, "
                "\"c_program_modeled_kernel_s\": %.6f,\n",
                program_wall, program_wall / native, program_kernel_s);
  }
  std::printf("  \"empty_launch_wall_s\": %.4f, \"ns_per_tasklet_launch\": %.1f,\n", empty_wall,
              1e9 * empty_wall / (dpus * 16.0));
  std::printf("  \"ns_per_dma_event\": %.1f, \"ns_per_dma_event_reference\": %.1f,\n",
              ns_per_event(EventKernel::kDma, Scheduler::kBatched),
              ns_per_event(EventKernel::kDma, Scheduler::kReference));
  std::printf("  \"ns_per_barrier_wait\": %.1f, \"ns_per_barrier_wait_reference\": %.1f,\n",
              ns_per_event(EventKernel::kBarrier, Scheduler::kBatched),
              ns_per_event(EventKernel::kBarrier, Scheduler::kReference));
  std::printf("  \"host_memory_bytes\": %llu, \"host_memory_if_fully_backed_bytes\": %llu\n}\n",
              static_cast<unsigned long long>(set.HostMemoryBytes() + eset.HostMemoryBytes()),
              static_cast<unsigned long long>(2ull * dpus * ((64ull << 20) + (64 << 10))));
  return 0;
}
