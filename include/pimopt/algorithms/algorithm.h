// An algorithm's coordinator: the loop structure of one epoch, written once against IBackend. One file per
// algorithm in src/algorithms/, each opening with the math it implements and registering itself by name with its
// traits (PIMOPT_REGISTER_ALGORITHM): nothing outside that file switches on which algorithm runs.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pimopt/algorithms/backend.h"
#include "pimopt/algorithms/train_config.h"
#include "pimopt/collectives/communicator.h"
#include "pimopt/core/error.h"

namespace pimopt {

// A figure an algorithm reports about an epoch (ADMM's residuals and penalty): the report's key, the progress
// line's label, the value.
struct EpochFigure {
  std::string key;    // "admm_primal_residual"
  std::string label;  // "r"
  double value = 0;
};

struct EpochInfo {
  uint64_t steps = 0;  // optimizer steps (global updates, or local steps per worker)
  uint64_t syncs = 0;  // host <-> worker synchronizations in this epoch
  // The algorithm's own figures, shown after `figures_title` on the progress line and under their keys in the
  // report's epoch records.
  std::string figures_title = {};
  std::vector<EpochFigure> figures = {};
  // The figure under `key`, if reported.
  std::optional<double> Figure(std::string_view key) const {
    for (const EpochFigure& f : figures) {
      if (f.key == key) return f.value;
    }
    return std::nullopt;
  }
};

// What --batch counts for an algorithm.
enum class BatchMeaning {
  kSingleRow,       // always 1 (SGD)
  kGlobal,          // rows per global step, over all workers (MB-SGD, GA-SGD)
  kLocalPerWorker,  // rows per local step of each worker (MA-SGD, ADMM)
  kFullBatch,       // every row in every step (Newton; --batch takes no other value)
};
const char* BatchMeaningText(BatchMeaning meaning);  // "one row", "global batch", "local batch per worker"

// How an algorithm's synchronizations per epoch grow when each worker holds more rows (for projections).
enum class SyncScaling {
  kWithRowsPerWorker,  // a sync per local batch or per global batch (SGD, MB-SGD, GA-SGD, MA-SGD)
  kOncePerEpoch,       // one consensus step per epoch (ADMM)
};

// What the rest of pimopt may know about an algorithm, declared by the algorithm itself.
struct AlgorithmTraits {
  std::string name;                  // the registry name and --algo value
  std::vector<std::string> aliases;  // also accepted by --algo
  std::string title;                 // for people: "gradient-averaging SGD (GA-SGD)"
  int listing_order = 0;             // where it appears in lists and --help
  bool distributed = false;          // K workers, spread over MPI ranks; false: exactly one worker, one process
  int default_workers = 1;
  int default_epochs = 100;  // --epochs when not given: the most epochs a run takes (stopping rules may end it earlier)
  BatchMeaning batch_meaning = BatchMeaning::kGlobal;
  uint64_t default_batch = 64;
  // Worker state, which backends allocate and checkpoints hold: the local model x_k, and with offsets a vector o_k
  // of the model's size per worker (ADMM's scaled dual u_k), which makes LocalSolve's proximal solver (towards
  // global - o_k), Consensus and ScaleOffsets available.
  bool worker_offsets = false;
  // Its synchronizations average local models that started from the global model (MA-SGD): what --sync-format
  // int16 / int8 can send as quantized deltas from the global model.
  bool averages_deltas_from_global = false;
  // Per-row state: one dual variable beta_i in [0, 1] per training row, kept with the row's worker (zero at Setup,
  // held by checkpoints), which LocalSolver::kDualCoordinateAscent updates and IBackend::RowDuals reads; the
  // duality-gap certificate is then computed from these duals.
  bool row_duals = false;
  // The objective solved regularizes the bias, F_b = F + (l2/2) b^2 (Objective::regularize_bias; loss.h).
  bool regularizes_bias = false;
  // Its steps take --lr (every SGD method); false: --lr is refused as not meaningful (CoCoA's steps are exact).
  bool uses_learning_rate = true;
  // Its steps are full-batch second-order steps (IBackend::PrimalDerivativesAtGlobal and the verbs after it), which
  // only backends with BackendTraits::second_order offer; it needs a twice-differentiable loss (the logistic).
  bool second_order = false;
  SyncScaling syncs = SyncScaling::kWithRowsPerWorker;
};

class Algorithm {
 public:
  virtual ~Algorithm() = default;
  // Algorithm-specific checks of the configuration (beyond TrainConfig's), throwing ConfigError naming the flag:
  // those that need no data (run before any data is loaded), and those against the training set's size.
  virtual void Validate(const TrainConfig& config) const = 0;
  virtual void ValidateForData(const TrainConfig& config, uint64_t train_rows) const = 0;
  // One epoch over this process's part of the run (Partition::Whole for a single process). The plans are built
  // over all N rows and W workers; the backend receives only this process's workers, with local row indices.
  virtual EpochInfo RunEpoch(IBackend& backend, const TrainConfig& config, const Partition& part, int epoch) = 0;
  // The parameters the algorithm resolves from what only the run knows (ADMM's --rho auto), before --lr auto.
  virtual void ResolveAuto(TrainConfig&) const {}
  // Its epochs are one worker's sequential pass (CoCoA with one worker and one lane): on a backend that runs a
  // worker on one thread (IBackend::RunsAWorkerOnOneThread) an epoch leaves the other threads idle, and Train
  // evaluates beside the epochs.
  virtual bool SequentialEpochs(const TrainConfig&) const { return false; }
  // The weight of a proximal term its local steps take besides the L2 decay (ADMM's rho; 0 without), which bounds
  // --lr auto.
  virtual double ProximalWeight(const TrainConfig&) const { return 0; }
  // The algorithm's own progress across epochs (ADMM's adapted penalty), which checkpoints save and a resume
  // restores before the next epoch: an empty list before the first epoch. RestoreProgress throws InputError for
  // a list it did not write.
  virtual std::vector<double> SaveProgress() const { return {}; }
  virtual void RestoreProgress(const std::vector<double>& progress) {
    if (!progress.empty()) throw InputError("the checkpoint holds progress this algorithm does not keep");
  }
};

// Whether Train evaluates a run's epochs on a second thread beside them, as far as the run's configuration decides
// (docs/algorithms.md "Evaluations beside the epochs"): one worker's sequential pass (Algorithm::SequentialEpochs)
// of a dual method, on a backend that runs a worker on one thread, in one process, under a schedule that does not
// follow the evaluations (plateau). Train also asks for a second usable thread, no hook between epochs and no final
// state to keep; the run header's note asks this function too.
bool EvaluationsBesideEpochsConfigured(const TrainConfig& config, const Algorithm& algorithm,
                                       bool backend_runs_a_worker_on_one_thread, int processes);

// The local-SGD rounds of an epoch (MA-SGD, D-PSGD): every worker passes over its shard once in rounds of
// --local-steps steps (the longest shard's batch count over all workers, so every process runs as many rounds),
// starting each round from the global model or from its own, and `after_round` synchronizes. {steps, rounds}.
std::pair<uint64_t, uint64_t> RunLocalRounds(IBackend& backend, const TrainConfig& config, const Partition& part,
                                             int epoch, bool start_from_global,
                                             const std::function<void()>& after_round);

// Shared checks: a global batch must fit the training set; a local batch must fit the smallest shard.
void ValidateGlobalBatch(const TrainConfig& config, uint64_t train_rows);
void ValidateLocalBatch(const TrainConfig& config, uint64_t train_rows);

// ---- the registry (src/algorithms/registry.cc)
using AlgorithmFactory = std::function<std::unique_ptr<Algorithm>()>;
// An algorithm's own parameters: the table of its options struct (EraseParamTable; every entry AppliesWhen("algo",
// {its name})) and the struct's defaults in a std::any. TrainParams() includes the table; a TrainConfig carries the
// struct (TrainConfig::algorithm_options).
struct AlgorithmParams {
  ParamTable<std::any> table;
  std::function<std::any()> defaults;
};
// Registers an algorithm (from a static initializer in its own file), with its parameters if it has any; returns
// true.
bool RegisterAlgorithm(AlgorithmTraits traits, AlgorithmFactory factory, AlgorithmParams params = {});
// The parameters of every registered algorithm that has any, by name, in listing order.
std::vector<std::pair<std::string, const AlgorithmParams*>> RegisteredAlgorithmParams();
// The algorithm named `name` or one of its aliases; ConfigError naming --algo (with the known names) otherwise.
const AlgorithmTraits& FindAlgorithm(const std::string& name);
// Every registered algorithm, in listing order.
std::vector<const AlgorithmTraits*> RegisteredAlgorithms();
std::unique_ptr<Algorithm> MakeAlgorithm(const std::string& name);
// The names of the algorithms whose traits satisfy `has`, for messages: "ga, ma or admm".
std::string AlgorithmNamesWith(const std::function<bool(const AlgorithmTraits&)>& has);
// The distributed algorithms' names.
std::string DistributedAlgorithmNames();
// The names of the algorithms whose traits satisfy `has`, as a list (for a parameter's AppliesWhen).
std::vector<std::string> AlgorithmNameListWith(const std::function<bool(const AlgorithmTraits&)>& has);

#define PIMOPT_REGISTER_ALGORITHM(Class, ...)                                    \
  [[maybe_unused]] static const bool pimopt_algorithm_registered_##Class =      \
      ::pimopt::RegisterAlgorithm(::pimopt::AlgorithmTraits{__VA_ARGS__},       \
                                  [] { return std::make_unique<Class>(); })
// The same for an algorithm with parameters: `Options` its options struct, `table` a function returning its
// ParamTable<Options>.
#define PIMOPT_REGISTER_ALGORITHM_WITH_PARAMS(Class, Options, table, ...)                                   \
  [[maybe_unused]] static const bool pimopt_algorithm_registered_##Class = ::pimopt::RegisterAlgorithm(   \
      ::pimopt::AlgorithmTraits{__VA_ARGS__}, [] { return std::make_unique<Class>(); },                    \
      ::pimopt::AlgorithmParams{::pimopt::EraseParamTable(table()), [] { return std::any(Options()); }})

}  // namespace pimopt
