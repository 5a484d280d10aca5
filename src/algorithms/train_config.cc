#include "pimopt/algorithms/train_config.h"

#include <cmath>
#include <cstdlib>
#include <limits>

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
  std::vector<ParamChoice> choices{
      {"auto", "newton for --model lr on a backend with Newton's verbs (cpu) in one process, unless --workers, --batch "
               "or a flag newton does not take is given; else cocoa", {}}};
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
  const std::string algorithm = kAlgorithmParamGroup;
  t.AddCustom("algo", ParamType::kChoice, std::string("auto"),
              [](const TrainConfig& c) -> ParamValue { return c.algorithm_auto ? std::string("auto") : c.algorithm; },
              [](TrainConfig& c, const ParamValue& v) {
                c.algorithm_auto = std::get<std::string>(v) == "auto";
                c.algorithm = c.algorithm_auto ? std::string("cocoa") : std::get<std::string>(v);
              })
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
      .Help("K workers = K data shards (ga, ma, dsgd, admm, cocoa; sgd, mbsgd and newton run on 1); under mpirun the "
            "total over all ranks, at least one per rank (not given: the algorithm's default, raised to the ranks)");
  t.Add("epochs", &TrainConfig::epochs, 0)
      .Min(1)
      .Unit("epochs")
      .MayChangeOnResume()
      .DefaultNote([] { return PerAlgorithm([](const AlgorithmTraits& a) { return a.default_epochs; }); })
      .Group(algorithm)
      .Help("the most global epochs (a resumed run may raise it); the plateau schedule and --tol may stop earlier");
  t.Add("tol", &TrainConfig::tol, TrainConfig::kAutoTol)
      .Min(0)
      .Auto(TrainConfig::kAutoTol)
      .MayChangeOnResume()
      .Group(algorithm)
      .Help(StrCat("the run stops once the relative duality gap (F - D) / F, a bound on how far the training "
                   "objective F is above its optimum, is at most tol (0: never; docs/algorithms.md). Without L2 "
                   "regularization (--reg 0, no certificate) and a schedule other than plateau: once F changes by "
                   "less than tol (relative) over an epoch. auto: ",
                   FormatDouble(TrainConfig::kDualTol),
                   " for the methods without a learning rate (cocoa, newton: their certificate is tight), ",
                   FormatDouble(TrainConfig::kPlateauTol),
                   " with the plateau schedule, else 0. The report says why the run stopped and the gap"));
  t.Add("batch", &TrainConfig::batch, TrainConfig::kAutoBatch)
      .Min(1)
      .Auto(TrainConfig::kAutoBatch)
      .Unit("rows")
      .Group(algorithm)
      .Help(StrCat("rows per step: the global batch (mbsgd, ga) or the local batch of each worker (ma, dsgd, admm); "
                   "sgd and cocoa only 1. auto: ", PerAlgorithm([](const AlgorithmTraits& a) { return a.default_batch; }),
                   "; less (a power of 2) when the training set is so small that an epoch would have fewer than ",
                   TrainConfig::kAutoMinSteps, " steps"));
  t.Add("lr", &TrainConfig::lr, TrainConfig::kAutoLr)
      .Positive()
      .Auto(TrainConfig::kAutoLr)
      .AppliesWhen("algo", AlgorithmNameListWith([](const AlgorithmTraits& a) { return a.uses_learning_rate; }))
      .Group(algorithm)
      .Help("learning rate (lr * reg < 1); auto: from the training set's mean squared row norm, the loss and the "
            "batch (docs/algorithms.md \"Defaults\")");
  t.AddChoice("lr-schedule", &TrainConfig::schedule, LrSchedule::kAuto,
              std::vector<std::pair<ParamChoice, LrSchedule>>{
                  {{"auto", "plateau with --lr auto, constant with a given --lr", {}}, LrSchedule::kAuto},
                  {{"plateau",
                    StrCat("lr until 3 epochs in a row lower the best training objective by less than ",
                           FormatDouble(TrainConfig::kPlateauTol), " (relative), then lr / 4; the run stops at the 4th "
                           "such plateau or when the duality gap reaches --tol"),
                    {}},
                   LrSchedule::kPlateau},
                  {{"constant", "lr in every epoch", {}}, LrSchedule::kConstant},
                  {{"inverse", "lr / (1 + decay e) in epoch e", {}}, LrSchedule::kInverse},
                  {{"inverse-sqrt", "lr / sqrt(1 + decay e) in epoch e", {}}, LrSchedule::kInverseSqrt}})
      .Noun("schedule")
      .AppliesWhen("algo", AlgorithmNameListWith([](const AlgorithmTraits& a) { return a.uses_learning_rate; }))
      .Group(algorithm)
      .Help("learning-rate schedule over epochs e = 0, 1, ...");
  t.Add("lr-decay", &TrainConfig::lr_decay, 0.0)
      .Min(0)
      .AppliesWhen("algo", AlgorithmNameListWith([](const AlgorithmTraits& a) { return a.uses_learning_rate; }))
      .AppliesWhen("lr-schedule", {"inverse", "inverse-sqrt"})
      .Group(algorithm)
      .Help("decay rate of the inverse schedules");
  t.Add(
       "reg", [](auto& c) -> auto& { return c.objective.l2; }, TrainConfig::kAutoReg)
      .Min(0)
      .Auto(TrainConfig::kAutoReg)
      .Group(algorithm)
      .Help(
          "L2 strength lambda: objective + lambda/2 ||w||^2 (the bias is not regularized, except by cocoa and "
          "newton, which add lambda/2 b^2 as LIBLINEAR's -B 1 does; docs/algorithms.md); auto: 1 / training rows, "
          "the objective of LIBLINEAR's C = 1");
  t.Add("l1", [](auto& c) -> auto& { return c.objective.l1; }, 0.0)
      .Min(0)
      .AppliesWhen("algo", {"admm"})
      .Group(algorithm)
      .Help("L1 strength (soft-thresholding in ADMM's z-update)");
  t.Add("local-steps", &TrainConfig::local_steps, 1)
      .Min(1)
      .Unit("steps")
      .AppliesWhen("algo", {"ma", "dsgd"})
      .Group(algorithm)
      .Help("MA-SGD: local steps between two model averages (PIM-Opt: 1); D-PSGD: between two gossip steps. An "
            "epoch ends with a synchronization: more steps than an epoch's are its steps, and its last round may be "
            "shorter");
  // Each algorithm's own parameters (its file declares them: ADMM's --rho and --local-epochs, D-PSGD's --topology,
  // GA-SGD's --ga-batches), in listing order.
  for (const auto& [name, params] : RegisteredAlgorithmParams()) {
    const std::string algo = name;
    t.Include(params->table, [algo](auto& c) -> auto& { return c.algorithm_options.Of(algo); });
  }
  t.AddCustom("class-weights", ParamType::kText, std::string("1:1"),
              [](const TrainConfig& c) -> ParamValue {
                return StrCat(FormatDouble(c.objective.positive_weight), ":",
                              FormatDouble(c.objective.negative_weight));
              },
              SetClassWeights)
      .Group(algorithm)
      .Help("POS:NEG loss weights of the two classes (PIM-Opt uses 15:0.5 on Criteo)");
  t.AddCustom(
       "no-bias", ParamType::kFlag, false, [](const TrainConfig& c) -> ParamValue { return !c.objective.fit_bias; },
       [](TrainConfig& c, const ParamValue& v) { c.objective.fit_bias = !std::get<bool>(v); })
      .Group(algorithm)
      .Help(
          "fit no bias term (in the features trained on: with --scale minmax on dense data the saved model, "
          "which scores raw features, has the bias the shift by each feature's minimum makes; --scale none for a "
          "model without one)");
  t.AddCustom("no-shuffle", ParamType::kFlag, false, [](const TrainConfig& c) -> ParamValue { return !c.shuffle; },
              [](TrainConfig& c, const ParamValue& v) { c.shuffle = !std::get<bool>(v); })
      .AppliesWhen("algo", AlgorithmNameListWith([](const AlgorithmTraits& a) {
        return a.batch_meaning != BatchMeaning::kFullBatch;
      }))
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

TrainConfig::TrainConfig() {
  TrainParams().ApplyDefaults(*this);
  // A library caller's TrainConfig names its algorithm (cocoa unless it sets another); --algo auto is a run's
  // default (RunConfig), which ResolveRunConfig resolves.
  algorithm_auto = false;
}

void TrainConfig::Set(std::string_view name, std::string_view text) { TrainParams().SetText(*this, name, text); }

const AlgorithmTraits& TrainConfig::traits() const { return FindAlgorithm(algorithm); }

void TrainConfig::ResolveDefaults() {
  if (workers == 0) workers = traits().default_workers;
  if (epochs == 0) epochs = traits().default_epochs;
  // A method without a learning rate (CoCoA) has nothing to lower at a plateau: it runs until its certificate says
  // it is within kDualTol of the optimum.
  const bool uses_lr = traits().uses_learning_rate;
  if (schedule == LrSchedule::kAuto) {
    schedule = uses_lr && lr_is_auto() ? LrSchedule::kPlateau : LrSchedule::kConstant;
  }
  if (tol == kAutoTol) tol = !uses_lr ? kDualTol : schedule == LrSchedule::kPlateau ? kPlateauTol : 0.0;
  objective.regularize_bias = traits().regularizes_bias && objective.fit_bias;
}

uint64_t AutoBatch(const TrainConfig& config, uint64_t train_rows) {
  const AlgorithmTraits& t = config.traits();
  const uint64_t workers = static_cast<uint64_t>(std::max(config.workers, 1));
  // Rows one worker's step draws from: a worker's shard for local batches, all rows for a global batch.
  const uint64_t pool = t.batch_meaning == BatchMeaning::kLocalPerWorker ? train_rows / workers : train_rows;
  uint64_t batch = 1;
  while (batch * 2 <= t.default_batch && batch * 2 * TrainConfig::kAutoMinSteps <= pool) batch *= 2;
  if (t.distributed && t.batch_meaning == BatchMeaning::kGlobal) {  // GA-SGD: B/K rows each, at least one
    batch = std::max<uint64_t>(workers, batch / workers * workers);
  }
  return batch;
}

double AutoLearningRate(const TrainConfig& config, const TrainDataFacts& facts) {
  const double smoothness = config.objective.loss == LossKind::kLogistic ? 0.25 : 1.0;
  const double bias = config.objective.fit_bias ? 1.0 : 0.0;
  double lr = std::sqrt(static_cast<double>(config.batch)) / (4 * smoothness * (facts.mean_row_sq_norm + bias));
  if (!std::isfinite(lr) || lr <= 0) lr = 1;  // rows of zeros only
  // lr * reg < 1 and lr * (a proximal weight: ADMM's rho) < 1 with room to spare.
  const double decay = std::max(config.objective.l2, MakeAlgorithm(config.algorithm)->ProximalWeight(config));
  return decay > 0 ? std::min(lr, 0.5 / decay) : lr;
}

void TrainConfig::ResolveAuto(const TrainDataFacts& facts) {
  if (batch == kAutoBatch) batch = AutoBatch(*this, facts.rows);
  if (reg_is_auto()) objective.l2 = 1.0 / static_cast<double>(std::max<uint64_t>(facts.rows, 1));
  MakeAlgorithm(algorithm)->ResolveAuto(*this);
  if (lr_is_auto()) lr = AutoLearningRate(*this, facts);
}

double TrainConfig::LearningRate(int epoch) const {
  switch (schedule) {
    case LrSchedule::kAuto:  // resolved before training (ResolveDefaults)
    case LrSchedule::kConstant:
    case LrSchedule::kPlateau:
      return lr * lr_factor;
    case LrSchedule::kInverse:
      return lr * lr_factor / (1.0 + lr_decay * epoch);
    case LrSchedule::kInverseSqrt:
      return lr * lr_factor / std::sqrt(1.0 + lr_decay * epoch);
  }
  return lr;
}

void TrainConfig::CheckWorkers(uint64_t train_rows) const {
  if (static_cast<uint64_t>(workers) > train_rows) {
    throw ConfigError("--workers", StrCat(workers, " workers for only ", train_rows, " training rows"));
  }
}

void TrainConfig::Validate(uint64_t train_rows) const {
  TrainParams().CheckValues(*this);
  CheckWorkers(train_rows);
  ValidateWithoutData();
  MakeAlgorithm(algorithm)->ValidateForData(*this, train_rows);
}

void TrainConfig::ValidateWithoutData() const {
  TrainParams().CheckValues(*this);
  if (!lr_is_auto() && !reg_is_auto() && lr * objective.l2 >= 1) {
    throw ConfigError("--lr", StrCat("lr * reg = ", lr * objective.l2, " must be < 1 (the L2 step would flip w)"));
  }
  if ((schedule == LrSchedule::kInverse || schedule == LrSchedule::kInverseSqrt) && !(lr_decay > 0)) {
    throw ConfigError("--lr-decay", StrCat("the inverse schedules need a decay rate > 0 (with ", lr_decay,
                                           " --lr-schedule ", schedule == LrSchedule::kInverse ? "inverse" : "inverse-sqrt",
                                           " is the constant schedule): give --lr-decay, e.g. 1"));
  }
  if (!(std::isfinite(objective.positive_weight) && objective.positive_weight > 0 &&
        std::isfinite(objective.negative_weight) && objective.negative_weight > 0)) {
    throw ConfigError("--class-weights", "class weights must be positive finite numbers");
  }
  // The algorithm's rules on the batch it would get when the data does not make it smaller.
  TrainConfig probe = *this;
  if (probe.batch == kAutoBatch) probe.batch = AutoBatch(probe, std::numeric_limits<uint64_t>::max());
  MakeAlgorithm(algorithm)->Validate(probe);
}

void TrainConfig::CheckProcesses(int processes) const {
  if (processes <= 1) return;
  if (!traits().distributed) {
    throw ConfigError("--algo", StrCat(algorithm, " has one worker and runs in one process; under mpirun use ",
                                       DistributedAlgorithmNames()));
  }
  Partition::CheckWorkersPerRank(workers, processes);
}

std::pair<uint64_t, uint64_t> RunLocalRounds(IBackend& backend, const TrainConfig& config, const Partition& part,
                                             int epoch, bool start_from_global,
                                             const std::function<void()>& after_round) {
  const ShardPlan plan(LocalShards(part), config.batch, config.seed, static_cast<uint64_t>(epoch), config.shuffle,
                       part.first_worker);
  const uint64_t steps = MaxShardBatches(part.total_rows, config.workers, config.batch);
  const uint64_t h = static_cast<uint64_t>(config.local_steps);
  const uint64_t rounds = (steps + h - 1) / h;
  LocalSolveRequest request;
  request.plan = &plan;
  request.lr = config.LearningRate(epoch);
  request.start_from_global = start_from_global;
  for (uint64_t r = 0; r < rounds; ++r) {
    request.first_step = r * h;
    request.num_steps = std::min(h, steps - r * h);
    backend.LocalSolve(request);
    after_round();
  }
  return {steps, rounds};
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
