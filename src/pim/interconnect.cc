#include "pimopt/pim/interconnect.h"

#include <algorithm>
#include <vector>

namespace pimopt::pim {

bool Linked(const HardwareProfile& profile, uint32_t a, uint32_t b) {
  switch (profile.link_scope) {
    case LinkScope::kNone:
      return false;
    case LinkScope::kChip:
      return a / profile.dpus_per_chip == b / profile.dpus_per_chip &&
             a / profile.dpus_per_rank == b / profile.dpus_per_rank;
    case LinkScope::kRank:
      return a / profile.dpus_per_rank == b / profile.dpus_per_rank;
    case LinkScope::kSystem:
      return true;
  }
  return false;
}

std::optional<LinkExchangeTime> ModelNeighbourExchange(const HardwareProfile& profile, uint32_t dpus,
                                                       std::span<const std::pair<uint32_t, uint32_t>> edges,
                                                       uint64_t bytes) {
  const uint32_t ranks = (dpus + profile.dpus_per_rank - 1) / profile.dpus_per_rank;
  // Busy seconds of each port: DPU out / in, rank out / in.
  std::vector<double> dpu_out(dpus, 0.0), dpu_in(dpus, 0.0), rank_out(ranks, 0.0), rank_in(ranks, 0.0);
  const double message_s = profile.link_latency_s + static_cast<double>(bytes) / profile.link_bytes_per_s;
  const double cross_s =
      profile.inter_rank_link_latency_s + static_cast<double>(bytes) / profile.inter_rank_link_bytes_per_s;
  LinkExchangeTime t;
  for (const auto& [a, b] : edges) {
    if (a >= dpus || b >= dpus || !Linked(profile, a, b)) return std::nullopt;
    for (const auto& [from, to] : {std::pair{a, b}, std::pair{b, a}}) {
      dpu_out[from] += message_s;
      dpu_in[to] += message_s;
      t.link_bytes += bytes;
      const uint32_t rf = from / profile.dpus_per_rank, rt = to / profile.dpus_per_rank;
      if (rf != rt) {
        rank_out[rf] += cross_s;
        rank_in[rt] += cross_s;
        t.cross_rank_bytes += bytes;
      }
    }
  }
  for (const std::vector<double>* ports : {&dpu_out, &dpu_in, &rank_out, &rank_in}) {
    if (!ports->empty()) t.seconds = std::max(t.seconds, *std::max_element(ports->begin(), ports->end()));
  }
  return t;
}

std::optional<LinkExchangeTime> ModelRingAllReduce(const HardwareProfile& profile, uint32_t dpus, uint64_t bytes) {
  LinkExchangeTime t;
  if (dpus <= 1) return t;
  bool crosses_ranks = false;
  for (uint32_t k = 0; k < dpus; ++k) {
    const uint32_t next = (k + 1) % dpus;
    if (!Linked(profile, k, next)) return std::nullopt;
    crosses_ranks |= k / profile.dpus_per_rank != next / profile.dpus_per_rank;
  }
  const double chunk = static_cast<double>(bytes) / dpus;
  // Each step every DPU's port sends and receives one chunk; a rank's port carries its one cross-rank hop.
  double step_s = profile.link_latency_s + chunk / profile.link_bytes_per_s;
  if (crosses_ranks) {
    step_s = std::max(step_s, profile.inter_rank_link_latency_s + chunk / profile.inter_rank_link_bytes_per_s);
  }
  const uint64_t steps = 2 * (uint64_t{dpus} - 1);
  t.seconds = static_cast<double>(steps) * step_s;
  t.link_bytes = static_cast<uint64_t>(static_cast<double>(steps) * chunk * dpus);
  if (crosses_ranks) {
    const uint32_t ranks = (dpus + profile.dpus_per_rank - 1) / profile.dpus_per_rank;
    t.cross_rank_bytes = static_cast<uint64_t>(static_cast<double>(steps) * chunk * ranks);
  }
  return t;
}

}  // namespace pimopt::pim
