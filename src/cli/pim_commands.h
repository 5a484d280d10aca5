// `pimopt validate` and `pimopt prim`: the emulator's timing against PrIM kernels timed on UPMEM hardware, and one
// run of a ported PrIM benchmark. Both throw pimopt's errors; RunCli maps them to messages and exit codes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pimopt::cli {

struct ValidateFlags {
  std::string hw_data;                  // "" : pim::validation::DefaultHwDataPath()
  std::vector<std::string> benchmarks;  // empty: every ported benchmark in the file
  std::string profile = "pim-opt", profile_set;
  std::string markdown_out, json_out;
  int threads = 0;
  bool quiet = false;
};
int RunValidateCommand(const ValidateFlags& flags);

struct PrimFlags {
  std::string benchmark;  // "" or list: print the benchmarks
  bool list = false;
  uint32_t dpus = 1;
  uint64_t param = 1 << 20;
  uint32_t tasklets = 16;
  std::string profile = "pim-opt", profile_set;
  uint64_t shuffle_seed = 0;
  std::string scheduler = "batched";
  int threads = 0;
  bool json = false;
};
int RunPrimCommand(const PrimFlags& flags);

}  // namespace pimopt::cli
