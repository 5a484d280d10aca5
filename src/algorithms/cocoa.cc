// CoCoA+: communication-efficient distributed dual coordinate ascent (Jaggi et al., NeurIPS 2014; Ma et al., ICML
// 2015, "Adding vs. Averaging in Distributed Primal-Dual Optimization"; Smith et al., JMLR 2018; [CoCoA] in
// docs/sources.md), with sigma' = K and adding (gamma = 1).
//
// Problem: the objective with the bias as a feature of constant 1 (a_i = (x_i, 1)), regularized like the weights as
// LIBLINEAR does (Objective::regularize_bias):
//   P(w) = (1/N) sum_i c_i phi(y_i w.a_i) + (lambda/2) ||w||^2,   lambda = l2,
// and its dual over beta in [0, 1]^N,
//   D(beta) = (1/N) sum_i c_i psi(beta_i) - (lambda/2) ||w(beta)||^2,   w(beta) = (1/(lambda N)) sum_i c_i beta_i y_i a_i,
// with psi the loss's dual (model/dual_coordinate.h). Worker k owns the fixed shard D_k (schedule.h) and its rows'
// duals, which never leave it. A round (an epoch):
//   every worker starts from the global model, x_k = w, and runs T passes (--dual-passes) over its shard in a
//   seeded order, each row a step on CoCoA+'s local subproblem with sigma' = K (backend.h,
//   LocalSolver::kDualCoordinateAscent): x_k = w + K dw_k afterwards;
//   the host adds the changes: w <- w + sum_k dw_k = (1/K) sum_k x_k (AverageLocalModels).
// So w = w(beta) throughout (up to the rounding of the model's updates), and D(beta) <= P* <= P(w): the duality gap
// of the workers' own duals certifies the model (the coordinator computes it from IBackend::RowDuals, in integers,
// so the certificate never rests on the model's rounding). With K = 1 this is SDCA (Shalev-Shwartz & Zhang 2013):
// LIBLINEAR's dual coordinate descent for the hinge loss (-s 3, with its shrinking: backend.h LocalSolveRequest::shrink,
// on the CPU backend) and the logistic loss (-s 7, whose duals never reach a bound: nothing to shrink).
//
// Differences from the papers: the local solver is exactly one or more passes of randomized coordinate ascent (no
// Theta-approximation is targeted), the passes visit each row once in a seeded permutation (as LIBLINEAR does)
// instead of sampling with replacement (a shard one row shorter than the longest visits its first row twice in a
// pass), the logistic step is a safeguarded Newton solve to 1e-12 (on the PIM backend, in fixed point, a bisection
// on the kernel's sigma table: linear_kernel.h, DualStep), and the bias is regularized.
#include <algorithm>

#include "pimopt/algorithms/algorithm.h"
#include "pimopt/core/error.h"

namespace pimopt {
namespace {

struct CocoaOptions {
  CocoaOptions();
  int dual_passes;    // local passes of dual coordinate ascent over each worker's shard per round
  bool no_shrinking;  // visit every row in every pass (the hinge loss shrinks by default: LIBLINEAR's shrinking)
  int dual_lanes;     // lanes of one worker's pass, combined by a line search (1: sequential)
};

const ParamTable<CocoaOptions>& CocoaParams() {
  static const ParamTable<CocoaOptions> table = [] {
    ParamTable<CocoaOptions> t;
    t.Add("dual-passes", &CocoaOptions::dual_passes, 1)
        .Min(1)
        .Max(1000)
        .Unit("passes")
        .AppliesWhen("algo", {"cocoa"})
        .Group(kAlgorithmParamGroup)
        .Help("CoCoA: passes of dual coordinate ascent over each worker's rows between two syncs (an epoch is one "
              "sync)");
    t.Add("no-shrinking", &CocoaOptions::no_shrinking, false)
        .AppliesWhen("algo", {"cocoa"})
        .AppliesWhen("model", {"svm"})
        .Group(kAlgorithmParamGroup)
        .Help("CoCoA with the hinge loss: visit every row in every pass instead of skipping the rows whose duals sit "
              "at a bound they would not leave (LIBLINEAR's shrinking, on the CPU backend; the PIM backend's DPUs "
              "visit every row either way; the same optimum, the certificate over every row)");
    t.Add("dual-lanes", &CocoaOptions::dual_lanes, 1)
        .Min(1)
        .Max(64)
        .Unit("lanes")
        .AppliesWhen("algo", {"cocoa"})
        .Group(kAlgorithmParamGroup)
        .Help("CoCoA with one worker on dense rows, on the CPU backend: each pass in rounds of 256 rows per lane, "
              "the lanes stepped from the round's model in parallel and their changes combined by an exact line "
              "search on the dual; the model depends on the lanes, never on the threads (docs/algorithms.md "
              "\"Lanes\")");
    return t;
  }();
  return table;
}

CocoaOptions::CocoaOptions() { CocoaParams().ApplyDefaults(*this); }

class Cocoa final : public Algorithm {
 public:
  void Validate(const TrainConfig& config) const override {
    if (config.batch != 1) throw ConfigError("--batch", "cocoa visits the rows one at a time (batch 1)");
    if (!config.reg_is_auto() && !(config.objective.l2 > 0)) {
      throw ConfigError("--reg", "cocoa solves the dual of an L2-regularized objective: --reg must be > 0");
    }
    if (config.algorithm_options.As<CocoaOptions>("cocoa").dual_lanes > 1 && config.workers != 1) {
      throw ConfigError("--dual-lanes", "lanes split one worker's pass: they need --workers 1");
    }
  }
  void ValidateForData(const TrainConfig&, uint64_t) const override {}
  bool SequentialEpochs(const TrainConfig& config) const override {
    return config.workers == 1 && config.algorithm_options.As<CocoaOptions>("cocoa").dual_lanes == 1;
  }

  EpochInfo RunEpoch(IBackend& backend, const TrainConfig& config, const Partition& part, int epoch) override {
    const CocoaOptions& options = config.algorithm_options.As<CocoaOptions>("cocoa");
    const int passes = options.dual_passes;
    const auto shards = LocalShards(part);
    const uint64_t rows = MaxShardBatches(part.total_rows, config.workers, 1);
    uint64_t steps = 0;
    for (int t = 0; t < passes; ++t) {
      const uint64_t pass = static_cast<uint64_t>(epoch) * passes + t;
      const ShardPlan plan(shards, 1, config.seed, pass, config.shuffle, part.first_worker);
      LocalSolveRequest request;
      request.plan = &plan;
      request.num_steps = rows;
      request.solver = LocalSolver::kDualCoordinateAscent;
      request.sigma = config.workers;  // CoCoA+'s safe scaling sigma' = gamma K with gamma = 1 (adding)
      request.start_from_global = t == 0;
      request.shrink = !options.no_shrinking;
      request.lanes = options.dual_lanes;
      backend.LocalSolve(request);
      steps += rows;
    }
    backend.AverageLocalModels();  // w + sum_k dw_k = (1/K) sum_k (w + K dw_k)
    return {.steps = steps, .syncs = 1};
  }
};

}  // namespace

PIMOPT_REGISTER_ALGORITHM_WITH_PARAMS(Cocoa, CocoaOptions, CocoaParams, .name = "cocoa", .aliases = {"cocoa+"},
                                      .title = "CoCoA+ (distributed dual coordinate ascent)", .listing_order = 60,
                                      .distributed = true, .default_workers = 1, .default_epochs = 1000,
                                      .batch_meaning = BatchMeaning::kSingleRow, .default_batch = 1,
                                      .worker_offsets = false, .averages_deltas_from_global = false,
                                      .row_duals = true, .regularizes_bias = true, .uses_learning_rate = false,
                                      .syncs = SyncScaling::kOncePerEpoch);

}  // namespace pimopt
