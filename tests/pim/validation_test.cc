// The emulator's modeled results against the published UPMEM hardware numbers (docs/sources.md): 10% on
// arithmetic and MRAM, 15% on VA and RED. The same functions print the README's validation table
// (bench/pim_validate.cc).
#include "pimopt/pim/validation.h"

#include <gtest/gtest.h>

#include <cmath>

namespace pimopt::pim {
namespace validation_test {  // named: its helpers share a unity batch with other files

const HardwareProfile& Profile() {
  static const HardwareProfile p = MakeProfile("pim-opt");  // 350 MHz, as the published measurements
  return p;
}

double RelativeError(double modeled, double published) { return std::fabs(modeled - published) / published; }

TEST(PimValidation, ArithmeticThroughputAtSaturationWithinTenPercent) {
  for (ElementType type : {ElementType::kInt32, ElementType::kInt64, ElementType::kFloat, ElementType::kDouble}) {
    for (ArithOp op : {ArithOp::kAdd, ArithOp::kSub, ArithOp::kMul, ArithOp::kDiv}) {
      const double modeled = MeasureArithmeticMops(Profile(), type, op, 16, 1 << 18);
      EXPECT_LT(RelativeError(modeled, PublishedArithmeticMops(type, op)), 0.10)
          << ElementTypeName(type) << " " << ArithOpName(op) << ": " << modeled << " MOPS";
    }
  }
}

TEST(PimValidation, ThroughputRisesLinearlyToElevenTaskletsThenIsFlat) {
  for (ElementType type : {ElementType::kInt32, ElementType::kFloat}) {
    const double saturated = PublishedArithmeticMops(type, ArithOp::kAdd);
    double previous = 0;
    for (uint32_t t = 1; t <= 24; ++t) {
      const double modeled = MeasureArithmeticMops(Profile(), type, ArithOp::kAdd, t, 1 << 16);
      const double expected = saturated * std::min(t, 11u) / 11.0;
      EXPECT_LT(RelativeError(modeled, expected), 0.10) << ElementTypeName(type) << " tasklets " << t;
      if (t <= 11) {
        EXPECT_GT(modeled, previous);
      }
      previous = modeled;
    }
  }
}

TEST(PimValidation, MramLatencyAndBandwidthWithinTenPercent) {
  for (bool read : {true, false}) {
    for (uint32_t bytes = 8; bytes <= 2048; bytes *= 2) {
      const DmaResult modeled = MeasureMramDma(Profile(), read, bytes);
      const DmaResult published = PublishedMramDma(read, bytes);
      EXPECT_LT(RelativeError(modeled.latency_cycles, published.latency_cycles), 0.10) << bytes;
      EXPECT_LT(RelativeError(modeled.bandwidth_mb_per_s, published.bandwidth_mb_per_s), 0.10) << bytes;
    }
    // PrIM's measured sustained bandwidth at 2,048 bytes: 628 MB/s read, 633 MB/s write.
    EXPECT_LT(RelativeError(MeasureMramDma(Profile(), read, 2048).bandwidth_mb_per_s, read ? 628 : 633), 0.10);
  }
}

TEST(PimValidation, FunctionalHostTransfersChargeExactlyTheModel) {
  // Small sizes keep host memory low. The model itself is checked against hardware in hw_validation_test.cc.
  const HostTransferResult functional = MeasureHostTransfers(Profile(), 64, 1 << 16, true);
  const HostTransferResult model = MeasureHostTransfers(Profile(), 64, 1 << 16, false);
  EXPECT_DOUBLE_EQ(functional.to_dpu_gb_per_s, model.to_dpu_gb_per_s);
  EXPECT_DOUBLE_EQ(functional.from_dpu_gb_per_s, model.from_dpu_gb_per_s);
  EXPECT_DOUBLE_EQ(functional.broadcast_gb_per_s, model.broadcast_gb_per_s);
}

TEST(PimValidation, VectorAddAndReductionWithinFifteenPercent) {
  EXPECT_LT(RelativeError(MeasureVectorAddCyclesPerElement(Profile(), 16, 1 << 20), kPublishedVaCyclesPerElement),
            0.15);
  EXPECT_LT(RelativeError(MeasureReductionCyclesPerElement(Profile(), 16, 1 << 20), kPublishedRedCyclesPerElement),
            0.15);
}

}  // namespace validation_test
}  // namespace pimopt::pim
