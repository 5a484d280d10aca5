// Seeded random streams. Every random decision in pimopt comes from a stream derived from the run seed and the
// ids of who asks (epoch, worker, block), so results never depend on thread count or scheduling. Only
// pimopt's own integer-based algorithms are used (no std:: distributions), so sequences are identical on every
// standard library.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <span>
#include <vector>

namespace pimopt {

// SplitMix64 step: a strong 64-bit mixer (Steele, Lea, Flood 2014).
constexpr uint64_t Mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// Derives an independent stream seed from a base seed and up to three ids.
constexpr uint64_t StreamSeed(uint64_t seed, uint64_t a = 0, uint64_t b = 0, uint64_t c = 0) {
  return Mix64(Mix64(Mix64(Mix64(seed) ^ a) ^ (b * 0x9E3779B97F4A7C15ULL)) ^ (c * 0xD1B54A32D192ED03ULL));
}

// xoshiro256** (Blackman, Vigna 2018). Satisfies UniformRandomBitGenerator.
class Rng {
 public:
  using result_type = uint64_t;
  explicit Rng(uint64_t seed) {
    uint64_t s = seed;
    for (auto& word : state_) {
      s += 0x9E3779B97F4A7C15ULL;
      word = Mix64(s);
    }
  }
  static constexpr result_type min() { return 0; }
  static constexpr result_type max() { return std::numeric_limits<uint64_t>::max(); }

  result_type operator()() {
    const uint64_t result = Rotl(state_[1] * 5, 7) * 9;
    const uint64_t t = state_[1] << 17;
    state_[2] ^= state_[0];
    state_[3] ^= state_[1];
    state_[1] ^= state_[2];
    state_[0] ^= state_[3];
    state_[2] ^= t;
    state_[3] = Rotl(state_[3], 45);
    return result;
  }

  // Uniform in [0, 1) with 53 random bits.
  double Uniform() { return static_cast<double>((*this)() >> 11) * 0x1.0p-53; }
  // Uniform float in [0, 1) with 24 random bits.
  float UniformFloat() { return static_cast<float>((*this)() >> 40) * 0x1.0p-24f; }
  // Uniform integer in [0, bound) (Lemire's nearly-divisionless method, unbiased).
  uint64_t Below(uint64_t bound) {
    __uint128_t m = static_cast<__uint128_t>((*this)()) * bound;
    uint64_t low = static_cast<uint64_t>(m);
    if (low < bound) {
      const uint64_t threshold = (0 - bound) % bound;
      while (low < threshold) {
        m = static_cast<__uint128_t>((*this)()) * bound;
        low = static_cast<uint64_t>(m);
      }
    }
    return static_cast<uint64_t>(m >> 64);
  }
  // Standard normal (Box-Muller; one value per call, deterministic).
  double Normal() {
    const double u1 = 1.0 - Uniform();  // (0, 1]
    const double u2 = Uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

 private:
  static constexpr uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t state_[4];
};

// Fisher-Yates shuffle with Rng::Below: the same permutation on every platform.
template <typename T>
void Shuffle(std::span<T> items, Rng& rng) {
  for (size_t i = items.size(); i > 1; --i) {
    const size_t j = rng.Below(i);
    std::swap(items[i - 1], items[j]);
  }
}

// 0..n-1, shuffled with the given stream if `shuffle`.
std::vector<uint32_t> Permutation(size_t n, uint64_t stream_seed, bool shuffle = true);

}  // namespace pimopt
