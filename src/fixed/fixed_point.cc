#include "pimopt/fixed/fixed_point.h"

#include <cmath>

#include "pimopt/core/error.h"

namespace pimopt::fixed {

int8_t QuantizeFeature(float x, Saturation& sat) {
  const double q = std::nearbyint(static_cast<double>(x) * (1 << kFeatureFracBits));
  if (q > 127) {
    if (q > 128) ++sat.events;  // 1.0 (q = 128) is the expected top of [0, 1] data: clamped, not counted
    return 127;
  }
  if (q < -128) {
    ++sat.events;
    return -128;
  }
  return static_cast<int8_t>(q);
}

int32_t ToModel(double w, Saturation& sat) {
  const double v = std::nearbyint(w * (1 << kModelFracBits));
  if (!(v <= static_cast<double>(kModelMax))) {
    ++sat.events;
    return static_cast<int32_t>(kModelMax);
  }
  if (v < -static_cast<double>(kModelMax)) {
    ++sat.events;
    return static_cast<int32_t>(-kModelMax);
  }
  return static_cast<int32_t>(v);
}

uint64_t ToScale(double s, const char* parameter) {
  if (!std::isfinite(s) || s < 0 || s >= 2147483648.0) {
    throw ConfigError(parameter, StrCat(s, " cannot be a fixed-point multiplier (needs 0 <= value < 2^31)"));
  }
  return static_cast<uint64_t>(std::nearbyint(std::ldexp(s, kScaleFracBits)));
}

int ScaleShift(uint64_t scale) {
  if (scale == 0 || (scale & (scale - 1)) != 0 || scale > (uint64_t{1} << kScaleFracBits)) return -1;
  return kScaleFracBits - static_cast<int>(__builtin_ctzll(scale));
}

const std::array<int32_t, kSigmoidEntries>& SigmoidTable() {
  static const std::array<int32_t, kSigmoidEntries> table = [] {
    std::array<int32_t, kSigmoidEntries> t{};
    for (int i = 0; i < kSigmoidEntries; ++i) {
      const double z = -8.0 + (i + 0.5) / 64.0;  // the middle of the entry's interval
      t[i] = static_cast<int32_t>(std::nearbyint((1 << kModelFracBits) / (1.0 + std::exp(-z))));
    }
    return t;
  }();
  return table;
}

}  // namespace pimopt::fixed
