#include "pimopt/pim/energy.h"

#include <algorithm>

namespace pimopt::pim {

double DpuEnergyJoules(const HardwareProfile& p, double dpu_busy_s) { return dpu_busy_s * p.dpu_active_power_w; }

double TransferEnergyJoules(const HardwareProfile& p, uint32_t dpus, double bytes, double seconds) {
  const uint32_t ranks = p.RanksFor(dpus);
  const uint32_t cores = std::max<uint32_t>(1, std::min(ranks, p.host_cores));
  return bytes * p.channel_energy_j_per_byte + seconds * cores * p.host_core_power_w;
}

double HostEnergyJoules(const HardwareProfile& p, double reduction_s, double launch_s) {
  const uint32_t cores = std::max<uint32_t>(1, std::min(p.host_reduction_threads, p.host_cores));
  return (reduction_s * cores + launch_s) * p.host_core_power_w;
}

double LinkEnergyJoules(const HardwareProfile& p, double bytes) { return bytes * p.channel_energy_j_per_byte; }

EnergyJoules CollectiveEnergyJoules(const HardwareProfile& p, double bytes, double bus_s, double dpu_busy_s) {
  const uint32_t cores = std::max<uint32_t>(1, std::min(p.collective_host_threads, p.host_cores));
  EnergyJoules e;
  e.transfer_j = bytes * p.channel_energy_j_per_byte + bus_s * cores * p.host_core_power_w;
  e.dpu_j = DpuEnergyJoules(p, dpu_busy_s);
  return e;
}

}  // namespace pimopt::pim
