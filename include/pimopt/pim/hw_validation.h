// Validation of the emulator's timing against PrIM kernels timed on real UPMEM hardware (uPIMulator's regression
// input, [uPIMulator] in docs/sources.md): run every row of the hardware file with the ported kernels (prim.h),
// fit the timing model's free constants, and predict each benchmark from a fit on the others (leave one benchmark
// out). What the README and docs/pim-emulator.md "Validation" report comes from here (`pimopt validate`).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "pimopt/pim/prim.h"
#include "pimopt/pim/profile.h"

namespace pimopt::pim::validation {

// The hardware file's default place: $PIMOPT_HW_DATA when set, else the project's shared data beside the source
// tree this build came from (<source>/../shared/data/upmem-hw-kernels.csv); `--hw-data` names another.
std::string DefaultHwDataPath();

struct HwRow {
  std::string benchmark;
  uint32_t dpus = 0;
  uint64_t param = 0;
  double kernel_s = 0, cpu_to_dpu_s = 0, dpu_to_cpu_s = 0, dpu_to_dpu_s = 0;
  double simulator_kernel_s = 0;  // the cycle-level simulator's figure: a peer to compare with
  int line = 0;
};
// The CSV (columns benchmark, num_dpus, data_prep_param, hw_kernel_ms, hw_cpu_to_dpu_ms, hw_dpu_to_cpu_ms,
// hw_dpu_to_dpu_ms, upimulator_sim_kernel_ms; any order, found by the header). InputError naming file:line.
std::vector<HwRow> ReadHwData(const std::string& path);

// The timing model's free constants: the kernel's and the transfers'. Everything else in a profile is measured
// elsewhere (PrIM's microbenchmarks, the SDK's routines) and stays fixed.
struct KernelConstants {
  double launch_overhead_s = 0;
  double dma_occupancy_cycles = 0;
  double dma_occupancy_cycles_per_byte = 0;
  double dma_pipeline_stall = 0;
  double issue_stall_cycles = 0;
};
// Which of them a fit may change (the others keep the base profile's values). The default frees the three whose
// fit predicts best out of sample (docs/pim-emulator.md, "Validation"): a fixed DMA occupancy and a pipeline
// hazard fitted as well both go to zero and only add variance.
struct FreeKernelConstants {
  bool launch_overhead_s = true;
  bool dma_occupancy_cycles = false;
  bool dma_occupancy_cycles_per_byte = true;
  bool dma_pipeline_stall = true;
  bool issue_stall_cycles = false;
};
struct TransferConstants {
  double push_to_dpu_overhead_s = 0, push_from_dpu_overhead_s = 0, serial_call_overhead_s = 0;
  double serial_to_dpu_bytes_per_s = 0, serial_from_dpu_bytes_per_s = 0;
  double rank_to_dpu_bytes_per_s = 0, rank_from_dpu_bytes_per_s = 0;
  double push_to_dpu_overhead_per_dpu_s = 0, push_from_dpu_overhead_per_dpu_s = 0;
  double push_bandwidth_knee_bytes = 0, push_bandwidth_knee_exponent = 0;
};
KernelConstants KernelConstantsOf(const HardwareProfile& p);
TransferConstants TransferConstantsOf(const HardwareProfile& p);
void Apply(const KernelConstants& c, HardwareProfile& p);
void Apply(const TransferConstants& c, HardwareProfile& p);

// One row of the hardware file and its emulated run.
struct RowRun {
  HwRow hw;
  prim::RunResult run;  // with its events kept: re-timed under each candidate's constants
};

// The user-facing fields (benchmarks, host_threads) are declared in ValidateParams().
struct RunOptions {
  std::vector<std::string> benchmarks;  // empty: every ported benchmark in the file
  uint64_t max_elements_per_dpu = 0;    // > 0: skip rows whose size per DPU is larger (quick checks)
  KernelSource kernels = KernelSource::kProgram;
  int host_threads = 0;
  // Called after each row that ran (rows done so far counting skipped ones, 1 .. total; total; the row), for
  // progress output.
  std::function<void(size_t, size_t, const RowRun&)> progress;
};
// The parameters of `pimopt validate` and Python's validate_kernels that choose what runs: --benchmarks (a comma
// list of ported benchmarks, none twice), --kernels and --threads.
const ParamTable<RunOptions>& ValidateParams();
struct Runs {
  std::vector<RowRun> rows;
  std::vector<std::string> skipped;  // "line N: BENCHMARK (reason)"
};
// Runs every selected row on `base` (PimError if a kernel's result differs from its host reference).
Runs RunRows(const std::vector<HwRow>& rows, const HardwareProfile& base, const RunOptions& options);

// Fits the kernel constants to the rows of `benchmarks` (every benchmark weighs the same: the mean over benchmarks
// of the mean squared log error of its rows), starting from `base`.
KernelConstants FitKernel(const std::vector<RowRun>& rows, const std::vector<std::string>& benchmarks,
                          const HardwareProfile& base, const FreeKernelConstants& free = {});
// The same for the transfer constants against the CPU->DPU and DPU->CPU columns.
TransferConstants FitTransfers(const std::vector<RowRun>& rows, const std::vector<std::string>& benchmarks,
                               const HardwareProfile& base);

// Relative errors (modeled / measured - 1) of one benchmark's rows.
struct ErrorSummary {
  size_t rows = 0;
  double median_abs = 0;
  double worst_abs = 0;
  double worst_signed = 0;
};
ErrorSummary Summarize(const std::vector<double>& errors);
// The q-th quantile (0..1, linear between order statistics) of |errors|; 0 for none.
double AbsQuantile(std::vector<double> errors, double q);

struct BenchmarkValidation {
  std::string benchmark;
  size_t rows = 0;
  ErrorSummary out_of_sample;  // kernel time, constants fitted on the other benchmarks
  ErrorSummary in_sample;      // kernel time, constants fitted on all benchmarks
  ErrorSummary simulator;      // the cycle-level simulator's kernel time
  KernelConstants fold;        // the constants fitted without this benchmark
  // Transfers of 1 MB or more (CPU->DPU and DPU->CPU together), out of sample and in sample, and all transfers.
  ErrorSummary transfers_out_of_sample, transfers_in_sample, transfers_all_out_of_sample;
  std::vector<double> kernel_errors_out_of_sample;  // per row, in the file's order
};
struct Report {
  std::vector<BenchmarkValidation> benchmarks;
  KernelConstants fitted;                // on every benchmark
  TransferConstants transfers;           // on every benchmark
  double mean_median_out_of_sample = 0;  // mean over benchmarks of their median out-of-sample kernel error
  double mean_median_simulator = 0;
  double mean_median_transfers_out_of_sample = 0;  // over the benchmarks with transfers of 1 MB or more
  // The uncertainty the validation supports, per component: the 68th percentile of |modeled / measured - 1| out of
  // sample over every row of every benchmark (kernel with its launch; CPU->DPU and DPU->CPU of 1 MB or more).
  // The profile's *_time_uncertainty fields hold these numbers; reports quote them as error bars.
  double kernel_uncertainty = 0, cpu_to_dpu_uncertainty = 0, dpu_to_cpu_uncertainty = 0;
  std::vector<std::string> skipped;
  double run_wall_s = 0, fit_wall_s = 0;
};
// Leave one benchmark out over `runs` (every benchmark needs at least one other to fit on).
Report LeaveOneOut(const Runs& runs, const HardwareProfile& base, const FreeKernelConstants& free = {});
// The report as the README's tables (markdown).
std::string Markdown(const Report& r);

}  // namespace pimopt::pim::validation
