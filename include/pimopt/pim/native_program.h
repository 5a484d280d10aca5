// DPU C programs on the emulator: a program written against the UPMEM SDK's DPU API (dpu/include: defs.h, mram.h,
// alloc.h, barrier.h, mutex.h, perfcounter.h), compiled natively by tools/dpu/pimopt-dpu-cc (clang with pimopt's
// DPU pass, tools/dpu/dpu_pass.cc), loaded as a Kernel: its main() runs on every tasklet of every DPU as a fiber,
// its WRAM globals live in each DPU's WRAM (host-visible by name), its MRAM globals in MRAM, and its basic blocks
// charge the issue slots the pass counted (docs/pim-emulator.md "DPU C programs").
#pragma once

#include <memory>
#include <string>

#include "pimopt/pim/kernel.h"

namespace pimopt::pim {

// Loads the compiled program at `path` (a .dpu file of pimopt-dpu-cc). InputError naming the path when it cannot be
// loaded or was not built by the pass; PimError when its operation table differs from this emulator's.
std::shared_ptr<Kernel> LoadNativeProgram(const std::string& path);

}  // namespace pimopt::pim
