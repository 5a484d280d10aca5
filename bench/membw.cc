// STREAM-like memory bandwidth of this machine: copy (a[i] = b[i]) and read (sum of a[i]) over arrays far
// larger than the caches, with T threads, best of several repetitions. Prints one JSON object.
// Copy counts 2 x bytes (read + write), as STREAM does (no write-allocate traffic counted).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
  const size_t bytes = (argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1024) << 20;  // MiB per array
  const int threads = argc > 2 ? std::atoi(argv[2]) : static_cast<int>(std::thread::hardware_concurrency());
  const size_t n = bytes / sizeof(float);
  std::vector<float> a(n, 1.0f), b(n, 2.0f);
  auto run = [&](auto&& body) {
    double best = 1e30;
    for (int rep = 0; rep < 5; ++rep) {
      const auto t0 = std::chrono::steady_clock::now();
      std::vector<std::thread> pool;
      for (int t = 0; t < threads; ++t) {
        pool.emplace_back([&, t] { body(n * t / threads, n * (t + 1) / threads); });
      }
      for (auto& th : pool) th.join();
      best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    return best;
  };
  const double copy_s = run([&](size_t lo, size_t hi) { std::memcpy(a.data() + lo, b.data() + lo, (hi - lo) * 4); });
  std::vector<double> sums(threads);
  volatile float sink = 0;
  const double read_s = run([&](size_t lo, size_t hi) {
    float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (size_t i = lo; i + 4 <= hi; i += 4) {
      s0 += a[i];
      s1 += a[i + 1];
      s2 += a[i + 2];
      s3 += a[i + 3];
    }
    sink = s0 + s1 + s2 + s3;
  });
  (void)sink;
  std::printf("{\"array_bytes\": %zu, \"threads\": %d, \"copy_gb_per_s\": %.3f, \"read_gb_per_s\": %.3f}\n", bytes,
              threads, 2.0 * bytes / copy_s / 1e9, 1.0 * bytes / read_s / 1e9);
  return 0;
}
