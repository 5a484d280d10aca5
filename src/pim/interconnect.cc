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
  // No links, or one DPU: no exchange between DPUs (one DPU's synchronization is the host's round trip).
  if (profile.link_scope == LinkScope::kNone || dpus <= 1) return std::nullopt;
  const uint32_t ranks = profile.RanksFor(dpus);
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

namespace {

// Whether links join every consecutive pair of DPUs first, first + stride, ... (members of one ring, in order) and
// the last to the first; whether any of those hops crosses ranks.
struct RingLinks {
  bool linked = true;
  bool crosses_ranks = false;
};
RingLinks CheckRing(const HardwareProfile& profile, uint32_t first, uint32_t stride, uint32_t members) {
  RingLinks r;
  for (uint32_t i = 0; i < members && members > 1; ++i) {
    const uint32_t a = first + i * stride, b = first + ((i + 1) % members) * stride;
    if (!Linked(profile, a, b)) r.linked = false;
    r.crosses_ranks |= a / profile.dpus_per_rank != b / profile.dpus_per_rank;
  }
  return r;
}

// `steps` ring steps in which each of `rings` concurrent rings of `members` DPUs moves `chunk` bytes per DPU to the
// next; with `crosses_ranks`, a rank port carries one cross-rank hop per step.
LinkExchangeTime RingSteps(const HardwareProfile& profile, uint64_t steps, double chunk, uint32_t members,
                           uint32_t rings, bool crosses_ranks) {
  LinkExchangeTime t;
  double step_s = profile.link_latency_s + chunk / profile.link_bytes_per_s;
  if (crosses_ranks) {
    step_s = std::max(step_s, profile.inter_rank_link_latency_s + chunk / profile.inter_rank_link_bytes_per_s);
  }
  t.seconds = static_cast<double>(steps) * step_s;
  t.link_bytes = static_cast<uint64_t>(static_cast<double>(steps) * chunk * members * rings);
  return t;
}

void Add(LinkExchangeTime& into, const LinkExchangeTime& t) {
  into.seconds += t.seconds;
  into.link_bytes += t.link_bytes;
  into.cross_rank_bytes += t.cross_rank_bytes;
}

// Reduce-scatter or all-gather over one flat ring of DPUs 0..dpus-1: K - 1 steps of bytes / K.
std::optional<LinkExchangeTime> FlatRingHalf(const HardwareProfile& profile, uint32_t dpus, uint64_t bytes) {
  // No links, or one DPU: no collective. A one-DPU "all-reduce" would be free and hide the host's round trip that
  // one DPU's synchronization is (MB-SGD's gradient pulled, the step, the model pushed back).
  if (profile.link_scope == LinkScope::kNone || dpus <= 1) return std::nullopt;
  LinkExchangeTime t;
  const RingLinks ring = CheckRing(profile, 0, 1, dpus);
  if (!ring.linked) return std::nullopt;
  const double chunk = static_cast<double>(bytes) / dpus;
  t = RingSteps(profile, dpus - 1, chunk, dpus, 1, ring.crosses_ranks);
  if (ring.crosses_ranks) {
    const uint32_t ranks = profile.RanksFor(dpus);
    t.cross_rank_bytes = static_cast<uint64_t>(static_cast<double>(dpus - 1) * chunk * ranks);
  }
  return t;
}

}  // namespace

std::optional<LinkExchangeTime> ModelRingReduceScatter(const HardwareProfile& profile, uint32_t dpus, uint64_t bytes) {
  return FlatRingHalf(profile, dpus, bytes);
}

std::optional<LinkExchangeTime> ModelRingAllGather(const HardwareProfile& profile, uint32_t dpus, uint64_t bytes) {
  return FlatRingHalf(profile, dpus, bytes);
}

std::optional<LinkExchangeTime> ModelRingAllReduce(const HardwareProfile& profile, uint32_t dpus, uint64_t bytes) {
  std::optional<LinkExchangeTime> t = FlatRingHalf(profile, dpus, bytes);
  if (t) Add(*t, *t);  // reduce-scatter, then all-gather of the same size
  return t;
}

std::optional<LinkExchangeTime> ModelHierarchicalAllReduce(const HardwareProfile& profile, uint32_t dpus,
                                                           uint64_t bytes) {
  const uint32_t group = std::min(dpus, profile.dpus_per_rank);
  if (dpus <= group || dpus % group != 0) return std::nullopt;  // one rank, or ranks of unequal size
  const uint32_t ranks = dpus / group;
  // Every rank's ring, and the ring of the ranks' first DPUs (the leaders), must be linked.
  for (uint32_t r = 0; r < ranks; ++r) {
    if (!CheckRing(profile, r * group, 1, group).linked) return std::nullopt;
  }
  if (!CheckRing(profile, 0, group, ranks).linked) return std::nullopt;
  LinkExchangeTime t;
  const double share = static_cast<double>(bytes) / group;
  const double share_s = profile.link_latency_s + share / profile.link_bytes_per_s;
  // 1. A reduce-scatter within every rank (concurrently): G - 1 steps of bytes / G.
  Add(t, RingSteps(profile, group - 1, share, group, ranks, false));
  // 2. Every rank's first DPU (its leader) gathers the G - 1 other reduced shares, one after the other on its port.
  t.seconds += (group - 1) * share_s;
  t.link_bytes += static_cast<uint64_t>(share * (group - 1) * ranks);
  // 3. A ring all-reduce of the whole vector among the R leaders: 2 (R - 1) steps of bytes / R, one message per rank
  //    port per step.
  const double chunk = static_cast<double>(bytes) / ranks;
  LinkExchangeTime cross = RingSteps(profile, 2 * (uint64_t{ranks} - 1), chunk, ranks, 1, true);
  cross.cross_rank_bytes = cross.link_bytes;
  Add(t, cross);
  // 4. Each leader scatters the shares back, then an all-gather within every rank.
  t.seconds += (group - 1) * share_s;
  t.link_bytes += static_cast<uint64_t>(share * (group - 1) * ranks);
  Add(t, RingSteps(profile, group - 1, share, group, ranks, false));
  return t;
}

std::optional<LinkExchangeTime> ModelAllReduce(const HardwareProfile& profile, uint32_t dpus, uint64_t bytes) {
  const std::optional<LinkExchangeTime> flat = ModelRingAllReduce(profile, dpus, bytes);
  const std::optional<LinkExchangeTime> hierarchical = ModelHierarchicalAllReduce(profile, dpus, bytes);
  if (flat && (!hierarchical || flat->seconds <= hierarchical->seconds)) return flat;
  return hierarchical;
}

}  // namespace pimopt::pim
