// A fixed pool of threads that runs numbered tasks. Results must never depend on which thread runs which task, nor
// on how many threads run a phase: callers partition work into tasks by the data (never by the thread count) and
// combine task results in task order.
//
// A phase (one ParallelFor) costs a fork and a join on top of its work: waking the threads it uses and waiting for
// the last of them. The pool measures that cost when it starts (PhaseCost) and chooses, for a phase whose
// single-thread work the caller estimates, the number of threads that makes it fastest (ThreadsFor): one when the
// work is small, never more than the tasks, nor more than the CPUs this process may run on. Threads a phase does not
// use are not woken. docs/cpu-backend.md describes the model and its measurements.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "pimopt/core/params.h"

namespace pimopt {

// The most host threads a command accepts (--threads): far above any machine's cores, far below the system's task
// limit.
inline constexpr int kMaxThreads = 1024;

// Declares the host-thread parameter every command shares ("threads": 0 = all CPUs, at most kMaxThreads; it never
// changes a result) in `table`, reached by `access` (a member pointer to an int).
template <typename Config, typename Access>
typename ParamTable<Config>::Builder AddThreadsParam(ParamTable<Config>& table, Access access, std::string help) {
  return std::move(table.Add("threads", access, 0)
                       .Min(0)
                       .Max(kMaxThreads)
                       .Unit("threads")
                       .Effect(ParamEffect::kNone)
                       .DefaultNote("0 = all CPUs")
                       .Help(std::move(help)));
}

// CPUs this process may run on (its affinity mask, e.g. under taskset or a container's cpuset), at least 1.
int AvailableCpus();

// What one fork-join phase costs, measured on an empty phase when the pool starts.
struct PhaseCost {
  double fixed_ns = 0;       // a phase on two threads, less nothing: publishing the job and the join
  double per_thread_ns = 0;  // each further thread it wakes and waits for
  // The time of a phase on `threads` threads whose work takes `work_ns` on one: the work shared evenly, plus the
  // fork-join cost of those threads (none on one).
  double PhaseNs(double work_ns, int threads) const {
    return threads <= 1 ? work_ns : work_ns / threads + fixed_ns + per_thread_ns * (threads - 2);
  }
};

class ThreadPool {
 public:
  // `num_threads` counts the calling thread too; 0 means every CPU this process may run on. A phase never uses more
  // threads than there are such CPUs (UsableThreads), unless `use_all_threads` (the pool's own tests, which check
  // its mechanics with more threads than this machine has cores).
  explicit ThreadPool(int num_threads = 0, bool use_all_threads = false);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // The threads the pool holds (what --threads asked for).
  int NumThreads() const { return num_slots_ + 1; }
  // The most threads one phase uses: NumThreads, at most the CPUs this process may run on.
  int UsableThreads() const { return usable_threads_; }
  const PhaseCost& phase_cost() const { return phase_cost_; }

  // The number of threads (1 .. min(UsableThreads, num_tasks)) that runs a phase of `num_tasks` tasks whose work
  // takes `work_ns` on one thread in the least time under phase_cost().
  int ThreadsFor(double work_ns, size_t num_tasks) const;

  // Runs fn(0) .. fn(num_tasks-1), each exactly once, on at most `max_threads` threads (the calling one included;
  // default: UsableThreads); returns when all are done. The first exception thrown by a task is rethrown here
  // (remaining tasks are skipped). A phase of one thread, or a ParallelFor called from inside a task, runs the tasks
  // inline on the calling thread (a plain loop: no call through a pointer, no allocation).
  template <typename Fn>
  void ParallelFor(size_t num_tasks, Fn&& fn, int max_threads = 0) {
    const int threads = PhaseThreads(num_tasks, max_threads);
    if (threads <= 1) {
      for (size_t i = 0; i < num_tasks; ++i) fn(i);
      return;
    }
    RunPhase(num_tasks, TaskRef(fn), threads);
  }
  // True on a thread that runs a pool's task or holds an InlineScope: its ParallelFor calls run inline.
  static bool RunsInline();
  // The threads a ParallelFor of `num_tasks` tasks from this thread would run on (1 where it runs inline): for a
  // caller that keeps one accumulator per thread.
  int ThreadsOfPhase(size_t num_tasks) const { return PhaseThreads(num_tasks, 0); }
  // For its lifetime, this thread's ParallelFor calls (on any pool) run their tasks inline: for a thread that works
  // beside another outside the pool (Train's evaluations beside the epochs), so that neither wakes the pool's
  // threads onto the CPUs the two already use.
  class InlineScope {
   public:
    InlineScope();
    ~InlineScope();
    InlineScope(const InlineScope&) = delete;
    InlineScope& operator=(const InlineScope&) = delete;

   private:
    bool was_inline_;
  };
  // ParallelFor on ThreadsFor(work_ns, num_tasks) threads.
  template <typename Fn>
  void ParallelForWork(size_t num_tasks, double work_ns, Fn&& fn) {
    ParallelFor(num_tasks, fn, ThreadsFor(work_ns, num_tasks));
  }

 private:
  // A non-owning reference to a phase's callable (it outlives the phase: ParallelFor waits for the join).
  class TaskRef {
   public:
    TaskRef() = default;
    template <typename F>
    explicit TaskRef(F& fn)
        : object_(const_cast<void*>(static_cast<const void*>(&fn))),
          call_([](void* object, size_t task) { (*static_cast<F*>(object))(task); }) {}
    void operator()(size_t task) const { call_(object_, task); }

   private:
    void* object_ = nullptr;
    void (*call_)(void*, size_t) = nullptr;
  };

  // The threads a phase runs on: min(max_threads or UsableThreads, UsableThreads, num_tasks); 1 inside a task.
  int PhaseThreads(size_t num_tasks, int max_threads) const;
  void RunPhase(size_t num_tasks, TaskRef task, int threads);

  // One worker's mailbox, on a cache line of its own: the caller advances its ticket for each phase the worker is
  // to take part in; the worker spins on it (then sleeps on it).
  struct alignas(64) Slot {
    std::atomic<uint32_t> ticket{0};
    std::atomic<bool> sleeping{false};
  };

  void WorkerLoop(Slot& slot);
  void StopAndJoin();  // wakes every worker to end and joins it
  void RunTasks();
  void MeasurePhaseCost();

  std::unique_ptr<Slot[]> slots_;  // one per helper thread
  int num_slots_ = 0;
  std::vector<std::thread> workers_;
  int usable_threads_ = 1;
  PhaseCost phase_cost_;
  std::mutex call_mutex_;  // one phase at a time
  std::atomic<bool> stopping_{false};
  // The phase being run: written before the tickets are (release), read by the workers after theirs (acquire).
  TaskRef job_;
  size_t num_tasks_ = 0;
  alignas(64) std::atomic<size_t> next_task_{0};
  alignas(64) std::atomic<uint32_t> pending_workers_{0};  // workers of this phase that have not finished it
  std::atomic<bool> caller_sleeping_{false};
  std::atomic<bool> failed_{false};
  std::exception_ptr first_error_;
  std::mutex error_mutex_;
};

}  // namespace pimopt
