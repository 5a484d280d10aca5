// The CPU backend's dense gradient step split by rows and split by columns: the same model, bit for bit, on any
// number of threads (the split is a matter of speed only).
#include "pimopt/backends/cpu/cpu_backend.h"

#include <gtest/gtest.h>

#include <bit>
#include <string>
#include <vector>

#include "pimopt/algorithms/train.h"
#include "pimopt/core/thread_pool.h"
#include "test_util.h"

namespace pimopt {
namespace {

std::vector<uint32_t> Bits(const LinearModel& m) {
  std::vector<uint32_t> bits;
  for (float w : m.weights) bits.push_back(std::bit_cast<uint32_t>(w));
  bits.push_back(std::bit_cast<uint32_t>(m.bias));
  return bits;
}

LinearModel TrainWith(const Dataset& train, const TrainConfig& config, int threads, CpuBackend::DenseStepSplit split) {
  ThreadPool pool(threads, /*use_all_threads=*/true);
  CpuBackend backend(pool);
  backend.ForceDenseStepSplit(split);
  return Train(train, nullptr, config, backend, {}).model;
}

TEST(CpuBackend, DenseStepsSplitByColumnsGiveTheBitsOfTheSplitByRows) {
  // 600 features: three column blocks, the last one partial.
  const Dataset train = testing::SmallDense(3000, 600, 11);
  struct Case {
    const char* algorithm;
    int workers;
    uint64_t batch;
    LossKind loss;
    bool fit_bias;
    double positive_weight;
  };
  // Batches of one chunk (8 rows), two (64) and sixteen (1,000); GA-SGD's workers each with their own chunks; the
  // hinge loss (rows with derivative 0 skipped); no bias; a class weight.
  const Case cases[] = {{"mbsgd", 1, 64, LossKind::kLogistic, true, 1.0},
                        {"mbsgd", 1, 8, LossKind::kHinge, true, 1.0},
                        {"mbsgd", 1, 1000, LossKind::kLogistic, false, 3.0},
                        {"ga", 3, 64, LossKind::kHinge, true, 1.0},
                        {"ga", 4, 200, LossKind::kLogistic, true, 2.0}};
  for (const Case& k : cases) {
    TrainConfig c;
    c.algorithm = k.algorithm;
    c.workers = k.workers;
    c.batch = k.batch;
    c.lr = 0.05;
    c.objective.loss = k.loss;
    c.objective.l2 = 1e-3;
    c.objective.fit_bias = k.fit_bias;
    c.objective.positive_weight = k.positive_weight;
    c.epochs = 2;
    c.seed = 5;
    const auto rows = Bits(TrainWith(train, c, 1, CpuBackend::DenseStepSplit::kByRows));
    const std::string what = std::string(k.algorithm) + " batch " + std::to_string(k.batch);
    EXPECT_EQ(rows, Bits(TrainWith(train, c, 1, CpuBackend::DenseStepSplit::kByColumns))) << what;
    EXPECT_EQ(rows, Bits(TrainWith(train, c, 3, CpuBackend::DenseStepSplit::kByColumns))) << what;
    EXPECT_EQ(rows, Bits(TrainWith(train, c, 4, CpuBackend::DenseStepSplit::kByRows))) << what;
    EXPECT_EQ(rows, Bits(TrainWith(train, c, 4, CpuBackend::DenseStepSplit::kAuto))) << what;
    EXPECT_EQ(rows, Bits(testing::TrainCpu(train, c, 2).model)) << what;
  }
}

// A one-worker sparse step's scatter-add by column ranges (each range's terms filed by the rows' chunks, then added
// in row order): the bits of one task, for any number of ranges, on 2^11 columns and on 1,000 (ranges of 2^k
// columns, the last one partial), with the hinge loss's zero derivatives, a class weight and no bias.
TEST(CpuBackend, SparseStepsSplitByColumnRangesGiveTheBitsOfOneTask) {
  for (const size_t features : {size_t{1} << 11, size_t{1000}}) {
    const Dataset train = testing::SmallSparse(3000, features, 7);
    for (const LossKind loss : {LossKind::kLogistic, LossKind::kHinge}) {
      TrainConfig c;
      c.algorithm = "mbsgd";
      c.batch = 512;
      c.lr = 0.1;
      c.objective.loss = loss;
      c.objective.l2 = 1e-3;
      c.objective.fit_bias = loss == LossKind::kLogistic;
      c.objective.positive_weight = loss == LossKind::kHinge ? 3.0 : 1.0;
      c.epochs = 2;
      c.seed = 9;
      auto train_with = [&](int tasks, int threads) {
        ThreadPool pool(threads, /*use_all_threads=*/true);
        CpuBackend backend(pool);
        backend.ForceSparseScatterTasks(tasks);
        return Bits(Train(train, nullptr, c, backend, {}).model);
      };
      const auto one = train_with(1, 1);
      const std::string what = std::to_string(features) + " features, " + LossName(loss);
      for (const int tasks : {2, 3, 7}) {
        EXPECT_EQ(one, train_with(tasks, 1)) << what << ", " << tasks << " tasks";
        EXPECT_EQ(one, train_with(tasks, 3)) << what << ", " << tasks << " tasks on 3 threads";
      }
      EXPECT_EQ(one, train_with(0, 2)) << what << ", the cost model's split";
    }
  }
}

}  // namespace
}  // namespace pimopt
