// The commands' own flags (beside the library's tables they also bind: RunParams, SourceParams, PlanParams, ...),
// each declared once in a parameter table like every other parameter: the CLI binds them, checks them and lists
// them (`pimopt params --format json`) from these tables.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "pimopt/core/params.h"
#include "pimopt/data/sources.h"

namespace pimopt::cli {

struct PredictFlags {
  std::string model, data, out;
  int threads = 0;
  SourceOptions source;  // SourceParams()
};

struct GenFlags {
  std::string out, format;
  uint64_t first_row = 0;
  int threads = 0;
};

struct ConvertFlags {
  std::string in, out, format;
  SourceOptions source;  // SourceParams()
};

// Every command's flags (CommandFlags::infos), for `pimopt params`.
using CommandInfos = std::vector<std::pair<std::string, std::vector<const ParamInfo*>>>;

struct ParamsFlags {
  std::string format = "text";
  std::string command;  // empty: train (text, markdown), every command (json); ParamsParams() declares it
};

struct ProfileFlags {
  std::string name;  // positional: "" lists the profiles
  std::string set;
  std::string format = "text";
  bool calibrate_host = false;
  double budget_s = 2.0;
};

struct TuneFlags {
  std::string grid;
  std::string metric = "accuracy";
  bool no_warm_start = false;
};

struct PlanPrintFlags {
  bool json = false;
};

const ParamTable<PredictFlags>& PredictParams();
const ParamTable<GenFlags>& GenParams();
const ParamTable<ConvertFlags>& ConvertParams();
const ParamTable<ParamsFlags>& ParamsParams();
const ParamTable<ProfileFlags>& ProfileParams();
const ParamTable<TuneFlags>& TuneParams();
const ParamTable<PlanPrintFlags>& PlanPrintParams();

}  // namespace pimopt::cli
