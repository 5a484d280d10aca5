// Collectives among the DPUs of today's UPMEM machines, where every byte between two DPUs passes the host: their
// modeled time by two routes.
//
//   host      the SDK's transfers, as PrIM and PIM-Opt use them: a parallel pull of every DPU's vector into host
//             buffers (the SDK converts the DIMMs' byte-interleaved layout to the host's), the host's reduction or
//             rearrangement in its DRAM (host_model.h), a broadcast or a parallel push back.
//   software  PID-Comm's collectives ([PID-Comm]): a relocation kernel on every DPU lays its vector out for the
//             exchange, host threads read the ranks' MRAM directly (no layout conversion, no copy in host DRAM),
//             reduce or move the bytes in registers and write them straight to the destination DPUs' MRAM, and a
//             second relocation kernel puts the result in place. The bytes over the DIMMs' channels are the same as
//             the host route's; the host's DRAM passes and the SDK's conversions are gone.
//
// Both are built from the transfer model that 'pimopt validate' checks against hardware (timing.h) and the profile's
// host model; the software route's direct rates and channel figures are profile fields with their sources
// (docs/pim-emulator.md "Software collectives"). A relocation kernel's time is the emulator's: the kernel runs on one
// emulated DPU (every DPU moves the same bytes).
#pragma once

#include <cstdint>
#include <memory>

#include "pimopt/pim/profile.h"

namespace pimopt::pim {

enum class Collective { kAllReduce, kReduceScatter, kAllGather, kAllToAll, kBroadcast };
enum class CollectiveRoute { kHost, kSoftware };
const char* CollectiveName(Collective c);  // "all-reduce", ...

// One collective's modeled time and traffic. Sizes: `bytes_per_dpu` is the larger of a DPU's input and output
// vector: all-reduce and all-to-all S in and S out; reduce-scatter S in, S / n out; all-gather S / n in, S out;
// broadcast S from the host to every DPU.
struct CollectiveCost {
  double seconds = 0;
  double dpu_s = 0;   // the relocation kernels with their launches (software route)
  double dpu_busy_s = 0;  // of them, the kernels' own time summed over every DPU (for energy)
  double bus_s = 0;   // transfers between the host and the DIMMs
  double host_s = 0;  // the host's reduction or rearrangement in DRAM (host route), its threads' start (software)
  uint64_t to_dpu_bytes = 0;    // over the channels, all DPUs
  uint64_t from_dpu_bytes = 0;
};

// `dpus` DPUs (numbered rank by rank, at least 1), `bytes_per_dpu` at least 8 and a multiple of 8, `element_bytes`
// 1, 2, 4 or 8 (what a reduction adds). ConfigError naming the argument otherwise.
CollectiveCost ModelCollective(const HardwareProfile& profile, Collective collective, CollectiveRoute route,
                               uint32_t dpus, uint64_t bytes_per_dpu, uint32_t element_bytes = 4);

// Modeled seconds of the software route's relocation kernel on one DPU moving `bytes` (a multiple of 8) from one
// MRAM region to another in 2 KB blocks, 8 of its 16 tasklets in lockstep as PID-Comm's, without the launch's fixed
// cost: the emulator runs it on one DPU of `profile` (memoized per profile and size).
double RelocationKernelSeconds(const HardwareProfile& profile, uint64_t bytes);

// The relocation kernel itself (kernel.h), for tests: DPU d of a set moves block i of the `bytes` (its WRAM variable
// "bytes", uint64) at MRAM heap offset 0 to block (i + d) mod blocks at heap offset `bytes`; 2 KB blocks, the last
// one shorter when `bytes` is not a multiple of 2 KB.
inline constexpr uint32_t kRelocationBlockBytes = 2048;
class Kernel;
std::shared_ptr<Kernel> MakeRelocationKernel();

}  // namespace pimopt::pim
