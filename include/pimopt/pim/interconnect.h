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
// link joins (the caller then routes the exchange through the host).
std::optional<LinkExchangeTime> ModelNeighbourExchange(const HardwareProfile& profile, uint32_t dpus,
                                                       std::span<const std::pair<uint32_t, uint32_t>> edges,
                                                       uint64_t bytes);

// A ring all-reduce of `bytes` per DPU over DPUs 0..dpus-1 in order (reduce-scatter then all-gather: 2 (K - 1) steps,
// each DPU sending bytes / K to the next; a hop across ranks also passes both ranks' ports). nullopt unless links
// join every pair of consecutive DPUs and the last to the first. After it every DPU holds the sum.
std::optional<LinkExchangeTime> ModelRingAllReduce(const HardwareProfile& profile, uint32_t dpus, uint64_t bytes);

}  // namespace pimopt::pim
