// An algorithm's coordinator: the loop structure of one epoch, written once against IBackend. One file per
// algorithm in src/algorithms/, each opening with the math it implements.
#pragma once

#include <memory>
#include <optional>

#include "pimopt/algorithms/backend.h"
#include "pimopt/collectives/communicator.h"
#include "pimopt/algorithms/train_config.h"

namespace pimopt {

struct EpochInfo {
  uint64_t steps = 0;  // optimizer steps (global updates, or local steps per worker)
  uint64_t syncs = 0;  // host <-> worker synchronizations in this epoch
  std::optional<AdmmResiduals> residuals;
};

class Algorithm {
 public:
  virtual ~Algorithm() = default;
  virtual AlgorithmKind kind() const = 0;
  // Algorithm-specific checks of the configuration (beyond TrainConfig::Validate); throws ConfigError.
  virtual void Validate(const TrainConfig& config, uint64_t train_rows) const = 0;
  // One epoch over this process's part of the run (Partition::Whole for a single process). The plans are built
  // over all N rows and W workers; the backend receives only this process's workers, with local row indices.
  virtual EpochInfo RunEpoch(IBackend& backend, const TrainConfig& config, const Partition& part, int epoch) = 0;
  // False for algorithms with a single worker (SGD, MB-SGD): they cannot be spread over processes.
  virtual bool distributable() const { return true; }
};

// Shared checks: a global batch must fit the training set; a local batch must fit the smallest shard.
void ValidateGlobalBatch(const TrainConfig& config, uint64_t train_rows);
void ValidateLocalBatch(const TrainConfig& config, uint64_t train_rows);

std::unique_ptr<Algorithm> MakeSgd();
std::unique_ptr<Algorithm> MakeMbSgd();
std::unique_ptr<Algorithm> MakeGaSgd();
std::unique_ptr<Algorithm> MakeMaSgd();
std::unique_ptr<Algorithm> MakeAdmm();
std::unique_ptr<Algorithm> MakeAlgorithm(AlgorithmKind kind);

}  // namespace pimopt
