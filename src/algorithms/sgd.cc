// SGD: plain stochastic gradient descent on one worker, one sample per step.
//
// Math: per epoch, visit the N rows in a seeded random order pi (identity with --no-shuffle); for each row i:
//   z = w.x_i + b,  d = c_i l'(z, y_i)
//   w <- w - lr_e (d x_i + l2 w),   b <- b - lr_e d
// lr_e follows the learning-rate schedule (per epoch). It is MB-SGD with batch 1.
//
// PIM-Opt: has no SGD on PIM (its "SGD" label is the GPU mini-batch baseline). On the CPU backend the L2 decay
// of a sparse model is applied lazily (w = s v), so a step costs O(nnz(x_i)), not O(n).
#include "pimopt/algorithms/algorithm.h"
#include "pimopt/core/error.h"

namespace pimopt {
namespace {

class Sgd final : public Algorithm {
 public:
  void ValidateForData(const TrainConfig&, uint64_t) const override {}
  void Validate(const TrainConfig& config) const override {
    if (config.workers != 1) {
      throw ConfigError("--workers", "sgd runs on one worker; use ga, ma, dsgd or admm for K > 1");
    }
    if (config.batch != 1) throw ConfigError("--batch", "sgd uses batch 1; use mbsgd for larger batches");
  }
  EpochInfo RunEpoch(IBackend& backend, const TrainConfig& config, const Partition& part, int epoch) override {
    const uint64_t train_rows = part.total_rows;
    const ShardPlan plan(MakeShards(train_rows, 1), 1, config.seed, static_cast<uint64_t>(epoch), config.shuffle);
    LocalSolveRequest request;
    request.plan = &plan;
    request.num_steps = plan.max_batches();
    request.lr = config.LearningRate(epoch);
    backend.LocalSolve(request);
    backend.AverageLocalModels();  // K = 1: the worker's model becomes the global model
    return {.steps = request.num_steps, .syncs = 0};
  }
};

}  // namespace

PIMOPT_REGISTER_ALGORITHM(Sgd, .name = "sgd", .aliases = {}, .title = "stochastic gradient descent (SGD)",
                          .listing_order = 10, .distributed = false, .default_workers = 1,
                          .batch_meaning = BatchMeaning::kSingleRow, .default_batch = 1, .worker_offsets = false,
                          .syncs = SyncScaling::kWithRowsPerWorker);

}  // namespace pimopt
