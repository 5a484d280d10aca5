#include "pimopt/pim/timing.h"

#include <algorithm>
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

const char* EventName(EventKind kind) {
  switch (kind) {
    case EventKind::kDmaRead:
      return "mram_read";
    case EventKind::kDmaWrite:
      return "mram_write";
    case EventKind::kMutexLock:
      return "mutex_lock";
    case EventKind::kMutexUnlock:
      return "mutex_unlock";
    case EventKind::kBarrier:
      return "barrier_wait";
    case EventKind::kHandshakeNotify:
      return "handshake_notify";
    case EventKind::kHandshakeWait:
      return "handshake_wait_for";
    case EventKind::kSemTake:
      return "sem_take";
    case EventKind::kSemGive:
      return "sem_give";
    case EventKind::kYield:
      return "yield";
    case EventKind::kSpinYield:
      return "volatile read";
    case EventKind::kReadClock:
      return "perfcounter_get";
    case EventKind::kExit:
      return "exit";
  }
  return "?";
}

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
// Times and virtual times are sums of many doubles: completions within this relative distance are simultaneous.
double Slack(double x) { return 1e-9 * std::max(1.0, std::fabs(x)); }
}  // namespace

DpuClock::DpuClock(const ClockParams& params, uint32_t tasklets, uint64_t shuffle_seed) {
  Reset(params, tasklets, shuffle_seed);
}

void DpuClock::Reset(const ClockParams& params, uint32_t tasklets, uint64_t shuffle_seed) {
  if (tasklets == 0) throw PimError("DpuClock: a launch needs at least one tasklet");
  p_ = params;
  tasklets_.resize(tasklets);
  for (Tasklet& k : tasklets_) {
    std::vector<Op> ops = std::move(k.ops);
    ops.clear();
    k = Tasklet{};
    k.ops = std::move(ops);
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
  v_end_.assign(tasklets, std::numeric_limits<double>::infinity());
  t_done_.assign(tasklets, std::numeric_limits<double>::infinity());
  now_ = virtual_ = engine_free_ = 0;
  computing_ = spinning_ = done_ = 0;
  ready_ = tasklets;
  progress_ = 0;
  stalled_ = false;
  cycles_ = DpuCycles{};
  dmas_ = contentions_ = barrier_waits_ = 0;
  shuffle_ = shuffle_seed != 0;
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

double DpuClock::Capacity() const {
  const double pipeline = 1.0 / (1.0 + p_.issue_stall_cycles);
  return now_ < engine_free_ - Slack(now_) ? pipeline * (1.0 - p_.dma_pipeline_stall) : pipeline;
}

double DpuClock::Rate() const {
  const uint32_t active = computing_ + spinning_;
  if (active == 0) return 0;
  return std::min(1.0 / p_.revolver_cycles, Capacity() / active);
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

void DpuClock::Submit(uint32_t t, double slots, const Event& e) {
  Tasklet& k = tasklets_.at(t);
  if (k.phase != Phase::kReady) throw PimError(StrCat("DpuClock::Submit: tasklet ", t, " is not ready"));
  if (e.a >= kMaxSyncObjects &&
      (e.kind == EventKind::kMutexLock || e.kind == EventKind::kMutexUnlock || e.kind == EventKind::kBarrier ||
       e.kind == EventKind::kSemTake || e.kind == EventKind::kSemGive)) {
    throw PimError(
        StrCat(EventName(e.kind), " ", e.a, ": synchronization objects are numbered 0 to ", kMaxSyncObjects - 1));
  }
  --ready_;
  k.ops.clear();
  k.head = 0;
  k.result = 0;
  k.spin_segment = e.kind == EventKind::kSpinYield;
  switch (e.kind) {
    case EventKind::kDmaRead:
    case EventKind::kDmaWrite:
      Compute(t, slots + p_.dma_issue_slots);
      Push(t, Op{Op::kDma, e.kind == EventKind::kDmaWrite, e.a, 0, 0});
      break;
    case EventKind::kMutexLock:
      Compute(t, slots + p_.lock_acquire_slots);
      Push(t, Op{Op::kAcquire, false, MutexLock(e.a), 0, 0});
      break;
    case EventKind::kMutexUnlock:
      Compute(t, slots);
      Push(t, Op{Op::kRelease, false, MutexLock(e.a), 0, 0});
      Compute(t, p_.lock_release_slots);
      break;
    case EventKind::kBarrier:
      Compute(t, slots + p_.barrier_call_slots + p_.lock_acquire_slots);
      Push(t, Op{Op::kAcquire, false, BarrierLock(e.a), 0, 0});
      Compute(t, p_.barrier_critical_slots);
      Push(t, Op{Op::kBarrierArrive, false, e.a, e.b == 0 ? tasklets() : e.b, 0});
      break;
    case EventKind::kHandshakeNotify:
      Compute(t, slots + p_.lock_acquire_slots);
      Push(t, Op{Op::kAcquire, false, HandshakeLock(t), 0, 0});
      Compute(t, p_.handshake_critical_slots);
      Push(t, Op{Op::kNotify, false, 0, 0, 0});
      break;
    case EventKind::kHandshakeWait:
      if (e.a >= tasklets()) throw PimError(StrCat("handshake_wait_for(", e.a, "): there is no tasklet ", e.a));
      Compute(t, slots + p_.lock_acquire_slots);
      Push(t, Op{Op::kAcquire, false, HandshakeLock(e.a), 0, 0});
      Compute(t, p_.handshake_critical_slots);
      Push(t, Op{Op::kWaitFor, false, e.a, 0, 0});
      break;
    case EventKind::kSemTake:
    case EventKind::kSemGive:
      Compute(t, slots + p_.lock_acquire_slots);
      Push(t, Op{Op::kAcquire, false, SemaphoreLock(e.a), 0, 0});
      Compute(t, p_.semaphore_critical_slots);
      Push(t, Op{e.kind == EventKind::kSemTake ? Op::kSemTake : Op::kSemGive, false, e.a, 0, 0});
      break;
    case EventKind::kYield:
      Compute(t, slots);
      break;
    case EventKind::kSpinYield:
      Compute(t, slots);
      Push(t, Op{Op::kSpinCheck, false, 0, 0, 0});
      break;
    case EventKind::kReadClock:
      Compute(t, slots + p_.read_clock_slots);
      Push(t, Op{Op::kReadClock, false, 0, 0, 0});
      break;
    case EventKind::kExit:
      Compute(t, slots);
      Push(t, Op{Op::kExit, false, 0, 0, 0});
      break;
  }
  Continue(t);
}

void DpuClock::Wake(uint32_t t) {
  Tasklet& k = tasklets_[t];
  k.block = Block::kNone;
  k.ops.clear();
  k.head = 0;
  k.phase = Phase::kBlocked;  // Continue's caller state: not computing, not ready
  Compute(t, p_.sync_return_slots);
  Continue(t);
}

void DpuClock::Continue(uint32_t t) {
  for (;;) {
    Tasklet& k = tasklets_[t];
    if (k.head == k.ops.size()) {
      k.ops.clear();
      k.head = 0;
      k.phase = Phase::kReady;
      ++ready_;
      return;
    }
    const Op op = k.ops[k.head++];
    if (!k.spin_segment && op.kind != Op::kCompute) progress_ = now_;
    switch (op.kind) {
      case Op::kCompute:
        if (op.slots <= 0) break;
        k.phase = Phase::kCompute;
        v_end_[t] = virtual_ + op.slots;
        ++computing_;
        return;
      case Op::kDma: {
        const double alpha = op.write ? p_.dma_write_latency_cycles : p_.dma_read_latency_cycles;
        const double transfer = p_.dma_cycles_per_byte * op.a;
        const double start = std::max(now_, engine_free_);
        engine_free_ = start + p_.dma_occupancy_cycles + p_.dma_occupancy_cycles_per_byte * op.a;
        t_done_[t] = std::max(start + alpha + transfer, engine_free_);
        k.phase = Phase::kDma;
        ++dmas_;
        return;
      }
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
          // The waiter's next acquire finds the lock free: one more issue, then it goes on.
          Tasklet& wk = tasklets_[w];
          wk.phase = Phase::kBlocked;
          wk.ops.insert(wk.ops.begin() + static_cast<std::ptrdiff_t>(wk.head),
                        Op{Op::kCompute, false, 0, 0, p_.lock_acquire_slots});
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

DpuClock::State DpuClock::Advance() {
  for (;;) {
    if (stalled_) return State::kSpinStall;
    if (ready_ > 0) return State::kReady;
    if (done_ == tasklets_.size()) return State::kFinished;
    const double rate = Rate();
    double next = kInf;
    const size_t n = tasklets_.size();
    if (computing_ > 0 && rate > 0) {
      double v_min = kInf;
      for (size_t t = 0; t < n; ++t) v_min = std::min(v_min, v_end_[t]);
      next = now_ + std::max(0.0, v_min - virtual_) / rate;
    }
    double dma_min = kInf;
    for (size_t t = 0; t < n; ++t) dma_min = std::min(dma_min, t_done_[t]);
    const bool waiting_dma = dma_min < kInf;
    next = std::min(next, dma_min);
    const bool engine_busy = now_ < engine_free_ - Slack(now_);
    if (engine_busy && p_.dma_pipeline_stall > 0) next = std::min(next, engine_free_);
    if (next == kInf) return State::kDeadlock;
    // Account the interval [now, next).
    const double dt = std::max(0.0, next - now_);
    const double capacity = Capacity();
    const double used = (computing_ + spinning_) * rate;
    cycles_.issue += computing_ * rate * dt;
    cycles_.sync += spinning_ * rate * dt;
    cycles_.interference += (1.0 - capacity) * dt;
    const double idle = std::max(0.0, capacity - used) * dt;
    if (computing_ + spinning_ > 0) {
      cycles_.revolver += idle;
    } else if (waiting_dma) {
      cycles_.dma += idle;
    } else {
      cycles_.sync += idle;
    }
    virtual_ += rate * dt;
    now_ = next;
    // Everything that completes now, in tasklet order (or shuffled).
    const double v_due = virtual_ + Slack(virtual_), t_due = now_ + Slack(now_);
    auto complete = [&](uint32_t t) {
      if (v_end_[t] <= v_due) {
        --computing_;
        v_end_[t] = kInf;
        tasklets_[t].phase = Phase::kBlocked;
        Continue(t);
      } else if (t_done_[t] <= t_due) {
        t_done_[t] = kInf;
        tasklets_[t].phase = Phase::kBlocked;
        Continue(t);
      }
    };
    if (shuffle_) {
      for (uint32_t t : Order()) complete(t);
    } else {
      for (uint32_t t = 0; t < n; ++t) complete(t);
    }
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

// ---------------------------------------------------------------- host transfers and launches
namespace {

uint32_t RanksFor(const HardwareProfile& p, uint32_t dpus) { return (dpus + p.dpus_per_rank - 1) / p.dpus_per_rank; }

// Aggregate bandwidth of a parallel push over `dpus` DPUs: within one rank it grows from the single-DPU rate to
// the full-rank rate geometrically in the number of DPUs ([PrIM]: 0.33 GB/s for 1 DPU, 6.68 GB/s for 64;
// interpolation inferred); ranks add up to the host's cap ([sdk-light]). Sources: docs/sources.md.
// A transfer call's fixed cost: once per call, per further rank, and per DPU of one rank (the SDK works the
// ranks in parallel, the DPUs of a rank one after another).
double TransferOverheadSeconds(double call_s, double per_rank_s, double per_dpu_s, const HardwareProfile& p,
                               uint32_t dpus) {
  return call_s + per_rank_s * (RanksFor(p, dpus) - 1) + per_dpu_s * std::min(dpus, p.dpus_per_rank);
}

// A push's bandwidth falls as the bytes one rank's worker reads outgrow the host's caches: the factor is
// 1 / (1 + (rank_bytes / knee)^exponent).
double PushCacheFactor(const HardwareProfile& p, double rank_bytes) {
  return 1.0 / (1.0 + std::pow(rank_bytes / p.push_bandwidth_knee_bytes, p.push_bandwidth_knee_exponent));
}

// One rank's bandwidth in a parallel transfer: it grows from one DPU's to a full rank's geometrically in the DPUs
// the rank holds, times `factor` (the host's cache effect on pushes). Ranks add up to the host's cap.
double RankBandwidth(const HardwareProfile& p, double single, double rank, uint32_t dpus, double factor = 1.0) {
  const uint32_t in_rank = std::min(dpus, p.dpus_per_rank);
  const double exponent = p.dpus_per_rank > 1 ? std::log(in_rank) / std::log(p.dpus_per_rank) : 1.0;
  return single * std::pow(rank / single, exponent) * factor;
}

// A transfer's fixed cost, each rank's bandwidth and the host's cap.
struct RankTransferRates {
  double latency_s = 0;
  double rank_bytes_per_s = 0;
  double cap_bytes_per_s = 0;
  uint32_t ranks = 0;
};
RankTransferRates ModelRankTransferRates(const HardwareProfile& p, TransferShape shape, uint32_t dpus,
                                         uint64_t bytes_per_dpu) {
  RankTransferRates r;
  r.ranks = RanksFor(p, dpus);
  const uint32_t in_rank = std::min(dpus, p.dpus_per_rank);
  switch (shape) {
    case TransferShape::kParallelPush: {
      const double rank_bytes = static_cast<double>(in_rank) * static_cast<double>(bytes_per_dpu);
      r.latency_s = TransferOverheadSeconds(p.push_to_dpu_overhead_s, p.push_to_dpu_overhead_per_rank_s,
                                            p.push_to_dpu_overhead_per_dpu_s, p, dpus);
      r.rank_bytes_per_s =
          RankBandwidth(p, p.serial_to_dpu_bytes_per_s, p.rank_to_dpu_bytes_per_s, dpus, PushCacheFactor(p, rank_bytes));
      r.cap_bytes_per_s = p.max_to_dpu_bytes_per_s;
      break;
    }
    case TransferShape::kBroadcast:
      // One source buffer feeds every copy: the cache effect follows its size.
      r.latency_s = TransferOverheadSeconds(p.push_to_dpu_overhead_s, p.push_to_dpu_overhead_per_rank_s,
                                            p.push_to_dpu_overhead_per_dpu_s, p, dpus);
      r.rank_bytes_per_s = RankBandwidth(p, p.serial_to_dpu_bytes_per_s, p.rank_broadcast_bytes_per_s, dpus,
                                         PushCacheFactor(p, static_cast<double>(bytes_per_dpu)));
      r.cap_bytes_per_s = p.max_broadcast_bytes_per_s;
      break;
    case TransferShape::kParallelPull:
      r.latency_s = TransferOverheadSeconds(p.push_from_dpu_overhead_s, p.push_from_dpu_overhead_per_rank_s,
                                            p.push_from_dpu_overhead_per_dpu_s, p, dpus);
      r.rank_bytes_per_s = RankBandwidth(p, p.serial_from_dpu_bytes_per_s, p.rank_from_dpu_bytes_per_s, dpus);
      r.cap_bytes_per_s = p.max_from_dpu_bytes_per_s;
      break;
  }
  return r;
}

}  // namespace

double ModelTransferSeconds(const HardwareProfile& p, TransferShape shape, uint32_t dpus, uint64_t bytes_per_dpu) {
  if (dpus == 0 || bytes_per_dpu == 0) return 0;
  const RankTransferRates r = ModelRankTransferRates(p, shape, dpus, bytes_per_dpu);
  // Bytes delivered (a broadcast's too, as PrIM counts them), at the ranks' rates up to the host's cap.
  const double bytes = static_cast<double>(dpus) * static_cast<double>(bytes_per_dpu);
  return r.latency_s + bytes / std::min(r.cap_bytes_per_s, r.rank_bytes_per_s * r.ranks);
}

double ModelParallelTransferSeconds(const HardwareProfile& p, XferDirection direction, uint32_t dpus,
                                    uint64_t bytes_per_dpu) {
  return ModelTransferSeconds(
      p, direction == XferDirection::kToDpu ? TransferShape::kParallelPush : TransferShape::kParallelPull, dpus,
      bytes_per_dpu);
}

double ModelBroadcastSeconds(const HardwareProfile& p, uint32_t dpus, uint64_t bytes) {
  return ModelTransferSeconds(p, TransferShape::kBroadcast, dpus, bytes);
}

double ModelSerialTransferSeconds(const HardwareProfile& p, XferDirection direction, uint32_t set_dpus,
                                  uint64_t bytes) {
  const bool to = direction == XferDirection::kToDpu;
  const double bw = to ? p.serial_to_dpu_bytes_per_s : p.serial_from_dpu_bytes_per_s;
  // A serial read waits on every DPU of the set's rank, as a parallel pull does (the per-DPU term).
  const double per_dpu = to ? 0.0 : p.push_from_dpu_overhead_per_dpu_s * std::min(set_dpus, p.dpus_per_rank);
  return p.serial_call_overhead_s + per_dpu + static_cast<double>(bytes) / bw;
}

double ModelLaunchOverheadSeconds(const HardwareProfile& p, uint32_t dpus) {
  return p.launch_overhead_s + p.launch_overhead_per_rank_s * RanksFor(p, dpus);
}

}  // namespace pimopt::pim
