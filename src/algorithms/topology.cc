#include "pimopt/algorithms/topology.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "pimopt/core/error.h"

namespace pimopt {
namespace {

// rows x cols with rows <= cols, rows the largest divisor of k not above sqrt(k).
std::pair<uint32_t, uint32_t> TorusShape(uint32_t k) {
  uint32_t rows = static_cast<uint32_t>(std::sqrt(static_cast<double>(k)));
  while (rows > 1 && k % rows != 0) --rows;
  return {rows, k / rows};
}

std::vector<std::set<uint32_t>> Neighbours(TopologyKind kind, uint32_t k) {
  std::vector<std::set<uint32_t>> adj(k);
  auto link = [&](uint32_t a, uint32_t b) {
    if (a == b) return;
    adj[a].insert(b);
    adj[b].insert(a);
  };
  switch (kind) {
    case TopologyKind::kComplete:
      for (uint32_t a = 0; a < k; ++a) {
        for (uint32_t b = a + 1; b < k; ++b) link(a, b);
      }
      break;
    case TopologyKind::kRing:
      for (uint32_t a = 0; a < k; ++a) link(a, (a + 1) % k);
      break;
    case TopologyKind::kTorus: {
      const auto [rows, cols] = TorusShape(k);
      for (uint32_t r = 0; r < rows; ++r) {
        for (uint32_t c = 0; c < cols; ++c) {
          link(r * cols + c, r * cols + (c + 1) % cols);
          link(r * cols + c, ((r + 1) % rows) * cols + c);
        }
      }
      break;
    }
    case TopologyKind::kHierarchical: {
      const uint32_t g = Topology::kGroupSize;
      for (uint32_t a = 0; a < k; ++a) {
        for (uint32_t b = a + 1; b < k && b / g == a / g; ++b) link(a, b);
      }
      const uint32_t groups = (k + g - 1) / g;
      for (uint32_t i = 0; i < groups; ++i) link(i * g, ((i + 1) % groups) * g);
      break;
    }
  }
  return adj;
}

}  // namespace

const char* Topology::Name(TopologyKind kind) {
  switch (kind) {
    case TopologyKind::kComplete:
      return "complete";
    case TopologyKind::kRing:
      return "ring";
    case TopologyKind::kTorus:
      return "torus";
    case TopologyKind::kHierarchical:
      return "hierarchical";
  }
  return "?";
}

Topology::Topology(TopologyKind kind, uint32_t workers) : kind_(kind) {
  if (workers == 0) throw ConfigError("--workers", "a topology needs at least one worker");
  const std::vector<std::set<uint32_t>> adj = Neighbours(kind, workers);
  rows_.resize(workers);
  for (uint32_t k = 0; k < workers; ++k) {
    MixingRow& row = rows_[k];
    double off = 0;
    for (uint32_t j : adj[k]) {
      const double w = 1.0 / (1.0 + static_cast<double>(std::max(adj[k].size(), adj[j].size())));
      row.neighbours.push_back(j);
      row.weights.push_back(w);
      off += w;
    }
    // The worker itself, in ascending position.
    const auto at = std::lower_bound(row.neighbours.begin(), row.neighbours.end(), k) - row.neighbours.begin();
    row.neighbours.insert(row.neighbours.begin() + at, k);
    row.weights.insert(row.weights.begin() + at, 1.0 - off);
  }
}

uint64_t Topology::edges() const {
  uint64_t sum = 0;
  for (const MixingRow& r : rows_) sum += r.neighbours.size() - 1;
  return sum / 2;
}

std::vector<std::pair<uint32_t, uint32_t>> Topology::EdgeList() const {
  std::vector<std::pair<uint32_t, uint32_t>> list;
  for (uint32_t k = 0; k < workers(); ++k) {
    for (uint32_t j : rows_[k].neighbours) {
      if (j > k) list.emplace_back(k, j);
    }
  }
  return list;
}

uint32_t Topology::max_degree() const {
  size_t d = 0;
  for (const MixingRow& r : rows_) d = std::max(d, r.neighbours.size() - 1);
  return static_cast<uint32_t>(d);
}

double Topology::MixingRate() const {
  const uint32_t k = workers();
  if (k == 1) return 0;
  // Power iteration on W restricted to vectors orthogonal to the constant one (W is symmetric).
  std::vector<double> x(k), y(k);
  for (uint32_t i = 0; i < k; ++i) x[i] = std::sin(1.0 + 7.0 * i);
  double rate = 0;
  for (int it = 0; it < 500; ++it) {
    double mean = 0;
    for (double v : x) mean += v;
    mean /= k;
    double norm = 0;
    for (double& v : x) {
      v -= mean;
      norm += v * v;
    }
    norm = std::sqrt(norm);
    if (norm == 0) return 0;
    for (double& v : x) v /= norm;
    for (uint32_t i = 0; i < k; ++i) {
      double s = 0;
      for (size_t e = 0; e < rows_[i].neighbours.size(); ++e) s += rows_[i].weights[e] * x[rows_[i].neighbours[e]];
      y[i] = s;
    }
    double ny = 0;
    for (double v : y) ny += v * v;
    rate = std::sqrt(ny);
    x.swap(y);
  }
  return rate;
}

std::string Topology::Describe() const {
  std::string shape;
  if (kind_ == TopologyKind::kTorus) {
    const auto [rows, cols] = TorusShape(workers());
    shape = StrCat(" ", rows, " x ", cols);
  }
  return StrCat(Name(kind_), shape, " over ", workers(), " workers (degree up to ", max_degree(), ", ", edges(),
                " links)");
}

}  // namespace pimopt
