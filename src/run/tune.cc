#include "pimopt/run/tune.h"

#include "pimopt/core/error.h"

namespace pimopt {
namespace {

std::vector<std::string> Split(std::string_view text, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t end = text.find(sep, start);
    parts.emplace_back(text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return parts;
}

std::string Trim(std::string_view s) {
  const size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string_view::npos ? "" : std::string(s.substr(b, e - b + 1));
}

}  // namespace

std::vector<GridAxis> ParseGrid(std::string_view text, const RunConfig& base) {
  std::vector<GridAxis> grid;
  for (const std::string& raw_axis : Split(text, ';')) {
    const std::string axis = Trim(raw_axis);
    if (axis.empty()) continue;
    const size_t eq = axis.find('=');
    if (eq == std::string::npos) {
      throw ConfigError("--grid", StrCat("'", axis, "': expected NAME=V1,V2,... (e.g. reg=1e-6,1e-4)"));
    }
    GridAxis a;
    a.name = Trim(std::string_view(axis).substr(0, eq));
    const auto* entry = RunParams().Find(a.name);
    if (entry == nullptr) throw ConfigError("--grid", StrCat("'", a.name, "' is not a parameter of 'pimopt train'"));
    if (entry->info.effect != ParamEffect::kResult) {
      throw ConfigError("--grid", StrCat("--", a.name, " does not change the trained model: nothing to select"));
    }
    if (a.name == "cv") throw ConfigError("--grid", "--cv is the tuning's own fold count");
    for (const std::string& v : Split(std::string_view(axis).substr(eq + 1), ',')) {
      const std::string value = Trim(v);
      if (value.empty()) throw ConfigError("--grid", StrCat("an empty value for ", a.name));
      RunConfig probe = base;
      SetParam(probe, a.name, value);  // the parameter's own checks, naming it
      a.values.push_back(value);
    }
    for (const GridAxis& other : grid) {
      if (other.name == a.name) throw ConfigError("--grid", StrCat(a.name, " appears twice"));
    }
    grid.push_back(std::move(a));
  }
  if (grid.empty()) throw ConfigError("--grid", "names no parameter (e.g. --grid 'reg=1e-6,1e-4;lr=0.05,0.1')");
  return grid;
}

TuneResult Tune(const RunConfig& base, const std::vector<GridAxis>& grid, TuneMetric metric, const Dataset& train,
                ThreadPool& pool, const std::function<void(const TuneTrial& trial)>& on_trial) {
  PIMOPT_CHECK(!grid.empty());
  // Every combination, in grid order (the last axis varies fastest).
  std::vector<RunConfig> settings;
  std::vector<std::vector<std::pair<std::string, std::string>>> labels;
  std::vector<size_t> index(grid.size(), 0);
  while (true) {
    RunConfig config = base;
    if (config.cv_folds == 0) config.cv_folds = 5;
    std::vector<std::pair<std::string, std::string>> label;
    for (size_t a = 0; a < grid.size(); ++a) {
      SetParam(config, grid[a].name, grid[a].values[index[a]]);
      label.emplace_back(grid[a].name, grid[a].values[index[a]]);
    }
    settings.push_back(std::move(config));
    labels.push_back(std::move(label));
    size_t a = grid.size();
    while (a > 0 && ++index[a - 1] == grid[a - 1].values.size()) index[--a] = 0;
    if (a == 0) break;
  }
  // A flag that applies to only some settings (--rho with algo=ma,admm) is used where it applies; one that applies
  // to none is an error, as it would be for 'train'.
  for (const std::string& name : base.given) {
    const auto& entry = RunParams().Get(name);
    bool somewhere = false;
    for (const RunConfig& c : settings) somewhere = somewhere || RunParams().Applies(entry, c);
    if (!somewhere) {
      throw ConfigError(entry.info.Flag(), StrCat("only meaningful with ", entry.info.AppliesText(),
                                                  ", which no setting of the grid has"));
    }
    for (RunConfig& c : settings) {
      if (!RunParams().Applies(entry, c)) c.given.erase(name);
    }
  }
  TuneResult result;
  auto score = [&](const CrossValidation& cv) { return metric == TuneMetric::kAuc ? cv.mean.auc : cv.mean.accuracy; };
  for (size_t i = 0; i < settings.size(); ++i) {
    RunConfig& config = settings[i];
    ResolveRunConfig(config, 1);  // the rules between parameters, for this combination
    TuneTrial trial;
    trial.setting = labels[i];
    trial.cv = CrossValidate(config, train, pool);
    if (on_trial) on_trial(trial);
    result.trials.push_back(std::move(trial));
    if (i == 0 || score(result.trials.back().cv) > score(result.trials[result.best].cv)) {
      result.best = i;
      result.best_config = config;
    }
  }
  result.best_config.cv_folds = 0;  // the final training needs no second cross-validation
  return result;
}

}  // namespace pimopt
