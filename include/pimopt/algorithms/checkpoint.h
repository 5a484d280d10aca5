// Checkpoints: the full training state after a number of epochs, written atomically (temporary file + rename), so
// a run killed at any moment (even during a checkpoint write) resumes from the last complete checkpoint and ends
// with the model an uninterrupted run ends with. Shuffles and batches are pure functions of (seed, epoch), so the
// state is the backend's models and duals plus the epoch count.
//
// The state is that of all W workers in global worker order, whichever number of processes wrote it: a run on P
// MPI ranks and one process with the same W write the same checkpoint and can resume each other's. Under MPI,
// rank 0 gathers the workers' state and writes the one file; on resume it reads it and broadcasts it.
//
// A checkpoint records what it belongs to (RunIdentity): every option that affects the result, by name and value
// (the parameter tables' options with an effect, but the epoch count), and a fingerprint of the training data. A
// resume under another option or other data is refused, naming the option (ResumeMismatch).
//
// File layout (little-endian), version 3: "PIMOPTCK" | uint32 version | uint32 reserved | uint64 training rows |
// uint64 features | uint64 data hash | uint32 option count | per option: string name, string value | int32 epochs
// done | string backend name | uint32 shared vector count | shared vectors | uint32 worker count W | uint32 vectors
// per worker | W x that many vectors | uint64 checksum of everything after the magic. A string is uint32 length,
// bytes; a vector is uint64 words, uint32 words[].
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pimopt/algorithms/backend.h"
#include "pimopt/collectives/communicator.h"
#include "pimopt/algorithms/train_config.h"
#include "pimopt/data/dataset.h"

namespace pimopt {

// The training set a run trains on, independent of how its rows are split over processes: the row and feature
// counts, and a hash of every row's global index, label, sample weight and non-zero (column, value) pairs.
struct DataFingerprint {
  uint64_t rows = 0;
  uint64_t features = 0;
  uint64_t content_hash = 0;
  bool operator==(const DataFingerprint&) const = default;
};
// Collective: `local_train` is this process's part (`part`) of the training set. Costs one pass over the data.
DataFingerprint FingerprintTrainingData(const Dataset& local_train, const Partition& part, Communicator& comm);

using OptionList = std::vector<std::pair<std::string, std::string>>;  // (parameter name, canonical value)

struct RunIdentity {
  OptionList options;  // every option that affects the result, but those a resume may change (the epoch count)
  DataFingerprint data;
};

// The options of TrainParams() that affect the result, for callers of Train that have no fuller list.
OptionList TrainResumeOptions(const TrainConfig& config);

// Where the stopping rule and the plateau schedule stand after the checkpoint's last epoch.
struct TrainProgress {
  double lr_factor = 1;  // TrainConfig::lr_factor
  int plateaus = 0;      // plateau epochs so far
  double last_objective = std::numeric_limits<double>::quiet_NaN();  // F after the last epoch; NaN if not computed
  double best_objective = std::numeric_limits<double>::quiet_NaN();  // the lowest F so far
  int stale_epochs = 0;  // epochs in a row that did not lower best_objective by tol
  // The relative duality gap computed after the last epoch (NaN when none was): a resume under a --tol it meets
  // is refused, since the run stopped there.
  double certified_gap = std::numeric_limits<double>::quiet_NaN();
  // A stalled certificate (a dual method's): the gap the next computed gaps must beat by TrainConfig::kStallGain
  // (NaN before the first), and the epochs since one did.
  double stall_reference_gap = std::numeric_limits<double>::quiet_NaN();
  int stall_epochs = 0;
  int stall_checks = 0;  // gaps computed since the reference
  // Spaced evaluations (TrainOptions::evaluate_train off, a run that stops on its certificate): the last computed
  // gap and its epoch (0: none yet), and the first epoch at which the next evaluation may come (0: any).
  double spaced_gap = std::numeric_limits<double>::quiet_NaN();
  int spaced_gap_epoch = 0;
  int evaluate_from = 0;
  std::vector<double> algorithm;  // the algorithm's own progress (Algorithm::SaveProgress: ADMM's next penalty)
};

struct Checkpoint {
  RunIdentity identity;
  int epochs_done = 0;
  TrainProgress progress;
  std::string backend;
  BackendState state;
};

// Why a checkpoint written by `saved` cannot be resumed by a run of `run` on `backend`, naming the first option
// (as its flag) that differs, the backend or the data ("it was written with --sigmoid table; this run has
// --sigmoid float"); "" when it can.
std::string ResumeMismatch(const Checkpoint& saved, const RunIdentity& run, const std::string& backend);

// Workers' state vectors (BackendState::per_worker) encoded as in the file, and back - also how ranks send theirs to
// rank 0. Decoding expects exactly `workers` x `per_worker` vectors; else ParseError naming `name`.
using WorkerStates = std::vector<std::vector<std::vector<uint32_t>>>;
std::string EncodeWorkerStates(const WorkerStates& states);
WorkerStates DecodeWorkerStates(std::string_view bytes, size_t workers, size_t per_worker, const std::string& name);

std::string SerializeCheckpoint(const Checkpoint& checkpoint);
// Throws ParseError naming `name` when the bytes are truncated, corrupt or of another version.
Checkpoint ParseCheckpoint(const std::string& bytes, const std::string& name);
void WriteCheckpoint(const Checkpoint& checkpoint, const std::string& path);
Checkpoint ReadCheckpoint(const std::string& path);

}  // namespace pimopt
