#include "pimopt/run/tune.h"

#include <algorithm>

#include "pimopt/core/error.h"
#include "pimopt/core/file_util.h"

namespace pimopt {
std::vector<GridAxis> ParseGrid(std::string_view text, const RunConfig& base) {
  std::vector<GridAxis> grid;
  for (const std::string& raw_axis : SplitText(text, ';')) {
    const std::string axis = TrimSpaces(raw_axis);
    if (axis.empty()) continue;
    const size_t eq = axis.find('=');
    if (eq == std::string::npos) {
      throw ConfigError("--grid", StrCat("'", axis, "': expected NAME=V1,V2,... (e.g. reg=1e-6,1e-4)"));
    }
    GridAxis a;
    a.name = TrimSpaces(std::string_view(axis).substr(0, eq));
    const auto* entry = RunParams().Find(a.name);
    if (entry == nullptr) throw ConfigError("--grid", StrCat("'", a.name, "' is not a parameter of 'pimopt train'"));
    if (entry->info.effect != ParamEffect::kResult) {
      throw ConfigError("--grid", StrCat("--", a.name, " does not change the trained model: nothing to select"));
    }
    if (a.name == "cv") throw ConfigError("--grid", "--cv is the tuning's own fold count");
    // The data are read and preprocessed once, and every setting is scored on the same folds of them: a parameter
    // of how they are read, split or scaled cannot vary between settings (each setting would be scored on the
    // first setting's data, and the final model trained on it).
    if (entry->info.group == kDataParamGroup) {
      throw ConfigError("--grid", StrCat("--", a.name, " is a data parameter: tune reads, splits and scales the data "
                                         "once for every setting; give it as --", a.name,
                                         " and run tune once per value to compare them"));
    }
    std::vector<std::string> canonical;  // the values as the parameter reads them: 1, 1.0 and 1e0 are one
    for (const std::string& v : SplitText(std::string_view(axis).substr(eq + 1), ',')) {
      const std::string value = TrimSpaces(v);
      if (value.empty()) throw ConfigError("--grid", StrCat("an empty value for ", a.name));
      RunConfig probe = base;
      SetParam(probe, a.name, value);  // the parameter's own checks, naming it
      const std::string text = RunParams().GetText(probe, a.name);
      if (std::find(canonical.begin(), canonical.end(), text) != canonical.end()) {
        throw ConfigError("--grid", StrCat(a.name, "=", value, " is listed twice (each setting would be cross-validated "
                                                           "twice and compared with itself)"));
      }
      canonical.push_back(text);
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

std::string SettingText(const std::vector<std::pair<std::string, std::string>>& setting) {
  std::string text;
  for (const auto& [name, value] : setting) text += StrCat(text.empty() ? "" : " ", name, "=", value);
  return text;
}

void ResolveGridSetting(GridSetting& s) {
  try {
    ResolveRunConfig(s.config, 1);
  } catch (const ConfigError& e) {
    throw ConfigError(e.parameter(), StrCat(e.detail(), " (grid setting ", SettingText(s.setting), ")"));
  }
}

std::vector<GridSetting> GridSettings(const RunConfig& base, const std::vector<GridAxis>& grid) {
  PIMOPT_CHECK(!grid.empty());
  std::vector<GridSetting> settings;
  std::vector<size_t> index(grid.size(), 0);
  while (true) {
    GridSetting s{base, {}};
    if (s.config.cv_folds == 0) s.config.cv_folds = 5;
    for (size_t a = 0; a < grid.size(); ++a) {
      SetParam(s.config, grid[a].name, grid[a].values[index[a]]);
      s.setting.emplace_back(grid[a].name, grid[a].values[index[a]]);
    }
    settings.push_back(std::move(s));
    size_t a = grid.size();
    while (a > 0 && ++index[a - 1] == grid[a - 1].values.size()) index[--a] = 0;
    if (a == 0) break;
  }
  // A flag that applies to only some settings (--rho with algo=ma,admm) is used where it applies; one that applies
  // to none is an error, as it would be for 'train'.
  for (const std::string& name : base.given) {
    const auto& entry = RunParams().Get(name);
    bool somewhere = false;
    for (const GridSetting& s : settings) somewhere = somewhere || RunParams().Applies(entry, s.config);
    if (!somewhere) {
      throw ConfigError(entry.info.Flag(), StrCat("only meaningful with ", entry.info.AppliesText(),
                                                  ", which no setting of the grid has"));
    }
    for (GridSetting& s : settings) {
      if (!RunParams().Applies(entry, s.config)) s.config.given.erase(name);
    }
  }
  return settings;
}

double TuneScore(const CrossValidation& cv, TuneMetric metric) {
  return metric == TuneMetric::kAuc ? cv.mean.auc : cv.mean.accuracy;
}

TuneResult Tune(std::vector<GridSetting> settings, TuneMetric metric, const Dataset& train, ThreadPool& pool,
                const std::function<void(const TuneTrial& trial)>& on_trial, bool warm_start) {
  PIMOPT_CHECK(!settings.empty());
  // Every setting is resolved and checked against the folds before the first is cross-validated: a value the
  // algorithm refuses is reported before any time is spent.
  for (GridSetting& s : settings) {
    ResolveGridSetting(s);  // the rules between parameters, for this combination
    try {
      CheckCrossValidation(s.config, train);
    } catch (const ConfigError& e) {
      throw ConfigError(e.parameter(), StrCat(e.detail(), " (grid setting ", SettingText(s.setting), ")"));
    }
  }
  TuneResult result;
  FoldStates states;
  for (size_t i = 0; i < settings.size(); ++i) {
    RunConfig& config = settings[i].config;
    TuneTrial trial;
    trial.setting = settings[i].setting;
    trial.cv = CrossValidate(config, train, pool, {}, warm_start ? &states : nullptr);
    if (on_trial) on_trial(trial);
    result.trials.push_back(std::move(trial));
    if (i == 0 || TuneScore(result.trials.back().cv, metric) > TuneScore(result.trials[result.best].cv, metric)) {
      result.best = i;
      result.best_config = config;
    }
  }
  result.best_config.cv_folds = 0;  // the final training needs no second cross-validation
  return result;
}

}  // namespace pimopt
