// The batched scheduler against the reference one (system.h): every ported PrIM benchmark takes the same modeled
// cycles, bit for bit, the same events in the same order, and computes the same result; DPUs whose events match
// share their clock's work without changing anyone's cycles; a failure a tasklet meets while running ahead surfaces
// at its modeled time, as under the reference scheduler.
#include <gtest/gtest.h>

#include <memory>

#include "pimopt/core/error.h"
#include "pimopt/pim/prim.h"
#include "pimopt/pim/system.h"

namespace pimopt::pim {
namespace scheduler_test {  // named: its helpers share a unity batch with other files

const HardwareProfile& Profile() {
  static const HardwareProfile p = MakeProfile("pim-opt");
  return p;
}

uint64_t SmallParam(const std::string& name) {
  if (name == "TRNS") return 8;
  if (name == "MLP") return 64;
  if (name == "GEMV") return 256;
  if (name == "TS") return 4096;
  return 30000;
}

void ExpectSameTrace(const timing::DpuTrace& a, const timing::DpuTrace& b, const std::string& what) {
  ASSERT_EQ(a.tasklets.size(), b.tasklets.size()) << what;
  EXPECT_EQ(a.semaphores, b.semaphores) << what;
  for (size_t t = 0; t < a.tasklets.size(); ++t) {
    ASSERT_EQ(a.tasklets[t].size(), b.tasklets[t].size()) << what << " tasklet " << t;
    for (size_t e = 0; e < a.tasklets[t].size(); ++e) {
      const timing::TraceEvent &x = a.tasklets[t][e], &y = b.tasklets[t][e];
      ASSERT_TRUE(x.slots == y.slots && x.event.kind == y.event.kind && x.event.a == y.event.a &&
                  x.event.b == y.event.b)
          << what << " tasklet " << t << " event " << e;
    }
  }
}

void ExpectSameCycles(const DpuCycles& a, const DpuCycles& b, const std::string& what) {
  EXPECT_EQ(a.total, b.total) << what;
  EXPECT_EQ(a.issue, b.issue) << what;
  EXPECT_EQ(a.revolver, b.revolver) << what;
  EXPECT_EQ(a.dma, b.dma) << what;
  EXPECT_EQ(a.interference, b.interference) << what;
  EXPECT_EQ(a.sync, b.sync) << what;
}

prim::RunResult RunUnder(const std::string& name, Scheduler scheduler, uint32_t dpus, int threads,
                         const HardwareProfile& profile) {
  prim::RunRequest r;
  r.dpus = dpus;
  r.param = SmallParam(name) * dpus / 2;
  r.host_threads = threads;
  r.keep_events = true;
  r.scheduler = scheduler;
  return prim::Run(name, r, profile);  // throws if the result differs from the host reference
}

void ExpectSameRun(const prim::RunResult& a, const prim::RunResult& b, const std::string& what) {
  ExpectSameCycles(a.slowest_dpu, b.slowest_dpu, what);
  EXPECT_EQ(a.modeled.kernel_s, b.modeled.kernel_s) << what;
  EXPECT_EQ(a.modeled.cpu_to_dpu_s, b.modeled.cpu_to_dpu_s) << what;
  EXPECT_EQ(a.modeled.dpu_to_cpu_s, b.modeled.dpu_to_cpu_s) << what;
  EXPECT_EQ(a.modeled.dpu_to_dpu_s, b.modeled.dpu_to_dpu_s) << what;
  EXPECT_EQ(a.instructions, b.instructions) << what;
  EXPECT_EQ(a.dmas, b.dmas) << what;
  EXPECT_EQ(a.unaligned_dmas, b.unaligned_dmas) << what;
  EXPECT_EQ(a.resized_dmas, b.resized_dmas) << what;
  ASSERT_EQ(a.kernel_launches.size(), b.kernel_launches.size()) << what;
  for (size_t l = 0; l < a.kernel_launches.size(); ++l) {
    const prim::LaunchRecord &x = a.kernel_launches[l], &y = b.kernel_launches[l];
    ASSERT_EQ(x.traces.size(), y.traces.size()) << what;
    for (size_t d = 0; d < x.traces.size(); ++d) {
      ExpectSameTrace(a.traces[x.traces[d]], b.traces[y.traces[d]],
                      what + " launch " + std::to_string(l) + " DPU " + std::to_string(d));
      // Each DPU's cycles, replayed from its events, are the run's under both schedulers.
      ExpectSameCycles(timing::Replay(timing::FromProfile(Profile()), a.traces[x.traces[d]]),
                       timing::Replay(timing::FromProfile(Profile()), b.traces[y.traces[d]]), what);
    }
  }
}

// Every port, on 6 DPUs run by one host thread (so DPUs with the same events share their clock) and by two, under
// the base profile and a what-if one with hazards and DMA occupancy.
TEST(Scheduler, EveryPrimPortTakesTheSameCyclesAndEventsUnderBothSchedulers) {
  HardwareProfile what_if = MakeProfile("future-fpu", "issue_stall_cycles=0.3,dma_occupancy_cycles=20");
  for (const prim::BenchmarkInfo& b : prim::Benchmarks()) {
    for (int threads : {1, 2}) {
      const HardwareProfile& profile = threads == 1 ? Profile() : what_if;
      const std::string what = b.name + (threads == 1 ? " (1 thread)" : " (2 threads, what-if profile)");
      const prim::RunResult reference = RunUnder(b.name, Scheduler::kReference, 6, threads, profile);
      const prim::RunResult batched = RunUnder(b.name, Scheduler::kBatched, 6, threads, profile);
      ExpectSameRun(reference, batched, what);
    }
  }
}

// A kernel whose DPUs differ in their events only now and then: the batched scheduler follows the previous DPU's
// clock where the events match and runs its own from where they part; every DPU's cycles are the reference's.
class Uneven final : public Kernel {
 public:
  KernelSpec Spec() const override { return {"uneven", 16, 0, {{"out", 8 * 24}}, {}}; }
  void Main(Tasklet& t) override {
    uint64_t word = 0;
    for (uint32_t i = 0; i < 40; ++i) {
      // DPUs 3 and 7 take a longer path at one step of tasklet 5; DPU 9 one more DMA at the end of tasklet 0.
      const bool longer = t.me() == 5 && i == 17 && (t.dpu_index() == 3 || t.dpu_index() == 7);
      t.Charge(Op::kInt32Add, longer ? 9 : 3 + i % 4);
      t.MramRead(t.MramHeap() + 8 * i, &word, 8);
      if (i % 10 == 9) t.BarrierWait();
    }
    if (t.me() == 0 && t.dpu_index() == 9) t.MramRead(t.MramHeap(), &word, 8);
    if (t.me() == 2) t.MutexLock(1);
    t.Wram<uint64_t>("out")[t.me()] = t.Cycles();
    if (t.me() == 2) t.MutexUnlock(1);
  }
};

TEST(Scheduler, DpusWithTheSameEventsShareTheirClockAndKeepTheirOwnCycles) {
  for (int threads : {1, 3}) {
    PimSystem system(Profile(), threads);
    DpuSet set = system.Allocate(12);
    set.Load(std::make_shared<Uneven>());
    set.SetScheduler(Scheduler::kReference);
    const LaunchStats reference = set.Launch();
    std::vector<std::vector<uint64_t>> clocks_read(12, std::vector<uint64_t>(16));
    for (uint32_t d = 0; d < 12; ++d) set.CopyFrom(d, "out", 0, clocks_read[d].data(), 8 * 16);
    set.SetScheduler(Scheduler::kBatched);
    const LaunchStats batched = set.Launch();
    ASSERT_EQ(reference.per_dpu.size(), batched.per_dpu.size());
    for (size_t d = 0; d < reference.per_dpu.size(); ++d) {
      ExpectSameCycles(reference.per_dpu[d], batched.per_dpu[d], "DPU " + std::to_string(d));
      std::vector<uint64_t> read(16);
      set.CopyFrom(static_cast<uint32_t>(d), "out", 0, read.data(), 8 * 16);
      EXPECT_EQ(read, clocks_read[d]) << "DPU " << d << ": the cycle counter's readings";
    }
    // The DPUs that took another path are slower, the others alike.
    EXPECT_GT(batched.per_dpu[3].total, batched.per_dpu[0].total);
    EXPECT_GT(batched.per_dpu[9].total, batched.per_dpu[0].total);
    EXPECT_EQ(batched.per_dpu[1].total, batched.per_dpu[0].total);
    EXPECT_EQ(reference.issue_slots, batched.issue_slots);
    EXPECT_EQ(reference.dmas, batched.dmas);
    EXPECT_EQ(reference.barrier_waits, batched.barrier_waits);
    EXPECT_EQ(reference.lock_contentions, batched.lock_contentions);
    EXPECT_EQ(reference.op_counts, batched.op_counts);
  }
}

// DPUs of three kinds, in turn (DPU d takes variant d % 3: one step of tasklet 4 costs more, or tasklet 7 reads once
// more at its end): each DPU's events are not the previous DPU's, but they are those of the DPU three before. The
// launch's DPUs share a tree of their clocks' work: from DPU 3 on, every event is one another DPU's clock timed,
// and every DPU keeps its own cycles, the reference scheduler's.
class ThreeKinds final : public Kernel {
 public:
  KernelSpec Spec() const override { return {"three_kinds", 16, 0, {}, {}}; }
  void Main(Tasklet& t) override {
    uint64_t word = 0;
    const uint32_t kind = t.dpu_index() % 3;
    for (uint32_t i = 0; i < 30; ++i) {
      t.Charge(Op::kInt32Add, t.me() == 4 && i == 12 ? 5 + 4 * kind : 3 + i % 5);
      t.MramRead(t.MramHeap() + 8 * i, &word, 8);
      if (i % 10 == 9) t.BarrierWait();
    }
    if (t.me() == 7 && kind == 2) t.MramRead(t.MramHeap(), &word, 8);
  }
};

TEST(Scheduler, DpusWhoseEventsMatchAnEarlierDpusShareItsClockNotOnlyThePreviousOnes) {
  constexpr uint32_t kDpus = 12;
  PimSystem system(Profile(), 1);
  DpuSet set = system.Allocate(kDpus);
  set.Load(std::make_shared<ThreeKinds>());
  set.SetScheduler(Scheduler::kReference);
  const LaunchStats reference = set.Launch();
  EXPECT_EQ(reference.events_shared, 0u);
  set.SetScheduler(Scheduler::kBatched);
  const LaunchStats batched = set.Launch();
  for (uint32_t d = 0; d < kDpus; ++d) {
    ExpectSameCycles(reference.per_dpu[d], batched.per_dpu[d], "DPU " + std::to_string(d));
  }
  EXPECT_NE(batched.per_dpu[0].total, batched.per_dpu[1].total);
  EXPECT_NE(batched.per_dpu[1].total, batched.per_dpu[2].total);
  EXPECT_NE(batched.per_dpu[0].total, batched.per_dpu[2].total);
  EXPECT_EQ(batched.events, reference.events);
  // Each kind's events: 16 tasklets x (30 DMAs + 3 barriers + the end), and tasklet 7's read more for kind 2.
  const uint64_t per_dpu = 16 * 34;
  EXPECT_EQ(batched.events, kDpus * per_dpu + kDpus / 3);
  // DPUs 1 and 2 share what comes before their difference; DPUs 3 to 11 share everything.
  EXPECT_GE(batched.events_shared, (kDpus - 3) * per_dpu + (kDpus - 3) / 3);
  EXPECT_LT(batched.events_shared, batched.events - per_dpu);
  EXPECT_EQ(reference.dmas, batched.dmas);
  EXPECT_EQ(reference.barrier_waits, batched.barrier_waits);
}

// Every DPU but the first locks a mutex twice, at the same event: the first to fail leaves that event in the
// launch's tree, and the next ones meet the clock's refusal while the tree brings their clocks there. The launch
// reports DPU 1's fault, every DPU's tasklets are ended, and the set launches again.
class LockTwice final : public Kernel {
 public:
  KernelSpec Spec() const override { return {"lock_twice", 4, 0, {}, {}}; }
  void Main(Tasklet& t) override {
    uint64_t word = 0;
    t.MramRead(t.MramHeap(), &word, 8);
    if (t.me() == 2 && t.dpu_index() > 0 && !fixed) {
      t.MutexLock(3);
      t.MutexLock(3);
    }
    t.MramRead(t.MramHeap(), &word, 8);
  }
  bool fixed = false;
};

TEST(Scheduler, DpusThatFailAtASharedEventAllEndAndTheFirstIsReported) {
  PimSystem system(Profile(), 1);
  DpuSet set = system.Allocate(6);
  auto kernel = std::make_shared<LockTwice>();
  set.Load(kernel);
  set.SetScheduler(Scheduler::kBatched);
  try {
    set.Launch();
    FAIL() << "no fault";
  } catch (const PimError& e) {
    EXPECT_NE(std::string(e.what()).find("DPU 1, tasklet 2"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("mutex 3 locked twice"), std::string::npos) << e.what();
  }
  kernel->fixed = true;
  const LaunchStats again = set.Launch();
  EXPECT_EQ(again.events, 6u * 4 * 3);
  EXPECT_GT(again.events_shared, 0u);
}

// Both tasklets of a DPU run into a fault. Tasklet 0 runs first and, under the batched scheduler, ahead past its DMA
// into its fault at once; but tasklet 1's comes first in modeled time (after 20 short DMAs, about 1,700 cycles,
// against tasklet 0's 500 issue slots, 5,500 cycles). Both schedulers report the fault the DPU meets first.
class TwoFaults final : public Kernel {
 public:
  KernelSpec Spec() const override { return {"two_faults", 2, 0, {}, {}}; }
  void Main(Tasklet& t) override {
    uint64_t word = 0;
    if (t.me() == 0) {
      t.Charge(Op::kInt32Add, 500);
      t.MramRead(t.MramHeap(), &word, 8);
      t.MramRead(t.MramHeap(), &word, 4096);  // larger than a DMA
    } else {
      for (int i = 0; i < 20; ++i) t.MramRead(t.MramHeap(), &word, 8);
      t.MramRead(t.MramHeap(), &word, 12);  // not a multiple of 8
    }
  }
};

TEST(Scheduler, AFailureSurfacesAtItsModeledTimeAlsoWhenATaskletRanAheadToIt) {
  for (Scheduler s : {Scheduler::kReference, Scheduler::kBatched}) {
    PimSystem system(Profile(), 1);
    DpuSet set = system.Allocate(3);
    set.SetScheduler(s);
    set.Load(std::make_shared<TwoFaults>());
    try {
      set.Launch();
      FAIL() << "no fault under the " << SchedulerName(s) << " scheduler";
    } catch (const PimError& e) {
      EXPECT_NE(std::string(e.what()).find("DPU 0, tasklet 1: mram_read of 12 bytes"), std::string::npos)
          << SchedulerName(s) << ": " << e.what();
    }
  }
}

// PrIM's SEL and SCAN kernels let their last tasklet update the running count in WRAM (message_partial_count) after
// its DMA of the block, while the other tasklets may still read the old count: on the DPU, and under the reference
// scheduler in any resume order, that DMA's latency keeps the update late enough. A tasklet running ahead past its
// DMAs (the batched scheduler) does not wait that long, so a shuffled resume order exposes what the kernels rely on.
TEST(Scheduler, AShuffledOrderExposesWhatPrimsSelAndScanLeaveToADmasLatency) {
  for (const std::string name : {"SEL", "SCAN-SSA", "SCAN-RSS"}) {
    prim::RunRequest r;
    r.dpus = 2;
    r.param = 60000;
    r.host_threads = 1;
    r.shuffle_seed = 3;
    r.scheduler = Scheduler::kReference;
    EXPECT_NO_THROW(prim::Run(name, r, Profile())) << name;
    r.scheduler = Scheduler::kBatched;
    bool caught = false;
    for (uint64_t seed = 1; seed <= 6 && !caught; ++seed) {
      r.shuffle_seed = seed;
      try {
        prim::Run(name, r, Profile());
      } catch (const PimError& e) {
        caught = std::string(e.what()).find("differs from the host reference") != std::string::npos;
      }
    }
    EXPECT_TRUE(caught) << name;
  }
}

}  // namespace scheduler_test
}  // namespace pimopt::pim
