// A synchronization's pull and the host's reduction, synchronous (PIM-Opt's host: pull every DPU's whole vector,
// then sum and update) or pipelined in chunks of coordinates with the SDK's asynchronous transfers
// (DPU_XFER_ASYNC): while the DPUs' coordinates [c, c + n/C) are summed and the model updated there, the next chunk
// is on its way. The host's reduction is per coordinate (sums, the model step, ADMM's duals), so a chunk's update
// needs only that chunk's sums.
//
// Model (docs/pim-emulator.md, "Asynchronous transfers"): with C chunks, a chunk's pull takes the transfer model's
// time for 1/C of each DPU's bytes (its fixed cost included: each chunk is a call) and its host work 1/C of the
// reduction's per-coordinate time; two stages in a row over C equal chunks take
//   T(C) = start + pull_c + host_c + (C - 1) max(pull_c, host_c),
// where `start` is the reduction threads' start (once). Overlapped, the pull's bytes and the reduction's streams
// share the host's memory, so T(C) is at least (pulled bytes + reduction bytes) / host_memory_bytes_per_s. The host
// takes the best C in 1..64 (C = 1 is the synchronous round); its chunks are at least 8 bytes per DPU.
// Not modeled: overlapping transfers of one rank with another rank's kernel (with equal work per rank every rank
// is ready at the same time, and staggering them only delays the last one), nor the next round's push of a chunk
// right after its update.
#pragma once

#include <cstdint>
#include <span>

#include "pimopt/pim/host_model.h"
#include "pimopt/pim/profile.h"
#include "pimopt/pim/timing.h"

namespace pimopt::pim {

// One pull of a synchronization: bytes per DPU from each DPU.
struct PullShape {
  uint64_t bytes_per_dpu = 0;
  auto operator<=>(const PullShape&) const = default;
};

struct PipelinedReduction {
  double synchronous_s = 0;  // the pulls, then the host's reduction
  double pipelined_s = 0;    // in the best number of chunks (<= synchronous_s)
  uint32_t chunks = 1;
  double saved_s() const { return synchronous_s - pipelined_s; }
};

PipelinedReduction ModelPipelinedReduction(const HardwareProfile& profile, uint32_t dpus,
                                           std::span<const PullShape> pulls, const HostReductionWork& host);

}  // namespace pimopt::pim
