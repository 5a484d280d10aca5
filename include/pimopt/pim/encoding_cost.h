// What encoding a synchronization on the DPUs costs, in DPU cycles: estimates from the profile's DMA engine
// occupancy and an instruction count, not emulated kernels. The PIM backend charges them to the DPU kernel time
// when it compacts or quantizes what the DPUs send (docs/pim-backend.md "Compacted synchronization", "Quantized model
// deltas"). They live with the emulator's timing, which a machine seam under the backend would answer for.
#pragma once

#include <cstdint>

#include "pimopt/pim/profile.h"

namespace pimopt::pim {

// `bytes` moved between MRAM and WRAM in blocks of up to 2,048 bytes (at most the profile's DMA size): each block
// occupies the engine for its fixed and per-byte cycles.
double BlockDmaCycles(const HardwareProfile& profile, double bytes);

// A compacted list of `pairs` (index, value) pairs of `list_bytes` bytes: per pair one 8-byte MRAM read of its value,
// then the list written to MRAM in blocks.
double CompactionCycles(const HardwareProfile& profile, uint64_t pairs, uint64_t list_bytes);

// `coordinates` model deltas quantized to `bits` with error feedback: two passes over the local model and the error
// (the largest |d|, then the quantized value and the new error); per coordinate the model and the error read twice,
// the error and the quantized value written, and about 12 instructions. The longer of the DMA and the instructions.
double QuantizationCycles(const HardwareProfile& profile, uint64_t coordinates, int bits);

}  // namespace pimopt::pim
