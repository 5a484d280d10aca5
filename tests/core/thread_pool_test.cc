#include "pimopt/core/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <vector>

namespace pimopt {
namespace {

TEST(ThreadPool, RunsEveryTaskExactlyOnce) {
  for (int threads : {1, 2, 4, 7}) {
    ThreadPool pool(threads);
    for (size_t tasks : {0u, 1u, 3u, 1000u}) {
      std::vector<std::atomic<int>> hits(tasks);
      pool.ParallelFor(tasks, [&](size_t i) { hits[i].fetch_add(1); });
      for (size_t i = 0; i < tasks; ++i) EXPECT_EQ(hits[i].load(), 1) << "threads " << threads << " task " << i;
    }
  }
}

TEST(ThreadPool, ManyConsecutiveCallsDoNotLoseOrRepeatTasks) {
  ThreadPool pool(4);
  std::atomic<long> sum{0};
  for (int call = 0; call < 2000; ++call) {
    pool.ParallelFor(5, [&](size_t i) { sum.fetch_add(static_cast<long>(i) + 1); });
  }
  EXPECT_EQ(sum.load(), 2000L * 15);
}

TEST(ThreadPool, RethrowsTheTaskException) {
  ThreadPool pool(3);
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

TEST(ThreadPool, ZeroMeansHardwareConcurrency) {
  ThreadPool pool(0);
  EXPECT_GE(pool.NumThreads(), 1);
}

}  // namespace
}  // namespace pimopt
