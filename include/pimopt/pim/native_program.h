// DPU C programs on the emulator: a program written against the UPMEM SDK's DPU API (dpu/include: defs.h, mram.h,
// alloc.h, barrier.h, mutex.h, sem.h, handshake.h, seqread.h, perfcounter.h), compiled natively by
// tools/dpu/pimopt-dpu-cc (clang with pimopt's DPU pass, tools/dpu/dpu_pass.cc), loaded as a Kernel: its main() runs on every tasklet of every DPU as a fiber,
// its WRAM globals live in each DPU's WRAM (host-visible by name), its MRAM globals in MRAM, and its basic blocks
// charge the issue slots the pass counted (docs/pim-emulator.md "DPU C programs").
#pragma once

#include <memory>
#include <string>

#include "pimopt/pim/kernel.h"

namespace pimopt::pim {

// A loaded DPU C program: a kernel that also keeps what each DPU's printf wrote (its log buffer).
class DpuProgram : public Kernel {
 public:
  virtual const std::string& path() const = 0;
  // What DPU `dpu`'s tasklets printed since the last ClearLogs (the host's dpu_log_read).
  virtual std::string Log(uint32_t dpu) const = 0;
  // Empties the logs of DPUs first .. first + count - 1 (a launch starts with an empty log buffer, as on the DPU).
  virtual void ClearLogs(uint32_t first, uint32_t count) = 0;
};

// Loads the compiled program at `path` (a .dpu file of pimopt-dpu-cc). InputError naming the path when it cannot be
// read, or was not built by the pass; PimError when its operation table differs from this emulator's. A rule a
// program breaks is reported as PimError "FILE.c:LINE: kernel 'PATH', DPU d, tasklet t: what".
std::shared_ptr<DpuProgram> LoadNativeProgram(const std::string& path);

}  // namespace pimopt::pim
