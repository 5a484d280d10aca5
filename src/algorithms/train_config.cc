#include "pimopt/algorithms/train_config.h"

#include <cmath>
#include <cstdlib>

#include "pimopt/algorithms/algorithm.h"
#include "pimopt/core/error.h"
#include "pimopt/core/file_util.h"

namespace pimopt {
namespace {

// "sgd 1, mbsgd 64, ..." of a trait, for the help of parameters whose default the algorithm declares.
template <typename Fn>
std::string PerAlgorithm(Fn value) {
  std::string text = "the algorithm's: ";
  bool first = true;
  for (const AlgorithmTraits* t : RegisteredAlgorithms()) {
    text += StrCat(first ? "" : ", ", t->name, " ", value(*t));
    first = false;
  }
  return text;
}

std::vector<ParamChoice> AlgorithmChoices() {
  std::vector<ParamChoice> choices;
  for (const AlgorithmTraits* t : RegisteredAlgorithms()) choices.push_back({t->name, t->title, t->aliases});
  return choices;
}

void SetClassWeights(TrainConfig& c, const ParamValue& value) {
  const std::string& text = std::get<std::string>(value);
  const size_t colon = text.find(':');
  const std::string pos = text.substr(0, colon);
  const std::string neg = colon == std::string::npos ? "" : text.substr(colon + 1);
  char *e1 = nullptr, *e2 = nullptr;
  const double p = std::strtod(pos.c_str(), &e1), n = std::strtod(neg.c_str(), &e2);
  if (colon == std::string::npos || pos.empty() || neg.empty() || *e1 || *e2) {
    throw ConfigError("--class-weights", StrCat("'", text, "' is not POS:NEG (e.g. 15:0.5)"));
  }
  if (!(std::isfinite(p) && p > 0 && std::isfinite(n) && n > 0)) {
    throw ConfigError("--class-weights", "class weights must be positive finite numbers");
  }
  c.objective.positive_weight = p;
  c.objective.negative_weight = n;
}

ParamTable<TrainConfig> MakeTrainParams() {
  ParamTable<TrainConfig> t;
  const std::string algorithm = "Model and algorithm";
  t.AddCustom("algo", ParamType::kChoice, std::string("mbsgd"),
              [](const TrainConfig& c) -> ParamValue { return c.algorithm; },
              [](TrainConfig& c, const ParamValue& v) { c.algorithm = std::get<std::string>(v); })
      .ListChoices(AlgorithmChoices)
      .Noun("algorithm")
      .Group(algorithm)
      .Help("the optimization algorithm (docs/algorithms.md)");
  t.AddChoice("model", [](auto& c) -> auto& { return c.objective.loss; }, LossKind::kLogistic,
              std::vector<std::pair<ParamChoice, LossKind>>{
                  {{"lr", "logistic regression (logistic loss)", {"logistic"}}, LossKind::kLogistic},
                  {{"svm", "linear SVM (hinge loss, margin 1)", {"hinge"}}, LossKind::kHinge}})
      .Noun("model")
      .Group(algorithm)
      .Help("the classifier");
  t.Add("workers", &TrainConfig::workers, 0)
      .Min(1)
      .Unit("workers")
      .DefaultNote([] { return PerAlgorithm([](const AlgorithmTraits& a) { return a.default_workers; }); })
      .Group(algorithm)
      .Help("K workers = K data shards (ga, ma, admm; sgd and mbsgd run on 1); under mpirun the total over all "
            "ranks, at least one per rank");
  t.Add("epochs", &TrainConfig::epochs, 10).Min(1).Unit("epochs").MayChangeOnResume().Group(algorithm).Help(
      "global epochs (a resumed run may raise it)");
  t.Add("tol", &TrainConfig::tol, 0.0)
      .Min(0)
      .MayChangeOnResume()
      .DefaultNote("0 = run every epoch")
      .Group(algorithm)
      .Help("stop before --epochs once the training objective F changes by less than this over an epoch, "
            "|F(e-1) - F(e)| / |F(e)| < tol (the training set is then evaluated every epoch; the report says why "
            "the run stopped)");
  t.Add("batch", &TrainConfig::batch, 0)
      .Min(1)
      .Unit("rows")
      .DefaultNote([] { return PerAlgorithm([](const AlgorithmTraits& a) { return a.default_batch; }); })
      .Group(algorithm)
      .Help("rows per step: the global batch (mbsgd, ga) or the local batch of each worker (ma, admm); sgd only 1");
  t.Add("lr", &TrainConfig::lr, 0.1).Positive().Group(algorithm).Help(
      "learning rate, any positive value (lr * reg < 1)");
  t.AddChoice("lr-schedule", &TrainConfig::schedule, LrSchedule::kConstant,
              std::vector<std::pair<ParamChoice, LrSchedule>>{
                  {{"constant", "lr in every epoch", {}}, LrSchedule::kConstant},
                  {{"inverse", "lr / (1 + decay e) in epoch e", {}}, LrSchedule::kInverse},
                  {{"inverse-sqrt", "lr / sqrt(1 + decay e) in epoch e", {}}, LrSchedule::kInverseSqrt}})
      .Noun("schedule")
      .Group(algorithm)
      .Help("learning-rate schedule over epochs e = 0, 1, ...");
  t.Add("lr-decay", &TrainConfig::lr_decay, 0.0)
      .Min(0)
      .AppliesWhen("lr-schedule", {"inverse", "inverse-sqrt"})
      .Group(algorithm)
      .Help("decay rate of the inverse schedules");
  t.Add("reg", [](auto& c) -> auto& { return c.objective.l2; }, 1e-5)
      .Min(0)
      .Group(algorithm)
      .Help("L2 strength lambda: objective + lambda/2 ||w||^2 (the bias is not regularized)");
  t.Add("l1", [](auto& c) -> auto& { return c.objective.l1; }, 0.0)
      .Min(0)
      .AppliesWhen("algo", {"admm"})
      .Group(algorithm)
      .Help("L1 strength (soft-thresholding in ADMM's z-update)");
  t.Add("rho", &TrainConfig::rho, 0.01).Positive().AppliesWhen("algo", {"admm"}).Group(algorithm).Help(
      "ADMM penalty rho (lr * rho < 1)");
  t.Add("local-epochs", &TrainConfig::local_epochs, 1)
      .Min(1)
      .Unit("epochs")
      .AppliesWhen("algo", {"admm"})
      .Group(algorithm)
      .Help("ADMM: local epochs of proximal SGD per consensus round");
  t.Add("local-steps", &TrainConfig::local_steps, 1)
      .Min(1)
      .Unit("steps")
      .AppliesWhen("algo", {"ma"})
      .Group(algorithm)
      .Help("MA-SGD: local steps between two model averages (PIM-Opt: 1)");
  t.AddChoice("ga-batches", &TrainConfig::ga_per_worker_batches, false,
              std::vector<std::pair<ParamChoice, bool>>{
                  {{"random", "a uniformly random global batch (GA-SGD is then exactly MB-SGD)", {}}, false},
                  {{"per-worker",
                    "PIM-Opt's: every worker the next B/K rows of its own shard (in data order with --no-shuffle, "
                    "as the artifact's cursor)",
                    {}},
                   true}})
      .Noun("batches")
      .AppliesWhen("algo", {"ga"})
      .Group(algorithm)
      .Help("how GA-SGD's global batch of B rows is drawn");
  t.AddCustom("class-weights", ParamType::kText, std::string("1:1"),
              [](const TrainConfig& c) -> ParamValue {
                return StrCat(FormatDouble(c.objective.positive_weight), ":",
                              FormatDouble(c.objective.negative_weight));
              },
              SetClassWeights)
      .Group(algorithm)
      .Help("POS:NEG loss weights of the two classes (PIM-Opt uses 15:0.5 on Criteo)");
  t.AddCustom("no-bias", ParamType::kFlag, false,
              [](const TrainConfig& c) -> ParamValue { return !c.objective.fit_bias; },
              [](TrainConfig& c, const ParamValue& v) { c.objective.fit_bias = !std::get<bool>(v); })
      .Group(algorithm)
      .Help("fit no bias term");
  t.AddCustom("no-shuffle", ParamType::kFlag, false, [](const TrainConfig& c) -> ParamValue { return !c.shuffle; },
              [](TrainConfig& c, const ParamValue& v) { c.shuffle = !std::get<bool>(v); })
      .Group(algorithm)
      .Help("visit rows in data order every epoch");
  t.Add("seed", &TrainConfig::seed, 1).Group(algorithm).Help("seed of every random choice (shuffles, splits)");
  return t;
}

}  // namespace

const ParamTable<TrainConfig>& TrainParams() {
  static const ParamTable<TrainConfig> table = MakeTrainParams();
  return table;
}

TrainConfig::TrainConfig() { TrainParams().ApplyDefaults(*this); }

const AlgorithmTraits& TrainConfig::traits() const { return FindAlgorithm(algorithm); }

void TrainConfig::ResolveDefaults() {
  const AlgorithmTraits& t = traits();
  if (workers == 0) workers = t.default_workers;
  if (batch == 0) batch = t.default_batch;
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
  TrainParams().CheckValues(*this);
  if (static_cast<uint64_t>(workers) > train_rows) {
    throw ConfigError("--workers", StrCat(workers, " workers for only ", train_rows, " training rows"));
  }
  ValidateWithoutData();
  MakeAlgorithm(algorithm)->ValidateForData(*this, train_rows);
}

void TrainConfig::ValidateWithoutData() const {
  TrainParams().CheckValues(*this);
  if (lr * objective.l2 >= 1) {
    throw ConfigError("--lr", StrCat("lr * reg = ", lr * objective.l2, " must be < 1 (the L2 step would flip w)"));
  }
  if (!(std::isfinite(objective.positive_weight) && objective.positive_weight > 0 &&
        std::isfinite(objective.negative_weight) && objective.negative_weight > 0)) {
    throw ConfigError("--class-weights", "class weights must be positive finite numbers");
  }
  MakeAlgorithm(algorithm)->Validate(*this);
}

void TrainConfig::CheckProcesses(int processes) const {
  if (processes <= 1) return;
  if (!traits().distributed) {
    throw ConfigError("--algo", StrCat(algorithm, " has one worker and runs in one process; under mpirun use ",
                                       DistributedAlgorithmNames()));
  }
  Partition::ForRank(1, workers, 0, processes);  // at least one worker per process
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

}  // namespace pimopt
