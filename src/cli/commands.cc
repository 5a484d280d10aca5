#include "commands.h"

#include <CLI/CLI.hpp>
#include <charconv>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "param_flags.h"
#include "pim_commands.h"
#include "pimopt/core/atomic_file.h"
#include "pimopt/core/error.h"
#include "pimopt/core/file_util.h"
#include "pimopt/core/thread_pool.h"
#include "pimopt/data/artifact_text.h"
#include "pimopt/data/binary_format.h"
#include "pimopt/data/libsvm.h"
#include "pimopt/data/sources.h"
#include "pimopt/data/synthetic.h"
#include "pimopt/model/metrics.h"
#include "pimopt/model/model_io.h"
#include "pimopt/pim/host_model.h"
#include "pimopt/pim/hw_validation.h"
#include "pimopt/pim/profile.h"
#include "pimopt/run/pipeline.h"
#include "pimopt/run/plan.h"
#include "pimopt/run/report.h"
#include "pimopt/run/tune.h"

#ifdef PIMOPT_HAVE_MPI
#include "pimopt/collectives/mpi_communicator.h"
#endif

namespace pimopt::cli {
namespace {

// A whole number in [min, max], checked on the flag's text before CLI11 converts it: CLI11 would take "-1" for an
// unsigned flag as 2^64 - 1 and a value past the type's range as its largest, both silently.
CLI::Validator WholeNumber(uint64_t min, uint64_t max) {
  return CLI::Validator(
      [min, max](std::string& text) -> std::string {
        const std::string& digits = text;
        uint64_t value = 0;
        const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
        if (digits.empty() || end != digits.data() + digits.size() ||
            (error != std::errc() && error != std::errc::result_out_of_range)) {
          return StrCat("'", text, "' is not a whole number (", min, " .. ", max, ")");
        }
        if (error == std::errc::result_out_of_range || value < min || value > max) {
          return StrCat(text, " is out of range: ", min, " .. ", max);
        }
        return "";
      },
      StrCat("[", min, " .. ", max, "]"));
}

// The one mapping from errors to messages and exit codes: 2 for bad input (the message names the file:line or the
// flag), 1 for everything else.
struct Failure {
  int code = 1;
  std::string message;
};

Failure Classify(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const CLI::ParseError& e) {
    return {2, StrCat("error: ", e.what(), "\n(run 'pimopt --help' or 'pimopt COMMAND --help')")};
  } catch (const InputError& e) {
    return {2, StrCat("error: ", e.what())};
  } catch (const std::bad_alloc&) {
    return {1, "error: out of memory"};
  } catch (const std::exception& e) {
    return {1, StrCat("internal error: ", e.what())};
  } catch (...) {
    return {1, "internal error: an unknown exception"};
  }
}

std::string JoinArgs(int argc, char** argv) {
  std::string s;
  for (int i = 0; i < argc; ++i) s += (i ? " " : "") + std::string(argv[i]);
  return s;
}

// Applies the source flags given to a data command.
void ApplySourceFlags(const ParamFlags& flags, SourceOptions& source) {
  flags.ForEachGiven(
      [&](const std::string& name, const std::string& text) { SourceParams().SetText(source, name, text); });
}

// ---------------------------------------------------------------- train
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

// Runs the library's training pipeline and prints its progress (rank 0).
int RunTrain(const RunConfig& config, const std::string& command_line, Communicator& comm,
             const std::function<void(nlohmann::json&)>& before_write = {}) {
  const bool talk = !config.quiet && comm.rank() == 0;
  RunCallbacks callbacks;
  callbacks.before_write = before_write;
  callbacks.on_start = [&](const RunConfig& c, const RunData& d, const ThreadPool& pool) {
    if (talk) std::cout << FormatRunHeader(c, d, pool, comm.size()) << std::endl;
  };
  callbacks.on_epoch = [&](const EpochRecord& r) {
    if (talk) std::cout << FormatEpochLine(r) << std::endl;
  };
  callbacks.on_fold = [&](uint32_t fold, const Metrics& m) {
    if (talk) std::cout << FormatFoldLine(fold, config.cv_folds, m) << std::endl;
  };
  callbacks.after_epoch = KillHook(comm);
  const RunOutcome outcome = RunTraining(config, comm, command_line, callbacks);
  if (comm.rank() != 0) return 0;
  if (outcome.projection) std::cout << FormatProjection(*outcome.projection) << "\n";
  if (outcome.cross_validation) std::cout << FormatCrossValidation(*outcome.cross_validation) << "\n";
  if (const std::string stop = FormatStop(outcome.config, outcome.result); !stop.empty()) std::cout << stop << "\n";
  if (comm.size() > 1 && talk) std::cout << FormatMpiLine(comm.size(), outcome.result) << "\n";
  for (const TargetReached& t : TimesToTargets(outcome.config, outcome.result)) std::cout << FormatTarget(t) << "\n";
  std::cout << "\n" << FormatSummary(outcome.config, outcome.result) << std::endl;
  return 0;
}

bool LaunchedUnderMpi() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK"}) {
    if (std::getenv(name) != nullptr) return true;
  }
  return false;
}

// `pimopt train` started by mpirun: every rank runs the pipeline with the MPI communicator. An error on any rank is
// printed with its rank and ends the whole job (MPI_Abort), so no rank waits forever in a collective.
int RunTrainUnderMpi(int argc, char** argv, const RunConfig& config) {
#ifdef PIMOPT_HAVE_MPI
  MpiSession session(&argc, &argv);
  MpiCommunicator comm;
  try {
    return RunTrain(config, JoinArgs(argc, argv), comm);
  } catch (...) {
    const Failure f = Classify(std::current_exception());
    std::cerr << "pimopt (rank " << comm.rank() << " of " << comm.size() << "): " << f.message << std::endl;
    if (comm.size() > 1) MpiSession::Abort(f.code);
    return f.code;
  }
#else
  (void)argc, (void)argv, (void)config;
  std::cerr << "pimopt: error: started by mpirun, but this pimopt was built without MPI (install libopenmpi-dev "
               "and rebuild)\n";
  return 2;
#endif
}

// ---------------------------------------------------------------- predict
struct PredictFlags {
  std::string model, data, out;
  SourceOptions source;
  int threads = 0;
};

// --threads of the commands outside the parameter table (predict, gen): the table's bounds, 0 .. kMaxThreads.
void CheckThreadsFlag(int threads) {
  if (threads < 0 || threads > kMaxThreads) {
    throw ConfigError("--threads", StrCat(threads, " is out of range: must be 0 .. ", kMaxThreads));
  }
}

int RunPredict(const PredictFlags& f) {
  CheckOutputPath(f.out, "--out");
  CheckThreadsFlag(f.threads);
  const LinearModel model = ReadModel(f.model);
  ThreadPool pool(f.threads);
  const Dataset data = LoadDataset(f.data, f.source, &pool);
  const std::vector<float> scores = ComputeScores(model, data, &pool);
  const auto non_finite = std::count_if(scores.begin(), scores.end(), [](float s) { return !std::isfinite(s); });
  if (non_finite > 0) {
    throw InputError(StrCat(f.model, ": the model gives ", non_finite, " of ", scores.size(), " rows of ", f.data,
                            " a non-finite score (its weights overflow float arithmetic on these features)"));
  }
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
  const Metrics m = MetricsOfScores(scores, data.labels(), data.weights(), model, objective);
  std::printf("rows %zu  accuracy %.4f  auc %s  log_loss %.5f  hinge_loss %.5f\n", m.rows, m.accuracy,
              std::isfinite(m.auc) ? StrCat(m.auc).c_str() : "-", m.log_loss, m.hinge_loss);
  return 0;
}

// ---------------------------------------------------------------- gen / convert / info
enum class FileFormat { kLibsvm, kBinary, kYfccText, kCriteoText };

FileFormat FormatFor(const std::string& path, const std::string& forced, const char* flag) {
  if (forced == "libsvm") return FileFormat::kLibsvm;
  if (forced == "binary") return FileFormat::kBinary;
  if (forced == "yfcc-text") return FileFormat::kYfccText;
  if (forced == "criteo-text") return FileFormat::kCriteoText;
  if (!forced.empty()) {
    throw ConfigError("--format",
                      StrCat("unknown format '", forced, "' (use libsvm, binary, yfcc-text or criteo-text)"));
  }
  const std::string ext = std::filesystem::path(path).extension().string();
  if (ext == ".bin" || ext == ".pimds") return FileFormat::kBinary;
  if (ext == ".svm" || ext == ".libsvm" || ext == ".txt" || ext == ".svmlight") return FileFormat::kLibsvm;
  throw ConfigError(flag, StrCat("cannot tell the format of '", path,
                                 "' from its extension (.bin/.pimds = binary, .svm/.libsvm/.txt = LIBSVM); use "
                                 "--format"));
}

void WriteDataset(const Dataset& d, const std::string& path, FileFormat format) {
  switch (format) {
    case FileFormat::kBinary:
      return WriteBinaryDataset(d, path);
    case FileFormat::kLibsvm:
      return WriteLibsvm(d, path);
    case FileFormat::kYfccText:
      return WriteYfccText(d, path);
    case FileFormat::kCriteoText:
      return WriteCriteoText(d, path);
  }
}

const char* FormatName(FileFormat format) {
  switch (format) {
    case FileFormat::kBinary:
      return "binary";
    case FileFormat::kLibsvm:
      return "libsvm";
    case FileFormat::kYfccText:
      return "yfcc-text";
    case FileFormat::kCriteoText:
      return "criteo-text";
  }
  return "?";
}

struct GenFlags {
  std::string out, format;
  uint64_t first_row = 0;
  int threads = 0;
  ParamFlags generator;  // the dense and sparse generators' parameters (DenseSyntheticTable, SparseSyntheticTable)
};

int RunGen(const std::string& kind, const GenFlags& f) {
  const FileFormat format = FormatFor(f.out, f.format, "--out");
  CheckOutputPath(f.out, "--out");
  CheckThreadsFlag(f.threads);
  const std::unique_ptr<SyntheticGenerator> generator = MakeSyntheticGenerator(kind);
  f.generator.ForEachGiven([&](const std::string& name, const std::string& text) {
    if (!generator->Set(name, text)) throw ConfigError(StrCat("--", name), StrCat("not a parameter of gen ", kind));
  });
  ThreadPool pool(f.threads);
  const Dataset d = generator->Generate(f.first_row, generator->rows(), &pool);
  WriteDataset(d, f.out, format);
  std::printf("wrote %s: %zu rows x %zu features, %zu positives\n", f.out.c_str(), d.num_rows(), d.num_features(),
              d.CountPositives());
  return 0;
}

struct ConvertFlags {
  std::string in, out, format;
  SourceOptions source;
};

int RunConvert(const ConvertFlags& f) {
  const FileFormat format = FormatFor(f.out, f.format, "OUT");
  CheckOutputPath(f.out, "OUT");
  ThreadPool pool(0);
  const Dataset d = LoadDataset(f.in, f.source, &pool);
  WriteDataset(d, f.out, format);
  std::printf("wrote %s: %zu rows x %zu features (%s)\n", f.out.c_str(), d.num_rows(), d.num_features(),
              FormatName(format));
  return 0;
}

int RunInfoCommand(const std::string& spec, const SourceOptions& source) {
  const Dataset d = LoadDataset(spec, source);
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

// ---------------------------------------------------------------- params
int RunParamsCommand(const std::string& format) {
  const auto infos = Infos(RunParams());
  if (format == "markdown") {
    std::cout << ParamsAsMarkdown(infos);
  } else if (format == "text") {
    std::cout << "The parameters of 'pimopt train' (declared once in the library; 'affects' says whether a "
                 "checkpoint records them):\n\n"
              << ParamsAsText(infos);
  } else {
    throw ConfigError("--format", StrCat("unknown format '", format, "' (use text or markdown)"));
  }
  return 0;
}

// ---------------------------------------------------------------- profile
int RunCalibrateHost(double budget_s) {
  if (!(budget_s > 0) || budget_s > 600) throw ConfigError("--budget", "must be in (0, 600] seconds");
  const pim::HostMeasurement m = pim::MeasureHost(budget_s);
  std::printf("this host (%u hardware threads), measured with the reduction loop of the modeled host:\n", m.cores);
  std::printf("  clock                          %.3g Hz (dependent adds)\n", m.clock_hz);
  std::printf("  sum one value, in cache        %.3g cycles/element (one thread)\n", m.cycles_per_element);
  std::printf("  update one coordinate          %.3g cycles/element (one thread)\n", m.update_cycles_per_element);
  std::printf("  stream from memory, 1 thread   %.3g B/s\n", m.thread_bytes_per_s);
  std::printf("  stream from memory, %2u threads %.3g B/s\n", m.cores, m.memory_bytes_per_s);
  std::printf("  start and join a thread        %.3g s\n", m.thread_start_s);
  std::printf("model this host: --profile-set %s\n", m.ProfileOverrides().c_str());
  return 0;
}

int RunProfileCommand(const std::string& name, const std::string& overrides, const std::string& format) {
  if (format != "text" && format != "markdown") {
    throw ConfigError("--format", StrCat("unknown format '", format, "' (use text or markdown)"));
  }
  if (name.empty()) {
    if (!overrides.empty()) throw ConfigError("--set", "needs a profile NAME");
    if (format == "markdown") {
      std::cout << "| name | DPUs | clock | what | source |\n|---|---|---|---|---|\n";
      for (const pim::ProfilePreset& preset : pim::ProfilePresets()) {
        const pim::HardwareProfile p = pim::MakeProfile(preset.name);
        std::cout << "| `" << preset.name << "` | " << p.num_dpus << " | " << p.dpu_frequency_hz / 1e6 << " MHz | "
                  << preset.description << " | " << preset.source << " |\n";
      }
      return 0;
    }
    std::cout << "Hardware profiles ('pimopt profile NAME' shows one's fields, units and sources):\n";
    for (const pim::ProfilePreset& preset : pim::ProfilePresets()) {
      std::printf("  %-12s %s\n", preset.name.c_str(), preset.description.c_str());
    }
    return 0;
  }
  const pim::HardwareProfile base = pim::MakeProfile(name);
  pim::HardwareProfile profile = base;
  if (!overrides.empty()) pim::ApplyOverrides(profile, overrides);
  const pim::ProfilePreset* preset = nullptr;
  for (const auto& p : pim::ProfilePresets()) {
    if (p.name == name) preset = &p;
  }
  const auto& fields = pim::ProfileFields();
  // A field the preset sets has the preset's source.
  auto source = [&](const ParamInfo& info) {
    for (const auto& [field, value] : preset->fields) {
      if (field == info.name) return StrCat(preset->source, " (this preset)");
    }
    return info.source;
  };
  if (format == "markdown") {
    std::string group;
    for (const auto& e : fields.entries()) {
      if (e.info.group != group) {
        group = e.info.group;
        std::cout << "\n#### " << group << "\n| field | value | unit | meaning | source |\n|---|---|---|---|---|\n";
      }
      std::cout << "| `" << e.info.name << "` | " << fields.GetText(profile, e.info.name) << " | " << e.info.unit
                << " | " << e.info.help << " | " << source(e.info) << " |\n";
    }
    return 0;
  }
  std::cout << "profile " << name << ": " << preset->description << " (" << preset->source << ")\n";
  if (!overrides.empty()) std::cout << "with --set " << overrides << " (changed fields marked *)\n";
  std::string group;
  for (const auto& e : fields.entries()) {
    if (e.info.group != group) {
      group = e.info.group;
      std::cout << "\n" << group << ":\n";
    }
    const std::string value = fields.GetText(profile, e.info.name);
    const bool changed = value != fields.GetText(base, e.info.name);
    std::printf("  %-34s %1s%-14s %-12s %s\n", e.info.name.c_str(), changed ? "*" : "", value.c_str(),
                e.info.unit.c_str(), source(e.info).c_str());
  }
  return 0;
}

}  // namespace

// pimopt tune: cross-validates every setting of the grid, prints each, then trains the best as 'train' would.
int RunTune(const RunConfig& base, const std::string& grid_text, const std::string& metric_name, bool warm_start,
            const std::string& command_line) {
  std::vector<GridSetting> settings = GridSettings(base, ParseGrid(grid_text, base));
  // The data is loaded once, with the first setting (the base alone may not resolve: --rho with algo=ma,admm).
  RunConfig resolved = settings.front().config;
  ResolveRunConfig(resolved, 1);
  const TuneMetric metric = metric_name == "auc" ? TuneMetric::kAuc : TuneMetric::kAccuracy;
  ThreadPool pool(resolved.threads);
  const RunData data = LoadRunData(resolved, SingleProcess(), pool);
  const uint32_t folds = resolved.cv_folds;
  std::cout << "pimopt tune: " << settings.size() << " settings x " << folds << " folds of " << data.train.source
            << " (" << data.train.num_rows() << " rows), " << resolved.train.algorithm << " "
            << LossName(resolved.train.objective.loss) << " on the " << resolved.backend << " backend; best by cv "
            << metric_name << std::endl;
  // "reg=1e-5 lr=0.1" for the trials, "--reg 1e-5 --lr 0.1" for the best.
  auto setting_text = [](const TuneTrial& t, bool as_flags) {
    std::string s;
    for (const auto& [name, value] : t.setting) {
      s += StrCat(s.empty() ? "" : " ", as_flags ? "--" : "", name, as_flags ? " " : "=", value);
    }
    return s;
  };
  const TuneResult result = Tune(
      std::move(settings), metric, data.train, pool,
      [&](const TuneTrial& t) {
        std::cout << setting_text(t, false) << ": " << FormatCrossValidation(t.cv) << std::endl;
      },
      warm_start);
  const TuneTrial& best = result.trials[result.best];
  std::cout << "best: " << setting_text(best, true) << " (cv " << metric_name << " " << TuneScore(best.cv, metric)
            << "); training it on all the training rows\n"
            << std::endl;
  // The report of the final training gets the tuning: every setting's cross-validated scores and the best.
  auto add_tuning = [&](nlohmann::json& report) {
    nlohmann::json trials = nlohmann::json::array();
    for (const TuneTrial& t : result.trials) {
      nlohmann::json setting = nlohmann::json::object();
      for (const auto& [name, value] : t.setting) setting[name] = value;
      trials.push_back({{"setting", setting},
                        {"cv_mean", MetricsToJson(t.cv.mean)},
                        {"cv_stddev", MetricsToJson(t.cv.stddev)},
                        {"wall_seconds", t.cv.seconds}});
    }
    report["tuning"] = {
        {"grid", grid_text}, {"metric", metric_name}, {"folds", folds}, {"trials", trials}, {"best", result.best}};
  };
  return RunTrain(result.best_config, command_line, SingleProcess(), add_tuning);
}

// pimopt plan: each algorithm's pilots, the table of predictions and the recommendation (or the JSON).
int RunPlan(const RunConfig& base, const PlanOptions& options, bool json) {
  if (!json) {
    std::cout << "pimopt plan: convergence pilots on the " << options.pilot_backend << " backend (at most "
              << options.pilot_epochs << " epochs)"
              << (options.pilot_backend == "cpu" ? ", one timed epoch on the PIM emulator each" : "")
              << "; modeled PIM times" << std::endl;
  }
  const Plan plan = MakePlan(base, options, [&](const PlanCandidate& c) {
    if (!json) {
      std::cout << "  " << c.algorithm << ": pilot " << c.pilot_epochs << " epochs (" << c.pilot_stop << "), "
                << std::round(c.pilot_wall_s * 100) / 100 << " s" << std::endl;
    }
  });
  if (json) {
    std::cout << PlanJson(plan).dump(2) << std::endl;
    return 0;
  }
  std::cout << plan.data << ": " << plan.rows << " rows x " << plan.features << " features; " << plan.dpus
            << " DPUs of profile " << plan.profile << "; target " << plan.set << " " << plan.metric << " "
            << plan.target
            << (plan.target_given ? "" : " (none given: half a point below the best any pilot reached)") << "\n\n"
            << FormatPlan(plan) << "The prediction assumes "
            << PlanJson(plan)["assumes"].get<std::string>() << " (docs/algorithms.md \"Planning\")." << std::endl;
  return 0;
}

int RunCli(int argc, char** argv) {
  CLI::App app{"pimopt: distributed optimization of linear classifiers on CPUs, an emulated UPMEM PIM system and MPI"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "pimopt 0.1.0");

  ParamFlags train_flags;
  CLI::App* train_cmd = app.add_subcommand("train", "train a linear classifier ('pimopt params' lists every flag)");
  train_flags.Add(train_cmd, RunParams());
  train_cmd->footer(
      "With no training flags (every 'auto'): features scaled to [0, 1] (folded back into the saved model), reg = "
      "1 / rows (LIBLINEAR's C = 1), batch and learning rate from the data, the rate divided by 4 at each plateau of "
      "the training objective and the run stopped at the 4th (--epochs is the bound); the chosen values and the "
      "reason to stop are printed and in the report. A given --lr is a constant rate for --epochs epochs. "
      "docs/algorithms.md \"Defaults\"; 'pimopt tune' selects --reg (or any parameter) by cross-validation.");

  ParamFlags tune_flags;
  std::string tune_grid, tune_metric = "accuracy";
  bool tune_no_warm_start = false;
  CLI::App* tune_cmd = app.add_subcommand(
      "tune",
      "select parameters by cross-validation: every setting of --grid is cross-validated (--cv folds, 5 by "
      "default), the best is trained on all the training rows (train's flags and outputs)");
  tune_cmd
      ->add_option("--grid", tune_grid,
                   "NAME=V1,V2,...;NAME=... over train's parameters (e.g. "
                   "'reg=auto,1e-4,1e-2;model=lr,svm')")
      ->required();
  tune_cmd->add_option("--metric", tune_metric, "accuracy | auc: what 'best' means")
      ->capture_default_str()
      ->check(CLI::IsMember({"accuracy", "auc"}));
  tune_cmd->add_flag("--no-warm-start", tune_no_warm_start,
                     "train every setting's folds from zero (by default a fold starts from the model the same fold of "
                     "the previous setting ended with, when both have the same backend, algorithm and workers)");
  tune_flags.Add(tune_cmd, RunParams());

  ParamFlags plan_flags;
  PlanOptions plan_options;
  std::string plan_algos = "mbsgd,ga,ma,dsgd,admm";
  bool plan_json = false;
  CLI::App* plan_cmd = app.add_subcommand(
      "plan",
      "predict which algorithm reaches a target first on the emulated PIM system: per algorithm a short "
      "convergence pilot (CPU backend) and one timed epoch on the emulator, the modeled time per epoch and to the "
      "target, and a recommendation (train's flags set the data, model, profile, --dpus and the target)");
  plan_cmd->add_option("--algos", plan_algos, "the algorithms to compare, a comma list")->capture_default_str();
  plan_cmd->add_option("--pilot-epochs", plan_options.pilot_epochs,
                       "the convergence pilots' most epochs (and at most --epochs)")
      ->capture_default_str()
      ->check(WholeNumber(1, INT32_MAX));
  plan_cmd->add_option("--pilot-backend", plan_options.pilot_backend,
                       "cpu: the convergence pilots in float on the CPU backend (fast); pim: on the emulator, the "
                       "full runs' own epochs (slower; they also time the epochs)")
      ->capture_default_str()
      ->check(CLI::IsMember({"cpu", "pim"}));
  plan_cmd->add_option("--timing-dpus", plan_options.timing_dpus,
                       "the most DPUs the timed epoch emulates; beyond, it runs this many DPUs with the run's rows "
                       "per DPU and projects to --dpus")
      ->capture_default_str()
      ->check(WholeNumber(1, UINT32_MAX));
  plan_cmd->add_option("--timing-rows-per-dpu", plan_options.timing_rows_per_dpu,
                       "the most rows per DPU of the timed epoch (kernel times are scaled to the run's)")
      ->capture_default_str()
      ->check(WholeNumber(1, UINT32_MAX));
  plan_cmd->add_flag("--json", plan_json, "print the plan as JSON");
  plan_flags.Add(plan_cmd, RunParams());

  PredictFlags predict;
  ParamFlags predict_source;
  CLI::App* predict_cmd = app.add_subcommand("predict", "score data with a trained model");
  predict_cmd->add_option("--model", predict.model, "model file")->required();
  predict_cmd->add_option("--data", predict.data, "data file or built-in name")->required();
  predict_cmd->add_option("--out", predict.out, "write 'label score' per row here");
  predict_cmd->add_option("--threads", predict.threads, "host threads (0 = all cores)")->check(WholeNumber(0, kMaxThreads));
  predict_source.Add(predict_cmd, SourceParams());

  GenFlags gen;
  std::string gen_kind;
  CLI::App* gen_cmd = app.add_subcommand("gen", "generate a synthetic dataset with a planted model");
  std::string kinds;
  for (const std::string& name : SyntheticGeneratorNames()) {
    kinds += StrCat(kinds.empty() ? "" : "; ", name, ": ", MakeSyntheticGenerator(name)->description());
  }
  gen_cmd->add_option("kind", gen_kind, kinds)->required()->check(CLI::IsMember(SyntheticGeneratorNames()));
  gen_cmd->add_option("--out", gen.out, "output file (.svm LIBSVM or .bin binary)")->required();
  gen_cmd->add_option("--format", gen.format,
                      "libsvm | binary | yfcc-text | criteo-text (default: from the extension)");
  std::vector<std::unique_ptr<SyntheticGenerator>> generators;  // their parameters' declarations, while parsing
  for (const std::string& name : SyntheticGeneratorNames()) {
    generators.push_back(MakeSyntheticGenerator(name));
    gen.generator.Add(gen_cmd, generators.back()->params());
  }
  gen_cmd->add_option("--first-row", gen.first_row, "first row number (a test set: rows after the train rows)")
      ->check(WholeNumber(0, UINT64_MAX));  // the generator refuses the rows past what it can number
  gen_cmd->add_option("--threads", gen.threads, "host threads (0 = all cores); never changes the data")
      ->check(WholeNumber(0, kMaxThreads));

  ConvertFlags convert;
  ParamFlags convert_source;
  CLI::App* convert_cmd = app.add_subcommand("convert", "convert between data formats (LIBSVM, IDX, binary)");
  convert_cmd->add_option("IN", convert.in, "input file or built-in name")->required();
  convert_cmd->add_option("OUT", convert.out, "output file (.svm LIBSVM or .bin binary)")->required();
  convert_cmd->add_option("--format", convert.format,
                          "libsvm | binary | yfcc-text | criteo-text (default: from the extension)");
  convert_source.Add(convert_cmd, SourceParams());

  std::string info_spec;
  SourceOptions info_source;
  ParamFlags info_flags;
  CLI::App* info_cmd = app.add_subcommand("info", "describe a dataset");
  info_cmd->add_option("FILE", info_spec, "file or built-in name")->required();
  info_flags.Add(info_cmd, SourceParams());

  std::string params_format = "text";
  CLI::App* params_cmd = app.add_subcommand("params",
                                            "list every parameter of 'train': type, default, bounds, "
                                            "where it applies, what it affects");
  params_cmd->add_option("--format", params_format, "text | markdown (the README's tables)")->capture_default_str();

  std::string profile_name, profile_overrides, profile_format = "text";
  CLI::App* profile_cmd = app.add_subcommand("profile",
                                             "list the hardware profiles, or show one's fields with their "
                                             "units and sources");
  profile_cmd->add_option("NAME", profile_name, "a profile (none: list them)");
  profile_cmd->add_option("--set", profile_overrides, "FIELD=VALUE,... overrides, as train's --profile-set");
  profile_cmd->add_option("--format", profile_format, "text | markdown")->capture_default_str();
  bool calibrate_host = false;
  double calibrate_budget_s = 2.0;
  profile_cmd->add_flag("--calibrate-host", calibrate_host,
                        "measure this machine's host reduction constants and print them as --profile-set fields");
  profile_cmd->add_option("--budget", calibrate_budget_s, "seconds --calibrate-host may take")->capture_default_str();

  ValidateFlags validate;
  std::string validate_benchmarks;
  CLI::App* validate_cmd = app.add_subcommand(
      "validate",
      "check the emulator's timing against PrIM kernels timed on UPMEM hardware: fit the timing model's "
      "free constants on all benchmarks but one, predict that one (leave one benchmark out)");
  validate_cmd->add_option(
      "--hw-data", validate.hw_data,
      "the hardware measurements (CSV; default $PIMOPT_HW_DATA, else " + pim::validation::DefaultHwDataPath() + ")");
  validate_cmd->add_option("--benchmarks", validate_benchmarks, "A,B,...: only these benchmarks' rows (default all)");
  validate_cmd->add_option("--profile", validate.profile, "the hardware profile to start from")->capture_default_str();
  validate_cmd->add_option("--profile-set", validate.profile_set, "FIELD=VALUE,... overrides of the profile");
  validate_cmd->add_option("--markdown", validate.markdown_out, "also write the table (markdown) here");
  validate_cmd->add_option("--json", validate.json_out, "also write the full report (JSON) here");
  validate_cmd->add_option("--threads", validate.threads, "host threads (0 = all cores)")
      ->check(WholeNumber(0, kMaxThreads));
  validate_cmd->add_flag("-q,--quiet", validate.quiet, "no progress on stderr");

  PrimFlags prim;
  CLI::App* prim_cmd = app.add_subcommand("prim",
                                          "run one ported PrIM benchmark on the emulator (checked against its "
                                          "host reference) and print its modeled times");
  prim_cmd->add_option("BENCHMARK", prim.benchmark,
                       "VA, RED, SEL, UNI, HST-S, HST-L, TS, SCAN-SSA, SCAN-RSS, TRNS, "
                       "MLP, GEMV, BS (none or --list: describe them)");
  prim_cmd->add_flag("--list", prim.list, "list the benchmarks and what their size parameter means");
  prim_cmd->add_option("--dpus", prim.dpus, "DPUs")->capture_default_str()->check(WholeNumber(1, UINT32_MAX));
  prim_cmd->add_option("--param", prim.param, "the benchmark's size parameter, over all DPUs (--list)")
      ->capture_default_str()
      ->check(WholeNumber(1, UINT64_MAX));
  prim_cmd->add_option("--tasklets", prim.tasklets, "tasklets per DPU")
      ->capture_default_str()
      ->check(WholeNumber(1, UINT32_MAX));
  prim_cmd->add_option("--profile", prim.profile, "hardware profile")->capture_default_str();
  prim_cmd->add_option("--profile-set", prim.profile_set, "FIELD=VALUE,... overrides of the profile");
  prim_cmd->add_option("--shuffle-seed", prim.shuffle_seed,
                       "> 0: resume waiting tasklets in a seeded random order (flushes out kernel races)")
      ->check(WholeNumber(0, UINT64_MAX));
  prim_cmd
      ->add_option("--scheduler", prim.scheduler,
                   "how the emulator runs the tasklets (the same modeled times): batched (a tasklet runs on past its "
                   "DMAs) or reference (it stops at every event)")
      ->check(CLI::IsMember({"batched", "reference"}))
      ->capture_default_str();
  prim_cmd->add_option("--threads", prim.threads, "host threads (0 = all cores)")->check(WholeNumber(0, kMaxThreads));
  prim_cmd->add_flag("--json", prim.json, "print the result as JSON");

  const std::vector<std::string> commands = {"train",  "tune",    "plan",     "predict", "gen",  "convert",
                                             "info",   "params",  "profile",  "validate", "prim"};
  if (argc > 1 && argv[1][0] != '-' && std::find(commands.begin(), commands.end(), argv[1]) == commands.end()) {
    std::cerr << "pimopt: error: unknown command '" << argv[1] << "' (commands: " << JoinNames(commands) << ")\n";
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (...) {
    const Failure f = Classify(std::current_exception());
    std::cerr << "pimopt: " << f.message << "\n";
    return f.code;
  }
  try {
    if (app.got_subcommand("train")) {
      RunConfig config;
      train_flags.ForEachGiven([&](const std::string& name, const std::string& text) { SetParam(config, name, text); });
      if (LaunchedUnderMpi()) return RunTrainUnderMpi(argc, argv, config);
      return RunTrain(config, JoinArgs(argc, argv), SingleProcess());
    }
    if (app.got_subcommand("tune")) {
      if (LaunchedUnderMpi()) throw ConfigError("tune", "runs in one process (not under mpirun)");
      RunConfig config;
      tune_flags.ForEachGiven([&](const std::string& name, const std::string& text) { SetParam(config, name, text); });
      return RunTune(config, tune_grid, tune_metric, !tune_no_warm_start, JoinArgs(argc, argv));
    }
    if (app.got_subcommand("plan")) {
      if (LaunchedUnderMpi()) throw ConfigError("plan", "runs in one process (not under mpirun)");
      RunConfig config;
      plan_flags.ForEachGiven([&](const std::string& name, const std::string& text) { SetParam(config, name, text); });
      plan_options.algorithms = SplitText(plan_algos, ',');
      for (std::string& a : plan_options.algorithms) a = TrimSpaces(a);
      return RunPlan(config, plan_options, plan_json);
    }
    if (app.got_subcommand("predict")) {
      ApplySourceFlags(predict_source, predict.source);
      return RunPredict(predict);
    }
    if (app.got_subcommand("gen")) return RunGen(gen_kind, gen);
    if (app.got_subcommand("convert")) {
      ApplySourceFlags(convert_source, convert.source);
      return RunConvert(convert);
    }
    if (app.got_subcommand("info")) {
      ApplySourceFlags(info_flags, info_source);
      return RunInfoCommand(info_spec, info_source);
    }
    if (app.got_subcommand("params")) return RunParamsCommand(params_format);
    if (app.got_subcommand("profile") && calibrate_host) return RunCalibrateHost(calibrate_budget_s);
    if (app.got_subcommand("profile")) return RunProfileCommand(profile_name, profile_overrides, profile_format);
    if (app.got_subcommand("validate")) {
      if (!validate_benchmarks.empty()) validate.benchmarks = SplitText(validate_benchmarks, ',');
      return RunValidateCommand(validate);
    }
    if (app.got_subcommand("prim")) return RunPrimCommand(prim);
  } catch (...) {
    const Failure f = Classify(std::current_exception());
    std::cerr << "pimopt: " << f.message << "\n";
    return f.code;
  }
  return 1;
}

}  // namespace pimopt::cli
