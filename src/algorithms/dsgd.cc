// D-PSGD: decentralized SGD with gossip averaging (Lian et al. 2017, [D-PSGD] in docs/sources.md).
//
// Math: worker k owns the fixed shard D_k (schedule.h) and its own model x_k; there is no parameter server. A round:
// every worker runs H local mini-batch steps on its shard from its own model,
//   x_k <- x_k - lr_e (G_k/|beta| + l2 x_k),
// then one gossip step over the topology (topology.h) replaces each model by the weighted average of its own and its
// neighbours':  x_k <- sum_j W_kj x_j  (W symmetric and doubly stochastic, Metropolis-Hastings weights). The
// average of the models follows MB-SGD-like steps while the gossip pulls the models towards it at a rate set by W's
// second-largest eigenvalue. An epoch is as MA-SGD's: each worker passes over its shard once. At the end of an
// epoch the host forms the average (1/K) sum_k x_k, which is the model evaluated and saved (D-PSGD's output), and
// which the next epoch does not use: the workers go on from their own models.
//
// With the complete topology W = 1/K everywhere: a gossip step is exact averaging and D-PSGD is MA-SGD (tested).
// Bytes per gossip step: each worker sends its model over each of its links, 2 x edges model vectors in all, against
// MA-SGD's 2 x K through the host; on today's UPMEM hardware every one of them passes through the host.
// Under MPI every process gathers all workers' models for the gossip step (an all-gather, simple rather than
// frugal: a process needs only its workers' neighbours) and mixes its own workers' in the same order, so every split
// into processes gives the same bits.
#include <algorithm>

#include "pimopt/algorithms/algorithm.h"
#include "pimopt/core/error.h"

namespace pimopt {
namespace {

// D-PSGD's own parameter.
struct DsgdOptions {
  DsgdOptions();
  TopologyKind topology;  // the graph its gossip steps average over
};

const ParamTable<DsgdOptions>& DsgdParams() {
  static const ParamTable<DsgdOptions> table = [] {
    ParamTable<DsgdOptions> t;
    t.AddChoice("topology", &DsgdOptions::topology, TopologyKind::kRing,
                std::vector<std::pair<ParamChoice, TopologyKind>>{
                    {{"ring", "each worker gossips with its two neighbours", {}}, TopologyKind::kRing},
                    {{"torus", "a 2-D torus (the most square rows x cols): four neighbours", {}},
                     TopologyKind::kTorus},
                    {{"hierarchical",
                      "complete within groups of 8 workers (a UPMEM chip), a ring over the groups' first workers",
                      {}},
                     TopologyKind::kHierarchical},
                    {{"complete", "every pair: one gossip step is exact averaging (MA-SGD)", {}},
                     TopologyKind::kComplete}})
        .Noun("topology")
        .AppliesWhen("algo", {"dsgd"})
        .Group(kAlgorithmParamGroup)
        .Help("the graph D-PSGD's gossip steps average over (Metropolis-Hastings weights; docs/algorithms.md)");
    return t;
  }();
  return table;
}

DsgdOptions::DsgdOptions() { DsgdParams().ApplyDefaults(*this); }

class Dsgd final : public Algorithm {
 public:
  void Validate(const TrainConfig&) const override {}
  void ValidateForData(const TrainConfig& config, uint64_t train_rows) const override {
    ValidateLocalBatch(config, train_rows);
  }
  EpochInfo RunEpoch(IBackend& backend, const TrainConfig& config, const Partition& part, int epoch) override {
    const TopologyKind kind = config.algorithm_options.As<DsgdOptions>("dsgd").topology;
    if (!topology_ || topology_->workers() != static_cast<uint32_t>(config.workers) || topology_->kind() != kind) {
      topology_.emplace(kind, static_cast<uint32_t>(config.workers));
    }
    const auto [steps, rounds] = RunLocalRounds(backend, config, part, epoch, /*start_from_global=*/false,
                                                [&] { backend.MixLocalModels(*topology_); });
    backend.AverageLocalModels();  // the output model; the workers keep their own
    return {.steps = steps, .syncs = rounds + 1};
  }

 private:
  std::optional<Topology> topology_;
};

}  // namespace

PIMOPT_REGISTER_ALGORITHM_WITH_PARAMS(Dsgd, DsgdOptions, DsgdParams, .name = "dsgd", .aliases = {"d-psgd", "gossip"},
                          .title = "decentralized SGD with gossip averaging (D-PSGD)", .listing_order = 45,
                          .distributed = true, .default_workers = 8, .batch_meaning = BatchMeaning::kLocalPerWorker,
                          .default_batch = 16, .worker_offsets = false, .syncs = SyncScaling::kWithRowsPerWorker);

}  // namespace pimopt
