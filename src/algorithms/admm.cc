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
// The penalty (--rho auto): residual balancing (Boyd et al. 2011, section 3.4.1; He, Yang & Wang 2000). With the
// primal residual ||r|| = sqrt(sum_k ||x_k - z||^2) and the dual ||s|| = rho sqrt(K) ||z - z_old||:
//   rho <- 2 rho  if ||r|| > 10 ||s||,   rho <- rho / 2  if ||s|| > 10 ||r||,   else unchanged,
// and the scaled duals u = y / rho are rescaled by rho_old / rho_new so the unscaled duals y are unchanged. rho
// stays within [1e-6, 1 / (2 lr_e)]: the proximal term of a local step, lr rho (x - v), must not overshoot. A small
// rho lets the workers drift apart (large ||r||); a large one freezes z (large ||s||). Both residuals are sums
// over all workers, so every process and thread count takes the same decision.
//
// Differences from PIM-Opt ([PIM-Opt] ADMM/*/dpu/task.c, host/app.c; docs/sources.md): PIM-Opt's proximal coefficient (2^-reg), threshold
// (2^(alpha-reg)/K) and reported L1 weight (2^-alpha) do not belong to one (l1, rho) pair, its bias is
// soft-thresholded globally but has no local proximal term, and it evaluates mean x instead of z. Here all three
// come from one consistent (l1, l2, rho), the bias takes part in the consensus (proximal term, no shrinkage), and
// z is the model.
#include <algorithm>

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
  // The penalty of the next round (residual balancing, above).
  static double BalancedRho(const TrainConfig& config, const AdmmResiduals& r, int epoch) {
    double rho = r.rho;
    // Relative residuals (Wohlberg 2017): the primal against the size of x and z, the dual against the size of
    // the unscaled duals rho u; balancing them does not depend on the scale of the features or the model.
    const double primal = r.primal / std::max({r.x_norm, r.z_norm, 1e-300});
    const double dual = r.dual / std::max(r.rho * r.u_norm, 1e-300);
    if (primal > TrainConfig::kRhoBalance * dual) {
      rho *= TrainConfig::kRhoStep;
    } else if (dual > TrainConfig::kRhoBalance * primal) {
      rho /= TrainConfig::kRhoStep;
    }
    // The next epoch's rate (the plateau schedule may lower it after this epoch, which only widens the bound).
    const double most = 0.5 / config.LearningRate(epoch);
    return std::clamp(rho, std::min(TrainConfig::kRhoMin, r.rho), std::max(most, r.rho));
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
      request.rho = config.rho;
      backend.LocalSgd(request);
      steps += request.num_steps;
    }
    AdmmResiduals residuals = backend.AdmmConsensus(config.rho);
    residuals.rho = config.rho;
    residuals.next_rho = config.rho_adaptive ? BalancedRho(config, residuals, epoch) : config.rho;
    if (residuals.next_rho != config.rho) backend.ScaleDuals(config.rho / residuals.next_rho);
    return {steps, 1, residuals};
  }
};

}  // namespace

PIMOPT_REGISTER_ALGORITHM(Admm, .name = "admm", .aliases = {}, .title = "consensus ADMM",
                          .listing_order = 50, .distributed = true, .default_workers = 8,
                          .batch_meaning = BatchMeaning::kLocalPerWorker, .default_batch = 16, .keeps_duals = true,
                          .syncs = SyncScaling::kOncePerEpoch);

}  // namespace pimopt
