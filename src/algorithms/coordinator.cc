#include <chrono>
#include <cmath>

#include "pimopt/algorithms/checkpoint.h"
#include "pimopt/algorithms/train.h"
#include "pimopt/core/error.h"
#include "pimopt/data/file_util.h"

namespace pimopt {

AlgorithmKind ParseAlgorithmKind(const std::string& text) {
  if (text == "sgd") return AlgorithmKind::kSgd;
  if (text == "mbsgd" || text == "mb-sgd") return AlgorithmKind::kMbSgd;
  if (text == "ga" || text == "ga-sgd") return AlgorithmKind::kGaSgd;
  if (text == "ma" || text == "ma-sgd") return AlgorithmKind::kMaSgd;
  if (text == "admm") return AlgorithmKind::kAdmm;
  throw ConfigError("--algo", StrCat("unknown algorithm '", text, "' (use sgd, mbsgd, ga, ma or admm)"));
}

const char* AlgorithmName(AlgorithmKind kind) {
  switch (kind) {
    case AlgorithmKind::kSgd:
      return "sgd";
    case AlgorithmKind::kMbSgd:
      return "mbsgd";
    case AlgorithmKind::kGaSgd:
      return "ga";
    case AlgorithmKind::kMaSgd:
      return "ma";
    case AlgorithmKind::kAdmm:
      return "admm";
  }
  return "?";
}

LrSchedule ParseLrSchedule(const std::string& text) {
  if (text == "constant") return LrSchedule::kConstant;
  if (text == "inverse") return LrSchedule::kInverse;
  if (text == "inverse-sqrt") return LrSchedule::kInverseSqrt;
  throw ConfigError("--lr-schedule", StrCat("unknown schedule '", text, "' (use constant, inverse, inverse-sqrt)"));
}

const char* LrScheduleName(LrSchedule s) {
  switch (s) {
    case LrSchedule::kConstant:
      return "constant";
    case LrSchedule::kInverse:
      return "inverse";
    case LrSchedule::kInverseSqrt:
      return "inverse-sqrt";
  }
  return "?";
}

double TrainConfig::LearningRate(int epoch) const {
  switch (schedule) {
    case LrSchedule::kConstant:
      return lr;
    case LrSchedule::kInverse:
      return lr / (1.0 + lr_decay * epoch);
    case LrSchedule::kInverseSqrt:
      return lr / std::sqrt(1.0 + lr_decay * epoch);
  }
  return lr;
}

void TrainConfig::Validate(uint64_t train_rows) const {
  auto positive_finite = [](double v) { return std::isfinite(v) && v > 0; };
  if (epochs < 1) throw ConfigError("--epochs", "must be at least 1");
  if (workers < 1) throw ConfigError("--workers", "must be at least 1");
  if (static_cast<uint64_t>(workers) > train_rows) {
    throw ConfigError("--workers", StrCat(workers, " workers for only ", train_rows, " training rows"));
  }
  if (batch < 1) throw ConfigError("--batch", "must be at least 1");
  if (!positive_finite(lr)) throw ConfigError("--lr", "must be a positive finite number");
  if (!(std::isfinite(lr_decay) && lr_decay >= 0)) throw ConfigError("--lr-decay", "must be >= 0");
  if (!(std::isfinite(objective.l2) && objective.l2 >= 0)) throw ConfigError("--reg", "must be >= 0");
  if (!(std::isfinite(objective.l1) && objective.l1 >= 0)) throw ConfigError("--l1", "must be >= 0");
  if (lr * objective.l2 >= 1) {
    throw ConfigError("--lr", StrCat("lr * reg = ", lr * objective.l2, " must be < 1 (the L2 step would flip w)"));
  }
  if (!positive_finite(objective.positive_weight) || !positive_finite(objective.negative_weight)) {
    throw ConfigError("--class-weights", "class weights must be positive finite numbers");
  }
  if (local_steps < 1) throw ConfigError("--local-steps", "must be at least 1");
  if (local_epochs < 1) throw ConfigError("--local-epochs", "must be at least 1");
  if (!positive_finite(rho)) throw ConfigError("--rho", "must be a positive finite number");
}

void ValidateGlobalBatch(const TrainConfig& config, uint64_t train_rows) {
  if (config.batch > train_rows) {
    throw ConfigError("--batch", StrCat("batch ", config.batch, " exceeds the ", train_rows, " training rows"));
  }
}

void ValidateLocalBatch(const TrainConfig& config, uint64_t train_rows) {
  const uint64_t smallest_shard = train_rows / config.workers;
  if (config.batch > smallest_shard) {
    throw ConfigError("--batch", StrCat("local batch ", config.batch, " exceeds the smallest shard (", smallest_shard,
                                        " rows for ", config.workers, " workers)"));
  }
}

std::unique_ptr<Algorithm> MakeAlgorithm(AlgorithmKind kind) {
  switch (kind) {
    case AlgorithmKind::kSgd:
      return MakeSgd();
    case AlgorithmKind::kMbSgd:
      return MakeMbSgd();
    case AlgorithmKind::kGaSgd:
      return MakeGaSgd();
    case AlgorithmKind::kMaSgd:
      return MakeMaSgd();
    case AlgorithmKind::kAdmm:
      return MakeAdmm();
  }
  throw InternalError("unknown algorithm kind");
}

TrainResult Train(const Dataset& train, const Dataset* test, const TrainConfig& config, IBackend& backend,
                  const TrainOptions& options) {
  using Clock = std::chrono::steady_clock;
  if (train.num_rows() == 0) throw InputError("training set is empty");
  config.Validate(train.num_rows());
  auto algorithm = MakeAlgorithm(config.algorithm);
  algorithm->Validate(config, train.num_rows());
  backend.Setup(train, config);

  TrainResult result;
  const uint64_t fingerprint = options.checkpoint_path.empty() ? 0 : RunFingerprint(config, train, backend.name());
  int first_epoch = 0;
  if (options.resume && !options.checkpoint_path.empty() && FileExists(options.checkpoint_path)) {
    const Checkpoint checkpoint = ReadCheckpoint(options.checkpoint_path);
    if (checkpoint.fingerprint != fingerprint || checkpoint.backend != backend.name()) {
      throw InputError(StrCat(options.checkpoint_path,
                              ": the checkpoint belongs to another run (configuration, data or backend differ)"));
    }
    if (checkpoint.epochs_done >= config.epochs) {
      throw ConfigError("--epochs", StrCat("the checkpoint already holds ", checkpoint.epochs_done,
                                           " epochs; raise --epochs to train further"));
    }
    backend.RestoreState(checkpoint.state);
    first_epoch = checkpoint.epochs_done;
    result.resumed_from_epoch = first_epoch;
  }
  for (int epoch = first_epoch; epoch < config.epochs; ++epoch) {
    EpochRecord record;
    record.epoch = epoch + 1;
    record.lr = config.LearningRate(epoch);
    const auto phases_before = backend.PhaseSeconds();
    const TrafficCounters traffic_before = backend.Traffic();
    const auto t0 = Clock::now();
    record.info = algorithm->RunEpoch(backend, config, train.num_rows(), epoch);
    const auto t1 = Clock::now();
    for (const auto& [phase, seconds] : backend.PhaseSeconds()) {
      const auto it = phases_before.find(phase);
      record.phase_seconds[phase] = seconds - (it == phases_before.end() ? 0.0 : it->second);
    }
    const TrafficCounters traffic_after = backend.Traffic();
    record.traffic.to_workers_bytes = traffic_after.to_workers_bytes - traffic_before.to_workers_bytes;
    record.traffic.from_workers_bytes = traffic_after.from_workers_bytes - traffic_before.from_workers_bytes;
    record.traffic.syncs = traffic_after.syncs - traffic_before.syncs;
    result.model = backend.ExportModel();
    for (float w : result.model.weights) {
      if (!std::isfinite(w)) {
        throw InputError(
            StrCat("training diverged in epoch ", epoch + 1, " (non-finite weights): lower --lr or raise --reg"));
      }
    }
    const bool last = epoch + 1 == config.epochs;
    if (options.evaluate_train || last) {
      record.train = Evaluate(result.model, train, config.objective, options.eval_pool);
    }
    if (test) record.test = Evaluate(result.model, *test, config.objective, options.eval_pool);
    const auto t2 = Clock::now();
    record.train_seconds = std::chrono::duration<double>(t1 - t0).count();
    record.eval_seconds = std::chrono::duration<double>(t2 - t1).count();
    result.train_seconds += record.train_seconds;
    result.eval_seconds += record.eval_seconds;
    if (options.on_epoch) options.on_epoch(record);
    result.epochs.push_back(std::move(record));
    const int done = epoch + 1;
    if (!options.checkpoint_path.empty() && options.checkpoint_every > 0 &&
        (done % options.checkpoint_every == 0 || done == config.epochs)) {
      WriteCheckpoint({fingerprint, done, backend.name(), backend.SaveState()}, options.checkpoint_path);
    }
  }
  result.model.positive_label_value = train.positive_label_value;
  result.model.negative_label_value = train.negative_label_value;
  result.phase_seconds = backend.PhaseSeconds();
  result.traffic = backend.Traffic();
  return result;
}

}  // namespace pimopt
