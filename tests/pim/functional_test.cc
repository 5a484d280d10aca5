// Functional behaviour of the emulator: results never depend on host threads or on the profile, memories
// persist across launches, MRAM is backed lazily, barriers and mutexes synchronize, the timing model reacts to
// what kernels do.
#include <gtest/gtest.h>

#include <map>
#include <vector>

#include <cstring>

#include "pimopt/pim/system.h"

namespace pimopt::pim {
namespace {

// A kernel that holds a mutex while waiting at a barrier: the other tasklets wait for the mutex and never reach
// the barrier.
class MutexAcrossBarrier final : public Kernel {
 public:
  KernelSpec Spec() const override { return {"mutex_across_barrier", 12, 0, {}, {}}; }
  void Main(Tasklet& t) override {
    t.MutexLock(0);
    t.BarrierWait();  // tasklet 0 waits here holding the mutex; the others wait for the mutex
    t.MutexUnlock(0);
  }
};

TEST(PimFunctional, MutexHeldAcrossBarrierIsReportedAsDeadlock) {
  PimSystem system(MakeProfile("pim-opt"), 1);
  DpuSet set = system.Allocate(1);
  set.Load(std::make_shared<MutexAcrossBarrier>());
  try {
    set.Launch();
    FAIL() << "no deadlock reported";
  } catch (const PimError& e) {
    EXPECT_NE(std::string(e.what()).find("tasklet 0 waits at barrier 0"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("tasklet 1 spins on mutex 0 held by tasklet 0"), std::string::npos)
        << e.what();
  }
}

class Accumulate final : public Kernel {
 public:
  KernelSpec Spec() const override {
    return {"accumulate", 12, 0, {{"n", 8}, {"partials", 8 * 24}, {"result", 8}, {"count", 8}, {"launches", 8}}, {}};
  }
  void Main(Tasklet& t) override {
    const uint64_t n = *t.Wram<uint64_t>("n");
    auto* buf = static_cast<uint32_t*>(t.MemAlloc(256));
    int64_t sum = 0;
    for (uint64_t i = uint64_t{t.me()} * 64; i < n; i += uint64_t{t.nr_tasklets()} * 64) {
      t.MramRead(t.MramHeap() + 4 * i, buf, 256);
      for (int j = 0; j < 64; ++j) sum += t.Mul32(static_cast<int32_t>(buf[j]), 3);
      t.Charge(Op::kInt64Add, 64);
    }
    t.Wram<int64_t>("partials")[t.me()] = sum;
    t.MutexLock(0);
    *t.Wram<uint64_t>("count") += 1;  // read-modify-write under the mutex
    t.MutexUnlock(0);
    t.BarrierWait();
    if (t.me() == 0) {
      int64_t total = 0;
      for (uint32_t k = 0; k < t.nr_tasklets(); ++k) total += t.Wram<int64_t>("partials")[k];
      *t.Wram<int64_t>("result") = total;
      *t.Wram<uint64_t>("launches") += 1;  // WRAM persists across launches
      t.MemReset();
    }
    t.BarrierWait();
  }
};

struct RunResult {
  std::vector<int64_t> results;
  std::vector<uint64_t> counts;
  LaunchStats stats;
};

RunResult RunAccumulate(const HardwareProfile& profile, int threads, uint32_t dpus, uint64_t n, int launches) {
  PimSystem system(profile, threads);
  DpuSet set = system.Allocate(dpus);
  set.Load(std::make_shared<Accumulate>());
  std::vector<std::vector<uint32_t>> data(dpus, std::vector<uint32_t>(n));
  for (uint32_t d = 0; d < dpus; ++d) {
    for (uint64_t i = 0; i < n; ++i) data[d][i] = static_cast<uint32_t>((d + 1) * (i % 97 + 1));
    set.PrepareXfer(d, data[d].data(), 4 * n);
  }
  set.PushXfer(XferDirection::kToDpu, kMramHeapSymbol, 0, 4 * n);
  set.BroadcastTo("n", 0, &n, 8);
  RunResult r;
  for (int l = 0; l < launches; ++l) r.stats = set.Launch();
  for (uint32_t d = 0; d < dpus; ++d) {
    int64_t v;
    uint64_t c, launched;
    set.CopyFrom(d, "result", 0, &v, 8);
    set.CopyFrom(d, "count", 0, &c, 8);
    set.CopyFrom(d, "launches", 0, &launched, 8);
    EXPECT_EQ(launched, static_cast<uint64_t>(launches));
    r.results.push_back(v);
    r.counts.push_back(c);
  }
  return r;
}

TEST(PimFunctional, ComputesCorrectlyAndPersistsStateAcrossLaunches) {
  const uint64_t n = 4096;
  const RunResult r = RunAccumulate(MakeProfile("pim-opt"), 2, 5, n, 3);
  for (uint32_t d = 0; d < 5; ++d) {
    int64_t expected = 0;
    for (uint64_t i = 0; i < n; ++i) expected += 3 * static_cast<int64_t>((d + 1) * (i % 97 + 1));
    EXPECT_EQ(r.results[d], expected);
    EXPECT_EQ(r.counts[d], 3u * 12u);  // 12 tasklets x 3 launches, no lost update
  }
}

TEST(PimFunctional, ResultsAndTimesDoNotDependOnHostThreads) {
  const RunResult a = RunAccumulate(MakeProfile("pim-opt"), 1, 9, 2048, 1);
  const RunResult b = RunAccumulate(MakeProfile("pim-opt"), 4, 9, 2048, 1);
  EXPECT_EQ(a.results, b.results);
  EXPECT_EQ(a.stats.slowest.total, b.stats.slowest.total);
  EXPECT_EQ(a.stats.issue_slots, b.stats.issue_slots);
  ASSERT_EQ(a.stats.per_dpu.size(), 9u);
  for (uint32_t d = 0; d < 9; ++d) EXPECT_EQ(a.stats.per_dpu[d].total, b.stats.per_dpu[d].total);
  double slowest = 0;
  for (const DpuCycles& c : a.stats.per_dpu) slowest = std::max(slowest, c.total);
  EXPECT_EQ(a.stats.slowest.total, slowest);
}

TEST(PimFunctional, ProfilesChangeTimeNeverResults) {
  const RunResult slow = RunAccumulate(MakeProfile("pim-opt"), 2, 3, 2048, 1);
  const RunResult fast = RunAccumulate(MakeProfile("future-fpu"), 2, 3, 2048, 1);
  EXPECT_EQ(slow.results, fast.results);
  EXPECT_LT(fast.stats.slowest.total, slow.stats.slowest.total);  // Mul32 is one slot with a multiplier
  const RunResult other_clock = RunAccumulate(MakeProfile("prim-640"), 2, 3, 2048, 1);
  EXPECT_EQ(other_clock.stats.slowest.total, slow.stats.slowest.total);  // cycles are clock-independent ...
  EXPECT_NEAR(other_clock.stats.kernel_s / slow.stats.kernel_s, 350.0 / 267.0, 1e-9);  // ... seconds are not
}

TEST(PimFunctional, ThousandsOfDpusDoNotBackTheirWholeMram) {
  PimSystem system(MakeProfile("pim-opt"), 2);
  DpuSet set = system.AllocateAll();
  ASSERT_EQ(set.size(), 2048u);
  EXPECT_EQ(set.num_ranks(), 32u);
  set.Load(std::make_shared<Accumulate>());
  // One 8-byte value near the top of every DPU's 64 MB MRAM.
  const uint64_t v = 42;
  set.BroadcastTo(kMramHeapSymbol, (60ull << 20), &v, 8);
  const uint64_t host = set.HostMemoryBytes();
  EXPECT_LE(host, 2048ull * (64 << 10) * 2);  // WRAM + one 64 KB MRAM page per DPU
  uint64_t back = 0;
  set.CopyFrom(2047, kMramHeapSymbol, 60ull << 20, &back, 8);
  EXPECT_EQ(back, 42u);
  set.CopyFrom(5, kMramHeapSymbol, 1 << 20, &back, 8);  // never written: reads zero
  EXPECT_EQ(back, 0u);
  // Zeros written to pages never written before back nothing (calloc'd buffers pushed whole); a page that holds
  // data takes them.
  const std::vector<uint8_t> zeros(4 << 20, 0);
  set.BroadcastTo(kMramHeapSymbol, 8 << 20, zeros.data(), zeros.size());
  EXPECT_EQ(set.HostMemoryBytes(), host);
  set.BroadcastTo(kMramHeapSymbol, (60ull << 20) + 8, zeros.data(), 64);
  set.BroadcastTo(kMramHeapSymbol, 60ull << 20, zeros.data(), 8);
  EXPECT_EQ(set.HostMemoryBytes(), host);
  set.CopyFrom(2047, kMramHeapSymbol, 60ull << 20, &back, 8);
  EXPECT_EQ(back, 0u);  // the backed page took the zeros
}

class Spin final : public Kernel {
 public:
  explicit Spin(uint64_t slots, bool dma) : slots_(slots), dma_(dma) {}
  KernelSpec Spec() const override { return {"spin", 16, 0, {}, {}}; }
  void Main(Tasklet& t) override {
    t.Charge(Op::kInt32Add, slots_);
    if (dma_) {
      void* b = t.MemAlloc(2048);
      for (int i = 0; i < 8; ++i) t.MramRead(t.MramHeap(), b, 2048);
    }
  }

 private:
  uint64_t slots_;
  bool dma_;
};

TEST(PimTiming, RevolverPipelineAndDmaQueue) {
  HardwareProfile p = MakeProfile("pim-opt");
  ApplyOverrides(p, "dma_pipeline_stall=0,dma_occupancy_cycles=0,dma_occupancy_cycles_per_byte=0.5,dma_issue_slots=0");
  PimSystem system(p, 1);
  DpuSet set = system.Allocate(1);
  // Issue-bound: 16 tasklets x 1000 slots = 16,000 cycles (>= 11 tasklets: one instruction per cycle).
  set.Load(std::make_shared<Spin>(1000, false), 16);
  EXPECT_DOUBLE_EQ(set.Launch().slowest.total, 16000);
  // 4 tasklets: each may issue only every 11 cycles: 11 x 1000.
  set.Load(std::make_shared<Spin>(1000, false), 4);
  EXPECT_DOUBLE_EQ(set.Launch().slowest.total, 11000);
  // DMA-bound: 16 tasklets x 8 reads of 2 KB stream through the one engine at 0.5 cycles per byte; the last read
  // completes its latency (77 + 1024) after the engine took the 127 before it.
  set.Load(std::make_shared<Spin>(10, true), 16);
  const LaunchStats s = set.Launch();
  EXPECT_NEAR(s.slowest.total, 127 * 1024.0 + 1101, 200);
  EXPECT_GT(s.slowest.dma, 0.9 * 127 * 1024);
  EXPECT_EQ(s.mram_read_bytes, 16u * 8 * 2048);
  EXPECT_EQ(s.dmas, 16u * 8);
  EXPECT_GT(s.energy_j, 0);
  EXPECT_GT(s.overhead_s, 0);
}

TEST(PimTiming, TheSlowestDpuBoundsTheLaunch) {
  class Imbalanced final : public Kernel {
   public:
    KernelSpec Spec() const override { return {"imbalanced", 11, 0, {}, {}}; }
    void Main(Tasklet& t) override { t.Charge(Op::kInt32Add, 100 * (t.dpu_index() + 1)); }
  };
  PimSystem system(MakeProfile("pim-opt"), 2);
  DpuSet set = system.Allocate(4);
  set.Load(std::make_shared<Imbalanced>());
  const LaunchStats s = set.Launch();
  ASSERT_EQ(s.per_dpu.size(), 4u);
  for (uint32_t d = 0; d < 4; ++d) EXPECT_DOUBLE_EQ(s.per_dpu[d].total, 11.0 * 100 * (d + 1));
  EXPECT_DOUBLE_EQ(s.slowest.total, 4400);
  EXPECT_DOUBLE_EQ(s.mean_total_cycles, 11.0 * 100 * 2.5);
  EXPECT_DOUBLE_EQ(s.kernel_s, 4400 / 350e6);
  EXPECT_NEAR(s.energy_j, 0.15 * 11.0 * 100 * 10 / 350e6, 1e-15);
  EXPECT_EQ(set.stats().launches, 1u);
}

TEST(PimTiming, Mul32CostDependsOnTheSmallerOperand) {
  class Mul final : public Kernel {
   public:
    explicit Mul(int32_t b) : b_(b) {}
    KernelSpec Spec() const override { return {"mul", 1, 0, {{"out", 8}}, {}}; }
    void Main(Tasklet& t) override { *t.Wram<int32_t>("out") = t.Mul32(1 << 20, b_); }
    int32_t b_;
  };
  PimSystem system(MakeProfile("pim-opt"), 1);
  DpuSet set = system.Allocate(1);
  set.Load(std::make_shared<Mul>(3));
  const double small = set.Launch().slowest.total;  // 8 + 2 slots, 11 cycles each (one tasklet)
  set.Load(std::make_shared<Mul>(-1));              // unsigned-huge: the other operand (21 bits) drives it
  const double large = set.Launch().slowest.total;
  EXPECT_DOUBLE_EQ(small, 11 * (8 + 2));
  EXPECT_DOUBLE_EQ(large, 11 * (8 + 21));
}

TEST(PimTiming, PushBandwidthHalvesAtTheKneeOfBytesPerRank) {
  HardwareProfile p = MakeProfile("pim-opt");
  p.push_to_dpu_overhead_s = p.push_to_dpu_overhead_per_rank_s = p.push_to_dpu_overhead_per_dpu_s = 0;
  p.push_bandwidth_knee_bytes = 64.0 * (1 << 20);  // 1 MB per DPU of a full rank
  auto bandwidth = [&p](uint32_t dpus, uint64_t bytes_per_dpu) {
    return static_cast<double>(dpus) * static_cast<double>(bytes_per_dpu) /
           ModelParallelTransferSeconds(p, XferDirection::kToDpu, dpus, bytes_per_dpu);
  };
  EXPECT_NEAR(bandwidth(64, 1 << 20), 0.5 * p.rank_to_dpu_bytes_per_s, 1e-3 * p.rank_to_dpu_bytes_per_s);
  EXPECT_NEAR(bandwidth(64, 1 << 10), p.rank_to_dpu_bytes_per_s, 0.01 * p.rank_to_dpu_bytes_per_s);
  // The knee counts one rank's bytes: two ranks of the same per-DPU size push twice as fast, not half.
  EXPECT_NEAR(bandwidth(128, 1 << 20), 2 * bandwidth(64, 1 << 20), 1e-6 * bandwidth(64, 1 << 20));
  // Pulls have no knee.
  const double pull = 64.0 * (64 << 20) /
                      (ModelParallelTransferSeconds(p, XferDirection::kFromDpu, 64, 64 << 20) -
                       ModelParallelTransferSeconds(p, XferDirection::kFromDpu, 64, 0));
  EXPECT_NEAR(pull, p.rank_from_dpu_bytes_per_s, 1e-3 * p.rank_from_dpu_bytes_per_s);
}

// One host buffer pushed to every DPU (PrIM's BS pushes its input vector so) is streamed from the host's caches
// after its first copy: the knee counts the distinct bytes one rank reads. DpuSet::PushXfer finds the sharing in
// its prepared buffers.
TEST(PimTiming, ABufferPushedToEveryDpuOfARankIsReadOnce) {
  const HardwareProfile p = MakeProfile("pim-opt");
  const uint64_t bytes = 16 << 20;
  const double distinct = ModelParallelTransferSeconds(p, XferDirection::kToDpu, 64, bytes);
  const double shared = ModelParallelTransferSeconds(p, XferDirection::kToDpu, 64, bytes, 1);
  EXPECT_LT(shared, distinct / 3);  // 16 MB, not 1 GB, through the host's caches
  EXPECT_EQ(ModelParallelTransferSeconds(p, XferDirection::kToDpu, 64, bytes, 64), distinct);
  EXPECT_EQ(ModelParallelTransferSeconds(p, XferDirection::kFromDpu, 64, bytes, 1),
            ModelParallelTransferSeconds(p, XferDirection::kFromDpu, 64, bytes));  // pulls have no knee
  std::vector<int> a(4), b(4);
  EXPECT_EQ(SourcesPerRank({a.data(), a.data(), nullptr, b.data()}, 64), 2u);
  EXPECT_EQ(SourcesPerRank({a.data(), b.data(), a.data(), b.data()}, 2), 2u);  // per rank of 2 DPUs
  EXPECT_EQ(SourcesPerRank({a.data(), a.data(), a.data(), b.data()}, 2), 2u);
  EXPECT_EQ(SourcesPerRank({a.data(), a.data(), b.data(), b.data()}, 2), 1u);
  // Through DpuSet: the same buffer prepared for all 64 DPUs is modeled as one source.
  PimSystem system(p, 1);
  DpuSet set = system.Allocate(64);
  set.Load(std::make_shared<Spin>(0, false));
  std::vector<uint8_t> buffer(1 << 20, 7);
  for (uint32_t d = 0; d < 64; ++d) set.PrepareXfer(d, buffer.data(), buffer.size());
  EXPECT_EQ(set.PushXfer(XferDirection::kToDpu, kMramHeapSymbol, 0, buffer.size()),
            ModelParallelTransferSeconds(p, XferDirection::kToDpu, 64, buffer.size(), 1));
}

// The set logs every transfer it makes, under its caller's tag, as the shape its time was modeled from: re-timing
// the log under the same profile gives the times the verbs returned, and under another DPU count the model's time
// there (what --project-dpus and `pimopt validate` do with it).
TEST(PimTiming, TheSetLogsEachTransferAsItWasTimed) {
  const HardwareProfile p = MakeProfile("pim-opt");
  PimSystem system(p, 1);
  DpuSet set = system.Allocate(8);
  set.Load(std::make_shared<Spin>(0, false));
  std::vector<std::vector<uint8_t>> own(8, std::vector<uint8_t>(4096, 1));
  std::vector<uint8_t> shared(4096, 2), one(64, 3);
  double to_s = 0, from_s = 0;
  for (int round = 0; round < 3; ++round) {
    for (uint32_t d = 0; d < 8; ++d) set.PrepareXfer(d, own[d].data(), 4096);
    to_s += set.PushXfer(XferDirection::kToDpu, kMramHeapSymbol, 0, 4096, 7);
    for (uint32_t d = 0; d < 8; ++d) set.PrepareXfer(d, shared.data(), 4096);
    to_s += set.PushXfer(XferDirection::kToDpu, kMramHeapSymbol, 0, 4096, 7);
    for (uint32_t d = 0; d < 4; ++d) set.PrepareXfer(d, own[d].data(), 4096);  // half the set
    from_s += set.PushXfer(XferDirection::kFromDpu, kMramHeapSymbol, 0, 1024, 8, 512);  // an encoded pull
  }
  to_s += set.BroadcastTo(kMramHeapSymbol, 0, shared.data(), 2048, 9);
  to_s += set.CopyTo(5, kMramHeapSymbol, 0, one.data(), 64);
  from_s += set.CopyFrom(6, kMramHeapSymbol, 0, one.data(), 64, 10);
  using Kind = TransferVerb::Kind;
  const std::map<MachineLog::Key, uint64_t> expected = {
      {{0, {Kind::kCopyTo, 8, 64, 0}}, 1},      {{7, {Kind::kPush, 8, 4096, 0}}, 3},
      {{7, {Kind::kPush, 8, 4096, 1}}, 3},      {{8, {Kind::kPull, 4, 512, 0}}, 3},
      {{9, {Kind::kBroadcast, 8, 2048, 0}}, 1}, {{10, {Kind::kCopyFrom, 8, 64, 0}}, 1}};
  EXPECT_EQ(set.log().transfers(), expected);
  double retimed_to = 0, retimed_from = 0;
  for (const auto& [key, times] : set.log().transfers()) {
    (key.verb.to_dpu() ? retimed_to : retimed_from) += static_cast<double>(times) * ModelTransferSeconds(p, key.verb);
  }
  EXPECT_NEAR(retimed_to, to_s, 1e-15);
  EXPECT_NEAR(retimed_from, from_s, 1e-15);
  EXPECT_NEAR(set.stats().to_dpu_s, to_s, 1e-15);
  EXPECT_EQ(set.stats().from_dpu_bytes, 3 * 4 * 512 + 64u);  // the encoded pull's bytes, as modeled
  // At another DPU count: the same shapes over 2,048 DPUs (the shared buffer still one per rank).
  const TransferVerb push_shared{Kind::kPush, 2048, 4096, 1};
  EXPECT_EQ(ModelTransferSeconds(p, push_shared), ModelParallelTransferSeconds(p, XferDirection::kToDpu, 2048, 4096, 1));
  EXPECT_EQ(ModelTransferSeconds(p, {Kind::kPush, 2048, 4096, 0}),
            ModelParallelTransferSeconds(p, XferDirection::kToDpu, 2048, 4096));
  EXPECT_EQ(ModelTransferSeconds(p, {Kind::kCopyFrom, 2048, 64, 0}),
            ModelSerialTransferSeconds(p, XferDirection::kFromDpu, 2048, 64));
}

TEST(PimTiming, PullsAndSerialReadsPayPerDpuOfOneRank) {
  HardwareProfile p = MakeProfile("pim-opt");
  p.push_from_dpu_overhead_per_dpu_s = 5e-6;
  const double one = ModelParallelTransferSeconds(p, XferDirection::kFromDpu, 1, 8);
  const double rank = ModelParallelTransferSeconds(p, XferDirection::kFromDpu, 64, 8);
  EXPECT_NEAR(rank - one, 63 * 5e-6, 1e-6);  // the bytes' own time differs by well under 1 us
  // Beyond one rank the per-DPU term stops growing (ranks are worked in parallel); the per-rank term adds.
  EXPECT_NEAR(ModelParallelTransferSeconds(p, XferDirection::kFromDpu, 128, 8) - rank,
              p.push_from_dpu_overhead_per_rank_s, 1e-7);
  // A serial copy from one DPU costs more in a larger set; a serial copy to one does not.
  EXPECT_NEAR(ModelSerialTransferSeconds(p, XferDirection::kFromDpu, 64, 8) -
                  ModelSerialTransferSeconds(p, XferDirection::kFromDpu, 1, 8),
              63 * 5e-6, 1e-9);
  EXPECT_DOUBLE_EQ(ModelSerialTransferSeconds(p, XferDirection::kToDpu, 64, 8),
                   ModelSerialTransferSeconds(p, XferDirection::kToDpu, 1, 8));
}

TEST(PimTiming, TransferModelScalesWithRanksAndIsCapped) {
  const HardwareProfile p = MakeProfile("pim-opt");
  const double one_rank = 64.0 * (1 << 20) / ModelParallelTransferSeconds(p, XferDirection::kToDpu, 64, 1 << 20);
  const double four = 256.0 * (1 << 20) / ModelParallelTransferSeconds(p, XferDirection::kToDpu, 256, 1 << 20);
  const double all = 2048.0 * (1 << 20) / ModelParallelTransferSeconds(p, XferDirection::kToDpu, 2048, 1 << 20);
  EXPECT_GT(four, 3 * one_rank);
  EXPECT_LE(all, p.max_to_dpu_bytes_per_s);
  EXPECT_GT(all, 0.8 * p.max_to_dpu_bytes_per_s);
  // DPU -> host is slower than host -> DPU; small transfers are dominated by the per-call overhead.
  EXPECT_GT(ModelParallelTransferSeconds(p, XferDirection::kFromDpu, 2048, 1 << 20),
            ModelParallelTransferSeconds(p, XferDirection::kToDpu, 2048, 1 << 20));
  EXPECT_NEAR(ModelParallelTransferSeconds(p, XferDirection::kToDpu, 2048, 8),
              p.push_to_dpu_overhead_s + 31 * p.push_to_dpu_overhead_per_rank_s + 64 * p.push_to_dpu_overhead_per_dpu_s,
              1e-6);
  EXPECT_NEAR(ModelLaunchOverheadSeconds(p, 256), p.launch_overhead_s + 4 * p.launch_overhead_per_rank_s, 1e-12);
}

}  // namespace
}  // namespace pimopt::pim
