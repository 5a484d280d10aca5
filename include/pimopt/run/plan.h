// The planner (`pimopt plan`, Python's pimopt.plan): which algorithm reaches a target first on the emulated PIM
// system, and why. The emulated system is the registered backend whose workers are devices and whose epochs project
// (backends/registry.h: the PIM backend). Per algorithm it combines two short pilots:
//   1. convergence: a run on the CPU backend (or, with pilot_backend "pim", the emulator) with the run's workers
//      (the same algorithm, batch, learning rate and schedule; on the CPU in float instead of the DPUs' fixed point)
//      for at most `pilot_epochs` epochs, which gives the epoch in which the target is first reached (or that it is
//      not reached within them);
//   2. timing: one epoch on the PIM emulator, at the run's DPU count when it is at most `timing_dpus` (on every
//      row: the measured epoch), else on `timing_dpus` DPUs holding the run's rows per DPU (GA-SGD with the run's
//      rows per DPU per step), projected to the run's DPUs by the backend's EpochProjector (weak scaling, links re-modeled).
// Predicted time to the target = epochs to it x modeled seconds per epoch; the recommendation is the fastest
// algorithm that reaches it. What the prediction assumes (and the test checks against full emulated runs): the
// fixed-point PIM run needs the epochs the float pilot needs; every epoch costs what the timed one did.
#pragma once

#include <cmath>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "pimopt/backends/projection.h"
#include "pimopt/run/run_config.h"

namespace pimopt {

struct PlanOptions {
  std::vector<std::string> algorithms = {"mbsgd", "ga", "ma", "dsgd", "admm", "cocoa"};
  int pilot_epochs = 20;         // convergence pilot: at most this many epochs (and at most --epochs)
  // The convergence pilot's backend (a registered name): "cpu" (float, fast) or a backend that projects its epochs,
  // "pim" (the emulator: the full run's own epochs, which then also time it: no separate timing pilot).
  std::string pilot_backend = "cpu";
  uint32_t timing_dpus = 64;     // timing pilot: at most this many emulated DPUs
  uint64_t timing_rows_per_dpu = 8192;  // ... each holding at most this many rows (kernel times scale per row)
};

// The planner's own parameters (--algos, --pilot-epochs, --pilot-backend, --timing-dpus, --timing-rows-per-dpu):
// declared once, for `pimopt plan` and Python's pimopt.plan alike.
const ParamTable<PlanOptions>& PlanParams();

struct PlanCandidate {
  std::string algorithm;
  uint32_t dpus = 0;
  std::string flags;        // the settings a full run uses: "--algo ma --workers 64 --batch 16 ..."
  EpochProjection epoch;      // modeled time and bytes of one epoch of the full run
  bool timed_at_run_size = false;  // the timing pilot ran the full run's DPUs and rows (else projected)
  int pilot_epochs = 0;     // epochs the convergence pilot ran
  std::string pilot_stop;   // why the pilot stopped ("epoch bound", "converged", ...)
  bool reached = false;         // the convergence pilot reached the target
  int epochs_to_target = 0;     // the first epoch that reached the target (reached)
  double best_metric = 0;       // the best value of the target's metric in the pilot
  double time_to_target_s = 0;  // epochs_to_target x epoch.epoch_s (Ranked())
  // The timing pilot gave an epoch time (a projection the profile's links cannot make is NaN).
  bool Timed() const { return std::isfinite(epoch.epoch_s) && epoch.epoch_s > 0; }
  // A prediction exists: the pilot reached the target and the epoch was timed. Only such candidates are ranked.
  bool Ranked() const { return reached && Timed(); }
  double bytes_to_target = 0;
  double pilot_wall_s = 0;  // both pilots' wall time on this machine
};

struct Plan {
  std::string data;
  uint64_t rows = 0, features = 0;
  std::string profile;
  uint32_t dpus = 0;
  std::string metric;       // "accuracy" or "auc"
  std::string set;          // "test" or "train": where the metric is measured
  double target = 0;
  bool target_given = true;  // false: the best value any pilot reached, less half a point
  std::string pilot_backend;  // PlanOptions::pilot_backend
  std::vector<PlanCandidate> candidates;  // in PlanOptions::algorithms' order
  int best = -1;  // index of the recommended candidate; -1 when none reaches the target
};

// `base` holds train's parameters (SetParam; not yet resolved): data, model, profile, --dpus (or --workers: the
// run's DPUs, default 64), --target-accuracy or --target-auc (default: see Plan::target_given) and any training
// flag; flags that apply to only some algorithms are used where they apply. Refused (ConfigError naming the flag):
// --algo (plan compares them: --algos), --backend, outputs, checkpoints, --cv. `on_candidate` is called after each
// algorithm's pilots (for progress: whether it reaches the target is filled in once every pilot has run).
Plan MakePlan(const RunConfig& base, const PlanOptions& options,
              const std::function<void(const PlanCandidate&)>& on_candidate = {});

nlohmann::json PlanJson(const Plan& plan);
std::string FormatPlan(const Plan& plan);  // the table and the recommendation, for people

}  // namespace pimopt
