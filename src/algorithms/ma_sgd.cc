// MA-SGD: model-averaging SGD (local SGD) with K workers and a host.
//
// Math: worker k owns the fixed shard D_k (schedule.h). A round: the host pushes the global model w to every
// worker (x_k <- w); each worker runs H local mini-batch steps on its shard with local batch b,
//   x_k <- x_k - lr_e (G_k/|beta| + l2 x_k)
// then the host averages w <- (1/K) sum_k x_k. An epoch is ceil(max_k ceil(|D_k|/b) / H) rounds, so each worker
// passes over its shard once (workers whose shard is one row short wrap around to their first batch).
//
// Differences from PIM-Opt ([PIM-Opt] MA-SGD/*/dpu/task.c, host/app.c; docs/sources.md): PIM-Opt always averages after one local step
// (H = 1, the default here; H is configurable), keeps the batch cursor on the DPU and never reshuffles; here each
// epoch reshuffles each shard with a seeded stream (unless --no-shuffle), and averaging is a float mean instead of
// an integer division with saturation.
#include <algorithm>

#include "pimopt/algorithms/algorithm.h"
#include "pimopt/core/error.h"

namespace pimopt {
namespace {

class MaSgd final : public Algorithm {
 public:
  void Validate(const TrainConfig&) const override {}
  void ValidateForData(const TrainConfig& config, uint64_t train_rows) const override {
    ValidateLocalBatch(config, train_rows);
  }
  EpochInfo RunEpoch(IBackend& backend, const TrainConfig& config, const Partition& part, int epoch) override {
    const auto [steps, rounds] = RunLocalRounds(backend, config, part, epoch, /*start_from_global=*/true,
                                                [&] { backend.AverageLocalModels(); });
    return {.steps = steps, .syncs = rounds};
  }
};

}  // namespace

PIMOPT_REGISTER_ALGORITHM(MaSgd, .name = "ma", .aliases = {"ma-sgd"}, .title = "model-averaging SGD (MA-SGD)",
                          .listing_order = 40, .distributed = true, .default_workers = 8,
                          .batch_meaning = BatchMeaning::kLocalPerWorker, .default_batch = 16, .worker_offsets = false,
                          .averages_deltas_from_global = true,
                          .syncs = SyncScaling::kWithRowsPerWorker);

}  // namespace pimopt
