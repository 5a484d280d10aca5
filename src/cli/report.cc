#include "report.h"

#include <cmath>
#include <cstdio>

#include "pimopt/algorithms/algorithm.h"
#include "pimopt/core/atomic_file.h"

namespace pimopt::cli {

using nlohmann::json;

namespace {
json Number(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }
}  // namespace

json ConfigToJson(const TrainConfig& c) {
  return json{{"algorithm", c.algorithm},
              {"model", ModelName(c.objective.loss)},
              {"loss", LossName(c.objective.loss)},
              {"workers", c.workers},
              {"epochs", c.epochs},
              {"batch", c.batch},
              {"batch_meaning", BatchMeaningText(c.traits().batch_meaning)},
              {"lr", c.lr},
              {"lr_schedule", LrScheduleName(c.schedule)},
              {"lr_decay", c.lr_decay},
              {"reg_l2", c.objective.l2},
              {"reg_l1", c.objective.l1},
              {"rho", c.rho},
              {"local_epochs", c.local_epochs},
              {"local_steps", c.local_steps},
              {"positive_class_weight", c.objective.positive_weight},
              {"negative_class_weight", c.objective.negative_weight},
              {"fit_bias", c.objective.fit_bias},
              {"shuffle", c.shuffle},
              {"seed", c.seed}};
}

json MetricsToJson(const Metrics& m) {
  return json{{"rows", m.rows},
              {"accuracy", Number(m.accuracy)},
              {"auc", Number(m.auc)},
              {"log_loss", Number(m.log_loss)},
              {"hinge_loss", Number(m.hinge_loss)},
              {"objective", Number(m.objective)}};
}

json DatasetToJson(const Dataset& d) {
  return json{{"source", d.source},
              {"rows", d.num_rows()},
              {"features", d.num_features()},
              {"storage", d.is_sparse() ? "sparse" : "dense"},
              {"stored_entries", d.num_stored()},
              {"positives", d.CountPositives()}};
}

json BuildReport(const RunInfo& info, const TrainConfig& config, const TrainResult& result) {
  json epochs = json::array();
  for (const EpochRecord& r : result.epochs) {
    json e{{"epoch", r.epoch},
           {"lr", r.lr},
           {"steps", r.info.steps},
           {"syncs", r.info.syncs},
           {"train_seconds", r.train_seconds},
           {"eval_seconds", r.eval_seconds},
           {"train", MetricsToJson(r.train)}};
    if (r.test) e["test"] = MetricsToJson(*r.test);
    json phases = json::object();
    for (const auto& [phase, seconds] : r.phase_seconds) phases[phase] = seconds;
    e["phases_seconds"] = std::move(phases);
    e["traffic"] = json{{"host_to_workers_bytes", r.traffic.to_workers_bytes},
                        {"workers_to_host_bytes", r.traffic.from_workers_bytes},
                        {"syncs", r.traffic.syncs},
                        {"mpi_bytes", r.traffic.mpi_bytes}};
    if (r.info.residuals) {
      e["admm_primal_residual"] = Number(r.info.residuals->primal);
      e["admm_dual_residual"] = Number(r.info.residuals->dual);
    }
    epochs.push_back(std::move(e));
  }
  json report{{"pimopt_report_version", 1}, {"command_line", info.command_line}, {"backend", info.backend},
              {"threads", info.threads},    {"config", ConfigToJson(config)},    {"epochs", std::move(epochs)}};
  if (info.train) report["train_data"] = DatasetToJson(*info.train);
  if (info.test) report["test_data"] = DatasetToJson(*info.test);
  const EpochRecord& last = result.epochs.back();
  json final_metrics{{"train", MetricsToJson(last.train)}};
  if (last.test) final_metrics["test"] = MetricsToJson(*last.test);
  report["final"] = std::move(final_metrics);
  json phases = json::object();
  for (const auto& [phase, seconds] : result.phase_seconds) phases[phase] = seconds;
  phases["evaluation"] = result.eval_seconds;
  phases["data_load"] = info.load_seconds;
  report["time"] = json{{"train_wall_seconds", result.train_seconds},
                        {"eval_wall_seconds", result.eval_seconds},
                        {"load_wall_seconds", info.load_seconds},
                        {"seconds_per_epoch", result.train_seconds / static_cast<double>(result.epochs.size())},
                        {"phases_seconds", std::move(phases)}};
  report["traffic"] = json{{"host_to_workers_bytes", result.traffic.to_workers_bytes},
                           {"workers_to_host_bytes", result.traffic.from_workers_bytes},
                           {"syncs", result.traffic.syncs},
                           {"mpi_bytes", result.traffic.mpi_bytes}};
  return report;
}

void WriteJsonFile(const json& report, const std::string& path) {
  AtomicFileWriter writer(path);
  writer.stream() << report.dump(2) << '\n';
  writer.Commit();
}

std::string EpochHeader() { return "epoch       lr  train_obj  train_acc  test_acc  test_auc  test_loss   time_s"; }

std::string FormatEpochLine(const EpochRecord& r) {
  char buf[256];
  const double loss = r.test ? (std::isfinite(r.test->log_loss) ? r.test->objective : NAN) : NAN;
  std::snprintf(buf, sizeof(buf), "%5d %8.3g %10.5f %10.4f %9s %9s %10s %8.3f", r.epoch, r.lr, r.train.objective,
                r.train.accuracy, r.test ? std::to_string(r.test->accuracy).substr(0, 6).c_str() : "-",
                r.test && std::isfinite(r.test->auc) ? std::to_string(r.test->auc).substr(0, 6).c_str() : "-",
                r.test ? std::to_string(loss).substr(0, 7).c_str() : "-", r.train_seconds);
  return buf;
}

}  // namespace pimopt::cli
