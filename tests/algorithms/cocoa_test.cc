// CoCoA+ (src/algorithms/cocoa.cc): the dual coordinate step against its closed form and its optimality condition,
// the optimum of the objective it solves against an independent Newton solver, the certificate's validity (weak
// duality at every epoch, a dual that never falls), the model equal to w(beta) of the duals the workers keep, and
// the same bits for every thread count.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "pimopt/algorithms/algorithm.h"
#include "pimopt/algorithms/duality_gap.h"
#include "pimopt/algorithms/train.h"
#include "pimopt/backends/cpu/cpu_backend.h"
#include "pimopt/core/error.h"
#include "pimopt/core/thread_pool.h"
#include "pimopt/model/dual_coordinate.h"
#include "pimopt/model/metrics.h"
#include "pimopt/run/pipeline.h"
#include "pimopt/run/run_config.h"
#include "test_util.h"

namespace pimopt {
namespace {

// psi(b) - (b - beta) m - (q/2)(b - beta)^2, the function a step maximizes.
double StepObjective(LossKind loss, double b, double beta, double m, double q) {
  double psi = b;
  if (loss == LossKind::kLogistic) {
    auto xlogx = [](double x) { return x > 0 ? x * std::log(x) : 0.0; };
    psi = -xlogx(b) - xlogx(1 - b);
  }
  return psi - (b - beta) * m - 0.5 * q * (b - beta) * (b - beta);
}

TEST(DualCoordinateStep, HingeIsTheClippedClosedForm) {
  EXPECT_DOUBLE_EQ(DualCoordinateStep(LossKind::kHinge, 0.2, 0.5, 2.0), 0.2 + 0.5 / 2.0);
  EXPECT_EQ(DualCoordinateStep(LossKind::kHinge, 0.9, -3.0, 1.0), 1.0);  // clipped above
  EXPECT_EQ(DualCoordinateStep(LossKind::kHinge, 0.1, 4.0, 1.0), 0.0);   // clipped below
  EXPECT_EQ(DualCoordinateStep(LossKind::kHinge, 0.3, 0.5, 0.0), 1.0);   // q = 0: the linear function's end
  EXPECT_EQ(DualCoordinateStep(LossKind::kHinge, 0.3, 1.5, 0.0), 0.0);
}

TEST(DualCoordinateStep, LogisticMaximizesItsSubproblemEverywhere) {
  for (double beta : {0.0, 1e-9, 0.3, 0.5, 0.999, 1.0}) {
    for (double m : {-40.0, -3.0, -0.1, 0.0, 0.7, 5.0, 40.0}) {
      for (double q : {1e-6, 0.01, 1.0, 50.0, 1e6}) {
        const double b = DualCoordinateStep(LossKind::kLogistic, beta, m, q);
        ASSERT_TRUE(b >= 0 && b <= 1) << beta << " " << m << " " << q;
        const double best = StepObjective(LossKind::kLogistic, b, beta, m, q);
        // No nearby point does better (the function is concave, so this is the maximum).
        for (double h : {1e-7, 1e-5, 1e-3}) {
          for (double other : {b - h, b + h}) {
            if (other <= 0 || other >= 1) continue;
            EXPECT_LE(StepObjective(LossKind::kLogistic, other, beta, m, q), best + 1e-12)
                << "beta " << beta << " m " << m << " q " << q << " b " << b;
          }
        }
      }
    }
  }
  // q = 0: the logistic loss's own dual of the margin, 1 / (1 + e^m).
  EXPECT_NEAR(DualCoordinateStep(LossKind::kLogistic, 0.5, 1.0, 0.0), 1 / (1 + std::exp(1.0)), 1e-15);
}

TrainConfig CocoaConfig(LossKind loss, int workers, double tol = 1e-2) {
  TrainConfig c;
  c.algorithm = "cocoa";
  c.objective.loss = loss;
  c.objective.l2 = 1e-2;
  c.workers = workers;
  c.epochs = 400;
  c.tol = tol;
  c.seed = 5;
  return c;
}

// The logistic optimum of F_b from Newton's method: CoCoA+ on 1 and 4 workers ends within its own certificate of it,
// and its dual is below it (weak duality), at every epoch where the gap was computed.
TEST(Cocoa, ReachesTheNewtonOptimumWithinItsOwnCertificate) {
  const Dataset data = testing::SmallDense(600, 12, 9);
  for (int workers : {1, 4}) {
    TrainConfig config = CocoaConfig(LossKind::kLogistic, workers, 1e-4);
    config.objective.positive_weight = 2;  // class weights enter the duals' boxes and the certificate
    config.ResolveDefaults();
    const double optimum = Evaluate(testing::NewtonLogisticOptimum(data, config.objective), data,
                                    config.objective).objective;
    const TrainResult r = testing::TrainCpu(data, config);
    ASSERT_TRUE(r.stopped_on_gap) << workers << " workers";
    const DualityGap& gap = r.epochs.back().gap;
    const double f = r.epochs.back().train.objective;
    EXPECT_GE(f, optimum * (1 - 1e-9));
    EXPECT_LE((f - optimum) / f, gap.relative() + 1e-9) << workers << " workers";
    EXPECT_LE(gap.relative(), 1e-4);
    for (const EpochRecord& e : r.epochs) {
      if (e.gap.available) {
        EXPECT_LE(e.gap.dual, optimum * (1 + 1e-9)) << "epoch " << e.epoch;
      }
    }
  }
}

// CoCoA+ with sigma' = K never lowers the dual (Ma et al. 2015): a wrong scaling (or averaging instead of adding)
// would. Hinge and logistic, dense and sparse, 1 and 6 workers; the gap is computed after every epoch here.
TEST(Cocoa, TheDualNeverFallsAndTheCertificateHolds) {
  const Dataset dense = testing::SmallDense(900, 20, 4);
  const Dataset sparse = testing::SmallSparse(1200, 1 << 9, 4);
  for (const Dataset* data : {&dense, &sparse}) {
    for (LossKind loss : {LossKind::kHinge, LossKind::kLogistic}) {
      for (int workers : {1, 6}) {
        TrainConfig config = CocoaConfig(loss, workers, 1e-9);
        config.epochs = 12;
        ThreadPool pool(2);
        CpuBackend backend(pool);
        TrainOptions options;
        options.on_epoch = [](const EpochRecord&) {};
        const TrainResult r = Train(*data, nullptr, config, backend, options);
        double last_dual = -INFINITY;
        int gaps = 0;
        for (const EpochRecord& e : r.epochs) {
          if (!e.gap.available) continue;
          ++gaps;
          EXPECT_GE(e.gap.dual, last_dual - 1e-6 * std::fabs(last_dual))
              << LossName(loss) << ", " << workers << " workers, epoch " << e.epoch;
          // Weak duality, up to the rounding of the float scores the primal is computed from.
          EXPECT_LE(e.gap.dual, e.train.objective + 1e-6 * std::fabs(e.train.objective));
          last_dual = e.gap.dual;
        }
        EXPECT_GE(gaps, 3) << "the gap is computed after the epochs that lower F by less than 1%";
        if (loss == LossKind::kLogistic) continue;  // at the logistic optimum the margins give the optimal duals too
        // For the hinge loss the certificate of the workers' own duals is tighter than the one built from the
        // margins (whose duals are 0 or 1).
        const std::vector<float> duals = backend.RowDuals();
        ASSERT_EQ(duals.size(), data->num_rows());
        const DualityGap from_margins = ComputeDualityGap(r.model, *data, r.config.objective,
                                                          r.epochs.back().train.objective, &pool, SingleProcess());
        EXPECT_LE(r.epochs.back().gap.gap(), from_margins.gap() + 1e-12) << LossName(loss) << " " << workers;
      }
    }
  }
}

// Checks that `model` is w(beta) = (1/(lambda N)) sum_i c_i beta_i y_i a_i of the duals `beta` (each in [0, 1]).
void ExpectTheDualsImage(const LinearModel& model, const Dataset& data, const Objective& objective,
                         const std::vector<float>& beta) {
  ASSERT_EQ(beta.size(), data.num_rows());
  std::vector<double> w(data.num_features() + 1, 0.0);
  const double scale = 1.0 / (objective.l2 * static_cast<double>(data.num_rows()));
  for (size_t i = 0; i < data.num_rows(); ++i) {
    ASSERT_TRUE(beta[i] >= 0.0f && beta[i] <= 1.0f) << i << ": " << beta[i];
    const float y = data.labels()[i];
    const double q = objective.ClassWeight(y) * beta[i] * y * scale;
    for (size_t j = 0; j < data.num_features(); ++j) w[j] += q * data.dense_row(i)[j];
    w[data.num_features()] += q;
  }
  double largest = 0;
  for (double v : w) largest = std::max(largest, std::fabs(v));
  ASSERT_GT(largest, 0.01);
  for (size_t j = 0; j < data.num_features(); ++j) EXPECT_NEAR(model.weights[j], w[j], 1e-5 * largest) << j;
  EXPECT_NEAR(model.bias, w[data.num_features()], 1e-5 * largest);
}

// The model the workers' updates built is w(beta) of the duals they keep.
TEST(Cocoa, TheModelIsTheDualsImage) {
  const Dataset data = testing::SmallDense(800, 15, 2);
  TrainConfig config = CocoaConfig(LossKind::kHinge, 4, 0);
  config.epochs = 5;
  config.objective.negative_weight = 0.5;
  ThreadPool pool(2);
  CpuBackend backend(pool);
  const TrainResult r = Train(data, nullptr, config, backend, {});
  ExpectTheDualsImage(r.model, data, r.config.objective, backend.RowDuals());
}

// A warm start from a state of another L2 strength (pimopt tune's regularization path): moved to the run's L2, the
// model is still w(beta) of duals inside [0, 1], towards a weaker L2 (the duals shrink, w stays, as LIBLINEAR's
// warm start along C) and a stronger one (the duals stay, w shrinks); the run then ends certified at the optimum a
// cold start certifies.
TEST(Cocoa, AWarmStartFromAnotherL2KeepsTheModelTheDualsImage) {
  const Dataset data = testing::SmallDense(800, 15, 2);
  for (LossKind loss : {LossKind::kHinge, LossKind::kLogistic}) {
    TrainConfig from = CocoaConfig(loss, 4);
    from.epochs = 2000;
    from.objective.negative_weight = 0.5;
    ThreadPool pool(2);
    CpuBackend trained(pool);
    TrainOptions keep;
    keep.keep_final_state = true;
    const TrainResult first = Train(data, nullptr, from, trained, keep);
    for (double l2 : {1e-3, 1e-1}) {
      SCOPED_TRACE(StrCat(LossName(loss), ", from L2 ", from.objective.l2, " to ", l2));
      TrainConfig to = from;
      to.objective.l2 = l2;
      to.ResolveDefaults();
      CpuBackend moved(pool);
      moved.Setup(data, to);
      moved.RestoreState(first.final_state);
      moved.MoveRowDualsToL2(from.objective.l2);
      LinearModel model;
      moved.ExportModelInto(model);
      ExpectTheDualsImage(model, data, to.objective, moved.RowDuals());

      TrainOptions warm;
      warm.warm_start = &first.final_state;
      warm.warm_start_l2 = from.objective.l2;
      CpuBackend warm_backend(pool), cold_backend(pool);
      const TrainResult w = Train(data, nullptr, to, warm_backend, warm);
      const TrainResult c = Train(data, nullptr, to, cold_backend, {});
      ASSERT_TRUE(w.stopped_on_gap) << w.epochs.size() << " epochs, gap " << w.epochs.back().gap.relative() << " "
                                    << w.stalled << "; cold " << c.epochs.size();
      ASSERT_TRUE(c.stopped_on_gap);
      const double fw = w.epochs.back().train.objective, fc = c.epochs.back().train.objective;
      EXPECT_NEAR(fw, fc, 2e-2 * fc);  // both within 1% of the optimum
      EXPECT_NE(w.model.weights, c.model.weights);  // another start, another path
    }
  }
}

// One worker in one process: an epoch's average is written back into the worker's model, so the next epoch starts
// from the global model without a copy. A restored state must end that: an epoch after it starts from the restored
// global model (here a state whose worker model differs from it), as on a backend that only restored it.
TEST(Cocoa, AnEpochAfterARestoreStartsFromTheRestoredModel) {
  const Dataset data = testing::SmallSparse(1500, 1 << 10, 8);
  TrainConfig config = CocoaConfig(LossKind::kHinge, 1);
  config.ResolveDefaults();
  const Partition part = Partition::Whole(data.num_rows(), 1);
  ThreadPool pool(2);
  CpuBackend ran(pool), fresh(pool);
  ran.Setup(data, config);
  BackendState start = ran.SaveState();
  const float stale = 0.5f;  // the worker's model in the state: not the global model
  uint32_t stale_bits;
  std::memcpy(&stale_bits, &stale, sizeof stale_bits);
  std::vector<uint32_t>& worker_model = start.per_worker[0][0];
  std::fill(worker_model.begin(), worker_model.end(), stale_bits);
  const std::unique_ptr<Algorithm> cocoa = MakeAlgorithm("cocoa");
  for (int epoch = 0; epoch < 3; ++epoch) cocoa->RunEpoch(ran, config, part, epoch);
  ran.RestoreState(start);
  cocoa->RunEpoch(ran, config, part, 3);
  fresh.Setup(data, config);
  fresh.RestoreState(start);
  cocoa->RunEpoch(fresh, config, part, 3);
  const LinearModel a = ran.ExportModel(), b = fresh.ExportModel();
  EXPECT_EQ(a.weights, b.weights);
  EXPECT_EQ(a.bias, b.bias);
  EXPECT_EQ(ran.RowDuals(), fresh.RowDuals());
}

TEST(Cocoa, NoBiasKeepsTheBiasAtZero) {
  TrainConfig config = CocoaConfig(LossKind::kHinge, 2, 0);
  config.epochs = 3;
  config.objective.fit_bias = false;
  const TrainResult r = testing::TrainCpu(testing::SmallDense(500, 10, 3), config);
  EXPECT_EQ(r.model.bias, 0.0f);
  EXPECT_FALSE(r.config.objective.regularize_bias);
}

// The same bits with 1, 2 and 5 threads (every split into processes: tests/run/pipeline_test.cc, tests/mpi); the
// hinge loss with shrinking, which skips rows by each worker's own passes.
TEST(Cocoa, SameBitsForEveryThreadCount) {
  const Dataset data = testing::SmallSparse(1500, 1 << 10, 8);
  for (LossKind loss : {LossKind::kLogistic, LossKind::kHinge}) {
    TrainConfig config = CocoaConfig(loss, 6, 0);
    config.epochs = loss == LossKind::kHinge ? 12 : 3;
    const TrainResult one = testing::TrainCpu(data, config, 1);
    for (int threads : {2, 5}) {
      const TrainResult many = testing::TrainCpu(data, config, threads);
      EXPECT_EQ(one.model.weights, many.model.weights) << LossName(loss) << ", " << threads << " threads";
      EXPECT_EQ(one.model.bias, many.model.bias);
    }
  }
}

// Lanes (--dual-lanes, one worker, dense rows): each round's lanes step from the round's model and a line search
// combines them; the run ends certified at the optimum the sequential pass certifies, with the same bits on any
// thread count, and lanes are refused on sparse rows and with more than one worker.
TEST(Cocoa, LanesEndAtTheCertifiedOptimumWithTheSameBitsOnAnyThreadCount) {
  const Dataset data = testing::SmallDense(3000, 20, 6);  // 3,000 rows: several rounds of 2 and 3 lanes of 256
  for (LossKind loss : {LossKind::kHinge, LossKind::kLogistic}) {
    TrainConfig sequential = CocoaConfig(loss, 1, 1e-3);
    const TrainResult one_lane = testing::TrainCpu(data, sequential, 2);
    ASSERT_TRUE(one_lane.stopped_on_gap) << LossName(loss);
    for (int lanes : {2, 3}) {
      TrainConfig config = sequential;
      config.Set("dual-lanes", std::to_string(lanes));
      const TrainResult r = testing::TrainCpu(data, config, 2);
      const std::string what = StrCat(LossName(loss), ", ", lanes, " lanes");
      ASSERT_TRUE(r.stopped_on_gap) << what;
      const DualityGap& a = r.epochs.back().gap;
      const DualityGap& b = one_lane.epochs.back().gap;
      EXPECT_NEAR(a.primal, b.primal, a.gap() + b.gap()) << what;
      EXPECT_NE(r.model.weights, one_lane.model.weights) << what;  // the lanes did run
      // The line search never lowers the dual (adding the lanes' steps unsearched would).
      double dual = -INFINITY;
      for (const EpochRecord& e : r.epochs) {
        if (!e.gap.available) continue;
        EXPECT_GE(e.gap.dual, dual - 1e-9 * std::fabs(dual)) << what << ", epoch " << e.epoch;
        dual = e.gap.dual;
      }
      for (int threads : {1, 5}) {
        const TrainResult t = testing::TrainCpu(data, config, threads);
        EXPECT_EQ(t.model.weights, r.model.weights) << what << ", " << threads << " threads";
        EXPECT_EQ(t.model.bias, r.model.bias) << what;
      }
    }
  }
  TrainConfig lanes = CocoaConfig(LossKind::kHinge, 1);
  lanes.Set("dual-lanes", "2");
  lanes.epochs = 2;
  try {
    testing::TrainCpu(testing::SmallSparse(600, 1 << 8, 2), lanes, 2);
    FAIL() << "lanes on sparse rows";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.parameter(), "--dual-lanes");
  }
  lanes.workers = 2;
  try {
    testing::TrainCpu(data, lanes, 2);
    FAIL() << "lanes with two workers";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.parameter(), "--dual-lanes");
  }
}

// Shrinking (the hinge loss; LIBLINEAR's): rows at a bound they would not leave are skipped, every row is visited
// again when the others are near their optimum, and the run ends at the same certified optimum as without it, on
// 1 and 4 workers, dense and sparse rows. --no-shrinking visits every row.
TEST(Cocoa, ShrinkingSkipsRowsAndReachesTheSameCertifiedOptimum) {
  const Dataset dense = testing::SmallDense(2000, 20, 6);
  const Dataset sparse = testing::SmallSparse(2000, 1 << 9, 6);
  for (const Dataset* data : {&dense, &sparse}) {
    for (int workers : {1, 4}) {
      const double tol = workers == 1 ? 1e-3 : 1e-2;  // CoCoA+ damps K workers' steps by K
      std::map<bool, std::map<std::string, double>> counters;
      std::map<bool, TrainResult> runs;
      for (bool shrinking : {true, false}) {
        TrainConfig config = CocoaConfig(LossKind::kHinge, workers, tol);
        config.objective.l2 = 1e-3;  // many rows inside their margin: duals at 1, the others at 0
        if (!shrinking) config.Set("no-shrinking", "true");
        ThreadPool pool(2);
        CpuBackend backend(pool);
        runs[shrinking] = Train(*data, nullptr, config, backend, {});
        counters[shrinking] = backend.Counters();
        ASSERT_TRUE(runs[shrinking].stopped_on_gap) << workers << " workers, shrinking " << shrinking << ": "
                                                    << runs[shrinking].epochs.size() << " epochs, gap "
                                                    << runs[shrinking].epochs.back().gap.relative();
        EXPECT_LE(runs[shrinking].epochs.back().gap.relative(), tol);
      }
      const std::string what = StrCat(data->is_sparse() ? "sparse" : "dense", ", ", workers, " workers");
      EXPECT_EQ(counters[false].at("dual_rows_skipped"), 0) << what;
      // Shrinking skips a good part of the visits (LIBLINEAR's gain), and visits fewer rows in all.
      const double skipped = counters[true].at("dual_rows_skipped");
      EXPECT_GT(skipped, 0.2 * (skipped + counters[true].at("dual_row_visits"))) << what;
      EXPECT_LT(counters[true].at("dual_row_visits"), counters[false].at("dual_row_visits")) << what;
      // Every row visited again, when the others were near their optimum (at least once on the way to the tighter
      // tolerance of one worker).
      if (workers == 1) {
        EXPECT_GE(counters[true].at("dual_unshrinks"), 1) << what;
      }
      // Both at the optimum, each within the other's certificate.
      const double with = runs[true].epochs.back().train.objective;
      const double without = runs[false].epochs.back().train.objective;
      EXPECT_LE(std::fabs(with - without) / std::max(with, without), tol) << what;
      // (The models may even be the same bits: a skipped row that would not have moved in any later pass either
      // changes nothing.)
    }
  }
}

// Every planned step of a shrinking pass is a visit or a skip, also where a shard one row short wraps around to its
// first row (2,000 rows on 3 workers): rows shrunk before a pass are dropped from it in one sweep, those the pass
// shrinks are skipped at a second visit.
TEST(Cocoa, EveryPlannedStepOfAShrinkingPassIsAVisitOrASkip) {
  for (const bool sparse : {false, true}) {
    const Dataset data = sparse ? testing::SmallSparse(2000, 1 << 9, 6) : testing::SmallDense(2000, 20, 6);
    for (const int workers : {1, 3}) {
      TrainConfig config = CocoaConfig(LossKind::kHinge, workers, 0);
      config.objective.l2 = 1e-3;
      config.epochs = 30;
      ThreadPool pool(2);
      CpuBackend backend(pool);
      Train(data, nullptr, config, backend, {});
      const std::map<std::string, double> counters = backend.Counters();
      const double planned = 30.0 * workers * ((2000 + workers - 1) / workers);
      const std::string what = StrCat(sparse ? "sparse" : "dense", ", ", workers, " workers");
      EXPECT_EQ(counters.at("dual_row_visits") + counters.at("dual_rows_skipped"), planned) << what;
      EXPECT_GT(counters.at("dual_rows_skipped"), 0.2 * planned) << what;
    }
  }
}

TEST(Cocoa, RefusesWhatItCannotSolve) {
  TrainConfig config = CocoaConfig(LossKind::kHinge, 2);
  config.objective.l2 = 0;
  try {
    testing::TrainCpu(testing::SmallDense(200, 5, 1), config);
    FAIL() << "no L2: no dual";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("--reg"), std::string::npos) << e.what();
  }
  config = CocoaConfig(LossKind::kHinge, 2);
  config.batch = 4;
  EXPECT_THROW(testing::TrainCpu(testing::SmallDense(200, 5, 1), config), ConfigError);
  RunConfig run;
  SetParam(run, "data", "dense:rows=100");
  SetParam(run, "algo", "cocoa");
  SetParam(run, "lr", "0.1");
  try {
    ResolveRunConfig(run, 1);
    FAIL() << "--lr accepted with cocoa";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("--lr"), std::string::npos) << e.what();
  }
  // PIM-Opt's kernel has no dual mode.
  RunConfig pim;
  for (const auto& [name, value] : std::vector<std::pair<std::string, std::string>>{
           {"data", "dense:rows=100"}, {"algo", "cocoa"}, {"backend", "pim"}, {"kernel", "pim-opt"}, {"quiet", "true"}}) {
    SetParam(pim, name, value);
  }
  try {
    RunTraining(pim, SingleProcess(), "test");
    FAIL() << "cocoa accepted on PIM-Opt's kernel";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.parameter(), "--kernel") << e.what();
  }
}

}  // namespace
}  // namespace pimopt
