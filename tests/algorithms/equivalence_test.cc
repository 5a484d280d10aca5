// GA-SGD with K workers and global batch B must give MB-SGD's model (batch B) up to float rounding.
#include <gtest/gtest.h>

#include "test_util.h"

namespace pimopt {
namespace {

double MaxAbsDiff(const LinearModel& a, const LinearModel& b) {
  double d = std::fabs(a.bias - b.bias);
  for (size_t j = 0; j < a.weights.size(); ++j)
    d = std::max(d, static_cast<double>(std::fabs(a.weights[j] - b.weights[j])));
  return d;
}

double MaxAbs(const LinearModel& a) {
  double m = std::fabs(a.bias);
  for (float w : a.weights) m = std::max(m, static_cast<double>(std::fabs(w)));
  return m;
}

void ExpectGaEqualsMb(const Dataset& data, LossKind loss, int workers, uint64_t batch) {
  TrainConfig mb;
  mb.algorithm = "mbsgd";
  mb.objective.loss = loss;
  mb.objective.l2 = 1e-3;
  mb.batch = batch;
  mb.lr = 0.2;
  mb.epochs = 3;
  TrainConfig ga = mb;
  ga.algorithm = "ga";
  ga.workers = workers;
  const TrainResult a = testing::TrainCpu(data, mb), b = testing::TrainCpu(data, ga);
  ASSERT_GT(MaxAbs(a.model), 0.1);
  EXPECT_LT(MaxAbsDiff(a.model, b.model), 1e-4 * MaxAbs(a.model))
      << LossName(loss) << " K=" << workers << " B=" << batch;
  // A different batch size gives a genuinely different model: the comparison above can fail.
  TrainConfig other = mb;
  other.batch = batch * 2;
  EXPECT_GT(MaxAbsDiff(a.model, testing::TrainCpu(data, other).model), 1e-3);
}

TEST(GaEqualsMb, DenseLogisticAndHinge) {
  const Dataset data = testing::SmallDense(1500, 40);
  ExpectGaEqualsMb(data, LossKind::kLogistic, 4, 64);
  ExpectGaEqualsMb(data, LossKind::kHinge, 7, 50);  // 50 rows over 7 workers: uneven slices
}

TEST(GaEqualsMb, Sparse) {
  const Dataset data = testing::SmallSparse(3000, 1 << 10);
  ExpectGaEqualsMb(data, LossKind::kLogistic, 5, 128);
}

}  // namespace
}  // namespace pimopt
