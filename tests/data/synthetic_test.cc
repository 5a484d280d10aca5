#include "pimopt/data/synthetic.h"

#include <gtest/gtest.h>

#include <cmath>

#include "pimopt/core/error.h"
#include "pimopt/core/thread_pool.h"
#include "pimopt/data/sources.h"
#include "test_util.h"

namespace pimopt {
namespace {

TEST(SyntheticDense, ShapeRangeBalanceAndThreadIndependence) {
  DenseSyntheticParams p;
  p.rows = 5000;
  p.features = 64;
  ThreadPool one(1), three(3);
  const Dataset a = GenerateDense(p, &one);
  const Dataset b = GenerateDense(p, &three);
  ASSERT_EQ(a.num_rows(), 5000u);
  EXPECT_EQ(a.num_features(), 64u);
  EXPECT_TRUE(std::equal(a.dense_values().begin(), a.dense_values().end(), b.dense_values().begin()));
  EXPECT_TRUE(std::equal(a.labels().begin(), a.labels().end(), b.labels().begin()));
  for (float v : a.dense_values()) {
    ASSERT_GE(v, 0.0f);
    ASSERT_LT(v, 1.0f);
  }
  EXPECT_NEAR(static_cast<double>(a.CountPositives()) / a.num_rows(), 0.5, 0.03);
}

TEST(SyntheticDense, RowsDoNotDependOnFirstRow) {
  DenseSyntheticParams p;
  p.rows = 3000;
  p.features = 8;
  const Dataset all = GenerateDense(p);
  p.first_row = 1500;
  p.rows = 1500;
  const Dataset tail = GenerateDense(p);
  EXPECT_TRUE(
      std::equal(tail.dense_values().begin(), tail.dense_values().end(), all.dense_values().begin() + 1500 * 8));
  EXPECT_TRUE(std::equal(tail.labels().begin(), tail.labels().end(), all.labels().begin() + 1500));
}

TEST(SyntheticDense, NoiseIsTheLabelFlipRateAndThePlantedClassifierWorks) {
  DenseSyntheticParams p;
  p.rows = 4000;
  p.features = 4096;
  p.noise = 0.0;
  const Dataset clean = GenerateDense(p);
  p.noise = 0.2;
  const Dataset noisy = GenerateDense(p);
  size_t agree = 0;
  for (size_t i = 0; i < clean.num_rows(); ++i) agree += clean.labels()[i] == noisy.labels()[i];
  EXPECT_NEAR(static_cast<double>(agree) / clean.num_rows(), 0.8, 0.03);
  EXPECT_TRUE(std::equal(clean.dense_values().begin(), clean.dense_values().end(), noisy.dense_values().begin()));
  // The class means differ by 2*separation along a balanced +1/-1 direction: the difference of class means has
  // as many positive as negative entries and magnitude about 0.02.
  std::vector<double> pos_mean(p.features, 0.0), neg_mean(p.features, 0.0);
  const double num_pos = static_cast<double>(clean.CountPositives());
  const double num_neg = static_cast<double>(clean.num_rows()) - num_pos;
  for (size_t i = 0; i < clean.num_rows(); ++i) {
    auto& mean = clean.labels()[i] > 0 ? pos_mean : neg_mean;
    const double count = clean.labels()[i] > 0 ? num_pos : num_neg;
    for (size_t j = 0; j < p.features; ++j) mean[j] += clean.dense_row(i)[j] / count;
  }
  size_t positive = 0;
  double magnitude = 0;
  for (size_t j = 0; j < p.features; ++j) {
    const double d = pos_mean[j] - neg_mean[j];
    positive += d > 0;
    magnitude += std::fabs(d);
  }
  EXPECT_NEAR(static_cast<double>(positive) / p.features, 0.5, 0.03);
  EXPECT_NEAR(magnitude / p.features, 0.02, 0.005);
}

TEST(SyntheticSparse, CriteoShape) {
  SparseSyntheticParams p;
  p.rows = 20000;
  ThreadPool pool(2);
  const Dataset d = GenerateSparse(p, &pool);
  ASSERT_TRUE(d.is_sparse());
  EXPECT_EQ(d.num_features(), 1u << 20);
  const double nnz_per_row = static_cast<double>(d.num_stored()) / d.num_rows();
  EXPECT_GT(nnz_per_row, 38.0);
  EXPECT_LE(nnz_per_row, 39.0);
  EXPECT_NEAR(static_cast<double>(d.CountPositives()) / d.num_rows(), 0.03, 0.01);
  // Power law: the most frequent feature is far more frequent than the median used one.
  std::vector<uint32_t> counts(d.num_features(), 0);
  for (uint32_t c : d.csr().col) ++counts[c];
  std::vector<uint32_t> used;
  for (uint32_t c : counts) {
    if (c) used.push_back(c);
  }
  std::sort(used.begin(), used.end());
  EXPECT_GT(used.back(), 100u * used[used.size() / 2]);
}

TEST(SyntheticSparse, DeterministicAcrossThreads) {
  SparseSyntheticParams p;
  p.rows = 3000;
  p.features = 1 << 14;
  ThreadPool one(1), four(4);
  const Dataset a = GenerateSparse(p, &one), b = GenerateSparse(p, &four);
  EXPECT_EQ(a.csr().col, b.csr().col);
  EXPECT_EQ(a.csr().row_ptr, b.csr().row_ptr);
  EXPECT_TRUE(std::equal(a.labels().begin(), a.labels().end(), b.labels().begin()));
}

TEST(Synthetic, RejectsBadParameters) {
  DenseSyntheticParams d;
  d.rows = 0;
  EXPECT_THROW(GenerateDense(d), InputError);
  SparseSyntheticParams s;
  s.positive_rate = 1.5;
  EXPECT_THROW(GenerateSparse(s), InputError);
}

}  // namespace
}  // namespace pimopt

namespace pimopt {
namespace {

TEST(SyntheticParams, DeclaredOnceForTheGeneratorsTheBuiltinsAndGen) {
  const DenseSyntheticParams dense;
  for (const auto& e : DenseSyntheticTable().entries()) {
    EXPECT_EQ(FormatParamValue(e.get(dense)), FormatParamValue(e.info.default_value)) << e.info.name;
  }
  const SparseSyntheticParams sparse;
  EXPECT_EQ(sparse.fields, 39u);
  EXPECT_EQ(sparse.positive_rate, 0.03);
  // A built-in's keys are the table's names ('_' accepted for '-'), with its bounds.
  const Dataset a = LoadDataset("sparse:rows=300,features=5000,positive_rate=0.2,zipf=1.3", SourceOptions{});
  SparseSyntheticParams p;
  p.rows = 300;
  p.features = 5000;
  p.positive_rate = 0.2;
  p.zipf_exponent = 1.3;
  pimopt::testing::ExpectSameData(a, ApplyStorageChoice(GenerateSparse(p), SourceOptions{}));
  for (const char* bad : {"dense:noise=0.7", "sparse:positive-rate=1", "sparse:features=0", "dense:colour=1"}) {
    try {
      LoadDataset(bad, SourceOptions{});
      FAIL() << bad;
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.parameter(), "--data") << e.what();
    }
  }
  DenseSyntheticParams direct;
  direct.noise = 0.9;  // the generator checks its table's bounds too
  EXPECT_THROW(GenerateDense(direct), ConfigError);
}

}  // namespace
}  // namespace pimopt

namespace pimopt {
namespace {

TEST(SyntheticYfcc, Fc6LikeActivationsThatTheArtifactsLearningRateTrains) {
  YfccSyntheticParams p;  // the default 4,096 features
  p.rows = 4000;
  ThreadPool one(1), three(3);
  const Dataset a = GenerateYfcc(p, &one), b = GenerateYfcc(p, &three);
  EXPECT_EQ(std::vector<float>(a.dense_values().begin(), a.dense_values().end()),
            std::vector<float>(b.dense_values().begin(), b.dense_values().end()));
  uint64_t zeros = 0;
  float lo = 1, hi = 0;
  for (float v : a.dense_values()) {
    zeros += v == 0.0f;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  EXPECT_EQ(lo, 0.0f);
  EXPECT_LE(hi, 1.0f);
  EXPECT_NEAR(static_cast<double>(zeros) / static_cast<double>(a.dense_values().size()), 1 - p.active, 0.02);
  EXPECT_NEAR(static_cast<double>(a.CountPositives()) / 4000.0, 0.5, 0.03);
  // Row i is the same whatever the first row of a call is (the built-ins' test rows and MPI slices rely on it).
  YfccSyntheticParams tail = p;
  tail.first_row = 1500;
  tail.rows = 100;
  const Dataset t = GenerateYfcc(tail, &one);
  for (size_t j = 0; j < p.features; ++j) ASSERT_EQ(t.dense_values()[j], a.dense_values()[1500 * p.features + j]);
  // PIM-Opt's YFCC LR MA-SGD hyper-parameters (local batch 8, lr 2^-6, reg 2^-12) train it well above chance.
  TrainConfig c;
  c.algorithm = "ma";
  c.workers = 4;
  c.batch = 8;
  c.lr = 1.0 / 64;
  c.objective.l2 = 1.0 / 4096;
  c.epochs = 3;
  EXPECT_GT(testing::TrainCpu(a, c).epochs.back().train.accuracy, 0.85);
}

TEST(SyntheticGenerators, ByNameForTheBuiltinsAndGen) {
  EXPECT_EQ(SyntheticGeneratorNames(), (std::vector<std::string>{"dense", "sparse", "yfcc"}));
  for (const std::string& name : SyntheticGeneratorNames()) {
    auto g = MakeSyntheticGenerator(name);
    ASSERT_NE(g, nullptr);
    EXPECT_EQ(g->name(), name);
    EXPECT_TRUE(g->Set("rows", "64"));
    EXPECT_FALSE(g->Set("colour", "1"));
    EXPECT_EQ(g->rows(), 64u);
    EXPECT_EQ(g->Generate(10, 5, nullptr).num_rows(), 5u);
  }
  EXPECT_EQ(MakeSyntheticGenerator("gaussian"), nullptr);
  const Dataset builtin = LoadDataset("yfcc:rows=200,features=64,active=0.5", SourceOptions{});
  YfccSyntheticParams p;
  p.rows = 200;
  p.features = 64;
  p.active = 0.5;
  pimopt::testing::ExpectSameData(builtin, ApplyStorageChoice(GenerateYfcc(p), SourceOptions{}));
}

}  // namespace
}  // namespace pimopt
