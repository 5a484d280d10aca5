// The same seed gives the same model, bit for bit, whatever the number of threads.
#include <ostream>

#include <gtest/gtest.h>

#include <cstring>

#include "pimopt/algorithms/admm.h"
#include "test_util.h"

namespace pimopt {
namespace {

struct Case {
  std::string algo;
  int workers;
  uint64_t batch;
  bool sparse;
};
// CTest lists a parameterized case with its parameter; without a printer gtest prints the struct's raw bytes.
void PrintTo(const Case& c, std::ostream* os) {
  *os << c.algo << ", " << c.workers << " workers, batch " << c.batch << (c.sparse ? ", sparse" : ", dense");
}

class Determinism : public ::testing::TestWithParam<Case> {};

TEST_P(Determinism, SameModelWithOneTwoAndFiveThreads) {
  const Case c = GetParam();
  const Dataset data = c.sparse ? testing::SmallSparse(3000, 1 << 11) : testing::SmallDense(3000, 300);
  TrainConfig config;
  config.algorithm = c.algo;
  config.workers = c.workers;
  config.batch = c.batch;
  config.epochs = 2;
  config.lr = 0.1;
  config.objective.l2 = 1e-3;
  config.algorithm_options.As<AdmmOptions>("admm").rho = 0.1;
  config.seed = 11;
  const TrainResult one = testing::TrainCpu(data, config, 1);
  for (int threads : {2, 5}) {
    const TrainResult many = testing::TrainCpu(data, config, threads);
    ASSERT_EQ(one.model.weights.size(), many.model.weights.size());
    EXPECT_EQ(std::memcmp(one.model.weights.data(), many.model.weights.data(), one.model.weights.size() * 4), 0)
        << c.algo << " threads " << threads;
    EXPECT_EQ(one.model.bias, many.model.bias);
  }
  // A different seed gives a different model (shuffling is real).
  config.seed = 12;
  const TrainResult other = testing::TrainCpu(data, config, 2);
  EXPECT_NE(std::memcmp(one.model.weights.data(), other.model.weights.data(), one.model.weights.size() * 4), 0);
}

INSTANTIATE_TEST_SUITE_P(
    AllAlgorithms, Determinism,
    ::testing::Values(Case{"sgd", 1, 1, false},
                      Case{"mbsgd", 1, 512, false},  // parallel inside a step
                      Case{"ga", 6, 600, false}, Case{"ma", 6, 8, false},
                      Case{"admm", 6, 8, false}, Case{"sgd", 1, 1, true},
                      Case{"mbsgd", 1, 1024, true},  // a sparse step split over the threads (10 non-zeros a row)
                      Case{"mbsgd", 1, 64, true},    // a small sparse step (the cost model picks its threads)
                      Case{"ga", 3, 256, true}, Case{"ma", 3, 16, true},
                      Case{"admm", 3, 16, true}, Case{"cocoa", 6, 1, false}, Case{"cocoa", 3, 1, true}),
    [](const auto& info) {
      return info.param.algo + "_batch" + std::to_string(info.param.batch) + (info.param.sparse ? "_sparse" : "_dense");
    });

}  // namespace
}  // namespace pimopt
