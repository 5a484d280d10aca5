#include "pimopt/core/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

namespace pimopt {
namespace {

TEST(ThreadPool, RunsEveryTaskExactlyOnce) {
  for (int threads : {1, 2, 4, 7}) {
    ThreadPool pool(threads, /*use_all_threads=*/true);
    for (size_t tasks : {0u, 1u, 3u, 1000u}) {
      std::vector<std::atomic<int>> hits(tasks);
      pool.ParallelFor(tasks, [&](size_t i) { hits[i].fetch_add(1); });
      for (size_t i = 0; i < tasks; ++i) EXPECT_EQ(hits[i].load(), 1) << "threads " << threads << " task " << i;
    }
  }
}

TEST(ThreadPool, ManyConsecutiveCallsDoNotLoseOrRepeatTasks) {
  ThreadPool pool(4, /*use_all_threads=*/true);
  std::atomic<long> sum{0};
  for (int call = 0; call < 2000; ++call) {
    pool.ParallelFor(5, [&](size_t i) { sum.fetch_add(static_cast<long>(i) + 1); });
  }
  EXPECT_EQ(sum.load(), 2000L * 15);
}

TEST(ThreadPool, RethrowsTheTaskException) {
  ThreadPool pool(3, /*use_all_threads=*/true);
  EXPECT_THROW(pool.ParallelFor(50,
                                [](size_t i) {
                                  if (i == 17) throw std::runtime_error("task failed");
                                }),
               std::runtime_error);
  // The pool still works afterwards.
  std::atomic<int> count{0};
  pool.ParallelFor(10, [&](size_t) { count.fetch_add(1); });
  EXPECT_EQ(count.load(), 10);
}

TEST(ThreadPool, ZeroMeansEveryAvailableCpu) {
  ThreadPool pool(0);
  EXPECT_EQ(pool.NumThreads(), AvailableCpus());
  EXPECT_EQ(pool.UsableThreads(), AvailableCpus());
}

TEST(ThreadPool, APhaseUsesNoMoreThreadsThanAskedOrThanCpus) {
  ThreadPool pool(6, /*use_all_threads=*/true);
  for (int max_threads : {1, 2, 3, 6}) {
    std::mutex mutex;
    std::set<std::thread::id> seen;
    pool.ParallelFor(
        64,
        [&](size_t) {
          std::this_thread::sleep_for(std::chrono::microseconds(200));  // long enough for every helper to join
          std::lock_guard<std::mutex> lock(mutex);
          seen.insert(std::this_thread::get_id());
        },
        max_threads);
    EXPECT_LE(static_cast<int>(seen.size()), max_threads);
    if (max_threads == 1) {
      EXPECT_EQ(*seen.begin(), std::this_thread::get_id());
    }
  }
  // Without use_all_threads a phase never has more threads than this process has CPUs.
  ThreadPool capped(AvailableCpus() + 3);
  EXPECT_EQ(capped.NumThreads(), AvailableCpus() + 3);
  EXPECT_EQ(capped.UsableThreads(), AvailableCpus());
}

TEST(ThreadPool, HelpersThatFellAsleepAreWokenForTheNextPhase) {
  ThreadPool pool(3, /*use_all_threads=*/true);
  for (int call = 0; call < 5; ++call) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // past the spin: the helpers sleep
    std::atomic<int> count{0};
    pool.ParallelFor(30, [&](size_t) { count.fetch_add(1); });
    EXPECT_EQ(count.load(), 30);
  }
}

TEST(ThreadPool, ANestedCallRunsInline) {
  ThreadPool pool(4, /*use_all_threads=*/true);
  std::atomic<int> count{0};
  pool.ParallelFor(8, [&](size_t) {
    const auto outer = std::this_thread::get_id();
    pool.ParallelFor(4, [&](size_t) {
      EXPECT_EQ(std::this_thread::get_id(), outer);
      count.fetch_add(1);
    });
  });
  EXPECT_EQ(count.load(), 32);
}

TEST(ThreadPool, ThreadsForPaysForEveryThreadItAdds) {
  ThreadPool one(1);
  EXPECT_EQ(one.ThreadsFor(1e9, 100), 1);
  ThreadPool pool(8, /*use_all_threads=*/true);
  const PhaseCost& cost = pool.phase_cost();
  EXPECT_GT(cost.fixed_ns, 0.0);  // measured when the pool started
  EXPECT_GE(cost.per_thread_ns, 0.0);
  // Work far below a phase's cost runs on one thread; enough work for many threads uses them, never more than the
  // tasks; the count never falls as the work grows, and each thread chosen beats one fewer.
  EXPECT_EQ(pool.ThreadsFor(cost.fixed_ns / 4, 100), 1);
  EXPECT_EQ(pool.ThreadsFor(1e12, 100), 8);
  EXPECT_EQ(pool.ThreadsFor(1e12, 3), 3);
  int previous = 1;
  for (double work_ns = 100; work_ns < 1e10; work_ns *= 1.5) {
    const int threads = pool.ThreadsFor(work_ns, 100);
    EXPECT_GE(threads, previous) << work_ns;
    if (threads > 1) {
      EXPECT_LT(cost.PhaseNs(work_ns, threads), cost.PhaseNs(work_ns, threads - 1)) << work_ns;
    }
    previous = threads;
  }
}

}  // namespace
}  // namespace pimopt
