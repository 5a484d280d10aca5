// DPU C programs on the emulator: a program written against the UPMEM SDK's DPU API (dpu/include: defs.h, mram.h,
// alloc.h, barrier.h, mutex.h, sem.h, handshake.h, seqread.h, perfcounter.h), compiled natively by
// tools/dpu/pimopt-dpu-cc (clang with pimopt's DPU pass, tools/dpu/dpu_pass.cc), loaded as a Kernel: its main() runs on every tasklet of every DPU as a fiber,
// its WRAM globals live in each DPU's WRAM (host-visible by name), its MRAM globals in MRAM, and its basic blocks
// charge the issue slots the pass counted (docs/pim-emulator.md "DPU C programs").
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "pimopt/core/params.h"

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

// Whether pimopt was built with the DPU toolchain (build/pimopt-dpu-cc: Debian's clang and llvm-dev, 14 or newer).
bool HaveDpuToolchain();

// Where programs compiled on first use are kept: the folder the environment variable `env_var` names when it is set
// and not empty, else `fallback` (the build's).
struct ProgramFolder {
  const char* env_var;
  std::string fallback;
};

// The program compiled from the C file `source` for `tasklets` tasklets (NR_TASKLETS, a compile-time constant of a
// DPU program, as on the SDK), with `flags` (-D, -I) for pimopt-dpu-cc: FOLDER/NAME.tT.dpu, kept while newer than
// its source and the cost pass, else compiled (to a temporary name, then renamed; the folder made when missing).
// ConfigError naming the folder's variable when the folder cannot be made or written; PimError with the compiler's
// diagnostics when it does not compile, or when pimopt was built without the toolchain.
std::string BuiltProgramPath(const std::string& source, const ProgramFolder& folder, const std::string& name,
                             uint32_t tasklets, const std::vector<std::string>& flags = {});

// What runs on the DPUs: a DPU program in C (built by pimopt-dpu-cc and charged by its cost pass), or its C++ port
// over the operand types (kept as the programs' reference).
enum class KernelSource { kProgram, kPort };

// Declares "kernels" (program | port) in `table`, reached by `access` (a member pointer to a KernelSource), with
// the default `fallback`: the parameter `pimopt prim`, `pimopt validate` and `pimopt train --backend pim` share.
template <typename Config, typename Access>
typename ParamTable<Config>::Builder AddKernelSourceParam(ParamTable<Config>& table, Access access,
                                                         KernelSource fallback = KernelSource::kProgram) {
  return std::move(
      table
          .AddChoice("kernels", access, fallback,
                     {{{"program", "the DPU program in C, charged by the DPU toolchain's cost pass", {}},
                       KernelSource::kProgram},
                      {{"port", "the C++ port over the operand types (the C programs' reference)", {}},
                       KernelSource::kPort}})
          .Help("what runs on the DPUs"));
}

}  // namespace pimopt::pim
