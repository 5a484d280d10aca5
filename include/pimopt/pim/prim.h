// PrIM's benchmarks ([PrIM]; the copies [uPIMulator] timed on UPMEM hardware) ported to the emulator's kernel API,
// kernel and host program alike: the same MRAM blocks, the same synchronization, the same host-side partitioning
// and transfers, each run checked against a host reference. They are the emulator's validation kernels: their
// modeled times are compared with hardware measurements (pimopt validate, docs/pim-emulator.md "Validation").
//
// A run reports what PrIM's host program times: the DPU kernel (every launch its kernel timer covers, launch
// overhead included), CPU->DPU, DPU->CPU and, for the benchmarks that exchange data between kernels through the
// host, DPU->DPU. It can keep each launch's events, so the same run can be re-timed under other constants
// (Retime) without running the kernels again: the validation's fit of the free constants does that.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pimopt/core/params.h"
#include "pimopt/pim/machine_log.h"
#include "pimopt/pim/native_program.h"
#include "pimopt/pim/profile.h"
#include "pimopt/pim/system.h"
#include "pimopt/pim/timing.h"

namespace pimopt::pim::prim {

struct BenchmarkInfo {
  std::string name;           // as in the hardware data: "VA", "HST-S", ...
  std::string param_meaning;  // what the size parameter is (over all DPUs)
  std::string element;        // the element type
  std::string build;          // the build parameters of the timed binary (block size, type, tasklets)
};
// Every ported benchmark, in the order of the hardware data file.
const std::vector<BenchmarkInfo>& Benchmarks();
const BenchmarkInfo& Find(const std::string& name);  // ConfigError naming --benchmark for an unknown name

// A run's user-facing fields are declared (bounds, help) in RequestParams(); its defaults are these.
struct RunRequest {
  uint32_t dpus = 1;
  uint64_t param = uint64_t{1} << 20;  // the benchmark's size parameter (BenchmarkInfo::param_meaning)
  uint32_t tasklets = 16;
  int host_threads = 0;       // 0: all cores
  bool keep_events = false;   // keep the launches' events (Retime needs them)
  uint64_t shuffle_seed = 0;  // DpuSet::SetShuffleSeed
  Scheduler scheduler = Scheduler::kBatched;  // DpuSet::SetScheduler
  KernelSource kernels = KernelSource::kProgram;
};
// The parameters of `pimopt prim` and Python's run_prim: --dpus, --param, --tasklets, --shuffle-seed, --scheduler,
// --kernels, --threads (what the run can check before it knows the benchmark and profile; Run checks the rest).
const ParamTable<RunRequest>& RequestParams();

struct PhaseTimes {
  double kernel_s = 0;
  double cpu_to_dpu_s = 0;
  double dpu_to_cpu_s = 0;
  double dpu_to_dpu_s = 0;
};

struct LaunchRecord {
  uint32_t dpus = 0;
  std::vector<uint32_t> traces;  // per DPU: an index into RunResult::traces (identical traces are kept once)
};

struct RunResult {
  std::string benchmark;
  uint32_t dpus = 0;
  uint64_t param = 0;
  PhaseTimes modeled;         // under the run's profile
  std::string check;          // what was checked against the host reference (every run is checked)
  uint64_t instructions = 0;  // issue slots of all DPUs' kernel launches
  uint64_t dmas = 0;
  uint64_t unaligned_dmas = 0;
  uint64_t resized_dmas = 0;
  DpuCycles slowest_dpu;   // summed over the timed launches: the slowest DPU of each
  double host_wall_s = 0;  // how long the emulation took
  // With RunRequest::keep_events:
  std::vector<LaunchRecord> kernel_launches;  // the launches the kernel timer covers
  std::vector<timing::DpuTrace> traces;
  // Every transfer of the run, as the DPU set logged it; the tag is PrIM's timer around it (kTransferColumn*; 0:
  // outside every timer).
  MachineLog transfers;
};
inline constexpr uint32_t kTransferColumnCpuToDpu = 1, kTransferColumnDpuToCpu = 2, kTransferColumnDpuToDpu = 3;

// Runs benchmark `name` (PimError if its output differs from the host reference; ConfigError naming
// --dpus / --param for a request the benchmark's host program cannot run).
RunResult Run(const std::string& name, const RunRequest& request, const HardwareProfile& profile);
// The run's times under `profile`: its kernel launches replayed from their events, its transfers from the models
// (needs a run made with keep_events).
PhaseTimes Retime(const RunResult& run, const HardwareProfile& profile);
// Only the transfers (no kernel replay): the transfer columns of Retime, each logged transfer under
// ModelTransferSeconds.
PhaseTimes RetimeTransfers(const RunResult& run, const HardwareProfile& profile);
// The compiled DPU program `program` (src/pim/validation/prim/dpu/PROGRAM.c) for `tasklets` tasklets: built with
// pimopt for the hardware's 16, compiled by pimopt-dpu-cc on first use for another count and kept beside them
// ($PIMOPT_PRIM_PROGRAMS, else the build's dpu_programs/prim). ConfigError naming --kernels when pimopt was built
// without the DPU toolchain; PimError with the compiler's message when the compile fails.
std::string ProgramPath(const std::string& program, uint32_t tasklets);

}  // namespace pimopt::pim::prim
