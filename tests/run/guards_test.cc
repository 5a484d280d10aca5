// No silent wrong answer from tuning, preprocessing, the default method and its stopping rules: each test here is a
// defect a user probe found (docs/reliability.md "No silent wrong answer"), at the level where a user meets it.
#include <gtest/gtest.h>

#include <cmath>

#include "pimopt/algorithms/checkpoint.h"
#include "pimopt/algorithms/duality_gap.h"
#include "pimopt/backends/registry.h"
#include "pimopt/core/error.h"
#include "pimopt/core/rng.h"
#include "pimopt/data/sources.h"
#include "pimopt/data/transform.h"
#include "pimopt/model/metrics.h"
#include "pimopt/run/cross_validation.h"
#include "pimopt/run/pipeline.h"
#include "pimopt/run/report.h"
#include "pimopt/run/tune.h"
#include "test_util.h"

namespace pimopt {
namespace {

using Flags = std::vector<std::pair<std::string, std::string>>;

RunConfig ConfigOf(const Flags& flags) {
  RunConfig config;
  for (const auto& [name, value] : flags) SetParam(config, name, value);
  return config;
}

// Trains on in-memory data as the Python package does (scaling, checks and all).
RunOutcome TrainArrays(const Flags& flags, Dataset train, std::optional<Dataset> test = std::nullopt) {
  RunConfig config = ConfigOf(flags);
  ResolveRunConfig(config, 1, DataOrigin::kInMemory);
  ThreadPool pool(1);
  const RunData data = PrepareRunData(config, std::move(train), std::move(test));
  std::unique_ptr<IBackend> backend = MakeBackend(config, pool);
  return TrainAndEvaluate(config, data, *backend, SingleProcess(), pool, {});
}

std::string ConfigErrorOf(const std::function<void()>& run) {
  try {
    run();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

// A training set of one class trains a model that predicts it everywhere, at a training accuracy of 1: the run says
// so (it was silent).
TEST(Guards, ATrainingSetOfOneClassIsSaid) {
  RunConfig config = ConfigOf({{"threads", "1"}});
  ResolveRunConfig(config, 1, DataOrigin::kInMemory);
  const Dataset both = testing::SmallDense(50, 3, 2);
  std::vector<uint32_t> positives;
  for (uint32_t i = 0; i < both.num_rows(); ++i) {
    if (both.labels()[i] > 0) positives.push_back(i);
  }
  const RunData one = PrepareRunData(config, both.SelectRows(positives), std::nullopt);
  ASSERT_EQ(one.notes.size(), 1u);
  EXPECT_NE(one.notes[0].find("every training row is positive"), std::string::npos) << one.notes[0];
  EXPECT_TRUE(PrepareRunData(config, both, std::nullopt).notes.empty());
}

// Cross-validation scales each fold by its own training rows: a held-out row's extreme value shaped the whole set's
// ranges, which shrank the other rows' signal feature a million times, and its fold then scored a model the rows
// alone would not train (0.5 instead of 1.0 here).
TEST(Guards, CrossValidationScalesEachFoldByItsOwnTrainingRows) {
  const Dataset base = testing::SmallDense(300, 3, 5);
  Dataset data(Storage::kDense, 2);
  for (uint32_t i = 0; i < base.num_rows(); ++i) {
    const float y = base.labels()[i];
    const float signal = i == 0 ? 1e6f : (y > 0 ? 0.8f : 0.2f) + 0.1f * base.dense_row(i)[0];
    data.AppendDenseRow(std::vector<float>{signal, base.dense_row(i)[1]}, i == 0 ? 1.0f : y);
  }
  RunConfig config = ConfigOf({{"threads", "1"}, {"cv", "5"}});
  ResolveRunConfig(config, 1, DataOrigin::kInMemory);
  ThreadPool pool(1);
  const RunData prepared = PrepareRunData(config, data, std::nullopt);
  const CrossValidation cv = CrossValidate(config, prepared.train, pool, {});
  const uint32_t fold_of_row_0 = CheckCrossValidation(config, prepared.train)[0];
  EXPECT_GT(cv.per_fold[fold_of_row_0].accuracy, 0.95);
}

// What the run found that its user must know is said after it (RunOutcome::notes, the report's "notes"): a saved
// model whose folded scaling costs its scores their precision (a feature at 1e5 with a range of 1: predict and
// liblinear-predict disagreed with the run's test metrics on 15 of 2,000 rows, silently), and features the PIM
// backend clipped to [-1, 1] (--scale none: test accuracy 0.63 against the CPU backend's 0.90, silently).
TEST(Guards, WhatTheRunCannotDeliverIsSaid) {
  auto offset_data = [](float offset) {
    const Dataset base = testing::SmallDense(400, 3, 8);
    Dataset d(Storage::kDense, 3);
    for (uint32_t i = 0; i < base.num_rows(); ++i) {
      std::vector<float> row(base.dense_row(i), base.dense_row(i) + 3);
      row[0] = offset + (base.labels()[i] > 0 ? 0.7f : 0.3f) + 0.2f * row[0];
      d.AppendDenseRow(row, base.labels()[i]);
    }
    return d;
  };
  auto notes_of = [](const RunOutcome& out) {
    std::string all;
    for (const std::string& note : out.notes) all += note + "\n";
    for (const auto& note : out.report.at("notes")) all += note.get<std::string>() + "\n";
    return all;
  };
  const std::string far = notes_of(TrainArrays({{"threads", "1"}}, offset_data(1e5f)));
  EXPECT_NE(far.find("feature 1 lies in [100000."), std::string::npos) << far;
  EXPECT_NE(far.find("-fold in single precision"), std::string::npos) << far;
  EXPECT_EQ(notes_of(TrainArrays({{"threads", "1"}}, offset_data(1000))), "");  // 1000 over a range of 1: 2^10
  const Dataset wide = offset_data(3);                                          // features beyond [-1, 1], unscaled
  const std::string clipped = notes_of(TrainArrays(
      {{"threads", "1"}, {"backend", "pim"}, {"algo", "ma"}, {"workers", "4"}, {"epochs", "1"}, {"scale", "none"}},
      wide));
  EXPECT_NE(clipped.find("training values lay beyond and were clipped"), std::string::npos) << clipped;
  EXPECT_EQ(notes_of(TrainArrays(
                {{"threads", "1"}, {"backend", "pim"}, {"algo", "ma"}, {"workers", "4"}, {"epochs", "1"}}, wide)),
            "");  // scaled to [0, 1]: nothing clipped
}

// --positive-classes on data labelled +-1 did nothing, silently (and a resume with another value was refused).
TEST(Guards, PositiveClassesOnDataLabelledPlusMinusOneIsRefused) {
  testing::TempDir dir;
  testing::WriteText(dir.Path("d.svm"), "1 1:0.5\n-1 2:1\n1 1:1\n-1 2:0.5\n");
  RunConfig config = ConfigOf({{"threads", "1"}, {"data", dir.Path("d.svm")}, {"positive-classes", "1"}});
  ResolveRunConfig(config, 1);
  ThreadPool pool(1);
  EXPECT_NE(ConfigErrorOf([&] {
              LoadRunData(config, SingleProcess(), pool);
            }).find("--positive-classes: applies to data labelled by class"),
            std::string::npos);
  RunConfig idx = ConfigOf({{"threads", "1"}, {"data", "fashion-mnist:test"}, {"positive-classes", "1"}});
  ResolveRunConfig(idx, 1);
  EXPECT_EQ(LoadRunData(idx, SingleProcess(), pool).train.CountPositives(), 1000u);  // class 1's 1,000 rows
}

// ---- the run header

// The header speaks of threads before the backend exists, from the backend's declared trait: every backend's
// instances must answer as it declares (the PIM backend's header claimed evaluations beside cocoa's epochs).
TEST(Guards, EveryBackendRunsItsWorkersAsItDeclares) {
  ThreadPool pool(2);
  for (const BackendRegistration* registration : RegisteredBackends()) {
    const std::unique_ptr<IBackend> backend = registration->make(pool, registration->default_options());
    EXPECT_EQ(backend->RunsAWorkerOnOneThread(), registration->traits.runs_a_worker_on_one_thread)
        << registration->traits.name;
  }
}

// ---- tune

// The grid's settings and the training rows, loaded as `pimopt tune` loads them (with the first setting).
struct TuneInputs {
  std::vector<GridSetting> settings;
  RunData data;
};
TuneInputs LoadTuneInputs(const Flags& flags, const std::string& grid, ThreadPool& pool) {
  const RunConfig base = ConfigOf(flags);
  TuneInputs in{GridSettings(base, ParseGrid(grid, base)), {}};
  GridSetting first = in.settings.front();
  ResolveGridSetting(first);
  in.data = LoadRunData(first.config, SingleProcess(), pool);
  return in;
}

// With --seed in the grid each setting deals other folds: a fold warm-started from the previous setting's fold of the
// same number was trained on rows this fold holds out. On pure-noise labels that climbed 0.52 -> 0.73 -> 0.84.
TEST(Guards, TuneNeverWarmStartsAFoldFromRowsItHoldsOut) {
  for (const std::string algo : {"cocoa", "mbsgd"}) {
    ThreadPool pool(1);
    const TuneInputs in = LoadTuneInputs({{"data", "dense:rows=300,features=400,noise=0.5"}, {"algo", algo},
                                          {"cv", "3"}, {"threads", "1"}, {"epochs", "30"}},
                                         "seed=1,2,3", pool);
    const TuneResult warm = Tune(in.settings, TuneMetric::kAccuracy, in.data.train, pool, {}, true);
    const TuneResult cold = Tune(in.settings, TuneMetric::kAccuracy, in.data.train, pool, {}, false);
    ASSERT_EQ(warm.trials.size(), 3u);
    for (size_t i = 0; i < warm.trials.size(); ++i) {
      EXPECT_EQ(warm.trials[i].cv.mean.accuracy, cold.trials[i].cv.mean.accuracy) << algo << " setting " << i;
      EXPECT_LT(warm.trials[i].cv.mean.accuracy, 0.65) << algo << ": noise labels cannot be predicted";
    }
  }
}

// A setting with the same folds still warm-starts (the path of regularization strengths, under the plateau schedule,
// whose end does not depend on its start; a grid over --lr trains each setting from zero: Tune.AWarmStartNever
// ChangesWhatASettingScores).
TEST(Guards, TuneStillWarmStartsTheSameFolds) {
  ThreadPool pool(1);
  const TuneInputs in = LoadTuneInputs({{"data", "dense:rows=400,features=20,seed=4"},
                                        {"algo", "mbsgd"},
                                        {"cv", "3"},
                                        {"threads", "1"},
                                        {"epochs", "2"}},
                                       "reg=1e-2,1e-3", pool);
  const TuneResult warm = Tune(in.settings, TuneMetric::kAccuracy, in.data.train, pool, {}, true);
  const TuneResult cold = Tune(in.settings, TuneMetric::kAccuracy, in.data.train, pool, {}, false);
  EXPECT_EQ(warm.trials[0].cv.mean.objective, cold.trials[0].cv.mean.objective);  // nothing to start from
  EXPECT_NE(warm.trials[1].cv.mean.objective, cold.trials[1].cv.mean.objective);  // started from the first's folds
}

// Every data parameter that changes the result is refused in the grid, naming it: tune reads the data once, so each
// setting would be scored on the first setting's data (and the final model trained on it).
TEST(Guards, TuneRefusesDataParametersInTheGrid) {
  const std::map<std::string, std::string> value{
      {"test-fraction", "0.2"}, {"scale", "none"}, {"storage", "sparse"}, {"positive-classes", "1"}};
  int checked = 0;
  for (const auto& e : RunParams().entries()) {
    if (e.info.group != kDataParamGroup || e.info.effect != ParamEffect::kResult) continue;
    ASSERT_TRUE(value.count(e.info.name)) << "a value for the data parameter --" << e.info.name;
    const std::string error =
        ConfigErrorOf([&] { ParseGrid(StrCat(e.info.name, "=", value.at(e.info.name)), RunConfig{}); });
    EXPECT_NE(error.find("--grid: --" + e.info.name + " is a data parameter"), std::string::npos) << error;
    ++checked;
  }
  EXPECT_EQ(checked, 4);
}

// A grid value that a later setting refuses is reported before any setting is cross-validated.
TEST(Guards, TuneChecksTheWholeGridBeforeTheFirstSetting) {
  ThreadPool pool(1);
  // GA-SGD's global batch of 100 rows does not fit a training part of 80 rows.
  const TuneInputs in = LoadTuneInputs(
      {{"data", "dense:rows=120,features=8"}, {"algo", "ga"}, {"cv", "3"}, {"threads", "1"}, {"epochs", "2"}},
      "batch=8,100", pool);
  int trials = 0;
  const std::string error = ConfigErrorOf(
      [&] { Tune(in.settings, TuneMetric::kAccuracy, in.data.train, pool, [&](const TuneTrial&) { ++trials; }); });
  EXPECT_NE(error.find("(grid setting batch=100)"), std::string::npos) << error;
  EXPECT_EQ(trials, 0);
}

// ---- preprocessing

Dataset WideFeatureData(uint64_t rows, float wide) {
  std::vector<float> values, labels;
  for (uint64_t i = 0; i < rows; ++i) {
    const float y = i % 2 == 0 ? 1.0f : -1.0f;
    values.push_back(i % 3 == 0 ? wide : -wide);           // a feature whose range exceeds float's
    values.push_back(y * (1.0f + 0.01f * (i % 7)));         // the informative one
    labels.push_back(y);
  }
  return Dataset::FromDense(2, std::move(values), std::move(labels));
}

// Min-max scaling of a feature whose range exceeds float's gave NaN features; the SVM reported "converged, gap 0" and
// its model predicted at chance.
TEST(Guards, MinMaxScalingOfAFeatureWiderThanFloatStaysFinite) {
  for (const std::string model : {"svm", "lr"}) {
    const RunOutcome out = TrainArrays({{"model", model}, {"threads", "1"}}, WideFeatureData(200, 3e38f));
    for (float w : out.result.model.weights) EXPECT_TRUE(std::isfinite(w)) << model;
    EXPECT_TRUE(std::isfinite(out.result.model.bias)) << model;
    EXPECT_GT(out.result.epochs.back().train.accuracy, 0.95) << model;
  }
  Dataset data = WideFeatureData(10, 3e38f);
  FeatureScaler::Fit(data).Apply(data);
  for (uint64_t i = 0; i < data.num_rows(); ++i) {
    const float x = data.dense_row(i)[0];
    EXPECT_TRUE(x == 0.0f || std::fabs(x - 1.0f) < 1e-6f) << x;
  }
}

// Training rows of 8 dense features: feature 1 in [100, 102] carries the class, features 2-8 lie in [5, 6]. Test
// rows hold feature 1 alone (the others are zeros): `features` of them, stored `storage`.
Dataset ShiftedFeatureData(size_t rows, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> values, labels;
  for (size_t i = 0; i < rows; ++i) {
    const float y = i % 2 == 0 ? 1.0f : -1.0f;
    values.push_back(101.0f + 0.5f * y + static_cast<float>(1.2 * rng.Uniform() - 0.6));
    for (int j = 1; j < 8; ++j) values.push_back(static_cast<float>(5.0 + rng.Uniform()));
    labels.push_back(y);
  }
  return Dataset::FromDense(8, std::move(values), std::move(labels));
}
Dataset FirstFeatureOnly(const Dataset& data, size_t features, Storage storage) {
  Dataset out(Storage::kDense, features);
  std::vector<float> row(features, 0.0f);
  for (size_t i = 0; i < data.num_rows(); ++i) {
    row[0] = data.dense_row(i)[0];
    out.AppendDenseRow(row, data.labels()[i]);
  }
  return storage == Storage::kSparse ? out.ToSparse() : out;
}

// The test set's zeros were scaled as the training minimum, not as zeros, when the test set was stored sparse (the
// training set dense) or had fewer features than the training set: the reported test metrics differed from what the
// saved model predicts on the same rows (test accuracy 0.59 against 0.78 in the probe).
TEST(Guards, ATestSetStoredSparseOrWithFewerFeaturesIsScaledAsTheTrainingSetsZerosWere) {
  const Dataset train = ShiftedFeatureData(200, 1), rows = ShiftedFeatureData(100, 2);
  const Dataset reference = FirstFeatureOnly(rows, 8, Storage::kDense);
  const FeatureScaler scaler = FeatureScaler::Fit(train);
  Dataset scaled_reference = reference;
  scaler.Apply(scaled_reference);
  for (const auto& [features, storage] :
       {std::pair{8, Storage::kSparse}, {1, Storage::kDense}, {1, Storage::kSparse}}) {
    Dataset test = FirstFeatureOnly(rows, features, storage);
    scaler.Apply(test);
    ASSERT_FALSE(test.is_sparse());
    ASSERT_EQ(test.num_features(), 8u);
    for (size_t i = 0; i < test.num_rows(); ++i) {
      for (size_t j = 0; j < 8; ++j) ASSERT_EQ(test.dense_row(i)[j], scaled_reference.dense_row(i)[j]) << i << " " << j;
    }
  }
  // Through a run: the same test metrics for each form of the rows, and the ones the saved model predicts.
  const RunOutcome dense = TrainArrays({{"threads", "1"}, {"epochs", "5"}}, train, reference);
  const LinearModel& folded = dense.result.model;  // the scaling folded in: it reads raw rows
  const Metrics predicted = Evaluate(folded, reference, Objective{});
  EXPECT_NEAR(dense.result.epochs.back().test->accuracy, predicted.accuracy, 1e-12);
  for (const auto& [features, storage] : {std::pair{8, Storage::kSparse}, {1, Storage::kDense}}) {
    const RunOutcome other =
        TrainArrays({{"threads", "1"}, {"epochs", "5"}}, train, FirstFeatureOnly(rows, features, storage));
    EXPECT_EQ(other.result.epochs.back().test->accuracy, dense.result.epochs.back().test->accuracy) << features;
    EXPECT_EQ(other.result.epochs.back().test->log_loss, dense.result.epochs.back().test->log_loss) << features;
  }
}

// Storing such a test set dense must fit: a sparse test set of millions of rows over a dense training set's many
// features is refused naming --scale and the ways out, before any allocation (480 GB here).
TEST(Guards, ATestSetTooLargeToScaleDenseIsRefusedBeforeItIsAllocated) {
  constexpr size_t kFeatures = 30000;
  Dataset train(Storage::kDense, kFeatures);
  std::vector<float> row(kFeatures, 2.0f);
  for (int i = 0; i < 4; ++i) {
    row[0] = static_cast<float>(i);
    train.AppendDenseRow(row, i % 2 ? 1.0f : -1.0f);
  }
  Dataset test(Storage::kSparse, kFeatures);
  test.Reserve(4000000, 0);
  for (int i = 0; i < 4000000; ++i) test.AppendSparseRow({}, {}, 1.0f);
  test.source = "big_test.svm";
  const FeatureScaler scaler = FeatureScaler::Fit(train);
  try {
    scaler.Apply(test);
    FAIL() << "scaled";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("--scale: storing big_test.svm dense (4000000 rows)"), std::string::npos) << what;
    EXPECT_NE(what.find("--storage sparse"), std::string::npos) << what;
  }
  EXPECT_TRUE(test.is_sparse());
}

TEST(Guards, ScalingThatCannotBeRepresentedIsRefusedNamingTheFeature) {
  // A range of a few subnormals has no finite float scale.
  EXPECT_NE(ConfigErrorOf([] { TrainArrays({{"threads", "1"}}, WideFeatureData(20, 1e-45f)); })
                .find("--scale: feature 1's training range"),
            std::string::npos);
  // A test value far beyond the training range overflows once scaled: refused naming the test row and feature.
  Dataset train = WideFeatureData(20, 1e-3f);
  Dataset test = WideFeatureData(4, 3e38f);
  try {
    TrainArrays({{"threads", "1"}}, std::move(train), std::move(test));
    ADD_FAILURE() << "a non-finite scaled test value was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("the test set: row 1, feature 1 is inf"), std::string::npos) << e.what();
  }
}

// ---- the default method's stopping rules

TEST(Guards, AllZeroSampleWeightsAreRefused) {
  Dataset train = testing::SmallDense(64, 4, 2);
  train.set_weights(std::vector<float>(64, 0.0f));
  EXPECT_NE(ConfigErrorOf([&] { TrainArrays({{"threads", "1"}}, train); }).find("sample_weight: every training row"),
            std::string::npos);
}

TEST(Guards, ToleranceZeroStillReportsTheLastEpochsGap) {
  for (const std::string algo : {"cocoa", "mbsgd"}) {
    const RunOutcome out = TrainArrays({{"algo", algo}, {"tol", "0"}, {"epochs", "3"}, {"threads", "1"}},
                                       testing::SmallDense(200, 6, 3));
    ASSERT_EQ(out.result.epochs.size(), 3u) << algo;
    EXPECT_TRUE(out.result.epochs.back().gap.available) << algo;
    EXPECT_TRUE(out.report["stopped"]["relative_duality_gap"].is_number()) << algo;
  }
}

TEST(Guards, ResumingARunThatStoppedOnItsCertificateIsRefused) {
  testing::TempDir dir;
  const Flags flags{{"data", "dense:rows=300,features=10,seed=5"}, {"checkpoint", dir.Path("run.ckpt")},
                    {"threads", "1"}, {"out", dir.Path("model.txt")}};
  const RunOutcome first = RunTraining(ConfigOf(flags), SingleProcess(), "test");
  ASSERT_TRUE(first.result.stopped_on_gap);
  const std::string model = testing::ReadText(dir.Path("model.txt"));
  Flags resume = flags;
  resume.emplace_back("resume", "true");
  const std::string error = ConfigErrorOf([&] { RunTraining(ConfigOf(resume), SingleProcess(), "test"); });
  EXPECT_NE(error.find("last certificate already meets --tol"), std::string::npos) << error;
  EXPECT_EQ(testing::ReadText(dir.Path("model.txt")), model);  // the output is not replaced
  // A lower --tol trains on from it.
  resume.emplace_back("tol", "0.0001");
  const RunOutcome more = RunTraining(ConfigOf(resume), SingleProcess(), "test");
  EXPECT_EQ(more.result.resumed_from_epoch, static_cast<int>(first.result.epochs.size()));
  EXPECT_TRUE(more.result.stopped_on_gap);
}

// ---- fixed-point limits of the PIM backend

TEST(Guards, ClassWeightsBeyondTheDualStepsFormatAreRefusedNamingThem) {
  const std::string error = ConfigErrorOf([] {
    RunTraining(ConfigOf({{"data", "dense:rows=64,features=4"}, {"backend", "pim"}, {"class-weights", "1e9:1"},
                          {"threads", "1"}, {"quiet", "true"}}),
                SingleProcess(), "test");
  });
  EXPECT_NE(error.find("--class-weights"), std::string::npos) << error;
  EXPECT_NE(error.find("--reg"), std::string::npos) << error;
}

// Saturating class weights kept CoCoA's PIM certificate far from --tol for all 1,000 epochs (objective 1.58 against
// the CPU's 0.98): the run now stops when its certificate stalls and says why.
TEST(Guards, AStalledCertificateStopsTheRunAndSaysWhy) {
  const RunOutcome out = RunTraining(ConfigOf({{"data", "dense:rows=64,features=4,seed=2"}, {"backend", "pim"},
                                               {"class-weights", "1e4:1"}, {"dpus", "2"}, {"threads", "1"},
                                               {"quiet", "true"}, {"no-train-metrics", "true"}}),
                                     SingleProcess(), "test");
  EXPECT_FALSE(out.result.converged);
  ASSERT_FALSE(out.result.stalled.empty());
  EXPECT_LT(out.result.epochs.size(), 1000u);
  EXPECT_NE(out.result.stalled.find("fixed point"), std::string::npos) << out.result.stalled;
  EXPECT_EQ(out.report["stopped"]["reason"], "stalled");
}

// The gap of dual iterates is not monotone. On digits at C = 93 (reg 1e-5) cocoa's gap wanders between 0.2 and 0.9
// for hundreds of epochs while its lows keep falling; the spaced checks of a run without train metrics once saw no
// new low over 136 epochs (3 checks) and called it stalled at epoch 476 (gap 76%), where checking as often as before
// reaches epoch 1,000 (gap 19%). A stall needs kStallChecks computed gaps as well as kStallEpochs epochs.
TEST(Guards, SpacedChecksOfANoisyGapAreNotAStall) {
  const RunOutcome out = RunTraining(ConfigOf({{"data", PIMOPT_TEST_DATA_DIR "/real/digits_train.svm"},
                                               {"model", "svm"}, {"reg", "1e-5"}, {"threads", "1"},
                                               {"quiet", "true"}, {"no-train-metrics", "true"}}),
                                     SingleProcess(), "test");
  EXPECT_TRUE(out.result.stalled.empty()) << out.result.stalled;
  EXPECT_EQ(out.result.epochs.size(), 1000u);
  EXPECT_LT(out.result.epochs.back().gap.relative(), 0.5);
}

// With no flags a run that stops on its certificate evaluates the training set where its stopping rule checks
// (spaced), every metric there: a run of 297 epochs evaluates fewer than half of them, stops at the epoch of the run
// with --no-train-metrics with its model, and --train-metrics-every-epoch evaluates every epoch (a CoCoA SVM's
// fashion-mnist run with no flags spent 9 of its 13 s on the metrics of its 552 epochs).
TEST(Guards, ACertifiedRunWithNoFlagsEvaluatesTheTrainingSetAtItsChecksOnly) {
  const Flags base{{"data", "dense:rows=3000,features=40,seed=4"},
                   {"model", "svm"},
                   {"reg", "3e-5"},
                   {"threads", "1"},
                   {"quiet", "true"}};
  auto with = [&](const Flags& more) {
    Flags flags = base;
    flags.insert(flags.end(), more.begin(), more.end());
    return RunTraining(ConfigOf(flags), SingleProcess(), "test");
  };
  const RunOutcome plain = with({});
  const RunOutcome none = with({{"no-train-metrics", "true"}});
  const RunOutcome every = with({{"train-metrics-every-epoch", "true"}});
  ASSERT_TRUE(plain.result.stopped_on_gap);
  ASSERT_GT(plain.result.epochs.size(), 128u);
  EXPECT_EQ(plain.result.epochs.size(), none.result.epochs.size());
  EXPECT_EQ(plain.result.model.weights, none.result.model.weights);
  size_t evaluated = 0;
  for (const EpochRecord& r : plain.result.epochs) {
    if (r.train.rows == 0) continue;
    ++evaluated;
    EXPECT_TRUE(std::isfinite(r.train.accuracy) && std::isfinite(r.train.auc)) << "epoch " << r.epoch;
  }
  EXPECT_LT(evaluated, plain.result.epochs.size() / 2);
  for (const EpochRecord& r : every.result.epochs) EXPECT_GT(r.train.rows, 0u) << "epoch " << r.epoch;
  const std::string error = ConfigErrorOf([&] {
    with({{"no-train-metrics", "true"}, {"train-metrics-every-epoch", "true"}});
  });
  EXPECT_EQ(error.rfind("--train-metrics-every-epoch", 0), 0u) << error;
}

// A target on the training set (no test set) is looked for in every epoch: a run with no flags keeps the training
// metrics of every epoch for it (spaced, a file of these rows reported epoch 315 for an accuracy first reached in
// epoch 176), and a run with --no-train-metrics, which cannot see it, says how many epochs went unmeasured.
TEST(Guards, ATargetOnTheTrainingSetIsLookedForInEveryEpoch) {
  const Dataset train = LoadDataset("dense:rows=3000,features=40,seed=4", {});
  const Flags base{{"model", "svm"}, {"reg", "3e-5"}, {"threads", "1"}, {"quiet", "true"}, {"target-accuracy", "0.59"}};
  auto target_of = [&](const Flags& more) {
    Flags flags = base;
    flags.insert(flags.end(), more.begin(), more.end());
    const RunOutcome out = TrainArrays(flags, train);
    const std::vector<TargetReached> targets = TimesToTargets(out.config, out.result);
    EXPECT_EQ(targets.size(), 1u);
    return targets.front();
  };
  const TargetReached plain = target_of({});
  const TargetReached every = target_of({{"train-metrics-every-epoch", "true"}});
  const TargetReached none = target_of({{"no-train-metrics", "true"}});
  ASSERT_TRUE(plain.reached && every.reached) << FormatTarget(plain) << " | " << FormatTarget(every);
  EXPECT_EQ(plain.set, "train");
  EXPECT_EQ(plain.epoch, every.epoch);
  EXPECT_EQ(plain.unmeasured_epochs, 0);
  // Without the training metrics the epochs around the first reach went unmeasured: the target is seen later or not
  // at all, and the run says why.
  EXPECT_GT(none.unmeasured_epochs, 0);
  EXPECT_TRUE(!none.reached || none.epoch > plain.epoch) << FormatTarget(none);
  EXPECT_NE(FormatTarget(none).find("may have reached it"), std::string::npos) << FormatTarget(none);
  EXPECT_EQ(FormatTarget(plain).find("may have reached"), std::string::npos) << FormatTarget(plain);
}

// ---- non-finite numbers where they change hands

TEST(Guards, AProjectionToTheLargestDpuCountIsFinite) {
  const RunOutcome out = RunTraining(ConfigOf({{"data", "dense:rows=64,features=4"}, {"backend", "pim"},
                                               {"algo", "ma"}, {"dpus", "2"}, {"epochs", "1"}, {"lr", "0.1"},
                                               {"project-dpus", "4294967295"}, {"threads", "1"}, {"quiet", "true"}}),
                                     SingleProcess(), "test");
  ASSERT_TRUE(out.projection);
  EXPECT_TRUE(out.projection->Timed());
  EXPECT_TRUE(std::isfinite(out.projection->epoch_s));
  EXPECT_GT(out.projection->launch_overhead_s, 0);
}

TEST(Guards, ACertificateIsNeverComputedFromANonFiniteObjective) {
  const Dataset data = testing::SmallDense(50, 4, 1);
  Objective objective;
  objective.l2 = 0.01;
  LinearModel model;
  model.weights.assign(4, 0.0f);
  const DualityGap gap = ComputeDualityGap(model, data, objective, NAN, nullptr, SingleProcess());
  EXPECT_FALSE(gap.available);
}

}  // namespace
}  // namespace pimopt
