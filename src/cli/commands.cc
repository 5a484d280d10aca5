#include "commands.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "pimopt/algorithms/algorithm.h"
#include "pimopt/algorithms/train.h"
#include "pimopt/backends/cpu/cpu_backend.h"
#include "pimopt/backends/pim/pim_backend.h"
#include "pimopt/core/atomic_file.h"
#include "pimopt/core/error.h"
#include "pimopt/core/thread_pool.h"
#include "pimopt/data/binary_format.h"
#include "pimopt/core/file_util.h"
#include "pimopt/data/libsvm.h"
#include "pimopt/data/sources.h"
#include "pimopt/data/synthetic.h"
#include "pimopt/data/transform.h"
#include "pimopt/model/metrics.h"
#include "pimopt/model/model_io.h"
#include "pimopt/pim/profile.h"
#include "report.h"

#ifdef PIMOPT_HAVE_MPI
#include "pimopt/collectives/mpi_communicator.h"
#endif
#include <csignal>

namespace pimopt::cli {
namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Fails early (before any work) when an output file could not be written at the end.
void CheckOutputPath(const std::string& path, const char* flag) {
  if (path.empty()) return;
  const std::filesystem::path p(path);
  const auto dir = p.has_parent_path() ? p.parent_path() : std::filesystem::path(".");
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    throw ConfigError(flag, StrCat("directory '", dir.string(), "' of '", path, "' does not exist"));
  }
  if (std::filesystem::is_directory(p, ec)) throw ConfigError(flag, StrCat("'", path, "' is a directory"));
  if (::access(dir.c_str(), W_OK) != 0)
    throw ConfigError(flag, StrCat("directory '", dir.string(), "' is not writable"));
}

std::vector<int> ParseClassList(const std::string& text) {
  std::vector<int> classes;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string::npos) comma = text.size();
    const std::string item = text.substr(pos, comma - pos);
    char* end = nullptr;
    const long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v < 0 || v > 255) {
      throw ConfigError("--positive-classes", StrCat("'", item, "' is not a class number (0..255)"));
    }
    classes.push_back(static_cast<int>(v));
    pos = comma + 1;
  }
  return classes;
}

StorageChoice ParseStorage(const std::string& text) {
  if (text == "auto") return StorageChoice::kAuto;
  if (text == "dense") return StorageChoice::kDense;
  if (text == "sparse") return StorageChoice::kSparse;
  throw ConfigError("--storage", StrCat("unknown storage '", text, "' (use auto, dense or sparse)"));
}

struct DataFlags {
  std::string positive_classes = "0,2,4,6";
  std::string storage = "auto";
  SourceOptions Options() const {
    SourceOptions o;
    o.positive_classes = ParseClassList(positive_classes);
    o.storage = ParseStorage(storage);
    return o;
  }
};

void AddDataFlags(CLI::App* app, DataFlags& flags) {
  app->add_option("--positive-classes", flags.positive_classes,
                  "IDX data: classes mapped to +1 (comma list; one class = one-vs-rest)")
      ->capture_default_str();
  app->add_option("--storage", flags.storage, "auto|dense|sparse feature storage")->capture_default_str();
}

std::string JoinArgs(int argc, char** argv) {
  std::string s;
  for (int i = 0; i < argc; ++i) s += (i ? " " : "") + std::string(argv[i]);
  return s;
}

// ---------------------------------------------------------------- train
struct TrainFlags {
  std::string data, test, model = "lr", algo = "mbsgd", backend = "cpu", out, report, liblinear_out, checkpoint;
  int checkpoint_every = 1;
  bool resume = false;
  std::string lr_schedule = "constant", class_weights, scale = "none", profile = "pim-opt", profile_set,
              sigmoid = "table", tasklet_split = "samples";
  uint32_t dpus = 0, tasklets = 16, project_dpus = 0;
  uint64_t project_rows_per_dpu = 0;
  DataFlags data_flags;
  int workers = 1, threads = 0, epochs = 10, local_steps = 1, local_epochs = 1;
  uint64_t batch = 0, seed = 1;
  double lr = 0.1, lr_decay = 0, reg = 1e-5, l1 = 0, rho = 0.01, test_fraction = 0;
  bool no_bias = false, no_shuffle = false, quiet = false, no_train_metrics = false;
  CLI::Option *workers_opt, *batch_opt, *rho_opt, *local_epochs_opt, *local_steps_opt, *l1_opt, *test_opt,
      *test_fraction_opt, *lr_decay_opt, *dpus_opt, *tasklets_opt, *profile_opt, *profile_set_opt, *project_dpus_opt,
      *project_rows_opt, *sigmoid_opt, *tasklet_split_opt;
};

void AddTrainCommand(CLI::App& app, TrainFlags& f) {
  CLI::App* cmd = app.add_subcommand("train", "train a linear classifier");
  cmd->add_option("--data", f.data, "training data: a file (LIBSVM, IDX, pimopt binary) or a built-in name")
      ->required();
  f.test_opt = cmd->add_option("--test", f.test, "test data (default: the built-in dataset's own test set)");
  f.test_fraction_opt =
      cmd->add_option("--test-fraction", f.test_fraction, "hold out this fraction of --data as test set");
  cmd->add_option("--model", f.model, "lr (logistic regression) | svm (linear SVM, hinge loss)")->capture_default_str();
  cmd->add_option("--algo", f.algo, "sgd | mbsgd | ga | ma | admm")->capture_default_str();
  cmd->add_option("--backend", f.backend,
                  "cpu | pim (the emulated UPMEM system); under mpirun each rank runs this backend on its workers")
      ->capture_default_str();
  f.dpus_opt = cmd->add_option("--dpus", f.dpus, "pim: DPUs = workers (ga, ma, admm; sgd and mbsgd use 1)");
  f.tasklets_opt = cmd->add_option("--tasklets", f.tasklets, "pim: tasklets per DPU")->capture_default_str();
  f.profile_opt = cmd->add_option("--profile", f.profile,
                                  "pim: hardware profile (pim-opt, prim-2556, prim-640, "
                                  "upmem-2524, future-fpu, future-wide)")
                      ->capture_default_str();
  f.profile_set_opt = cmd->add_option("--profile-set", f.profile_set, "pim: profile overrides, field=value,...");
  f.sigmoid_opt = cmd->add_option("--sigmoid", f.sigmoid,
                                  "pim, lr: table (fixed-point lookup) | float (PIM-Opt's software-float exp)")
                      ->capture_default_str();
  f.tasklet_split_opt =
      cmd->add_option("--tasklet-split", f.tasklet_split,
                      "pim, dense: samples (each tasklet whole rows, 2 barriers per step) | features (PIM-Opt: "
                      "each tasklet part of every row, 2 barriers per row)")
          ->capture_default_str();
  f.project_dpus_opt = cmd->add_option("--project-dpus", f.project_dpus,
                                       "pim: extrapolate the modeled epoch time to this many DPUs (weak scaling)");
  f.project_rows_opt = cmd->add_option("--project-rows-per-dpu", f.project_rows_per_dpu,
                                       "pim: extrapolate the modeled epoch time to this many rows per DPU");
  f.workers_opt = cmd->add_option("--workers", f.workers, "K workers = K data shards (ga, ma, admm)");
  cmd->add_option("--threads", f.threads, "host threads (0 = all cores); never changes results")->capture_default_str();
  cmd->add_option("--epochs", f.epochs, "global epochs")->capture_default_str();
  f.batch_opt = cmd->add_option(
      "--batch", f.batch,
      "batch size: global for mbsgd/ga, local per worker for ma/admm (default: sgd 1, mbsgd/ga 64, ma/admm 16)");
  cmd->add_option("--lr", f.lr, "learning rate (any positive value)")->capture_default_str();
  cmd->add_option("--lr-schedule", f.lr_schedule, "constant | inverse | inverse-sqrt (per epoch)")
      ->capture_default_str();
  f.lr_decay_opt =
      cmd->add_option("--lr-decay", f.lr_decay, "decay rate of the inverse schedules")->capture_default_str();
  cmd->add_option("--reg", f.reg, "L2 regularization strength lambda (objective + lambda/2 ||w||^2)")
      ->capture_default_str();
  f.l1_opt = cmd->add_option("--l1", f.l1, "L1 strength (admm only: soft-thresholding in the z-update)");
  f.rho_opt = cmd->add_option("--rho", f.rho, "ADMM penalty rho")->capture_default_str();
  f.local_epochs_opt =
      cmd->add_option("--local-epochs", f.local_epochs, "ADMM local epochs per round")->capture_default_str();
  f.local_steps_opt =
      cmd->add_option("--local-steps", f.local_steps, "MA-SGD local steps between averages")->capture_default_str();
  cmd->add_option("--class-weights", f.class_weights, "POS:NEG loss weights, e.g. 15:0.5 (PIM-Opt on Criteo)");
  cmd->add_flag("--no-bias", f.no_bias, "do not fit a bias term");
  cmd->add_flag("--no-shuffle", f.no_shuffle, "visit rows in data order every epoch");
  cmd->add_option("--scale", f.scale, "none | minmax (fitted on the training set)")->capture_default_str();
  cmd->add_option("--seed", f.seed, "run seed (shuffling, splits)")->capture_default_str();
  cmd->add_option("--out", f.out, "write the trained model here (pimopt text format)");
  cmd->add_option("--liblinear-out", f.liblinear_out, "also write the model in LIBLINEAR's format");
  cmd->add_option("--report", f.report, "write the JSON report here");
  cmd->add_option("--checkpoint", f.checkpoint,
                  "write the training state here (atomically) every --checkpoint-every epochs");
  cmd->add_option("--checkpoint-every", f.checkpoint_every, "epochs between checkpoints")->capture_default_str();
  cmd->add_flag("--resume", f.resume, "continue from --checkpoint if it exists (same run: config, data, backend)");
  cmd->add_flag("--no-train-metrics", f.no_train_metrics, "evaluate the training set only after the last epoch");
  cmd->add_flag("--quiet,-q", f.quiet, "print only the final summary");
  AddDataFlags(cmd, f.data_flags);
}

TrainConfig BuildTrainConfig(const TrainFlags& f) {
  TrainConfig c;
  c.algorithm = FindAlgorithm(f.algo).name;
  const AlgorithmTraits& traits = c.traits();
  c.objective.loss = ParseLossKind(f.model);
  c.objective.l2 = f.reg;
  c.objective.l1 = f.l1;
  c.objective.fit_bias = !f.no_bias;
  const bool distributed = traits.distributed;
  c.workers = f.workers_opt->count() ? f.workers : traits.default_workers;
  if (f.backend == "pim") {
    if (f.dpus_opt->count() && f.workers_opt->count() && static_cast<int>(f.dpus) != f.workers) {
      throw ConfigError("--dpus", "contradicts --workers (on the pim backend every worker is a DPU)");
    }
    if (f.dpus_opt->count()) c.workers = static_cast<int>(f.dpus);
    if (!distributed && c.workers != 1) {
      throw ConfigError("--dpus", StrCat(c.algorithm, " runs on one DPU; use ", DistributedAlgorithmNames(), " for more"));
    }
  } else {
    for (CLI::Option* o : {f.dpus_opt, f.tasklets_opt, f.profile_opt, f.profile_set_opt, f.project_dpus_opt,
                           f.project_rows_opt, f.sigmoid_opt, f.tasklet_split_opt}) {
      if (o->count()) throw ConfigError(o->get_name(), "only meaningful with --backend pim");
    }
  }
  c.batch = f.batch_opt->count() ? f.batch : traits.default_batch;
  c.epochs = f.epochs;
  c.lr = f.lr;
  c.schedule = ParseLrSchedule(f.lr_schedule);
  c.lr_decay = f.lr_decay;
  c.rho = f.rho;
  c.local_epochs = f.local_epochs;
  c.local_steps = f.local_steps;
  c.shuffle = !f.no_shuffle;
  c.seed = f.seed;
  if (!f.class_weights.empty()) {
    const size_t colon = f.class_weights.find(':');
    char *e1 = nullptr, *e2 = nullptr;
    const std::string pos = f.class_weights.substr(0, colon);
    const std::string neg = colon == std::string::npos ? "" : f.class_weights.substr(colon + 1);
    c.objective.positive_weight = std::strtod(pos.c_str(), &e1);
    c.objective.negative_weight = std::strtod(neg.c_str(), &e2);
    if (colon == std::string::npos || pos.empty() || neg.empty() || *e1 || *e2) {
      throw ConfigError("--class-weights", StrCat("'", f.class_weights, "' is not POS:NEG (e.g. 15:0.5)"));
    }
  }
  // Flags that only one algorithm reads are contradictions elsewhere.
  if (c.algorithm != "admm") {
    if (f.l1_opt->count()) throw ConfigError("--l1", "L1 regularization is only available with --algo admm");
    if (f.rho_opt->count()) throw ConfigError("--rho", "only meaningful with --algo admm");
    if (f.local_epochs_opt->count()) throw ConfigError("--local-epochs", "only meaningful with --algo admm");
  }
  if (c.algorithm != "ma" && f.local_steps_opt->count()) {
    throw ConfigError("--local-steps", "only meaningful with --algo ma");
  }
  if (c.schedule == LrSchedule::kConstant && f.lr_decay_opt->count() && f.lr_decay != 0) {
    throw ConfigError("--lr-decay", "has no effect with --lr-schedule constant");
  }
  if (f.threads < 0) throw ConfigError("--threads", "must be >= 0");
  return c;
}

// Under MPI: the test hook PIMOPT_TEST_KILL_RANK=RANK:EPOCH makes that rank SIGKILL itself after that epoch (its
// checkpoint, if any, written), so tests can check that a dead rank ends the job instead of hanging it.
std::function<void(int)> KillHook(const Communicator& comm) {
  const char* spec = std::getenv("PIMOPT_TEST_KILL_RANK");
  if (spec == nullptr) return nullptr;
  int rank = -1, epoch = -1;
  if (std::sscanf(spec, "%d:%d", &rank, &epoch) != 2) {
    throw ConfigError("PIMOPT_TEST_KILL_RANK", StrCat("'", spec, "' is not RANK:EPOCH"));
  }
  if (rank != comm.rank()) return nullptr;
  return [epoch](int done) {
    if (done == epoch) std::raise(SIGKILL);
  };
}

// This rank's rows [begin, end) of a whole dataset, as its own Dataset.
Dataset SliceRows(const Dataset& whole, uint64_t begin, uint64_t end) {
  std::vector<uint32_t> rows(end - begin);
  for (uint64_t i = begin; i < end; ++i) rows[i - begin] = static_cast<uint32_t>(i);
  Dataset part = whole.SelectRows(rows);
  part.source = whole.source;
  return part;
}

// The storage choice (dense / sparse) for a dataset split over ranks, made once from all parts, so that every rank
// and a single process holding the whole set store it alike (dense and sparse paths round differently).
void AgreeOnStorage(Dataset& part, const SourceOptions& options, Communicator& comm) {
  if (options.storage != StorageChoice::kAuto) {
    part = ApplyStorageChoice(std::move(part), options);
    return;
  }
  int64_t totals[3] = {part.is_sparse() ? 1 : 0, static_cast<int64_t>(part.num_rows()),
                       static_cast<int64_t>(part.num_stored())};
  comm.AllreduceSum(totals);
  if (totals[0] == 0) return;  // dense everywhere: auto keeps dense data dense
  if (AutoStoresDense(static_cast<uint64_t>(totals[1]), part.num_features(), static_cast<uint64_t>(totals[2]),
                      options)) {
    part = part.ToDense();
  }
}

int RunTrain(const TrainFlags& f, const std::string& command_line, Communicator& comm) {
  TrainConfig config = BuildTrainConfig(f);
  if (f.backend != "cpu" && f.backend != "pim") {
    if (f.backend == "mpi") {
      throw ConfigError("--backend",
                        "there is no 'mpi' backend: start pimopt under mpirun with --backend cpu or pim, e.g. "
                        "'mpirun -np 4 pimopt train --backend cpu ...' (each rank runs that backend on its workers)");
    }
    throw ConfigError("--backend", StrCat("unknown backend '", f.backend, "' (use cpu or pim)"));
  }
  if (f.backend == "pim") {
    pim::MakeProfile(f.profile);  // validates the name before any work
  }
  if (f.test_opt->count() && f.test_fraction_opt->count()) {
    throw ConfigError("--test-fraction", "contradicts --test: give one or the other");
  }
  if (f.scale != "none" && f.scale != "minmax") {
    throw ConfigError("--scale", StrCat("unknown scaling '", f.scale, "' (use none or minmax)"));
  }
  CheckOutputPath(f.out, "--out");
  CheckOutputPath(f.report, "--report");
  CheckOutputPath(f.liblinear_out, "--liblinear-out");
  CheckOutputPath(f.checkpoint, "--checkpoint");
  if (f.resume && f.checkpoint.empty()) throw ConfigError("--resume", "needs --checkpoint FILE");
  if (f.checkpoint_every < 1) throw ConfigError("--checkpoint-every", "must be at least 1");
  const SourceOptions source = f.data_flags.Options();

  const bool distributed = comm.size() > 1;
  const bool talk = !f.quiet && comm.rank() == 0;
  if (distributed && !config.traits().distributed) {
    throw ConfigError("--algo", StrCat(config.algorithm, " has one worker and runs in one process; under mpirun use ",
                                       DistributedAlgorithmNames()));
  }
  if (distributed && (f.project_dpus_opt->count() || f.project_rows_opt->count())) {
    throw ConfigError("--project-dpus", "projection runs in one process (not under mpirun)");
  }

  ThreadPool pool(f.threads);
  const auto load_start = Clock::now();
  Dataset train;
  std::optional<Dataset> test;
  if (!distributed) {
    train = LoadDataset(f.data, source, &pool);
    if (f.test_opt->count()) {
      test = LoadDataset(f.test, source, &pool);
    } else if (f.test_fraction_opt->count()) {
      TrainTest split = SplitTrainTest(train, f.test_fraction, config.seed);
      train = std::move(split.train);
      test = std::move(split.test);
    } else {
      test = LoadCompanionTestSet(f.data, source, &pool);
    }
  } else {
    // Each rank holds only its rows. A binary cache is read slice by slice (seeking to the rank's rows) and a
    // synthetic built-in generates only them; other sources are parsed whole by every rank and then cut (convert
    // them once with 'pimopt convert' to avoid it).
    const std::optional<uint64_t> train_rows = CountRowsCheaply(f.data);
    const bool sliced = train_rows.has_value() && !f.test_fraction_opt->count();
    if (sliced) {
      const Partition part = Partition::ForRank(*train_rows, config.workers, comm.rank(), comm.size());
      train = LoadRawRows(f.data, false, part.first_row, part.first_row + part.local_rows, &pool);
      AgreeOnStorage(train, source, comm);
    } else {
      if (talk) {
        std::cout << "note: every rank parses " << f.data << " whole and keeps its rows; convert it to a binary "
                  << "cache ('pimopt convert IN OUT.bin') so that each rank reads only its rows\n";
      }
      Dataset whole = LoadDataset(f.data, source, &pool);
      if (f.test_fraction_opt->count()) {
        TrainTest split = SplitTrainTest(whole, f.test_fraction, config.seed);
        whole = std::move(split.train);
        test = std::move(split.test);
      }
      const Partition part = Partition::ForRank(whole.num_rows(), config.workers, comm.rank(), comm.size());
      train = SliceRows(whole, part.first_row, part.first_row + part.local_rows);
    }
    // The test set: this rank's EvaluationSlice.
    const std::string test_spec = f.test_opt->count() ? f.test : f.data;
    const bool companion = !f.test_opt->count();
    if (!f.test_fraction_opt->count()) {
      if (const auto rows = CountRowsCheaply(test_spec, companion)) {
        const RowRange r = EvaluationSlice(*rows, comm.rank(), comm.size());
        test = LoadRawRows(test_spec, companion, r.begin, r.end, &pool);
        AgreeOnStorage(*test, source, comm);
      } else {
        test = companion ? LoadCompanionTestSet(f.data, source, &pool) : LoadDataset(f.test, source, &pool);
        if (test) {
          const RowRange r = EvaluationSlice(test->num_rows(), comm.rank(), comm.size());
          test = SliceRows(*test, r.begin, r.end);
        }
      }
    } else {
      const RowRange r = EvaluationSlice(test->num_rows(), comm.rank(), comm.size());
      test = SliceRows(*test, r.begin, r.end);
    }
  }
  if (f.scale == "minmax") {
    // Ranges over all ranks' rows (min / max are exact in any order): the same scaler as one process fits.
    FeatureRanges ranges = FeatureRanges::Of(train);
    comm.AllreduceMin(ranges.lo);
    comm.AllreduceMax(ranges.hi);
    const FeatureScaler scaler = FeatureScaler::FromRanges(ranges);
    scaler.Apply(train);
    if (test) scaler.Apply(*test);
  }
  const double load_seconds = Since(load_start);
  const uint64_t total_train_rows = comm.SumU64(train.num_rows());

  if (talk) {
    std::cout << "pimopt train: " << config.algorithm.c_str() << " " << ModelName(config.objective.loss)
              << " on " << train.source << " (" << train.num_rows() << " x " << train.num_features() << ", "
              << (train.is_sparse() ? "sparse" : "dense") << ")";
    if (test) std::cout << ", test " << test->source << " (" << test->num_rows() << " rows)";
    std::cout << "\n  backend " << f.backend << ", workers " << config.workers << ", threads " << pool.NumThreads()
              << ", batch " << config.batch << ", lr " << config.lr << ", reg " << config.objective.l2 << ", epochs "
              << config.epochs << ", seed " << config.seed << "\n";
    if (distributed) {
      std::cout << "  mpi: " << comm.size() << " ranks; rank 0 holds " << train.num_rows()
                << " training rows (shown above) of " << total_train_rows << " and "
                << Partition::ForRank(total_train_rows, config.workers, 0, comm.size()).local_workers << " of "
                << config.workers << " workers\n";
    }
    std::cout << EpochHeader() << std::endl;
  }
  std::unique_ptr<IBackend> backend_owner;
  if (f.backend == "pim") {
    PimBackendOptions pim_options;
    pim_options.profile = f.profile;
    pim_options.profile_overrides = f.profile_set;
    pim_options.tasklets = f.tasklets;
    pim_options.host_threads = f.threads;
    if (f.sigmoid != "table" && f.sigmoid != "float") {
      throw ConfigError("--sigmoid", StrCat("unknown sigmoid '", f.sigmoid, "' (use table or float)"));
    }
    pim_options.sigmoid_float = f.sigmoid == "float";
    if (f.tasklet_split != "samples" && f.tasklet_split != "features") {
      throw ConfigError("--tasklet-split", StrCat("unknown split '", f.tasklet_split, "' (use samples or features)"));
    }
    pim_options.feature_split = f.tasklet_split == "features";
    backend_owner = std::make_unique<PimBackend>(pool, pim_options);
  } else {
    backend_owner = std::make_unique<CpuBackend>(pool);
  }
  IBackend& backend = *backend_owner;
  TrainOptions options;
  options.eval_pool = &pool;
  options.evaluate_train = !f.no_train_metrics;
  options.checkpoint_path = f.checkpoint;
  options.checkpoint_every = f.checkpoint.empty() ? 0 : f.checkpoint_every;
  options.resume = f.resume;
  options.comm = &comm;
  options.after_epoch = KillHook(comm);
  options.on_epoch = [&](const EpochRecord& r) {
    if (talk) std::cout << FormatEpochLine(r) << std::endl;
  };
  TrainResult result = Train(train, test ? &*test : nullptr, config, backend, options);

  RunInfo info{command_line, f.backend, pool.NumThreads(), &train, test ? &*test : nullptr, load_seconds};
  nlohmann::json report = BuildReport(info, config, result);
  for (const auto& [key, value] : backend.Counters()) report["backend_counters"][key] = value;
  report["resumed_from_epoch"] = result.resumed_from_epoch;
  if (distributed) {
    const double epochs = static_cast<double>(result.epochs.size());
    report["mpi"] = {{"ranks", comm.size()},
                     {"training_rows_total", result.partition.total_rows},
                     {"rank0_workers", result.partition.local_workers},
                     {"rank0_training_rows", result.partition.local_rows},
                     {"mpi_comm_s", result.phase_seconds["mpi_comm"]},
                     {"mpi_comm_s_per_epoch", result.phase_seconds["mpi_comm"] / epochs},
                     {"mpi_bytes", result.traffic.mpi_bytes},
                     {"mpi_bytes_per_epoch", static_cast<double>(result.traffic.mpi_bytes) / epochs},
                     {"note",
                      "mpi_bytes: sent by all ranks; mpi_comm_s: rank 0's wall time in MPI calls during training "
                      "(including waiting for other ranks); phases and modeled times are rank 0's"}};
  }
  if (comm.rank() != 0) return 0;  // rank 0 writes the outputs and prints the summary
  if (f.backend == "pim" && (f.project_dpus_opt->count() || f.project_rows_opt->count())) {
    const auto& pim_backend = static_cast<const PimBackend&>(backend);
    const uint32_t dpus = f.project_dpus_opt->count() ? f.project_dpus : static_cast<uint32_t>(config.workers);
    const uint64_t rows =
        f.project_rows_opt->count() ? f.project_rows_per_dpu : (train.num_rows() + config.workers - 1) / config.workers;
    if (dpus == 0 || rows == 0) throw ConfigError("--project-dpus", "projection targets must be positive");
    const PimProjection p = pim_backend.Project(dpus, rows, static_cast<int>(result.epochs.size()));
    report["projection"] = {{"dpus", p.dpus},
                            {"rows_per_dpu", p.rows_per_dpu},
                            {"extrapolated",
                             "every field: kernel times scaled by rows per DPU, synchronizations "
                             "by the algorithm's sync count, transfers re-modeled at the target "
                             "DPU count, host reduction scaled linearly (see pim_backend.h)"},
                            {"modeled_epoch_s", p.epoch_s},
                            {"modeled_cpu_to_dpu_s", p.cpu_to_dpu_s},
                            {"modeled_dpu_kernel_s", p.kernel_s},
                            {"modeled_launch_overhead_s", p.launch_overhead_s},
                            {"modeled_dpu_to_cpu_s", p.dpu_to_cpu_s},
                            {"host_reduction_s", p.host_reduction_s},
                            {"cpu_to_dpu_bytes", p.cpu_to_dpu_bytes},
                            {"dpu_to_cpu_bytes", p.dpu_to_cpu_bytes}};
    std::printf(
        "projection to %u DPUs x %llu rows/DPU (extrapolated): %.3f s/epoch = CPU->DPU %.3f + kernel %.3f "
        "+ launch %.3f + DPU->CPU %.3f + host %.3f; %.3g bytes moved\n",
        p.dpus, static_cast<unsigned long long>(p.rows_per_dpu), p.epoch_s, p.cpu_to_dpu_s, p.kernel_s,
        p.launch_overhead_s, p.dpu_to_cpu_s, p.host_reduction_s, p.cpu_to_dpu_bytes + p.dpu_to_cpu_bytes);
  }
  if (distributed && talk) {
    const double epochs = static_cast<double>(result.epochs.size());
    std::printf("mpi: %d ranks, %.4f s/epoch in MPI calls (rank 0), %.4g bytes/epoch sent over MPI (all ranks)\n",
                comm.size(), result.phase_seconds["mpi_comm"] / epochs,
                static_cast<double>(result.traffic.mpi_bytes) / epochs);
  }
  if (!f.out.empty()) {
    WriteModel(result.model, f.out, StrCat("trained by: ", command_line, "\nconfig: ", ConfigToJson(config).dump()));
  }
  if (!f.liblinear_out.empty()) WriteLiblinearModel(result.model, f.liblinear_out);
  if (!f.report.empty()) WriteJsonFile(report, f.report);

  const EpochRecord& last = result.epochs.back();
  // The summary row; the pim backend adds the modeled seconds per epoch of the PIM machine (CPU<->DPU transfers,
  // kernels, launches) and the host reduction's real seconds.
  const bool pim = f.backend == "pim";
  std::printf("\n%-8s %-5s %9s %9s %9s %9s %11s%s\n", "algo", "model", "train_acc", "test_acc", "test_auc", "test_loss",
              "s/epoch", pim ? "  modeled_s/epoch  host_reduce_s/epoch" : "");
  auto fmt = [](double v) { return std::isfinite(v) ? StrCat(std::round(v * 1e4) / 1e4) : std::string("-"); };
  std::string modeled;
  if (pim) {
    const auto& phases = result.phase_seconds;
    char buf[96];
    std::snprintf(buf, sizeof(buf), "  %15.4f  %19.4f",
                  phases.at("modeled_total") / static_cast<double>(result.epochs.size()),
                  phases.at("host_reduction") / static_cast<double>(result.epochs.size()));
    modeled = buf;
  }
  std::printf(
      "%-8s %-5s %9s %9s %9s %9s %11.4f%s\n", config.algorithm.c_str(), ModelName(config.objective.loss),
      fmt(last.train.accuracy).c_str(), last.test ? fmt(last.test->accuracy).c_str() : "-",
      last.test ? fmt(last.test->auc).c_str() : "-",
      last.test
          ? fmt(config.objective.loss == LossKind::kLogistic ? last.test->log_loss : last.test->hinge_loss).c_str()
          : "-",
      result.train_seconds / static_cast<double>(result.epochs.size()), modeled.c_str());
  return 0;
}

// ---------------------------------------------------------------- predict
struct PredictFlags {
  std::string model, data, out;
  DataFlags data_flags;
  int threads = 0;
};

int RunPredict(const PredictFlags& f) {
  CheckOutputPath(f.out, "--out");
  const LinearModel model = ReadModel(f.model);
  ThreadPool pool(f.threads);
  const Dataset data = LoadDataset(f.data, f.data_flags.Options(), &pool);
  const std::vector<float> scores = ComputeScores(model, data, &pool);
  if (!f.out.empty()) {
    AtomicFileWriter writer(f.out);
    std::string buffer = "label score\n";
    for (float s : scores) {
      buffer += FormatDouble(s > 0 ? model.positive_label_value : model.negative_label_value);
      buffer += ' ';
      buffer += FormatFloat(s);
      buffer += '\n';
    }
    writer.stream() << buffer;
    writer.Commit();
  }
  Objective objective;
  objective.loss = model.loss;
  const Metrics m = Evaluate(model, data, objective, &pool);
  std::printf("rows %zu  accuracy %.4f  auc %s  log_loss %.5f  hinge_loss %.5f\n", m.rows, m.accuracy,
              std::isfinite(m.auc) ? StrCat(m.auc).c_str() : "-", m.log_loss, m.hinge_loss);
  return 0;
}

// ---------------------------------------------------------------- gen / convert / info
enum class FileFormat { kLibsvm, kBinary };

FileFormat FormatFor(const std::string& path, const std::string& forced, const char* flag) {
  if (forced == "libsvm") return FileFormat::kLibsvm;
  if (forced == "binary") return FileFormat::kBinary;
  if (!forced.empty()) throw ConfigError("--format", StrCat("unknown format '", forced, "' (use libsvm or binary)"));
  const std::string ext = std::filesystem::path(path).extension().string();
  if (ext == ".bin" || ext == ".pimds") return FileFormat::kBinary;
  if (ext == ".svm" || ext == ".libsvm" || ext == ".txt" || ext == ".svmlight") return FileFormat::kLibsvm;
  throw ConfigError(flag, StrCat("cannot tell the format of '", path,
                                 "' from its extension (.bin/.pimds = binary, .svm/.libsvm/.txt = LIBSVM); use "
                                 "--format"));
}

void WriteDataset(const Dataset& d, const std::string& path, FileFormat format) {
  if (format == FileFormat::kBinary) {
    WriteBinaryDataset(d, path);
  } else {
    WriteLibsvm(d, path);
  }
}

struct GenFlags {
  std::string out, format;
  uint64_t rows = 0, features = 0, seed = 1, first_row = 0;
  double noise = 0.05, separation = 0.01, positive_rate = 0.03;
  uint32_t fields = 39;
  int threads = 0;
};

int RunGen(const std::string& kind, const GenFlags& f) {
  const FileFormat format = FormatFor(f.out, f.format, "--out");
  CheckOutputPath(f.out, "--out");
  ThreadPool pool(f.threads);
  Dataset d;
  if (kind == "dense") {
    DenseSyntheticParams p;
    if (f.rows) p.rows = f.rows;
    if (f.features) p.features = f.features;
    p.noise = f.noise;
    p.separation = f.separation;
    p.seed = f.seed;
    p.first_row = f.first_row;
    d = GenerateDense(p, &pool);
  } else {
    SparseSyntheticParams p;
    if (f.rows) p.rows = f.rows;
    if (f.features) p.features = f.features;
    p.fields = f.fields;
    p.positive_rate = f.positive_rate;
    p.seed = f.seed;
    p.first_row = f.first_row;
    d = GenerateSparse(p, &pool);
  }
  WriteDataset(d, f.out, format);
  std::printf("wrote %s: %zu rows x %zu features, %zu positives\n", f.out.c_str(), d.num_rows(), d.num_features(),
              d.CountPositives());
  return 0;
}

struct ConvertFlags {
  std::string in, out, format;
  DataFlags data_flags;
};

int RunConvert(const ConvertFlags& f) {
  const FileFormat format = FormatFor(f.out, f.format, "OUT");
  CheckOutputPath(f.out, "OUT");
  ThreadPool pool(0);
  const Dataset d = LoadDataset(f.in, f.data_flags.Options(), &pool);
  WriteDataset(d, f.out, format);
  std::printf("wrote %s: %zu rows x %zu features (%s)\n", f.out.c_str(), d.num_rows(), d.num_features(),
              format == FileFormat::kBinary ? "binary" : "libsvm");
  return 0;
}

int RunInfoCommand(const std::string& spec, const DataFlags& flags) {
  const Dataset d = LoadDataset(spec, flags.Options());
  const double cells = static_cast<double>(d.num_rows()) * static_cast<double>(d.num_features());
  std::printf("source       %s\n", d.source.c_str());
  std::printf("rows         %zu\n", d.num_rows());
  std::printf("features     %zu\n", d.num_features());
  std::printf("storage      %s\n", d.is_sparse() ? "sparse (CSR)" : "dense (row-major)");
  std::printf("non-zeros    %llu (density %.4f)\n", static_cast<unsigned long long>(d.CountNonZeros()),
              cells > 0 ? static_cast<double>(d.CountNonZeros()) / cells : 0.0);
  std::printf("positives    %zu (%.2f%%)\n", d.CountPositives(), 100.0 * d.CountPositives() / d.num_rows());
  std::printf("labels       positive %s, negative %s\n", FormatDouble(d.positive_label_value).c_str(),
              FormatDouble(d.negative_label_value).c_str());
  std::printf("weights      %s\n", d.has_weights() ? "per-sample" : "none");
  return 0;
}

bool LaunchedUnderMpi() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK"}) {
    if (std::getenv(name) != nullptr) return true;
  }
  return false;
}

// `pimopt train` started by mpirun: every rank runs RunTrain with the MPI communicator. An error on any rank is
// printed with its rank and ends the whole job (MPI_Abort), so no rank waits forever in a collective.
int RunTrainUnderMpi(int argc, char** argv, const TrainFlags& flags) {
#ifdef PIMOPT_HAVE_MPI
  MpiSession session(&argc, &argv);
  MpiCommunicator comm;
  int code = 0;
  std::string message;
  try {
    code = RunTrain(flags, JoinArgs(argc, argv), comm);
  } catch (const InputError& e) {
    code = 2;
    message = StrCat("error: ", e.what());
  } catch (const std::bad_alloc&) {
    code = 1;
    message = "error: out of memory";
  } catch (const std::exception& e) {
    code = 1;
    message = StrCat("internal error: ", e.what());
  }
  if (code != 0) {
    std::cerr << "pimopt (rank " << comm.rank() << " of " << comm.size() << "): " << message << std::endl;
    if (comm.size() > 1) MpiSession::Abort(code);
  }
  return code;
#else
  (void)argc, (void)argv, (void)flags;
  std::cerr << "pimopt: error: started by mpirun, but this pimopt was built without MPI (install libopenmpi-dev "
               "and rebuild)\n";
  return 2;
#endif
}

}  // namespace

int RunCli(int argc, char** argv) {
  CLI::App app{"pimopt: distributed optimization of linear classifiers on CPUs, an emulated UPMEM PIM system and MPI"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "pimopt 0.1.0");
  TrainFlags train;
  AddTrainCommand(app, train);

  PredictFlags predict;
  CLI::App* predict_cmd = app.add_subcommand("predict", "score data with a trained model");
  predict_cmd->add_option("--model", predict.model, "model file")->required();
  predict_cmd->add_option("--data", predict.data, "data file or built-in name")->required();
  predict_cmd->add_option("--out", predict.out, "write 'label score' per row here");
  predict_cmd->add_option("--threads", predict.threads, "host threads (0 = all cores)");
  AddDataFlags(predict_cmd, predict.data_flags);

  GenFlags gen;
  std::string gen_kind;
  CLI::App* gen_cmd = app.add_subcommand("gen", "generate a synthetic dataset with a planted model");
  gen_cmd->add_option("kind", gen_kind, "dense (YFCC-shaped) | sparse (Criteo-shaped)")
      ->required()
      ->check(CLI::IsMember({"dense", "sparse"}));
  gen_cmd->add_option("--out", gen.out, "output file (.svm LIBSVM or .bin binary)")->required();
  gen_cmd->add_option("--format", gen.format, "libsvm | binary (default: from the extension)");
  gen_cmd->add_option("--rows", gen.rows, "rows (default: dense 20000, sparse 100000)");
  gen_cmd->add_option("--features", gen.features, "features (default: dense 4096, sparse 2^20)");
  gen_cmd->add_option("--noise", gen.noise, "dense: label flip probability")->capture_default_str();
  gen_cmd->add_option("--separation", gen.separation, "dense: class mean shift per feature")->capture_default_str();
  gen_cmd->add_option("--fields", gen.fields, "sparse: categorical fields per row")->capture_default_str();
  gen_cmd->add_option("--positive-rate", gen.positive_rate, "sparse: expected fraction of positives")
      ->capture_default_str();
  gen_cmd->add_option("--seed", gen.seed, "seed of the planted model and rows")->capture_default_str();
  gen_cmd->add_option("--first-row", gen.first_row, "first row number (a test set: rows after the train rows)");
  gen_cmd->add_option("--threads", gen.threads, "host threads (0 = all cores); never changes the data");

  ConvertFlags convert;
  CLI::App* convert_cmd = app.add_subcommand("convert", "convert between data formats (LIBSVM, IDX, binary)");
  convert_cmd->add_option("IN", convert.in, "input file or built-in name")->required();
  convert_cmd->add_option("OUT", convert.out, "output file (.svm LIBSVM or .bin binary)")->required();
  convert_cmd->add_option("--format", convert.format, "libsvm | binary (default: from the extension)");
  AddDataFlags(convert_cmd, convert.data_flags);

  std::string info_spec;
  DataFlags info_flags;
  CLI::App* info_cmd = app.add_subcommand("info", "describe a dataset");
  info_cmd->add_option("FILE", info_spec, "file or built-in name")->required();
  AddDataFlags(info_cmd, info_flags);

  if (argc > 1 && argv[1][0] != '-') {
    const std::string command = argv[1];
    if (command != "train" && command != "predict" && command != "gen" && command != "convert" && command != "info") {
      std::cerr << "pimopt: error: unknown command '" << command
                << "' (commands: train, predict, gen, convert, info)\n";
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "pimopt: error: " << e.what() << "\n(run 'pimopt --help' or 'pimopt COMMAND --help')\n";
    return 2;
  }
  if (app.got_subcommand("train") && LaunchedUnderMpi()) return RunTrainUnderMpi(argc, argv, train);
  try {
    if (app.got_subcommand("train")) return RunTrain(train, JoinArgs(argc, argv), SingleProcess());
    if (app.got_subcommand("predict")) return RunPredict(predict);
    if (app.got_subcommand("gen")) return RunGen(gen_kind, gen);
    if (app.got_subcommand("convert")) return RunConvert(convert);
    if (app.got_subcommand("info")) return RunInfoCommand(info_spec, info_flags);
  } catch (const InputError& e) {
    std::cerr << "pimopt: error: " << e.what() << "\n";
    return 2;
  } catch (const std::bad_alloc&) {
    std::cerr << "pimopt: error: out of memory\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "pimopt: internal error: " << e.what() << "\n";
    return 1;
  }
  return 1;
}

}  // namespace pimopt::cli
