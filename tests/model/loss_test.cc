#include "pimopt/model/loss.h"

#include <gtest/gtest.h>

#include "pimopt/core/error.h"

namespace pimopt {
namespace {

TEST(Loss, TableOfValues) {
  EXPECT_NEAR(LossValue(LossKind::kLogistic, 0, 1), std::log(2.0), 1e-12);
  EXPECT_NEAR(LossValue(LossKind::kLogistic, 2, -1), std::log1p(std::exp(2.0)), 1e-12);
  EXPECT_NEAR(LossValue(LossKind::kLogistic, 800, 1), 0.0, 1e-12);    // no overflow
  EXPECT_NEAR(LossValue(LossKind::kLogistic, -800, 1), 800.0, 1e-9);  // no overflow
  EXPECT_EQ(LossValue(LossKind::kHinge, 0.25, 1), 0.75);
  EXPECT_EQ(LossValue(LossKind::kHinge, 3, 1), 0.0);
  EXPECT_EQ(LossValue(LossKind::kHinge, 0.5, -1), 1.5);
}

TEST(Loss, DerivativesMatchFiniteDifferences) {
  const double h = 1e-4;
  for (LossKind kind : {LossKind::kLogistic, LossKind::kHinge}) {
    for (double y : {-1.0, 1.0}) {
      for (double z : {-3.0, -0.7, 0.2, 0.93, 2.5}) {
        if (kind == LossKind::kHinge && std::fabs(y * z - 1) < 2 * h) continue;  // kink
        const double numeric = (LossValue(kind, z + h, y) - LossValue(kind, z - h, y)) / (2 * h);
        EXPECT_NEAR(LossDerivative(kind, static_cast<float>(z), static_cast<float>(y)), numeric, 1e-4)
            << LossName(kind) << " z=" << z << " y=" << y;
      }
    }
  }
}

TEST(Loss, ExtremeScoresGiveFiniteDerivatives) {
  EXPECT_EQ(LossDerivative(LossKind::kLogistic, 1e30f, 1), 0.0f);
  EXPECT_FLOAT_EQ(LossDerivative(LossKind::kLogistic, -1e30f, 1), -1.0f);
}

TEST(Loss, NamesParse) {
  EXPECT_EQ(ParseLossKind("lr"), LossKind::kLogistic);
  EXPECT_EQ(ParseLossKind("hinge"), LossKind::kHinge);
  EXPECT_THROW(ParseLossKind("mlp"), ConfigError);
}

}  // namespace
}  // namespace pimopt
