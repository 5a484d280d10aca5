// Collectives on today's UPMEM machines by the SDK's host route and by PID-Comm's software route (collectives.h;
// docs/pim-emulator.md "Software collectives").
#include "pimopt/pim/collectives.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <string>

#include "pimopt/core/error.h"
#include "pimopt/pim/host_model.h"
#include "pimopt/pim/kernel.h"
#include "pimopt/pim/system.h"
#include "pimopt/pim/timing.h"

namespace pimopt::pim {

namespace collective_routes {  // named: the library's sources share a unity batch

// PID-Comm's relocation kernels ([PID-Comm] pidcomm_lib/data_relocate_*/): built for 16 tasklets, of which 8 work in
// lockstep, each copying a 2 KB block MRAM -> WRAM -> MRAM to its place in the exchange's layout, with a barrier of
// the 8 after every read and after every write. Written on the operand types, so the loop's instructions are counted,
// and every DMA is an event of the clock.
constexpr uint32_t kRelocationWorkers = 8;
class RelocationKernel final : public Kernel {
 public:
  KernelSpec Spec() const override {
    KernelSpec spec;
    spec.name = "pimopt_relocate";
    spec.tasklets = 16;
    spec.wram_symbols = {{"bytes", 8}};
    spec.heap_bytes_per_tasklet = kRelocationBlockBytes;
    return spec;
  }

  void Main(Tasklet& t) override {
    if (t.me() >= kRelocationWorkers) return;
    if (t.me() == 0) t.MemReset();
    t.BarrierWait(0, kRelocationWorkers);
    const u32 bytes = Cast<uint32_t>(Load(t.Wram<uint64_t>("bytes")));
    const WramPtr<uint64_t> block = t.Alloc<uint64_t>(kRelocationBlockBytes / 8);
    const u32 source = Cast<uint32_t>(u64(t.MramHeap()));
    const u32 destination = source + bytes;
    const u32 blocks = (bytes + (kRelocationBlockBytes - 1)) / kRelocationBlockBytes;  // a shift: 2 KB blocks
    const u32 rounds = (blocks + (kRelocationWorkers - 1)) / kRelocationWorkers;
    for (u32 round = 0; round < rounds; ++round) {
      const u32 i = round * kRelocationWorkers + t.me();
      const bool mine = (i < blocks).value();
      const u32 offset = i * kRelocationBlockBytes;
      const uint32_t size = mine ? std::min<uint32_t>(kRelocationBlockBytes, (bytes - offset).value()) : 0;
      if (mine) t.MramRead(source + offset, block, size);
      t.BarrierWait(0, kRelocationWorkers);
      if (mine) {
        u32 target = i + t.dpu_index();
        while (target >= blocks) target -= blocks;
        t.MramWrite(block, destination + target * kRelocationBlockBytes, size);
      }
      t.BarrierWait(0, kRelocationWorkers);
    }
  }
};

// What the software route does for a collective: the bytes one DPU has read and written directly over the channels,
// whether the result, the same vector on every DPU, is written as the SDK's broadcast (which converts nothing per
// byte: a direct write already), and whether a relocation kernel runs before and after the host's phase ([PID-Comm]
// commlib.c launches one before a reduction or an exchange and one after to put the received chunks in place).
struct SoftwareShape {
  uint64_t read_bytes = 0, write_bytes = 0;
  bool broadcast_result = false;
  bool relocate_before = false, relocate_after = false;
};

uint64_t ChunkBytes(uint64_t bytes_per_dpu, uint32_t dpus) {
  const uint64_t chunk = (bytes_per_dpu + dpus - 1) / dpus;
  return std::max<uint64_t>(8, (chunk + 7) / 8 * 8);
}

CollectiveCost HostRoute(const HardwareProfile& p, Collective c, uint32_t n, uint64_t s, uint32_t e) {
  CollectiveCost cost;
  const uint64_t chunk = ChunkBytes(s, n), elements = s / e;
  const auto pull = [&](uint64_t bytes) {
    cost.bus_s += ModelParallelTransferSeconds(p, XferDirection::kFromDpu, n, bytes);
    cost.from_dpu_bytes += uint64_t{n} * bytes;
  };
  const auto push = [&](uint64_t bytes) {
    cost.bus_s += ModelParallelTransferSeconds(p, XferDirection::kToDpu, n, bytes);
    cost.to_dpu_bytes += uint64_t{n} * bytes;
  };
  const auto broadcast = [&](uint64_t bytes) {
    cost.bus_s += ModelBroadcastSeconds(p, n, bytes);
    cost.to_dpu_bytes += uint64_t{n} * bytes;
  };
  // Every DPU's vector summed into one (each value read, the sum written once per coordinate).
  const HostReductionWork reduce{.vectors = n, .elements = elements, .bytes_per_element = e,
                                 .update_elements = elements, .update_bytes_per_element = 2 * e};
  switch (c) {
    case Collective::kAllReduce:
      pull(s);
      cost.host_s = ModelHostReductionSeconds(p, reduce);
      broadcast(s);
      break;
    case Collective::kReduceScatter:
      pull(s);
      cost.host_s = ModelHostReductionSeconds(p, reduce);
      push(chunk);
      break;
    case Collective::kAllGather:
      // The DPUs' chunks copied into one vector (each value read and written once).
      pull(chunk);
      cost.host_s = ModelHostReductionSeconds(
          p, {.vectors = n, .elements = chunk / e, .bytes_per_element = e, .update_elements = elements,
              .update_bytes_per_element = e});
      broadcast(s);
      break;
    case Collective::kAllToAll:
      // Every DPU's chunks rearranged into the DPUs' new vectors (each value read and written once).
      pull(s);
      cost.host_s = ModelHostReductionSeconds(
          p, {.vectors = n, .elements = elements, .bytes_per_element = e, .update_elements = uint64_t{n} * elements,
              .update_bytes_per_element = e});
      push(s);
      break;
    case Collective::kBroadcast:
      broadcast(s);
      break;
  }
  cost.seconds = cost.bus_s + cost.host_s;
  return cost;
}

CollectiveCost SoftwareRoute(const HardwareProfile& p, Collective c, uint32_t n, uint64_t s, uint32_t e) {
  if (c == Collective::kBroadcast) return HostRoute(p, c, n, s, e);  // PID-Comm's broadcast is the SDK's
  const uint64_t chunk = ChunkBytes(s, n);
  SoftwareShape shape;
  switch (c) {
    case Collective::kAllReduce: shape = {s, 0, true, true, false}; break;
    case Collective::kReduceScatter: shape = {s, chunk, false, true, false}; break;
    case Collective::kAllGather: shape = {chunk, 0, true, false, false}; break;
    case Collective::kAllToAll: shape = {s, s, false, true, true}; break;
    case Collective::kBroadcast: break;
  }
  CollectiveCost cost;
  cost.from_dpu_bytes = uint64_t{n} * shape.read_bytes;
  cost.to_dpu_bytes = uint64_t{n} * shape.write_bytes;
  // The host's threads work on the ranks in parallel: the busiest rank's direct reads and writes at the direct rates,
  // or the channels' bandwidth over all of them, whichever is slower; a result that is the same on every DPU is then
  // broadcast; last, the 8-byte handshake pull PID-Comm makes per call.
  const double in_rank = std::min(n, p.dpus_per_rank);
  const double per_rank_s =
      in_rank * (static_cast<double>(shape.read_bytes) / p.direct_from_dpu_bytes_per_s +
                 static_cast<double>(shape.write_bytes) / p.direct_to_dpu_bytes_per_s);
  const double channels = static_cast<double>((uint64_t{n} + p.dpus_per_channel - 1) / p.dpus_per_channel);
  const double channel_s =
      static_cast<double>(cost.from_dpu_bytes + cost.to_dpu_bytes) / (channels * p.pim_channel_bytes_per_s);
  // The host's work in registers: every value read is added (a reduction) or moved between lanes, at the host model's
  // cycles per element, on the collective's threads (at most the host's cores). It overlaps the streaming loads and
  // stores: the phase takes the longer of the two.
  const double values = static_cast<double>(cost.from_dpu_bytes) / e;
  const double threads = std::min(p.collective_host_threads, p.host_cores);
  const double register_s = values * p.host_cycles_per_element / (p.host_clock_hz * threads);
  cost.bus_s = std::max({per_rank_s, channel_s, register_s}) +
               ModelParallelTransferSeconds(p, XferDirection::kFromDpu, n, 8);
  if (shape.broadcast_result) {
    cost.bus_s += ModelBroadcastSeconds(p, n, s);
    cost.to_dpu_bytes += uint64_t{n} * s;
  }
  cost.host_s = p.collective_host_threads * p.host_thread_start_s;
  const double kernel_s = RelocationKernelSeconds(p, s);
  const int kernels = (shape.relocate_before ? 1 : 0) + (shape.relocate_after ? 1 : 0);
  cost.dpu_s = kernels * (ModelLaunchOverheadSeconds(p, n) + kernel_s);
  cost.dpu_busy_s = kernels * kernel_s * n;
  cost.seconds = cost.dpu_s + cost.bus_s + cost.host_s;
  return cost;
}

}  // namespace collective_routes

using collective_routes::HostRoute;
using collective_routes::RelocationKernel;
using collective_routes::SoftwareRoute;

const char* CollectiveName(Collective c) {
  switch (c) {
    case Collective::kAllReduce: return "all-reduce";
    case Collective::kReduceScatter: return "reduce-scatter";
    case Collective::kAllGather: return "all-gather";
    case Collective::kAllToAll: return "all-to-all";
    case Collective::kBroadcast: return "broadcast";
  }
  return "?";
}

std::shared_ptr<Kernel> MakeRelocationKernel() { return std::make_shared<RelocationKernel>(); }

double RelocationKernelSeconds(const HardwareProfile& profile, uint64_t bytes) {
  if (bytes == 0 || bytes % 8 != 0 || 2 * bytes > profile.mram_bytes) {
    throw ConfigError("bytes", StrCat("a relocation moves a multiple of 8 bytes, at most half of the MRAM (",
                                      profile.mram_bytes / 2, "), not ", bytes));
  }
  // The kernel's time depends on the profile's DPU fields and the size only: keyed by every field's value.
  std::string key = std::to_string(bytes);
  for (const auto& entry : ProfileFields().entries()) {
    key += ',';  // appended apart: GCC 12 warns (-Wrestrict, a false positive) on "," + a temporary string
    key += ProfileFields().GetText(profile, entry.info.name);
  }
  static std::mutex mutex;
  static std::map<std::string, double> seconds_of;
  {
    const std::lock_guard<std::mutex> lock(mutex);
    if (const auto it = seconds_of.find(key); it != seconds_of.end()) return it->second;
  }
  PimSystem system(profile, 1);
  DpuSet set = system.Allocate(1);
  set.Load(MakeRelocationKernel());
  set.BroadcastTo("bytes", 0, &bytes, sizeof(bytes));
  const double seconds = set.Launch().kernel_s;
  const std::lock_guard<std::mutex> lock(mutex);
  seconds_of.emplace(key, seconds);
  return seconds;
}

CollectiveCost ModelCollective(const HardwareProfile& profile, Collective collective, CollectiveRoute route,
                               uint32_t dpus, uint64_t bytes_per_dpu, uint32_t element_bytes) {
  if (dpus == 0) throw ConfigError("dpus", "a collective needs at least one DPU");
  if (bytes_per_dpu < 8 || bytes_per_dpu % 8 != 0) {
    throw ConfigError("bytes", StrCat("bytes per DPU must be a positive multiple of 8, not ", bytes_per_dpu));
  }
  if (element_bytes != 1 && element_bytes != 2 && element_bytes != 4 && element_bytes != 8) {
    throw ConfigError("element-bytes", StrCat("an element has 1, 2, 4 or 8 bytes, not ", element_bytes));
  }
  return route == CollectiveRoute::kHost
             ? HostRoute(profile, collective, dpus, bytes_per_dpu, element_bytes)
             : SoftwareRoute(profile, collective, dpus, bytes_per_dpu, element_bytes);
}

}  // namespace pimopt::pim
