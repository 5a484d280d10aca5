// MB-SGD: mini-batch SGD on one worker.
//
// Math: per epoch, the rows in the order pi_e (see schedule.h) are cut into batches beta_t of B rows (the last
// may be shorter); for each batch:
//   G = sum_{i in beta_t} c_i l'(w.x_i + b, y_i) x_i,   G_b = sum c_i l'(...)
//   w <- w - lr_e (G/|beta_t| + l2 w),   b <- b - lr_e G_b/|beta_t|
//
// PIM-Opt: has no MB-SGD on PIM (its "SGD" is the single-GPU PyTorch baseline, batch 4096). Here it is the
// single-worker reference that GA-SGD must reproduce: GA-SGD with K workers and global batch B computes the same
// batches (tests check the models agree up to float rounding).
#include "pimopt/algorithms/algorithm.h"
#include "pimopt/core/error.h"

namespace pimopt {
namespace {

class MbSgd final : public Algorithm {
 public:
  void Validate(const TrainConfig& config) const override {
    if (config.workers != 1) {
      throw ConfigError("--workers", "mbsgd runs on one worker; ga is its K-worker form");
    }
  }
  void ValidateForData(const TrainConfig& config, uint64_t train_rows) const override {
    ValidateGlobalBatch(config, train_rows);
  }
  EpochInfo RunEpoch(IBackend& backend, const TrainConfig& config, const Partition& part, int epoch) override {
    const uint64_t train_rows = part.total_rows;
    // The one worker walks the global batch plan: a shard plan of one shard visits the same permutation.
    const GlobalBatchPlan plan(train_rows, config.batch, config.seed, epoch, config.shuffle);
    const double lr = config.LearningRate(epoch);
    for (uint64_t t = 0; t < plan.num_batches(); ++t) {
      const std::span<const uint32_t> batch = plan.Batch(t);
      backend.GradientStep(std::span<const std::span<const uint32_t>>(&batch, 1), batch.size(), lr);
    }
    return {.steps = plan.num_batches(), .syncs = 0};
  }
};

}  // namespace

PIMOPT_REGISTER_ALGORITHM(MbSgd, .name = "mbsgd", .aliases = {"mb-sgd"}, .title = "mini-batch SGD (MB-SGD)",
                          .listing_order = 20, .distributed = false, .default_workers = 1,
                          .batch_meaning = BatchMeaning::kGlobal, .default_batch = 64, .worker_offsets = false,
                          .syncs = SyncScaling::kWithRowsPerWorker);

}  // namespace pimopt
