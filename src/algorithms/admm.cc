// ADMM: consensus ADMM (Boyd et al. 2011, "Distributed Optimization and Statistical Learning via the Alternating
// Direction Method of Multipliers", sections 7.1 and 8.2) with an inexact local solver.
//
// Problem: minimize F(w) = (1/N) sum_i c_i l(w.x_i) + (l2/2)||w||^2 + l1 ||w||_1 written in consensus form
//   minimize sum_k f_k(x_k) + g(z)  subject to x_k = z,
//   f_k(x) = (K/N) sum_{i in D_k} c_i l(x.x_i)   (K x the shard's share of the mean loss; sum_k f_k = K * loss),
//   g(z)   = K ((l2/2)||z||^2 + l1 ||z||_1)      (the bias is not regularized).
// Scaled-form iterations, once per epoch:
//   x_k <- approx argmin f_k(x) + (rho/2)||x - z + u_k||^2
//          (T local epochs of mini-batch SGD on the shard with local batch b, warm-started at the previous x_k)
//   z   <- argmin g(z) + (K rho/2)||z - (mean x + mean u)||^2  =  S(a, l1/rho) * rho/(rho + l2),  a = x_bar + u_bar
//   u_k <- u_k + x_k - z
// The model evaluated and saved is z (the consensus, which carries the L1 sparsity). Primal and dual residuals
// are reported per epoch.
//
// Differences from PIM-Opt ([PIM-Opt] ADMM/*/dpu/task.c, host/app.c; docs/sources.md): PIM-Opt's proximal coefficient (2^-reg), threshold
// (2^(alpha-reg)/K) and reported L1 weight (2^-alpha) do not belong to one (l1, rho) pair, its bias is
// soft-thresholded globally but has no local proximal term, and it evaluates mean x instead of z. Here all three
// come from one consistent (l1, l2, rho), the bias takes part in the consensus (proximal term, no shrinkage), and
// z is the model.
#include "pimopt/algorithms/algorithm.h"
#include "pimopt/core/error.h"

namespace pimopt {
namespace {

class Admm final : public Algorithm {
 public:
  void ValidateForData(const TrainConfig& config, uint64_t train_rows) const override {
    ValidateLocalBatch(config, train_rows);
  }
  void Validate(const TrainConfig& config) const override {
    if (!config.lr_is_auto() && config.lr * config.rho >= 1) {
      throw ConfigError(
          "--rho", StrCat("lr * rho = ", config.lr * config.rho, " must be < 1 (the proximal step would overshoot)"));
    }
  }
  EpochInfo RunEpoch(IBackend& backend, const TrainConfig& config, const Partition& part, int epoch) override {
    const auto shards = LocalShards(part);
    const uint64_t max_batches = MaxShardBatches(part.total_rows, config.workers, config.batch);
    uint64_t steps = 0;
    for (int t = 0; t < config.local_epochs; ++t) {
      const uint64_t pass = static_cast<uint64_t>(epoch) * config.local_epochs + t;
      const ShardPlan plan(shards, config.batch, config.seed, pass, config.shuffle, part.first_worker);
      LocalSgdRequest request;
      request.plan = &plan;
      request.num_steps = max_batches;
      request.lr = config.LearningRate(epoch);
      request.proximal = true;
      backend.LocalSgd(request);
      steps += request.num_steps;
    }
    const AdmmResiduals residuals = backend.AdmmConsensus(config.rho);
    return {steps, 1, residuals};
  }
};

}  // namespace

PIMOPT_REGISTER_ALGORITHM(Admm, .name = "admm", .aliases = {}, .title = "consensus ADMM",
                          .listing_order = 50, .distributed = true, .default_workers = 8,
                          .batch_meaning = BatchMeaning::kLocalPerWorker, .default_batch = 16, .keeps_duals = true,
                          .syncs = SyncScaling::kOncePerEpoch);

}  // namespace pimopt
