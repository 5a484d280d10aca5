#include "pimopt/run/plan.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "pimopt/algorithms/algorithm.h"
#include "pimopt/algorithms/train.h"
#include "pimopt/backends/registry.h"
#include "pimopt/core/error.h"
#include "pimopt/core/stopwatch.h"
#include "pimopt/core/file_util.h"
#include "pimopt/core/thread_pool.h"
#include "pimopt/run/pipeline.h"
#include "pimopt/run/report.h"

namespace pimopt {
namespace {

using Clock = std::chrono::steady_clock;


// Train's flags that make no sense for a plan, and what to use instead.
void RefuseFlags(const RunConfig& base) {
  const std::pair<const char*, const char*> refused[] = {
      {"algo", "the plan compares algorithms: choose them with --algos"},
      {"backend", "the plan times the PIM backend (its convergence pilot runs on the CPU backend)"},
      {"out", "the plan trains no model to keep"},
      {"liblinear-out", "the plan trains no model to keep"},
      {"report", "use --json for the plan's numbers"},
      {"checkpoint", "the plan's pilots are short runs without checkpoints"},
      {"checkpoint-every", "the plan's pilots are short runs without checkpoints"},
      {"resume", "the plan's pilots are short runs without checkpoints"},
      {"cv", "the plan measures its target on the test set (or the training set without one)"},
      {"project-dpus", "the plan predicts at --dpus"},
      {"project-rows-per-dpu", "the plan predicts at the data's rows per DPU"}};
  for (const auto& [name, why] : refused) {
    if (base.given.count(name)) throw ConfigError(StrCat("--", name), StrCat("not a flag of 'pimopt plan': ", why));
  }
}

// The backend whose runs the plan predicts: the first registered one whose workers are devices and whose epochs
// project (the PIM backend).
const BackendRegistration& PlannedBackend() {
  for (const BackendRegistration* b : RegisteredBackends()) {
    if (b->traits.workers_are_devices && b->traits.projects_epochs && b->system) return *b;
  }
  throw InternalError("no registered backend projects its epochs: nothing to plan for");
}

// The run of `algorithm` the plan predicts: base's flags (those that apply to it), the planned backend, `dpus` DPUs
// for the distributed algorithms (one for sgd and mbsgd); resolved.
RunConfig AlgorithmConfig(const RunConfig& base, const std::string& algorithm, uint32_t dpus) {
  RunConfig c = base;
  c.given.erase("workers");
  c.given.erase("dpus");
  c.target_accuracy = c.target_auc = 0;  // the plan evaluates the target itself
  c.given.erase("target-accuracy");
  c.given.erase("target-auc");
  SetParam(c, "algo", algorithm);
  SetParam(c, "backend", PlannedBackend().traits.name);
  if (FindAlgorithm(algorithm).distributed) {
    SetParam(c, "workers", StrCat(dpus));
    SetParam(c, "dpus", StrCat(dpus));
  }
  for (const std::string& name : base.given) {
    if (!RunParams().Applies(RunParams().Get(name), c)) c.given.erase(name);
  }
  ResolveRunConfig(c, 1);
  return c;
}

TrainResult RunPilot(const TrainConfig& config, const Dataset& train, const Dataset* test, IBackend& backend,
                     ThreadPool& pool, bool evaluate_train) {
  const Partition part = Partition::Whole(train.num_rows(), config.workers);
  TrainOptions options;
  options.eval_pool = &pool;
  options.evaluate_train = evaluate_train;
  options.partition = &part;
  return Train(train, test, config, backend, options);
}

std::string StopText(const TrainResult& r) {
  if (!r.stalled.empty()) return "stalled certificate";
  if (!r.converged) return "epoch bound";
  return r.stopped_on_gap ? "duality gap at --tol" : "plateau schedule's last plateau";
}

// The settings a full run of the candidate uses, as flags.
std::string FlagsOf(const RunConfig& c, const TrainConfig& resolved) {
  const AlgorithmTraits& traits = FindAlgorithm(resolved.algorithm);
  std::string s = StrCat("--algo ", resolved.algorithm);
  if (traits.distributed) s += StrCat(" --dpus ", resolved.workers);
  s += StrCat(" --batch ", resolved.batch);
  // The parameters that shape this algorithm's epochs (its own table's, and --local-steps where it applies), as
  // given: an auto value stays auto (the full run resolves it as the pilot did).
  for (const auto& e : TrainParams().entries()) {
    // --local-steps and the algorithm's own table's (not --lr, which every SGD method shares).
    bool algorithm_own = e.info.name == "local-steps";
    for (const auto& [name, params] : RegisteredAlgorithmParams()) {
      algorithm_own = algorithm_own || (name == resolved.algorithm && params->table.Find(e.info.name) != nullptr);
    }
    if (!algorithm_own || !TrainParams().Applies(e, resolved)) continue;
    const bool automatic = e.info.IsAuto(e.get(c.train));
    s += StrCat(" --", e.info.name, " ", automatic ? "auto" : TrainParams().GetText(resolved, e.info.name));
  }
  // The backend's settings the user gave (profile, kernel, synchronization format and path, transfers, ...): the
  // timed epoch used them, so the recommended run must too.
  for (const std::string& name : c.given) {
    if (FindBackend(c.backend).params.Find(name) != nullptr) {
      s += StrCat(" --", name, " ", RunParams().GetText(c, name));
    }
  }
  return s;
}

std::vector<TargetReached> Targets(const std::string& metric, double target, const TrainResult& pilot) {
  RunConfig c;
  (metric == "auc" ? c.target_auc : c.target_accuracy) = target;
  return TimesToTargets(c, pilot);
}

}  // namespace

const ParamTable<PlanOptions>& PlanParams() {
  static const ParamTable<PlanOptions> table = [] {
    ParamTable<PlanOptions> t;
    const PlanOptions d;
    const std::string group = "Plan";
    t.AddCustom(
         "algos", ParamType::kText, NameListText(d.algorithms),
         [](const PlanOptions& o) -> ParamValue { return NameListText(o.algorithms); },
         [](PlanOptions& o, const ParamValue& v) {
           std::vector<std::string> names = ParseNameList(std::get<std::string>(v), "--algos");
           if (names.empty()) throw ConfigError("--algos", "names no algorithm");
           for (const std::string& a : names) {
             try {
               FindAlgorithm(a);
             } catch (const ConfigError& e) {
               throw ConfigError("--algos", e.detail());
             }
           }
           o.algorithms = std::move(names);
         })
        .Effect(ParamEffect::kNone)
        .Group(group)
        .Help("the algorithms to compare, a comma list (each once)");
    t.Add("pilot-epochs", &PlanOptions::pilot_epochs, d.pilot_epochs)
        .Min(1)
        .Unit("epochs")
        .Effect(ParamEffect::kNone)
        .Group(group)
        .Help("the convergence pilots' most epochs (and at most --epochs)");
    t.AddCustom("pilot-backend", ParamType::kChoice, d.pilot_backend,
                [](const PlanOptions& o) -> ParamValue { return o.pilot_backend; },
                [](PlanOptions& o, const ParamValue& v) { o.pilot_backend = std::get<std::string>(v); })
        .ListChoices([] {
          std::vector<ParamChoice> choices;
          for (const BackendRegistration* b : RegisteredBackends()) {
            choices.push_back({b->traits.name,
                               b->traits.projects_epochs
                                   ? "on the emulator, the full runs' own epochs (slower; they also time the epochs)"
                                   : StrCat("the convergence pilots on this backend (", b->traits.help, "; fast)"),
                               {}});
          }
          return choices;
        })
        .Effect(ParamEffect::kNone)
        .Group(group)
        .Help("where the convergence pilots run");
    t.Add("timing-dpus", &PlanOptions::timing_dpus, d.timing_dpus)
        .Min(1)
        .Max(std::numeric_limits<int32_t>::max())
        .Unit("DPUs")
        .Effect(ParamEffect::kNone)
        .Group(group)
        .Help("the most DPUs the timed epoch emulates; beyond, it runs this many DPUs with the run's rows per DPU "
              "and projects to --dpus");
    t.Add("timing-rows-per-dpu", &PlanOptions::timing_rows_per_dpu, d.timing_rows_per_dpu)
        .Min(1)
        .Max(std::numeric_limits<uint32_t>::max())
        .Unit("rows")
        .Effect(ParamEffect::kNone)
        .Group(group)
        .Help("the most rows per DPU of the timed epoch (kernel times are scaled to the run's)");
    return t;
  }();
  return table;
}

Plan MakePlan(const RunConfig& base, const PlanOptions& options,
              const std::function<void(const PlanCandidate&)>& on_candidate) {
  RefuseFlags(base);
  PlanParams().CheckValuesAsSet(options);  // every option through its declared checks, whoever filled the struct
  if (base.target_accuracy > 0 && base.target_auc > 0) {
    throw ConfigError("--target-auc", "the plan aims at one target: --target-accuracy or --target-auc");
  }
  Plan plan;
  plan.dpus = base.given.count("dpus")      ? base.dpus
              : base.given.count("workers") ? static_cast<uint32_t>(base.train.workers)
                                            : 64;
  // A plan for more DPUs than the profile has would recommend a run that `train` refuses: refused here, first.
  const BackendRegistration& planned = PlannedBackend();
  const BackendSystem system = planned.system(base.backend_options.Of(planned.traits.name));
  if (plan.dpus > system.most_workers) {
    throw ConfigError(base.given.count("dpus") ? "--dpus" : "--workers",
                      StrCat(plan.dpus, " DPUs: profile '", system.name, "' has ", system.most_workers));
  }
  plan.metric = base.target_auc > 0 ? "auc" : "accuracy";
  plan.target = base.target_auc > 0 ? base.target_auc : base.target_accuracy;
  plan.target_given = plan.target > 0;
  plan.pilot_backend = options.pilot_backend;

  std::vector<RunConfig> configs;
  for (const std::string& a : options.algorithms) configs.push_back(AlgorithmConfig(base, a, plan.dpus));
  for (const std::string& name : base.given) {
    bool somewhere = name == "workers" || name == "dpus" || name == "target-accuracy" || name == "target-auc";
    for (const RunConfig& c : configs) somewhere = somewhere || c.given.count(name) > 0;
    if (!somewhere) {
      const auto& entry = RunParams().Get(name);
      throw ConfigError(entry.info.Flag(), StrCat("only meaningful with ", entry.info.AppliesText(),
                                                  ", which no algorithm of --algos is"));
    }
  }
  ThreadPool pool(configs.front().threads);
  const RunData data = LoadRunData(configs.front(), SingleProcess(), pool);
  const Dataset* test = data.test ? &*data.test : nullptr;
  plan.data = data.train.source;
  plan.rows = data.train.num_rows();
  plan.features = data.train.num_features();
  plan.profile = system.name;
  plan.set = test ? "test" : "train";

  std::vector<TrainResult> pilots;
  for (RunConfig& c : configs) {
    const auto t0 = Clock::now();
    PlanCandidate cand;
    cand.algorithm = c.train.algorithm;
    cand.dpus = static_cast<uint32_t>(c.train.workers);
    // 1. Convergence: the same training configuration on the CPU backend (float) or the emulator.
    TrainConfig pilot_config = c.train;
    pilot_config.epochs = std::min(c.train.epochs, options.pilot_epochs);
    std::unique_ptr<IBackend> pilot_backend = MakeBackend(options.pilot_backend, pool, c.backend_options);
    // A pilot on a backend that projects its epochs is the run itself: it also times it.
    const EpochProjector* pilot_projector = pilot_backend->projector();
    TrainResult pilot = RunPilot(pilot_config, data.train, test, *pilot_backend, pool, test == nullptr);
    cand.pilot_epochs = static_cast<int>(pilot.epochs.size());
    cand.pilot_stop = StopText(pilot);
    cand.flags = FlagsOf(c, pilot.config);

    // 2. Timing: the emulated pilot's epochs, or one epoch on the emulator with the pilot's resolved settings (a
    // constant rate: the schedule does not change the work), at the run's size or on fewer DPUs holding the run's
    // rows per DPU, projected.
    const uint64_t rows = data.train.num_rows(), workers = c.train.workers;
    const uint64_t rows_per_dpu = (rows + workers - 1) / workers;
    const uint32_t timing_dpus = static_cast<uint32_t>(std::min<uint64_t>(workers, options.timing_dpus));
    const uint64_t timing_rows_per_dpu = std::min(rows_per_dpu, options.timing_rows_per_dpu);
    cand.timed_at_run_size =
        pilot_projector != nullptr || (timing_dpus == workers && timing_rows_per_dpu == rows_per_dpu);
    if (pilot_projector != nullptr) {
      cand.epoch = pilot_projector->Project(static_cast<uint32_t>(workers), rows_per_dpu, cand.pilot_epochs);
      cand.epoch.CheckFinite();
    } else {
      TrainConfig timing = pilot.config;
      timing.epochs = 1;
      timing.schedule = LrSchedule::kConstant;
      timing.tol = 0;
      timing.workers = static_cast<int>(timing_dpus);
      if (!cand.timed_at_run_size && FindAlgorithm(timing.algorithm).batch_meaning == BatchMeaning::kGlobal &&
          FindAlgorithm(timing.algorithm).distributed) {
        // GA-SGD: the run's rows per DPU per step.
        timing.batch = std::max<uint64_t>(
            1, static_cast<uint64_t>(std::llround(static_cast<double>(timing.batch) * timing_dpus / workers)));
      }
      std::unique_ptr<IBackend> timed = MakeBackend(c.backend, pool, c.backend_options);
      PIMOPT_CHECK(timed->projector() != nullptr, "the planned backend projects no epochs");
      if (cand.timed_at_run_size) {
        RunPilot(timing, data.train, nullptr, *timed, pool, false);
      } else {
        std::vector<uint32_t> subset(
            static_cast<size_t>(std::min<uint64_t>(rows, uint64_t{timing_dpus} * timing_rows_per_dpu)));
        std::iota(subset.begin(), subset.end(), 0u);
        const Dataset timing_rows = data.train.SelectRows(subset);
        RunPilot(timing, timing_rows, nullptr, *timed, pool, false);
      }
      cand.epoch = timed->projector()->Project(static_cast<uint32_t>(workers), rows_per_dpu, 1);
      cand.epoch.CheckFinite();
    }
    cand.pilot_wall_s = SecondsSince(t0);
    pilots.push_back(std::move(pilot));
    plan.candidates.push_back(cand);
    if (on_candidate) on_candidate(plan.candidates.back());
  }
  if (!plan.target_given) {
    // Half a point below the best value any pilot reached.
    double best = 0;
    for (const TrainResult& p : pilots) best = std::max(best, Targets(plan.metric, 1, p).front().best);
    plan.target = std::floor((best - 0.005) * 1e4) / 1e4;
  }
  // An emulated pilot is the run itself: its modeled time to the target is the run's (its epochs may differ in
  // modeled time, the kernels' costs following the data); a CPU pilot's epochs to the target take the timed epoch.
  std::vector<double> pilot_modeled_s(pilots.size(), -1);
  for (size_t i = 0; i < pilots.size(); ++i) {
    const TargetReached t = Targets(plan.metric, plan.target, pilots[i]).front();
    PlanCandidate& cand = plan.candidates[i];
    cand.reached = t.reached;
    cand.epochs_to_target = t.epoch;
    cand.best_metric = t.best;
    if (FindBackend(options.pilot_backend).traits.projects_epochs) pilot_modeled_s[i] = t.modeled_s;
  }
  for (size_t i = 0; i < plan.candidates.size(); ++i) {
    PlanCandidate& cand = plan.candidates[i];
    if (!cand.Ranked()) continue;  // not reached, or no epoch time: no prediction, no rank
    cand.time_to_target_s =
        pilot_modeled_s[i] >= 0 ? pilot_modeled_s[i] : cand.epochs_to_target * cand.epoch.epoch_s;
    cand.bytes_to_target =
        cand.epochs_to_target * (cand.epoch.cpu_to_dpu_bytes + cand.epoch.dpu_to_cpu_bytes + cand.epoch.link_bytes);
    if (plan.best < 0 || cand.time_to_target_s < plan.candidates[plan.best].time_to_target_s) {
      plan.best = static_cast<int>(i);
    }
  }
  return plan;
}

nlohmann::json PlanJson(const Plan& plan) {
  nlohmann::json candidates = nlohmann::json::array();
  for (const PlanCandidate& c : plan.candidates) {
    nlohmann::json j = {{"algorithm", c.algorithm},
                        {"dpus", c.dpus},
                        {"flags", c.flags},
                        {"epoch", ProjectionJson(c.epoch)},
                        {"timed_at_run_size", c.timed_at_run_size},
                        {"pilot_epochs", c.pilot_epochs},
                        {"pilot_stop", c.pilot_stop},
                        {"reached", c.reached},
                        {"timed", c.Timed()},
                        {"ranked", c.Ranked()},
                        {"best_metric", c.best_metric},
                        {"pilot_wall_s", c.pilot_wall_s}};
    if (c.reached) j["epochs_to_target"] = c.epochs_to_target;
    if (c.Ranked()) {
      j["time_to_target_s"] = c.time_to_target_s;
      j["bytes_to_target"] = c.bytes_to_target;
    } else {
      j["time_to_target_s"] = nullptr;  // never a number built from a missing figure
    }
    candidates.push_back(std::move(j));
  }
  nlohmann::json j = {{"data", plan.data},
                      {"rows", plan.rows},
                      {"features", plan.features},
                      {"profile", plan.profile},
                      {"dpus", plan.dpus},
                      {"metric", plan.metric},
                      {"set", plan.set},
                      {"target", plan.target},
                      {"target_given", plan.target_given},
                      {"candidates", candidates},
                      {"pilot_backend", plan.pilot_backend},
                      {"assumes", FindBackend(plan.pilot_backend).traits.projects_epochs
                                      ? "the full run behaves as its first pilot_epochs epochs did (the pilot is "
                                        "the same run on the emulator)"
                                      : "the fixed-point PIM run needs the epochs the float (CPU backend) pilot "
                                        "needed; every epoch costs the modeled time of the timed one"}};
  if (plan.best >= 0) {
    j["recommended"] = plan.candidates[plan.best].algorithm;
    j["recommended_flags"] = plan.candidates[plan.best].flags;
  } else {
    j["recommended"] = nullptr;
  }
  return j;
}

std::string FormatPlan(const Plan& plan) {
  std::string out;
  char buf[512];
  std::snprintf(buf, sizeof(buf), "%-6s %5s %10s %9s %9s %9s %9s %9s %11s %9s %12s %10s\n", "algo", "DPUs", "s/epoch",
                "CPU->DPU", "kernel", "DPU->CPU", "host", "exchange", "MB/epoch", "epochs", "time_s", "best");
  out += buf;
  for (const PlanCandidate& c : plan.candidates) {
    const EpochProjection& e = c.epoch;
    // Not reached: ">N" when the pilot ran out of epochs, "never" when it converged short of the target.
    const std::string epochs = c.reached                       ? StrCat(c.epochs_to_target)
                               : c.pilot_stop == "epoch bound" ? StrCat(">", c.pilot_epochs)
                                                               : std::string("never");
    const std::string time = c.Ranked() ? StrCat(std::round(c.time_to_target_s * 1e4) / 1e4)
                             : c.reached  ? std::string("untimed")
                                          : std::string("-");
    const std::string epoch_s = c.Timed() ? StrCat(std::round(e.epoch_s * 1e4) / 1e4) : std::string("untimed");
    // A figure the timing pilot could not give (the synchronizations of an untimed projection) shows as "-".
    auto cell = [](double v, int decimals) {
      char text[32];
      if (!std::isfinite(v)) return std::string("-");
      std::snprintf(text, sizeof(text), "%.*f", decimals, v);
      return std::string(text);
    };
    std::snprintf(buf, sizeof(buf), "%-6s %5u %10s %9s %9s %9s %9s %9s %11s %9s %12s %10.4f%s\n",
                  c.algorithm.c_str(), c.dpus, epoch_s.c_str(), cell(e.cpu_to_dpu_s, 4).c_str(),
                  cell(e.kernel_s + e.launch_overhead_s, 4).c_str(), cell(e.dpu_to_cpu_s, 4).c_str(),
                  cell(e.host_reduction_s, 4).c_str(), cell(e.link_s + e.collective_s, 4).c_str(),
                  cell((e.cpu_to_dpu_bytes + e.dpu_to_cpu_bytes + e.link_bytes) / 1e6, 3).c_str(), epochs.c_str(),
                  time.c_str(), c.best_metric, c.timed_at_run_size ? "" : "  (projected)");
    out += buf;
    if (!c.epoch.note.empty()) out += StrCat("       ", c.epoch.note, "\n");
  }
  if (plan.best < 0) {
    bool untimed = false;
    for (const PlanCandidate& c : plan.candidates) untimed = untimed || (c.reached && !c.Timed());
    out += untimed ? StrCat("no algorithm both reached ", plan.set, " ", plan.metric, " ", plan.target,
                            " in its pilot and has a timed epoch: nothing is recommended\n")
                   : StrCat("no algorithm reached ", plan.set, " ", plan.metric, " ", plan.target,
                            " in its pilot: raise --pilot-epochs, or lower the target\n");
    return out;
  }
  const PlanCandidate& best = plan.candidates[plan.best];
  out += StrCat("recommended: ", best.flags, " (predicted ", std::round(best.time_to_target_s * 1e4) / 1e4,
                " s of modeled PIM time to ", plan.set, " ", plan.metric, " ", plan.target, " in ",
                best.epochs_to_target, " epochs");
  int second = -1;
  for (size_t i = 0; i < plan.candidates.size(); ++i) {
    const PlanCandidate& c = plan.candidates[i];
    if (static_cast<int>(i) == plan.best || !c.Ranked()) continue;
    if (second < 0 || c.time_to_target_s < plan.candidates[second].time_to_target_s) second = static_cast<int>(i);
  }
  if (second >= 0) {
    const PlanCandidate& c = plan.candidates[second];
    out += StrCat("; next: ", c.algorithm, " ", std::round(c.time_to_target_s * 1e4) / 1e4, " s, ",
                  std::round(c.time_to_target_s / best.time_to_target_s * 100) / 100, "x");
  }
  out += ")\n";
  return out;
}

}  // namespace pimopt
