// pimopt tune: the grid's syntax and rules (errors name --grid or the parameter), every combination cross-validated
// in grid order, the best chosen by the metric and ready to train.
#include "pimopt/run/tune.h"

#include <gtest/gtest.h>

#include "pimopt/backends/cpu/cpu_backend.h"
#include "pimopt/core/error.h"
#include "pimopt/core/thread_pool.h"
#include "pimopt/run/cross_validation.h"
#include "pimopt/run/pipeline.h"
#include "test_util.h"

namespace pimopt {
namespace {

std::string ErrorOf(const std::string& grid) {
  try {
    ParseGrid(grid, RunConfig{});
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(TuneGrid, ParsesAxesAndNamesWhatIsWrong) {
  const auto grid = ParseGrid(" reg=1e-6, 1e-4 ; lr=0.05,0.1,0.2", RunConfig{});
  ASSERT_EQ(grid.size(), 2u);
  EXPECT_EQ(grid[0].name, "reg");
  EXPECT_EQ(grid[0].values, (std::vector<std::string>{"1e-6", "1e-4"}));
  EXPECT_EQ(grid[1].values.size(), 3u);
  EXPECT_NE(ErrorOf("reg").find("--grid"), std::string::npos);
  EXPECT_NE(ErrorOf("rgu=1").find("not a parameter"), std::string::npos);
  EXPECT_NE(ErrorOf("threads=1,2").find("does not change the trained model"), std::string::npos);
  EXPECT_NE(ErrorOf("reg=1;reg=2").find("appears twice"), std::string::npos);
  EXPECT_NE(ErrorOf("reg=1,1.0").find("reg=1.0 is listed twice"), std::string::npos);  // one value, two spellings
  EXPECT_NE(ErrorOf("model=lr,svm,lr").find("model=lr is listed twice"), std::string::npos);
  EXPECT_NE(ErrorOf("reg=1,").find("empty value"), std::string::npos);
  EXPECT_NE(ErrorOf("reg=-1").find("--reg"), std::string::npos);  // the parameter's own rule
  EXPECT_NE(ErrorOf("").find("names no parameter"), std::string::npos);
}

TEST(Tune, CrossValidatesEveryCombinationInOrderAndPicksTheBest) {
  RunConfig base;
  SetParam(base, "data", "dense:rows=600,features=12,separation=0.3,seed=2");
  SetParam(base, "algo", "mbsgd");  // a learning rate to tune
  SetParam(base, "epochs", "3");
  SetParam(base, "cv", "3");
  SetParam(base, "threads", "2");
  ThreadPool pool(2);
  const Dataset train = testing::SmallDense(600, 12, 2);  // balanced classes: a flat model scores about 0.5
  // A huge L2 strength flattens the model: the small one must win, whatever the learning rate.
  const auto grid = ParseGrid("reg=5,1e-5;lr=0.05,0.1", base);
  int calls = 0;
  const TuneResult r =
      Tune(GridSettings(base, grid), TuneMetric::kAccuracy, train, pool, [&](const TuneTrial&) { ++calls; });
  EXPECT_EQ(calls, 4);
  ASSERT_EQ(r.trials.size(), 4u);
  EXPECT_EQ(r.trials[0].setting, (std::vector<std::pair<std::string, std::string>>{{"reg", "5"}, {"lr", "0.05"}}));
  EXPECT_EQ(r.trials[1].setting[1].second, "0.1");  // the last axis varies fastest
  EXPECT_EQ(r.trials[2].setting[0].second, "1e-5");
  for (const TuneTrial& t : r.trials) EXPECT_EQ(t.cv.folds, 3u);
  EXPECT_GE(r.best, 2u);
  for (const TuneTrial& t : r.trials) EXPECT_LE(t.cv.mean.accuracy, r.trials[r.best].cv.mean.accuracy);
  EXPECT_DOUBLE_EQ(r.best_config.train.objective.l2, 1e-5);
  EXPECT_EQ(r.best_config.cv_folds, 0u);  // the final training does not cross-validate again
  // Deterministic: the same scores again.
  const TuneResult again = Tune(GridSettings(base, grid), TuneMetric::kAccuracy, train, pool);
  for (size_t i = 0; i < r.trials.size(); ++i) {
    EXPECT_EQ(again.trials[i].cv.mean.accuracy, r.trials[i].cv.mean.accuracy);
  }
  // By AUC: the same structure, the best by that metric.
  const TuneResult by_auc = Tune(GridSettings(base, grid), TuneMetric::kAuc, train, pool);
  for (const TuneTrial& t : by_auc.trials) EXPECT_LE(t.cv.mean.auc, by_auc.trials[by_auc.best].cv.mean.auc);
}

TEST(Tune, AFlagForSomeSettingsAppliesWhereItMeansSomething) {
  RunConfig base;
  SetParam(base, "data", "dense:rows=300,features=6,seed=2");
  SetParam(base, "algo", "mbsgd");
  SetParam(base, "epochs", "2");
  SetParam(base, "cv", "3");
  SetParam(base, "rho", "0.05");  // ADMM's only
  ThreadPool pool(2);
  const Dataset train = testing::SmallDense(300, 6, 2);
  const TuneResult r =
      Tune(GridSettings(base, ParseGrid("algo=admm,ma", base)), TuneMetric::kAccuracy, train, pool);
  ASSERT_EQ(r.trials.size(), 2u);
  try {
    GridSettings(base, ParseGrid("algo=mbsgd,ma", base));
    FAIL() << "--rho accepted by a grid without ADMM";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("--rho"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("no setting of the grid"), std::string::npos) << e.what();
  }
}

// Warm starts: with the default plateau schedule each fold of a setting starts from the model the same fold of the
// previous setting ended with (fewer epochs on the same problem); the first setting, and any setting whose
// backend, algorithm or workers differ from the previous one, trains from zero exactly as without warm starts.
TEST(Tune, WarmStartsFromThePreviousSettingsFoldsWhenTheyFit) {
  RunConfig base;
  SetParam(base, "data", "dense:rows=1600,features=16,seed=4");
  SetParam(base, "algo", "mbsgd");
  SetParam(base, "cv", "3");
  SetParam(base, "threads", "2");
  ThreadPool pool(2);
  const Dataset train = testing::SmallDense(1600, 16, 4);
  // Built directly: ParseGrid refuses a value listed twice, which a user never means; here it repeats settings.
  const std::vector<GridAxis> grid = {{"reg", {"auto", "auto"}}, {"algo", {"ma", "mbsgd"}}};
  const TuneResult warm = Tune(GridSettings(base, grid), TuneMetric::kAccuracy, train, pool, {}, true);
  const TuneResult cold = Tune(GridSettings(base, grid), TuneMetric::kAccuracy, train, pool, {}, false);
  ASSERT_EQ(warm.trials.size(), 4u);
  // Settings: (auto, ma), (auto, mbsgd), (auto, ma), (auto, mbsgd): the algorithm alternates, so no state fits and
  // every setting trains from zero.
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(warm.trials[i].cv.mean.objective, cold.trials[i].cv.mean.objective) << i;

  // The same setting twice in a row: the second starts from the first's final models.
  RunConfig config = base;
  ResolveRunConfig(config, 1);
  FoldStates states;
  const CrossValidation first = CrossValidate(config, train, pool, {}, &states);
  ASSERT_EQ(states.per_fold.size(), 3u);
  EXPECT_EQ(states.algorithm, "mbsgd");
  const FoldStates after_first = states;
  const CrossValidation second = CrossValidate(config, train, pool, {}, &states);
  EXPECT_NE(second.mean.objective, first.mean.objective);  // another start, another path
  EXPECT_NEAR(second.mean.accuracy, first.mean.accuracy, 0.01);
  // A state of another algorithm is not used: the run equals a cold one.
  FoldStates foreign = after_first;
  foreign.algorithm = "ma";
  const CrossValidation ignored = CrossValidate(config, train, pool, {}, &foreign);
  EXPECT_EQ(ignored.mean.objective, first.mean.objective);
  EXPECT_EQ(foreign.algorithm, "mbsgd");  // and it now holds this run's states
}

// A dual method's state belongs to its objective (its model is w(beta) for one L2 strength): CoCoA warm-starts from
// the previous setting's folds only when the objective is the same; across L2 strengths it starts from zero.
TEST(Tune, CocoaWarmStartsOnlyFromTheSameObjective) {
  RunConfig base;
  SetParam(base, "data", "dense:rows=900,features=10,seed=4");
  SetParam(base, "algo", "cocoa");
  SetParam(base, "cv", "3");
  SetParam(base, "threads", "2");
  ThreadPool pool(2);
  const Dataset train = testing::SmallDense(900, 10, 4);
  const std::vector<GridAxis> grid = {{"reg", {"1e-2", "1e-3", "1e-3"}}};
  const TuneResult warm = Tune(GridSettings(base, grid), TuneMetric::kAccuracy, train, pool, {}, true);
  const TuneResult cold = Tune(GridSettings(base, grid), TuneMetric::kAccuracy, train, pool, {}, false);
  ASSERT_EQ(warm.trials.size(), 3u);
  // 1e-2 then 1e-3: another objective, a cold start (the same bits as without warm starts).
  EXPECT_EQ(warm.trials[1].cv.mean.objective, cold.trials[1].cv.mean.objective);
  // 1e-3 again: the same objective, started from the previous folds' duals and models (another path).
  EXPECT_NE(warm.trials[2].cv.mean.objective, cold.trials[2].cv.mean.objective);
  EXPECT_NEAR(warm.trials[2].cv.mean.accuracy, cold.trials[2].cv.mean.accuracy, 0.01);
}

// Train with a warm start begins where the other run ended: its first epoch's objective is already near that run's
// last, and the plateau schedule stops it no later than a start from zero.
TEST(Tune, AWarmStartBeginsWhereTheOtherRunEnded) {
  const Dataset train = testing::SmallDense(3000, 20, 6);
  TrainConfig c;
  c.algorithm = "mbsgd";
  ThreadPool pool(2);
  CpuBackend cold_backend(pool);
  TrainOptions keep;
  keep.keep_final_state = true;
  const TrainResult cold = Train(train, nullptr, c, cold_backend, keep);
  ASSERT_FALSE(cold.final_state.shared.empty());
  CpuBackend warm_backend(pool);
  TrainOptions from;
  from.warm_start = &cold.final_state;
  const TrainResult warm = Train(train, nullptr, c, warm_backend, from);
  EXPECT_LT(warm.epochs.front().train.objective, cold.epochs.front().train.objective);
  EXPECT_LT(warm.epochs.front().train.objective, cold.epochs.back().train.objective * 1.02);
  EXPECT_LE(warm.epochs.size(), cold.epochs.size());
}

}  // namespace
}  // namespace pimopt
