// What a training run reports: the JSON report (config, per-epoch metrics, final metrics, time by phase, traffic,
// backend counters, projection, MPI) and the lines `pimopt train` prints.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "pimopt/algorithms/train.h"
#include "pimopt/backends/projection.h"
#include "pimopt/run/cross_validation.h"
#include "pimopt/run/run_config.h"

namespace pimopt {

struct RunData;

struct ReportInputs {
  const RunConfig* config = nullptr;
  const RunData* data = nullptr;
  const TrainResult* result = nullptr;
  std::map<std::string, double> backend_counters;
  std::optional<EpochProjection> projection;
  const CrossValidation* cross_validation = nullptr;  // --cv
  const ThreadPool* pool = nullptr;  // the host threads: how many, how many a phase may use, a phase's cost
  int ranks = 1;
  const std::vector<std::string>* notes = nullptr;  // after the run's (RunOutcome::notes); with the data's notes
};

nlohmann::json ConfigToJson(const RunConfig& config);  // every parameter that applies, by name, typed
nlohmann::json MetricsToJson(const Metrics& m);
nlohmann::json BuildReport(const ReportInputs& in);
void WriteJsonFile(const nlohmann::json& report, const std::string& path);

// Progress and summary lines.
std::string FormatRunHeader(const RunConfig& config, const RunData& data, const ThreadPool& pool, int ranks);
std::string EpochHeader();
std::string FormatEpochLine(const EpochRecord& r);
std::string FormatSummary(const RunConfig& config, const TrainResult& result);
std::string FormatProjection(const EpochProjection& p);
nlohmann::json ProjectionJson(const EpochProjection& p);  // the report's "projection" object
std::string FormatMpiLine(int ranks, const TrainResult& result);
// "auto: lr L reg R" when the run resolved --lr auto / --reg auto, and "converged after epoch E of N: ..." when the
// stopping rule (--tol, the plateau schedule) stopped it; "" when neither.
std::string FormatStop(const RunConfig& config, const TrainResult& result);
// --cv: one fold's line (the last one followed by the epoch header of the final training), and the mean +-
// standard deviation over the folds.
std::string FormatFoldLine(uint32_t fold, uint32_t folds, const Metrics& m);
std::string FormatCrossValidation(const CrossValidation& cv);

// When a target accuracy or AUC (--target-accuracy, --target-auc) was first reached: on the test set when there is
// one, else on the training set (epochs whose metrics were not computed are skipped).
struct TargetReached {
  std::string metric;  // "accuracy" or "auc"
  std::string set;     // "test" or "train"
  double target = 0;
  bool reached = false;
  int epoch = 0;                     // the first epoch that reached it
  double train_wall_s = 0;           // training wall time up to the end of that epoch (evaluation excluded)
  double modeled_s = -1;             // modeled PIM time up to then (-1 on the CPU backend)
  double modeled_uncertainty_s = 0;  // its error bar (the hardware validation's, profile *_time_uncertainty)
  double best = 0;                   // the best value of all epochs
  bool measured = false;             // some epoch had a value (an AUC has none on a set of one class)
  // The first epoch in the records: after a --resume, the epochs before it (in the checkpointed run) are not, and
  // one of them may have reached the target.
  int counted_from_epoch = 1;
  // Epochs up to the reaching one (all, if not reached) whose set was not evaluated (--no-train-metrics, spaced
  // evaluations): the target may have been reached in one of them, before `epoch`.
  int unmeasured_epochs = 0;
};
std::vector<TargetReached> TimesToTargets(const RunConfig& config, const TrainResult& result);
std::string FormatTarget(const TargetReached& t);

}  // namespace pimopt
