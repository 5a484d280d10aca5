#include "pimopt/model/metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "pimopt/core/rng.h"
#include "pimopt/core/thread_pool.h"
#include "test_util.h"

namespace pimopt {
namespace {

double BruteForceAuc(const std::vector<float>& s, const std::vector<float>& y) {
  double pairs = 0, total = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    for (size_t j = 0; j < s.size(); ++j) {
      if (y[i] > 0 && y[j] < 0) {
        total += 1;
        pairs += s[i] > s[j] ? 1.0 : (s[i] == s[j] ? 0.5 : 0.0);
      }
    }
  }
  return pairs / total;
}

TEST(Auc, MatchesBruteForcePairCountIncludingTies) {
  Rng rng(3);
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<float> s(300), y(300);
    for (size_t i = 0; i < s.size(); ++i) {
      s[i] = static_cast<float>(rng.Below(trial % 2 ? 7 : 100000));  // odd trials: many ties
      y[i] = rng.Uniform() < 0.3 ? 1.0f : -1.0f;
    }
    EXPECT_NEAR(RocAuc(s, y), BruteForceAuc(s, y), 1e-12) << "trial " << trial;
  }
}

// The values where a sort by bits could go wrong: -0 ties +0, infinities rank at the ends, NaN (of either sign)
// below -inf, denormals and the largest floats in order; against the pair count, with many ties.
TEST(Auc, MatchesBruteForceOnSignedZerosInfinitiesAndNan) {
  const float nan = std::nanf(""), inf = std::numeric_limits<float>::infinity();
  const std::vector<float> values{0.0f, -0.0f, inf, -inf, 1e-45f, -1e-45f, 3.4e38f, -3.4e38f, 1.5f, -1.5f, 2.0f};
  Rng rng(11);
  for (int trial = 0; trial < 30; ++trial) {
    std::vector<float> s(200), y(200);
    for (size_t i = 0; i < s.size(); ++i) {
      const uint64_t pick = rng.Below(values.size() + 2);
      s[i] = pick < values.size() ? values[pick] : (pick == values.size() ? nan : -nan);
      y[i] = rng.Uniform() < 0.4 ? 1.0f : -1.0f;
    }
    // The pair count with NaN as the lowest score, tied with itself.
    double pairs = 0, total = 0;
    for (size_t i = 0; i < s.size(); ++i) {
      for (size_t j = 0; j < s.size(); ++j) {
        if (!(y[i] > 0 && y[j] < 0)) continue;
        total += 1;
        const bool ni = std::isnan(s[i]), nj = std::isnan(s[j]);
        if (ni || nj) {
          pairs += ni && nj ? 0.5 : (nj ? 1.0 : 0.0);
        } else {
          pairs += s[i] > s[j] ? 1.0 : (s[i] == s[j] ? 0.5 : 0.0);
        }
      }
    }
    EXPECT_NEAR(RocAuc(s, y), pairs / total, 1e-12) << "trial " << trial;
    // The same scores 64 times over (12,800 rows: the radix sort's path) have the same AUC.
    std::vector<float> big_s, big_y;
    for (int copy = 0; copy < 64; ++copy) {
      big_s.insert(big_s.end(), s.begin(), s.end());
      big_y.insert(big_y.end(), y.begin(), y.end());
    }
    EXPECT_EQ(RocAuc(big_s, big_y), RocAuc(s, y)) << "trial " << trial;
  }
}

// Large inputs take the radix sort, small ones a comparison sort: the same AUC, bit for bit, on the same scores
// (the small set repeated 64 times has the same AUC as the set itself).
TEST(Auc, RadixAndComparisonSortsAgree) {
  Rng rng(5);
  std::vector<float> s(400), y(400);
  for (size_t i = 0; i < s.size(); ++i) {
    s[i] = static_cast<float>(static_cast<int>(rng.Below(50)) - 25) * 0.5f;  // many ties, both signs, zeros
    y[i] = rng.Uniform() < 0.35 ? 1.0f : -1.0f;
  }
  std::vector<float> big_s, big_y;
  for (int copy = 0; copy < 64; ++copy) {
    big_s.insert(big_s.end(), s.begin(), s.end());
    big_y.insert(big_y.end(), y.begin(), y.end());
  }
  EXPECT_EQ(RocAuc(big_s, big_y), RocAuc(s, y));
}

TEST(Auc, KnownValuesAndDegenerateCases) {
  EXPECT_EQ(RocAuc(std::vector<float>{1, 2, 3, 4}, std::vector<float>{-1, -1, 1, 1}), 1.0);
  EXPECT_EQ(RocAuc(std::vector<float>{4, 3, 2, 1}, std::vector<float>{-1, -1, 1, 1}), 0.0);
  EXPECT_EQ(RocAuc(std::vector<float>{1, 1, 1, 1}, std::vector<float>{-1, 1, -1, 1}), 0.5);
  EXPECT_TRUE(std::isnan(RocAuc(std::vector<float>{1, 2}, std::vector<float>{1, 1})));
}

// NaN scores (a model whose weights overflow float arithmetic) rank lowest as one tie group: the AUC is defined
// and the computation ends (it once looped forever: NaN == NaN is false).
TEST(Auc, NanScoresRankLowestAsOneTieAndTheComputationEnds) {
  const float nan = std::nanf("");
  const std::vector<float> labels{1, -1, 1, -1, 1};
  EXPECT_DOUBLE_EQ(RocAuc(std::vector<float>{nan, nan, nan, nan, nan}, labels), 0.5);
  // Positives 0.9 and NaN, 0.1; negatives NaN and 0.2: pairs above: (0.9 > NaN, 0.2), (0.2 vs 0.1: below),
  // (NaN, NaN: half), (0.1 > NaN) -> (2 + 0.5 + 1) / 6.
  EXPECT_DOUBLE_EQ(RocAuc(std::vector<float>{0.9f, nan, nan, 0.2f, 0.1f}, labels), (2 + 0.5 + 1) / 6.0);
}

TEST(Evaluate, AccuracyLossesAndObjective) {
  Dataset d(Storage::kDense, 1);
  const float x[] = {1, -1, 2, 0};
  const float y[] = {1, -1, -1, 1};
  for (int i = 0; i < 4; ++i) d.AppendDenseRow(std::span<const float>(&x[i], 1), y[i]);
  LinearModel m;
  m.weights = {2.0f};
  m.bias = 0.0f;  // scores 2, -2, 4, 0
  Objective obj;
  obj.l2 = 0.5;
  const Metrics r = Evaluate(m, d, obj);
  EXPECT_DOUBLE_EQ(r.accuracy, 0.5);  // score 0 predicts negative, as LIBLINEAR
  const double ll = (std::log1p(std::exp(-2.0)) * 2 + std::log1p(std::exp(4.0)) + std::log(2.0)) / 4;
  EXPECT_NEAR(r.log_loss, ll, 1e-9);
  EXPECT_NEAR(r.hinge_loss, (0 + 0 + 5 + 1) / 4.0, 1e-12);
  EXPECT_NEAR(r.objective, ll + 0.25 * 4, 1e-9);
}

TEST(Evaluate, ClassWeightsEnterTheObjectiveOnly) {
  const Dataset d = testing::SmallDense(200, 4);
  LinearModel m;
  m.weights.assign(4, 0.1f);
  Objective plain, weighted;
  weighted.positive_weight = 15;
  weighted.negative_weight = 0.5;
  const Metrics a = Evaluate(m, d, plain), b = Evaluate(m, d, weighted);
  EXPECT_EQ(a.log_loss, b.log_loss);
  EXPECT_NE(a.objective, b.objective);
}

// Enough rows for the per-row losses to split over several tasks (and the AUC to run beside them): every metric is
// the same bits without a pool and on pools of any size.
TEST(Evaluate, IndependentOfThreadCount) {
  const Dataset d = testing::SmallDense(40000, 30);
  LinearModel m;
  for (int j = 0; j < 30; ++j) m.weights.push_back(0.1f * static_cast<float>(j % 7) - 0.3f);
  ThreadPool one(1), two(2), four(4, /*use_all_threads=*/true);
  Objective weighted;
  weighted.positive_weight = 3;
  weighted.l2 = 1e-3;
  for (const LossKind loss : {LossKind::kLogistic, LossKind::kHinge}) {
    m.loss = loss;
    const Metrics alone = Evaluate(m, d, weighted);
    for (ThreadPool* pool : {&one, &two, &four}) {
      const Metrics b = Evaluate(m, d, weighted, pool);
      EXPECT_EQ(alone.accuracy, b.accuracy);
      EXPECT_EQ(alone.auc, b.auc);
      EXPECT_EQ(alone.log_loss, b.log_loss);
      EXPECT_EQ(alone.hinge_loss, b.hinge_loss);
      EXPECT_EQ(alone.objective, b.objective);
    }
  }
}

// An evaluation for the stopping rule computes the objective alone: the same bits as a full evaluation's, the model's
// own loss with them, and NaN for what it skips (on any pool, with sample and class weights).
TEST(Evaluate, TheObjectiveAloneHasTheBitsOfAFullEvaluation) {
  Dataset d = testing::SmallDense(40000, 30);
  std::vector<float> weights(d.num_rows(), 1.0f);
  for (size_t i = 0; i < weights.size(); i += 3) weights[i] = 0.25f * static_cast<float>(i % 5);
  d.set_weights(std::move(weights));
  LinearModel m;
  for (int j = 0; j < 30; ++j) m.weights.push_back(0.1f * static_cast<float>(j % 7) - 0.3f);
  m.bias = 0.125f;
  ThreadPool two(2);
  Objective weighted;
  weighted.positive_weight = 3;
  weighted.l2 = 1e-3;
  weighted.l1 = 1e-4;
  weighted.regularize_bias = true;
  for (const LossKind loss : {LossKind::kLogistic, LossKind::kHinge}) {
    m.loss = loss;
    const Metrics all = Evaluate(m, d, weighted);
    for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &two}) {
      const Metrics alone = Evaluate(m, d, weighted, pool, MetricsScope::kObjective);
      EXPECT_EQ(alone.rows, all.rows);
      EXPECT_EQ(alone.objective, all.objective);
      EXPECT_EQ(alone.bias_penalty, all.bias_penalty);
      EXPECT_EQ(loss == LossKind::kLogistic ? alone.log_loss : alone.hinge_loss,
                loss == LossKind::kLogistic ? all.log_loss : all.hinge_loss);
      EXPECT_TRUE(std::isnan(loss == LossKind::kLogistic ? alone.hinge_loss : alone.log_loss));
      EXPECT_TRUE(std::isnan(alone.accuracy));
      EXPECT_TRUE(std::isnan(alone.auc));
    }
  }
}

}  // namespace
}  // namespace pimopt
