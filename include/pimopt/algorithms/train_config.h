// Everything that defines the optimization of a training run. Each field is a parameter declared once in
// TrainParams() (name, default, bounds, unit, help, the algorithms it applies to); the constructor applies the
// declared defaults. Validated before any work, with errors naming the flag.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "pimopt/core/params.h"
#include "pimopt/model/loss.h"

namespace pimopt {

struct AlgorithmTraits;
enum class LrSchedule { kAuto, kConstant, kInverse, kInverseSqrt, kPlateau };

// What the automatic defaults (--lr auto, --reg auto) are derived from: facts of the whole training set (over all
// processes), the same for every fold of a cross-validation only when the folds are the same.
struct TrainDataFacts {
  uint64_t rows = 0;
  double mean_row_sq_norm = 0;  // mean over rows of ||x_i||^2 (features as trained on, after --scale)
};

// Every algorithm's own options (its struct in a std::any, declared and given its parameter table by the algorithm
// itself: RegisterAlgorithm), by algorithm name: what a training configuration carries for whichever algorithm it
// runs. An algorithm without options has none here.
class AlgorithmOptionSet : public NamedOptions {
 public:
  AlgorithmOptionSet();  // every registered algorithm's defaults
};

inline constexpr const char* kAlgorithmParamGroup = "Model and algorithm";

struct TrainConfig {
  TrainConfig();  // TrainParams()' defaults

  std::string algorithm;  // a registered algorithm name (algorithm.h)
  // --algo auto (a run's default: RunConfig; a TrainConfig of its own starts with cocoa): `algorithm` holds cocoa
  // until the run's resolution (ResolveRunConfig) picks newton or cocoa for the run's model, backend and flags, and
  // clears this.
  bool algorithm_auto = false;
  Objective objective;
  int workers;     // K: data shards / workers; 0 = the algorithm's default (ResolveDefaults)
  int epochs;      // 0 = the algorithm's default (ResolveDefaults)
  double tol;      // the stopping rule's tolerance (see the parameter's help); kAutoTol until ResolveDefaults
  uint64_t batch;  // rows per step, as the algorithm's traits say; kAutoBatch: AutoBatch (ResolveAuto)
  double lr;  // kAutoLr: derived from the data (ResolveAuto)
  LrSchedule schedule;
  double lr_decay;  // inverse: lr/(1 + decay*epoch); inverse-sqrt: lr/sqrt(1 + decay*epoch)
  int local_steps;  // local-SGD rounds (MA-SGD, D-PSGD; RunLocalRounds): local steps between two syncs (PIM-Opt: 1)
  bool shuffle;      // reshuffle the visiting order every epoch
  uint64_t seed;
  // Each algorithm's own parameters (ADMM's penalty and local epochs, D-PSGD's topology, GA-SGD's batches), in the
  // struct its file declares.
  AlgorithmOptionSet algorithm_options;
  // Not a parameter: the factor the plateau schedule has applied to the learning rate so far (1, 1/4, 1/16, ...).
  double lr_factor = 1;

  static constexpr uint64_t kAutoBatch = 0;  // --batch auto
  static constexpr uint64_t kAutoMinSteps = 512;  // auto batches leave at least this many steps per epoch
  static constexpr double kAutoLr = 0;    // --lr auto
  static constexpr double kAutoTol = -1;  // --tol auto: kPlateauTol with the plateau schedule, else 0
  static constexpr double kPlateauTol = 1e-3;
  static constexpr double kDualTol = 1e-2;  // --tol auto of a method without a learning rate (CoCoA)
  static constexpr double kAutoReg = -1;  // --reg auto
  // The plateau schedule: kPlateauPatience epochs in a row that lower the best training objective so far by less
  // than tol (relative) are a plateau; it divides the learning rate by kPlateauDrop at each and stops the run at the
  // kPlateauStops-th.
  static constexpr double kPlateauDrop = 4;
  static constexpr int kPlateauStops = 4;
  static constexpr int kPlateauPatience = 3;

  // The traits the algorithm declared (ConfigError naming --algo for an unknown name).
  const AlgorithmTraits& traits() const;
  // Replaces what needs no data: the unset (0) worker and epoch counts by the algorithm's defaults, --lr-schedule
  // auto by plateau (--lr auto) or constant (a given --lr, or an algorithm without a learning rate), --tol auto by
  // kDualTol (an algorithm without a learning rate), kPlateauTol (plateau) or 0.
  void ResolveDefaults();
  // Replaces --lr auto and --reg auto by values derived from the training set (docs/algorithms.md "Defaults"):
  // batch = AutoBatch, reg = 1 / rows (LIBLINEAR's C = 1), lr = AutoLearningRate.
  void ResolveAuto(const TrainDataFacts& facts);
  bool lr_is_auto() const { return lr == kAutoLr; }
  bool reg_is_auto() const { return objective.l2 == kAutoReg; }
  // Sets parameter `name` from text through TrainParams() (ConfigError naming the flag).
  void Set(std::string_view name, std::string_view text);
  // Whether each epoch needs the training objective (the plateau schedule or --tol).
  // A dual method's certificate has stalled when kStallEpochs epochs in a row, and at least kStallChecks computed
  // gaps, found no gap below (1 - kStallGain) x the gap they started from: the run stops and says why (its
  // backend's precision limits). The gap of dual iterates is not monotone, so a few spaced checks can miss its lows.
  static constexpr int kStallEpochs = 100;
  static constexpr int kStallChecks = 5;
  static constexpr double kStallGain = 0.01;
  bool watches_objective() const { return schedule == LrSchedule::kPlateau || tol > 0; }
  // Learning rate of epoch e (0-based), times lr_factor.
  double LearningRate(int epoch) const;
  // Throws ConfigError naming the offending flag: every parameter within its declared bounds (after
  // ResolveDefaults), the rules that involve several of them and the algorithm's own (Algorithm::Validate).
  void ValidateWithoutData() const;
  // The run spread over `processes` MPI ranks: the algorithm must be distributed, with a worker per process
  // (ConfigError naming --algo or --workers).
  void CheckProcesses(int processes) const;
  // At most one worker per training row (ConfigError naming --workers).
  void CheckWorkers(uint64_t train_rows) const;
  // ValidateWithoutData and the rules that involve the training set of `train_rows` rows.
  void Validate(uint64_t train_rows) const;
};

// --batch auto: the algorithm's default batch, halved until an epoch over `train_rows` rows has at least
// kAutoMinSteps steps (not below 1; GA-SGD: a multiple of the workers, at least one row each).
uint64_t AutoBatch(const TrainConfig& config, uint64_t train_rows);

// --lr auto: a quarter of the step the loss's smoothness allows for an average row, 1 / (4 L (mean ||x||^2 + 1))
// with L = 1/4 for the logistic loss and 1 for the hinge loss (the + 1 is the bias's constant feature), times
// sqrt(batch) (a batch's gradient has less noise); at most 1 / (2 reg) and 1 / (2 the algorithm's proximal weight)
// (Algorithm::ProximalWeight: ADMM's rho).
double AutoLearningRate(const TrainConfig& config, const TrainDataFacts& facts);

// The training parameters: algo, model, workers, epochs, batch, lr, lr-schedule, lr-decay, reg, l1, local-steps,
// every registered algorithm's own (RegisterAlgorithm: ADMM's rho and local-epochs, D-PSGD's topology, GA-SGD's
// ga-batches), class-weights, no-bias, no-shuffle, seed.
const ParamTable<TrainConfig>& TrainParams();

}  // namespace pimopt
