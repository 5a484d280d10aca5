#include "pimopt/run/run_config.h"

#include <filesystem>

#include "pimopt/algorithms/algorithm.h"
#include "pimopt/core/error.h"
#include "pimopt/core/file_util.h"
#include "pimopt/core/thread_pool.h"

namespace pimopt {
namespace {

ParamTable<RunConfig> MakeRunParams() {
  ParamTable<RunConfig> t;
  const std::string data = kDataParamGroup, run = "Run", output = "Output";
  t.Add("data", &RunConfig::data, "")
      .Required()
      .Effect(ParamEffect::kNone)  // what it holds is fingerprinted, not where it lies
      .Group(data)
      .Help("training data: a LIBSVM, IDX (gz) or pimopt binary file, or a built-in name (fashion-mnist, "
            "dense:..., sparse:...); checkpoints record its content, not its path");
  t.Add("test", &RunConfig::test, "")
      .Effect(ParamEffect::kNone)
      .DefaultNote("the built-in's own test set; none for files")
      .Group(data)
      .Help("test data, evaluated after every epoch");
  t.Add("test-fraction", &RunConfig::test_fraction, 0.0)
      .Min(0, true)
      .Max(1, true)
      .DefaultNote("none")
      .Group(data)
      .Help("hold out a seeded random fraction of --data as the test set (instead of --test)");
  t.AddChoice("scale", &RunConfig::scale, ScaleChoice::kMinMax,
              std::vector<std::pair<ParamChoice, ScaleChoice>>{
                  {{"minmax", "each feature to [0, 1] by the training set's range (sparse: divided by max |x|)", {}},
                   ScaleChoice::kMinMax},
                  {{"none", "features as they are", {}}, ScaleChoice::kNone}})
      .Noun("scaling")
      .Group(data)
      .Help("per-feature scaling fitted on the training set; the saved model (--out, --liblinear-out) has it "
            "folded into its weights and bias, so predict and LIBLINEAR score raw features");
  t.Include(SourceParams(), &RunConfig::source);
  t.Include(TrainParams(), &RunConfig::train);
  t.AddCustom("backend", ParamType::kChoice, std::string("cpu"),
              [](const RunConfig& c) -> ParamValue { return c.backend; },
              [](RunConfig& c, const ParamValue& v) { c.backend = std::get<std::string>(v); })
      .ListChoices(BackendChoices)
      .Hint("mpi",
            StrCat("there is no 'mpi' backend: start pimopt under mpirun with --backend ",
                   JoinNames(BackendNamesWith([](const BackendTraits&) { return true; }), " or "),
                   ", e.g. 'mpirun -np 4 pimopt train --backend cpu ...' (each rank runs that backend on its workers)"))
      .Noun("backend")
      .Group(run)
      .Help("where the workers run; under mpirun every rank runs this backend on its workers");
  AddThreadsParam(t, &RunConfig::threads,
                  "host threads (per rank under mpirun); a step uses as many as pay for their wake-up, at most the CPUs "
                  "this process may run on (docs/cpu-backend.md); never changes the result")
      .Group(run);
  t.Add("cv", &RunConfig::cv_folds, 0)
      .Min(2)
      .Unit("folds")
      .Effect(ParamEffect::kNone)
      .DefaultNote("none")
      .Group(run)
      .Help(
          "first report K-fold cross-validated test metrics of this configuration on the training set (folds "
          "stratified by label and seeded by --seed; as LIBLINEAR's -v; with --scale minmax each fold scaled by "
          "its own training rows), then train on all of it as usual");
  // The parameters of backends whose workers are devices of a machine the run sizes (the PIM backend's DPUs).
  const std::vector<std::string> devices =
      BackendNamesWith([](const BackendTraits& b) { return b.workers_are_devices; });
  const std::vector<std::string> projecting =
      BackendNamesWith([](const BackendTraits& b) { return b.workers_are_devices && b.projects_epochs; });
  const std::string device_group = devices.empty() ? run : FindBackend(devices.front()).traits.param_group;
  t.Add("dpus", &RunConfig::dpus, 0)
      .Min(1)
      .Max(std::numeric_limits<int32_t>::max())  // --workers' range: every DPU is a worker
      .Unit("DPUs")
      .DefaultNote("= --workers")
      .AppliesWhen("backend", devices)
      .Group(device_group)
      .Help("DPUs = workers (ga, ma, admm; sgd and mbsgd run on 1 DPU); under mpirun the total");
  // Each backend's own parameters (they declare the backend they apply to).
  for (const BackendRegistration* b : RegisteredBackends()) {
    const std::string name = b->traits.name;
    t.Include(b->params, [name](auto& c) -> auto& { return c.backend_options.Of(name); });
  }
  t.Add("project-dpus", &RunConfig::project_dpus, 0)
      .Min(1)
      .Unit("DPUs")
      .Effect(ParamEffect::kNone)
      .DefaultNote("none")
      .AppliesWhen("backend", projecting)
      .Group(device_group)
      .Help("also report the modeled epoch time extrapolated to this many DPUs (weak scaling; one process only)");
  t.Add("project-rows-per-dpu", &RunConfig::project_rows_per_dpu, 0)
      .Min(1)
      .Unit("rows")
      .Effect(ParamEffect::kNone)
      .DefaultNote("this run's")
      .AppliesWhen("backend", projecting)
      .Group(device_group)
      .Help("... and this many rows per DPU (e.g. PIM-Opt's 3,328 on YFCC, 196,608 on Criteo)");
  t.Add("out", &RunConfig::out, "").Effect(ParamEffect::kNone).Group(output).Help(
      "write the trained model here (pimopt text format)");
  t.Add("liblinear-out", &RunConfig::liblinear_out, "")
      .Effect(ParamEffect::kNone)
      .Group(output)
      .Help("also write the model in LIBLINEAR's format");
  t.Add("report", &RunConfig::report, "").Effect(ParamEffect::kNone).Group(output).Help(
      "write the JSON report here: config, per-epoch metrics, final metrics, time by phase, traffic");
  t.Add("checkpoint", &RunConfig::checkpoint, "")
      .Effect(ParamEffect::kNone)
      .Group(output)
      .Help("write the training state here (atomically) every --checkpoint-every epochs and after the last");
  t.Add("checkpoint-every", &RunConfig::checkpoint_every, 1)
      .Min(1)
      .Unit("epochs")
      .Effect(ParamEffect::kNone)
      .Group(output)
      .Help("epochs between checkpoints");
  t.Add("resume", &RunConfig::resume, false)
      .Effect(ParamEffect::kNone)
      .Group(output)
      .Help("continue from --checkpoint if it exists; it must come from a run with the same options and data "
            "(a different one is refused, naming the option)");
  t.Add("no-train-metrics", &RunConfig::no_train_metrics, false)
      .Effect(ParamEffect::kNone)
      .Group(output)
      .Help(
          "evaluate the training set's accuracy and AUC only after the last epoch; at the epochs a run that stops "
          "on its objective or certificate (--tol) checks, it computes the training objective alone (no AUC "
          "sort); without --tol every epoch's metrics are skipped but the last's");
  t.Add("train-metrics-every-epoch", &RunConfig::train_metrics_every_epoch, false)
      .Effect(ParamEffect::kNone)  // which epochs are evaluated; a certified stop either way (as --no-train-metrics)
      .Group(output)
      .Help(
          "evaluate the training set's metrics (objective, accuracy, AUC) after every epoch, where the stopping "
          "rule then looks every epoch; without it a run that stops on its certificate (--tol with L2, no plateau "
          "schedule) evaluates them at the epochs its stopping rule checks: every epoch up to 32, then multiples "
          "of epoch / 32, fewer once the gap's rate is known (docs/algorithms.md \"When a run stops\"), so it "
          "spends no pass over the training set on the epochs in between and may stop a few epochs later, at a "
          "model of its own (a --target-accuracy or --target-auc measured on the training set, without a test "
          "set, keeps every epoch's)");
  t.Add("quiet", &RunConfig::quiet, false).Short("-q").Effect(ParamEffect::kNone).Group(output).Help(
      "print only the summary");
  t.Add("target-accuracy", &RunConfig::target_accuracy, 0.0)
      .Min(0, true)
      .Max(1)
      .Effect(ParamEffect::kNone)
      .DefaultNote("none")
      .Group(output)
      .Help("report when the test accuracy (the training accuracy without a test set) first reaches this: the "
            "epoch, the training wall time and, on the PIM backend, the modeled time until then");
  t.Add("target-auc", &RunConfig::target_auc, 0.0)
      .Min(0, true)
      .Max(1)
      .Effect(ParamEffect::kNone)
      .DefaultNote("none")
      .Group(output)
      .Help("the same for the test AUC (Criteo-style runs compare AUC)");
  return t;
}

}  // namespace

const ParamTable<RunConfig>& RunParams() {
  static const ParamTable<RunConfig> table = MakeRunParams();
  return table;
}

RunConfig::RunConfig() { RunParams().ApplyDefaults(*this); }

void SetParam(RunConfig& config, std::string_view name, std::string_view text) {
  RunParams().SetText(config, name, text);
  config.given.insert(std::string(name));
}

void ResolveRunConfig(RunConfig& c, int processes, DataOrigin origin) {
  const ParamTable<RunConfig>& table = RunParams();
  auto given = [&](const char* name) { return c.given.count(name) > 0; };
  // The first parameter given that does not apply to `config` (nullptr: none).
  auto first_inapplicable = [&](const RunConfig& config) -> const ParamInfo* {
    for (const auto& e : table.entries()) {
      if (given(e.info.name.c_str()) && !table.Applies(e, config)) return &e.info;
    }
    return nullptr;
  };
  // --algo auto (the default): newton for the logistic loss in one process on a backend with its verbs (every core,
  // deterministically), unless a flag given asks for cocoa's K workers or does not apply to newton; else cocoa.
  if (c.train.algorithm_auto) {
    c.train.algorithm_auto = false;
    c.train.algorithm = "cocoa";
    if (c.train.objective.loss == LossKind::kLogistic && FindBackend(c.backend).traits.second_order &&
        processes == 1 && !given("workers") && !given("batch")) {
      RunConfig trial = c;
      trial.train.algorithm = "newton";
      if (first_inapplicable(trial) == nullptr) c.train.algorithm = "newton";
    }
  }
  if (const ParamInfo* info = first_inapplicable(c)) {
    throw ConfigError(info->Flag(), StrCat("only meaningful with ", info->AppliesText()));
  }
  // Data: the names of built-ins (files are checked when they are read).
  if (origin == DataOrigin::kInMemory) {
    for (const char* name : {"data", "test", "test-fraction", "input-format", "positive-classes"}) {
      if (given(name)) throw ConfigError(StrCat("--", name), "does not apply: the data are the arrays passed in");
    }
  } else {
    if (c.data.empty()) throw ConfigError("--data", "is required");
    CheckDataSpec(c.data);
    if (!c.test.empty()) CheckDataSpec(c.test);
    if (!c.test.empty() && c.test_fraction > 0) {
      throw ConfigError("--test-fraction", "contradicts --test: give one or the other");
    }
  }
  if (c.no_train_metrics && c.train_metrics_every_epoch) {
    throw ConfigError("--train-metrics-every-epoch", "contradicts --no-train-metrics: give one or the other");
  }
  // The algorithm: --dpus, the defaults it declares, its rules.
  const AlgorithmTraits& traits = c.train.traits();
  const BackendRegistration& backend = FindBackend(c.backend);
  if (backend.traits.workers_are_devices && given("dpus")) {
    if (given("workers") && static_cast<int64_t>(c.dpus) != c.train.workers) {
      throw ConfigError("--dpus", StrCat("contradicts --workers (on the ", c.backend, " backend every worker is a DPU)"));
    }
    if (!traits.distributed && c.dpus != 1) {
      throw ConfigError("--dpus", StrCat(c.train.algorithm, " runs on one DPU; use ", DistributedAlgorithmNames(),
                                         " for more"));
    }
    c.train.workers = static_cast<int>(c.dpus);
  }
  // What the algorithm needs of the backend: a capability the backend declares, or a refusal naming those that do.
  auto require = [&](bool needed, bool BackendTraits::*capability, const char* what, const char* lacking) {
    if (!needed || backend.traits.*capability) return;
    throw ConfigError("--algo", StrCat(c.train.algorithm, " ", what, ", which the ", c.backend, " backend ", lacking,
                                       ": use --backend ",
                                       JoinNames(BackendNamesWith([&](const BackendTraits& t) { return t.*capability; }),
                                                 " or ")));
  };
  require(traits.row_duals, &BackendTraits::keeps_row_duals, "keeps a dual per row", "does not");
  require(traits.second_order, &BackendTraits::second_order, "takes full-batch Newton steps", "does not offer");
  // Under mpirun without --workers: at least one worker per rank (cocoa's default of one would be refused).
  if (processes > 1 && c.train.workers == 0 && traits.distributed) {
    c.train.workers = std::max(traits.default_workers, processes);
  }
  c.train.ResolveDefaults();
  if (backend.traits.workers_are_devices) c.dpus = static_cast<uint32_t>(c.train.workers);
  c.train.ValidateWithoutData();
  // Processes.
  c.train.CheckProcesses(processes);
  if (processes > 1 && given("cv")) throw ConfigError("--cv", "cross-validation runs in one process (not under mpirun)");
  if (processes > 1 && (given("project-dpus") || given("project-rows-per-dpu"))) {
    throw ConfigError(given("project-dpus") ? "--project-dpus" : "--project-rows-per-dpu",
                      "projection runs in one process (not under mpirun)");
  }
  // The backend.
  backend.resolve(c.backend_options.Of(c.backend), c.threads);
  // Outputs: writable, distinct, not an input, and --resume with a checkpoint.
  std::vector<std::pair<const char*, std::string>> outputs;  // (flag, path)
  for (const auto& [flag, path] : {std::pair<const char*, const std::string*>{"--out", &c.out},
                                   {"--liblinear-out", &c.liblinear_out},
                                   {"--report", &c.report},
                                   {"--checkpoint", &c.checkpoint}}) {
    CheckOutputPath(*path, flag);
    if (path->empty()) continue;
    std::error_code ec;
    const bool device = std::filesystem::exists(*path, ec) && !std::filesystem::is_regular_file(*path, ec);
    for (const auto& [other_flag, other] : outputs) {  // two outputs may share a device (/dev/null), not a file
      if (!device && SameFile(*path, other)) {
        throw ConfigError(flag, StrCat("'", *path, "' is also the file of ", other_flag));
      }
    }
    CheckOutputIsNotInput(*path, flag, c.data, "--data");
    CheckOutputIsNotInput(*path, flag, c.test, "--test");
    outputs.emplace_back(flag, *path);
  }
  if (c.resume && c.checkpoint.empty()) throw ConfigError("--resume", "needs --checkpoint FILE");
  if (given("checkpoint-every") && c.checkpoint.empty()) {
    throw ConfigError("--checkpoint-every", "needs --checkpoint FILE (without it no checkpoint is written)");
  }
}

OptionList ResumeOptions(const RunConfig& config) {
  OptionList options;
  for (auto& [name, value] : RunParams().Describe(config, {ParamEffect::kResult, ParamEffect::kModeledTime})) {
    if (!RunParams().Get(name).info.may_change_on_resume) options.emplace_back(std::move(name), std::move(value));
  }
  return options;
}

OptionList ResultOptions(const RunConfig& config) { return RunParams().Describe(config, {ParamEffect::kResult}); }

}  // namespace pimopt
