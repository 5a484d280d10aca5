#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

#include "pimopt/algorithms/algorithm.h"
#include "pimopt/algorithms/checkpoint.h"
#include "pimopt/algorithms/train.h"
#include "pimopt/core/error.h"
#include "pimopt/core/file_util.h"
#include "pimopt/core/thread_pool.h"

namespace pimopt {

namespace {

constexpr double kGapCheckGain = 1e-2;  // the duality gap is computed after epochs that lower F by less (relative)
// Without per-epoch train metrics, a run that stops on its certificate evaluates F and the certificate at the epochs
// that are multiples of max(1, epoch / kEvaluationsPerDoubling) only (and at its last): every epoch up to that many,
// then about 0.69 kEvaluationsPerDoubling times per doubling of the epochs. F takes a pass over the rows (the
// model's margins), which costs about half a dual epoch; the run stops at most 1 / kEvaluationsPerDoubling of its
// epochs later than one that evaluated every epoch, with the same model at each epoch.
constexpr int kEvaluationsPerDoubling = 32;
int EvaluationInterval(int epoch) { return std::max(1, epoch / kEvaluationsPerDoubling); }
// Between those epochs, once two computed gaps show how fast the gap falls, the next evaluation waits until the gap,
// falling at that rate, would have covered half its way (in log) to --tol, and at most 1 / kMostEpochsSkipped of
// the epochs done: a gap that keeps its rate is checked about log2 of the remaining epochs times, a slower one more
// often, a faster one is found at most that fraction of the epochs late. Which epochs are evaluated never changes
// the model; the gaps are the same on every thread count and split into ranks, so the stopping epoch is too.
constexpr int kMostEpochsSkipped = 8;
// Evaluations beside the epochs: at most this many snapshots (a model, with the duals, or a backend's state) wait
// for the evaluator, and at most this many bytes of them (at least one).
constexpr size_t kMostSnapshotsAhead = 4;
constexpr size_t kSnapshotBytesAhead = size_t{64} << 20;
int NextEvaluationFrom(double previous_gap, int previous_epoch, double gap, int epoch, double tol) {
  if (!(std::isfinite(previous_gap) && gap < previous_gap && gap > tol && epoch > previous_epoch && tol > 0)) return 0;
  const double log_fall_per_epoch = std::log(gap / previous_gap) / (epoch - previous_epoch);  // < 0
  const double epochs_to_tol = std::log(tol / gap) / log_fall_per_epoch;                     // > 0
  const double skip = std::min(epochs_to_tol / 2, static_cast<double>(epoch) / kMostEpochsSkipped);
  return epoch + static_cast<int>(skip);
}

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
  std::string bytes;
  int32_t exists = 0;
  comm.RunOnRoot([&] {
    if (!FileExists(path)) return;
    bytes = ReadFileToString(path);
    ParseCheckpoint(bytes, path);  // validate before sending
    exists = 1;
  });
  comm.BroadcastValue(exists, 0);
  if (!exists) return std::nullopt;
  comm.BroadcastString(bytes, 0);
  return ParseCheckpoint(bytes, path);
}

}  // namespace

Metrics EvaluateAcross(const LinearModel& model, const Dataset& local, const Objective& objective, ThreadPool* pool,
                       Communicator& comm, MetricsScope scope) {
  if (comm.size() == 1) return Evaluate(model, local, objective, pool, scope);
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
    m = MetricsOfScores(s, l, w, model, objective, pool, scope);
  }
  comm.BroadcastValue(m, 0);
  return m;
}

namespace {

// The part of the run this process holds, as the caller loaded it (or derived from the row counts), checked.
Partition PartOfRun(const Dataset& train, const TrainConfig& config, uint64_t total_rows, const TrainOptions& options,
                    Communicator& comm) {
  const Partition part =
      options.partition ? *options.partition : Partition::ForRank(total_rows, config.workers, comm.rank(), comm.size());
  if (part.local_rows != train.num_rows() || part.rank != comm.rank() || part.ranks != comm.size() ||
      part.total_workers != config.workers) {
    throw InternalError(StrCat("rank ", comm.rank(), " of ", comm.size(), " holds ", train.num_rows(),
                               " training rows; its part is rank ", part.rank, " of ", part.ranks, ", ",
                               part.local_rows, " rows of ", part.total_workers, " workers"));
  }
  return part;
}

// The facts --batch, --lr and --reg auto are derived from, over all processes' rows. The squared norms are summed
// per worker shard (the shards do not depend on the processes) and the shards' sums in worker order, so every
// split of the workers into processes gives the same bits.
TrainDataFacts FactsOf(const Dataset& train, const Partition& part, Communicator& comm) {
  std::vector<double> shard_sums;
  for (const Shard& shard : LocalShards(part)) {
    double sum = 0;
    for (uint64_t row = shard.begin; row < shard.end; ++row) {
      if (train.is_sparse()) {
        const CsrMatrix& m = train.csr();
        for (uint64_t k = m.row_ptr[row]; k < m.row_ptr[row + 1]; ++k) sum += static_cast<double>(m.val[k]) * m.val[k];
      } else {
        const float* x = train.dense_row(row);
        for (size_t j = 0; j < train.num_features(); ++j) sum += static_cast<double>(x[j]) * x[j];
      }
    }
    shard_sums.push_back(sum);
  }
  const std::vector<std::byte> all = comm.Gather(std::as_bytes(std::span<const double>(shard_sums)), 0);
  double total = 0;
  if (comm.rank() == 0) {
    PIMOPT_CHECK(all.size() == sizeof(double) * static_cast<size_t>(part.total_workers));
    for (int k = 0; k < part.total_workers; ++k) {
      double s;
      std::memcpy(&s, all.data() + sizeof(double) * k, sizeof(double));
      total += s;
    }
  }
  comm.BroadcastValue(total, 0);
  TrainDataFacts facts;
  facts.rows = part.total_rows;
  facts.mean_row_sq_norm = total / static_cast<double>(part.total_rows);
  return facts;
}

struct Resumed {
  int epochs_done = 0;
  TrainProgress progress;
};

// With --resume and an existing checkpoint of this run: restores this process's workers' state and returns the
// epochs it holds and where the schedule stood; else 0 epochs.
Resumed ResumeFromCheckpoint(const TrainOptions& options, const RunIdentity& identity, const TrainConfig& config,
                         const Partition& part, IBackend& backend, Communicator& comm) {
  if (!options.resume || options.checkpoint_path.empty()) return {};
  std::optional<Checkpoint> checkpoint = ReadCheckpointOnRoot(options.checkpoint_path, comm);
  if (!checkpoint) return {};
  const std::string mismatch = ResumeMismatch(*checkpoint, identity, backend.name());
  if (!mismatch.empty()) {
    throw ConfigError("--resume", StrCat(options.checkpoint_path, ": the checkpoint belongs to another run: ", mismatch,
                                         " (resume with its options, or start afresh without --resume)"));
  }
  if (checkpoint->epochs_done >= config.epochs) {
    throw ConfigError("--epochs", StrCat("the checkpoint already holds ", checkpoint->epochs_done,
                                         " epochs; raise --epochs to train further"));
  }
  if (config.schedule == LrSchedule::kPlateau && checkpoint->progress.plateaus >= TrainConfig::kPlateauStops) {
    throw ConfigError("--resume", StrCat(options.checkpoint_path, ": the checkpoint's run already stopped at its ",
                                         TrainConfig::kPlateauStops, "th plateau (epoch ", checkpoint->epochs_done,
                                         "); start afresh without --resume to train with other settings"));
  }
  if (config.tol > 0 && config.traits().row_duals && checkpoint->progress.stall_epochs >= TrainConfig::kStallEpochs &&
      checkpoint->progress.stall_checks >= TrainConfig::kStallChecks) {
    throw ConfigError("--resume", StrCat(options.checkpoint_path, ": the checkpoint's run already stopped on a stalled "
                                         "certificate (epoch ", checkpoint->epochs_done, ", relative duality gap ",
                                         FormatDouble(checkpoint->progress.certified_gap), "); raise --tol, or start "
                                         "afresh without --resume with other settings"));
  }
  // A checkpoint whose last certificate already meets --tol has nothing left to do (as one stopped at its last
  // plateau): the run stopped there, or, ended by --epochs, would have under this --tol; resuming it would train past
  // its own stopping rule and replace its outputs.
  if (config.tol > 0 && std::isfinite(checkpoint->progress.certified_gap) &&
      checkpoint->progress.certified_gap <= config.tol) {
    throw ConfigError("--resume",
                      StrCat(options.checkpoint_path, ": the checkpoint's last certificate already meets --tol (epoch ",
                             checkpoint->epochs_done, ", relative duality gap ",
                             FormatDouble(checkpoint->progress.certified_gap), " <= --tol ", FormatDouble(config.tol),
                             "): the run stops there; lower --tol to train further, or start afresh without --resume"));
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
  return {checkpoint->epochs_done, checkpoint->progress};
}

// What one epoch cost: the backend's phase times and traffic, and the collectives' time and bytes, as differences of
// the counters before and after. Host <-> worker and MPI bytes are summed over processes.
class EpochMeter {
 public:
  EpochMeter(IBackend& backend, Communicator& comm)
      : backend_(backend), comm_(comm), phases_(backend.PhaseSeconds()), traffic_(backend.Traffic()),
        comm_stats_(comm.stats()) {}
  void Record(EpochRecord& record) const {
    const CommStats comm_after = comm_.stats();
    for (const auto& [phase, seconds] : backend_.PhaseSeconds()) {
      const auto it = phases_.find(phase);
      record.phase_seconds[phase] = seconds - (it == phases_.end() ? 0.0 : it->second);
    }
    const TrafficCounters after = backend_.Traffic();
    int64_t sums[3] = {static_cast<int64_t>(after.to_workers_bytes - traffic_.to_workers_bytes),
                       static_cast<int64_t>(after.from_workers_bytes - traffic_.from_workers_bytes),
                       static_cast<int64_t>(comm_after.sent_bytes - comm_stats_.sent_bytes)};
    if (comm_.size() > 1) {
      record.phase_seconds["mpi_comm"] = comm_after.seconds - comm_stats_.seconds;
      comm_.AllreduceSum(sums);
    }
    record.traffic.to_workers_bytes = static_cast<uint64_t>(sums[0]);
    record.traffic.from_workers_bytes = static_cast<uint64_t>(sums[1]);
    record.traffic.mpi_bytes = static_cast<uint64_t>(sums[2]);
    record.traffic.syncs = after.syncs - traffic_.syncs;
  }

 private:
  IBackend& backend_;
  Communicator& comm_;
  std::map<std::string, double> phases_;
  TrafficCounters traffic_;
  CommStats comm_stats_;
};

// What a user can change when the numbers of a run stop being finite: the flags the algorithm has.
std::string DivergenceAdvice(const TrainConfig& config) {
  return config.traits().uses_learning_rate ? "lower --lr or raise --reg"
                                            : "raise --reg, or lower --class-weights or the sample weights";
}

// The model after an epoch: every weight and the bias finite (numbers change hands here).
void CheckFinite(const LinearModel& model, int epoch, const TrainConfig& config) {
  bool finite = std::isfinite(model.bias);
  for (float w : model.weights) finite &= std::isfinite(w);
  if (!finite) {
    throw InputError(StrCat("training diverged in epoch ", epoch, " (non-finite weights or bias): ",
                            DivergenceAdvice(config)));
  }
}

// A checkpoint's contents kept from its epoch: the backend's state (unset: none kept) and the run's progress after it.
struct EpochState {
  std::optional<BackendState> state;
  TrainProgress progress;
};

// An epoch as the training thread hands it to the evaluator (evaluations beside the epochs): its record and, where
// the stopping rule may evaluate it, snapshots of the model, the duals and the backend's counters and syncs (the
// run may stop there); where only the test set is scored, the model; with checkpoints, where one may be written,
// the backend's state (and the evaluator adds the progress after the epoch).
struct EpochSnapshot {
  EpochRecord record;
  int done = 0;
  bool may_be_due = false;
  LinearModel model;
  std::vector<float> duals;
  std::map<std::string, double> counters;
  uint64_t syncs = 0;
  EpochState kept;  // with checkpoints, at the epochs that may be checkpointed
  // It holds a snapshot (the model, with the duals, or a backend's state): it counts against the evaluator's room.
  bool Heavy() const { return may_be_due || !model.weights.empty() || kept.state.has_value(); }
};

// How many snapshots of `floats_per_snapshot` floats may wait for the evaluator: at most kMostSnapshotsAhead and
// kSnapshotBytesAhead of them, at least one.
int SnapshotsAhead(size_t floats_per_snapshot) {
  const size_t bytes = std::max<size_t>(1, 4 * floats_per_snapshot);
  return static_cast<int>(std::clamp<size_t>(kSnapshotBytesAhead / bytes, 1, kMostSnapshotsAhead));
}

// Evaluations beside the epochs (Train): a thread that concludes the epochs the training thread hands it, in order
// (`conclude` evaluates one where due and applies the stopping rule; true: the run stops there), and hands them back
// to be committed on the training thread, where the callbacks run. Its phases run inline on its own thread.
class EvaluatorThread {
 public:
  EvaluatorThread(int snapshots_ahead, std::function<bool(EpochSnapshot&)> conclude)
      : snapshots_ahead_(snapshots_ahead), conclude_(std::move(conclude)), thread_([this] { Run(); }) {}
  // However the training thread leaves (an epoch's or a callback's exception), the evaluator ends first.
  ~EvaluatorThread() { End(/*drop_waiting=*/true); }
  EvaluatorThread(const EvaluatorThread&) = delete;
  EvaluatorThread& operator=(const EvaluatorThread&) = delete;

  // Waits until fewer than `snapshots_ahead` heavy snapshots wait; false once the run has stopped or the evaluator
  // failed.
  bool WaitForRoom() {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return stopped_ || snapshots_waiting_ < snapshots_ahead_; });
    return !stopped_;
  }
  void Hand(EpochSnapshot at) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (at.Heavy()) ++snapshots_waiting_;
      waiting_.push_back(std::move(at));
    }
    changed_.notify_all();
  }
  // Calls commit(epoch, stops) for each concluded epoch in order; then rethrows the evaluator's failure, if any.
  template <typename Commit>
  void CommitConcluded(Commit&& commit) {
    for (;;) {
      Concluded c;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (concluded_.empty()) {
          if (failure_) std::rethrow_exception(failure_);
          return;
        }
        c = std::move(concluded_.front());
        concluded_.pop_front();
      }
      commit(c.at, c.stops);
    }
  }
  // Nothing more to hand: the evaluator concludes what waits, up to the stop, and ends.
  void Finish() { End(/*drop_waiting=*/false); }
  // After Finish, with everything committed: the epoch the run stopped at (its model, counters and syncs).
  EpochSnapshot& Stop() {
    PIMOPT_CHECK(stopped_ && !failure_, "a run with evaluations beside its epochs ended without its last epoch's");
    return stop_;
  }

 private:
  struct Concluded {
    EpochSnapshot at;  // its record and kept checkpoint; the other snapshots stay with the stop
    bool stops = false;
  };
  void Run() {
    const ThreadPool::InlineScope inline_phases;
    try {
      for (;;) {
        EpochSnapshot at;
        {
          std::unique_lock<std::mutex> lock(mutex_);
          changed_.wait(lock, [&] { return !waiting_.empty() || no_more_; });
          if (waiting_.empty()) return;
          at = std::move(waiting_.front());
          waiting_.pop_front();
        }
        const bool stops = conclude_(at);
        {
          std::lock_guard<std::mutex> lock(mutex_);
          if (at.Heavy()) --snapshots_waiting_;
          Concluded c;
          c.at.record = std::move(at.record);
          c.at.done = at.done;
          c.at.kept = std::move(at.kept);
          c.stops = stops;
          concluded_.push_back(std::move(c));
          if (stops) {
            stopped_ = true;
            stop_ = std::move(at);
          }
        }
        changed_.notify_all();
        if (stops) return;
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      failure_ = std::current_exception();
      stopped_ = true;
      changed_.notify_all();
    }
  }
  void End(bool drop_waiting) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      no_more_ = true;
      if (drop_waiting) waiting_.clear();
    }
    changed_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  const int snapshots_ahead_;
  const std::function<bool(EpochSnapshot&)> conclude_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<EpochSnapshot> waiting_;  // to the evaluator, in epoch order
  std::deque<Concluded> concluded_;    // back to the training thread
  int snapshots_waiting_ = 0;          // of `waiting_` and the one being concluded, the heavy ones
  bool no_more_ = false, stopped_ = false;
  std::exception_ptr failure_;
  EpochSnapshot stop_;
  std::thread thread_;  // last: it starts once the members above exist
};

}  // namespace

bool EvaluationsBesideEpochsConfigured(const TrainConfig& config, const Algorithm& algorithm,
                                       bool backend_runs_a_worker_on_one_thread, int processes) {
  return processes == 1 && config.traits().row_duals && algorithm.SequentialEpochs(config) &&
         backend_runs_a_worker_on_one_thread && config.schedule != LrSchedule::kPlateau;
}

TrainResult Train(const Dataset& train, const Dataset* test, const TrainConfig& requested, IBackend& backend,
                  const TrainOptions& options) {
  using Clock = std::chrono::steady_clock;
  Communicator& comm = options.comm ? *options.comm : SingleProcess();
  TrainConfig config = requested;
  config.ResolveDefaults();
  const uint64_t total_rows = options.partition ? options.partition->total_rows : comm.SumU64(train.num_rows());
  if (total_rows == 0) throw InputError("training set is empty");
  if (train.has_weights() || comm.size() > 1) {  // collective: every rank counts
    uint64_t weighted = 0;
    for (size_t i = 0; i < train.num_rows(); ++i) weighted += train.weight(i) > 0 ? 1 : 0;
    if (comm.SumU64(weighted) == 0) {
      throw ConfigError("sample_weight", "every training row has weight 0: there is nothing to fit (the objective "
                                         "is 0 for every model)");
    }
  }
  config.CheckWorkers(total_rows);
  config.CheckProcesses(comm.size());
  const Partition part = PartOfRun(train, config, total_rows, options, comm);
  config.ResolveAuto(FactsOf(train, part, comm));
  config.Validate(total_rows);
  auto algorithm = MakeAlgorithm(config.algorithm);
  backend.Setup(train, config, part, comm);

  TrainResult result;
  result.config = config;
  result.partition = part;
  RunIdentity identity;
  if (!options.checkpoint_path.empty()) {
    identity.options = options.resume_options.empty() ? TrainResumeOptions(config) : options.resume_options;
    identity.data = FingerprintTrainingData(train, part, comm);
  }
  const Resumed resumed = ResumeFromCheckpoint(options, identity, config, part, backend, comm);
  if (resumed.epochs_done == 0 && options.warm_start) {
    backend.RestoreState(*options.warm_start);
    if (options.warm_start_l2 > 0 && options.warm_start_l2 != config.objective.l2) {
      backend.MoveRowDualsToL2(options.warm_start_l2);
    }
  }
  result.resumed_from_epoch = resumed.epochs_done;
  TrainProgress progress = resumed.progress;
  try {
    algorithm->RestoreProgress(progress.algorithm);
  } catch (const InputError& e) {
    throw InputError(StrCat(options.checkpoint_path, ": ", e.what()));
  }
  const std::vector<Shard> shards = LocalShards(part);
  std::optional<DualityGapScales> gap_scales;  // at the first gap
  // The certificate of `model`, whose training objective is `primal`: the backend's state after an epoch, with that
  // state's row duals (`duals`; nullptr: read from the backend now). Collective.
  auto certificate = [&](const LinearModel& model, const std::vector<float>* duals, double primal) {
    // A dual method's own duals (AlgorithmTraits::row_duals) give the tight certificate.
    std::vector<float> own;
    if (duals == nullptr && config.traits().row_duals) own = backend.RowDuals();
    if (!gap_scales) gap_scales = ComputeDualityGapScales(train, config.objective, comm);
    return ComputeDualityGap(model, train, config.objective, primal, options.eval_pool, comm, shards,
                             duals != nullptr ? *duals : own, &*gap_scales);
  };
  const bool spaced_evaluations = (!options.evaluate_train || options.spaced_train_metrics) && config.tol > 0 &&
                                  config.objective.l2 > 0 && config.schedule != LrSchedule::kPlateau;
  // The epochs the stopping rule may evaluate: every one without spaced evaluations, else the run's last and the
  // multiples of EvaluationInterval; of those it evaluates the ones its last gaps ask for (is_due).
  auto may_be_due = [&](int done) {
    return !spaced_evaluations || done == config.epochs || done % EvaluationInterval(done) == 0;
  };
  auto is_due = [&](int done) {
    return may_be_due(done) && (!spaced_evaluations || done == config.epochs || done >= progress.evaluate_from);
  };
  // The test set is scored after every epoch (else only after the run's last).
  const bool test_every_epoch = test != nullptr && options.evaluate_test_every_epoch;
  int last_evaluated = result.resumed_from_epoch;
  // The stopping rule's part of epoch `done` (its record so far, its training timed): the training metrics where
  // due, the stopping rule and the certificate, the test set. `model` is the backend's model after the epoch
  // (exported where due or where the test set is scored), `duals` that state's row duals (nullptr: the backend's
  // now). Returns whether the run stops after this epoch. It writes `progress`, `last_evaluated`, the record and
  // the result's stopping fields only, so that it can run beside the next epochs.
  auto conclude = [&](EpochRecord& record, int done, bool due, const LinearModel& model,
                      const std::vector<float>* duals, Clock::time_point eval_start) {
    // Without per-epoch train metrics, an epoch that is evaluated to decide whether to stop gets the objective
    // alone (no AUC sort, no second loss); the run's last epoch gets every metric (below, once it is known to be the
    // last).
    const MetricsScope scope =
        options.evaluate_train || done == config.epochs ? MetricsScope::kAll : MetricsScope::kObjective;
    if (due && (options.evaluate_train || done == config.epochs || config.watches_objective())) {
      record.train = EvaluateAcross(model, train, config.objective, options.eval_pool, comm, scope);
      if (!std::isfinite(record.train.objective)) {
        throw InputError(StrCat("training diverged in epoch ", done,
                                " (the training objective is not finite): ", DivergenceAdvice(config)));
      }
    }
    // The stopping rule and the plateau schedule (the objective is summed over all ranks: every rank decides the
    // same).
    if (config.watches_objective() && due) {
      const double before = progress.last_objective, now = record.train.objective;
      if (std::isfinite(before)) {
        result.last_relative_change = std::fabs(before - now) / std::max(std::fabs(now), 1e-300);
        if (config.schedule == LrSchedule::kPlateau) {
          // An epoch that lowers the best objective so far by less than tol (relative) is stale; kPlateauPatience
          // stale epochs in a row are a plateau.
          const double gain = (progress.best_objective - now) / std::max(std::fabs(now), 1e-300);
          progress.stale_epochs = gain < TrainConfig::kPlateauTol ? progress.stale_epochs + 1 : 0;
          if (progress.stale_epochs >= TrainConfig::kPlateauPatience) {
            progress.stale_epochs = 0;
            ++progress.plateaus;
            record.plateau = true;
            if (progress.plateaus >= TrainConfig::kPlateauStops) {
              result.converged = true;
            } else {
              progress.lr_factor /= TrainConfig::kPlateauDrop;
            }
          }
        } else if (!(config.objective.l2 > 0)) {
          result.converged = result.last_relative_change < config.tol;  // no certificate: the objective's progress
        }
      }
      // The certificate: the relative duality gap bounds (F - F*) / F (duality_gap.h). It costs a pass over the
      // rows, so it is computed where it can matter: after an epoch that lowered F by less than 1% (relative; an
      // epoch that still lowers F by more is far from the optimum in practice; per epoch, when the evaluations are
      // spaced), and at the run's last epoch.
      const double gain = std::isfinite(before) ? (before - now) / std::max(std::fabs(now), 1e-300) : INFINITY;
      if (gain / (done - last_evaluated) < kGapCheckGain || result.converged || done == config.epochs) {
        record.gap = certificate(model, duals, now);
      }
      if (config.tol > 0 && record.gap.available && record.gap.relative() <= config.tol) {
        result.converged = true;
        result.stopped_on_gap = true;
      }
      progress.certified_gap = record.gap.available ? record.gap.relative() : NAN;
      if (spaced_evaluations && record.gap.available) {
        const double g = record.gap.relative();
        progress.evaluate_from =
            NextEvaluationFrom(progress.spaced_gap, progress.spaced_gap_epoch, g, done, config.tol);
        progress.spaced_gap = g;
        progress.spaced_gap_epoch = done;
      }
      // A dual method's gap falls to 0 in exact arithmetic; one that stops falling for kStallEpochs epochs is held
      // up by the backend's arithmetic (or the rows): the run stops and says so instead of running out its epochs.
      if (!result.converged && config.tol > 0 && config.traits().row_duals && record.gap.available) {
        const double g = record.gap.relative();
        if (!std::isfinite(progress.stall_reference_gap) ||
            g < progress.stall_reference_gap * (1 - TrainConfig::kStallGain)) {
          progress.stall_reference_gap = g;  // the first gap, or one that fell enough: the count starts again
          progress.stall_epochs = 0;
          progress.stall_checks = 0;
        } else {
          progress.stall_epochs += done - last_evaluated;
          ++progress.stall_checks;
        }
        if (progress.stall_epochs >= TrainConfig::kStallEpochs && progress.stall_checks >= TrainConfig::kStallChecks) {
          // Beside the epochs (below) this reads the backend's diagnostics while it trains: only a backend whose
          // PrecisionLimits reads nothing an epoch writes (the CPU backend's reads nothing) says it may.
          const std::string limits = backend.PrecisionLimits();
          auto short_number = [](double v) {
            char buf[32];
            std::snprintf(buf, sizeof(buf), "%.3g", v);
            return std::string(buf);
          };
          result.stalled = StrCat("the relative duality gap has stayed above ",
                                  short_number(progress.stall_reference_gap * (1 - TrainConfig::kStallGain)), " for ",
                                  progress.stall_epochs, " epochs and ", progress.stall_checks,
                                  " computed gaps (at ", short_number(g), ", --tol ",
                                  FormatDouble(config.tol), ")",
                                  limits.empty() ? "" : StrCat(": on the ", backend.name(), " backend ", limits));
        }
      }
      progress.last_objective = now;
      progress.best_objective = std::isfinite(progress.best_objective) ? std::min(progress.best_objective, now) : now;
    } else if (done == config.epochs) {
      record.gap = certificate(model, duals, record.train.objective);  // --tol 0: the last epoch's gap is reported
    }
    if (due) last_evaluated = done;
    const bool stops = done == config.epochs || result.converged || !result.stalled.empty();
    if (stops && record.train.rows > 0 && scope == MetricsScope::kObjective) {
      record.train = EvaluateAcross(model, train, config.objective, options.eval_pool, comm);
    }
    // The test set, after the stopping rule (which never looks at it): every epoch, or only the run's last.
    if (test != nullptr && (test_every_epoch || stops)) {
      record.test = EvaluateAcross(model, *test, config.objective, options.eval_pool, comm);
    }
    record.eval_seconds = std::chrono::duration<double>(Clock::now() - eval_start).count();
    result.plateaus = progress.plateaus;
    return stops;
  };
  // Epoch `done`'s record joins the result: its sums, its callbacks, its checkpoint (of the backend's state and the
  // progress after that epoch: `kept`, or nullptr for the backend's and the run's now).
  auto commit = [&](EpochRecord record, int done, bool stops, EpochState* kept) {
    result.traffic.to_workers_bytes += record.traffic.to_workers_bytes;
    result.traffic.from_workers_bytes += record.traffic.from_workers_bytes;
    result.traffic.mpi_bytes += record.traffic.mpi_bytes;
    if (comm.size() > 1) result.phase_seconds["mpi_comm"] += record.phase_seconds["mpi_comm"];
    result.train_seconds += record.train_seconds;
    result.eval_seconds += record.eval_seconds;
    if (options.on_epoch) options.on_epoch(record);
    result.epochs.push_back(std::move(record));
    if (!options.checkpoint_path.empty() && options.checkpoint_every > 0 &&
        (done % options.checkpoint_every == 0 || stops)) {
      PIMOPT_CHECK(kept == nullptr || kept->state, "a checkpoint's epoch without its state");
      BackendState state =
          GatherState(kept != nullptr ? std::move(*kept->state) : backend.SaveState(), comm, config.workers);
      if (comm.rank() == 0) {
        WriteCheckpoint({identity, done, kept != nullptr ? kept->progress : progress, backend.name(), std::move(state)},
                        options.checkpoint_path);
      }
      comm.Barrier();  // every rank returns after the checkpoint exists
    }
    if (options.after_epoch) options.after_epoch(done);
  };
  // An epoch's training: the algorithm's epoch on the backend, metered and timed.
  auto run_epoch = [&](int epoch) {
    EpochRecord record;
    record.epoch = epoch + 1;
    record.lr = config.traits().uses_learning_rate ? config.LearningRate(epoch) : 0.0;  // 0: none
    const EpochMeter meter(backend, comm);
    const auto t0 = Clock::now();
    record.info = algorithm->RunEpoch(backend, config, part, epoch);
    const auto t1 = Clock::now();
    meter.Record(record);
    record.train_seconds = std::chrono::duration<double>(t1 - t0).count();
    return record;
  };
  // Evaluations beside the epochs (docs/algorithms.md "Evaluations beside the epochs"): where an epoch is one
  // worker's sequential pass on one thread, a second thread evaluates each epoch (on snapshots of its model and
  // duals) while this one trains the next. The same epochs are evaluated, the run stops at the same epoch with the
  // same model, records and certificate as when the two alternate, and the epochs trained past the stop are dropped.
  // With checkpoints, the backend's state is kept at each epoch that may be checkpointed (every --checkpoint-every
  // and every one the run may stop at) and written when the epoch is committed. Not with a final state to keep, a
  // hook between epochs, the plateau schedule (its learning rate follows the evaluations) or MPI (evaluations are
  // collective).
  result.evaluations_beside_epochs =
      EvaluationsBesideEpochsConfigured(config, *algorithm, backend.RunsAWorkerOnOneThread(), comm.size()) &&
      options.eval_pool != nullptr && options.eval_pool->UsableThreads() >= 2 && !ThreadPool::RunsInline() &&
      !options.keep_final_state && !options.after_epoch && result.resumed_from_epoch < config.epochs;
  if (!result.evaluations_beside_epochs) {
    for (int epoch = result.resumed_from_epoch; epoch < config.epochs; ++epoch) {
      const int done = epoch + 1;
      const bool due = is_due(done);
      config.lr_factor = progress.lr_factor;
      EpochRecord record = run_epoch(epoch);
      progress.algorithm = algorithm->SaveProgress();
      const auto t1 = Clock::now();
      // A dual method's steps (exact maximizations over bounded duals) cannot leave the model non-finite: with
      // spaced evaluations its model is exported and checked at the evaluated epochs only (which include the run's
      // last; on 2^20 features the copy and the check were 2% of a CoCoA run) and where the test set is scored.
      if (due || !config.traits().row_duals || test_every_epoch) {
        backend.ExportModelInto(result.model);
        CheckFinite(result.model, done, config);
      }
      const bool stops = conclude(record, done, due, result.model, nullptr, t1);
      commit(std::move(record), done, stops, nullptr);
      if (stops) break;
    }
    result.traffic.syncs = backend.Traffic().syncs;
  } else {
    config.lr_factor = progress.lr_factor;  // no plateau schedule here: it stays
    // The evaluator concludes the epochs in order, deciding itself which are due (it owns `progress` until it ends).
    const bool checkpoints = !options.checkpoint_path.empty() && options.checkpoint_every > 0;
    // A snapshot: the model and the duals; with checkpoints also the backend's state (its models, the duals and the
    // shrinking flags), about three times that.
    const size_t snapshot_floats = (checkpoints ? 3 : 1) * (train.num_features() + 1 + train.num_rows());
    EvaluatorThread evaluator(SnapshotsAhead(snapshot_floats), [&](EpochSnapshot& at) {
      const auto start = Clock::now();
      const bool due = is_due(at.done);
      PIMOPT_CHECK(!due || at.may_be_due, "an evaluated epoch without its snapshot");
      if (due) CheckFinite(at.model, at.done, config);
      if (at.kept.state) progress.algorithm = std::move(at.kept.progress.algorithm);
      const bool stops = conclude(at.record, at.done, due, at.model, &at.duals, start);
      if (at.kept.state) at.kept.progress = progress;  // the checkpoint's: the progress after this epoch
      return stops;
    });
    auto commit_concluded = [&] {
      evaluator.CommitConcluded(
          [&](EpochSnapshot& at, bool stops) { commit(std::move(at.record), at.done, stops, &at.kept); });
    };
    {
      const ThreadPool::InlineScope inline_phases;  // the epochs' phases run on this thread alone
      for (int epoch = result.resumed_from_epoch; epoch < config.epochs; ++epoch) {
        commit_concluded();
        if (!evaluator.WaitForRoom()) break;  // the run stopped (or the evaluator failed)
        EpochSnapshot at;
        at.record = run_epoch(epoch);
        at.done = epoch + 1;
        at.may_be_due = may_be_due(at.done);
        if (at.may_be_due || test_every_epoch) backend.ExportModelInto(at.model);
        if (at.may_be_due) {
          at.duals = backend.RowDuals();
          at.counters = backend.Counters();
          at.syncs = backend.Traffic().syncs;
        }
        if (checkpoints && (at.may_be_due || at.done % options.checkpoint_every == 0)) {
          at.kept.state = backend.SaveState();
          at.kept.progress.algorithm = algorithm->SaveProgress();  // (the algorithm's progress is a checkpoint's)
        }
        evaluator.Hand(std::move(at));
      }
      evaluator.Finish();  // it concludes what waits, up to the stop
    }
    commit_concluded();
    EpochSnapshot& stop = evaluator.Stop();
    result.model = std::move(stop.model);
    result.backend_counters = std::move(stop.counters);
    result.traffic.syncs = stop.syncs;
  }
  if (options.keep_final_state) result.final_state = backend.SaveState();
  result.model.positive_label_value = train.positive_label_value;
  result.model.negative_label_value = train.negative_label_value;
  result.model.positive_classes = train.positive_classes;
  for (const auto& [phase, seconds] : backend.PhaseSeconds()) result.phase_seconds[phase] = seconds;
  return result;
}

}  // namespace pimopt
