#include "commands.h"

#include <CLI/CLI.hpp>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "command_params.h"
#include "param_flags.h"
#include "pim_commands.h"
#include "pimopt/core/atomic_file.h"
#include "pimopt/core/error.h"
#include "pimopt/core/file_util.h"
#include "pimopt/core/params_json.h"
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
  for (const std::string& note : outcome.notes) std::cout << "note: " << note << "\n";
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
int RunPredict(const PredictFlags& f) {
  CheckOutputPath(f.out, "--out");
  CheckOutputIsNotInput(f.out, "--out", f.model, "--model");
  CheckOutputIsNotInput(f.out, "--out", f.data, "--data");
  const LinearModel model = ReadModel(f.model);
  ThreadPool pool(f.threads);
  // Data labelled by class (IDX) is labelled as the model's training data was: its positive classes, unless
  // --positive-classes names them (another list is refused: the scores would be judged against other labels).
  SourceOptions source = f.source;
  if (!model.positive_classes.empty()) {
    SourceOptions defaults;
    SourceParams().ApplyDefaults(defaults);
    if (source.positive_classes != defaults.positive_classes && source.positive_classes != model.positive_classes) {
      throw ConfigError("--positive-classes",
                        StrCat("the model ", f.model, " was trained with --positive-classes ",
                               ClassListText(model.positive_classes), "; its scores mean those classes"));
    }
    source.positive_classes = model.positive_classes;
  }
  const Dataset data = LoadDataset(f.data, source, &pool);
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

int RunGen(const SyntheticGenerator& generator, const GenFlags& f) {
  const FileFormat format = FormatFor(f.out, f.format, "--out");
  CheckOutputPath(f.out, "--out");
  ThreadPool pool(f.threads);
  const Dataset d = generator.Generate(f.first_row, generator.rows(), &pool);
  WriteDataset(d, f.out, format);
  std::printf("wrote %s: %zu rows x %zu features, %zu positives\n", f.out.c_str(), d.num_rows(), d.num_features(),
              d.CountPositives());
  return 0;
}

int RunConvert(const ConvertFlags& f) {
  const FileFormat format = FormatFor(f.out, f.format, "OUT");
  CheckOutputPath(f.out, "OUT");
  CheckOutputIsNotInput(f.out, "OUT", f.in, "IN");
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
int RunParamsCommand(const ParamsFlags& f, const CommandInfos& commands) {
  // --command is checked for every format (json with it shows that command only, without it every command).
  const std::string command = f.command.empty() && f.format != "json" ? "train" : f.command;
  const auto it = std::find_if(commands.begin(), commands.end(), [&](const auto& c) { return c.first == command; });
  if (!command.empty() && it == commands.end()) {
    std::vector<std::string> names;
    for (const auto& c : commands) names.push_back(c.first);
    throw ConfigError("--command", StrCat("unknown command '", command, "' (commands: ", JoinNames(names), ")"));
  }
  if (f.format == "json") {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& [name, infos] : commands) {
      if (!command.empty() && name != command) continue;
      nlohmann::json list = nlohmann::json::array();
      for (const ParamInfo* info : infos) list.push_back(ParamInfoJson(*info));
      out[name] = list;
    }
    std::cout << out.dump(1) << "\n";
    return 0;
  }
  if (f.format == "markdown") {
    std::cout << ParamsAsMarkdown(it->second);
  } else {
    std::cout << "The parameters of 'pimopt " << command
              << "' (declared once in the library; 'affects' says whether a checkpoint records them):\n\n"
              << ParamsAsText(it->second);
  }
  return 0;
}

// ---------------------------------------------------------------- profile
int RunCalibrateHost(double budget_s) {
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

int RunProfileCommand(const ProfileFlags& f) {
  if (f.calibrate_host) return RunCalibrateHost(f.budget_s);
  const std::string& name = f.name;
  const std::string& overrides = f.set;
  const std::string& format = f.format;
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
  // Every setting's flags are checked before the data is read (a value one setting refuses is found before the
  // others are cross-validated); the data is loaded once, with the first setting (the base alone may not resolve:
  // --rho with algo=ma,admm), and no setting varies a data parameter (ParseGrid).
  for (const GridSetting& s : settings) {
    GridSetting probe = s;
    ResolveGridSetting(probe);
  }
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
    if (!as_flags) return SettingText(t.setting);
    std::string s;
    for (const auto& [name, value] : t.setting) s += StrCat(s.empty() ? "" : " ", "--", name, " ", value);
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
              << (FindBackend(options.pilot_backend).traits.projects_epochs ? ""
                                                                            : ", one timed epoch on the PIM emulator each")
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
  std::vector<std::unique_ptr<CommandFlags>> all_flags;
  auto flags_of = [&](CLI::App* command) -> CommandFlags& {
    all_flags.push_back(std::make_unique<CommandFlags>(command));
    return *all_flags.back();
  };
  // train, tune and plan set train's parameters through SetParam (which records which were given).
  RunConfig run_config;
  const CommandFlags::Setter set_run = [&](const std::string& name, const std::string& text) {
    SetParam(run_config, name, text);
  };

  CommandFlags& train = flags_of(
      app.add_subcommand("train", "train a linear classifier ('pimopt params' lists every flag)"));
  train.Add(Infos(RunParams()), set_run);
  train.command()->footer(
      "With no training flags (every 'auto'): features scaled to [0, 1] (folded back into the saved model), reg = "
      "1 / rows (LIBLINEAR's C = 1), batch and learning rate from the data, the rate divided by 4 at each plateau of "
      "the training objective and the run stopped at the 4th (--epochs is the bound); the chosen values and the "
      "reason to stop are printed and in the report. A given --lr is a constant rate for --epochs epochs. "
      "docs/algorithms.md \"Defaults\"; 'pimopt tune' selects --reg (or any parameter) by cross-validation.");

  TuneFlags tune_options;
  CommandFlags& tune = flags_of(app.add_subcommand(
      "tune",
      "select parameters by cross-validation: every setting of --grid is cross-validated (--cv folds, 5 by "
      "default), the best is trained on all the training rows (train's flags and outputs)"));
  tune.Add(TuneParams(), tune_options).Add(Infos(RunParams()), set_run);

  PlanOptions plan_options;
  PlanPrintFlags plan_print;
  CommandFlags& plan = flags_of(app.add_subcommand(
      "plan",
      "predict which algorithm reaches a target first on the emulated PIM system: per algorithm a short "
      "convergence pilot (CPU backend) and one timed epoch on the emulator, the modeled time per epoch and to the "
      "target, and a recommendation (train's flags set the data, model, profile, --dpus and the target)"));
  plan.Add(PlanParams(), plan_options).Add(PlanPrintParams(), plan_print).Add(Infos(RunParams()), set_run);

  PredictFlags predict_options;
  CommandFlags& predict = flags_of(app.add_subcommand("predict", "score data with a trained model"));
  predict.Add(PredictParams(), predict_options).Add(SourceParams(), predict_options.source);

  GenFlags gen_options;
  std::string gen_kind;
  CommandFlags& gen = flags_of(app.add_subcommand("gen", "generate a synthetic dataset with a planted model"));
  std::string kinds;
  std::vector<std::unique_ptr<SyntheticGenerator>> generators;  // their parameters' declarations, while parsing
  std::vector<const ParamInfo*> generator_infos;
  for (const std::string& name : SyntheticGeneratorNames()) {
    generators.push_back(MakeSyntheticGenerator(name));
    kinds += StrCat(kinds.empty() ? "" : "; ", name, ": ", generators.back()->description());
    for (const ParamInfo* info : generators.back()->params()) generator_infos.push_back(info);
  }
  gen.command()->add_option("kind", gen_kind, kinds)->required()->check(CLI::IsMember(SyntheticGeneratorNames()));
  SyntheticGenerator* chosen_generator = nullptr;  // set once the kind is known
  gen.Add(GenParams(), gen_options).Add(generator_infos, [&](const std::string& name, const std::string& text) {
    if (!chosen_generator->Set(name, text)) {
      throw ConfigError(StrCat("--", name), StrCat("not a parameter of gen ", gen_kind));
    }
  });

  ConvertFlags convert_options;
  CommandFlags& convert =
      flags_of(app.add_subcommand("convert", "convert between data formats (LIBSVM, IDX, binary)"));
  convert.command()->add_option("IN", convert_options.in, "input file or built-in name")->required();
  convert.command()->add_option("OUT", convert_options.out, "output file (.svm LIBSVM or .bin binary)")->required();
  convert.Add(ConvertParams(), convert_options).Add(SourceParams(), convert_options.source);

  std::string info_spec;
  SourceOptions info_source;
  CommandFlags& info = flags_of(app.add_subcommand("info", "describe a dataset"));
  info.command()->add_option("FILE", info_spec, "file or built-in name")->required();
  info.Add(SourceParams(), info_source);

  ParamsFlags params_options;
  CommandFlags& params = flags_of(app.add_subcommand(
      "params", "list every parameter of 'train' (or --command's): type, default, bounds, where it applies, what it "
                "affects"));
  params.Add(ParamsParams(), params_options);

  ProfileFlags profile_options;
  CommandFlags& profile = flags_of(app.add_subcommand(
      "profile", "list the hardware profiles, or show one's fields with their units and sources"));
  profile.command()->add_option("NAME", profile_options.name, "a profile (none: list them)");
  profile.Add(ProfileParams(), profile_options);

  ValidateFlags validate_options;
  CommandFlags& validate = flags_of(app.add_subcommand(
      "validate",
      "check the emulator's timing against PrIM kernels timed on UPMEM hardware: fit the timing model's "
      "free constants on all benchmarks but one, predict that one (leave one benchmark out)"));
  validate.Add(ValidateCommandParams(), validate_options)
      .Add(pim::validation::ValidateParams(), validate_options.run);

  PrimFlags prim_options;
  CommandFlags& prim = flags_of(app.add_subcommand(
      "prim", "run one ported PrIM benchmark on the emulator (checked against its host reference) and print its "
              "modeled times"));
  prim.command()->add_option("BENCHMARK", prim_options.benchmark,
                             "VA, RED, SEL, UNI, HST-S, HST-L, TS, SCAN-SSA, SCAN-RSS, TRNS, "
                             "MLP, GEMV, BS (none or --list: describe them)");
  prim.Add(PrimCommandParams(), prim_options).Add(pim::prim::RequestParams(), prim_options.request);

  CollectivesFlags collectives_options;
  CommandFlags& collectives = flags_of(app.add_subcommand(
      "collectives", "model every collective among DPUs on today's hardware by the SDK's host route and by "
                     "PID-Comm's software collectives, and print their times side by side"));
  collectives.Add(CollectivesCommandParams(), collectives_options);

  // Every command's parameters, for `pimopt params` (gen once per generator: its own table with gen's).
  CommandInfos command_infos;
  for (const auto& f : all_flags) {
    const std::string name = f->command()->get_name();
    if (name != "gen") {
      command_infos.emplace_back(name, f->infos());
      continue;
    }
    for (const auto& g : generators) {
      std::vector<const ParamInfo*> infos = Infos(GenParams());
      for (const ParamInfo* i : g->params()) infos.push_back(i);
      command_infos.emplace_back(StrCat("gen ", g->name()), infos);
    }
  }

  std::vector<std::string> commands;
  for (const auto& f : all_flags) commands.push_back(f->command()->get_name());
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
    for (const auto& f : all_flags) {
      if (!f->command()->parsed()) continue;
      if (f.get() == &gen) {
        for (const auto& g : generators) {
          if (g->name() == gen_kind) chosen_generator = g.get();
        }
      }
      f->Apply();  // every value through its declaration's checks, before any use
    }
    if (train.command()->parsed()) {
      if (LaunchedUnderMpi()) return RunTrainUnderMpi(argc, argv, run_config);
      return RunTrain(run_config, JoinArgs(argc, argv), SingleProcess());
    }
    if (tune.command()->parsed()) {
      if (LaunchedUnderMpi()) throw ConfigError("tune", "runs in one process (not under mpirun)");
      return RunTune(run_config, tune_options.grid, tune_options.metric, !tune_options.no_warm_start,
                     JoinArgs(argc, argv));
    }
    if (plan.command()->parsed()) {
      if (LaunchedUnderMpi()) throw ConfigError("plan", "runs in one process (not under mpirun)");
      return RunPlan(run_config, plan_options, plan_print.json);
    }
    if (predict.command()->parsed()) return RunPredict(predict_options);
    if (gen.command()->parsed()) return RunGen(*chosen_generator, gen_options);
    if (convert.command()->parsed()) return RunConvert(convert_options);
    if (info.command()->parsed()) return RunInfoCommand(info_spec, info_source);
    if (params.command()->parsed()) return RunParamsCommand(params_options, command_infos);
    if (profile.command()->parsed()) return RunProfileCommand(profile_options);
    if (validate.command()->parsed()) return RunValidateCommand(validate_options);
    if (prim.command()->parsed()) return RunPrimCommand(prim_options);
    if (collectives.command()->parsed()) return RunCollectivesCommand(collectives_options);
  } catch (...) {
    const Failure f = Classify(std::current_exception());
    std::cerr << "pimopt: " << f.message << "\n";
    return f.code;
  }
  return 1;
}

}  // namespace pimopt::cli
