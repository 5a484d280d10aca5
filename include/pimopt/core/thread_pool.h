// A fixed pool of threads that runs numbered tasks. Results must never depend on which thread runs which task:
// callers partition work into tasks by the data (never by the thread count) and combine task results in task
// order.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace pimopt {

// The most host threads a command accepts (--threads): far above any machine's cores, far below the system's task
// limit.
inline constexpr int kMaxThreads = 1024;

class ThreadPool {
 public:
  // `num_threads` counts the calling thread too; 0 means std::thread::hardware_concurrency().
  explicit ThreadPool(int num_threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int NumThreads() const { return static_cast<int>(workers_.size()) + 1; }

  // Runs fn(0) .. fn(num_tasks-1), each exactly once, on the pool and the calling thread; returns when all are
  // done. The first exception thrown by a task is rethrown here (remaining tasks are skipped).
  void ParallelFor(size_t num_tasks, const std::function<void(size_t)>& fn);

 private:
  void WorkerLoop();
  void StopAndJoin();  // wakes every worker to end and joins it
  void RunTasks();

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  std::atomic<uint64_t> generation_{0};  // written under mutex_; read by spinning workers without it
  bool stopping_ = false;
  const std::function<void(size_t)>* job_ = nullptr;
  size_t num_tasks_ = 0;
  std::atomic<size_t> next_task_{0};
  std::atomic<size_t> tasks_done_{0};
  int active_workers_ = 0;
  size_t arrived_workers_ = 0;
  std::exception_ptr first_error_;
  std::mutex error_mutex_;
};

}  // namespace pimopt
