#include "pimopt/pim/validation_json.h"

namespace pimopt::pim::validation {

using nlohmann::json;

namespace {

json SummaryJson(const ErrorSummary& e) {
  return {{"rows", e.rows}, {"median_abs", e.median_abs}, {"worst_abs", e.worst_abs}, {"worst", e.worst_signed}};
}

}  // namespace

json KernelConstantsJson(const KernelConstants& c) {
  return {{"launch_overhead_s", c.launch_overhead_s},
          {"dma_occupancy_cycles", c.dma_occupancy_cycles},
          {"dma_occupancy_cycles_per_byte", c.dma_occupancy_cycles_per_byte},
          {"dma_pipeline_stall", c.dma_pipeline_stall},
          {"issue_stall_cycles", c.issue_stall_cycles}};
}

json TransferConstantsJson(const TransferConstants& c) {
  return {{"push_to_dpu_overhead_s", c.push_to_dpu_overhead_s},
          {"push_from_dpu_overhead_s", c.push_from_dpu_overhead_s},
          {"serial_call_overhead_s", c.serial_call_overhead_s},
          {"serial_to_dpu_bytes_per_s", c.serial_to_dpu_bytes_per_s},
          {"serial_from_dpu_bytes_per_s", c.serial_from_dpu_bytes_per_s},
          {"rank_to_dpu_bytes_per_s", c.rank_to_dpu_bytes_per_s},
          {"rank_from_dpu_bytes_per_s", c.rank_from_dpu_bytes_per_s},
          {"push_to_dpu_overhead_per_dpu_s", c.push_to_dpu_overhead_per_dpu_s},
          {"push_from_dpu_overhead_per_dpu_s", c.push_from_dpu_overhead_per_dpu_s},
          {"push_bandwidth_knee_bytes", c.push_bandwidth_knee_bytes},
          {"push_bandwidth_knee_exponent", c.push_bandwidth_knee_exponent}};
}

json ReportJson(const Report& r, const std::string& hw_path, const std::string& profile_name) {
  json benchmarks = json::array();
  for (const BenchmarkValidation& b : r.benchmarks) {
    benchmarks.push_back({{"benchmark", b.benchmark},
                          {"rows", b.rows},
                          {"kernel_out_of_sample", SummaryJson(b.out_of_sample)},
                          {"kernel_in_sample", SummaryJson(b.in_sample)},
                          {"simulator", SummaryJson(b.simulator)},
                          {"transfers_out_of_sample", SummaryJson(b.transfers_out_of_sample)},
                          {"transfers_in_sample", SummaryJson(b.transfers_in_sample)},
                          {"transfers_all_sizes_out_of_sample", SummaryJson(b.transfers_all_out_of_sample)},
                          {"kernel_errors_out_of_sample", b.kernel_errors_out_of_sample},
                          {"fold_kernel_constants", KernelConstantsJson(b.fold)}});
  }
  return {{"hw_data", hw_path},
          {"profile", profile_name},
          {"benchmarks", benchmarks},
          {"mean_median_kernel_out_of_sample", r.mean_median_out_of_sample},
          {"mean_median_simulator", r.mean_median_simulator},
          {"mean_median_transfers_out_of_sample", r.mean_median_transfers_out_of_sample},
          {"uncertainty",
           {{"kernel", r.kernel_uncertainty},
            {"cpu_to_dpu", r.cpu_to_dpu_uncertainty},
            {"dpu_to_cpu", r.dpu_to_cpu_uncertainty},
            {"meaning", "68th percentile of |modeled / measured - 1| out of sample, every row"}}},
          {"fitted_kernel_constants", KernelConstantsJson(r.fitted)},
          {"fitted_transfer_constants", TransferConstantsJson(r.transfers)},
          {"skipped", r.skipped},
          {"run_wall_s", r.run_wall_s},
          {"fit_wall_s", r.fit_wall_s}};
}

json PrimRunJson(const prim::RunResult& r, uint32_t tasklets, const std::string& profile_name,
                 const HardwareProfile& profile) {
  return {{"benchmark", r.benchmark},
          {"dpus", r.dpus},
          {"param", r.param},
          {"tasklets", tasklets},
          {"profile", profile_name},
          {"check", r.check},
          {"kernel_s", r.modeled.kernel_s},
          {"cpu_to_dpu_s", r.modeled.cpu_to_dpu_s},
          {"dpu_to_cpu_s", r.modeled.dpu_to_cpu_s},
          {"dpu_to_dpu_s", r.modeled.dpu_to_dpu_s},
          {"uncertainty",
           {{"kernel", profile.kernel_time_uncertainty},
            {"cpu_to_dpu", profile.cpu_to_dpu_time_uncertainty},
            {"dpu_to_cpu", profile.dpu_to_cpu_time_uncertainty}}},
          {"slowest_dpu_cycles", DpuCyclesJson(r.slowest_dpu)},
          {"instructions", r.instructions},
          {"dmas", r.dmas},
          {"unaligned_dmas", r.unaligned_dmas},
          {"resized_dmas", r.resized_dmas},
          {"host_wall_s", r.host_wall_s}};
}

}  // namespace pimopt::pim::validation
