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
#include <cmath>

#include "pimopt/algorithms/admm.h"

#include "pimopt/algorithms/algorithm.h"
#include "pimopt/core/error.h"
#include "pimopt/core/file_util.h"
#include "pimopt/fixed/fixed_point.h"

namespace pimopt {
namespace {

// The z-update's shrinkage in one number format: z = S(a, threshold) * scale for weights, z = a for the bias.
struct FloatShrinkage {
  using Value = float;
  float threshold, scale;
  static float Abs(float v) { return std::fabs(v); }
  float Scale(float v) const { return v * scale; }
};
struct FixedShrinkage {  // Q8.24 values, a Q32 scale (fixed_point.h)
  using Value = int64_t;
  int64_t threshold;
  uint64_t scale;
  static int64_t Abs(int64_t v) { return v < 0 ? -v : v; }
  int64_t Scale(int64_t v) const { return fixed::MulScale(v, scale); }
};

// Soft thresholding then shrinking, written once for both formats: |a| - threshold, zero when not positive, with a's
// sign, times the scale.
template <typename Format>
typename Format::Value Shrink(typename Format::Value a, const Format& f) {
  const typename Format::Value magnitude = Format::Abs(a) - f.threshold;
  if (!(magnitude > 0)) return 0;
  return f.Scale(a < 0 ? -magnitude : magnitude);
}

// z = argmin g(z) + (K rho/2)||z - a||^2 = S(a, l1/rho) * rho/(rho + l2) per weight, z_b = a_b (the bias is not
// regularized).
class ZUpdate final : public ConsensusRule {
 public:
  ZUpdate(const Objective& obj, double rho)
      : float_{static_cast<float>(obj.l1 / rho), static_cast<float>(rho / (rho + obj.l2))},
        fixed_{ThresholdQ(obj.l1 / rho), fixed::ToScale(rho / (rho + obj.l2), "--rho")} {}
  void Apply(std::span<const float> mean, std::span<float> z, bool bias) const override { Run(mean, z, bias, float_); }
  void Apply(std::span<const int64_t> mean, std::span<int64_t> z, bool bias) const override {
    Run(mean, z, bias, fixed_);
  }

 private:
  static int64_t ThresholdQ(double threshold) {
    fixed::Saturation ignored;  // a threshold beyond the model's range zeroes every weight either way
    return fixed::ToModel(threshold, ignored);
  }
  template <typename T, typename Format>
  static void Run(std::span<const T> mean, std::span<T> z, bool bias, const Format& f) {
    for (size_t i = 0; i < mean.size(); ++i) z[i] = bias ? mean[i] : Shrink(mean[i], f);
  }
  FloatShrinkage float_;
  FixedShrinkage fixed_;
};

const ParamTable<AdmmOptions>& AdmmParams() {
  static const ParamTable<AdmmOptions> table = [] {
    ParamTable<AdmmOptions> t;
    t.Add("rho", &AdmmOptions::rho, AdmmOptions::kAutoRho)
        .Positive()
        .Auto(AdmmOptions::kAutoRho)
        .AppliesWhen("algo", {"admm"})
        .Group(kAlgorithmParamGroup)
        .Help(StrCat("ADMM penalty rho, fixed for the whole run (lr * rho < 1); auto: starts at ",
                     FormatDouble(AdmmOptions::kAutoRhoStart), " and after every consensus round doubles when the "
                     "primal residual is over ", FormatDouble(AdmmOptions::kRhoBalance), "x the dual one, halves in "
                     "the opposite case (residual balancing, docs/algorithms.md)"));
    t.Add("local-epochs", &AdmmOptions::local_epochs, 1)
        .Min(1)
        .Unit("epochs")
        .AppliesWhen("algo", {"admm"})
        .Group(kAlgorithmParamGroup)
        .Help("ADMM: local epochs of proximal SGD per consensus round");
    return t;
  }();
  return table;
}

const AdmmOptions& OptionsOf(const TrainConfig& config) { return config.algorithm_options.As<AdmmOptions>("admm"); }

// ADMM consensus residuals (Boyd et al. 2011, section 3.3): primal ||r|| = sqrt(sum_k ||x_k - z||^2), dual
// ||s|| = rho sqrt(K) ||z - z_old||. `rho` is the penalty the round used, `next_rho` the one the next round uses.
// The norms the residuals are compared with (Wohlberg 2017, relative residual balancing): ||x|| = sqrt(sum_k
// ||x_k||^2), ||z|| = sqrt(K) ||z|| and ||u|| = sqrt(sum_k ||u_k||^2) after the update.
struct Residuals {
  double primal = 0;
  double dual = 0;
  double rho = 0;
  double next_rho = 0;
  double x_norm = 0;
  double z_norm = 0;
  double u_norm = 0;
};

class Admm final : public Algorithm {
 public:
  void ValidateForData(const TrainConfig& config, uint64_t train_rows) const override {
    ValidateLocalBatch(config, train_rows);
  }
  void Validate(const TrainConfig& config) const override {
    const double rho = OptionsOf(config).rho;
    if (!config.lr_is_auto() && config.lr * rho >= 1) {
      throw ConfigError("--rho",
                        StrCat("lr * rho = ", config.lr * rho, " must be < 1 (the proximal step would overshoot)"));
    }
  }
  void ResolveAuto(TrainConfig& config) const override {
    AdmmOptions& o = config.algorithm_options.As<AdmmOptions>("admm");
    if (o.rho_is_auto()) {
      o.rho = AdmmOptions::kAutoRhoStart;
      o.rho_adaptive = true;
    }
  }
  double ProximalWeight(const TrainConfig& config) const override { return OptionsOf(config).rho; }
  // The penalty of the next round (residual balancing, above).
  static double BalancedRho(const TrainConfig& config, const Residuals& r, int epoch) {
    double rho = r.rho;
    // Relative residuals (Wohlberg 2017): the primal against the size of x and z, the dual against the size of
    // the unscaled duals rho u; balancing them does not depend on the scale of the features or the model.
    const double primal = r.primal / std::max({r.x_norm, r.z_norm, 1e-300});
    const double dual = r.dual / std::max(r.rho * r.u_norm, 1e-300);
    if (primal > AdmmOptions::kRhoBalance * dual) {
      rho *= AdmmOptions::kRhoStep;
    } else if (dual > AdmmOptions::kRhoBalance * primal) {
      rho /= AdmmOptions::kRhoStep;
    }
    // The next epoch's rate (the plateau schedule may lower it after this epoch, which only widens the bound).
    const double most = 0.5 / config.LearningRate(epoch);
    return std::clamp(rho, std::min(AdmmOptions::kRhoMin, r.rho), std::max(most, r.rho));
  }

  EpochInfo RunEpoch(IBackend& backend, const TrainConfig& config, const Partition& part, int epoch) override {
    // The penalty of this round: --rho (or auto's start) in the first, then what the last round chose.
    const AdmmOptions& options = OptionsOf(config);
    const double rho = next_rho_ > 0 ? next_rho_ : options.rho;
    const auto shards = LocalShards(part);
    const uint64_t max_batches = MaxShardBatches(part.total_rows, config.workers, config.batch);
    uint64_t steps = 0;
    for (int t = 0; t < options.local_epochs; ++t) {
      const uint64_t pass = static_cast<uint64_t>(epoch) * options.local_epochs + t;
      const ShardPlan plan(shards, config.batch, config.seed, pass, config.shuffle, part.first_worker);
      LocalSolveRequest request;
      request.plan = &plan;
      request.num_steps = max_batches;
      request.lr = config.LearningRate(epoch);
      request.solver = LocalSolver::kProximalSgd;  // towards v_k = z - u_k (the offsets are the scaled duals)
      request.prox = rho;
      backend.LocalSolve(request);
      steps += request.num_steps;
    }
    const ConsensusNorms norms = backend.Consensus(ZUpdate(config.objective, rho));
    const double k = config.workers;
    Residuals r{.primal = std::sqrt(norms.local_minus_global_sq),
                .dual = rho * std::sqrt(k) * std::sqrt(norms.global_change_sq),
                .rho = rho,
                .next_rho = rho,
                .x_norm = std::sqrt(norms.local_sq),
                .z_norm = std::sqrt(k * norms.global_sq),
                .u_norm = std::sqrt(norms.offset_sq)};
    if (options.rho_adaptive) r.next_rho = BalancedRho(config, r, epoch);
    if (r.next_rho != rho) backend.ScaleOffsets(rho / r.next_rho);
    next_rho_ = r.next_rho;
    return {.steps = steps,
            .syncs = 1,
            .figures_title = "admm",
            .figures = {{"admm_primal_residual", "r", r.primal}, {"admm_dual_residual", "s", r.dual},
                        {"admm_rho", "rho", r.rho}}};
  }

  // The progress a checkpoint keeps: the next round's penalty (it adapts with --rho auto).
  std::vector<double> SaveProgress() const override {
    if (next_rho_ > 0) return {next_rho_};
    return {};
  }
  void RestoreProgress(const std::vector<double>& progress) override {
    if (progress.size() > 1 || (progress.size() == 1 && !(std::isfinite(progress[0]) && progress[0] > 0))) {
      throw InputError("the checkpoint's ADMM penalty is not one positive number");
    }
    next_rho_ = progress.empty() ? 0 : progress[0];
  }

 private:
  double next_rho_ = 0;  // 0 before the first round
};

}  // namespace

AdmmOptions::AdmmOptions() { AdmmParams().ApplyDefaults(*this); }

PIMOPT_REGISTER_ALGORITHM_WITH_PARAMS(Admm, AdmmOptions, AdmmParams, .name = "admm", .aliases = {}, .title = "consensus ADMM",
                          .listing_order = 50, .distributed = true, .default_workers = 8,
                          .batch_meaning = BatchMeaning::kLocalPerWorker, .default_batch = 16, .worker_offsets = true,
                          .syncs = SyncScaling::kOncePerEpoch);

}  // namespace pimopt
