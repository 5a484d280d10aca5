#include <gtest/gtest.h>

#include "pimopt/algorithms/admm.h"
#include "pimopt/algorithms/algorithm.h"
#include "pimopt/core/error.h"
#include "test_util.h"

namespace pimopt {
namespace {

void ExpectConfigError(TrainConfig c, const std::string& flag, uint64_t rows = 1000) {
  const Dataset data = testing::SmallDense(rows, 3);
  try {
    testing::TrainCpu(data, c);
    FAIL() << "accepted a bad " << flag;
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.parameter(), flag) << e.what();
  }
}

// Configurations of the SGD methods' rules (the default algorithm, cocoa, takes no learning rate).
TrainConfig Sgd() {
  TrainConfig c;
  c.algorithm = "mbsgd";
  return c;
}

TEST(TrainConfigValidation, EveryRuleNamesItsFlag) {
  TrainConfig c = Sgd();
  c.epochs = -1;
  ExpectConfigError(c, "--epochs");
  c = Sgd();
  c.lr = -1;
  ExpectConfigError(c, "--lr");
  c = Sgd();
  c.lr = std::nan("");
  ExpectConfigError(c, "--lr");
  c = Sgd();
  c.lr = 0.1;
  c.objective.l2 = 20;  // lr * reg >= 1
  ExpectConfigError(c, "--lr");
  c = Sgd();
  c.objective.l2 = -2;
  ExpectConfigError(c, "--reg");
  c = Sgd();
  c.workers = 3;  // mbsgd is single-worker
  ExpectConfigError(c, "--workers");
  c = Sgd();
  c.algorithm = "sgd";
  c.batch = 8;
  ExpectConfigError(c, "--batch");
  c = Sgd();
  c.algorithm = "ga";
  c.workers = 8;
  c.batch = 4;
  ExpectConfigError(c, "--batch");
  c = Sgd();
  c.algorithm = "ma";
  c.workers = 10;
  c.batch = 200;  // shard of 100 rows
  ExpectConfigError(c, "--batch");
  c = Sgd();
  c.algorithm = "admm";
  c.workers = 2;
  c.algorithm_options.As<AdmmOptions>("admm").rho = -1;
  ExpectConfigError(c, "--rho");
  c.lr = 0.1;
  c.algorithm_options.As<AdmmOptions>("admm").rho = 20;  // lr * rho >= 1
  ExpectConfigError(c, "--rho");
  c = Sgd();
  c.algorithm = "ga";
  c.workers = 5000;
  ExpectConfigError(c, "--workers");
  c = Sgd();
  c.objective.positive_weight = 0;
  ExpectConfigError(c, "--class-weights");
}

TEST(LearningRate, Schedules) {
  TrainConfig c;
  c.lr = 0.8;
  c.lr_decay = 1;
  c.schedule = LrSchedule::kConstant;
  EXPECT_EQ(c.LearningRate(3), 0.8);
  c.schedule = LrSchedule::kInverse;
  EXPECT_DOUBLE_EQ(c.LearningRate(3), 0.2);
  c.schedule = LrSchedule::kInverseSqrt;
  EXPECT_DOUBLE_EQ(c.LearningRate(3), 0.4);
}

TEST(LearningRate, AnyPositiveValueWorks) {
  const Dataset data = testing::SmallDense(500, 5);
  TrainConfig c = Sgd();
  c.lr = 0.37;  // not a power of two
  c.epochs = 10;
  const TrainResult r = testing::TrainCpu(data, c);
  EXPECT_EQ(r.epochs[0].lr, 0.37);
  EXPECT_GT(r.epochs.back().train.accuracy, 0.85);
}

TEST(Training, DivergenceIsReportedNotSilent) {
  // A feature of 1e30 and a step of 1e10 overflow float: training must stop with a message, not return inf.
  Dataset data(Storage::kDense, 2);
  const float a[] = {1e30f, 1.0f}, b[] = {0.5f, -1.0f};
  data.AppendDenseRow(a, 1.0f);
  data.AppendDenseRow(b, -1.0f);
  TrainConfig c;
  c.batch = 1;
  c.lr = 1e10;
  c.epochs = 3;
  EXPECT_THROW(testing::TrainCpu(data, c), InputError);
}

}  // namespace
}  // namespace pimopt

namespace pimopt {
namespace {

TEST(AlgorithmRegistry, EveryAlgorithmRegistersItselfWithItsTraits) {
  std::vector<std::string> names;
  for (const AlgorithmTraits* t : RegisteredAlgorithms()) names.push_back(t->name);
  EXPECT_EQ(names, (std::vector<std::string>{"sgd", "mbsgd", "ga", "ma", "dsgd", "admm", "cocoa", "newton"}));  // listing order
  for (const AlgorithmTraits* t : RegisteredAlgorithms()) {
    EXPECT_EQ(&FindAlgorithm(t->name), t);
    for (const std::string& alias : t->aliases) EXPECT_EQ(&FindAlgorithm(alias), t) << alias;
    EXPECT_NE(MakeAlgorithm(t->name), nullptr);
    EXPECT_GE(t->default_batch, 1u);
    if (!t->distributed) {
      EXPECT_EQ(t->default_workers, 1) << t->name;
    }
    EXPECT_EQ(t->row_duals || t->second_order, !t->uses_learning_rate) << t->name;
    EXPECT_FALSE(t->title.empty());
  }
  EXPECT_EQ(FindAlgorithm("ga-sgd").name, "ga");
  EXPECT_EQ(FindAlgorithm("admm").batch_meaning, BatchMeaning::kLocalPerWorker);
  EXPECT_TRUE(FindAlgorithm("admm").worker_offsets);
  EXPECT_FALSE(FindAlgorithm("ma").worker_offsets);
  EXPECT_TRUE(FindAlgorithm("ma").averages_deltas_from_global);
  EXPECT_FALSE(FindAlgorithm("dsgd").averages_deltas_from_global);
  EXPECT_EQ(FindAlgorithm("sgd").default_batch, 1u);
  EXPECT_EQ(DistributedAlgorithmNames(), "ga, ma, dsgd, admm or cocoa");
  EXPECT_TRUE(FindAlgorithm("cocoa").row_duals);
  EXPECT_TRUE(FindAlgorithm("cocoa").regularizes_bias);
  EXPECT_EQ(FindAlgorithm("cocoa+").name, "cocoa");
  EXPECT_TRUE(FindAlgorithm("newton").second_order);
  EXPECT_TRUE(FindAlgorithm("newton").regularizes_bias);
  EXPECT_EQ(FindAlgorithm("newton").batch_meaning, BatchMeaning::kFullBatch);
  try {
    FindAlgorithm("lbfgs");
    FAIL() << "accepted an unknown algorithm";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.parameter(), "--algo");
    EXPECT_NE(std::string(e.what()).find("use sgd, mbsgd, ga, ma, dsgd, admm"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace pimopt
