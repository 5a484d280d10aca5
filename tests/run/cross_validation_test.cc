// --cv K: stratified seeded folds, one training per fold on the run's backend, the same scores on any thread count,
// and the rules that refuse it (MPI, too few rows of a class).
#include "pimopt/run/cross_validation.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "pimopt/collectives/communicator.h"
#include "pimopt/core/error.h"
#include "pimopt/data/sources.h"
#include "pimopt/run/pipeline.h"

namespace pimopt {
namespace {

TEST(StratifiedFolds, EveryFoldGetsItsShareOfEachClassAndTheSeedDecides) {
  std::vector<float> labels;
  for (int i = 0; i < 103; ++i) labels.push_back(i % 10 < 3 ? 1.0f : -1.0f);  // 33 positives, 70 negatives
  const auto folds = StratifiedFolds(labels, 4, 7);
  ASSERT_EQ(folds.size(), labels.size());
  for (uint32_t f = 0; f < 4; ++f) {
    uint64_t pos = 0, neg = 0;
    for (size_t i = 0; i < labels.size(); ++i) {
      if (folds[i] != f) continue;
      (labels[i] > 0 ? pos : neg)++;
    }
    EXPECT_TRUE(pos == 8 || pos == 9) << "fold " << f << ": " << pos;    // 33 / 4
    EXPECT_TRUE(neg == 17 || neg == 18) << "fold " << f << ": " << neg;  // 70 / 4
  }
  EXPECT_EQ(StratifiedFolds(labels, 4, 7), folds);
  EXPECT_NE(StratifiedFolds(labels, 4, 8), folds);
  const auto three = StratifiedFolds(labels, 3, 7);
  EXPECT_EQ(*std::max_element(three.begin(), three.end()), 2u);
}

RunConfig SmallRun(const std::string& backend, int threads) {
  RunConfig config;
  SetParam(config, "data", "dense:rows=800,features=20,separation=0.3,seed=4");
  SetParam(config, "algo", "ma");
  SetParam(config, "workers", "4");
  SetParam(config, "epochs", "3");
  SetParam(config, "backend", backend);
  SetParam(config, "threads", std::to_string(threads));
  SetParam(config, "cv", "5");
  SetParam(config, "quiet", "true");
  ResolveRunConfig(config, 1);
  return config;
}

TEST(CrossValidation, FoldsCoverTheTrainingSetAndScoresDoNotDependOnThreads) {
  for (const std::string backend : {"cpu", "pim"}) {
    std::vector<CrossValidation> runs;
    for (int threads : {1, 2}) {
      const RunConfig config = SmallRun(backend, threads);
      uint32_t calls = 0;
      RunCallbacks callbacks;
      // In fold order, also where the folds train at once (on the CPU backend with 2 threads: one per thread).
      callbacks.on_fold = [&](uint32_t fold, const Metrics&) { EXPECT_EQ(fold, calls++) << backend; };
      const RunOutcome outcome = RunTraining(config, SingleProcess(), "test", callbacks);
      ASSERT_TRUE(outcome.cross_validation.has_value());
      const CrossValidation& cv = *outcome.cross_validation;
      EXPECT_EQ(calls, 5u);
      ASSERT_EQ(cv.per_fold.size(), 5u);
      uint64_t rows = 0;
      double lo = 1, hi = 0;
      for (const Metrics& m : cv.per_fold) {
        rows += m.rows;
        lo = std::min(lo, m.accuracy);
        hi = std::max(hi, m.accuracy);
      }
      EXPECT_EQ(rows, 800u);  // every training row held out exactly once
      EXPECT_GE(cv.mean.accuracy, lo);
      EXPECT_LE(cv.mean.accuracy, hi);
      EXPECT_GT(cv.mean.accuracy, 0.7) << backend;
      EXPECT_GE(cv.stddev.accuracy, 0.0);
      // The cross-validated accuracy estimates the test accuracy of the final model.
      EXPECT_NEAR(cv.mean.accuracy, outcome.result.epochs.back().test->accuracy, 0.06) << backend;
      EXPECT_TRUE(outcome.report.contains("cross_validation"));
      EXPECT_EQ(outcome.report["cross_validation"]["per_fold"].size(), 5u);
      runs.push_back(cv);
    }
    for (size_t f = 0; f < 5; ++f) {
      EXPECT_EQ(runs[0].per_fold[f].accuracy, runs[1].per_fold[f].accuracy) << backend << " fold " << f;
      EXPECT_EQ(runs[0].per_fold[f].auc, runs[1].per_fold[f].auc) << backend << " fold " << f;
    }
  }
}

// A fold whose training fails, while other folds train at once on other threads, fails the cross-validation with
// that error on the calling thread (the lowest such fold's), on every thread count.
TEST(CrossValidation, AFailingFoldFailsItWithItsError) {
  for (int threads : {1, 2}) {
    RunConfig config = SmallRun("cpu", threads);
    SetParam(config, "lr", "3e38");  // overflows float in every fold
    SetParam(config, "reg", "0");
    SetParam(config, "lr-schedule", "constant");
    ResolveRunConfig(config, 1);
    ThreadPool pool(threads);
    const Dataset train = LoadDataset("dense:rows=800,features=20,separation=0.3,seed=4", {});
    try {
      CrossValidate(config, train, pool);
      ADD_FAILURE() << "no error with " << threads << " threads";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("training diverged"), std::string::npos) << e.what();
    }
  }
}

TEST(CrossValidation, RefusedWhereItCannotRun) {
  RunConfig config;
  SetParam(config, "data", "dense:rows=600,features=5");
  SetParam(config, "algo", "ma");
  SetParam(config, "workers", "2");
  SetParam(config, "cv", "3");
  try {
    ResolveRunConfig(config, 2);
    FAIL() << "--cv accepted under MPI";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("--cv"), std::string::npos) << e.what();
  }
  RunConfig tiny;
  SetParam(tiny, "data", "dense:rows=40,features=5");
  SetParam(tiny, "cv", "30");
  SetParam(tiny, "quiet", "true");
  ResolveRunConfig(tiny, 1);
  try {
    RunTraining(tiny, SingleProcess(), "test");
    FAIL() << "30 folds accepted for 40 rows";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("rows of each class"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace pimopt
