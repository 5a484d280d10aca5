// The timing model's terms, one test each (timing.h, docs/pim-emulator.md "Timing model"): the clock is driven
// directly with events, as the emulator's scheduler drives it.
#include "pimopt/pim/timing.h"

#include <gtest/gtest.h>

#include <functional>
#include <vector>

#include "pimopt/pim/kernel.h"

namespace pimopt::pim::timing {
namespace {

ClockParams Plain() {
  ClockParams p;
  p.revolver_cycles = 11;
  p.dma_read_latency_cycles = 77;
  p.dma_write_latency_cycles = 61;
  p.dma_cycles_per_byte = 0.5;
  p.dma_occupancy_cycles = 0;
  p.dma_occupancy_cycles_per_byte = 0.5;
  p.dma_pipeline_stall = 0;
  p.issue_stall_cycles = 0;
  p.dma_issue_slots = 0;
  p.lock_acquire_slots = 1;
  p.lock_release_slots = 1;
  p.barrier_call_slots = 0;
  p.barrier_critical_slots = 0;
  p.barrier_resume_slots = 0;
  p.sync_return_slots = 0;
  p.handshake_critical_slots = 0;
  p.semaphore_critical_slots = 0;
  p.read_clock_slots = 0;
  return p;
}

// Each tasklet's program: (slots, event) pairs, ending with an exit.
using Program = std::vector<std::pair<double, Event>>;
Event E(EventKind kind, uint32_t a = 0, uint32_t b = 0) { return {kind, a, b}; }

struct Outcome {
  DpuCycles cycles;
  std::vector<std::vector<uint64_t>> results;  // per tasklet, each event's result
  std::vector<uint32_t> order;                 // the tasklets in the order they ran
};

Outcome Drive(const ClockParams& p, const std::vector<Program>& programs, uint64_t seed = 0,
              const std::vector<int32_t>& semaphores = {}) {
  DpuClock clock(p, static_cast<uint32_t>(programs.size()), seed);
  clock.SetSemaphores(semaphores);
  std::vector<size_t> next(programs.size(), 0);
  Outcome run;
  run.results.resize(programs.size());
  for (;;) {
    const DpuClock::State s = clock.Advance();
    if (s == DpuClock::State::kFinished) break;
    if (s != DpuClock::State::kReady) throw PimError(clock.Describe());
    const uint32_t t = clock.NextReady();
    if (next[t] > 0) run.results[t].push_back(clock.Result(t));
    run.order.push_back(t);
    const auto& [slots, event] = programs[t][next[t]++];
    clock.Submit(t, slots, event);
  }
  run.cycles = clock.Cycles();
  return run;
}

TEST(DpuClock, OneTaskletIssuesEveryRevolverCycles) {
  const Outcome r = Drive(Plain(), {{{100, E(EventKind::kExit)}}});
  EXPECT_DOUBLE_EQ(r.cycles.total, 1100);
  EXPECT_DOUBLE_EQ(r.cycles.issue, 100);
  EXPECT_DOUBLE_EQ(r.cycles.revolver, 1000);  // 10 of every 11 cycles nothing issues
}

TEST(DpuClock, ElevenTaskletsFillThePipelineAndMoreShareIt) {
  auto same = [](int n, double slots) {
    return std::vector<Program>(static_cast<size_t>(n), Program{{slots, E(EventKind::kExit)}});
  };
  EXPECT_DOUBLE_EQ(Drive(Plain(), same(4, 100)).cycles.total, 1100);  // revolver-bound
  EXPECT_DOUBLE_EQ(Drive(Plain(), same(11, 100)).cycles.total, 1100);
  const Outcome full = Drive(Plain(), same(16, 100));
  EXPECT_DOUBLE_EQ(full.cycles.total, 1600);  // one instruction per cycle
  EXPECT_DOUBLE_EQ(full.cycles.issue, 1600);
}

TEST(DpuClock, AHazardCostsAFullPipelineItsCycles) {
  ClockParams p = Plain();
  p.issue_stall_cycles = 0.25;
  EXPECT_DOUBLE_EQ(Drive(p, std::vector<Program>(16, Program{{100, E(EventKind::kExit)}})).cycles.total, 2000);
  EXPECT_DOUBLE_EQ(Drive(p, {{{100, E(EventKind::kExit)}}}).cycles.total, 1100);  // hidden by the revolver
}

TEST(DpuClock, ADmaTakesItsLatencyAndTheTaskletWaits) {
  const Outcome r = Drive(Plain(), {{{0, E(EventKind::kDmaRead, 1024)}, {0, E(EventKind::kExit)}}});
  EXPECT_DOUBLE_EQ(r.cycles.total, 77 + 512);
  EXPECT_DOUBLE_EQ(r.cycles.dma, 77 + 512);
  const Outcome w = Drive(Plain(), {{{0, E(EventKind::kDmaWrite, 8)}, {0, E(EventKind::kExit)}}});
  EXPECT_DOUBLE_EQ(w.cycles.total, 61 + 4);
  ClockParams p = Plain();
  p.dma_issue_slots = 2;  // mram_read's own instructions come first
  EXPECT_DOUBLE_EQ(Drive(p, {{{0, E(EventKind::kDmaRead, 8)}, {0, E(EventKind::kExit)}}}).cycles.total, 22 + 81);
}

TEST(DpuClock, QueuedDmasStreamAtTheEnginesOccupancy) {
  // 16 tasklets read 1 KB at once: the engine serializes their transfers (occupancy 0.5 cycles/byte), the fixed
  // latency overlaps: the last one completes at 15 x 512 + 77 + 512.
  const std::vector<Program> p(16, Program{{0, E(EventKind::kDmaRead, 1024)}, {0, E(EventKind::kExit)}});
  EXPECT_DOUBLE_EQ(Drive(Plain(), p).cycles.total, 15 * 512 + 589);
  ClockParams slower = Plain();
  slower.dma_occupancy_cycles = 10;
  slower.dma_occupancy_cycles_per_byte = 0.6;
  EXPECT_DOUBLE_EQ(Drive(slower, p).cycles.total, 15 * (10 + 0.6 * 1024) + std::max(589.0, 10 + 0.6 * 1024));
}

TEST(DpuClock, TheEnginesTransfersCostThePipelineItsStallShare) {
  ClockParams p = Plain();
  p.dma_pipeline_stall = 0.5;
  // 16 tasklets compute 100 slots while a 17th has the engine busy for 1,000 cycles: the pipeline issues at half
  // its rate then (500 slots), the other 1,100 slots at full rate.
  std::vector<Program> programs(16, Program{{100, E(EventKind::kExit)}});
  programs.push_back({{0, E(EventKind::kDmaRead, 2000)}, {0, E(EventKind::kExit)}});
  const Outcome r = Drive(p, programs);
  EXPECT_DOUBLE_EQ(r.cycles.total, 2100);
  EXPECT_GT(r.cycles.interference, 0);
}

TEST(DpuClock, ATakenMutexSpinsAndTakesIssueSlots) {
  // Tasklet 0 holds mutex 3 for 100 slots; tasklet 1 asks for it meanwhile and spins until the release.
  const Program holder{
      {0, E(EventKind::kMutexLock, 3)}, {100, E(EventKind::kMutexUnlock, 3)}, {0, E(EventKind::kExit)}};
  const Program waiter{{10, E(EventKind::kMutexLock, 3)}, {0, E(EventKind::kMutexUnlock, 3)}, {0, E(EventKind::kExit)}};
  const Outcome r = Drive(Plain(), {holder, waiter});
  // Holder: acquire (1 slot), 100 slots, then the release, at 11 cycles per slot (two tasklets: the revolver bounds
  // them). The waiter's next acquire succeeds one slot after the release, and its unlock costs a slot.
  EXPECT_DOUBLE_EQ(r.cycles.total, (1 + 100) * 11 + 11 + 11);
  EXPECT_GT(r.cycles.sync, 0);
  // With 16 tasklets spinning, the holder gets one slot in 16: its critical section is slower.
  std::vector<Program> crowd(15, waiter);
  crowd.insert(crowd.begin(), holder);
  EXPECT_GT(Drive(Plain(), crowd).cycles.total, 100 * 16);
}

TEST(DpuClock, BarrierArrivalsSerializeOnTheBarriersLock) {
  ClockParams p = Plain();
  p.barrier_critical_slots = 10;
  const std::vector<Program> programs(16, Program{{0, E(EventKind::kBarrier, 0, 16)}, {0, E(EventKind::kExit)}});
  // Every arrival takes the lock for 1 + 10 slots (acquire, critical section) and releases it: 16 x 12 slots,
  // one tasklet at a time, while the others spin (1 slot in up to 16).
  const Outcome r = Drive(p, programs);
  EXPECT_GT(r.cycles.total, 16 * 11 * 11);
  EXPECT_EQ(r.order.size(), 32u);  // each tasklet ran twice: before and after the barrier
  // Nobody passes the barrier before everyone arrived: the second half of the order starts after all 16.
  for (size_t i = 0; i < 16; ++i) EXPECT_EQ(r.order[i], i);
}

TEST(DpuClock, BarrierWithFewerParticipantsReleasesThem) {
  const Program in{{0, E(EventKind::kBarrier, 2, 2)}, {0, E(EventKind::kExit)}};
  const Program out{{500, E(EventKind::kExit)}};
  const Outcome r = Drive(Plain(), {in, in, out});
  EXPECT_EQ(r.order.size(), 5u);
}

TEST(DpuClock, HandshakeWaitsWhicheverComesFirst) {
  // Notifier first: it stops until the customer waits for it.
  const Program notify{{0, E(EventKind::kHandshakeNotify)}, {0, E(EventKind::kExit)}};
  const Program wait_late{{1000, E(EventKind::kHandshakeWait, 0)}, {0, E(EventKind::kExit)}};
  const Outcome a = Drive(Plain(), {notify, wait_late});
  EXPECT_GE(a.cycles.total, 1000 * 11);
  EXPECT_EQ(a.results[1][0], 0u);
  // Customer first: it stops until the notifier comes.
  const Program notify_late{{1000, E(EventKind::kHandshakeNotify)}, {0, E(EventKind::kExit)}};
  const Program wait{{0, E(EventKind::kHandshakeWait, 0)}, {0, E(EventKind::kExit)}};
  EXPECT_GE(Drive(Plain(), {notify_late, wait}).cycles.total, 1000 * 11);
  // A second customer of the same notifier gets EALREADY at once.
  const Outcome c =
      Drive(Plain(), {notify_late, wait, {{10, E(EventKind::kHandshakeWait, 0)}, {0, E(EventKind::kExit)}}});
  EXPECT_EQ(c.results[2][0], kHandshakeAlready);
}

TEST(DpuClock, SemaphoreTakeBlocksAtZeroUntilAGive) {
  const Program take{{0, E(EventKind::kSemTake, 5)}, {0, E(EventKind::kExit)}};
  const Program give{{300, E(EventKind::kSemGive, 5)}, {0, E(EventKind::kExit)}};
  const Outcome r = Drive(Plain(), {take, give});
  EXPECT_GE(r.cycles.total, 300 * 11);
  // With an initial count of 1 the take passes at once.
  EXPECT_LT(Drive(Plain(), {take, {{0, E(EventKind::kExit)}}}, 0, std::vector<int32_t>(6, 1)).cycles.total, 100);
}

TEST(DpuClock, ReadClockReturnsTheCycleOfItsInstruction) {
  const Outcome r =
      Drive(Plain(), {{{10, E(EventKind::kReadClock)}, {20, E(EventKind::kReadClock)}, {0, E(EventKind::kExit)}}});
  EXPECT_EQ(r.results[0][0], 110u);
  EXPECT_EQ(r.results[0][1], 330u);
}

TEST(DpuClock, DeadlockIsReportedWithWhatEachTaskletWaitsFor) {
  ClockParams p = Plain();
  DpuClock clock(p, 2);
  ASSERT_EQ(clock.Advance(), DpuClock::State::kReady);
  clock.Submit(clock.NextReady(), 0, E(EventKind::kBarrier, 1, 2));  // tasklet 0 waits at barrier 1
  ASSERT_EQ(clock.Advance(), DpuClock::State::kReady);
  clock.Submit(clock.NextReady(), 0, E(EventKind::kExit));  // tasklet 1 ends without arriving
  EXPECT_EQ(clock.Advance(), DpuClock::State::kDeadlock);
  EXPECT_NE(clock.Describe().find("tasklet 0 waits at barrier 1"), std::string::npos) << clock.Describe();
}

TEST(DpuClock, ASpinWithoutAnythingToWaitForStalls) {
  ClockParams p = Plain();
  p.spin_limit_cycles = 5000;
  DpuClock clock(p, 2);
  ASSERT_EQ(clock.Advance(), DpuClock::State::kReady);
  clock.Submit(1, 0, E(EventKind::kExit));  // the writer is gone
  DpuClock::State s = clock.Advance();
  int spins = 0;
  while (s == DpuClock::State::kReady && spins < 100) {
    clock.Submit(clock.NextReady(), 16, E(EventKind::kSpinYield));
    s = clock.Advance();
    ++spins;
  }
  EXPECT_EQ(s, DpuClock::State::kSpinStall);
  EXPECT_NE(clock.Describe().find("tasklet 0 spins on shared WRAM"), std::string::npos) << clock.Describe();
}

TEST(DpuClock, SimultaneousEventsTakeTaskletOrderUnlessShuffled) {
  const std::vector<Program> p(8, Program{{5, E(EventKind::kYield)}, {0, E(EventKind::kExit)}});
  const Outcome plain = Drive(Plain(), p);
  for (size_t i = 0; i < 8; ++i) EXPECT_EQ(plain.order[i], i);
  const Outcome a = Drive(Plain(), p, 7), b = Drive(Plain(), p, 7), c = Drive(Plain(), p, 8);
  EXPECT_EQ(a.order, b.order);  // a seed is reproducible
  EXPECT_NE(a.order, plain.order);
  EXPECT_NE(a.order, c.order);
  EXPECT_DOUBLE_EQ(a.cycles.total, plain.cycles.total);  // the order of equal tasklets does not change time
}

TEST(DpuClock, ReplayOfARecordedTraceGivesTheSameCycles) {
  DpuTrace trace;
  trace.tasklets = {{{10, E(EventKind::kDmaRead, 256)},
                     {40, E(EventKind::kMutexLock, 1)},
                     {5, E(EventKind::kMutexUnlock, 1)},
                     {0, E(EventKind::kBarrier, 0, 2)},
                     {3, E(EventKind::kExit)}},
                    {{20, E(EventKind::kMutexLock, 1)},
                     {50, E(EventKind::kMutexUnlock, 1)},
                     {0, E(EventKind::kBarrier, 0, 2)},
                     {0, E(EventKind::kExit)}}};
  std::vector<Program> programs;
  for (const auto& t : trace.tasklets) {
    Program prog;
    for (const TraceEvent& e : t) prog.push_back({e.slots, e.event});
    programs.push_back(prog);
  }
  EXPECT_DOUBLE_EQ(Replay(Plain(), trace).total, Drive(Plain(), programs).cycles.total);
  trace.tasklets[0].pop_back();
  EXPECT_THROW(Replay(Plain(), trace), PimError);  // a trace that ends early is an error, not a wrong time
}

TEST(DpuClock, CyclesAddUpToTheTotal) {
  ClockParams p = Plain();
  p.dma_pipeline_stall = 0.3;
  std::vector<Program> programs;
  for (uint32_t t = 0; t < 13; ++t) {
    programs.push_back({{static_cast<double>(10 * t), E(EventKind::kDmaRead, 512)},
                        {30, E(EventKind::kMutexLock, 2)},
                        {20, E(EventKind::kMutexUnlock, 2)},
                        {5, E(EventKind::kBarrier)},
                        {7, E(EventKind::kExit)}});
  }
  const DpuCycles c = Drive(p, programs).cycles;
  EXPECT_NEAR(c.issue + c.revolver + c.dma + c.interference + c.sync, c.total, 1e-6 * c.total);
}

}  // namespace
}  // namespace pimopt::pim::timing
