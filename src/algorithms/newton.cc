// Newton: a truncated (inexact) Newton method for the L2-regularized logistic regression, in the primal, with full
// passes that split over every core deterministically. It solves the objective cocoa solves (the bias regularized
// as a feature of constant 1, Objective::regularize_bias),
//   F_b(w) = (1/N) sum_i c_i phi(y_i w.a_i) + (lambda/2) ||w||^2,   a_i = (x_i, 1),   phi(m) = log(1 + e^-m),
// and is certified the same way: the duality gap of the duals its margins ask for, beta_i = -phi'(m_i)
// (duality_gap.h), which reaches 0 exactly at the optimum.
//
// An epoch is one Newton step (Nocedal & Wright, "Numerical Optimization", 2nd ed., algorithm 7.1, line-search
// Newton-CG; LIBLINEAR's -s 0 takes trust-region Newton steps of the same kind, Lin, Weng & Keerthi, JMLR 2008; see
// [Newton-CG] and [TRON] in docs/sources.md):
//   g = grad F_b(w), H = the Hessian at w, M = diag(H) (the backend's curvature diagonal, plus lambda);
//   s ~ -H^-1 g by conjugate gradients preconditioned by M, from s = 0, until ||r|| <= --cg-tol ||g|| or
//     --cg-iterations products H p (each one pass over the rows: IBackend::CurvatureTimes);
//   w <- w + alpha s with alpha the first of 1, 1/2, 1/4, ... that lowers F_b by at least 1e-4 alpha g.s (Armijo);
//     the loss along s comes from the kept margins and y_i a_i.s, a pass of its own (SetPrimalDirection).
// The vectors of the step (n + 1 doubles) live here; the passes over the rows are the backend's verbs, which sum
// over a fixed partition of the rows, so the model is the same for any thread count.
//
// Differences from LIBLINEAR's -s 0: a line search instead of a trust region (both globalize Newton's step on a
// convex objective), the preconditioner is the Hessian's diagonal itself (LIBLINEAR mixes it with the identity),
// the bias is regularized (LIBLINEAR -B 1's bias feature is too), the margins in float as the model, and the stop is
// the duality gap (--tol) instead of the gradient's norm.
#include <algorithm>
#include <cmath>
#include <vector>

#include "pimopt/algorithms/algorithm.h"
#include "pimopt/core/error.h"

namespace pimopt {
namespace {

struct NewtonOptions {
  NewtonOptions();
  double cg_tol;      // the forcing term: CG stops once ||r|| <= cg_tol ||g||
  int cg_iterations;  // the most Hessian products per Newton step
};

const ParamTable<NewtonOptions>& NewtonParams() {
  static const ParamTable<NewtonOptions> table = [] {
    ParamTable<NewtonOptions> t;
    t.Add("cg-tol", &NewtonOptions::cg_tol, 0.1)
        .Positive()
        .Max(1)
        .AppliesWhen("algo", {"newton"})
        .Group(kAlgorithmParamGroup)
        .Help("newton: conjugate gradients stop once the residual's norm is at most cg-tol times the gradient's "
              "(the forcing term of an inexact Newton step; LIBLINEAR's 0.1)");
    t.Add("cg-iterations", &NewtonOptions::cg_iterations, 250)
        .Min(1)
        .Max(100000)
        .Unit("passes")
        .AppliesWhen("algo", {"newton"})
        .Group(kAlgorithmParamGroup)
        .Help("newton: the most conjugate-gradient iterations per Newton step (each one pass over the rows)");
    return t;
  }();
  return table;
}

NewtonOptions::NewtonOptions() { NewtonParams().ApplyDefaults(*this); }

double Dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t j = 0; j < a.size(); ++j) s += a[j] * b[j];
  return s;
}

// Armijo's sufficient decrease, and the most halvings of the step before the step is given up.
constexpr double kArmijo = 1e-4;
constexpr int kMostHalvings = 40;

class Newton final : public Algorithm {
 public:
  void Validate(const TrainConfig& config) const override {
    if (config.workers != 1) {
      throw ConfigError("--workers", "newton runs as one worker whose passes split over the threads (--threads)");
    }
    if (config.objective.loss != LossKind::kLogistic) {
      throw ConfigError("--model", "newton needs a twice-differentiable loss: --model lr (for svm, --algo cocoa)");
    }
    if (config.batch != 1 && config.batch != TrainConfig::kAutoBatch) {
      throw ConfigError("--batch", "newton's steps take every row (leave --batch out)");
    }
    if (!config.reg_is_auto() && !(config.objective.l2 > 0)) {
      throw ConfigError("--reg", "newton is certified by the dual of an L2-regularized objective: --reg must be > 0");
    }
  }
  void ValidateForData(const TrainConfig&, uint64_t) const override {}

  EpochInfo RunEpoch(IBackend& backend, const TrainConfig& config, const Partition& part, int) override {
    const NewtonOptions& options = config.algorithm_options.As<NewtonOptions>("newton");
    const double inv_n = 1.0 / static_cast<double>(std::max<uint64_t>(part.total_rows, 1));
    const double lambda = config.objective.l2;
    const bool fit_bias = config.objective.fit_bias;
    // w as the backend holds it, the bias last.
    LinearModel& model = step_.model;
    backend.ExportModelInto(model);
    const size_t n = model.weights.size(), width = n + 1;
    // The step's vectors, kept from step to step (as long as the model: made anew, each step paid a page fault per
    // 4 KB of them, 64 MB a step on 2^20 features); every one is written in full below before it is read.
    std::vector<double>& w = step_.w;
    w.resize(width);
    for (size_t j = 0; j < n; ++j) w[j] = model.weights[j];
    w[n] = fit_bias ? model.bias : 0.0;

    PrimalDerivatives d = backend.PrimalDerivativesAtGlobal();
    uint64_t passes = 1;
    std::vector<double>&g = step_.g, &precondition = step_.precondition;
    g.resize(width);
    precondition.resize(width);
    for (size_t j = 0; j < width; ++j) {
      g[j] = d.gradient[j] * inv_n + lambda * w[j];
      precondition[j] = d.curvature_diagonal[j] * inv_n + lambda;
    }
    if (!fit_bias) g[n] = 0;
    const double ww = Dot(w, w);
    const double objective = d.loss_sum * inv_n + 0.5 * lambda * ww;
    const double g_norm = std::sqrt(Dot(g, g));
    if (!(g_norm > 0)) return {.steps = passes, .syncs = 0};

    // The gap of the duals the margins ask for is exactly ||g||^2 / (2 lambda) (duality_gap.h's certificate of a
    // primal model: F - D = (lambda/2) ||w - w(beta)||^2 with w - w(beta) = g / lambda). After the step the gradient
    // is about -r, the CG residual, so CG may also stop once ||r|| would certify a quarter of --tol: the last step
    // is not solved more finely than the certificate asks.
    const double certified_residual =
        config.tol > 0 ? 0.5 * std::sqrt(2.0 * lambda * config.tol * std::max(objective, 0.0)) : 0.0;
    // Preconditioned conjugate gradients on H s = -g.
    std::vector<double>&s = step_.s, &r = step_.r, &z = step_.z, &p = step_.p, &hp = step_.hp;
    s.assign(width, 0.0);
    for (std::vector<double>* v : {&r, &z, &p, &hp}) v->resize(width);
    for (size_t j = 0; j < width; ++j) {
      r[j] = -g[j];
      z[j] = r[j] / precondition[j];
    }
    p = z;
    double rz = Dot(r, z);
    for (int it = 0; it < options.cg_iterations; ++it) {
      backend.CurvatureTimes(p, hp);
      ++passes;
      if (!fit_bias) hp[n] = 0;
      // The vectors' loops fused (each sum still in coordinate order): on 2^20 features they are memory-bound.
      double curvature = 0;
      for (size_t j = 0; j < width; ++j) {
        hp[j] = hp[j] * inv_n + lambda * p[j];
        curvature += p[j] * hp[j];
      }
      if (!(curvature > 0)) break;  // p = 0 (nothing left) or a direction the rounding flattened
      const double alpha = rz / curvature;
      double rr = 0, rz_next = 0;
      for (size_t j = 0; j < width; ++j) {
        s[j] += alpha * p[j];
        r[j] -= alpha * hp[j];
        z[j] = r[j] / precondition[j];
        rr += r[j] * r[j];
        rz_next += r[j] * z[j];
      }
      const double r_norm = std::sqrt(rr);
      if (r_norm <= options.cg_tol * g_norm || r_norm <= certified_residual) break;
      const double beta = rz_next / rz;
      rz = rz_next;
      for (size_t j = 0; j < width; ++j) p[j] = z[j] + beta * p[j];
    }

    // Backtracking along s.
    const double slope = Dot(g, s);
    if (!(slope < 0)) return {.steps = passes, .syncs = 0};  // no descent direction left in double precision
    backend.SetPrimalDirection(s);
    ++passes;
    const double ws = Dot(w, s), ss = Dot(s, s);
    double step = 1.0;
    for (int h = 0; h <= kMostHalvings; ++h, step *= 0.5) {
      const double regularizer = 0.5 * lambda * (ww + 2 * step * ws + step * step * ss);
      const double along = backend.LossSumAlong(step) * inv_n + regularizer;
      if (along <= objective + kArmijo * step * slope) {
        backend.StepGlobalModel(step, s);
        break;
      }
    }
    return {.steps = passes, .syncs = 0};
  }

 private:
  struct StepVectors {
    LinearModel model;
    std::vector<double> w, g, precondition, s, r, z, p, hp;
  };
  StepVectors step_;
};

}  // namespace

PIMOPT_REGISTER_ALGORITHM_WITH_PARAMS(Newton, NewtonOptions, NewtonParams, .name = "newton",
                                      .aliases = {"newton-cg", "tron"},
                                      .title = "Newton-CG (primal truncated Newton, logistic regression)",
                                      .listing_order = 70, .distributed = false, .default_workers = 1,
                                      .default_epochs = 100, .batch_meaning = BatchMeaning::kFullBatch,
                                      .default_batch = 1, .worker_offsets = false, .averages_deltas_from_global = false,
                                      .row_duals = false, .regularizes_bias = true, .uses_learning_rate = false,
                                      .second_order = true, .syncs = SyncScaling::kOncePerEpoch);

}  // namespace pimopt
