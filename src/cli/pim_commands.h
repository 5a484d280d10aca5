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

}  // namespace pimopt::cli
