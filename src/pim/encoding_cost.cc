#include "pimopt/pim/encoding_cost.h"

#include <algorithm>
#include <cmath>

namespace pimopt::pim {

double BlockDmaCycles(const HardwareProfile& profile, double bytes) {
  const double block = std::min<double>(profile.dma_max_bytes, 2048);
  return std::ceil(bytes / block) * (profile.dma_occupancy_cycles + block * profile.dma_occupancy_cycles_per_byte);
}

double CompactionCycles(const HardwareProfile& profile, uint64_t pairs, uint64_t list_bytes) {
  return static_cast<double>(pairs) * (profile.dma_occupancy_cycles + 8 * profile.dma_occupancy_cycles_per_byte) +
         BlockDmaCycles(profile, static_cast<double>(list_bytes));
}

double QuantizationCycles(const HardwareProfile& profile, uint64_t coordinates, int bits) {
  const double mram_bytes = static_cast<double>(coordinates) * (16 + 4 + bits / 8.0);
  constexpr double kInstructionsPerCoordinate = 12;  // two passes: loads, subtract/add, compare, shift, clamp, stores
  return std::max(BlockDmaCycles(profile, mram_bytes), kInstructionsPerCoordinate * static_cast<double>(coordinates));
}

}  // namespace pimopt::pim
