#include "pimopt/pim/timing.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

#include "pimopt/core/error.h"
#include "pimopt/pim/kernel.h"

namespace pimopt::pim {
namespace timing {

ClockParams FromProfile(const HardwareProfile& p) {
  ClockParams c;
  c.revolver_cycles = p.revolver_cycles;
  c.issue_stall_cycles = p.issue_stall_cycles;
  c.dma_read_latency_cycles = p.dma_read_alpha_cycles;
  c.dma_write_latency_cycles = p.dma_write_alpha_cycles;
  c.dma_cycles_per_byte = p.dma_beta_cycles_per_byte;
  c.dma_occupancy_cycles = p.dma_occupancy_cycles;
  c.dma_occupancy_cycles_per_byte = p.dma_occupancy_cycles_per_byte;
  c.dma_pipeline_stall = p.dma_pipeline_stall;
  c.dma_issue_slots = p.dma_issue_slots;
  c.lock_acquire_slots = p.lock_acquire_slots;
  c.lock_release_slots = p.lock_release_slots;
  c.barrier_call_slots = p.barrier_call_slots;
  c.barrier_critical_slots = p.barrier_critical_slots;
  c.barrier_resume_slots = p.barrier_resume_slots;
  c.sync_return_slots = p.sync_return_slots;
  c.handshake_critical_slots = p.handshake_critical_slots;
  c.semaphore_critical_slots = p.semaphore_critical_slots;
  c.read_clock_slots = p.read_clock_slots;
  c.spin_limit_cycles = p.spin_limit_cycles;
  return c;
}

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
// Times and virtual times are sums of many doubles: completions within this relative distance are simultaneous.
double Slack(double x) { return 1e-9 * std::max(1.0, std::fabs(x)); }

// ---------------------------------------------------------------- what each event does
// An event's program: the micro-operations the clock runs for it, in order. A step's issue slots are the
// tasklet's own since its last event (kEventSlots), a profile constant (`constant`), or their sum; its operand is
// the event's object (a bytes, a mutex, a barrier, a semaphore or a notifier) or the lock that guards it.
enum class Operand : uint8_t {
  kNone,
  kBytes,           // the DMA's size
  kMutexLock,       // the user mutex's lock bit
  kBarrierLock,     // the lock inside the barrier
  kOwnNotifierLock, // the lock of this tasklet's handshake slot
  kNotifierLock,    // the lock of the awaited notifier's slot
  kSemaphoreLock,   // the lock inside the semaphore
  kObject,          // the barrier, semaphore or notifier itself
};
struct Step {
  uint8_t kind;                    // DpuClock's Op::Kind
  bool event_slots = false;        // starts with the tasklet's issue slots
  double ClockParams::*constant = nullptr;
  Operand operand = Operand::kNone;
  double ClockParams::*constant2 = nullptr;  // a second constant added to the first
};
struct EventProgram {
  const char* name;
  bool blocks;  // EventBlocks
  bool write;   // a DMA's direction
  std::array<Step, 4> steps;
  uint8_t size;
};
}  // namespace

// The programs, by EventKind (docs/pim-emulator.md "Timing model" describes each; the SDK routines they stand for
// are cited beside their constants in profile.cc).
#define PIMOPT_STEP(kind, ...) Step{static_cast<uint8_t>(DpuClock::Op::kind), __VA_ARGS__}
struct DpuClock::Programs {
  static const std::array<EventProgram, 13>& Get() {
    using P = ClockParams;
    static const std::array<EventProgram, 13> programs = {{
        // kDmaRead, kDmaWrite: issue, then the DMA (the tasklet waits for it; the scheduler need not).
        {"mram_read", false, false,
         {PIMOPT_STEP(kCompute, true, &P::dma_issue_slots), PIMOPT_STEP(kDma, false, nullptr, Operand::kBytes)}, 2},
        {"mram_write", false, true,
         {PIMOPT_STEP(kCompute, true, &P::dma_issue_slots), PIMOPT_STEP(kDma, false, nullptr, Operand::kBytes)}, 2},
        // kMutexLock: one acquire, re-issued while the lock is taken.
        {"mutex_lock", true, false,
         {PIMOPT_STEP(kCompute, true, &P::lock_acquire_slots),
          PIMOPT_STEP(kAcquire, false, nullptr, Operand::kMutexLock)},
         2},
        // kMutexUnlock: the release, then its instruction.
        {"mutex_unlock", false, false,
         {PIMOPT_STEP(kCompute, true), PIMOPT_STEP(kRelease, false, nullptr, Operand::kMutexLock),
          PIMOPT_STEP(kCompute, false, &P::lock_release_slots)},
         3},
        // kBarrier: call, the barrier's lock, its critical section, then arrive (the last arrival wakes the rest).
        {"barrier_wait", true, false,
         {PIMOPT_STEP(kCompute, true, &P::barrier_call_slots, Operand::kNone, &P::lock_acquire_slots),
          PIMOPT_STEP(kAcquire, false, nullptr, Operand::kBarrierLock),
          PIMOPT_STEP(kCompute, false, &P::barrier_critical_slots),
          PIMOPT_STEP(kBarrierArrive, false, nullptr, Operand::kObject)},
         4},
        // kHandshakeNotify, kHandshakeWait: the notifier slot's lock, the routine's critical section, then notify
        // or wait.
        {"handshake_notify", true, false,
         {PIMOPT_STEP(kCompute, true, &P::lock_acquire_slots),
          PIMOPT_STEP(kAcquire, false, nullptr, Operand::kOwnNotifierLock),
          PIMOPT_STEP(kCompute, false, &P::handshake_critical_slots), PIMOPT_STEP(kNotify)},
         4},
        {"handshake_wait_for", true, false,
         {PIMOPT_STEP(kCompute, true, &P::lock_acquire_slots),
          PIMOPT_STEP(kAcquire, false, nullptr, Operand::kNotifierLock),
          PIMOPT_STEP(kCompute, false, &P::handshake_critical_slots),
          PIMOPT_STEP(kWaitFor, false, nullptr, Operand::kObject)},
         4},
        // kSemTake, kSemGive: the semaphore's lock, its critical section, then take (may block) or give.
        {"sem_take", true, false,
         {PIMOPT_STEP(kCompute, true, &P::lock_acquire_slots),
          PIMOPT_STEP(kAcquire, false, nullptr, Operand::kSemaphoreLock),
          PIMOPT_STEP(kCompute, false, &P::semaphore_critical_slots),
          PIMOPT_STEP(kSemTake, false, nullptr, Operand::kObject)},
         4},
        {"sem_give", false, false,
         {PIMOPT_STEP(kCompute, true, &P::lock_acquire_slots),
          PIMOPT_STEP(kAcquire, false, nullptr, Operand::kSemaphoreLock),
          PIMOPT_STEP(kCompute, false, &P::semaphore_critical_slots),
          PIMOPT_STEP(kSemGive, false, nullptr, Operand::kObject)},
         4},
        // kYield: the instructions only (the other tasklets' code runs meanwhile).
        {"yield", true, false, {PIMOPT_STEP(kCompute, true)}, 1},
        // kSpinYield: the instructions of a spin on shared WRAM, then a check that something can still end it.
        {"volatile read", true, false, {PIMOPT_STEP(kCompute, true), PIMOPT_STEP(kSpinCheck)}, 2},
        // kReadClock: perfcounter_get's instructions; the result is the cycle of the last.
        {"perfcounter_get", true, false,
         {PIMOPT_STEP(kCompute, true, &P::read_clock_slots), PIMOPT_STEP(kReadClock)},
         2},
        // kExit: the last instructions, then the tasklet is done.
        {"exit", true, false, {PIMOPT_STEP(kCompute, true), PIMOPT_STEP(kExit)}, 2},
    }};
    return programs;
  }
};
#undef PIMOPT_STEP

const char* EventName(EventKind kind) {
  const size_t k = static_cast<size_t>(kind);
  return k < DpuClock::Programs::Get().size() ? DpuClock::Programs::Get()[k].name : "?";
}

bool EventBlocks(EventKind kind) {
  const size_t k = static_cast<size_t>(kind);
  return k >= DpuClock::Programs::Get().size() || DpuClock::Programs::Get()[k].blocks;
}

// ---------------------------------------------------------------- DpuClock
DpuClock::DpuClock(const ClockParams& params, uint32_t tasklets, uint64_t shuffle_seed) {
  Reset(params, tasklets, shuffle_seed);
}

void DpuClock::Reset(const ClockParams& params, uint32_t tasklets, uint64_t shuffle_seed) {
  if (tasklets == 0) throw PimError("DpuClock: a launch needs at least one tasklet");
  p_ = params;
  pipeline_ = 1.0 / (1.0 + p_.issue_stall_cycles);
  stalled_pipeline_ = pipeline_ * (1.0 - p_.dma_pipeline_stall);
  // Each tasklet's issue rate with `active` tasklets issuing: min(1 / revolver, capacity / active), for the two
  // capacities (the DMA engine idle, then busy).
  rates_.resize(2 * (tasklets + 1));
  for (uint32_t active = 0; active <= tasklets; ++active) {
    rates_[active] = active == 0 ? 0 : std::min(1.0 / p_.revolver_cycles, pipeline_ / active);
    rates_[tasklets + 1 + active] = active == 0 ? 0 : std::min(1.0 / p_.revolver_cycles, stalled_pipeline_ / active);
  }
  tasklets_.resize(tasklets);
  for (Tasklet& k : tasklets_) {
    k.phase = Phase::kReady;
    k.block = Block::kNone;
    k.spin_segment = false;
    k.head = k.size = 0;
    k.block_on = 0;
    k.result = 0;
  }
  for (Lock& l : locks_) {
    l.owner = -1;
    l.waiters.clear();
  }
  for (Barrier& b : barriers_) {
    b.arrived = 0;
    b.waiting.clear();
  }
  for (Semaphore& sem : semaphores_) {
    sem.count = 0;
    sem.waiting.clear();
  }
  waits_for_.assign(tasklets, -1);
  v_end_.assign(tasklets, kInf);
  t_done_.assign(tasklets, kInf);
  compute_ends_.Clear();
  dma_ends_.Clear();
  now_ = virtual_ = engine_free_ = 0;
  computing_ = spinning_ = done_ = dma_waiting_ = 0;
  ready_ = tasklets;
  ready_mask_ = tasklets >= 64 ? ~uint64_t{0} : (uint64_t{1} << tasklets) - 1;
  progress_ = 0;
  stalled_ = false;
  cycles_ = DpuCycles{};
  dmas_ = contentions_ = barrier_waits_ = 0;
  shuffle_ = shuffle_seed != 0;
  queued_ = !shuffle_ && tasklets <= 64;
  rng_.seed(shuffle_seed);
  order_.clear();
}

void DpuClock::SetSemaphores(const std::vector<int32_t>& initial_counts) {
  if (initial_counts.size() > kMaxSyncObjects) {
    throw PimError(StrCat(initial_counts.size(), " semaphores declared; a DPU has room for ", kMaxSyncObjects));
  }
  for (size_t s = 0; s < initial_counts.size(); ++s)
    At(semaphores_, static_cast<uint32_t>(s)).count = initial_counts[s];
}

std::vector<int32_t> DpuClock::SemaphoreCounts(size_t n) const {
  std::vector<int32_t> counts(n, 0);
  for (size_t s = 0; s < n && s < semaphores_.size(); ++s) counts[s] = static_cast<int32_t>(semaphores_[s].count);
  return counts;
}

const std::vector<uint32_t>& DpuClock::Order() {
  if (order_.size() != tasklets_.size()) {
    order_.resize(tasklets_.size());
    for (uint32_t k = 0; k < order_.size(); ++k) order_[k] = k;
  }
  if (shuffle_) std::shuffle(order_.begin(), order_.end(), rng_);
  return order_;
}

bool DpuClock::RealWorkPending(uint32_t except) const {
  for (uint32_t k = 0; k < tasklets_.size(); ++k) {
    if (k == except) continue;
    const Tasklet& t = tasklets_[k];
    if (t.phase == Phase::kDma) return true;
    if ((t.phase == Phase::kReady || t.phase == Phase::kCompute) && !t.spin_segment) return true;
  }
  return false;
}

uint32_t DpuClock::NextReady() {
  if (ready_ == 0) throw PimError("DpuClock::NextReady: no tasklet is ready");
  if (queued_) return static_cast<uint32_t>(std::countr_zero(ready_mask_));
  if (!shuffle_) {
    for (uint32_t k = 0; k < tasklets_.size(); ++k) {
      if (tasklets_[k].phase == Phase::kReady) return k;
    }
  }
  std::vector<uint32_t> ready;
  for (uint32_t k = 0; k < tasklets_.size(); ++k) {
    if (tasklets_[k].phase == Phase::kReady) ready.push_back(k);
  }
  return ready[std::uniform_int_distribution<size_t>(0, ready.size() - 1)(rng_)];
}

void DpuClock::Push(uint32_t t, Op op) {
  Tasklet& k = tasklets_[t];
  if (k.size == kMaxOps) throw PimError(StrCat("DpuClock: tasklet ", t, "'s event needs more than ", kMaxOps, " steps"));
  k.ops[k.size++] = op;
}

void DpuClock::Submit(uint32_t t, double slots, const Event& e) {
  Tasklet& k = tasklets_.at(t);
  if (k.phase != Phase::kReady) throw PimError(StrCat("DpuClock::Submit: tasklet ", t, " is not ready"));
  const size_t kind = static_cast<size_t>(e.kind);
  if (kind >= Programs::Get().size()) throw PimError(StrCat("DpuClock::Submit: unknown event ", kind));
  if (e.a >= kMaxSyncObjects &&
      (e.kind == EventKind::kMutexLock || e.kind == EventKind::kMutexUnlock || e.kind == EventKind::kBarrier ||
       e.kind == EventKind::kSemTake || e.kind == EventKind::kSemGive)) {
    throw PimError(
        StrCat(EventName(e.kind), " ", e.a, ": synchronization objects are numbered 0 to ", kMaxSyncObjects - 1));
  }
  if (e.kind == EventKind::kHandshakeWait && e.a >= tasklets()) {
    throw PimError(StrCat("handshake_wait_for(", e.a, "): there is no tasklet ", e.a));
  }
  --ready_;
  ready_mask_ &= ~(uint64_t{1} << (t & 63));
  k.head = k.size = 0;
  k.result = 0;
  k.spin_segment = e.kind == EventKind::kSpinYield;
  const EventProgram& program = Programs::Get()[kind];
  for (uint8_t i = 0; i < program.size; ++i) {
    const Step& step = program.steps[i];
    Op op{static_cast<Op::Kind>(step.kind), program.write, 0, 0, 0};
    // In the order the routine issues them: the tasklet's slots, then each constant.
    if (step.event_slots) op.slots = slots;
    if (step.constant) op.slots = step.event_slots ? op.slots + p_.*step.constant : p_.*step.constant;
    if (step.constant2) op.slots += p_.*step.constant2;
    switch (step.operand) {
      case Operand::kNone:
        break;
      case Operand::kBytes:
        op.a = e.a;
        break;
      case Operand::kMutexLock:
        op.a = MutexLock(e.a);
        break;
      case Operand::kBarrierLock:
        op.a = BarrierLock(e.a);
        break;
      case Operand::kOwnNotifierLock:
        op.a = HandshakeLock(t);
        break;
      case Operand::kNotifierLock:
        op.a = HandshakeLock(e.a);
        break;
      case Operand::kSemaphoreLock:
        op.a = SemaphoreLock(e.a);
        break;
      case Operand::kObject:
        op.a = e.a;
        op.b = e.kind == EventKind::kBarrier && e.b == 0 ? tasklets() : e.b;
        break;
    }
    k.ops[k.size++] = op;
  }
  Continue(t);
}

void DpuClock::Wake(uint32_t t) {
  Tasklet& k = tasklets_[t];
  k.block = Block::kNone;
  k.head = k.size = 0;
  k.phase = Phase::kBlocked;  // Continue's caller state: not computing, not ready
  Compute(t, p_.sync_return_slots);
  Continue(t);
}

void DpuClock::StartCompute(uint32_t t, double slots) {
  tasklets_[t].phase = Phase::kCompute;
  v_end_[t] = virtual_ + slots;
  ++computing_;
  if (queued_) compute_ends_.Push(v_end_[t], t);
}

void DpuClock::StartDma(uint32_t t, bool write, uint32_t bytes) {
  const double alpha = write ? p_.dma_write_latency_cycles : p_.dma_read_latency_cycles;
  const double transfer = p_.dma_cycles_per_byte * bytes;
  const double start = std::max(now_, engine_free_);
  engine_free_ = start + p_.dma_occupancy_cycles + p_.dma_occupancy_cycles_per_byte * bytes;
  t_done_[t] = std::max(start + alpha + transfer, engine_free_);
  tasklets_[t].phase = Phase::kDma;
  ++dma_waiting_;
  ++dmas_;
  if (queued_) dma_ends_.Push(t_done_[t], t);
}

void DpuClock::CompleteCompute(uint32_t t) {
  --computing_;
  v_end_[t] = kInf;
  tasklets_[t].phase = Phase::kBlocked;
  Continue(t);
}

void DpuClock::CompleteDma(uint32_t t) {
  --dma_waiting_;
  t_done_[t] = kInf;
  tasklets_[t].phase = Phase::kBlocked;
  Continue(t);
}

void DpuClock::Continue(uint32_t t) {
  for (;;) {
    Tasklet& k = tasklets_[t];
    if (k.head == k.size) {
      k.head = k.size = 0;
      k.phase = Phase::kReady;
      ++ready_;
      ready_mask_ |= uint64_t{1} << (t & 63);
      return;
    }
    const Op op = k.ops[k.head++];
    if (!k.spin_segment && op.kind != Op::kCompute) progress_ = now_;
    switch (op.kind) {
      case Op::kCompute:
        if (op.slots <= 0) break;
        StartCompute(t, op.slots);
        return;
      case Op::kDma:
        StartDma(t, op.write, op.a);
        return;
      case Op::kAcquire: {
        Lock& lock = At(locks_, op.a);
        if (lock.owner == static_cast<int>(t)) {
          throw TaskletError(t,
                             StrCat("mutex ", op.a / 4, " locked twice by the same tasklet (it would spin forever)"));
        }
        if (lock.owner < 0) {
          lock.owner = static_cast<int>(t);
          break;
        }
        ++contentions_;
        lock.waiters.push_back(t);
        k.phase = Phase::kSpinLock;
        ++spinning_;
        return;
      }
      case Op::kRelease: {
        Lock& lock = At(locks_, op.a);
        if (lock.owner != static_cast<int>(t)) {
          throw TaskletError(t, StrCat("mutex ", op.a / 4, " unlocked by a tasklet that does not hold it"));
        }
        lock.owner = -1;
        if (!lock.waiters.empty()) {
          size_t pick = 0;
          if (shuffle_) pick = std::uniform_int_distribution<size_t>(0, lock.waiters.size() - 1)(rng_);
          const uint32_t w = lock.waiters[pick];
          lock.waiters.erase(lock.waiters.begin() + static_cast<std::ptrdiff_t>(pick));
          lock.owner = static_cast<int>(w);
          --spinning_;
          // The waiter's next acquire finds the lock free: one more issue (in the place of its spent acquire),
          // then it goes on.
          Tasklet& wk = tasklets_[w];
          wk.phase = Phase::kBlocked;
          wk.ops[--wk.head] = Op{Op::kCompute, false, 0, 0, p_.lock_acquire_slots};
          Continue(w);
        }
        break;
      }
      case Op::kBarrierArrive: {
        Barrier& b = At(barriers_, op.a);
        ++b.arrived;
        ++barrier_waits_;
        if (b.arrived >= op.b) {
          // The last arrival resumes the waiters one by one, then releases the barrier's lock.
          Compute(t, p_.barrier_resume_slots * static_cast<double>(b.waiting.size()));
          Push(t, Op{Op::kBarrierWake, false, op.a, 0, 0});
          Push(t, Op{Op::kRelease, false, BarrierLock(op.a), 0, 0});
          Compute(t, p_.sync_return_slots);
          b.arrived = 0;
        } else {
          b.waiting.push_back(t);
          Push(t, Op{Op::kRelease, false, BarrierLock(op.a), 0, 0});
          Push(t, Op{Op::kBlock, false, op.a, static_cast<uint32_t>(Block::kBarrier), 0});
        }
        break;
      }
      case Op::kBarrierWake: {
        Barrier& b = At(barriers_, op.a);
        std::vector<uint32_t> waiting;
        waiting.swap(b.waiting);
        for (uint32_t w : waiting) Wake(w);
        waiting.clear();
        if (b.waiting.empty()) b.waiting.swap(waiting);  // keep the buffer for the barrier's next round
        break;
      }
      case Op::kNotify: {
        int waiter = -1;
        for (uint32_t w = 0; w < tasklets_.size(); ++w) {
          if (waits_for_[w] == static_cast<int>(t) && tasklets_[w].block == Block::kWaitFor)
            waiter = static_cast<int>(w);
        }
        Push(t, Op{Op::kRelease, false, HandshakeLock(t), 0, 0});
        if (waiter >= 0) {
          waits_for_[waiter] = -1;
          Wake(static_cast<uint32_t>(waiter));
          Compute(t, p_.sync_return_slots);
        } else {
          Push(t, Op{Op::kBlock, false, 0, static_cast<uint32_t>(Block::kNotify), 0});
        }
        break;
      }
      case Op::kWaitFor: {
        const uint32_t n = op.a;
        Push(t, Op{Op::kRelease, false, HandshakeLock(n), 0, 0});
        bool taken = false;
        for (uint32_t w = 0; w < tasklets_.size(); ++w) {
          if (w != t && waits_for_[w] == static_cast<int>(n)) taken = true;
        }
        if (tasklets_[n].block == Block::kNotify) {
          Wake(n);
          Compute(t, p_.sync_return_slots);
        } else if (taken) {
          tasklets_[t].result = kHandshakeAlready;
          Compute(t, p_.sync_return_slots);
        } else {
          waits_for_[t] = static_cast<int>(n);
          Push(t, Op{Op::kBlock, false, n, static_cast<uint32_t>(Block::kWaitFor), 0});
        }
        break;
      }
      case Op::kSemTake: {
        Semaphore& s = At(semaphores_, op.a);
        Push(t, Op{Op::kRelease, false, SemaphoreLock(op.a), 0, 0});
        if (--s.count < 0) {
          s.waiting.push_back(t);
          Push(t, Op{Op::kBlock, false, op.a, static_cast<uint32_t>(Block::kSemaphore), 0});
        } else {
          Compute(t, p_.sync_return_slots);
        }
        break;
      }
      case Op::kSemGive: {
        Semaphore& s = At(semaphores_, op.a);
        Push(t, Op{Op::kRelease, false, SemaphoreLock(op.a), 0, 0});
        ++s.count;
        if (!s.waiting.empty()) {
          const uint32_t w = s.waiting.front();
          s.waiting.erase(s.waiting.begin());
          Wake(w);
        }
        Compute(t, p_.sync_return_slots);
        break;
      }
      case Op::kReadClock:
        tasklets_[t].result = static_cast<uint64_t>(std::llround(now_));
        break;
      case Op::kSpinCheck:
        if (!RealWorkPending(t) && now_ - progress_ > p_.spin_limit_cycles) stalled_ = true;
        break;
      case Op::kBlock:
        tasklets_[t].phase = Phase::kBlocked;
        tasklets_[t].block = static_cast<Block>(op.b);
        tasklets_[t].block_on = op.a;
        return;
      case Op::kExit:
        tasklets_[t].phase = Phase::kDone;
        ++done_;
        return;
    }
  }
}

void DpuClock::CompleteDue(double v_due, double t_due) {
  const uint32_t n = static_cast<uint32_t>(tasklets_.size());
  auto complete = [&](uint32_t t) {
    if (v_end_[t] <= v_due) {
      CompleteCompute(t);
    } else if (t_done_[t] <= t_due) {
      CompleteDma(t);
    }
  };
  if (!queued_) {
    if (shuffle_) {
      for (uint32_t t : Order()) complete(t);
    } else {
      for (uint32_t t = 0; t < n; ++t) complete(t);
    }
    return;
  }
  // The due tasklets as a bit mask, taken in tasklet order; a tasklet that becomes due while they are completed
  // (woken or handed a lock with nothing left to issue) is taken in the same pass if it comes later in that order,
  // else at the next step, as a scan in tasklet order would.
  uint64_t due = 0;
  int last = -1;
  auto take = [&](EventQueue& queue, double due_at, std::vector<EventQueue::Entry>& deferred) {
    while (!queue.empty() && queue.top().at <= due_at) {
      const EventQueue::Entry e = queue.Pop();
      if (static_cast<int>(e.tasklet) > last) {
        due |= uint64_t{1} << e.tasklet;
      } else {
        deferred.push_back(e);
      }
    }
  };
  auto collect = [&] {
    take(compute_ends_, v_due, deferred_);
    take(dma_ends_, t_due, deferred_dmas_);
  };
  collect();
  while (due != 0) {
    const uint32_t t = static_cast<uint32_t>(std::countr_zero(due));
    due &= due - 1;
    last = static_cast<int>(t);
    complete(t);
    collect();
  }
  auto restore = [](EventQueue& queue, std::vector<EventQueue::Entry>& deferred) {
    for (const EventQueue::Entry& e : deferred) queue.Push(e.at, e.tasklet);
    deferred.clear();
  };
  restore(compute_ends_, deferred_);
  restore(dma_ends_, deferred_dmas_);
}

DpuClock::State DpuClock::Advance() {
  const size_t n = tasklets_.size();
  for (;;) {
    if (stalled_) return State::kSpinStall;
    if (ready_ > 0) return State::kReady;
    if (done_ == n) return State::kFinished;
    const bool engine_slows = now_ < engine_free_ - Slack(now_);
    const double capacity = engine_slows ? stalled_pipeline_ : pipeline_;
    const uint32_t active = computing_ + spinning_;
    const double rate = rates_[engine_slows ? active + n + 1 : active];
    double next = kInf;
    double v_min = kInf, dma_min = kInf;
    if (queued_) {
      if (!compute_ends_.empty()) v_min = compute_ends_.top().at;
      if (!dma_ends_.empty()) dma_min = dma_ends_.top().at;
    } else {
      for (size_t t = 0; t < n; ++t) v_min = std::min(v_min, v_end_[t]);
      for (size_t t = 0; t < n; ++t) dma_min = std::min(dma_min, t_done_[t]);
    }
    if (computing_ > 0 && rate > 0) next = now_ + std::max(0.0, v_min - virtual_) / rate;
    const bool waiting_dma = dma_min < kInf;
    next = std::min(next, dma_min);
    if (engine_slows && p_.dma_pipeline_stall > 0) next = std::min(next, engine_free_);
    if (next == kInf) return State::kDeadlock;
    // Account the interval [now, next).
    const double dt = std::max(0.0, next - now_);
    const double used = active * rate;
    cycles_.issue += computing_ * rate * dt;
    cycles_.sync += spinning_ * rate * dt;
    cycles_.interference += (1.0 - capacity) * dt;
    const double idle = std::max(0.0, capacity - used) * dt;
    if (active > 0) {
      cycles_.revolver += idle;
    } else if (waiting_dma) {
      cycles_.dma += idle;
    } else {
      cycles_.sync += idle;
    }
    virtual_ += rate * dt;
    now_ = next;
    // Everything that completes now, in tasklet order (or shuffled).
    CompleteDue(virtual_ + Slack(virtual_), now_ + Slack(now_));
  }
}

DpuCycles DpuClock::Cycles() const {
  DpuCycles c = cycles_;
  c.total = now_;
  return c;
}

std::string DpuClock::Describe() const {
  std::string s;
  for (uint32_t t = 0; t < tasklets_.size(); ++t) {
    const Tasklet& k = tasklets_[t];
    std::string what;
    switch (k.phase) {
      case Phase::kSpinLock:
        for (size_t l = 0; l < locks_.size(); ++l) {
          const auto& w = locks_[l].waiters;
          if (std::find(w.begin(), w.end(), t) == w.end()) continue;
          if (l % 4 == 0) {
            what = StrCat("spins on mutex ", l / 4, " held by tasklet ", locks_[l].owner);
          } else {
            what = StrCat("spins on an internal lock held by tasklet ", locks_[l].owner);
          }
        }
        break;
      case Phase::kBlocked:
        switch (k.block) {
          case Block::kBarrier:
            what = StrCat("waits at barrier ", k.block_on);
            break;
          case Block::kNotify:
            what = "waits in handshake_notify for a tasklet to wait for it";
            break;
          case Block::kWaitFor:
            what = StrCat("waits for tasklet ", k.block_on, " to notify");
            break;
          case Block::kSemaphore:
            what = StrCat("waits on semaphore ", k.block_on);
            break;
          case Block::kNone:
            break;
        }
        break;
      case Phase::kCompute:
      case Phase::kReady:
        if (k.spin_segment) what = "spins on shared WRAM";
        break;
      default:
        break;
    }
    if (!what.empty()) s += StrCat(s.empty() ? "" : "; ", "tasklet ", t, " ", what);
  }
  return s;
}

DpuCycles Replay(const ClockParams& params, const DpuTrace& trace) {
  const uint32_t n = static_cast<uint32_t>(trace.tasklets.size());
  DpuClock clock(params, n);
  clock.SetSemaphores(trace.semaphores);
  std::vector<size_t> next(n, 0);
  for (;;) {
    const DpuClock::State state = clock.Advance();
    if (state == DpuClock::State::kFinished) return clock.Cycles();
    if (state != DpuClock::State::kReady) throw PimError(StrCat("replayed trace cannot finish: ", clock.Describe()));
    const uint32_t t = clock.NextReady();
    if (next[t] >= trace.tasklets[t].size()) throw PimError(StrCat("replayed trace of tasklet ", t, " ends early"));
    const TraceEvent& e = trace.tasklets[t][next[t]++];
    clock.Submit(t, e.slots, e.event);
  }
}

}  // namespace timing

}  // namespace pimopt::pim
