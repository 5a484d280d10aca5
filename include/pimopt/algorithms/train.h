// The training driver shared by all algorithms and backends: validates, runs epochs, evaluates, records.
#pragma once

#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "pimopt/algorithms/algorithm.h"
#include "pimopt/algorithms/duality_gap.h"
#include "pimopt/algorithms/backend.h"
#include "pimopt/algorithms/checkpoint.h"
#include "pimopt/model/linear_model.h"
#include "pimopt/model/metrics.h"

namespace pimopt {

class ThreadPool;

struct EpochRecord {
  int epoch = 0;  // 1-based
  double lr = 0;
  EpochInfo info;
  Metrics train;
  std::optional<Metrics> test;
  double train_seconds = 0;  // host wall time of this epoch's training (evaluation excluded)
  double eval_seconds = 0;   // and of its evaluations: metrics and the certificate
  // The backend's phase times spent in this epoch (rank 0's under MPI), plus "mpi_comm": seconds in MPI
  // collectives during training (not evaluation), excluded from the backend's phases.
  std::map<std::string, double> phase_seconds;
  TrafficCounters traffic;  // host <-> worker traffic of this epoch, summed over ranks; MPI bytes
  bool plateau = false;     // the plateau schedule counted this epoch as a plateau (the next one runs at lr / 4)
  DualityGap gap;           // the certificate of the training objective (when the run watches it; duality_gap.h)
};

struct TrainResult {
  LinearModel model;
  std::vector<EpochRecord> epochs;
  double train_seconds = 0;  // sum over epochs, evaluation excluded
  double eval_seconds = 0;
  std::map<std::string, double> phase_seconds;
  TrafficCounters traffic;
  int resumed_from_epoch = 0;  // epochs done before this run (restored from a checkpoint)
  // The configuration the run trained with: defaults resolved (workers, batch) and --lr auto / --reg auto replaced
  // by the values derived from the training set.
  TrainConfig config;
  // Why the run stopped: after --epochs, or by the stopping rule (--tol, or the plateau schedule's last plateau);
  // the objective's relative change over the last epoch (NaN when not computed) and the plateaus met.
  bool converged = false;
  double last_relative_change = std::numeric_limits<double>::quiet_NaN();
  int plateaus = 0;
  bool stopped_on_gap = false;  // converged because the relative duality gap fell to --tol
  // Not empty: the run stopped (not converged) because its certificate stalled (TrainConfig::kStallEpochs), and why.
  std::string stalled;
  // The backend's state after the last epoch (this process's workers), with TrainOptions::keep_final_state: a
  // warm start for another run.
  BackendState final_state;
  Partition partition;         // this process's part of the run
  // The stopping rule's evaluations ran on a second thread beside the epochs (Train; docs/algorithms.md
  // "Evaluations beside the epochs"): the same records and model, eval_seconds overlapping train_seconds.
  bool evaluations_beside_epochs = false;
  // The backend's counters (IBackend::Counters) at the returned model where the backend trained past it (the epochs
  // run beside the stopping epoch's evaluation, dropped); unset: the backend's own are the run's.
  std::optional<std::map<std::string, double>> backend_counters;
};

struct TrainOptions {
  bool evaluate_train = true;  // compute train-set metrics every epoch (else only after the last)
  // With evaluate_train, where the run stops on its certificate (tol > 0 with L2, no plateau schedule): compute them
  // at the epochs the stopping rule checks (spaced), as without evaluate_train, every metric at those epochs.
  bool spaced_train_metrics = false;
  // Score the test set after every epoch (else only after the run's last: a cross-validation's folds, whose score
  // is the final model's).
  bool evaluate_test_every_epoch = true;
  ThreadPool* eval_pool = nullptr;
  std::function<void(const EpochRecord&)> on_epoch;  // progress callback
  // Checkpoints: write the state to `checkpoint_path` every `checkpoint_every` epochs (and after the last); with
  // `resume`, continue from that file when it exists (it must come from the same run).
  std::string checkpoint_path;
  int checkpoint_every = 0;
  bool resume = false;
  // What a checkpoint records and a resume must match: every option that affects the result (name, canonical
  // value); empty: the training parameters' (TrainResumeOptions). The data is fingerprinted in any case.
  OptionList resume_options;
  // A warm start: the run begins from this state (another run's final_state on the same training rows, backend,
  // algorithm and workers) instead of zero. A resumed checkpoint takes precedence.
  const BackendState* warm_start = nullptr;
  // The L2 strength the warm start was trained under, when it kept row duals and differs from this run's (resolved)
  // one: the backend moves the duals to this run's (IBackend::MoveRowDualsToL2). 0: the same objective.
  double warm_start_l2 = 0;
  bool keep_final_state = false;
  // The processes of the run (nullptr: this process alone). Under MPI, `train` is this rank's part of the
  // training set (`partition`) and `test` its EvaluationSlice of the test set; metrics are computed over all ranks'
  // rows (rank 0 gathers the scores) and are the same on every rank.
  Communicator* comm = nullptr;
  // This process's part of the run, as the data was loaded for it; nullptr: derived from the row counts.
  const Partition* partition = nullptr;
  // Test hook: called after each epoch's checkpoint (e.g. to kill a rank); nullptr in normal runs.
  std::function<void(int epoch)> after_epoch;
};

// Trains with `config` (its unset worker count and batch resolved to the algorithm's defaults) on `backend`.
TrainResult Train(const Dataset& train, const Dataset* test, const TrainConfig& config, IBackend& backend,
                  const TrainOptions& options = {});

// Metrics over all ranks' rows of a dataset split over `comm` (rank order = row order); every rank gets them.
Metrics EvaluateAcross(const LinearModel& model, const Dataset& local, const Objective& objective, ThreadPool* pool,
                       Communicator& comm, MetricsScope scope = MetricsScope::kAll);

}  // namespace pimopt
