// What-if DPU <-> DPU links: which pairs a profile links, and the modeled time of a neighbour exchange over them.
//
// Today's UPMEM has no such path (link_scope none): every byte between DPUs passes through the host. A profile may
// declare links (profile.h, "what-if DPU links"): between the DPUs of a chip, of a rank, or all DPUs, where a
// cross-rank message also passes the two ranks' ports. The model is one of ports, not of bytes over a bandwidth:
// each DPU has a port per direction whose messages are serialized (latency + bytes / link_bytes_per_s each), each
// rank a port per direction to the other ranks shared by all of its DPUs' cross-rank messages, and an exchange takes
// as long as its busiest port. Contention is thereby counted where it arises: a DPU with four neighbours sends four
// models one after the other; a rank whose 64 DPUs all talk across ranks serializes 64 messages on its port.
// The figures of the links are assumptions (docs/pim-emulator.md, "What-if interconnects").
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <utility>

#include "pimopt/pim/profile.h"

namespace pimopt::pim {

// Whether a direct link joins DPUs a and b (indices in the system, DPUs numbered rank by rank).
bool Linked(const HardwareProfile& profile, uint32_t a, uint32_t b);

struct LinkExchangeTime {
  double seconds = 0;
  uint64_t link_bytes = 0;        // over all messages
  uint64_t cross_rank_bytes = 0;  // of them, across ranks
};

// Each undirected edge {a, b} exchanges one message of `bytes` each way. nullopt when an edge joins DPUs that no
// link joins, or the profile has no links at all (the caller then routes the exchange through the host). The
// collectives below are nullopt on a profile without links too, even over one DPU.
std::optional<LinkExchangeTime> ModelNeighbourExchange(const HardwareProfile& profile, uint32_t dpus,
                                                       std::span<const std::pair<uint32_t, uint32_t>> edges,
                                                       uint64_t bytes);

// A ring all-reduce of `bytes` per DPU over DPUs 0..dpus-1 in order (reduce-scatter then all-gather: 2 (K - 1) steps,
// each DPU sending bytes / K to the next; a hop across ranks also passes both ranks' ports). nullopt unless links
// join every pair of consecutive DPUs and the last to the first. After it every DPU holds the sum.
std::optional<LinkExchangeTime> ModelRingAllReduce(const HardwareProfile& profile, uint32_t dpus, uint64_t bytes);

// Its halves: reduce-scatter (after it DPU k holds the sum of the k-th 1/K of the vector) and all-gather (every DPU
// then holds every DPU's 1/K): K - 1 steps each, each DPU sending bytes / K to the next. nullopt as above.
std::optional<LinkExchangeTime> ModelRingReduceScatter(const HardwareProfile& profile, uint32_t dpus, uint64_t bytes);
std::optional<LinkExchangeTime> ModelRingAllGather(const HardwareProfile& profile, uint32_t dpus, uint64_t bytes);

// A hierarchical all-reduce over whole ranks (dpus a multiple of dpus_per_rank, at least two ranks): a reduce-scatter
// within every rank's ring of G DPUs (concurrently); each rank's first DPU (its leader) gathers the reduced shares
// (G - 1 messages in a row on its port); a ring all-reduce of the whole vector among the R leaders (one message per
// rank port per step); the leader scatters the shares back and an all-gather within every rank completes it.
// 4 (G - 1) in-rank messages and 2 (R - 1) cross-rank steps instead of the flat ring's 2 (GR - 1) steps.
// nullopt unless links join each rank's ring and the leaders' ring.
std::optional<LinkExchangeTime> ModelHierarchicalAllReduce(const HardwareProfile& profile, uint32_t dpus,
                                                           uint64_t bytes);

// The faster of the flat ring and the hierarchical all-reduce that the links allow (nullopt: neither).
std::optional<LinkExchangeTime> ModelAllReduce(const HardwareProfile& profile, uint32_t dpus, uint64_t bytes);

}  // namespace pimopt::pim
