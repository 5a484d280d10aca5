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
// most recent setting of the same backend, algorithm and workers ended with (fewer epochs on the same problem); a
// setting with no such predecessor trains from zero exactly as without warm starts.
TEST(Tune, WarmStartsFromTheLatestFittingSettingsFolds) {
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
  // Settings: (auto, ma), (auto, mbsgd), (auto, ma), (auto, mbsgd): the first of each algorithm trains from zero,
  // the second starts from the first's folds although another algorithm ran between them.
  for (size_t i = 0; i < 2; ++i) EXPECT_EQ(warm.trials[i].cv.mean.objective, cold.trials[i].cv.mean.objective) << i;
  for (size_t i = 2; i < 4; ++i) {
    EXPECT_NE(warm.trials[i].cv.mean.objective, cold.trials[i].cv.mean.objective) << i;
    EXPECT_NEAR(warm.trials[i].cv.mean.accuracy, cold.trials[i].cv.mean.accuracy, 0.01) << i;
  }

  // The same setting twice in a row: the second starts from the first's final models.
  RunConfig config = base;
  ResolveRunConfig(config, 1);
  FoldStates states;
  const CrossValidation first = CrossValidate(config, train, pool, {}, &states);
  ASSERT_EQ(states.sets.size(), 1u);
  ASSERT_EQ(states.sets[0].per_fold.size(), 3u);
  EXPECT_EQ(states.sets[0].algorithm, "mbsgd");
  const FoldStates after_first = states;
  const CrossValidation second = CrossValidate(config, train, pool, {}, &states);
  EXPECT_NE(second.mean.objective, first.mean.objective);  // another start, another path
  EXPECT_NEAR(second.mean.accuracy, first.mean.accuracy, 0.01);
  ASSERT_EQ(states.sets.size(), 1u);  // the run's states replace those of its kind
  // A state of another algorithm is not used: the run equals a cold one, and its states are kept beside.
  FoldStates foreign = after_first;
  foreign.sets[0].algorithm = "ma";
  const CrossValidation ignored = CrossValidate(config, train, pool, {}, &foreign);
  EXPECT_EQ(ignored.mean.objective, first.mean.objective);
  ASSERT_EQ(foreign.sets.size(), 2u);
  EXPECT_EQ(foreign.sets[0].algorithm, "ma");
  EXPECT_EQ(foreign.sets[1].algorithm, "mbsgd");  // the most recent last
  // Folds of another seed are not used either, and the states of the old folds are dropped.
  FoldStates other_folds = after_first;
  other_folds.folds[0] = other_folds.folds[0] == 0 ? 1 : 0;
  const CrossValidation unrelated = CrossValidate(config, train, pool, {}, &other_folds);
  EXPECT_EQ(unrelated.mean.objective, first.mean.objective);
  EXPECT_EQ(other_folds.sets.size(), 1u);
}

// A warm start changes a setting's cost, never its score: where the run's end depends on its start (a given
// learning rate for given epochs) or the state is another objective's (a fitted bias for a --no-bias setting, which
// newton kept and does not train), the setting trains from zero. Both scored settings wrongly (0.71 and 0.64 where
// a cold start scores 0.92 and 0.91), and the first picked the wrong learning rate.
TEST(Tune, AWarmStartNeverChangesWhatASettingScores) {
  ThreadPool pool(2);
  const Dataset train = testing::SmallDense(900, 10, 4);
  auto scores_equal = [&](const std::string& algo, const std::vector<GridAxis>& grid) {
    RunConfig base;
    SetParam(base, "data", "dense:rows=900,features=10,seed=4");
    SetParam(base, "algo", algo);
    SetParam(base, "cv", "3");
    SetParam(base, "threads", "2");
    if (algo == "sgd") SetParam(base, "epochs", "1");
    const TuneResult warm = Tune(GridSettings(base, grid), TuneMetric::kAccuracy, train, pool, {}, true);
    const TuneResult cold = Tune(GridSettings(base, grid), TuneMetric::kAccuracy, train, pool, {}, false);
    ASSERT_EQ(warm.trials.size(), cold.trials.size());
    for (size_t i = 0; i < warm.trials.size(); ++i) {
      EXPECT_EQ(warm.trials[i].cv.mean.accuracy, cold.trials[i].cv.mean.accuracy) << algo << " " << i;
      EXPECT_EQ(warm.trials[i].cv.mean.objective, cold.trials[i].cv.mean.objective) << algo << " " << i;
    }
  };
  scores_equal("sgd", {{"lr", {"0.5", "0.002"}}});
  scores_equal("newton", {{"no-bias", {"false", "true"}}});
  scores_equal("cocoa", {{"model", {"svm"}}, {"no-bias", {"false", "true"}}});
}

// A dual method's state belongs to its objective (its model is w(beta) for one L2 strength): on the CPU backend a
// CoCoA fold warm-starts from another L2's fold by moving its duals (LIBLINEAR's warm start along C); another loss
// or other costs start from zero.
TEST(Tune, CocoaWarmStartsAlongTheRegularizationPathOfTheSameLoss) {
  RunConfig base;
  SetParam(base, "data", "dense:rows=900,features=10,seed=4");
  SetParam(base, "algo", "cocoa");
  SetParam(base, "cv", "3");
  SetParam(base, "threads", "2");
  ThreadPool pool(2);
  const Dataset train = testing::SmallDense(900, 10, 4);
  const std::vector<GridAxis> grid = {{"reg", {"1e-2", "1e-3", "1e-3"}}, {"model", {"lr", "svm"}}};
  const TuneResult warm = Tune(GridSettings(base, grid), TuneMetric::kAccuracy, train, pool, {}, true);
  const TuneResult cold = Tune(GridSettings(base, grid), TuneMetric::kAccuracy, train, pool, {}, false);
  ASSERT_EQ(warm.trials.size(), 6u);
  // (1e-2, lr), (1e-2, svm): the first of each loss, cold (the same bits as without warm starts).
  for (size_t i = 0; i < 2; ++i) EXPECT_EQ(warm.trials[i].cv.mean.objective, cold.trials[i].cv.mean.objective) << i;
  // Then 1e-3 from 1e-2 (the duals moved) and 1e-3 again (the same objective): each from its own loss's folds.
  for (size_t i = 2; i < 6; ++i) {
    EXPECT_NE(warm.trials[i].cv.mean.objective, cold.trials[i].cv.mean.objective) << i;
    EXPECT_NEAR(warm.trials[i].cv.mean.accuracy, cold.trials[i].cv.mean.accuracy, 0.01) << i;
    EXPECT_NEAR(warm.trials[i].cv.mean.objective, cold.trials[i].cv.mean.objective,
                0.02 * cold.trials[i].cv.mean.objective) << i;  // both certified within --tol 1%
  }
  // Other class costs: another objective than any state's, a cold start.
  RunConfig weighted = base;
  SetParam(weighted, "class-weights", "2:1");
  ResolveRunConfig(weighted, 1);
  RunConfig plain = base;
  ResolveRunConfig(plain, 1);
  FoldStates states;
  CrossValidate(plain, train, pool, {}, &states);
  const CrossValidation from_other_costs = CrossValidate(weighted, train, pool, {}, &states);
  const CrossValidation alone = CrossValidate(weighted, train, pool, {}, nullptr);
  EXPECT_EQ(from_other_costs.mean.objective, alone.mean.objective);
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

// A cross-validation's folds score only their final model: with evaluate_test_every_epoch off, the test set is
// scored after the run's last epoch alone (whatever ends the run), to the same metrics and the same model.
TEST(Tune, AFoldScoresItsTestRowsOnceWithTheSameResult) {
  const Dataset train = testing::SmallDense(2000, 12, 3), test = testing::SmallDense(400, 12, 9);
  for (const char* algorithm : {"mbsgd", "cocoa"}) {
    TrainConfig c;
    c.algorithm = algorithm;
    ThreadPool pool(2);
    CpuBackend every_backend(pool), last_backend(pool);
    TrainOptions every, last;
    every.evaluate_train = last.evaluate_train = false;
    last.evaluate_test_every_epoch = false;
    const TrainResult a = Train(train, &test, c, every_backend, every);
    const TrainResult b = Train(train, &test, c, last_backend, last);
    ASSERT_GT(a.epochs.size(), 2u) << algorithm;
    ASSERT_EQ(a.epochs.size(), b.epochs.size()) << algorithm;
    for (size_t e = 0; e + 1 < b.epochs.size(); ++e) EXPECT_FALSE(b.epochs[e].test.has_value()) << algorithm << e;
    ASSERT_TRUE(b.epochs.back().test.has_value());
    EXPECT_EQ(b.epochs.back().test->accuracy, a.epochs.back().test->accuracy) << algorithm;
    EXPECT_EQ(b.epochs.back().test->objective, a.epochs.back().test->objective) << algorithm;
    EXPECT_EQ(b.model.weights, a.model.weights) << algorithm;
  }
}

}  // namespace
}  // namespace pimopt
