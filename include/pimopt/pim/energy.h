// The modeled energy of a run on the PIM machine, in joules, from its modeled times and bytes (docs/pim-emulator.md
// "Energy"; every figure a profile field with its source):
//  - DPUs: each DPU's busy time at the active power of a DPU (dpu_active_power_w);
//  - transfers between the host and the DPUs: the bytes over the DRAM channel (channel_energy_j_per_byte) and the
//    host cores that move them, one per rank worked in parallel (host_core_power_w);
//  - the host: its cores during each reduction (min(host_reduction_threads, host_cores)) and during launches (one);
//  - what-if DPU links: their bytes at the channel's energy per byte (an assumption: no such link exists);
//  - software collectives (collectives.h): their bytes over the channels, the host threads that stream them
//    (min(collective_host_threads, host_cores) cores) and every DPU busy in the relocation kernels.
// Not modeled: the static power of idle DPUs and DIMMs, the host's uncore and memory beyond the channel's bytes.
#pragma once

#include <cstdint>

#include "pimopt/pim/profile.h"

namespace pimopt::pim {

struct EnergyJoules {
  double dpu_j = 0;
  double transfer_j = 0;
  double host_j = 0;
  double link_j = 0;
  double total_j() const { return dpu_j + transfer_j + host_j + link_j; }
};

// DPUs that were busy for `dpu_busy_s` seconds in all (summed over DPUs).
double DpuEnergyJoules(const HardwareProfile& p, double dpu_busy_s);
// Host <-> DPU transfers of `bytes` in all over `dpus` DPUs, taking `seconds` (one host core per rank).
double TransferEnergyJoules(const HardwareProfile& p, uint32_t dpus, double bytes, double seconds);
// The host's reductions (`reduction_s`) and launches (`launch_s`).
double HostEnergyJoules(const HardwareProfile& p, double reduction_s, double launch_s);
// Bytes over what-if DPU links.
double LinkEnergyJoules(const HardwareProfile& p, double bytes);
// Software collectives: `bytes` over the channels in `bus_s` seconds, and DPUs busy `dpu_busy_s` seconds in all
// (summed over DPUs) in relocation kernels. Returned as the transfers' and the DPUs' shares.
EnergyJoules CollectiveEnergyJoules(const HardwareProfile& p, double bytes, double bus_s, double dpu_busy_s);

}  // namespace pimopt::pim
