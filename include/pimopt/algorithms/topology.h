// Communication graphs of decentralized training and their mixing (gossip) matrices.
//
// A topology over K workers is an undirected graph; a gossip step replaces each worker's model by a weighted
// average of its own and its neighbours':  x_k <- sum_j W_kj x_j,  with the Metropolis-Hastings weights
//   W_kj = 1 / (1 + max(deg_k, deg_j)) for each neighbour j,   W_kk = 1 - sum_{j != k} W_kj,
// which make W symmetric and doubly stochastic for any graph, so the average of the models is preserved and
// every model converges to it at a rate set by W's second-largest eigenvalue modulus (Xiao & Boyd 2004, [Gossip]
// in docs/sources.md; D-PSGD, Lian et al. 2017, [D-PSGD]).
//
// Graphs: complete (every pair; W = 1/K everywhere: one gossip step is exact averaging, MA-SGD), ring, 2-D torus
// (rows x cols, the most square factorization of K), and hierarchical: complete within groups of 8 workers (a
// UPMEM chip's DPUs) and a ring over the groups' first workers (the chips' links).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace pimopt {

enum class TopologyKind { kComplete, kRing, kTorus, kHierarchical };

struct MixingRow {
  std::vector<uint32_t> neighbours;  // ascending, the worker itself included
  std::vector<double> weights;       // W_kj for each entry of `neighbours`
};

class Topology {
 public:
  Topology(TopologyKind kind, uint32_t workers);
  TopologyKind kind() const { return kind_; }
  uint32_t workers() const { return static_cast<uint32_t>(rows_.size()); }
  const MixingRow& row(uint32_t k) const { return rows_[k]; }
  // Undirected edges (each once): the links a gossip step uses, each carrying one model in each direction.
  uint64_t edges() const;
  std::vector<std::pair<uint32_t, uint32_t>> EdgeList() const;  // those edges (k, j), k < j, ascending
  uint32_t max_degree() const;
  // The second-largest eigenvalue modulus of W (power iteration on W minus its averaging part): a gossip step
  // shrinks the models' disagreement by at least this factor.
  double MixingRate() const;
  std::string Describe() const;  // "ring over 8 workers (degree 2)"

  static const char* Name(TopologyKind kind);  // "complete", "ring", "torus", "hierarchical"
  static constexpr uint32_t kGroupSize = 8;    // hierarchical: workers per group (DPUs per UPMEM chip)

 private:
  TopologyKind kind_;
  std::vector<MixingRow> rows_;
};

}  // namespace pimopt
