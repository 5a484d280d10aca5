// A training run as library stages, which the CLI (and any other front end) calls in order:
//   1. ResolveRunConfig (run_config.h): every parameter checked, defaults resolved; no data read
//   2. LoadRunData:   this process's training rows (its Partition of the run) and evaluation rows, scaled
//   3. MakeBackend:   the run's backend, from the backend registry (backends/registry.h)
//   4. TrainAndEvaluate: the epochs (Train), metrics after every epoch, the report and the PIM projection
//   5. WriteOutputs:  model file, LIBLINEAR export, JSON report (rank 0)
// RunTraining runs them all (stages 2-5 expect a config that passed stage 1). Under MPI every rank runs every stage with its Communicator.
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "pimopt/algorithms/train.h"
#include "pimopt/backends/projection.h"
#include "pimopt/collectives/communicator.h"
#include "pimopt/core/thread_pool.h"
#include "pimopt/data/transform.h"
#include "pimopt/run/cross_validation.h"
#include "pimopt/run/run_config.h"

namespace pimopt {

struct RunData {
  Dataset train;                // this process's training rows
  std::optional<Dataset> test;  // this process's evaluation rows (its EvaluationSlice under MPI)
  Partition partition;          // this process's part of the run
  uint64_t total_test_rows = 0;
  double load_seconds = 0;
  std::vector<std::string> notes;  // what the user should know about how the data was read
  std::optional<FeatureScaler> scaler;  // --scale: fitted on the training rows, applied to train and test
};

// The model that scores raw features as `model` scores the scaled ones: score = sum_j w_j (x_j - o_j) s_j + b
// = sum_j (w_j s_j) x_j + (b - sum_j w_j s_j o_j). What the model file and the LIBLINEAR export hold, so that
// `predict` and LIBLINEAR need no scaling.
LinearModel FoldScalerIntoModel(const LinearModel& model, const FeatureScaler& scaler);
// Above this cancellation (12 of float's 24 bits), the run notes that the saved model's predictions may differ.
constexpr double kFoldedCancellationNote = 4096;
// How much of float's precision the folded model's scores of raw rows lose to cancellation, as a factor: the sum
// of its terms' largest magnitudes (|w_j| max|x_j| over the training range, and |b|) over the scaled model's (|w_j|
// over [0, 1], and |b|); 1 without offsets. `feature` is set to the feature with the largest term.
double FoldedScoreCancellation(const LinearModel& scaled_model, const LinearModel& folded_model,
                               const FeatureScaler& scaler, size_t* feature = nullptr);

// Stage 2. Each process holds only its rows: a binary cache is read slice by slice and a synthetic built-in
// generates only them; other sources are parsed whole and then cut (with a note). The dense/sparse choice and the
// min-max scaler are made from all processes' rows, so every process count stores and scales alike.
RunData LoadRunData(const RunConfig& config, Communicator& comm, ThreadPool& pool);

// Stage 2 for data a front end already holds (one process; a config resolved with DataOrigin::kInMemory): the
// storage choice (--storage; auto stores dense arrays of few non-zeros sparse, as it would the same values read
// from a file) and the scaler, as LoadRunData applies them. Labels must be +1 / -1.
RunData PrepareRunData(const RunConfig& config, Dataset train, std::optional<Dataset> test);

// Stage 3.
std::unique_ptr<IBackend> MakeBackend(const RunConfig& config, ThreadPool& pool);

struct RunOutcome {
  RunConfig config;  // as resolved by stage 1
  TrainResult result;
  nlohmann::json report;
  std::optional<EpochProjection> projection;
  std::optional<CrossValidation> cross_validation;  // --cv
  // What the run found that its user must know (printed after the summary, in the report's "notes"): features the
  // PIM backend clipped, a saved model whose folded scaling costs its scores their precision.
  std::vector<std::string> notes;
};

struct RunCallbacks {
  // After loading, before the first epoch.
  std::function<void(const RunConfig& config, const RunData& data, const ThreadPool& pool)> on_start;
  std::function<void(const EpochRecord& record)> on_epoch;
  std::function<void(int epoch)> after_epoch;  // after each epoch's checkpoint (test hook)
  std::function<void(uint32_t fold, const Metrics& metrics)> on_fold;  // --cv: after each fold
  std::function<void(nlohmann::json& report)> before_write;  // adds to the report before rank 0 writes it
};

// Stage 4: with --cv K, first cross-validates (cross_validation.h); trains (resuming from --checkpoint with
// --resume), evaluates after every epoch, builds the report. With --scale, the outcome's model has the scaling
// folded in (FoldScalerIntoModel): it scores raw features.
RunOutcome TrainAndEvaluate(const RunConfig& config, const RunData& data, IBackend& backend, Communicator& comm,
                            ThreadPool& pool, const RunCallbacks& callbacks = {});

// Stage 5 (rank 0): the model file (its header records `command_line` and the options that affect the result),
// the LIBLINEAR export, the JSON report.
// Writes them as one OutputBatch: when one fails, none of them is left (an existing file keeps its content).
void WriteOutputs(const RunConfig& config, const RunOutcome& outcome, const std::string& command_line);

// Every stage, from ResolveRunConfig to WriteOutputs.
RunOutcome RunTraining(RunConfig config, Communicator& comm, const std::string& command_line,
                       const RunCallbacks& callbacks = {});

}  // namespace pimopt
