// The duality gap against an independent solver's optimum: Newton's method on the logistic regression objective
// (smooth, so it converges to machine precision), and weak duality for the hinge loss.
#include "pimopt/algorithms/duality_gap.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "pimopt/algorithms/train.h"
#include "pimopt/collectives/in_process_communicator.h"
#include "pimopt/core/rng.h"
#include "pimopt/core/thread_pool.h"
#include "pimopt/model/metrics.h"
#include "test_util.h"

namespace pimopt {
namespace {

Objective LogisticObjective(double l2) {
  Objective o;
  o.loss = LossKind::kLogistic;
  o.l2 = l2;
  o.positive_weight = 3;  // class weights enter both the primal and the dual
  return o;
}

double ObjectiveOf(const LinearModel& m, const Dataset& data, const Objective& o) {
  return Evaluate(m, data, o).objective;
}

DualityGap GapOf(const LinearModel& m, const Dataset& data, const Objective& o) {
  ThreadPool pool(2);
  return ComputeDualityGap(m, data, o, ObjectiveOf(m, data, o), &pool, SingleProcess());
}

TEST(DualityGap, BoundsTheSuboptimalityAndVanishesAtTheLogisticOptimum) {
  const Dataset data = testing::SmallDense(1500, 8, 11);
  const Objective o = LogisticObjective(1e-2);
  const LinearModel optimum = testing::NewtonLogisticOptimum(data, o);
  const double f_star = ObjectiveOf(optimum, data, o);
  const DualityGap at_optimum = GapOf(optimum, data, o);
  ASSERT_TRUE(at_optimum.available);
  EXPECT_LT(std::fabs(at_optimum.relative()), 1e-5) << at_optimum.gap();
  // Along a training run the certificate is never below the true suboptimality.
  TrainConfig c;
  c.algorithm = "mbsgd";
  c.objective = o;
  c.batch = 32;
  c.lr = 0.5;
  c.epochs = 6;
  c.tol = 0;
  c.schedule = LrSchedule::kPlateau;  // watches the objective: every epoch has its gap
  const TrainResult r = testing::TrainCpu(data, c);
  ASSERT_TRUE(r.epochs.back().gap.available);  // computed at the last epoch, and after epochs that gained < 1%
  int certified = 0;
  for (const EpochRecord& e : r.epochs) {
    if (!e.gap.available) continue;
    ++certified;
    EXPECT_GE(e.gap.gap(), e.train.objective - f_star - 1e-7) << "epoch " << e.epoch;
    EXPECT_LT(e.gap.gap(), 10 * (e.train.objective - f_star) + 1e-3) << "a useless bound, epoch " << e.epoch;
  }
  EXPECT_GE(certified, 2);
}

TEST(DualityGap, ARunThatStopsOnTheGapIsWithinTolOfTheOptimum) {
  const Dataset data = testing::SmallDense(1500, 8, 11);
  const Objective o = LogisticObjective(1e-2);
  const double f_star = ObjectiveOf(testing::NewtonLogisticOptimum(data, o), data, o);
  for (const std::string algo : {"mbsgd", "ga", "ma", "admm"}) {
    TrainConfig c;
    c.algorithm = algo;
    c.objective = o;
    c.workers = algo == "mbsgd" ? 1 : 4;
    c.tol = 2e-3;
    c.epochs = 200;
    const TrainResult r = testing::TrainCpu(data, c);
    EXPECT_TRUE(r.stopped_on_gap) << algo;
    const double f = r.epochs.back().train.objective;
    EXPECT_LE(f - f_star, c.tol * f) << algo;
    EXPECT_EQ(r.epochs.back().gap.primal, f) << algo;
  }
}

TEST(DualityGap, HingeLossDualNeverExceedsAnyPrimalValue) {
  const Dataset data = testing::SmallDense(1500, 8, 11);
  Objective o = LogisticObjective(1e-2);
  o.loss = LossKind::kHinge;
  TrainConfig c;
  c.algorithm = "mbsgd";
  c.objective = o;
  c.epochs = 30;
  c.tol = 0;
  c.schedule = LrSchedule::kPlateau;
  const TrainResult r = testing::TrainCpu(data, c);
  double best_primal = INFINITY, best_dual = -INFINITY;
  for (const EpochRecord& e : r.epochs) {
    best_primal = std::min(best_primal, e.train.objective);
    if (e.gap.available) best_dual = std::max(best_dual, e.gap.dual);
  }
  ASSERT_TRUE(std::isfinite(best_dual));
  EXPECT_LE(best_dual, best_primal);               // weak duality across all the models the run visited
  EXPECT_LT(r.epochs.back().gap.relative(), 0.1);  // and a useful certificate at the end
}

// Dense rows are summed in double within chunks of each worker's shard, sparse products in fixed point: either way
// the dual is the same bits for one process and for every split of the workers into ranks.
// The dual at given duals against its value in long double, D = (1/N) sum_i beta_i - |v|^2 / (2 l2) (the hinge
// loss, the bias regularized: a coordinate of v), on rows of which one has a value of 1e12 whose dual is 0. With one
// fixed-point scale for all of v, set by that value, the other coordinates of v were truncated to a few units: the
// dual came out above its value, and a run on unscaled data certified a gap below its true distance (negative, even).
// Now each coordinate has its own scale and the conjugate takes each coordinate's rounding bound: the dual is never
// above its value, and close to it.
TEST(DualityGap, TheDualIsALowerBoundWhateverTheFeaturesRanges) {
  Objective o;
  o.loss = LossKind::kHinge;
  o.l2 = 1e-2;
  o.regularize_bias = true;
  ThreadPool pool(2);
  // `huge_feature`: the feature of row 0 set to 1e12 (a feature of its own, else zeros; or one of the usual ones).
  auto check = [&](bool own_feature, double within) {
    const Dataset base = testing::SmallDense(600, 6, 3);
    const size_t n = base.num_rows(), features = base.num_features() + (own_feature ? 1 : 0);
    Dataset dense(Storage::kDense, features);
    std::vector<float> row(features);
    for (size_t i = 0; i < n; ++i) {
      std::copy_n(base.dense_row(i), base.num_features(), row.begin());
      if (own_feature) row.back() = 0;
      if (i == 0) row[own_feature ? features - 1 : 0] = 1e12f;
      dense.AppendDenseRow(row, base.labels()[i]);
    }
    std::vector<float> duals(n);
    Rng rng(5);
    for (float& beta : duals) beta = rng.UniformFloat();
    duals[0] = 0;
    std::vector<long double> v(features + 1, 0.0L);
    long double psi = 0;
    for (size_t i = 0; i < n; ++i) {
      const long double q = static_cast<long double>(duals[i]) * dense.labels()[i];
      for (size_t j = 0; j < features; ++j) v[j] += q * dense.dense_row(i)[j];
      v[features] += q;
      psi += duals[i];
    }
    long double square = 0;
    for (long double vj : v) square += (vj / n) * (vj / n);
    const double exact = static_cast<double>(psi / n - square / (2 * o.l2));
    LinearModel model;
    model.weights.assign(features, 0.0f);
    const Dataset sparse = dense.ToSparse();
    for (const Dataset* data : {static_cast<const Dataset*>(&dense), &sparse}) {
      const DualityGap gap = ComputeDualityGap(model, *data, o, 1.0, &pool, SingleProcess(), {}, duals);
      const std::string what =
          StrCat(data->is_sparse() ? "sparse" : "dense", own_feature ? ", a feature of its own" : "");
      ASSERT_TRUE(gap.available) << what;
      EXPECT_LE(gap.dual, exact + 1e-12 * std::fabs(exact)) << what;
      EXPECT_GE(gap.dual, exact - within * std::fabs(exact)) << what;
    }
  };
  check(true, 1e-4);   // the others' coordinates exact; its own (v = 0) within its unit
  check(false, 1e-2);  // the feature's coordinate within its unit, which the 1e12 sets
}

TEST(DualityGap, IsTheSameForEverySplitIntoRanks) {
  constexpr int kWorkers = 6;
  for (const bool sparse : {false, true}) {
    const Dataset data = sparse ? testing::SmallSparse(5000, 1 << 9, 5) : testing::SmallDense(5000, 40, 5);
    Objective o = LogisticObjective(1e-3);
    LinearModel m;
    m.loss = o.loss;
    m.weights.assign(data.num_features(), 0.0f);
    for (size_t j = 0; j < m.weights.size(); ++j) m.weights[j] = 0.01f * static_cast<float>(j % 7) - 0.03f;
    m.bias = 0.2f;
    const double primal = ObjectiveOf(m, data, o);
    const std::vector<Shard> all = MakeShards(data.num_rows(), kWorkers);
    ThreadPool pool(3);
    const DualityGap whole = ComputeDualityGap(m, data, o, primal, &pool, SingleProcess(), all);
    ASSERT_TRUE(whole.available);
    for (int ranks : {2, 3}) {
      std::vector<DualityGap> got(ranks);
      InProcessGroup group(ranks);
      group.Run([&](Communicator& comm) {
        const Partition part = Partition::ForRank(data.num_rows(), kWorkers, comm.rank(), ranks);
        std::vector<uint32_t> rows(part.local_rows);
        for (uint64_t i = 0; i < part.local_rows; ++i) rows[i] = static_cast<uint32_t>(part.first_row + i);
        const Dataset mine = data.SelectRows(rows);
        const std::vector<Shard> shards = LocalShards(part);
        got[comm.rank()] = ComputeDualityGap(m, mine, o, primal, nullptr, comm, shards);
      });
      for (const DualityGap& g : got) EXPECT_EQ(g.dual, whole.dual) << ranks << " ranks, sparse " << sparse;
    }
  }
}

// The per-row sums (the duals the margins ask for, and their conjugates) split over the threads in ranges of rows
// and are integers: the certificate is the same bits without a pool and on pools of any size, for both losses (the
// hinge loss with its smoothed candidates too), dense and sparse rows, from margins or from a solver's duals.
TEST(DualityGap, IsTheSameOnAnyNumberOfThreads) {
  ThreadPool one(1), two(2), four(4, /*use_all_threads=*/true);
  for (const bool sparse : {false, true}) {
    const Dataset data = sparse ? testing::SmallSparse(40000, 1 << 9, 5) : testing::SmallDense(40000, 40, 5);
    for (const LossKind loss : {LossKind::kLogistic, LossKind::kHinge}) {
      Objective o = LogisticObjective(1e-3);
      o.loss = loss;
      LinearModel m;
      m.loss = loss;
      m.weights.assign(data.num_features(), 0.0f);
      for (size_t j = 0; j < m.weights.size(); ++j) m.weights[j] = 0.01f * static_cast<float>(j % 7) - 0.03f;
      m.bias = 0.2f;
      const double primal = ObjectiveOf(m, data, o);
      std::vector<float> duals(data.num_rows());
      for (size_t i = 0; i < duals.size(); ++i) duals[i] = static_cast<float>(i % 5) / 4.0f;
      for (const bool solver_duals : {false, true}) {
        const std::span<const float> given = solver_duals ? std::span<const float>(duals) : std::span<const float>();
        const DualityGap alone = ComputeDualityGap(m, data, o, primal, nullptr, SingleProcess(), {}, given);
        ASSERT_TRUE(alone.available);
        for (ThreadPool* pool : {&one, &two, &four}) {
          EXPECT_EQ(ComputeDualityGap(m, data, o, primal, pool, SingleProcess(), {}, given).dual, alone.dual)
              << "sparse " << sparse << ", " << LossName(loss) << ", solver's duals " << solver_duals << ", "
              << pool->NumThreads() << " threads";
        }
      }
    }
  }
}

}  // namespace
}  // namespace pimopt
