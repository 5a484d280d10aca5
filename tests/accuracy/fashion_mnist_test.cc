// The documented hyper-parameters (README "Results") reach LIBLINEAR's test accuracy on fashion-mnist within one
// point for every algorithm and both models. LIBLINEAR (-s 0 / -s 2, C=1, -B 1): 95.20% / 95.21%.
#include <ostream>

#include <gtest/gtest.h>

#include "pimopt/algorithms/admm.h"
#include "pimopt/core/thread_pool.h"
#include "pimopt/data/sources.h"
#include "test_util.h"

namespace pimopt {
namespace fashion_mnist_test {  // named: its helpers share a unity batch with other files

constexpr double kLiblinearAccuracy = 0.952;

struct Case {
  const char* name;
  std::string algo;
  LossKind loss;
  int workers;
  uint64_t batch;
  double lr;
};
// CTest lists a parameterized case with its parameter; without a printer gtest prints the struct's raw bytes.
void PrintTo(const Case& c, std::ostream* os) {
  *os << c.name << " (" << c.algo << " " << ModelName(c.loss) << ", " << c.workers << " workers, batch " << c.batch
      << ", lr " << c.lr << ")";
}

// Keep in sync with the README's result table (bench/fashion_mnist_table.sh prints it).
TrainConfig ConfigFor(const Case& c) {
  TrainConfig config;
  config.algorithm = c.algo;
  config.objective.loss = c.loss;
  config.objective.l2 = 1e-5;
  config.workers = c.workers;
  config.batch = c.batch;
  config.lr = c.lr;
  config.schedule = LrSchedule::kInverseSqrt;
  config.lr_decay = 1.0;
  config.epochs = 10;
  config.algorithm_options.As<AdmmOptions>("admm").rho = 0.01;
  config.seed = 1;
  return config;
}

class FashionMnist : public ::testing::TestWithParam<Case> {};

TEST_P(FashionMnist, WithinOnePointOfLiblinear) {
  const Case c = GetParam();
  const TrainResult r = testing::TrainCpu(testing::FashionMnistTrain(), ConfigFor(c), 2, &testing::FashionMnistTest());
  const double accuracy = r.epochs.back().test->accuracy;
  RecordProperty("test_accuracy", std::to_string(accuracy));
  EXPECT_GE(accuracy, kLiblinearAccuracy - 0.01) << c.name;
}

INSTANTIATE_TEST_SUITE_P(EveryAlgorithmAndModel, FashionMnist,
                         ::testing::Values(Case{"sgd_lr", "sgd", LossKind::kLogistic, 1, 1, 0.01},
                                           Case{"sgd_svm", "sgd", LossKind::kHinge, 1, 1, 0.01},
                                           Case{"mbsgd_lr", "mbsgd", LossKind::kLogistic, 1, 64, 0.1},
                                           Case{"mbsgd_svm", "mbsgd", LossKind::kHinge, 1, 64, 0.1},
                                           Case{"ga_lr", "ga", LossKind::kLogistic, 8, 64, 0.1},
                                           Case{"ga_svm", "ga", LossKind::kHinge, 8, 64, 0.1},
                                           Case{"ma_lr", "ma", LossKind::kLogistic, 8, 16, 0.05},
                                           Case{"ma_svm", "ma", LossKind::kHinge, 8, 16, 0.05},
                                           Case{"admm_lr", "admm", LossKind::kLogistic, 8, 16, 0.05},
                                           Case{"admm_svm", "admm", LossKind::kHinge, 8, 16, 0.05}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace fashion_mnist_test
}  // namespace pimopt
