#include "pimopt/data/transform.h"

#include <gtest/gtest.h>

#include <set>

#include "pimopt/core/error.h"
#include "pimopt/data/libsvm.h"
#include "test_util.h"

namespace pimopt {
namespace {

TEST(Split, PartitionsRowsDeterministically) {
  Dataset d(Storage::kDense, 1);
  for (int i = 0; i < 100; ++i) {
    const float v = static_cast<float>(i);
    d.AppendDenseRow(std::span<const float>(&v, 1), i % 2 ? 1.0f : -1.0f);
  }
  const TrainTest a = SplitTrainTest(d, 0.2, 3), b = SplitTrainTest(d, 0.2, 3), c = SplitTrainTest(d, 0.2, 4);
  EXPECT_EQ(a.train.num_rows(), 80u);
  EXPECT_EQ(a.test.num_rows(), 20u);
  std::set<float> seen;
  for (float v : a.train.dense_values()) seen.insert(v);
  for (float v : a.test.dense_values()) seen.insert(v);
  EXPECT_EQ(seen.size(), 100u);
  EXPECT_TRUE(std::equal(a.test.dense_values().begin(), a.test.dense_values().end(), b.test.dense_values().begin()));
  EXPECT_FALSE(std::equal(a.test.dense_values().begin(), a.test.dense_values().end(), c.test.dense_values().begin()));
  // Labels travel with their rows.
  for (size_t i = 0; i < a.train.num_rows(); ++i) {
    EXPECT_EQ(a.train.labels()[i], static_cast<int>(a.train.dense_row(i)[0]) % 2 ? 1.0f : -1.0f);
  }
  EXPECT_THROW(SplitTrainTest(d, 1.5, 1), ConfigError);
}

TEST(Scaler, MinMaxFittedOnTrainAppliedToTest) {
  Dataset train(Storage::kDense, 2), test(Storage::kDense, 2);
  const float r1[] = {1, 10}, r2[] = {3, 10}, t1[] = {5, 0};
  train.AppendDenseRow(r1, 1);
  train.AppendDenseRow(r2, -1);
  test.AppendDenseRow(t1, 1);
  const FeatureScaler s = FeatureScaler::Fit(train);
  s.Apply(train);
  s.Apply(test);
  EXPECT_FLOAT_EQ(train.dense_row(0)[0], 0.0f);
  EXPECT_FLOAT_EQ(train.dense_row(1)[0], 1.0f);
  EXPECT_FLOAT_EQ(train.dense_row(0)[1], 0.0f);  // constant feature -> 0
  EXPECT_FLOAT_EQ(test.dense_row(0)[0], 2.0f);   // outside the train range stays outside
}

TEST(Scaler, RangesOfPartsCombineToTheWholeFit) {
  // Under MPI each rank fits ranges on its rows and the ranks take elementwise min / max: the same scaler.
  for (const Dataset& data : {testing::SmallDense(120, 9), testing::SmallDense(120, 9).ToSparse()}) {
    std::vector<uint32_t> first, second;
    for (uint32_t i = 0; i < 120; ++i) (i < 50 ? first : second).push_back(i);
    FeatureRanges a = FeatureRanges::Of(data.SelectRows(first));
    const FeatureRanges b = FeatureRanges::Of(data.SelectRows(second));
    for (size_t j = 0; j < a.lo.size(); ++j) {
      a.lo[j] = std::min(a.lo[j], b.lo[j]);
      a.hi[j] = std::max(a.hi[j], b.hi[j]);
    }
    const FeatureScaler whole = FeatureScaler::Fit(data), merged = FeatureScaler::FromRanges(a);
    EXPECT_EQ(whole.offset(), merged.offset());
    EXPECT_EQ(whole.scale(), merged.scale());
  }
}

TEST(Scaler, SparseKeepsZerosAndDividesByMaxAbs) {
  Dataset d = ParseLibsvm("1 1:2 2:-4\n-1 1:1\n", "x");
  FeatureScaler::Fit(d).Apply(d);
  EXPECT_EQ(d.csr().val, (std::vector<float>{1.0f, -1.0f, 0.5f}));
}

}  // namespace
}  // namespace pimopt
