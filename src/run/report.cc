#include "pimopt/run/report.h"

#include <cmath>
#include <cstdio>
#include <cstring>

#include "pimopt/algorithms/algorithm.h"
#include "pimopt/backends/registry.h"
#include "pimopt/core/atomic_file.h"
#include "pimopt/core/file_util.h"
#include "pimopt/run/pipeline.h"

namespace pimopt {

using nlohmann::json;

namespace {

json Number(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

json ValueToJson(const ParamValue& v) {
  return std::visit([](const auto& x) { return json(x); }, v);
}

json DatasetToJson(const Dataset& d) {
  return json{{"source", d.source},
              {"rows", d.num_rows()},
              {"features", d.num_features()},
              {"storage", d.is_sparse() ? "sparse" : "dense"},
              {"stored_entries", d.num_stored()},
              {"positives", d.CountPositives()}};
}

json TrafficToJson(const TrafficCounters& t) {
  return json{{"host_to_workers_bytes", t.to_workers_bytes},
              {"workers_to_host_bytes", t.from_workers_bytes},
              {"syncs", t.syncs},
              {"mpi_bytes", t.mpi_bytes}};
}

std::string Cell(double v) { return std::isfinite(v) ? StrCat(std::round(v * 1e4) / 1e4) : std::string("-"); }
// v with exactly `digits` decimals (the cross-validation and stopping lines).
std::string FormatFixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, v);
  return buf;
}

}  // namespace

json ConfigToJson(const RunConfig& config) {
  json out = json::object();
  const ParamTable<RunConfig>& table = RunParams();
  for (const auto& e : table.entries()) {
    if (!table.Applies(e, config)) continue;
    const ParamValue value = e.get(config);
    out[e.info.name] = e.info.IsAuto(value) ? json("auto") : ValueToJson(value);
  }
  return out;
}

json MetricsToJson(const Metrics& m) {
  return json{{"rows", m.rows},
              {"accuracy", Number(m.accuracy)},
              {"auc", Number(m.auc)},
              {"log_loss", Number(m.log_loss)},
              {"hinge_loss", Number(m.hinge_loss)},
              {"objective", Number(m.objective)}};
}

// The metrics of a run whose objective regularizes the bias: also the bias's term and the objective without it.
json MetricsToJson(const Metrics& m, const Objective& objective) {
  json j = MetricsToJson(m);
  if (objective.regularize_bias) {
    j["bias_penalty"] = Number(m.bias_penalty);
    j["objective_without_bias_penalty"] = Number(m.objective - m.bias_penalty);
  }
  return j;
}

json BuildReport(const ReportInputs& in) {
  const RunConfig& config = *in.config;
  const TrainResult& result = *in.result;
  const AlgorithmTraits& traits = config.train.traits();
  json epochs = json::array();
  for (const EpochRecord& r : result.epochs) {
    json e{{"epoch", r.epoch},
           {"lr", r.lr},
           {"steps", r.info.steps},
           {"syncs", r.info.syncs},
           {"train_seconds", r.train_seconds},
           {"eval_seconds", r.eval_seconds}};
    if (r.train.rows > 0) e["train"] = MetricsToJson(r.train, result.config.objective);  // else not evaluated
    if (r.test) e["test"] = MetricsToJson(*r.test, result.config.objective);
    json phases = json::object();
    for (const auto& [phase, seconds] : r.phase_seconds) phases[phase] = seconds;
    e["phases_seconds"] = std::move(phases);
    e["traffic"] = TrafficToJson(r.traffic);
    if (r.gap.available) {
      e["duality_gap"] = Number(r.gap.gap());
      e["relative_duality_gap"] = Number(r.gap.relative());
    }
    for (const EpochFigure& f : r.info.figures) e[f.key] = Number(f.value);  // the algorithm's own (ADMM's residuals)
    epochs.push_back(std::move(e));
  }
  json report{{"pimopt_report_version", 2},
              {"backend", config.backend},
              {"threads", in.pool ? in.pool->NumThreads() : 1},
              {"config", ConfigToJson(config)},
              {"algorithm",
               {{"name", traits.name},
                {"title", traits.title},
                {"batch_meaning", BatchMeaningText(traits.batch_meaning)},
                {"distributed", traits.distributed}}},
              {"epochs", std::move(epochs)}};
  if (in.pool) {
    report["host_threads"] = {{"threads", in.pool->NumThreads()},
                              {"usable_per_phase", in.pool->UsableThreads()},
                              {"phase_fixed_ns", Number(in.pool->phase_cost().fixed_ns)},
                              {"phase_per_thread_ns", Number(in.pool->phase_cost().per_thread_ns)}};
  }
  if (in.data) {
    report["train_data"] = DatasetToJson(in.data->train);
    if (in.data->test) report["test_data"] = DatasetToJson(*in.data->test);
  }
  const EpochRecord& last = result.epochs.back();
  json final_metrics{{"train", MetricsToJson(last.train, result.config.objective)}};
  if (last.test) final_metrics["test"] = MetricsToJson(*last.test, result.config.objective);
  report["final"] = std::move(final_metrics);
  const double load_seconds = in.data ? in.data->load_seconds : 0.0;
  json phases = json::object();
  for (const auto& [phase, seconds] : result.phase_seconds) phases[phase] = seconds;
  phases["evaluation"] = result.eval_seconds;
  phases["data_load"] = load_seconds;
  report["time"] = json{{"train_wall_seconds", result.train_seconds},
                        {"eval_wall_seconds", result.eval_seconds},
                        {"load_wall_seconds", load_seconds},
                        {"seconds_per_epoch", result.train_seconds / static_cast<double>(result.epochs.size())},
                        {"phases_seconds", std::move(phases)},
                        // The evaluations ran on a second thread beside the epochs: eval_wall_seconds overlaps
                        // train_wall_seconds (docs/algorithms.md "Evaluations beside the epochs").
                        {"evaluations_beside_epochs", result.evaluations_beside_epochs}};
  report["traffic"] = TrafficToJson(result.traffic);
  for (const auto& [key, value] : in.backend_counters) report["backend_counters"][key] = value;
  report["resumed_from_epoch"] = result.resumed_from_epoch;
  const int last_epoch = result.epochs.empty() ? result.resumed_from_epoch : result.epochs.back().epoch;
  const bool plateau = result.config.schedule == LrSchedule::kPlateau;
  report["stopped"] = {{"reason", !result.stalled.empty() ? "stalled"
                                  : !result.converged     ? "epochs"
                                  : result.stopped_on_gap ? "gap"
                                  : plateau               ? "plateau"
                                                          : "tolerance"},
                       {"relative_duality_gap",
                        result.epochs.empty() ? json(nullptr) : Number(result.epochs.back().gap.relative())},
                       {"epoch", last_epoch},
                       {"max_epochs", config.train.epochs},
                       {"tol", result.config.tol},
                       {"plateaus", result.plateaus},
                       {"relative_objective_change", Number(result.last_relative_change)}};
  if (!result.stalled.empty()) report["stopped"]["stalled_because"] = result.stalled;
  // What --lr auto and --reg auto became (the values the run trained with).
  // An algorithm without a learning rate (cocoa) gets none (null), not the unused default.
  report["resolved"] = {{"lr", result.config.traits().uses_learning_rate ? json(result.config.lr) : json(nullptr)},
                        {"reg", result.config.objective.l2},
                        {"workers", result.config.workers},
                        {"batch", result.config.batch}};
  if (in.projection) report["projection"] = ProjectionJson(*in.projection);
  if (in.cross_validation) {
    const CrossValidation& cv = *in.cross_validation;
    json folds = json::array();
    for (const Metrics& m : cv.per_fold) folds.push_back(MetricsToJson(m));
    report["cross_validation"] = {
        {"folds", cv.folds},         {"stratified_by_label", true},    {"seed", config.train.seed},
        {"per_fold", folds},         {"mean", MetricsToJson(cv.mean)}, {"stddev", MetricsToJson(cv.stddev)},
        {"wall_seconds", cv.seconds}};
  }
  if (const auto targets = TimesToTargets(config, result); !targets.empty()) {
    json list = json::array();
    for (const TargetReached& t : targets) {
      json j{{"metric", t.metric},
             {"set", t.set},
             {"target", t.target},
             {"reached", t.reached},
             {"best", t.measured ? json(t.best) : json(nullptr)}};
      if (t.counted_from_epoch > 1) j["counted_from_epoch"] = t.counted_from_epoch;
      if (t.unmeasured_epochs > 0) j["unmeasured_epochs"] = t.unmeasured_epochs;
      if (t.reached) {
        j["epoch"] = t.epoch;
        j["train_wall_s"] = t.train_wall_s;
        if (t.modeled_s >= 0) j["modeled_s"] = t.modeled_s;
      }
      list.push_back(std::move(j));
    }
    report["time_to_target"] = std::move(list);
  }
  if (in.ranks > 1) {
    const double n = static_cast<double>(result.epochs.size());
    const double mpi_s = result.phase_seconds.count("mpi_comm") ? result.phase_seconds.at("mpi_comm") : 0.0;
    report["mpi"] = {{"ranks", in.ranks},
                     {"training_rows_total", result.partition.total_rows},
                     {"rank0_workers", result.partition.local_workers},
                     {"rank0_training_rows", result.partition.local_rows},
                     {"mpi_comm_s", mpi_s},
                     {"mpi_comm_s_per_epoch", mpi_s / n},
                     {"mpi_bytes", result.traffic.mpi_bytes},
                     {"mpi_bytes_per_epoch", static_cast<double>(result.traffic.mpi_bytes) / n},
                     {"note",
                      "mpi_bytes: sent by all ranks; mpi_comm_s: rank 0's wall time in MPI calls during training "
                      "(including waiting for other ranks); phases and modeled times are rank 0's"}};
  }
  // What the run said beside its numbers: the data's notes (the header's) and the run's own (after the summary).
  json notes = json::array();
  if (in.data) {
    for (const std::string& note : in.data->notes) notes.push_back(note);
  }
  if (in.notes) {
    for (const std::string& note : *in.notes) notes.push_back(note);
  }
  report["notes"] = std::move(notes);
  return report;
}

void WriteJsonFile(const json& report, const std::string& path) {
  AtomicFileWriter writer(path);
  writer.stream() << report.dump(2) << '\n';
  writer.Commit();
}

std::string FormatRunHeader(const RunConfig& c, const RunData& d, const ThreadPool& pool, int ranks) {
  const int threads = pool.NumThreads();
  std::string s =
      StrCat("pimopt train: ", c.train.algorithm, " ", ModelName(c.train.objective.loss), " on ", d.train.source, " (",
             d.train.num_rows(), " x ", d.train.num_features(), ", ", d.train.is_sparse() ? "sparse" : "dense", ")");
  if (d.test) s += StrCat(", test ", d.test->source, " (", d.test->num_rows(), " rows)");
  const std::string usable =
      pool.UsableThreads() < threads ? StrCat(" (", pool.UsableThreads(), " CPUs here: a phase uses at most ", pool.UsableThreads(), ")") : "";
  s += StrCat("\n  backend ", c.backend, ", workers ", c.train.workers, ", threads ", threads, usable, ", batch ",
              TrainParams().GetText(c.train, "batch"), ", lr ", TrainParams().GetText(c.train, "lr"), ", reg ",
              TrainParams().GetText(c.train, "reg"), ", epochs ", c.train.epochs, ", seed ", c.train.seed, "\n");
  if (ranks > 1) {
    s += StrCat("  mpi: ", ranks, " ranks; rank 0 holds ", d.train.num_rows(), " training rows (shown above) of ",
                d.partition.total_rows, " and ",
                Partition::ForRank(d.partition.total_rows, c.train.workers, 0, ranks).local_workers, " of ",
                c.train.workers, " workers\n");
  }
  for (const std::string& note : d.notes) s += StrCat("note: ", note, "\n");
  if (pool.UsableThreads() > 1 && c.train.workers == 1 && c.train.batch == 1 &&
      c.train.traits().batch_meaning != BatchMeaning::kFullBatch) {  // newton's passes split over the threads
    if (!c.train.traits().row_duals) {
      s += StrCat("note: a step of one row does not split: this run uses one of the ", pool.UsableThreads(),
                  " threads; mbsgd (--batch 64 or more) or ma / admm (--workers ", pool.UsableThreads(),
                  " or more) use them all (README, \"Threads\")\n");
    } else if (EvaluationsBesideEpochsConfigured(c.train, *MakeAlgorithm(c.train.algorithm),
                                                 FindBackend(c.backend).traits.runs_a_worker_on_one_thread, ranks)) {
      // A sequential dual pass (one lane): its evaluations run beside it (Train); lanes split the pass itself.
      s += StrCat("note: a step of one row does not split: this run's epochs use one of the ", pool.UsableThreads(),
                  " threads and its evaluations another, beside them (docs/algorithms.md)\n");
    }
  }
  if (c.cv_folds > 0)
    return s + StrCat(c.cv_folds, "-fold cross-validation on the training set, then training on all of it");
  return s + EpochHeader();
}

std::string EpochHeader() { return "epoch       lr  train_obj  train_acc  test_acc  test_auc   test_obj   time_s"; }

namespace {
// A number in at most `width` characters, rounded, never cut: `decimals` after the point where that fits, else in
// %g with as many digits as fit (a test objective of 3.6e7 was printed 3612099, its digits cut to the column).
std::string Column(double v, int decimals, int width) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", decimals, v);
  if (!std::isfinite(v) || static_cast<int>(std::strlen(buf)) <= width) return buf;
  for (int digits = std::max(1, width - 6); digits >= 1; --digits) {  // -d.dde+XX
    std::snprintf(buf, sizeof(buf), "%.*g", digits, v);
    if (static_cast<int>(std::strlen(buf)) <= width) break;
  }
  return buf;
}
}  // namespace

std::string FormatEpochLine(const EpochRecord& r) {
  char buf[256];
  const double objective = r.test ? (std::isfinite(r.test->log_loss) ? r.test->objective : NAN) : NAN;
  char lr[16] = "-";
  if (r.lr != 0) std::snprintf(lr, sizeof(lr), "%.3g", r.lr);
  std::string train_objective = "-", train_accuracy = "-";  // "-": not evaluated in this epoch
  if (r.train.rows > 0) {
    train_objective = Column(r.train.objective, 5, 10);
    // An epoch evaluated for the stopping rule alone has the objective and no accuracy.
    if (std::isfinite(r.train.accuracy)) train_accuracy = Column(r.train.accuracy, 4, 10);
  }
  std::snprintf(buf, sizeof(buf), "%5d %8s %10s %10s %9s %9s %10s %8.3f", r.epoch, lr, train_objective.c_str(),
                train_accuracy.c_str(), r.test ? Column(r.test->accuracy, 4, 9).c_str() : "-",
                r.test && std::isfinite(r.test->auc) ? Column(r.test->auc, 4, 9).c_str() : "-",
                r.test ? Column(objective, 5, 10).c_str() : "-", r.train_seconds);
  std::string line = buf;
  if (r.gap.available) {
    std::snprintf(buf, sizeof(buf), "  gap %.3g", r.gap.relative());
    line += buf;
  }
  if (!r.info.figures.empty()) {
    line += "  " + r.info.figures_title;
    for (const EpochFigure& f : r.info.figures) {
      std::snprintf(buf, sizeof(buf), " %s %.3g", f.label.c_str(), f.value);
      line += buf;
    }
  }
  return line;
}

std::string FormatSummary(const RunConfig& c, const TrainResult& result) {
  // A backend that models a PIM machine's time (its phases have "modeled_total") adds the modeled seconds per epoch
  // (CPU<->DPU transfers, kernels, launches, the host's reduction) and the host reduction's share of them.
  const bool pim = result.phase_seconds.count("modeled_total") > 0;
  const double epochs = static_cast<double>(result.epochs.size());
  char buf[512];
  std::snprintf(buf, sizeof(buf), "%-8s %-5s %9s %9s %9s %9s %11s%s\n", "algo", "model", "train_acc", "test_acc",
                "test_auc", "test_loss", "s/epoch",
                pim ? "  modeled_s/epoch (+-)  of_it_host_s/epoch  modeled_J/epoch" : "");
  std::string s = buf;
  const EpochRecord& last = result.epochs.back();
  std::string modeled;
  if (pim) {
    const auto bar = result.phase_seconds.find("modeled_total_uncertainty");
    const auto energy = result.phase_seconds.find("modeled_energy_j");
    std::snprintf(buf, sizeof(buf), "  %11.4f %8.4f  %19.4f  %15.4g", result.phase_seconds.at("modeled_total") / epochs,
                  bar == result.phase_seconds.end() ? 0.0 : bar->second / epochs,
                  result.phase_seconds.at("modeled_host_reduction") / epochs,
                  energy == result.phase_seconds.end() ? 0.0 : energy->second / epochs);
    modeled = buf;
  }
  const bool logistic = c.train.objective.loss == LossKind::kLogistic;
  std::snprintf(buf, sizeof(buf), "%-8s %-5s %9s %9s %9s %9s %11.4f%s", c.train.algorithm.c_str(),
                ModelName(c.train.objective.loss), Cell(last.train.accuracy).c_str(),
                last.test ? Cell(last.test->accuracy).c_str() : "-", last.test ? Cell(last.test->auc).c_str() : "-",
                last.test ? Cell(logistic ? last.test->log_loss : last.test->hinge_loss).c_str() : "-",
                result.train_seconds / epochs, modeled.c_str());
  return s + buf;
}

nlohmann::json ProjectionJson(const EpochProjection& p) {
  nlohmann::json j = {{"dpus", p.dpus},
                      {"rows_per_dpu", p.rows_per_dpu},
                      {"extrapolated",
                       "every field: kernel times and MRAM-WRAM bytes scaled by rows per DPU, "
                       "synchronizations by the algorithm's sync count, transfers, link exchanges and the host "
                       "reduction re-modeled at the target DPU count (measured host time: scaled "
                       "linearly) (see backends/projection.h)"},
                      {"modeled_epoch_s", Number(p.epoch_s)},
                      {"modeled_cpu_to_dpu_s", Number(p.cpu_to_dpu_s)},
                      {"modeled_dpu_kernel_s", Number(p.kernel_s)},
                      {"modeled_launch_overhead_s", Number(p.launch_overhead_s)},
                      {"modeled_dpu_to_cpu_s", Number(p.dpu_to_cpu_s)},
                      {"host_reduction_s", Number(p.host_reduction_s)},
                      {"modeled_dpu_to_dpu_s", Number(p.link_s)},
                      {"modeled_collectives_s", Number(p.collective_s)},
                      {"modeled_overlap_saved_s", Number(p.overlap_saved_s)},
                      {"cpu_to_dpu_bytes", Number(p.cpu_to_dpu_bytes)},
                      {"dpu_to_cpu_bytes", Number(p.dpu_to_cpu_bytes)},
                      {"dpu_to_dpu_bytes", Number(p.link_bytes)},
                      {"mram_wram_bytes", Number(p.mram_wram_bytes)},
                      {"modeled_energy_j", Number(p.energy.total_j())},
                      {"modeled_energy_dpu_j", Number(p.energy.dpu_j)},
                      {"modeled_energy_transfer_j", Number(p.energy.transfer_j)},
                      {"modeled_energy_host_j", Number(p.energy.host_j)},
                      {"modeled_energy_link_j", Number(p.energy.link_j)}};
  j["timed"] = p.Timed();  // false: the figures the synchronizations are part of are null (note says why)
  if (!p.note.empty()) j["note"] = p.note;
  return j;
}

std::string FormatProjection(const EpochProjection& p) {
  if (!p.Timed()) {
    char buf[256];
    std::snprintf(buf, sizeof(buf),
                  "projection to %u DPUs x %llu rows/DPU (extrapolated): kernel %.3f s/epoch; no epoch time, bytes "
                  "moved or energy",
                  p.dpus, static_cast<unsigned long long>(p.rows_per_dpu), p.kernel_s);
    return StrCat(buf, " (", p.note, ")");
  }
  char links[64] = "";
  if (p.link_bytes > 0) std::snprintf(links, sizeof(links), " + DPU<->DPU links %.3f", p.link_s);
  if (p.collective_s > 0) {
    std::snprintf(links + std::strlen(links), sizeof(links) - std::strlen(links), " + collectives %.3f",
                  p.collective_s);
  }
  char overlap[64] = "";
  if (p.overlap_saved_s > 0) std::snprintf(overlap, sizeof(overlap), " - overlapped %.3f", p.overlap_saved_s);
  char buf[640];
  std::snprintf(buf, sizeof(buf),
                "projection to %u DPUs x %llu rows/DPU (extrapolated): %.3f s/epoch = CPU->DPU %.3f + kernel %.3f "
                "+ launch %.3f + DPU->CPU %.3f + host %.3f%s%s; %.3g bytes moved; %.3g J/epoch (DPUs %.3g, "
                "transfers %.3g, host %.3g)",
                p.dpus, static_cast<unsigned long long>(p.rows_per_dpu), p.epoch_s, p.cpu_to_dpu_s, p.kernel_s,
                p.launch_overhead_s, p.dpu_to_cpu_s, p.host_reduction_s,
                links, overlap,
                p.cpu_to_dpu_bytes + p.dpu_to_cpu_bytes + p.link_bytes, p.energy.total_j(), p.energy.dpu_j,
                p.energy.transfer_j, p.energy.host_j);
  std::string s = buf;
  if (!p.note.empty()) s += " (" + p.note + ")";
  return s;
}

std::vector<TargetReached> TimesToTargets(const RunConfig& c, const TrainResult& result) {
  std::vector<TargetReached> out;
  for (const auto& [metric, target] :
       {std::pair<const char*, double>{"accuracy", c.target_accuracy}, {"auc", c.target_auc}}) {
    if (target <= 0) continue;
    TargetReached t;
    t.metric = metric;
    t.target = target;
    t.counted_from_epoch = result.resumed_from_epoch + 1;
    const bool test = !result.epochs.empty() && result.epochs.front().test.has_value();
    t.set = test ? "test" : "train";
    double wall = 0, modeled = 0, modeled_bar = 0;
    bool pim = false;
    for (const EpochRecord& r : result.epochs) {
      wall += r.train_seconds;
      if (const auto it = r.phase_seconds.find("modeled_total"); it != r.phase_seconds.end()) {
        modeled += it->second;
        pim = true;
      }
      if (const auto it = r.phase_seconds.find("modeled_total_uncertainty"); it != r.phase_seconds.end()) {
        modeled_bar += it->second;
      }
      const Metrics& m = test ? *r.test : r.train;
      if (m.rows == 0) {  // not evaluated in this epoch
        if (!t.reached) ++t.unmeasured_epochs;
        continue;
      }
      const double value = t.metric == "auc" ? m.auc : m.accuracy;
      if (!std::isfinite(value)) continue;
      t.best = t.measured ? std::max(t.best, value) : value;
      t.measured = true;
      if (!t.reached && value >= target) {
        t.reached = true;
        t.epoch = r.epoch;
        t.train_wall_s = wall;
        t.modeled_s = pim ? modeled : -1;
        t.modeled_uncertainty_s = pim ? modeled_bar : 0;
      }
    }
    out.push_back(t);
  }
  return out;
}

std::string FormatTarget(const TargetReached& t) {
  const std::string resumed = t.counted_from_epoch > 1
                                  ? StrCat("counted from epoch ", t.counted_from_epoch,
                                           ", where this run resumed: an epoch before it may have reached the target")
                                  : "";
  const std::string unmeasured =
      t.unmeasured_epochs > 0
          ? StrCat(t.unmeasured_epochs, " epoch", t.unmeasured_epochs == 1 ? "" : "s", t.reached ? " before it" : "",
                   " had no ", t.set, " ", t.metric, " (one of them may have reached it", t.reached ? " first" : "",
                   t.set == "train" ? ": without --no-train-metrics a run with a target on its training set "
                                      "evaluates it every epoch"
                                    : "",
                   ")")
          : "";
  if (!t.reached) {
    if (!t.measured) {
      return StrCat("target ", t.set, " ", t.metric, " ", t.target, " not measurable (no epoch has a ", t.metric,
                    t.metric == "auc" ? ": undefined on a set of one class" : "", ")");
    }
    return StrCat("target ", t.set, " ", t.metric, " ", t.target, " not reached (best ", Cell(t.best),
                  resumed.empty() ? "" : "; ", resumed, ")", unmeasured.empty() ? "" : "; ", unmeasured);
  }
  char buf[256];
  std::snprintf(buf, sizeof(buf), "target %s %s %g reached in epoch %d after %.4f s of training", t.set.c_str(),
                t.metric.c_str(), t.target, t.epoch, t.train_wall_s);
  std::string s = buf;
  if (t.modeled_s >= 0) {
    std::snprintf(buf, sizeof(buf), " (modeled PIM time %.4f s +- %.4f)", t.modeled_s, t.modeled_uncertainty_s);
    s += buf;
  }
  if (!resumed.empty()) s += StrCat(" (", resumed, ")");
  if (!unmeasured.empty()) s += StrCat("; ", unmeasured);
  return s;
}

std::string FormatMpiLine(int ranks, const TrainResult& result) {
  const double epochs = static_cast<double>(result.epochs.size());
  const double mpi_s = result.phase_seconds.count("mpi_comm") ? result.phase_seconds.at("mpi_comm") : 0.0;
  char buf[256];
  std::snprintf(buf, sizeof(buf),
                "mpi: %d ranks, %.4f s/epoch in MPI calls (rank 0), %.4g bytes/epoch sent over MPI "
                "(all ranks)",
                ranks, mpi_s / epochs, static_cast<double>(result.traffic.mpi_bytes) / epochs);
  return buf;
}

std::string FormatStop(const RunConfig& config, const TrainResult& result) {
  std::string s;
  auto number = [](double v) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.4g", v);
    return std::string(buf);
  };
  std::vector<std::string> resolved;
  if (config.train.batch == TrainConfig::kAutoBatch) resolved.push_back(StrCat("batch ", result.config.batch));
  if (config.train.lr_is_auto() && result.config.traits().uses_learning_rate) {
    resolved.push_back(StrCat("lr ", number(result.config.lr)));
  }
  if (config.train.reg_is_auto()) resolved.push_back(StrCat("reg ", number(result.config.objective.l2)));
  for (size_t i = 0; i < resolved.size(); ++i) s += StrCat(i == 0 ? "auto: " : ", ", resolved[i]);
  if (result.epochs.empty()) return s;
  const DualityGap& gap = result.epochs.back().gap;
  const std::string certificate =
      gap.available ? StrCat("; relative duality gap ", number(gap.relative()),
                             ": the training objective is at most ", number(100 * gap.relative()),
                             "% above its optimum")
                    : "";
  // The objective a dual method solves regularizes the bias (loss.h); both objectives are reported.
  if (result.config.objective.regularize_bias && gap.available) {
    const Metrics& train = result.epochs.back().train;
    s += StrCat(s.empty() ? "" : "\n", "objective solved ", number(train.objective),
                " (the bias regularized as LIBLINEAR's -B 1 does: + l2/2 b^2 = ", number(train.bias_penalty),
                "); without that term ", number(train.objective - train.bias_penalty));
  }
  if (!result.stalled.empty()) {
    return s + StrCat(s.empty() ? "" : "\n", "stopped after epoch ", result.epochs.back().epoch, " of ",
                      config.train.epochs, ", not converged: ", result.stalled);
  }
  if (!result.converged) return s + (certificate.empty() ? "" : StrCat(s.empty() ? "" : "\n", certificate.substr(2)));
  if (!s.empty()) s += "\n";
  if (result.stopped_on_gap) {
    return s + StrCat("converged after epoch ", result.epochs.back().epoch, " of ", config.train.epochs,
                      ": relative duality gap ", number(gap.relative()), " <= --tol ", result.config.tol,
                      " (the training objective is at most ", number(100 * gap.relative()), "% above its optimum)");
  }
  if (result.config.schedule == LrSchedule::kPlateau) {
    return s + StrCat("converged after epoch ", result.epochs.back().epoch, " of ", config.train.epochs, ": plateau ",
                      result.plateaus, " of ", TrainConfig::kPlateauStops, " (", TrainConfig::kPlateauPatience,
                      " epochs in a row lowered the best training objective by less than ",
                      FormatDouble(TrainConfig::kPlateauTol), ")", certificate);
  }
  return s + StrCat("converged after epoch ", result.epochs.back().epoch, " of ", config.train.epochs,
                    ": the training objective changed by ", FormatFixed(100 * result.last_relative_change, 4),
                    "% (< --tol ", result.config.tol, ")", certificate);
}

std::string FormatFoldLine(uint32_t fold, uint32_t folds, const Metrics& m) {
  std::string s = StrCat("cv fold ", fold + 1, "/", folds, ": ", m.rows, " held-out rows, accuracy ",
                         FormatFixed(m.accuracy, 4), ", auc ", FormatFixed(m.auc, 4));
  return fold + 1 == folds ? s + "\n" + EpochHeader() : s;  // the epochs of the final training follow
}

std::string FormatCrossValidation(const CrossValidation& cv) {
  return StrCat(cv.folds, "-fold cross-validation: accuracy ", FormatFixed(cv.mean.accuracy, 4), " +- ",
                FormatFixed(cv.stddev.accuracy, 4), ", auc ", FormatFixed(cv.mean.auc, 4), " +- ",
                FormatFixed(cv.stddev.auc, 4), " (", FormatFixed(cv.seconds, 2), " s)");
}

}  // namespace pimopt
