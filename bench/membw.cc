// STREAM-like memory bandwidth of this machine: copy (a[i] = b[i]) and read (a vectorized sum of a[i]) over arrays
// far larger than the caches, with T threads, best of several repetitions. Copy counts 2 x bytes (read + write), as
// STREAM does (no write-allocate traffic counted). Each thread first touches the part it later measures, so that on
// a machine with several memory nodes its pages sit on its own node.
//
//   pimopt_membw [mib [threads]]            one JSON object: array_bytes, threads, copy_gb_per_s, read_gb_per_s
//   pimopt_membw mib --threads 1,2,4,...    one JSON object: array_bytes and "points", one such entry per count
//
// mib: MiB per array (default 1024); threads default: every CPU of the machine.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Point {
  int threads;
  double copy_gb_per_s, read_gb_per_s;
};

volatile float g_sink = 0;

Point Measure(float* a, float* b, size_t n, int threads) {
  auto parallel = [&](auto&& body) {
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) pool.emplace_back([&, t] { body(n * t / threads, n * (t + 1) / threads); });
    for (auto& th : pool) th.join();
  };
  parallel([&](size_t lo, size_t hi) {  // first touch by the thread that measures the part
    std::fill(a + lo, a + hi, 1.0f);
    std::fill(b + lo, b + hi, 2.0f);
  });
  auto best_of = [&](auto&& body) {
    double best = 1e30;
    for (int rep = 0; rep < 5; ++rep) {
      const auto t0 = std::chrono::steady_clock::now();
      parallel(body);
      best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    return best;
  };
  const double copy_s = best_of([&](size_t lo, size_t hi) { std::memcpy(a + lo, b + lo, (hi - lo) * 4); });
  const double read_s = best_of([&](size_t lo, size_t hi) {
    const float* part = a + lo;  // a local pointer: through the captured one GCC vectorizes with gathers
    const size_t count = hi - lo;
    float sum = 0;
#pragma omp simd reduction(+ : sum)
    for (size_t i = 0; i < count; ++i) sum += part[i];
    g_sink = sum;
  });
  const double bytes = 4.0 * static_cast<double>(n);
  return {threads, 2.0 * bytes / copy_s / 1e9, bytes / read_s / 1e9};
}

int Usage(const char* why) {
  std::fprintf(stderr, "pimopt_membw: %s\nusage: pimopt_membw MIB THREADS (both optional) | pimopt_membw MIB --threads 1,2,4\n",
               why);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  const long mib = argc > 1 ? std::strtol(argv[1], nullptr, 10) : 1024;
  if (mib < 1 || mib > (1L << 20)) return Usage("MiB must be an integer in 1 .. 1048576");
  std::vector<int> counts;
  bool points = false;
  if (argc > 3 && std::string(argv[2]) == "--threads") {
    points = true;
    std::string list = argv[3];
    for (size_t pos = 0; pos <= list.size();) {
      const size_t comma = std::min(list.find(',', pos), list.size());
      const int t = std::atoi(list.substr(pos, comma - pos).c_str());
      if (t < 1 || t > 4096) return Usage("--threads: a comma-separated list of counts in 1 .. 4096");
      counts.push_back(t);
      pos = comma + 1;
    }
  } else {
    const int t = argc > 2 ? std::atoi(argv[2]) : static_cast<int>(std::thread::hardware_concurrency());
    if (t < 1 || t > 4096) return Usage("THREADS must be an integer in 1 .. 4096");
    counts.push_back(t);
  }
  const size_t n = (static_cast<size_t>(mib) << 20) / sizeof(float);
  // Not std::vector: its value-initialization would touch every page on this thread.
  float* a = static_cast<float*>(std::malloc(n * sizeof(float)));
  float* b = static_cast<float*>(std::malloc(n * sizeof(float)));
  if (!a || !b) return Usage("cannot allocate two arrays of that size");
  std::string out = "{\"array_bytes\": " + std::to_string(n * sizeof(float));
  if (points) out += ", \"points\": [";
  for (size_t i = 0; i < counts.size(); ++i) {
    const Point p = Measure(a, b, n, counts[i]);
    char buf[160];
    std::snprintf(buf, sizeof buf, "%s\"threads\": %d, \"copy_gb_per_s\": %.3f, \"read_gb_per_s\": %.3f%s",
                  points ? (i ? ", {" : "{") : ", ", p.threads, p.copy_gb_per_s, p.read_gb_per_s, points ? "}" : "");
    out += buf;
  }
  out += points ? "]}" : "}";
  std::printf("%s\n", out.c_str());
  std::free(a);
  std::free(b);
  return 0;
}
