// The JSON run report and the human-readable progress lines of `pimopt train`.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "pimopt/algorithms/train.h"

namespace pimopt::cli {

struct RunInfo {
  std::string command_line;
  std::string backend;
  int threads = 1;
  const Dataset* train = nullptr;
  const Dataset* test = nullptr;
  double load_seconds = 0;
};

nlohmann::json ConfigToJson(const TrainConfig& config);
nlohmann::json MetricsToJson(const Metrics& m);
nlohmann::json DatasetToJson(const Dataset& d);
nlohmann::json BuildReport(const RunInfo& info, const TrainConfig& config, const TrainResult& result);
void WriteJsonFile(const nlohmann::json& report, const std::string& path);
std::string FormatEpochLine(const EpochRecord& r);
std::string EpochHeader();

}  // namespace pimopt::cli
