#include "pimopt/fixed/fixed_point.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "pimopt/core/error.h"
#include "pimopt/core/rng.h"

namespace pimopt::fixed {
namespace {

TEST(Fixed, ShiftRoundsTowardZero) {
  EXPECT_EQ(ShiftTowardZero(7, 1), 3);
  EXPECT_EQ(ShiftTowardZero(-7, 1), -3);  // an arithmetic shift would give -4
  EXPECT_EQ(ShiftTowardZero(-1, 5), 0);   // PIM-Opt's "-1" drift cannot happen
}

// The branch-free roundings agree with integer division, which truncates toward zero, over random values of both
// signs and every magnitude (and the extremes).
TEST(Fixed, RoundingTowardZeroEqualsTruncatingDivision) {
  Rng rng(11);
  std::vector<int64_t> values = {0, 1, -1, INT64_MAX, INT64_MIN + 1, INT64_MIN};
  for (int i = 0; i < 20000; ++i) {
    const int bits = static_cast<int>(rng() % 63);
    const int64_t magnitude = static_cast<int64_t>(rng() >> (63 - bits));
    values.push_back(rng() & 1 ? -magnitude : magnitude);
  }
  for (const int64_t v : values) {
    for (const int shift : {1, 7, 24, 31, 62}) {
      ASSERT_EQ(ShiftTowardZero(v, shift), static_cast<int64_t>(static_cast<__int128_t>(v) / (int64_t{1} << shift)))
          << v << " >> " << shift;
    }
    if (v == INT64_MIN) continue;  // the quotient below may not fit 64 bits
    for (const uint64_t scale : {uint64_t{1}, uint64_t{3}, ToScale(0.3, "x"), ToScale(0.999, "x"), uint64_t{1} << 32}) {
      const __int128_t quotient = static_cast<__int128_t>(v) * scale / (__int128_t{1} << kScaleFracBits);
      ASSERT_EQ(MulScale(v, scale), static_cast<int64_t>(quotient)) << v << " x " << scale;
    }
  }
}

TEST(Fixed, SaturationIsSymmetricAndCounted) {
  Saturation sat;
  EXPECT_EQ(SaturateModel(int64_t{1} << 31, sat), kModelMax);  // no wrap to INT32_MIN (PIM-Opt Q6)
  EXPECT_EQ(SaturateModel(-(int64_t{1} << 40), sat), -kModelMax);
  EXPECT_EQ(SaturateModel(12345, sat), 12345);
  EXPECT_EQ(sat.events, 2u);
}

TEST(Fixed, FeatureAndModelQuantizationRoundTrip) {
  Saturation sat;
  EXPECT_EQ(QuantizeFeature(0.5f, sat), 64);
  EXPECT_EQ(QuantizeFeature(-1.0f, sat), -128);
  EXPECT_EQ(QuantizeFeature(1.0f, sat), 127);  // the top of [0,1] data, not counted as saturation
  EXPECT_EQ(sat.events, 0u);
  EXPECT_EQ(QuantizeFeature(3.0f, sat), 127);
  EXPECT_EQ(sat.events, 1u);
  for (double w : {0.0, 1.5, -3.25, 100.0, 1e-7}) EXPECT_NEAR(FromModel(ToModel(w, sat)), w, 1.0 / (1 << 24));
  EXPECT_EQ(ToModel(1000.0, sat), kModelMax);
}

TEST(Fixed, ScalesAndShifts) {
  EXPECT_EQ(ToScale(0.5, "--lr"), uint64_t{1} << 31);
  EXPECT_EQ(ScaleShift(ToScale(0.25, "--lr")), 2);
  EXPECT_EQ(ScaleShift(ToScale(1.0, "--lr")), 0);
  EXPECT_EQ(ScaleShift(ToScale(0.3, "--lr")), -1);
  EXPECT_THROW(ToScale(-1, "--lr"), ConfigError);
  EXPECT_THROW(ToScale(1e12, "--lr"), ConfigError);
  EXPECT_EQ(MulScale(1000, ToScale(0.25, "x")), 250);
  EXPECT_EQ(MulScale(-1001, ToScale(0.5, "x")), -500);                         // toward zero
  EXPECT_EQ(MulScale(int64_t{1} << 60, ToScale(2.0, "x")), int64_t{1} << 61);  // no 64-bit overflow inside
}

TEST(Fixed, SigmoidTableIsAccurateAndMonotone) {
  int32_t previous = -1;
  for (double z = -9; z < 9; z += 0.01) {
    const int32_t s = Sigmoid(static_cast<int64_t>(std::llround(z * (1 << 24))));
    EXPECT_GE(s, previous);
    previous = s;
    EXPECT_NEAR(s / double(1 << 24), 1 / (1 + std::exp(-z)), 0.0045) << z;
  }
}

TEST(Fixed, DerivativesMatchTheFloatLosses) {
  for (double z : {-3.0, -0.4, 0.0, 0.7, 2.5}) {
    const int64_t zq = std::llround(z * (1 << 24));
    for (int y : {-1, 1}) {
      const double expected_lr = 1 / (1 + std::exp(-z)) - (y > 0 ? 1 : 0);
      EXPECT_NEAR(Derivative(LossKind::kLogistic, zq, y) / double(1 << 24), expected_lr, 0.0045);
      EXPECT_EQ(Derivative(LossKind::kHinge, zq, y) / double(1 << 24), y * z < 1 ? -y : 0);
    }
  }
}

}  // namespace
}  // namespace pimopt::fixed
