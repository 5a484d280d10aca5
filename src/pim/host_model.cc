#include "pimopt/pim/host_model.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "pimopt/core/error.h"

namespace pimopt::pim {

double ModelHostReductionSeconds(const HardwareProfile& p, const HostReductionWork& w) {
  if (w.vectors == 0 && w.update_elements == 0) return 0;
  const double threads = std::max<uint32_t>(1, std::min(p.host_reduction_threads, p.host_cores));
  const double bandwidth = std::min(p.host_memory_bytes_per_s, threads * p.host_thread_bytes_per_s);
  const double cycles_per_s = p.host_clock_hz * threads;
  const double sums = static_cast<double>(w.vectors) * static_cast<double>(w.elements);
  const double updates = static_cast<double>(w.update_elements);
  const double sums_s = std::max(sums * p.host_cycles_per_element / cycles_per_s, sums * w.bytes_per_element / bandwidth);
  const double updates_s = std::max(updates * p.host_update_cycles_per_element / cycles_per_s,
                                    updates * w.update_bytes_per_element / bandwidth);
  return p.host_reduction_threads * p.host_thread_start_s + sums_s + updates_s;
}

namespace {

using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// The reduction loop of the model: one thread adds its slice [begin, end) of every vector into 64-bit sums.
void SumSlice(const std::vector<std::vector<int32_t>>& vectors, size_t begin, size_t end, int64_t* sums) {
  for (const auto& v : vectors) {
    const int32_t* src = v.data();
    for (size_t x = begin; x < end; ++x) sums[x] += src[x];
  }
}

// The best of `reps` timings of `f` (the machine is noisy; the minimum is the least disturbed).
template <typename F>
double Best(int reps, F&& f) {
  double best = 1e300;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = Clock::now();
    f();
    best = std::min(best, Since(t0));
  }
  return best;
}

// Seconds per cycle from a chain of dependent adds: each depends on the one before, so the chain runs one add per
// cycle whatever the core's width (x86-64 and AArch64 register adds have a latency of one cycle; some cores fold
// adds of an immediate at rename, so the chain adds a register).
double MeasureClockHz(double budget_s) {
  constexpr uint64_t kAddsPerIteration = 16;
  uint64_t iterations = 1 << 16;
  double seconds = 0;
  uint64_t x = 0;
  volatile uint64_t step_source = 3;  // a register operand: adds of an immediate may be folded at rename
  const uint64_t step = step_source;
  auto run = [&](uint64_t n) {
    for (uint64_t i = 0; i < n; ++i) {
#if defined(__x86_64__)
      asm volatile(
          "add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\t"
          "add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\t"
          "add %1, %0\n\tadd %1, %0"
          : "+r"(x)
          : "r"(step));
#elif defined(__aarch64__)
      asm volatile(
          "add %0, %0, %1\n\tadd %0, %0, %1\n\tadd %0, %0, %1\n\tadd %0, %0, %1\n\tadd %0, %0, %1\n\t"
          "add %0, %0, %1\n\tadd %0, %0, %1\n\tadd %0, %0, %1\n\tadd %0, %0, %1\n\tadd %0, %0, %1\n\t"
          "add %0, %0, %1\n\tadd %0, %0, %1\n\tadd %0, %0, %1\n\tadd %0, %0, %1\n\tadd %0, %0, %1\n\t"
          "add %0, %0, %1"
          : "+r"(x)
          : "r"(step));
#else
      throw ConfigError("pimopt profile --calibrate-host: measuring the clock needs an x86-64 or AArch64 host");
#endif
    }
  };
  while (seconds < budget_s / 4) {  // grow until one run takes a measurable time
    iterations *= 2;
    seconds = Best(1, [&] { run(iterations); });
  }
  seconds = Best(3, [&] { run(iterations); });
  return static_cast<double>(iterations * kAddsPerIteration) / seconds;
}

}  // namespace

HostMeasurement MeasureHost(double budget_s, uint64_t memory_bytes) {
  budget_s = std::max(budget_s, 0.2);
  HostMeasurement m;
  m.cores = std::max(1u, std::thread::hardware_concurrency());
  m.clock_hz = MeasureClockHz(budget_s * 0.2);

  // In cache: 16 vectors of 4,096 values (256 KB) summed over and over.
  {
    std::vector<std::vector<int32_t>> vectors(16, std::vector<int32_t>(4096));
    for (size_t k = 0; k < vectors.size(); ++k) {
      for (size_t x = 0; x < 4096; ++x) vectors[k][x] = static_cast<int32_t>(k * 7 + x);
    }
    std::vector<int64_t> sums(4096, 0);
    int reps = 1;
    double s = 0;
    while (s < budget_s * 0.02) {
      reps *= 2;
      s = Best(1, [&] {
        for (int r = 0; r < reps; ++r) SumSlice(vectors, 0, 4096, sums.data());
      });
    }
    s = Best(5, [&] {
      for (int r = 0; r < reps; ++r) SumSlice(vectors, 0, 4096, sums.data());
    });
    m.cycles_per_element = s * m.clock_hz / (static_cast<double>(reps) * 16 * 4096);
    // The update after the sums: divide by the (power-of-two) DPU count, narrow with saturation.
    std::vector<int32_t> model(4096);
    const double u = Best(5, [&] {
      for (int r = 0; r < reps * 16; ++r) {
        for (size_t x = 0; x < 4096; ++x) {
          const int64_t a = sums[x] / 2048;
          model[x] = static_cast<int32_t>(std::clamp<int64_t>(a, INT32_MIN + 1, INT32_MAX - 1));
        }
        sums[r % 4096] += model[(r * 7) % 4096];  // a dependence the compiler cannot drop
      }
    });
    m.update_cycles_per_element = u * m.clock_hz / (static_cast<double>(reps) * 16 * 4096);
    if (sums[0] == 42 && model[1] == 42) std::fputs("", stderr);  // keep the results observable
  }

  // From memory: 64 vectors filling `memory_bytes`, summed once by one thread and once by every thread.
  {
    const size_t elements = std::max<size_t>(memory_bytes / 4 / 64, 4096);
    std::vector<std::vector<int32_t>> vectors(64, std::vector<int32_t>(elements, 1));
    std::vector<int64_t> sums(elements, 0);
    const double bytes = 64.0 * static_cast<double>(elements) * 4;
    SumSlice(vectors, 0, elements, sums.data());  // warm: pages mapped
    m.thread_bytes_per_s = bytes / Best(3, [&] { SumSlice(vectors, 0, elements, sums.data()); });
    const size_t threads = m.cores;
    auto all = [&] {
      std::vector<std::thread> pool;
      for (size_t t = 0; t < threads; ++t) {
        pool.emplace_back([&, t] {
          SumSlice(vectors, elements * t / threads, elements * (t + 1) / threads, sums.data());
        });
      }
      for (auto& th : pool) th.join();
    };
    m.memory_bytes_per_s = bytes / Best(3, all);
    if (sums[0] == 42) std::fputs("", stderr);
  }

  // Thread start: create and join, as a host that spawns its reduction threads at every step does.
  {
    constexpr int kThreads = 200;
    m.thread_start_s = Best(3, [] {
                         for (int i = 0; i < kThreads; ++i) std::thread([] {}).join();
                       }) /
                       kThreads;
  }
  return m;
}

std::string HostMeasurement::ProfileOverrides() const {
  char buf[512];
  std::snprintf(buf, sizeof(buf),
                "host_cores=%u,host_reduction_threads=%u,host_clock_hz=%.3g,host_cycles_per_element=%.3g,"
                "host_update_cycles_per_element=%.3g,host_thread_bytes_per_s=%.3g,host_memory_bytes_per_s=%.3g,"
                "host_thread_start_s=%.3g",
                cores, cores, clock_hz, cycles_per_element, update_cycles_per_element, thread_bytes_per_s,
                memory_bytes_per_s, thread_start_s);
  return buf;
}

}  // namespace pimopt::pim
