// Everything that defines a training run. Validated once, before any work, with errors naming the flag.
#pragma once

#include <cstdint>
#include <string>

#include "pimopt/model/loss.h"

namespace pimopt {

struct AlgorithmTraits;
enum class LrSchedule { kConstant, kInverse, kInverseSqrt };

LrSchedule ParseLrSchedule(const std::string& text);  // constant | inverse | inverse-sqrt
const char* LrScheduleName(LrSchedule schedule);

struct TrainConfig {
  std::string algorithm = "mbsgd";  // a registered algorithm name (algorithm.h)
  Objective objective;
  int workers = 1;  // K: data shards / workers (SGD and MB-SGD: 1)
  int epochs = 10;
  uint64_t batch = 64;  // SGD: 1; MB-SGD, GA-SGD: global batch; MA-SGD, ADMM: local batch per worker
  double lr = 0.1;
  LrSchedule schedule = LrSchedule::kConstant;
  double lr_decay = 0.0;  // inverse: lr/(1 + decay*epoch); inverse-sqrt: lr/sqrt(1 + decay*epoch)
  int local_steps = 1;    // MA-SGD: local mini-batch steps between two averages (PIM-Opt: 1)
  double rho = 1.0;       // ADMM penalty
  int local_epochs = 1;   // ADMM: local epochs of proximal mini-batch SGD per consensus round
  bool shuffle = true;    // reshuffle the visiting order every epoch
  uint64_t seed = 1;

  // The traits the algorithm declared (ConfigError naming --algo for an unknown name).
  const AlgorithmTraits& traits() const;
  // Learning rate of epoch e (0-based).
  double LearningRate(int epoch) const;
  // Throws ConfigError naming the offending flag. `train_rows` is the size of the training set.
  void Validate(uint64_t train_rows) const;
};

}  // namespace pimopt
