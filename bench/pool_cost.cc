// What one parallel phase of the thread pool costs: the fork and the join of an empty phase (one empty task per
// thread), and a step-sized phase (one task of 16,384 multiply-adds per thread, from L1/L2) against the same work on
// one thread. Each figure is the median of 21 batches of 2,000 phases, after 300 ms of busy phases (so that the
// kernel has spread the threads over the CPUs). Prints one JSON object with a point per thread count:
//
//   pimopt_pool_cost [threads,threads,...]     default: 2 and every CPU this process may run on
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "pimopt/core/thread_pool.h"

namespace {

constexpr int kBatches = 21;
constexpr int kPhasesPerBatch = 2000;
constexpr size_t kMultiplyAddsPerTask = 1 << 14;

template <typename Body>
double MedianNs(Body&& body) {
  std::vector<double> ns;
  for (int b = 0; b < kBatches; ++b) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kPhasesPerBatch; ++i) body();
    ns.push_back(std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() /
                 kPhasesPerBatch);
  }
  std::nth_element(ns.begin(), ns.begin() + kBatches / 2, ns.end());
  return ns[kBatches / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> counts;
  if (argc > 1) {
    const std::string list = argv[1];
    for (size_t pos = 0; pos <= list.size();) {
      const size_t comma = std::min(list.find(',', pos), list.size());
      const int t = std::atoi(list.substr(pos, comma - pos).c_str());
      if (t < 1 || t > pimopt::kMaxThreads) {
        std::fprintf(stderr, "pimopt_pool_cost: expected comma-separated thread counts in 1 .. %d\n",
                     pimopt::kMaxThreads);
        return 2;
      }
      counts.push_back(t);
      pos = comma + 1;
    }
  } else {
    counts = {2};
    if (pimopt::AvailableCpus() > 2) counts.push_back(pimopt::AvailableCpus());
  }
  std::atomic<long> sink{0};
  std::string out = "{\"cpus\": " + std::to_string(pimopt::AvailableCpus()) + ", \"points\": [";
  for (size_t c = 0; c < counts.size(); ++c) {
    pimopt::ThreadPool pool(counts[c]);
    const size_t threads = static_cast<size_t>(pool.UsableThreads());
    const auto busy_until = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
    while (std::chrono::steady_clock::now() < busy_until) {
      pool.ParallelFor(threads, [&](size_t i) {
        const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(100);
        while (std::chrono::steady_clock::now() < until) {
        }
        sink += static_cast<long>(i);
      });
    }
    const double empty_ns = MedianNs([&] { pool.ParallelFor(threads, [&](size_t i) { sink += static_cast<long>(i); }); });
    std::vector<float> a(threads * kMultiplyAddsPerTask, 1.0f), b(threads * kMultiplyAddsPerTask, 0.5f);
    auto task = [&](size_t t) {
      float s = 0;
      for (size_t k = t * kMultiplyAddsPerTask; k < (t + 1) * kMultiplyAddsPerTask; ++k) s += a[k] * b[k];
      sink += static_cast<long>(s);
    };
    const double parallel_ns = MedianNs([&] { pool.ParallelFor(threads, task); });
    const double inline_ns = MedianNs([&] {
      for (size_t t = 0; t < threads; ++t) task(t);
    });
    char buf[400];
    std::snprintf(buf, sizeof buf,
                  "%s{\"threads\": %d, \"usable\": %zu, \"empty_phase_ns\": %.0f, \"measured_at_start\": "
                  "{\"fixed_ns\": %.0f, \"per_thread_ns\": %.0f}, \"step_phase_ns\": %.0f, \"step_inline_ns\": %.0f}",
                  c ? ", " : "", counts[c], threads, empty_ns, pool.phase_cost().fixed_ns,
                  pool.phase_cost().per_thread_ns, parallel_ns, inline_ns);
    out += buf;
  }
  std::printf("%s]}\n", out.c_str());
  return sink.load() == -1;  // keeps the sums alive
}
