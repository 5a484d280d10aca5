// Model selection (`pimopt tune`, as LIBLINEAR's -C or scikit-learn's GridSearchCV): every combination of a grid of
// parameter values is cross-validated (cross_validation.h) on the training set, the best one by the chosen metric
// (the first in grid order on a tie) is reported, then trained on all of it as `pimopt train` would.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "pimopt/core/thread_pool.h"
#include "pimopt/run/cross_validation.h"
#include "pimopt/run/run_config.h"

namespace pimopt {

struct GridAxis {
  std::string name;                 // a parameter of 'pimopt train' that affects the result (e.g. reg, lr, rho)
  std::vector<std::string> values;  // as text, each checked by the parameter's own rules
};

// "NAME=V1,V2,...;NAME=..." (e.g. "reg=1e-6,1e-4,1e-2;lr=0.05,0.1"). Throws ConfigError naming --grid for a
// malformed grid, a parameter that does not exist or does not affect the result, or a value the parameter refuses.
std::vector<GridAxis> ParseGrid(std::string_view text, const RunConfig& base);

enum class TuneMetric { kAccuracy, kAuc };

// One combination of the grid: `base` with one value of every axis, --cv defaulting to 5 folds, and the flags given
// to `base` that do not apply to this combination dropped (--rho where algo=ma).
struct GridSetting {
  RunConfig config;
  std::vector<std::pair<std::string, std::string>> setting;  // (name, value) per axis
};

// "reg=1e-5 lr=0.1": the setting's values, as a message names them.
std::string SettingText(const std::vector<std::pair<std::string, std::string>>& setting);

// Resolves `s.config` (ResolveRunConfig in one process); a refusal names the flag and the grid setting.
void ResolveGridSetting(GridSetting& s);

// Every combination, in grid order (the last axis varies fastest). Throws ConfigError naming a flag given to `base`
// that applies to no combination.
std::vector<GridSetting> GridSettings(const RunConfig& base, const std::vector<GridAxis>& grid);

struct TuneTrial {
  std::vector<std::pair<std::string, std::string>> setting;  // (name, value) per axis
  CrossValidation cv;
};

struct TuneResult {
  std::vector<TuneTrial> trials;  // in the settings' order
  size_t best = 0;                // index into trials
  RunConfig best_config;          // the best setting, resolved, ready for RunTraining
};

// The mean cross-validated score that `metric` ranks by.
double TuneScore(const CrossValidation& cv, TuneMetric metric);

// Resolves and cross-validates every setting on `train`; the best by TuneScore (the first on a tie). `on_trial` is
// called after each. With `warm_start`, each fold of a setting starts from the model (the backend's whole state)
// that the same fold of the previous setting ended with, when both have the same backend, algorithm and workers;
// the folds are the same for every setting.
TuneResult Tune(std::vector<GridSetting> settings, TuneMetric metric, const Dataset& train, ThreadPool& pool,
                const std::function<void(const TuneTrial& trial)>& on_trial = {}, bool warm_start = true);

}  // namespace pimopt
