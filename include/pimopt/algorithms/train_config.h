// Everything that defines the optimization of a training run. Each field is a parameter declared once in
// TrainParams() (name, default, bounds, unit, help, the algorithms it applies to); the constructor applies the
// declared defaults. Validated before any work, with errors naming the flag.
#pragma once

#include <cstdint>
#include <string>

#include "pimopt/core/params.h"
#include "pimopt/model/loss.h"

namespace pimopt {

struct AlgorithmTraits;
enum class LrSchedule { kConstant, kInverse, kInverseSqrt };

struct TrainConfig {
  TrainConfig();  // TrainParams()' defaults

  std::string algorithm;  // a registered algorithm name (algorithm.h)
  Objective objective;
  int workers;     // K: data shards / workers; 0 = the algorithm's default (ResolveDefaults)
  int epochs;
  double tol;      // stop when the training objective's relative change over an epoch falls below this; 0: never
  uint64_t batch;  // rows per step, as the algorithm's traits say; 0 = the algorithm's default
  double lr;
  LrSchedule schedule;
  double lr_decay;  // inverse: lr/(1 + decay*epoch); inverse-sqrt: lr/sqrt(1 + decay*epoch)
  int local_steps;  // MA-SGD: local mini-batch steps between two averages (PIM-Opt: 1)
  double rho;       // ADMM penalty
  int local_epochs;  // ADMM: local epochs of proximal mini-batch SGD per consensus round
  bool shuffle;      // reshuffle the visiting order every epoch
  bool ga_per_worker_batches;  // GA-SGD: each worker B/K rows of its own shard per step (PIM-Opt's), not a random
                               // global batch
  uint64_t seed;

  // The traits the algorithm declared (ConfigError naming --algo for an unknown name).
  const AlgorithmTraits& traits() const;
  // Replaces the unset (0) worker count and batch by the algorithm's defaults.
  void ResolveDefaults();
  // Learning rate of epoch e (0-based).
  double LearningRate(int epoch) const;
  // Throws ConfigError naming the offending flag: every parameter within its declared bounds (after
  // ResolveDefaults), the rules that involve several of them and the algorithm's own (Algorithm::Validate).
  void ValidateWithoutData() const;
  // The run spread over `processes` MPI ranks: the algorithm must be distributed, with a worker per process
  // (ConfigError naming --algo or --workers).
  void CheckProcesses(int processes) const;
  // ValidateWithoutData and the rules that involve the training set of `train_rows` rows.
  void Validate(uint64_t train_rows) const;
};

// The training parameters: algo, model, workers, epochs, batch, lr, lr-schedule, lr-decay, reg, l1, rho,
// local-epochs, local-steps, class-weights, no-bias, no-shuffle, seed.
const ParamTable<TrainConfig>& TrainParams();

}  // namespace pimopt
