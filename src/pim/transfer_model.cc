// The host <-> DPU transfer and launch models (declared in timing.h beside the DPU's clock): what a transfer or a
// launch costs the host, from the profile's rates and overheads (docs/pim-emulator.md "Host transfers").
#include <algorithm>
#include <cmath>
#include <vector>

#include "pimopt/pim/machine_log.h"
#include "pimopt/pim/timing.h"

namespace pimopt::pim {

namespace {

// Aggregate bandwidth of a parallel push over `dpus` DPUs: within one rank it grows from the single-DPU rate to
// the full-rank rate geometrically in the number of DPUs ([PrIM]: 0.33 GB/s for 1 DPU, 6.68 GB/s for 64;
// interpolation inferred); ranks add up to the host's cap ([sdk-light]). Sources: docs/sources.md.
// A transfer call's fixed cost: once per call, per further rank, and per DPU of one rank (the SDK works the
// ranks in parallel, the DPUs of a rank one after another).
double TransferOverheadSeconds(double call_s, double per_rank_s, double per_dpu_s, const HardwareProfile& p,
                               uint32_t dpus) {
  return call_s + per_rank_s * (p.RanksFor(dpus) - 1) + per_dpu_s * std::min(dpus, p.dpus_per_rank);
}

// A push's bandwidth falls as the bytes one rank's worker reads outgrow the host's caches: the factor is
// 1 / (1 + (rank_bytes / knee)^exponent).
double PushCacheFactor(const HardwareProfile& p, double rank_bytes) {
  return 1.0 / (1.0 + std::pow(rank_bytes / p.push_bandwidth_knee_bytes, p.push_bandwidth_knee_exponent));
}

// One rank's bandwidth in a parallel transfer: it grows from one DPU's to a full rank's geometrically in the DPUs
// the rank holds, times `factor` (the host's cache effect on pushes). Ranks add up to the host's cap.
double RankBandwidth(const HardwareProfile& p, double single, double rank, uint32_t dpus, double factor = 1.0) {
  const uint32_t in_rank = std::min(dpus, p.dpus_per_rank);
  const double exponent = p.dpus_per_rank > 1 ? std::log(in_rank) / std::log(p.dpus_per_rank) : 1.0;
  return single * std::pow(rank / single, exponent) * factor;
}

// A transfer's fixed cost, each rank's bandwidth and the host's cap.
struct RankTransferRates {
  double latency_s = 0;
  double rank_bytes_per_s = 0;
  double cap_bytes_per_s = 0;
  uint32_t ranks = 0;
};
RankTransferRates ModelRankTransferRates(const HardwareProfile& p, TransferShape shape, uint32_t dpus,
                                         uint64_t bytes_per_dpu, uint32_t sources_per_rank) {
  RankTransferRates r;
  r.ranks = p.RanksFor(dpus);
  const uint32_t in_rank = std::min(dpus, p.dpus_per_rank);
  switch (shape) {
    case TransferShape::kParallelPush: {
      const uint32_t sources = sources_per_rank == 0 ? in_rank : std::min(sources_per_rank, in_rank);
      const double rank_bytes = static_cast<double>(sources) * static_cast<double>(bytes_per_dpu);
      r.latency_s = TransferOverheadSeconds(p.push_to_dpu_overhead_s, p.push_to_dpu_overhead_per_rank_s,
                                            p.push_to_dpu_overhead_per_dpu_s, p, dpus);
      r.rank_bytes_per_s =
          RankBandwidth(p, p.serial_to_dpu_bytes_per_s, p.rank_to_dpu_bytes_per_s, dpus, PushCacheFactor(p, rank_bytes));
      r.cap_bytes_per_s = p.max_to_dpu_bytes_per_s;
      break;
    }
    case TransferShape::kBroadcast:
      // One source buffer feeds every copy: the cache effect follows its size.
      r.latency_s = TransferOverheadSeconds(p.push_to_dpu_overhead_s, p.push_to_dpu_overhead_per_rank_s,
                                            p.push_to_dpu_overhead_per_dpu_s, p, dpus);
      r.rank_bytes_per_s = RankBandwidth(p, p.serial_to_dpu_bytes_per_s, p.rank_broadcast_bytes_per_s, dpus,
                                         PushCacheFactor(p, static_cast<double>(bytes_per_dpu)));
      r.cap_bytes_per_s = p.max_broadcast_bytes_per_s;
      break;
    case TransferShape::kParallelPull:
      r.latency_s = TransferOverheadSeconds(p.push_from_dpu_overhead_s, p.push_from_dpu_overhead_per_rank_s,
                                            p.push_from_dpu_overhead_per_dpu_s, p, dpus);
      r.rank_bytes_per_s = RankBandwidth(p, p.serial_from_dpu_bytes_per_s, p.rank_from_dpu_bytes_per_s, dpus);
      r.cap_bytes_per_s = p.max_from_dpu_bytes_per_s;
      break;
  }
  return r;
}

}  // namespace

double ModelTransferSeconds(const HardwareProfile& p, TransferShape shape, uint32_t dpus, uint64_t bytes_per_dpu,
                            uint32_t sources_per_rank) {
  if (dpus == 0 || bytes_per_dpu == 0) return 0;
  const RankTransferRates r = ModelRankTransferRates(p, shape, dpus, bytes_per_dpu, sources_per_rank);
  // Bytes delivered (a broadcast's too, as PrIM counts them), at the ranks' rates up to the host's cap.
  const double bytes = static_cast<double>(dpus) * static_cast<double>(bytes_per_dpu);
  return r.latency_s + bytes / std::min(r.cap_bytes_per_s, r.rank_bytes_per_s * r.ranks);
}

double ModelParallelTransferSeconds(const HardwareProfile& p, XferDirection direction, uint32_t dpus,
                                    uint64_t bytes_per_dpu, uint32_t sources_per_rank) {
  return ModelTransferSeconds(
      p, direction == XferDirection::kToDpu ? TransferShape::kParallelPush : TransferShape::kParallelPull, dpus,
      bytes_per_dpu, sources_per_rank);
}

uint32_t SourcesPerRank(const std::vector<const void*>& buffers, uint32_t dpus_per_rank) {
  uint32_t most = 0;
  const size_t group = std::max<uint32_t>(1, dpus_per_rank);
  for (size_t first = 0; first < buffers.size(); first += group) {
    std::vector<const void*> rank(buffers.begin() + static_cast<std::ptrdiff_t>(first),
                                  buffers.begin() + static_cast<std::ptrdiff_t>(std::min(buffers.size(), first + group)));
    rank.erase(std::remove(rank.begin(), rank.end(), nullptr), rank.end());
    std::sort(rank.begin(), rank.end());
    most = std::max(most, static_cast<uint32_t>(std::unique(rank.begin(), rank.end()) - rank.begin()));
  }
  return most;
}

double ModelBroadcastSeconds(const HardwareProfile& p, uint32_t dpus, uint64_t bytes) {
  return ModelTransferSeconds(p, TransferShape::kBroadcast, dpus, bytes);
}

double ModelSerialTransferSeconds(const HardwareProfile& p, XferDirection direction, uint32_t set_dpus,
                                  uint64_t bytes) {
  const bool to = direction == XferDirection::kToDpu;
  const double bw = to ? p.serial_to_dpu_bytes_per_s : p.serial_from_dpu_bytes_per_s;
  // A serial read waits on every DPU of the set's rank, as a parallel pull does (the per-DPU term).
  const double per_dpu = to ? 0.0 : p.push_from_dpu_overhead_per_dpu_s * std::min(set_dpus, p.dpus_per_rank);
  return p.serial_call_overhead_s + per_dpu + static_cast<double>(bytes) / bw;
}

double ModelTransferSeconds(const HardwareProfile& p, const TransferVerb& verb) {
  switch (verb.kind) {
    case TransferVerb::Kind::kPush:
      return ModelTransferSeconds(p, TransferShape::kParallelPush, verb.dpus, verb.bytes_per_dpu,
                                  verb.sources_per_rank);
    case TransferVerb::Kind::kPull:
      return ModelTransferSeconds(p, TransferShape::kParallelPull, verb.dpus, verb.bytes_per_dpu);
    case TransferVerb::Kind::kBroadcast:
      return ModelTransferSeconds(p, TransferShape::kBroadcast, verb.dpus, verb.bytes_per_dpu);
    case TransferVerb::Kind::kCopyTo:
      return ModelSerialTransferSeconds(p, XferDirection::kToDpu, verb.dpus, verb.bytes_per_dpu);
    case TransferVerb::Kind::kCopyFrom:
      return ModelSerialTransferSeconds(p, XferDirection::kFromDpu, verb.dpus, verb.bytes_per_dpu);
  }
  return 0;
}

double ModelLaunchOverheadSeconds(const HardwareProfile& p, uint32_t dpus) {
  return p.launch_overhead_s + p.launch_overhead_per_rank_s * p.RanksFor(dpus);
}

}  // namespace pimopt::pim
