#include "pimopt/pim/pipelined_reduction.h"

#include <algorithm>

namespace pimopt::pim {

PipelinedReduction ModelPipelinedReduction(const HardwareProfile& p, uint32_t dpus, std::span<const PullShape> pulls,
                                           const HostReductionWork& host) {
  PipelinedReduction r;
  const double host_s = ModelHostReductionSeconds(p, host);
  const double start_s = host_s > 0 ? p.host_reduction_threads * p.host_thread_start_s : 0.0;
  const double per_coordinate_s = host_s - start_s;
  double pulled_bytes = 0;
  uint64_t smallest = 0;
  for (const PullShape& pull : pulls) {
    r.synchronous_s += ModelTransferSeconds(p, TransferShape::kParallelPull, dpus, pull.bytes_per_dpu);
    pulled_bytes += static_cast<double>(dpus) * static_cast<double>(pull.bytes_per_dpu);
    if (pull.bytes_per_dpu > 0) smallest = smallest == 0 ? pull.bytes_per_dpu : std::min(smallest, pull.bytes_per_dpu);
  }
  r.synchronous_s += host_s;
  r.pipelined_s = r.synchronous_s;
  if (smallest == 0 || per_coordinate_s <= 0) return r;
  const double reduction_bytes =
      static_cast<double>(host.vectors) * static_cast<double>(host.elements) * host.bytes_per_element +
      static_cast<double>(host.update_elements) * host.update_bytes_per_element;
  const double memory_bound_s = start_s + (pulled_bytes + reduction_bytes) / p.host_memory_bytes_per_s;
  const uint64_t most_chunks = std::min<uint64_t>(64, smallest / 8);
  for (uint64_t c = 2; c <= most_chunks; ++c) {
    double pull_c = 0;
    for (const PullShape& pull : pulls) {
      const uint64_t chunk_bytes = (pull.bytes_per_dpu + 8 * c - 1) / (8 * c) * 8;  // 8-byte aligned, rounded up
      pull_c += ModelTransferSeconds(p, TransferShape::kParallelPull, dpus, chunk_bytes);
    }
    const double host_c = per_coordinate_s / static_cast<double>(c);
    const double t = std::max(memory_bound_s,
                              start_s + pull_c + host_c + static_cast<double>(c - 1) * std::max(pull_c, host_c));
    if (t < r.pipelined_s) {
      r.pipelined_s = t;
      r.chunks = static_cast<uint32_t>(c);
    }
  }
  return r;
}

}  // namespace pimopt::pim
