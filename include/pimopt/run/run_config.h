// A training run's configuration: every parameter of `pimopt train`, declared once in RunParams() (which includes
// the tables of the modules that own them: TrainParams, SourceParams, and each registered backend's). The CLI, and any other front end,
// only sets parameters by name (SetParam) and calls the stages of run/pipeline.h.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include "pimopt/algorithms/checkpoint.h"
#include "pimopt/algorithms/train_config.h"
#include "pimopt/backends/registry.h"
#include "pimopt/core/params.h"
#include "pimopt/data/sources.h"

namespace pimopt {

enum class ScaleChoice { kNone, kMinMax };

struct RunConfig {
  RunConfig();  // RunParams()' defaults

  // Data
  std::string data;          // a file or a built-in name
  std::string test;          // "": the built-in's own test set, if any
  double test_fraction;      // 0: none
  ScaleChoice scale;
  SourceOptions source;
  // Model and algorithm
  TrainConfig train;
  // Backend
  std::string backend;  // a registered backend's name (backends/registry.h)
  uint32_t dpus;        // a backend whose workers are devices: 0 = --workers
  BackendOptionSet backend_options;  // every registered backend's options; the run uses backend's
  uint32_t project_dpus;           // 0: no projection
  uint64_t project_rows_per_dpu;   // 0: this run's
  int threads;                     // 0: all cores
  // Outputs and progress
  std::string out, liblinear_out, report, checkpoint;
  int checkpoint_every;
  bool resume;
  bool no_train_metrics;
  bool train_metrics_every_epoch;
  bool quiet;
  double target_accuracy;  // 0: none
  double target_auc;       // 0: none
  uint32_t cv_folds;       // 0: no cross-validation

  std::set<std::string> given;  // the parameters set explicitly (SetParam), for the checks that need to know
};

// Every parameter of a training run, grouped for --help: Data, Model and algorithm, PIM backend, Run, Output.
const ParamTable<RunConfig>& RunParams();

// Sets parameter `name` from text (parsed and checked: ConfigError naming the flag) and records it as given.
void SetParam(RunConfig& config, std::string_view name, std::string_view text);

// Stage 1 of a run (no data is read): checks every given parameter applies to this run (e.g. --rho only with --algo
// admm), the rules between parameters, the algorithm's own rules, the PIM profile and tasklets, the output paths;
// resolves --dpus and the defaults the algorithm declares (workers, batch) and passes --threads to the PIM backend.
// `processes` is the number of MPI ranks (1 for one process). Throws ConfigError naming the flag.
// Where a run's data come from: --data / --test (files, built-ins), or arrays a front end already holds (the
// Python package), when the data parameters (--data, --test, --test-fraction, --input-format, --positive-classes)
// must not be given.
enum class DataOrigin { kSources, kInMemory };
void ResolveRunConfig(RunConfig& config, int processes, DataOrigin origin = DataOrigin::kSources);

// The options that affect the result, as (name, value), in table order: those a checkpoint must match to be
// resumed (not the epoch count), and those the model file records.
OptionList ResumeOptions(const RunConfig& config);
OptionList ResultOptions(const RunConfig& config);

}  // namespace pimopt
