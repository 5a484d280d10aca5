// Checkpoints: the full training state after a number of epochs, written atomically (temporary file + rename), so
// a run killed at any moment (even during a checkpoint write) resumes from the last complete checkpoint and ends
// with the model an uninterrupted run ends with. Shuffles and batches are pure functions of (seed, epoch), so the
// state is the backend's models and duals plus the epoch count.
//
// The state is that of all W workers in global worker order, whichever number of processes wrote it: a run on P
// MPI ranks and one process with the same W write the same checkpoint and can resume each other's. Under MPI,
// rank 0 gathers the workers' state and writes the one file; on resume it reads it and broadcasts it.
//
// File layout (little-endian), version 2: "PIMOPTCK" | uint32 version | uint32 reserved | uint64 run fingerprint |
// int32 epochs done | uint32 backend name length, bytes | uint32 shared vector count | shared vectors | uint32
// worker count W | uint32 vectors per worker | W x that many vectors; a vector is uint64 words, uint32 words[] |
// uint64 checksum of everything after the magic.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "pimopt/algorithms/backend.h"
#include "pimopt/collectives/communicator.h"
#include "pimopt/algorithms/train_config.h"
#include "pimopt/data/dataset.h"

namespace pimopt {

struct Checkpoint {
  uint64_t fingerprint = 0;
  int epochs_done = 0;
  std::string backend;
  BackendState state;
};

// Identifies a run: everything that determines the trajectory (configuration but the epoch count, the training
// data's shape and labels, the backend), not how many processes run it. A checkpoint is only resumed by the same
// run. Collective: `local_train` is this process's part (`part`) of the training set.
uint64_t RunFingerprint(const TrainConfig& config, const Dataset& local_train, const Partition& part,
                        Communicator& comm, const std::string& backend);

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
