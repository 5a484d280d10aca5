// GA-SGD: gradient-averaging SGD with K workers and a host (parameter server).
//
// Math: the batches beta_t of MB-SGD (global batch B, see schedule.h). Worker k holds the fixed shard D_k
// (MakeShards: contiguous, balanced) and receives the global model; it computes
// G_k = sum_{i in beta_t, i in D_k} c_i l'(w.x_i + b, y_i) x_i over the rows of the batch that it holds; the host sums
// G = sum_k G_k (in worker order) and steps
//   w <- w - lr_e (G/|beta_t| + l2 w),   b <- b - lr_e G_b/|beta_t|
// which is exactly MB-SGD's update: GA-SGD with K workers and batch B equals MB-SGD with batch B.
// One synchronization (push model, pull K gradients) per global batch. Each worker gets B/K rows on average (a
// random batch is spread over the shards), so data never moves between workers: a PIM backend keeps each shard
// resident on its DPU and only sends the row numbers of each step.
//
// PIM-Opt ([PIM-Opt] GA-SGD/*/dpu/task.c, host/app.c; docs/sources.md) draws its batch differently: every DPU takes
// the next B/K rows of its own shard at a cursor (a stratified batch that never reshuffles); `--ga-batches
// per-worker` does that (each worker's rows in its ShardPlan order: data order with --no-shuffle, as the artifact),
// and then GA-SGD is no longer MB-SGD. The default is a uniformly random subset of all rows. PIM-Opt's batch size
// must be a power of two (>> log2 B) and it regularizes with a shift (w >> (lr + reg)); here B and l2 are any
// numbers.
#include <vector>

#include "pimopt/algorithms/algorithm.h"
#include "pimopt/algorithms/schedule.h"
#include "pimopt/core/error.h"

namespace pimopt {
namespace {

// GA-SGD's own parameter.
struct GaOptions {
  GaOptions();
  bool per_worker_batches;  // each worker B/K rows of its own shard per step (PIM-Opt's), not a random global batch
};

const ParamTable<GaOptions>& GaParams() {
  static const ParamTable<GaOptions> table = [] {
    ParamTable<GaOptions> t;
    t.AddChoice("ga-batches", &GaOptions::per_worker_batches, false,
                std::vector<std::pair<ParamChoice, bool>>{
                    {{"random", "a uniformly random global batch (GA-SGD is then exactly MB-SGD)", {}}, false},
                    {{"per-worker",
                      "PIM-Opt's: every worker the next B/K rows of its own shard (in data order with --no-shuffle, "
                      "as the artifact's cursor)",
                      {}},
                     true}})
        .Noun("batches")
        .AppliesWhen("algo", {"ga"})
        .Group(kAlgorithmParamGroup)
        .Help("how GA-SGD's global batch of B rows is drawn");
    return t;
  }();
  return table;
}

GaOptions::GaOptions() { GaParams().ApplyDefaults(*this); }

bool PerWorkerBatches(const TrainConfig& config) {
  return config.algorithm_options.As<GaOptions>("ga").per_worker_batches;
}

class GaSgd final : public Algorithm {
 public:
  void Validate(const TrainConfig& config) const override {
    if (config.batch < static_cast<uint64_t>(config.workers)) {
      throw ConfigError("--batch", StrCat("GA-SGD needs a global batch of at least --workers (", config.workers,
                                          ") rows so that workers get rows to work on"));
    }
    if (PerWorkerBatches(config) && config.batch % static_cast<uint64_t>(config.workers) != 0) {
      throw ConfigError("--batch", StrCat("--ga-batches per-worker gives every worker B/K rows: the global batch (",
                                          config.batch, ") must be a multiple of --workers (", config.workers, ")"));
    }
  }
  void ValidateForData(const TrainConfig& config, uint64_t train_rows) const override {
    ValidateGlobalBatch(config, train_rows);
  }
  EpochInfo RunEpoch(IBackend& backend, const TrainConfig& config, const Partition& part, int epoch) override {
    if (PerWorkerBatches(config)) return RunPerWorkerEpoch(backend, config, part, epoch);
    const GlobalBatchPlan plan(part.total_rows, config.batch, config.seed, epoch, config.shuffle);
    const std::vector<Shard> shards = MakeShards(part.total_rows, config.workers);
    const double lr = config.LearningRate(epoch);
    // This process's workers only, with local row indices (a process holds rows [first_row, first_row + local)).
    std::vector<std::vector<uint32_t>> rows(part.local_workers);
    std::vector<std::span<const uint32_t>> slices(part.local_workers);
    const uint32_t first_row = static_cast<uint32_t>(part.first_row);
    for (uint64_t t = 0; t < plan.num_batches(); ++t) {
      for (auto& r : rows) r.clear();
      const auto batch = plan.Batch(t);
      for (uint32_t row : batch) {  // keeps batch order
        const int k = ShardOf(shards, row) - part.first_worker;
        if (k >= 0 && k < part.local_workers) rows[k].push_back(row - first_row);
      }
      for (int k = 0; k < part.local_workers; ++k) slices[k] = rows[k];
      backend.GradientStep(slices, batch.size(), lr);
    }
    return {.steps = plan.num_batches(), .syncs = plan.num_batches()};
  }

 private:
  // PIM-Opt's batches: step t gives worker k the t-th run of B/K rows of its shard (wrapping around a shorter
  // shard), so a step has B rows in all; the epoch has as many steps as the longest shard has runs.
  static EpochInfo RunPerWorkerEpoch(IBackend& backend, const TrainConfig& config, const Partition& part, int epoch) {
    const uint64_t per_worker = config.batch / static_cast<uint64_t>(config.workers);
    const ShardPlan plan(MakeShards(part.total_rows, config.workers), per_worker, config.seed,
                         static_cast<uint64_t>(epoch), config.shuffle);
    const double lr = config.LearningRate(epoch);
    std::vector<std::vector<uint32_t>> rows(part.local_workers);
    std::vector<std::span<const uint32_t>> slices(part.local_workers);
    const uint32_t first_row = static_cast<uint32_t>(part.first_row);
    const uint64_t steps = plan.max_batches();
    for (uint64_t t = 0; t < steps; ++t) {
      uint64_t batch_rows = 0;
      for (int k = 0; k < config.workers; ++k) batch_rows += plan.LocalBatch(k, t).size();
      for (int k = 0; k < part.local_workers; ++k) {
        rows[k].clear();
        for (uint32_t row : plan.LocalBatch(part.first_worker + k, t)) rows[k].push_back(row - first_row);
        slices[k] = rows[k];
      }
      backend.GradientStep(slices, batch_rows, lr);
    }
    return {.steps = steps, .syncs = steps};
  }
};

}  // namespace

PIMOPT_REGISTER_ALGORITHM_WITH_PARAMS(GaSgd, GaOptions, GaParams, .name = "ga", .aliases = {"ga-sgd"}, .title = "gradient-averaging SGD (GA-SGD)",
                          .listing_order = 30, .distributed = true, .default_workers = 8,
                          .batch_meaning = BatchMeaning::kGlobal, .default_batch = 64, .worker_offsets = false,
                          .syncs = SyncScaling::kWithRowsPerWorker);

}  // namespace pimopt
