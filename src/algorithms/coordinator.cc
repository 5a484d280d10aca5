#include <chrono>
#include <cmath>
#include <cstring>
#include <exception>
#include <optional>

#include "pimopt/algorithms/checkpoint.h"
#include "pimopt/algorithms/train.h"
#include "pimopt/core/error.h"
#include "pimopt/core/file_util.h"

namespace pimopt {

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

const AlgorithmTraits& TrainConfig::traits() const { return FindAlgorithm(algorithm); }

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

std::string DistributedAlgorithmNames() {
  std::vector<std::string> names;
  for (const AlgorithmTraits* t : RegisteredAlgorithms()) {
    if (t->distributed) names.push_back(t->name);
  }
  std::string text;
  for (size_t i = 0; i < names.size(); ++i) {
    text += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  }
  return text;
}

namespace {

// Copies a vector's bytes into / out of a byte buffer (for gathers).
template <typename T>
void AppendBytes(std::vector<std::byte>& out, std::span<const T> values) {
  const auto bytes = std::as_bytes(values);
  out.insert(out.end(), bytes.begin(), bytes.end());
}

// Rank 0 gathers every rank's workers' state (in rank order = global worker order) into one BackendState.
BackendState GatherState(BackendState local, Communicator& comm, int total_workers) {
  if (comm.size() == 1) return local;
  const size_t per_worker = local.per_worker.empty() ? 0 : local.per_worker[0].size();
  const std::string mine = EncodeWorkerStates(local.per_worker);
  const std::vector<std::byte> all = comm.Gather(std::as_bytes(std::span<const char>(mine)), 0);
  if (comm.rank() != 0) return {};
  BackendState state;
  state.shared = std::move(local.shared);
  state.per_worker = DecodeWorkerStates(std::string_view(reinterpret_cast<const char*>(all.data()), all.size()),
                                        total_workers, per_worker, "the workers' state gathered over MPI ranks");
  return state;
}

// Rank 0 reads the checkpoint (if it exists) and every rank gets it; an error on rank 0 is raised on every rank.
std::optional<Checkpoint> ReadCheckpointOnRoot(const std::string& path, Communicator& comm) {
  std::string bytes, error;
  std::exception_ptr failure;
  int32_t status = 0;  // 0: no file, 1: read, 2: error
  if (comm.rank() == 0 && FileExists(path)) {
    try {
      bytes = ReadFileToString(path);
      ParseCheckpoint(bytes, path);  // validate before sending
      status = 1;
    } catch (const Error& e) {
      status = 2;
      error = e.what();
      failure = std::current_exception();
    }
  }
  comm.BroadcastValue(status, 0);
  if (status == 0) return std::nullopt;
  if (status == 2) {
    comm.BroadcastString(error, 0);
    if (failure) std::rethrow_exception(failure);
    throw InputError(error);
  }
  comm.BroadcastString(bytes, 0);
  return ParseCheckpoint(bytes, path);
}

}  // namespace

Metrics EvaluateAcross(const LinearModel& model, const Dataset& local, const Objective& objective, ThreadPool* pool,
                       Communicator& comm) {
  if (comm.size() == 1) return Evaluate(model, local, objective, pool);
  const std::vector<float> scores = ComputeScores(model, local, pool);
  // Each rank sends [uint64 rows | scores | labels | weights]; rank 0 rebuilds the arrays in rank (= row) order.
  std::vector<std::byte> bytes;
  const uint64_t rows = local.num_rows();
  AppendBytes(bytes, std::span<const uint64_t>(&rows, 1));
  AppendBytes(bytes, std::span<const float>(scores));
  AppendBytes(bytes, local.labels());
  std::vector<float> weights(rows);
  for (size_t i = 0; i < rows; ++i) weights[i] = local.weight(i);
  AppendBytes(bytes, std::span<const float>(weights));
  const std::vector<std::byte> all = comm.Gather(bytes, 0);
  Metrics m;
  if (comm.rank() == 0) {
    std::vector<float> s, l, w;
    for (size_t pos = 0; pos < all.size();) {
      uint64_t n;
      PIMOPT_CHECK(pos + 8 <= all.size());
      std::memcpy(&n, all.data() + pos, 8);
      pos += 8;
      PIMOPT_CHECK(pos + 12 * n <= all.size());
      for (std::vector<float>* out : {&s, &l, &w}) {
        const size_t at = out->size();
        out->resize(at + n);
        std::memcpy(out->data() + at, all.data() + pos, 4 * n);
        pos += 4 * n;
      }
    }
    m = MetricsOfScores(s, l, w, model, objective);
  }
  comm.BroadcastValue(m, 0);
  return m;
}

TrainResult Train(const Dataset& train, const Dataset* test, const TrainConfig& config, IBackend& backend,
                  const TrainOptions& options) {
  using Clock = std::chrono::steady_clock;
  Communicator& comm = options.comm ? *options.comm : SingleProcess();
  const uint64_t total_rows = comm.SumU64(train.num_rows());
  if (total_rows == 0) throw InputError("training set is empty");
  config.Validate(total_rows);
  auto algorithm = MakeAlgorithm(config.algorithm);
  algorithm->Validate(config, total_rows);
  if (comm.size() > 1 && !config.traits().distributed) {
    throw ConfigError("--algo", StrCat(config.algorithm, " has one worker and runs in one process; under mpirun use ",
                                       DistributedAlgorithmNames()));
  }
  const Partition part = Partition::ForRank(total_rows, config.workers, comm.rank(), comm.size());
  if (part.local_rows != train.num_rows()) {
    throw InternalError(
        StrCat("rank ", comm.rank(), " holds ", train.num_rows(), " training rows; its part is ", part.local_rows));
  }
  backend.Setup(train, config, part, comm);

  TrainResult result;
  result.partition = part;
  const uint64_t fingerprint =
      options.checkpoint_path.empty() ? 0 : RunFingerprint(config, train, part, comm, backend.name());
  int first_epoch = 0;
  if (options.resume && !options.checkpoint_path.empty()) {
    if (std::optional<Checkpoint> checkpoint = ReadCheckpointOnRoot(options.checkpoint_path, comm)) {
      if (checkpoint->fingerprint != fingerprint || checkpoint->backend != backend.name()) {
        throw InputError(StrCat(options.checkpoint_path,
                                ": the checkpoint belongs to another run (configuration, data or backend differ)"));
      }
      if (checkpoint->epochs_done >= config.epochs) {
        throw ConfigError("--epochs", StrCat("the checkpoint already holds ", checkpoint->epochs_done,
                                             " epochs; raise --epochs to train further"));
      }
      if (checkpoint->state.per_worker.size() != static_cast<size_t>(config.workers)) {
        throw InputError(StrCat(options.checkpoint_path, ": the checkpoint holds ", checkpoint->state.per_worker.size(),
                                " workers' state, the run has ", config.workers));
      }
      BackendState mine;
      mine.shared = std::move(checkpoint->state.shared);
      for (int k = 0; k < part.local_workers; ++k) {
        mine.per_worker.push_back(std::move(checkpoint->state.per_worker[part.first_worker + k]));
      }
      backend.RestoreState(mine);
      first_epoch = checkpoint->epochs_done;
      result.resumed_from_epoch = first_epoch;
    }
  }
  double mpi_seconds = 0;
  uint64_t mpi_bytes = 0;
  for (int epoch = first_epoch; epoch < config.epochs; ++epoch) {
    EpochRecord record;
    record.epoch = epoch + 1;
    record.lr = config.LearningRate(epoch);
    const auto phases_before = backend.PhaseSeconds();
    const TrafficCounters traffic_before = backend.Traffic();
    const CommStats comm_before = comm.stats();
    const auto t0 = Clock::now();
    record.info = algorithm->RunEpoch(backend, config, part, epoch);
    const auto t1 = Clock::now();
    const CommStats comm_after = comm.stats();
    for (const auto& [phase, seconds] : backend.PhaseSeconds()) {
      const auto it = phases_before.find(phase);
      record.phase_seconds[phase] = seconds - (it == phases_before.end() ? 0.0 : it->second);
    }
    const TrafficCounters traffic_after = backend.Traffic();
    int64_t sums[3] = {static_cast<int64_t>(traffic_after.to_workers_bytes - traffic_before.to_workers_bytes),
                       static_cast<int64_t>(traffic_after.from_workers_bytes - traffic_before.from_workers_bytes),
                       static_cast<int64_t>(comm_after.sent_bytes - comm_before.sent_bytes)};
    if (comm.size() > 1) {
      record.phase_seconds["mpi_comm"] = comm_after.seconds - comm_before.seconds;
      mpi_seconds += comm_after.seconds - comm_before.seconds;
      comm.AllreduceSum(sums);
    }
    record.traffic.to_workers_bytes = static_cast<uint64_t>(sums[0]);
    record.traffic.from_workers_bytes = static_cast<uint64_t>(sums[1]);
    record.traffic.mpi_bytes = static_cast<uint64_t>(sums[2]);
    record.traffic.syncs = traffic_after.syncs - traffic_before.syncs;
    mpi_bytes += record.traffic.mpi_bytes;
    result.traffic.to_workers_bytes += record.traffic.to_workers_bytes;
    result.traffic.from_workers_bytes += record.traffic.from_workers_bytes;
    result.model = backend.ExportModel();
    for (float w : result.model.weights) {
      if (!std::isfinite(w)) {
        throw InputError(
            StrCat("training diverged in epoch ", epoch + 1, " (non-finite weights): lower --lr or raise --reg"));
      }
    }
    const bool last = epoch + 1 == config.epochs;
    if (options.evaluate_train || last) {
      record.train = EvaluateAcross(result.model, train, config.objective, options.eval_pool, comm);
    }
    if (test) record.test = EvaluateAcross(result.model, *test, config.objective, options.eval_pool, comm);
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
      BackendState state = GatherState(backend.SaveState(), comm, config.workers);
      if (comm.rank() == 0) {
        WriteCheckpoint({fingerprint, done, backend.name(), std::move(state)}, options.checkpoint_path);
      }
      comm.Barrier();  // every rank returns after the checkpoint exists
    }
    if (options.after_epoch) options.after_epoch(done);
  }
  result.model.positive_label_value = train.positive_label_value;
  result.model.negative_label_value = train.negative_label_value;
  result.phase_seconds = backend.PhaseSeconds();
  if (comm.size() > 1) result.phase_seconds["mpi_comm"] = mpi_seconds;
  result.traffic.syncs = backend.Traffic().syncs;
  result.traffic.mpi_bytes = mpi_bytes;
  return result;
}

}  // namespace pimopt
