// A new algorithm is one file: it registers its name and traits, and both backends run it without a line changed,
// because they read the traits (here: worker state with duals) instead of switching on which algorithm runs.
#include <gtest/gtest.h>

#include "pimopt/algorithms/algorithm.h"
#include "pimopt/backends/cpu/cpu_backend.h"
#include "pimopt/backends/pim/pim_backend.h"
#include "pimopt/core/thread_pool.h"
#include "test_util.h"

namespace pimopt {
namespace {

// Consensus ADMM that always runs two proximal local passes per round (a variant a user might add).
class TwoPassAdmm final : public Algorithm {
 public:
  void Validate(const TrainConfig&) const override {}
  void ValidateForData(const TrainConfig& config, uint64_t rows) const override { ValidateLocalBatch(config, rows); }
  EpochInfo RunEpoch(IBackend& backend, const TrainConfig& config, const Partition& part, int epoch) override {
    uint64_t steps = 0;
    for (int pass = 0; pass < 2; ++pass) {
      const ShardPlan plan(LocalShards(part), config.batch, config.seed, 2 * static_cast<uint64_t>(epoch) + pass,
                           config.shuffle, part.first_worker);
      LocalSgdRequest request;
      request.plan = &plan;
      request.num_steps = MaxShardBatches(part.total_rows, config.workers, config.batch);
      request.lr = config.LearningRate(epoch);
      request.proximal = true;
      backend.LocalSgd(request);
      steps += request.num_steps;
    }
    return {steps, 1, backend.AdmmConsensus(config.rho)};
  }
};

PIMOPT_REGISTER_ALGORITHM(TwoPassAdmm, .name = "admm2", .aliases = {}, .title = "ADMM with two local passes",
                          .listing_order = 90, .distributed = true, .default_workers = 4,
                          .batch_meaning = BatchMeaning::kLocalPerWorker, .default_batch = 8, .keeps_duals = true,
                          .syncs = SyncScaling::kOncePerEpoch);

TEST(NewAlgorithm, RunsOnBothBackendsFromItsRegistrationAlone) {
  const Dataset data = testing::SmallDense(800, 16, 5);
  TrainConfig c;
  c.algorithm = "admm2";
  c.lr = 0.1;
  c.rho = 0.1;
  c.epochs = 4;
  EXPECT_EQ(MakeAlgorithm("admm2") != nullptr, true);
  ThreadPool pool(2);
  CpuBackend cpu(pool);
  const TrainResult a = Train(data, nullptr, c, cpu);
  EXPECT_EQ(a.partition.total_workers, 4);  // the default it declared
  EXPECT_GT(a.epochs.back().train.accuracy, 0.85);
  ASSERT_TRUE(a.epochs.back().info.residuals.has_value());
  EXPECT_EQ(cpu.SaveState().per_worker[0].size(), 2u);  // local model and dual, as its traits say
  PimBackend pim(pool, PimBackendOptions{});
  const TrainResult b = Train(data, nullptr, c, pim);
  EXPECT_GT(b.epochs.back().train.accuracy, 0.85);
  EXPECT_NEAR(b.epochs.back().train.accuracy, a.epochs.back().train.accuracy, 0.02);
  EXPECT_EQ(FindAlgorithm("admm2").title, "ADMM with two local passes");
}

}  // namespace
}  // namespace pimopt
