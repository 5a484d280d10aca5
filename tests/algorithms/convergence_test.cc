// Every algorithm learns: held-out accuracy close to the planted model's, the objective falls, ADMM's residuals
// shrink and its L1 step produces sparsity.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <ostream>
#include <stdexcept>
#include <string>

#include "pimopt/algorithms/admm.h"
#include "pimopt/backends/cpu/cpu_backend.h"
#include "pimopt/core/rng.h"
#include "pimopt/core/thread_pool.h"
#include "test_util.h"

namespace pimopt {
namespace convergence_test {  // named: its helpers share a unity batch with other files

struct Case {
  std::string algo;
  LossKind loss;
};
// CTest lists a parameterized case with its parameter; without a printer gtest prints the struct's raw bytes.
void PrintTo(const Case& c, std::ostream* os) { *os << c.algo << " " << ModelName(c.loss); }

class Convergence : public ::testing::TestWithParam<Case> {};

TrainConfig ConfigFor(std::string algo, LossKind loss) {
  TrainConfig c;
  c.algorithm = algo;
  c.objective.loss = loss;
  c.objective.l2 = 1e-4;
  c.epochs = 8;
  c.seed = 5;
  if (algo == "sgd") {
    c.batch = 1;
    c.lr = 0.02;
  } else if (algo == "mbsgd") {
    c.batch = 16;
    c.lr = 0.2;
  } else if (algo == "ga") {
    c.batch = 32;
    c.workers = 4;
    c.lr = 0.3;
  } else if (algo == "ma") {
    c.batch = 8;
    c.workers = 4;
    c.lr = 0.1;
  } else if (algo == "admm") {
    c.batch = 8;
    c.workers = 4;
    c.lr = 0.1;
    c.algorithm_options.As<AdmmOptions>("admm").rho = 0.05;
  }
  return c;
}

TEST_P(Convergence, DenseReachesHighHeldOutAccuracyAndLowersTheObjective) {
  const Case c = GetParam();
  const Dataset train = testing::SmallDense(4000, 20, 7);
  const Dataset test = testing::SmallDense(2000, 20, 7, 4000);  // later rows of the same planted model
  const TrainResult r = testing::TrainCpu(train, ConfigFor(c.algo, c.loss), 2, &test);
  ASSERT_EQ(r.epochs.size(), 8u);
  // noise 0.1 -> Bayes accuracy ~96.8%
  EXPECT_GT(r.epochs.back().test->accuracy, 0.93) << c.algo << " " << LossName(c.loss);
  EXPECT_LT(r.epochs.back().train.objective, 0.8 * r.epochs.front().train.objective + 0.2 * std::log(2.0))
      << "objective did not fall";
  EXPECT_LT(r.epochs.back().train.objective, 0.36);
}

INSTANTIATE_TEST_SUITE_P(
    AllAlgorithmsBothLosses, Convergence,
    ::testing::Values(Case{"sgd", LossKind::kLogistic}, Case{"sgd", LossKind::kHinge},
                      Case{"mbsgd", LossKind::kLogistic}, Case{"mbsgd", LossKind::kHinge},
                      Case{"ga", LossKind::kLogistic}, Case{"ga", LossKind::kHinge},
                      Case{"ma", LossKind::kLogistic}, Case{"ma", LossKind::kHinge},
                      Case{"admm", LossKind::kLogistic}, Case{"admm", LossKind::kHinge}),
    [](const auto& info) { return info.param.algo + "_" + ModelName(info.param.loss); });

TEST(ConvergenceSparse, EveryAlgorithmReachesGoodAuc) {
  const Dataset train = testing::SmallSparse(8000, 1 << 12, 3);
  const Dataset test = testing::SmallSparse(3000, 1 << 12, 3, 8000);
  for (std::string algo : {"sgd", "mbsgd", "ga", "ma",
                             "admm"}) {
    TrainConfig c = ConfigFor(algo, LossKind::kLogistic);
    c.epochs = 6;
    const TrainResult r = testing::TrainCpu(train, c, 2, &test);
    EXPECT_GT(r.epochs.back().test->auc, 0.85) << algo;
  }
}

TEST(Admm, ResidualsShrinkAndModelIsTheConsensus) {
  const Dataset train = testing::SmallDense(4000, 20, 7);
  TrainConfig c = ConfigFor("admm", LossKind::kLogistic);
  c.epochs = 25;
  c.lr = 0.05;
  c.algorithm_options.As<AdmmOptions>("admm").rho = 0.5;
  c.schedule = LrSchedule::kInverse;  // a decaying step lets the inexact local solves settle
  c.lr_decay = 0.5;
  const TrainResult r = testing::TrainCpu(train, c);
  ASSERT_TRUE(r.epochs.front().info.Figure("admm_primal_residual").has_value());
  const double first = *r.epochs[1].info.Figure("admm_primal_residual");
  const double last = *r.epochs.back().info.Figure("admm_primal_residual");
  EXPECT_LT(last, 0.5 * first);
  EXPECT_LT(*r.epochs.back().info.Figure("admm_dual_residual"), *r.epochs[1].info.Figure("admm_dual_residual"));
  EXPECT_EQ(r.epochs.back().info.figures_title, "admm");
  EXPECT_EQ(r.epochs.back().info.syncs, 1u);
}

// --rho auto (residual balancing): from a penalty far too large, which anchors every worker to the consensus so
// that z barely moves, the adaptive run lowers rho and reaches the objective that a well-chosen fixed penalty
// reaches, where the fixed large penalty stalls far above it.
TEST(Admm, AdaptivePenaltyConvergesWhereAFixedOneStalls) {
  const Dataset train = testing::SmallDense(4000, 20, 7);
  TrainConfig c = ConfigFor("admm", LossKind::kLogistic);
  c.epochs = 20;
  c.algorithm_options.As<AdmmOptions>("admm").rho = 4;  // lr * rho = 0.4
  const TrainResult stalled = testing::TrainCpu(train, c);
  c.algorithm_options.As<AdmmOptions>("admm").rho_adaptive = true;
  const TrainResult adaptive = testing::TrainCpu(train, c);
  c.algorithm_options.As<AdmmOptions>("admm").rho = 0.01;
  c.algorithm_options.As<AdmmOptions>("admm").rho_adaptive = false;
  const TrainResult good = testing::TrainCpu(train, c);
  const double f_stalled = stalled.epochs.back().train.objective, f_adaptive = adaptive.epochs.back().train.objective,
               f_good = good.epochs.back().train.objective;
  EXPECT_GT(f_stalled, 1.1 * f_good) << f_stalled << " vs " << f_good << ": the fixed large penalty should stall";
  EXPECT_LT(f_adaptive, 1.02 * f_good) << f_adaptive << " vs " << f_good;
  // The penalty moved, was reported per round, and each round's is the last one's, doubled, halved or kept (the
  // next round uses what the last one chose).
  ASSERT_TRUE(adaptive.epochs.back().info.Figure("admm_rho").has_value());
  EXPECT_LT(*adaptive.epochs.back().info.Figure("admm_rho"), 0.5);
  int moves = 0;
  for (size_t e = 1; e < adaptive.epochs.size(); ++e) {
    const double before = *adaptive.epochs[e - 1].info.Figure("admm_rho"), now = *adaptive.epochs[e].info.Figure("admm_rho");
    EXPECT_TRUE(now == before || now == 2 * before || now == before / 2) << before << " -> " << now;
    moves += now != before;
  }
  EXPECT_GT(moves, 0);
  for (const EpochRecord& r : stalled.epochs) EXPECT_EQ(*r.info.Figure("admm_rho"), 4);
}

TEST(Admm, L1SoftThresholdingMakesTheModelSparse) {
  // Only some features matter when most weights of the planted model are irrelevant noise features: append
  // pure-noise features to a small dense problem.
  const Dataset base = testing::SmallDense(3000, 10, 7);
  Dataset data(Storage::kDense, 40);
  Rng rng(1);
  std::vector<float> row(40);
  for (size_t i = 0; i < base.num_rows(); ++i) {
    for (size_t j = 0; j < 40; ++j) row[j] = j < 10 ? base.dense_row(i)[j] : rng.UniformFloat();
    data.AppendDenseRow(row, base.labels()[i]);
  }
  TrainConfig c = ConfigFor("admm", LossKind::kLogistic);
  c.epochs = 15;
  c.algorithm_options.As<AdmmOptions>("admm").rho = 0.5;
  c.lr = 0.05;
  auto zeros = [](const LinearModel& m) { return std::count(m.weights.begin(), m.weights.end(), 0.0f); };
  const TrainResult dense = testing::TrainCpu(data, c);
  c.objective.l1 = 0.02;
  const TrainResult sparse = testing::TrainCpu(data, c);
  EXPECT_EQ(zeros(dense.model), 0);
  EXPECT_GE(zeros(sparse.model), 20) << zeros(sparse.model);
  EXPECT_GT(sparse.epochs.back().train.accuracy, 0.85);
}

TEST(MaSgd, LocalStepsReduceSynchronizations) {
  const Dataset train = testing::SmallDense(4000, 20, 7);
  TrainConfig c = ConfigFor("ma", LossKind::kLogistic);
  c.epochs = 2;
  const TrainResult h1 = testing::TrainCpu(train, c);
  c.local_steps = 5;
  const TrainResult h5 = testing::TrainCpu(train, c);
  EXPECT_EQ(h1.epochs[0].info.syncs, 125u);  // 1000 rows per worker / batch 8
  EXPECT_EQ(h5.epochs[0].info.syncs, 25u);
  EXPECT_EQ(h5.traffic.syncs * 5, h1.traffic.syncs);
  EXPECT_GT(h5.epochs.back().train.accuracy, 0.9);
}

TEST(Traffic, AdmmMovesFarLessThanMaSgd) {
  const Dataset train = testing::SmallDense(4000, 20, 7);
  const TrainResult ma = testing::TrainCpu(train, ConfigFor("ma", LossKind::kLogistic));
  const TrainResult admm = testing::TrainCpu(train, ConfigFor("admm", LossKind::kLogistic));
  // K=4, n+1=21 floats: ADMM pushes v_k and pulls x_k once per epoch: 8 epochs x 4 x 84 bytes each way.
  EXPECT_EQ(admm.traffic.to_workers_bytes, 8u * 4 * 84);
  EXPECT_EQ(admm.traffic.from_workers_bytes, 8u * 4 * 84);
  EXPECT_EQ(ma.traffic.from_workers_bytes, 8u * 125 * 4 * 84);
}

// --tol: the run stops at the first epoch whose relative duality gap is at most tol, at the same epoch on any thread
// count, with the model a run of exactly that many epochs gives.
TEST(Tolerance, StopsAtTheFirstEpochWhoseGapIsBelowTolWithTheModelOfThatManyEpochs) {
  const Dataset train = testing::SmallDense(1200, 20, 5);
  for (const std::string algo : {"mbsgd", "ma", "admm"}) {
    TrainConfig c;
    c.algorithm = algo;
    c.workers = algo == "mbsgd" ? 1 : 4;
    c.batch = 16;
    c.lr = 0.5;
    c.schedule = LrSchedule::kInverseSqrt;
    c.lr_decay = 0.1;
    c.epochs = 200;
    c.objective.l2 = 1e-2;  // strongly convex: the objective settles (on separable data with a tiny l2 it keeps
                            // falling by a fraction every epoch)
    c.tol = 5e-3;  // the relative duality gap
    const TrainResult r = testing::TrainCpu(train, c, 2);
    ASSERT_TRUE(r.converged) << algo;
    EXPECT_TRUE(r.stopped_on_gap) << algo;
    const size_t n = r.epochs.size();
    ASSERT_GE(n, 2u) << algo;
    EXPECT_LT(n, 200u) << algo;
    EXPECT_LE(r.epochs.back().gap.relative(), c.tol) << algo;
    for (size_t e = 1; e < n; ++e) {
      if (r.epochs[e - 1].gap.available) {
        EXPECT_GT(r.epochs[e - 1].gap.relative(), c.tol) << algo << " epoch " << e;
      }
    }
    // The same stop on one thread, and the model of a plain run of n epochs.
    const TrainResult one = testing::TrainCpu(train, c, 1);
    EXPECT_EQ(one.epochs.size(), n) << algo;
    TrainConfig plain = c;
    plain.tol = 0;
    plain.epochs = static_cast<int>(n);
    const TrainResult fixed = testing::TrainCpu(train, plain, 2);
    EXPECT_FALSE(fixed.converged);
    EXPECT_EQ(fixed.epochs.size(), n);
    EXPECT_EQ(fixed.model.weights, r.model.weights) << algo;
    EXPECT_EQ(fixed.model.bias, r.model.bias) << algo;
  }
}

// CoCoA on one worker, L2 1e-4, --tol 1e-3: slow enough to need a few hundred epochs to the certificate on SmallSparse(1500, 1 << 10).
TrainConfig CertifiedCocoa(LossKind loss, int epochs) {
  TrainConfig c;
  c.algorithm = "cocoa";
  c.objective.loss = loss;
  c.objective.l2 = 1e-4;
  c.workers = 1;
  c.epochs = epochs;
  c.tol = 1e-3;
  return c;
}

// Without per-epoch train metrics a run that stops on its certificate evaluates F and the gap only at spaced epochs
// (every epoch up to 32, then multiples of epoch / 32), and once two gaps show how fast the gap falls, only from the
// epoch at which it would have covered half its way to tol (at most epoch / 8 later): the same models epoch by
// epoch, a stop at a checked epoch whose gap is below tol, at most 1/8 + 1/32 of the epochs after the stop of a run
// that evaluated every epoch, fewer evaluations than the fixed spacing, and no train metrics in the epochs it did
// not evaluate. A run killed and resumed from a checkpoint evaluates at the same epochs and stops at the same one.
TEST(Tolerance, WithoutTrainMetricsTheCertificateIsCheckedAtSpacedEpochs) {
  const Dataset train = testing::SmallSparse(1500, 1 << 10, 5);
  const TrainConfig c = CertifiedCocoa(LossKind::kHinge, 2000);
  ThreadPool pool(2);
  auto run = [&](bool every_epoch, int epochs, double tol, TrainOptions options = {}) {
    TrainConfig config = c;
    config.epochs = epochs;
    config.tol = tol;
    CpuBackend backend(pool);
    options.eval_pool = &pool;
    options.evaluate_train = every_epoch;
    return Train(train, nullptr, config, backend, options);
  };
  const TrainResult dense = run(true, c.epochs, c.tol);
  const TrainResult spaced = run(false, c.epochs, c.tol);
  ASSERT_TRUE(dense.stopped_on_gap);
  ASSERT_TRUE(spaced.stopped_on_gap);
  const size_t n = dense.epochs.size(), m = spaced.epochs.size();
  ASSERT_GT(n, 64u) << "the test needs a run long enough to space its checks";
  EXPECT_GE(m, n);
  EXPECT_LE(m, n + n / 8 + n / 32 + 1);
  EXPECT_LE(spaced.epochs.back().gap.relative(), c.tol);
  size_t evaluated = 0, fixed_spacing = 0, gaps = 0;
  for (size_t e = 0; e < m; ++e) {
    const int done = static_cast<int>(e) + 1;
    const bool on_fixed_spacing = done % std::max(1, done / 32) == 0 || e + 1 == m;
    const bool was_evaluated = spaced.epochs[e].train.rows > 0;
    EXPECT_TRUE(on_fixed_spacing || !was_evaluated) << "epoch " << done;
    if (!was_evaluated) {
      EXPECT_FALSE(spaced.epochs[e].gap.available) << "epoch " << done;
    }
    if (e + 1 < m && spaced.epochs[e].gap.available) {
      EXPECT_GT(spaced.epochs[e].gap.relative(), c.tol) << done;
    }
    // An epoch evaluated for the stopping rule has the objective alone; the last one every metric.
    if (was_evaluated) {
      EXPECT_EQ(std::isnan(spaced.epochs[e].train.accuracy), e + 1 < m) << "epoch " << done;
      EXPECT_TRUE(std::isfinite(spaced.epochs[e].train.objective)) << "epoch " << done;
      if (e < n) {
        EXPECT_EQ(spaced.epochs[e].train.objective, dense.epochs[e].train.objective) << "epoch " << done;
      }
    }
    evaluated += was_evaluated;
    fixed_spacing += on_fixed_spacing;
    gaps += spaced.epochs[e].gap.available;
  }
  EXPECT_LT(evaluated, fixed_spacing * 3 / 4) << "the gaps' rate skips evaluations";
  EXPECT_GE(gaps, 3u);
  // The model of the spaced run's last epoch is that of a run of as many epochs without a stopping rule.
  const TrainResult fixed = run(true, static_cast<int>(m), 0);
  EXPECT_EQ(fixed.model.weights, spaced.model.weights);
  EXPECT_EQ(fixed.model.bias, spaced.model.bias);

  // Killed after 2/3 of its epochs (a checkpoint every 7 epochs) and resumed: the same evaluated epochs from the
  // checkpoint on, the same stop, the same model.
  testing::TempDir dir;
  TrainOptions first;
  first.checkpoint_path = dir.Path("run.ckpt");
  first.checkpoint_every = 7;
  const int killed_at = static_cast<int>(m * 2 / 3) / 7 * 7;
  first.after_epoch = [&](int done) {
    if (done == killed_at) throw std::runtime_error("killed");
  };
  EXPECT_THROW(run(false, c.epochs, c.tol, first), std::runtime_error);
  TrainOptions again;
  again.checkpoint_path = first.checkpoint_path;
  again.checkpoint_every = 7;
  again.resume = true;
  const TrainResult resumed = run(false, c.epochs, c.tol, again);
  EXPECT_EQ(resumed.resumed_from_epoch, killed_at);
  ASSERT_EQ(resumed.resumed_from_epoch + resumed.epochs.size(), m);
  for (size_t e = 0; e < resumed.epochs.size(); ++e) {
    EXPECT_EQ(resumed.epochs[e].train.rows, spaced.epochs[killed_at + e].train.rows) << "epoch " << killed_at + e + 1;
  }
  EXPECT_EQ(resumed.model.weights, spaced.model.weights);
}

// Spaced train metrics (TrainOptions::spaced_train_metrics, the pipeline's default): a run that stops on its
// certificate evaluates the training set at the epochs the stopping rule checks, as without train metrics, but
// every metric there (accuracy and AUC too); it stops at the same epoch with the same model as the run without train
// metrics, and computes no metric at the epochs in between.
TEST(Tolerance, SpacedTrainMetricsAreEveryMetricAtTheEpochsTheStoppingRuleChecks) {
  const Dataset train = testing::SmallSparse(1500, 1 << 10, 5);
  const TrainConfig c = CertifiedCocoa(LossKind::kHinge, 2000);
  ThreadPool pool(2);
  auto run = [&](bool evaluate_train, bool spaced) {
    CpuBackend backend(pool);
    TrainOptions options;
    options.eval_pool = &pool;
    options.evaluate_train = evaluate_train;
    options.spaced_train_metrics = spaced;
    return Train(train, nullptr, c, backend, options);
  };
  const TrainResult none = run(false, false);
  const TrainResult spaced = run(true, true);
  const TrainResult every = run(true, false);
  ASSERT_TRUE(spaced.stopped_on_gap);
  ASSERT_EQ(spaced.epochs.size(), none.epochs.size());
  ASSERT_GT(spaced.epochs.size(), 64u) << "the test needs a run long enough to space its checks";
  EXPECT_EQ(spaced.model.weights, none.model.weights);
  EXPECT_EQ(spaced.model.bias, none.model.bias);
  size_t evaluated = 0;
  for (size_t e = 0; e < spaced.epochs.size(); ++e) {
    const EpochRecord &s = spaced.epochs[e], &n = none.epochs[e];
    EXPECT_EQ(s.train.rows > 0, n.train.rows > 0) << "epoch " << e + 1;
    EXPECT_EQ(s.gap.available, n.gap.available) << "epoch " << e + 1;
    if (s.train.rows > 0) {
      ++evaluated;
      EXPECT_EQ(s.train.objective, n.train.objective) << "epoch " << e + 1;
      EXPECT_TRUE(std::isfinite(s.train.accuracy) && std::isfinite(s.train.auc)) << "epoch " << e + 1;
    }
  }
  EXPECT_LT(evaluated, spaced.epochs.size() / 2);
  // Every epoch's metrics: each epoch evaluated, and the stop where a check every epoch first finds the gap in tol.
  for (const EpochRecord& r : every.epochs) EXPECT_GT(r.train.rows, 0u) << "epoch " << r.epoch;
  EXPECT_LE(every.epochs.size(), spaced.epochs.size());
}

// The metrics of two evaluations, NaN equal to NaN (bit for bit otherwise).
void ExpectSameMetrics(const Metrics& a, const Metrics& b, const std::string& what) {
  auto same = [](double x, double y) { return (std::isnan(x) && std::isnan(y)) || x == y; };
  EXPECT_EQ(a.rows, b.rows) << what;
  EXPECT_TRUE(same(a.objective, b.objective)) << what << ": objective " << a.objective << " against " << b.objective;
  EXPECT_TRUE(same(a.accuracy, b.accuracy)) << what << ": accuracy";
  EXPECT_TRUE(same(a.auc, b.auc)) << what << ": auc";
  EXPECT_TRUE(same(a.log_loss, b.log_loss)) << what << ": log loss";
  EXPECT_TRUE(same(a.hinge_loss, b.hinge_loss)) << what << ": hinge loss";
}

// One sequential worker (CoCoA, --workers 1) on two threads: the stopping rule's evaluations run on the second
// thread while the first trains the next epochs. The run is the one that alternates them on one thread, record for
// record (the same evaluated epochs, objectives, certificates and test metrics), stopping at the same epoch with the
// same model, counters and syncs; the epochs trained past the stop are dropped. Spaced evaluations and evaluations
// every epoch, the hinge and the logistic loss, a run that ends at --epochs.
TEST(Tolerance, EvaluationsBesideTheEpochsGiveTheRunThatAlternatesThem) {
  const Dataset train = testing::SmallSparse(1500, 1 << 10, 5);
  const Dataset test = testing::SmallSparse(400, 1 << 10, 6, 1500);
  ThreadPool one(1);
  ThreadPool three(3, /*use_all_threads=*/true);  // beside even on a machine of one CPU
  for (LossKind loss : {LossKind::kHinge, LossKind::kLogistic}) {
    for (bool every_epoch : {false, true}) {
      for (int epochs : {2000, 40}) {
        const TrainConfig c = CertifiedCocoa(loss, epochs);
        const std::string what =
            StrCat(LossName(loss), every_epoch ? ", every epoch" : ", spaced", ", --epochs ", epochs);
        auto run = [&](ThreadPool& pool, std::map<std::string, double>* counters) {
          CpuBackend backend(pool);
          TrainOptions options;
          options.eval_pool = &pool;
          options.evaluate_train = every_epoch;
          TrainResult r = Train(train, &test, c, backend, options);
          *counters = r.backend_counters ? *r.backend_counters : backend.Counters();
          return r;
        };
        std::map<std::string, double> alone_counters, beside_counters;
        const TrainResult alone = run(one, &alone_counters);
        const TrainResult beside = run(three, &beside_counters);
        EXPECT_FALSE(alone.evaluations_beside_epochs) << what;
        ASSERT_TRUE(beside.evaluations_beside_epochs) << what;
        ASSERT_EQ(alone.epochs.size(), beside.epochs.size()) << what;
        EXPECT_EQ(alone.stopped_on_gap, beside.stopped_on_gap) << what;
        EXPECT_EQ(alone.stopped_on_gap, epochs == 2000) << what;
        for (size_t e = 0; e < alone.epochs.size(); ++e) {
          const EpochRecord &a = alone.epochs[e], &b = beside.epochs[e];
          const std::string at = StrCat(what, ", epoch ", e + 1);
          EXPECT_EQ(b.epoch, static_cast<int>(e) + 1) << at;
          ExpectSameMetrics(a.train, b.train, at);
          ASSERT_EQ(a.test.has_value(), b.test.has_value()) << at;
          ASSERT_TRUE(a.test.has_value()) << at;
          ExpectSameMetrics(*a.test, *b.test, at + ", test");
          EXPECT_EQ(a.gap.available, b.gap.available) << at;
          if (a.gap.available && b.gap.available) {
            EXPECT_EQ(a.gap.primal, b.gap.primal) << at;
            EXPECT_EQ(a.gap.dual, b.gap.dual) << at;
          }
          EXPECT_EQ(a.traffic.syncs, b.traffic.syncs) << at;
        }
        EXPECT_EQ(alone.model.weights, beside.model.weights) << what;
        EXPECT_EQ(alone.model.bias, beside.model.bias) << what;
        EXPECT_EQ(alone_counters, beside_counters) << what;
        EXPECT_EQ(alone.traffic.syncs, beside.traffic.syncs) << what;
      }
    }
  }
}

// With checkpoints, evaluations beside the epochs write the checkpoints of the run that alternates them: the same
// bytes at an epoch in the middle (every 7 epochs; read when the next epoch is reported, the checkpoint being
// written at the epoch's commit) and at the end, for a run stopped on its gap and one ended by --epochs; a run
// resumed from the middle one ends as the whole run does.
TEST(Tolerance, EvaluationsBesideTheEpochsWriteTheCheckpointsOfTheRunThatAlternatesThem) {
  const Dataset train = testing::SmallSparse(1500, 1 << 10, 5);
  ThreadPool one(1);
  ThreadPool three(3, /*use_all_threads=*/true);
  testing::TempDir dir;
  for (int epochs : {2000, 40}) {
    const TrainConfig c = CertifiedCocoa(LossKind::kHinge, epochs);
    auto run = [&](ThreadPool& pool, const std::string& path, std::string* middle, bool resume = false) {
      CpuBackend backend(pool);
      TrainOptions options;
      options.eval_pool = &pool;
      options.evaluate_train = false;
      options.checkpoint_path = path;
      options.checkpoint_every = 7;
      options.resume = resume;
      options.on_epoch = [&](const EpochRecord& r) {
        if (middle != nullptr && r.epoch == 36) *middle = testing::ReadText(path);  // epoch 35's checkpoint
      };
      return Train(train, nullptr, c, backend, options);
    };
    const std::string alone_path = dir.Path(StrCat("alone", epochs)), beside_path = dir.Path(StrCat("beside", epochs));
    std::string alone_middle, beside_middle;
    const TrainResult alone = run(one, alone_path, &alone_middle);
    const TrainResult beside = run(three, beside_path, &beside_middle);
    ASSERT_TRUE(beside.evaluations_beside_epochs);
    ASSERT_EQ(alone.epochs.size(), beside.epochs.size()) << epochs;
    ASSERT_FALSE(alone_middle.empty());
    EXPECT_TRUE(alone_middle == beside_middle) << "epoch 35's checkpoint, --epochs " << epochs;
    EXPECT_TRUE(testing::ReadText(alone_path) == testing::ReadText(beside_path)) << "the last checkpoint, " << epochs;
    EXPECT_EQ(alone.model.weights, beside.model.weights);
    // Resumed beside the epochs from epoch 35's checkpoint: the same end.
    const std::string resumed_path = dir.Path(StrCat("resumed", epochs));
    {
      std::ofstream out(resumed_path, std::ios::binary);
      out << beside_middle;
    }
    const TrainResult resumed = run(three, resumed_path, nullptr, /*resume=*/true);
    EXPECT_EQ(resumed.resumed_from_epoch, 35);
    EXPECT_EQ(resumed.resumed_from_epoch + resumed.epochs.size(), alone.epochs.size()) << epochs;
    EXPECT_EQ(resumed.model.weights, alone.model.weights) << epochs;
    EXPECT_TRUE(testing::ReadText(resumed_path) == testing::ReadText(alone_path)) << epochs;
  }
}

// The trainer runs at most four snapshots ahead of the evaluator, an epoch counting as one when it holds a model
// (a test set scored every epoch) or a backend state (a checkpoint every epoch), not only where it may be evaluated:
// when an epoch is committed (its callback, on the trainer's thread) the backend has trained at most four epochs
// past it, also late in the run, where the evaluations are spaced by 9 epochs and more.
TEST(Tolerance, EvaluationsBesideTheEpochsKeepAtMostFourSnapshotsAhead) {
  ThreadPool three(3, /*use_all_threads=*/true);
  testing::TempDir dir;
  for (bool checkpoint : {false, true}) {
    // Each case's evaluator is the slower thread: it scores a large test set every epoch, or it evaluates a large
    // training set whose shrinking passes the trainer mostly skips.
    const Dataset train = testing::SmallSparse(checkpoint ? 12000 : 1500, 1 << 10, 5);
    const Dataset test = testing::SmallSparse(20000, 1 << 10, 6, 12000);
    CpuBackend backend(three);
    TrainOptions options;
    options.eval_pool = &three;
    options.evaluate_train = false;
    if (checkpoint) {
      options.checkpoint_path = dir.Path("every.ckpt");
      options.checkpoint_every = 1;
    }
    int most_ahead = 0;
    // The epochs the backend has trained: each plans every row once, a visit or a skip.
    options.on_epoch = [&](const EpochRecord& r) {
      const std::map<std::string, double> counters = backend.Counters();
      const double trained =
          (counters.at("dual_row_visits") + counters.at("dual_rows_skipped")) / static_cast<double>(train.num_rows());
      most_ahead = std::max(most_ahead, static_cast<int>(trained) - r.epoch);
    };
    TrainConfig c = CertifiedCocoa(LossKind::kHinge, 2000);
    if (checkpoint) c.objective.l2 = 1e-5;  // more rows: a weaker L2 for as many epochs
    const TrainResult r = Train(train, checkpoint ? nullptr : &test, c, backend, options);
    ASSERT_TRUE(r.evaluations_beside_epochs);
    ASSERT_GT(r.epochs.size(), 300u) << "the test needs evaluations spaced by more than four epochs";
    EXPECT_LE(most_ahead, 4) << (checkpoint ? "a checkpoint every epoch" : "a test set every epoch");
    EXPECT_GE(most_ahead, 1) << "the trainer never ran ahead: the test proves nothing";
  }
}

// With spaced evaluations the test set is still scored with each epoch's own model: an epoch between two
// evaluations scores as a run that evaluated every epoch scores it (the model there is the same), never with the
// model of the last evaluated epoch.
TEST(Tolerance, BetweenSpacedEvaluationsTheTestSetIsScoredWithThatEpochsModel) {
  const Dataset train = testing::SmallSparse(1500, 1 << 10, 5);
  const Dataset test = testing::SmallSparse(400, 1 << 10, 6, 1500);
  const TrainConfig c = CertifiedCocoa(LossKind::kHinge, 2000);
  for (int threads : {1, 2}) {
    ThreadPool pool(threads, /*use_all_threads=*/true);
    auto run = [&](bool every_epoch) {
      CpuBackend backend(pool);
      TrainOptions options;
      options.eval_pool = &pool;
      options.evaluate_train = every_epoch;
      return Train(train, &test, c, backend, options);
    };
    const TrainResult dense = run(true), spaced = run(false);
    ASSERT_GT(dense.epochs.size(), 64u);
    size_t between = 0;
    for (size_t e = 0; e < std::min(dense.epochs.size(), spaced.epochs.size()); ++e) {
      const std::string at = StrCat(threads, " threads, epoch ", e + 1);
      ASSERT_TRUE(spaced.epochs[e].test.has_value()) << at;
      EXPECT_EQ(spaced.epochs[e].test->accuracy, dense.epochs[e].test->accuracy) << at;
      EXPECT_EQ(spaced.epochs[e].test->objective, dense.epochs[e].test->objective) << at;
      between += spaced.epochs[e].train.rows == 0;
    }
    EXPECT_GT(between, 10u) << "the spaced run evaluates every epoch: the test proves nothing";
  }
}

// An exception on the training thread (here a progress callback's) while evaluations run beside the epochs ends
// the evaluator and reaches the caller.
TEST(Tolerance, AnExceptionBesideTheEvaluationsReachesTheCaller) {
  const Dataset train = testing::SmallSparse(1500, 1 << 10, 5);
  const TrainConfig c = CertifiedCocoa(LossKind::kHinge, 2000);
  ThreadPool pool(2, /*use_all_threads=*/true);
  CpuBackend backend(pool);
  TrainOptions options;
  options.eval_pool = &pool;
  options.evaluate_train = false;
  options.on_epoch = [](const EpochRecord& r) {
    if (r.epoch == 70) throw std::runtime_error("stopped by the callback");
  };
  EXPECT_THROW(Train(train, nullptr, c, backend, options), std::runtime_error);
}

// Without L2 regularization there is no certificate (the conjugate of the regularizer is not finite): --tol then
// bounds the objective's relative change over an epoch, as before the gap existed.
TEST(Tolerance, WithoutL2TheObjectivesRelativeChangeStopsTheRun) {
  const Dataset train = testing::SmallDense(1200, 20, 5);
  TrainConfig c;
  c.algorithm = "mbsgd";
  c.batch = 16;
  c.lr = 0.05;
  c.schedule = LrSchedule::kInverseSqrt;
  c.lr_decay = 1;
  c.epochs = 200;
  c.objective.l2 = 0;
  c.tol = 1e-3;
  const TrainResult r = testing::TrainCpu(train, c, 2);
  ASSERT_TRUE(r.converged);
  EXPECT_FALSE(r.stopped_on_gap);
  EXPECT_FALSE(r.epochs.back().gap.available);
  EXPECT_LT(r.last_relative_change, 1e-3);
  EXPECT_LT(r.epochs.size(), 200u);
}

// The plateau schedule (the default with --lr auto): an epoch is stale when it lowers the best objective so far by
// less than kPlateauTol (relative); kPlateauPatience stale epochs in a row are a plateau, after which the learning
// rate is divided by kPlateauDrop; the kPlateauStops-th plateau stops the run (or the duality gap reaches tol
// first). Replayed here from the recorded objectives.
TEST(PlateauSchedule, DropsTheRateAtEachPlateauAndStopsAtTheLast) {
  const Dataset train = testing::SmallDense(1500, 20, 5);
  for (const std::string algo : {"sgd", "mbsgd", "ga", "ma", "admm"}) {
    TrainConfig c;  // every default: auto batch, lr and reg, the plateau schedule, tol auto
    c.algorithm = algo;
    c.workers = algo == "sgd" || algo == "mbsgd" ? 1 : 4;
    const TrainResult r = testing::TrainCpu(train, c, 2);
    EXPECT_EQ(r.config.schedule, LrSchedule::kPlateau) << algo;
    EXPECT_EQ(r.config.tol, TrainConfig::kPlateauTol) << algo;
    EXPECT_DOUBLE_EQ(r.config.objective.l2, 1.0 / 1500) << algo;  // LIBLINEAR's C = 1
    ASSERT_TRUE(r.converged) << algo << " ran all " << r.epochs.size() << " epochs";
    // It stops at the last plateau, or earlier when the duality gap reaches tol.
    if (r.stopped_on_gap) {
      EXPECT_LE(r.epochs.back().gap.relative(), r.config.tol) << algo;
      EXPECT_LE(r.plateaus, TrainConfig::kPlateauStops) << algo;
    } else {
      EXPECT_EQ(r.plateaus, TrainConfig::kPlateauStops) << algo;
    }
    double best = r.epochs[0].train.objective, factor = 1;
    int stale = 0, plateaus = 0;
    EXPECT_DOUBLE_EQ(r.epochs[0].lr, r.config.lr) << algo;
    for (size_t e = 1; e < r.epochs.size(); ++e) {
      EXPECT_DOUBLE_EQ(r.epochs[e].lr, r.config.lr * factor) << algo << " epoch " << e + 1;
      const double now = r.epochs[e].train.objective;
      stale = (best - now) / std::fabs(now) < TrainConfig::kPlateauTol ? stale + 1 : 0;
      const bool plateau = stale == TrainConfig::kPlateauPatience;
      EXPECT_EQ(r.epochs[e].plateau, plateau) << algo << " epoch " << e + 1;
      if (plateau) {
        stale = 0;
        ++plateaus;
        factor /= TrainConfig::kPlateauDrop;
      }
      best = std::min(best, now);
    }
    EXPECT_EQ(plateaus, r.plateaus) << algo;
    if (!r.stopped_on_gap) {
      EXPECT_TRUE(r.epochs.back().plateau) << algo;
    }
    // The same epochs and model on one thread.
    const TrainResult one = testing::TrainCpu(train, c, 1);
    EXPECT_EQ(one.epochs.size(), r.epochs.size()) << algo;
    EXPECT_EQ(one.model.weights, r.model.weights) << algo;
  }
}

// --batch auto: the algorithm's batch, halved (as a power of 2) until an epoch has kAutoMinSteps steps.
TEST(AutoDefaults, BatchShrinksOnSmallDataAndLrFollowsTheRowNorms) {
  TrainConfig c;
  c.algorithm = "mbsgd";
  c.workers = 1;
  EXPECT_EQ(AutoBatch(c, 1000000), 64u);
  EXPECT_EQ(AutoBatch(c, 64 * 512), 64u);
  EXPECT_EQ(AutoBatch(c, 64 * 512 - 1), 32u);
  EXPECT_EQ(AutoBatch(c, 1000), 1u);
  c.algorithm = "ma";
  c.workers = 8;
  EXPECT_EQ(AutoBatch(c, 1000000), 16u);
  EXPECT_EQ(AutoBatch(c, 8 * 4 * 512), 4u);  // 4 * 512 rows per worker
  c.algorithm = "ga";
  EXPECT_EQ(AutoBatch(c, 1000000), 64u);
  EXPECT_EQ(AutoBatch(c, 1000), 8u);  // at least a row per worker
  c.workers = 3;
  EXPECT_EQ(AutoBatch(c, 1000000), 63u);  // a multiple of the workers
  c.algorithm = "sgd";
  c.workers = 1;
  EXPECT_EQ(AutoBatch(c, 1000000), 1u);
  // lr: 1 / (4 L (mean ||x||^2 + 1)) sqrt(batch), L = 1/4 (logistic) or 1 (hinge); capped by 1 / (2 reg).
  c.algorithm = "mbsgd";
  c.batch = 16;
  c.objective.l2 = 1e-4;
  TrainDataFacts facts{10000, 3.0};
  EXPECT_DOUBLE_EQ(AutoLearningRate(c, facts), 4.0 / (4 * 0.25 * 4.0));
  c.objective.loss = LossKind::kHinge;
  EXPECT_DOUBLE_EQ(AutoLearningRate(c, facts), 4.0 / (4 * 1.0 * 4.0));
  facts.mean_row_sq_norm = 1e-9;
  c.objective.l2 = 1.0;
  EXPECT_DOUBLE_EQ(AutoLearningRate(c, facts), 0.5);  // lr * reg stays below 1
}

}  // namespace convergence_test
}  // namespace pimopt
