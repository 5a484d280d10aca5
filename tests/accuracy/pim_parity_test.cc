// On fashion-mnist, every algorithm trained on the emulated PIM system (fixed point, 256 and 2,048 DPUs) reaches
// the CPU backend's float test accuracy within one point, with the same hyper-parameters.
#include <ostream>

#include <gtest/gtest.h>

#include "pimopt/algorithms/admm.h"
#include "pimopt/backends/cpu/cpu_backend.h"
#include "pimopt/backends/pim/pim_backend.h"
#include "pimopt/core/thread_pool.h"
#include "pimopt/data/sources.h"
#include "test_util.h"

namespace pimopt {
namespace pim_parity_test {  // named: its helpers share a unity batch with other files

struct Case {
  const char* name;
  std::string algo;
  LossKind loss;
  int dpus;
  uint64_t batch;
  double lr;
};
// CTest lists a parameterized case with its parameter; without a printer gtest prints the struct's raw bytes.
void PrintTo(const Case& c, std::ostream* os) {
  *os << c.name << " (" << c.algo << " " << ModelName(c.loss) << ", " << c.dpus << " DPUs, batch " << c.batch
      << ", lr " << c.lr << ")";
}

// The final epoch's test metrics of `config` trained on the CPU backend and on the PIM backend (2 host threads), and
// the PIM backend's saturation count.
struct BothBackends {
  Metrics cpu, pim;
  int64_t dpu_saturations = 0;
};
BothBackends TrainOnBoth(const Dataset& train, const Dataset& test, const TrainConfig& config) {
  ThreadPool pool(2);
  TrainOptions options;
  options.evaluate_train = false;
  options.eval_pool = &pool;
  CpuBackend cpu(pool);
  PimBackend pim(pool, {});
  BothBackends out;
  out.cpu = *Train(train, &test, config, cpu, options).epochs.back().test;
  out.pim = *Train(train, &test, config, pim, options).epochs.back().test;
  out.dpu_saturations = pim.Counters().at("dpu_saturations");
  return out;
}

class PimParity : public ::testing::TestWithParam<Case> {};

TEST_P(PimParity, WithinOnePointOfTheCpuBackend) {
  const Case c = GetParam();
  TrainConfig config;
  config.algorithm = c.algo;
  config.objective.loss = c.loss;
  config.objective.l2 = 1e-5;
  config.workers = c.dpus;
  config.batch = c.batch;
  config.lr = c.lr;
  config.schedule = LrSchedule::kInverseSqrt;
  config.lr_decay = 1;
  config.algorithm_options.As<AdmmOptions>("admm").rho = 0.01;
  config.epochs = 2;
  const BothBackends both = TrainOnBoth(testing::FashionMnistTrain(), testing::FashionMnistTest(), config);
  const double cpu_acc = both.cpu.accuracy, pim_acc = both.pim.accuracy;
  RecordProperty("cpu_accuracy", std::to_string(cpu_acc));
  RecordProperty("pim_accuracy", std::to_string(pim_acc));
  EXPECT_NEAR(pim_acc, cpu_acc, 0.01) << c.name;
  EXPECT_GT(pim_acc, 0.9) << c.name;
  EXPECT_EQ(both.dpu_saturations, 0) << c.name;
}

INSTANTIATE_TEST_SUITE_P(
    EveryAlgorithm, PimParity,
    ::testing::Values(Case{"sgd_lr_1dpu", "sgd", LossKind::kLogistic, 1, 1, 0.01},
                      Case{"sgd_svm_1dpu", "sgd", LossKind::kHinge, 1, 1, 0.01},
                      Case{"mbsgd_lr_1dpu", "mbsgd", LossKind::kLogistic, 1, 64, 0.1},
                      Case{"mbsgd_svm_1dpu", "mbsgd", LossKind::kHinge, 1, 64, 0.1},
                      Case{"ga_lr_256", "ga", LossKind::kLogistic, 256, 4096, 0.1},
                      Case{"ga_svm_256", "ga", LossKind::kHinge, 256, 4096, 0.1},
                      Case{"ma_lr_256", "ma", LossKind::kLogistic, 256, 8, 0.05},
                      Case{"ma_svm_256", "ma", LossKind::kHinge, 256, 8, 0.05},
                      Case{"admm_lr_256", "admm", LossKind::kLogistic, 256, 8, 0.05},
                      Case{"admm_svm_256", "admm", LossKind::kHinge, 256, 8, 0.05},
                      Case{"ga_lr_2048", "ga", LossKind::kLogistic, 2048, 4096, 0.1},
                      Case{"ga_svm_2048", "ga", LossKind::kHinge, 2048, 4096, 0.1},
                      Case{"ma_lr_2048", "ma", LossKind::kLogistic, 2048, 8, 0.05},
                      Case{"ma_svm_2048", "ma", LossKind::kHinge, 2048, 8, 0.05},
                      Case{"admm_lr_2048", "admm", LossKind::kLogistic, 2048, 8, 0.05},
                      Case{"admm_svm_2048", "admm", LossKind::kHinge, 2048, 8, 0.05}),
    [](const auto& info) { return std::string(info.param.name); });

}  // namespace pim_parity_test
}  // namespace pimopt

namespace pimopt {
namespace pim_parity_test {  // named: its helpers share a unity batch with other files

// On the Criteo-shaped synthetic set (sparse, ~3% positives, class weights 15 : 0.5 as PIM-Opt), test AUC on the
// PIM backend is within 0.01 of the CPU backend.
struct SparseCase {
  const char* name;
  std::string algo;
  LossKind loss;
};
void PrintTo(const SparseCase& c, std::ostream* os) { *os << c.name; }

class PimParitySparse : public ::testing::TestWithParam<SparseCase> {};

TEST_P(PimParitySparse, AucWithinOneHundredthOfTheCpuBackend) {
  const SparseCase c = GetParam();
  static const Dataset train = LoadDataset("sparse:rows=36000,features=32768,seed=2", {});
  static const Dataset test = *LoadCompanionTestSet("sparse:rows=36000,features=32768,seed=2", {});
  TrainConfig config;
  config.algorithm = c.algo;
  config.objective.loss = c.loss;
  config.objective.positive_weight = 15;
  config.objective.negative_weight = 0.5;
  config.objective.l2 = 1e-5;
  config.workers = 32;
  config.batch = c.algo == "ga" ? 2048 : 64;
  config.lr = c.loss == LossKind::kLogistic ? 0.5 : 0.1;
  config.algorithm_options.As<AdmmOptions>("admm").rho = 0.05;
  config.epochs = 2;
  const BothBackends both = TrainOnBoth(train, test, config);
  const double cpu_auc = both.cpu.auc, pim_auc = both.pim.auc;
  EXPECT_NEAR(pim_auc, cpu_auc, 0.01) << c.name;
  EXPECT_GT(pim_auc, 0.7) << c.name;
}

INSTANTIATE_TEST_SUITE_P(EveryAlgorithm, PimParitySparse,
                         ::testing::Values(SparseCase{"ga_lr", "ga", LossKind::kLogistic},
                                           SparseCase{"ga_svm", "ga", LossKind::kHinge},
                                           SparseCase{"ma_lr", "ma", LossKind::kLogistic},
                                           SparseCase{"ma_svm", "ma", LossKind::kHinge},
                                           SparseCase{"admm_lr", "admm", LossKind::kLogistic},
                                           SparseCase{"admm_svm", "admm", LossKind::kHinge}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace pim_parity_test
}  // namespace pimopt
