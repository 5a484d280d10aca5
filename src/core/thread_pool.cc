#include "pimopt/core/thread_pool.h"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <numeric>
#include <system_error>

#include "pimopt/core/error.h"
#include "pimopt/core/rng.h"

namespace pimopt {
namespace {

// Training runs one phase per step, and steps follow each other within microseconds: a thread that waits spins
// this long before it sleeps, because a sleeping thread's wake-up (a futex call, 5-50 us) costs more than a small
// step's work (measured: MB-SGD at batch 64 on 4,096 dense features, 2 threads, 0.15 s per epoch with sleeping
// workers, 0.10 s with spinning ones).
constexpr std::chrono::microseconds kSpinBeforeSleep{100};
constexpr unsigned kRoundsPerYield = 16;  // a spinning thread yields about every 2-5 us (SpinUntil)
// The fork-join cost is the median of kCostSamples empty phases, after a warm-up (at most kCostWarmUp) that makes
// every thread run at once: a thread just started often shares its creator's CPU, and the kernel moves it only once
// both compete for that CPU (measured on this project's 2-core machine: it took 2-4 ms); empty phases timed before
// that cost 8 us (spinning threads that yield to each other) instead of 0.3-0.9 us.
constexpr int kCostSamples = 41;
constexpr std::chrono::milliseconds kCostWarmUp{30};
constexpr std::chrono::microseconds kCostRendezvous{4000};  // longer than a scheduler time slice

// True on a thread while it runs a pool's task: a ParallelFor from there runs inline.
thread_local bool t_in_pool_task = false;

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Spins until done() or until kSpinBeforeSleep has passed; returns done(). It checks every few pause instructions
// and yields the CPU every few microseconds: when the thread it waits for shares this CPU (more threads than free
// CPUs), the yield lets that thread run instead of leaving both to spin until the sleep.
template <typename Done>
bool SpinUntil(Done&& done) {
  if (done()) return true;
  const auto until = std::chrono::steady_clock::now() + kSpinBeforeSleep;
  for (unsigned round = 1;; ++round) {
    for (int i = 0; i < 8; ++i) CpuRelax();
    if (done()) return true;
    if (round % kRoundsPerYield == 0) {
      std::this_thread::yield();
      if (done()) return true;
      if (std::chrono::steady_clock::now() > until) return false;
    }
  }
}

}  // namespace

std::vector<uint32_t> Permutation(size_t n, uint64_t stream_seed, bool shuffle) {
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  if (shuffle) {
    Rng rng(stream_seed);
    Shuffle(std::span<uint32_t>(order), rng);
  }
  return order;
}

int AvailableCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int count = CPU_COUNT(&set);
    if (count > 0) return count;
  }
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

ThreadPool::ThreadPool(int num_threads, bool use_all_threads) {
  if (num_threads <= 0) num_threads = AvailableCpus();
  num_slots_ = num_threads - 1;
  slots_.reset(new Slot[static_cast<size_t>(num_slots_)]);
  for (int i = 0; i < num_slots_; ++i) {
    try {
      workers_.emplace_back([this, i] { WorkerLoop(slots_[static_cast<size_t>(i)]); });
    } catch (const std::system_error& e) {
      StopAndJoin();  // the threads already started (a constructor that throws runs no destructor)
      throw ConfigError("--threads", StrCat("cannot start ", num_threads, " threads (thread ", i + 2, " failed: ",
                                            e.what(), "); use fewer"));
    }
  }
  usable_threads_ = use_all_threads ? num_threads : std::min(num_threads, AvailableCpus());
  MeasurePhaseCost();
}

ThreadPool::~ThreadPool() { StopAndJoin(); }

void ThreadPool::StopAndJoin() {
  stopping_.store(true, std::memory_order_seq_cst);
  for (size_t i = 0; i < workers_.size(); ++i) {
    slots_[i].ticket.fetch_add(1, std::memory_order_seq_cst);
    slots_[i].ticket.notify_one();
  }
  for (auto& t : workers_) t.join();
  workers_.clear();
}

void ThreadPool::MeasurePhaseCost() {
  if (usable_threads_ < 2) return;
  // Measured once per process and width: later pools of the same width reuse it.
  static std::mutex cache_mutex;
  static std::map<std::pair<int, int>, PhaseCost> cache;
  const std::pair<int, int> key{usable_threads_, NumThreads()};
  std::lock_guard<std::mutex> lock(cache_mutex);
  if (auto it = cache.find(key); it != cache.end()) {
    phase_cost_ = it->second;
    return;
  }
  auto nothing = [](size_t) {};
  auto phase = [&](int threads) { ParallelFor(static_cast<size_t>(threads), nothing, threads); };
  // Warm up on rendezvous phases: each task waits (spinning, no yields) until every thread holds one, or until
  // kCostRendezvous has passed. Threads that share a CPU then compete for it, and the kernel moves one of them; the
  // warm-up ends when every thread has arrived within the phase, or after kCostWarmUp.
  const auto warm_until = std::chrono::steady_clock::now() + kCostWarmUp;
  for (bool together = false; !together && std::chrono::steady_clock::now() < warm_until;) {
    std::atomic<int> arrived{0};
    auto rendezvous = [&](size_t) {
      arrived.fetch_add(1);
      const auto until = std::chrono::steady_clock::now() + kCostRendezvous;
      while (arrived.load() < usable_threads_ && std::chrono::steady_clock::now() < until) CpuRelax();
    };
    const auto t0 = std::chrono::steady_clock::now();
    ParallelFor(static_cast<size_t>(usable_threads_), rendezvous, usable_threads_);
    together = std::chrono::steady_clock::now() - t0 < kCostRendezvous / 4;
  }
  for (int i = 0; i < kCostSamples; ++i) phase(usable_threads_);
  auto median_phase_ns = [&](int threads) {
    std::vector<double> samples;
    for (int i = 0; i < kCostSamples; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      phase(threads);
      samples.push_back(std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count());
    }
    std::nth_element(samples.begin(), samples.begin() + kCostSamples / 2, samples.end());
    return samples[kCostSamples / 2];
  };
  phase_cost_.fixed_ns = median_phase_ns(2);
  if (usable_threads_ > 2) {
    phase_cost_.per_thread_ns =
        std::max(0.0, (median_phase_ns(usable_threads_) - phase_cost_.fixed_ns) / (usable_threads_ - 2));
  }
  cache[key] = phase_cost_;
}

int ThreadPool::ThreadsFor(double work_ns, size_t num_tasks) const {
  const int most = static_cast<int>(std::min<size_t>(static_cast<size_t>(usable_threads_), num_tasks));
  int best = 1;
  double best_ns = work_ns;
  for (int threads = 2; threads <= most; ++threads) {
    const double ns = phase_cost_.PhaseNs(work_ns, threads);
    if (ns >= best_ns) break;  // work / p + cost * p is convex in p: past its minimum it only grows
    best = threads;
    best_ns = ns;
  }
  return best;
}

void ThreadPool::RunTasks() {
  t_in_pool_task = true;
  for (;;) {
    const size_t task = next_task_.fetch_add(1, std::memory_order_relaxed);
    if (task >= num_tasks_) break;
    if (failed_.load(std::memory_order_relaxed)) continue;
    try {
      job_(task);
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex_);
      if (!first_error_) first_error_ = std::current_exception();
      failed_.store(true, std::memory_order_relaxed);
    }
  }
  t_in_pool_task = false;
}

void ThreadPool::WorkerLoop(Slot& slot) {
  uint32_t seen = 0;
  for (;;) {
    uint32_t ticket = seen;
    if (!SpinUntil([&] { return (ticket = slot.ticket.load(std::memory_order_acquire)) != seen; })) {
      // Sleep. The caller stores the ticket, then reads `sleeping`; this thread stores `sleeping`, then reads the
      // ticket (all sequentially consistent): one of the two sees the other, so no wake-up is lost.
      slot.sleeping.store(true, std::memory_order_seq_cst);
      while ((ticket = slot.ticket.load(std::memory_order_seq_cst)) == seen) {
        slot.ticket.wait(seen, std::memory_order_seq_cst);
      }
      slot.sleeping.store(false, std::memory_order_relaxed);
    }
    seen = ticket;
    if (stopping_.load(std::memory_order_acquire)) return;
    RunTasks();
    // The last worker out wakes the caller if it sleeps (the same handshake as above, on pending_workers_).
    if (pending_workers_.fetch_sub(1, std::memory_order_seq_cst) == 1 &&
        caller_sleeping_.load(std::memory_order_seq_cst)) {
      pending_workers_.notify_one();
    }
  }
}

bool ThreadPool::RunsInline() { return t_in_pool_task; }

ThreadPool::InlineScope::InlineScope() : was_inline_(t_in_pool_task) { t_in_pool_task = true; }
ThreadPool::InlineScope::~InlineScope() { t_in_pool_task = was_inline_; }

int ThreadPool::PhaseThreads(size_t num_tasks, int max_threads) const {
  if (num_tasks <= 1 || t_in_pool_task) return 1;
  if (max_threads <= 0) max_threads = usable_threads_;
  return static_cast<int>(std::min({static_cast<size_t>(max_threads), static_cast<size_t>(usable_threads_), num_tasks}));
}

void ThreadPool::RunPhase(size_t num_tasks, TaskRef task, int threads) {
  std::lock_guard<std::mutex> call(call_mutex_);
  job_ = task;
  num_tasks_ = num_tasks;
  next_task_.store(0, std::memory_order_relaxed);
  failed_.store(false, std::memory_order_relaxed);
  first_error_ = nullptr;
  const size_t helpers = static_cast<size_t>(threads) - 1;
  pending_workers_.store(static_cast<uint32_t>(helpers), std::memory_order_relaxed);
  for (size_t i = 0; i < helpers; ++i) {
    // A new ticket in the helper's slot (its own count: it changes on every phase the helper takes part in)
    // publishes the job (release).
    slots_[i].ticket.fetch_add(1, std::memory_order_seq_cst);
    if (slots_[i].sleeping.load(std::memory_order_seq_cst)) slots_[i].ticket.notify_one();
  }
  RunTasks();
  // Join: every helper has left RunTasks, so none can take a task number from the next phase's counter.
  if (!SpinUntil([&] { return pending_workers_.load(std::memory_order_acquire) == 0; })) {
    caller_sleeping_.store(true, std::memory_order_seq_cst);
    for (uint32_t left; (left = pending_workers_.load(std::memory_order_seq_cst)) != 0;) {
      pending_workers_.wait(left, std::memory_order_seq_cst);
    }
    caller_sleeping_.store(false, std::memory_order_relaxed);
  }
  job_ = TaskRef();
  if (first_error_) {
    std::exception_ptr error = first_error_;
    first_error_ = nullptr;
    std::rethrow_exception(error);
  }
}

}  // namespace pimopt
