// Checkpoints: the full training state after a number of epochs, written atomically (temporary file + rename), so
// a run killed at any moment (even during a checkpoint write) resumes from the last complete checkpoint and ends
// with the model an uninterrupted run ends with. Shuffles and batches are pure functions of (seed, epoch), so the
// state is the backend's models and duals plus the epoch count.
//
// File layout (little-endian), version 1: "PIMOPTCK" | uint32 version | uint32 reserved | uint64 run fingerprint |
// int32 epochs done | uint32 backend name length, bytes | uint32 vector count | per vector: uint64 words, uint32
// words[] | uint64 checksum of everything after the magic.
#pragma once

#include <cstdint>
#include <string>

#include "pimopt/algorithms/backend.h"
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
// data's shape and labels, the backend). A checkpoint is only resumed by the same run.
uint64_t RunFingerprint(const TrainConfig& config, const Dataset& train, const std::string& backend);
void WriteCheckpoint(const Checkpoint& checkpoint, const std::string& path);
// Throws ParseError naming the file when it is truncated, corrupt or of another version.
Checkpoint ReadCheckpoint(const std::string& path);

}  // namespace pimopt
