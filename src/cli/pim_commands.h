// `pimopt validate` and `pimopt prim`: the emulator's timing against PrIM kernels timed on UPMEM hardware, and one
// run of a ported PrIM benchmark. Both throw pimopt's errors; RunCli maps them to messages and exit codes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pimopt/pim/hw_validation.h"
#include "pimopt/pim/prim.h"

namespace pimopt::cli {

struct ValidateFlags {
  std::string hw_data;  // "" : pim::validation::DefaultHwDataPath()
  pim::validation::RunOptions run;  // --benchmarks, --threads (ValidateParams)
  std::string profile = "pim-opt", profile_set;
  std::string markdown_out, json_out;
  bool quiet = false;
};
// ValidateFlags' own flags (--hw-data, --profile, --profile-set, --markdown, --json, --quiet); `run` has
// pim::validation::ValidateParams().
const ParamTable<ValidateFlags>& ValidateCommandParams();
int RunValidateCommand(const ValidateFlags& flags);

struct PrimFlags {
  std::string benchmark;  // "" or list: print the benchmarks
  bool list = false;
  pim::prim::RunRequest request;  // --dpus, --param, --tasklets, ... (RequestParams)
  std::string profile = "pim-opt", profile_set;
  bool json = false;
};
// PrimFlags' own flags (--list, --profile, --profile-set, --json); `request` has pim::prim::RequestParams().
const ParamTable<PrimFlags>& PrimCommandParams();
int RunPrimCommand(const PrimFlags& flags);

struct CollectivesFlags {
  uint64_t dpus = 1024;
  std::string bytes = "32768,262144,1048576,4194304";  // bytes per DPU, a comma-separated list
  uint64_t element_bytes = 4;
  std::string profile = "pim-opt", profile_set;
  bool json = false;
};
// `pimopt collectives`: every collective's modeled time by the SDK's host route and PID-Comm's software route
// (pim/collectives.h) over --dpus DPUs, for each size of --bytes.
const ParamTable<CollectivesFlags>& CollectivesCommandParams();
int RunCollectivesCommand(const CollectivesFlags& flags);

}  // namespace pimopt::cli
