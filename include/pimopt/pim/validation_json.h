// The validation's results as JSON: one definition for what `pimopt validate --json` and `pimopt prim --json`
// print and what the Python functions validate_kernels and run_prim return.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "pimopt/pim/hw_validation.h"
#include "pimopt/pim/prim.h"
#include "pimopt/pim/profile.h"

namespace pimopt::pim::validation {

// A DPU's cycles by cause (what `prim --json`, `validate --json` and the host API's PIMOPT_REPORT print).
inline nlohmann::json DpuCyclesJson(const DpuCycles& c) {
  return {{"issue", c.issue}, {"revolver", c.revolver}, {"dma", c.dma}, {"interference", c.interference},
          {"sync", c.sync},   {"total", c.total}};
}

nlohmann::json KernelConstantsJson(const KernelConstants& c);
nlohmann::json TransferConstantsJson(const TransferConstants& c);
// The leave-one-benchmark-out report of the hardware file `hw_path`, run on profile `profile_name`.
nlohmann::json ReportJson(const Report& r, const std::string& hw_path, const std::string& profile_name);
// One run of a ported PrIM benchmark with `tasklets` tasklets on `profile` (named `profile_name`): the modeled
// times, their error bars, the slowest DPU's cycles and the counts.
nlohmann::json PrimRunJson(const prim::RunResult& r, uint32_t tasklets, const std::string& profile_name,
                           const HardwareProfile& profile);

}  // namespace pimopt::pim::validation
