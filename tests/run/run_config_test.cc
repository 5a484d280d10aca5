// The run's parameter table is the one declaration of every `pimopt train` parameter: defaults, bounds, where each
// applies, what it affects. These tests check the table itself, the checks made before any data is read, and what
// is derived from it (checkpoint options, the report's config block).
#include "pimopt/run/run_config.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "pimopt/algorithms/admm.h"
#include "pimopt/backends/pim/pim_backend.h"
#include "pimopt/run/report.h"

namespace pimopt {
namespace {

RunConfig Config(std::vector<std::pair<std::string, std::string>> params) {
  RunConfig c;
  for (const auto& [name, text] : params) SetParam(c, name, text);
  return c;
}

// Resolving `params` (with a data file that does not exist: nothing may be read first) fails naming `flag`.
void ExpectRefused(std::vector<std::pair<std::string, std::string>> params, const std::string& flag,
                   const std::string& fragment = "", int processes = 1) {
  params.insert(params.begin(), {"data", "/no/such/file.svm"});
  try {
    RunConfig c = Config(params);
    ResolveRunConfig(c, processes);
    FAIL() << "accepted; expected an error naming " << flag;
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.parameter(), flag) << e.what();
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(RunParams, EveryParameterIsDeclaredCompletely) {
  const auto& table = RunParams();
  std::vector<std::string> names;
  for (const auto& e : table.entries()) {
    names.push_back(e.info.name);
    EXPECT_FALSE(e.info.help.empty()) << e.info.name;
    EXPECT_FALSE(e.info.group.empty()) << e.info.name;
    if (e.info.type == ParamType::kChoice) {
      EXPECT_GE(e.info.Choices().size(), 2u) << e.info.name;
    }
    for (const ParamCondition& cond : e.info.applies_when) {
      const auto* other = table.Find(cond.param);
      ASSERT_NE(other, nullptr) << e.info.name << " depends on unknown " << cond.param;
      for (const std::string& v : cond.Values()) EXPECT_NO_THROW(ParseParamValue(other->info, v)) << v;
    }
  }
  for (const char* expected : {"data",
                               "test",
                               "test-fraction",
                               "scale",
                               "positive-classes",
                               "storage",
                               "algo",
                               "model",
                               "workers",
                               "epochs",
                               "batch",
                               "lr",
                               "lr-schedule",
                               "lr-decay",
                               "reg",
                               "l1",
                               "rho",
                               "local-epochs",
                               "local-steps",
                               "class-weights",
                               "no-bias",
                               "no-shuffle",
                               "seed",
                               "backend",
                               "threads",
                               "dpus",
                               "tasklets",
                               "profile",
                               "profile-set",
                               "sigmoid",
                               "tasklet-split",
                               "project-dpus",
                               "project-rows-per-dpu",
                               "out",
                               "liblinear-out",
                               "report",
                               "checkpoint",
                               "checkpoint-every",
                               "resume",
                               "no-train-metrics",
                               "quiet"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), expected), names.end()) << expected;
  }
}

TEST(RunParams, DefaultsAreTheDeclaredOnesEverywhere) {
  const RunConfig c;
  for (const auto& e : RunParams().entries()) {
    EXPECT_EQ(FormatParamValue(e.get(c)), FormatParamValue(e.info.default_value)) << e.info.name;
  }
  // The structs that the modules use on their own have the same defaults (rho once defaulted to 1.0 here).
  TrainConfig train;
  EXPECT_EQ(train.algorithm, "cocoa");  // the default: certified within --tol of the optimum (docs/algorithms.md)
  train.algorithm = "mbsgd";            // the SGD methods' defaults below
  EXPECT_TRUE(train.algorithm_options.As<AdmmOptions>("admm").rho_is_auto());
  EXPECT_TRUE(train.lr_is_auto());
  EXPECT_TRUE(train.reg_is_auto());
  EXPECT_EQ(train.batch, TrainConfig::kAutoBatch);
  EXPECT_EQ(train.schedule, LrSchedule::kAuto);
  EXPECT_EQ(train.tol, TrainConfig::kAutoTol);
  TrainConfig resolved = train;
  resolved.ResolveDefaults();  // with --lr auto: the plateau schedule and its tolerance
  EXPECT_EQ(resolved.schedule, LrSchedule::kPlateau);
  EXPECT_EQ(resolved.tol, TrainConfig::kPlateauTol);
  TrainConfig given_lr = train;
  given_lr.lr = 0.1;
  given_lr.ResolveDefaults();  // a given --lr keeps its constant meaning, for --epochs epochs
  EXPECT_EQ(given_lr.schedule, LrSchedule::kConstant);
  EXPECT_EQ(given_lr.tol, 0.0);
  EXPECT_EQ(train.epochs, 0);  // the algorithm's default
  EXPECT_EQ(resolved.epochs, 100);
  TrainConfig dual = train;
  dual.algorithm = "cocoa";
  dual.ResolveDefaults();  // no learning rate: no plateau to lower it at; the certificate's tolerance
  EXPECT_EQ(dual.epochs, 1000);
  EXPECT_EQ(dual.schedule, LrSchedule::kConstant);
  EXPECT_EQ(dual.tol, TrainConfig::kDualTol);
  EXPECT_TRUE(dual.objective.regularize_bias);
  EXPECT_FALSE(resolved.objective.regularize_bias);
  EXPECT_EQ(c.scale, ScaleChoice::kMinMax);
  EXPECT_EQ(PimBackendOptions().tasklets, 16u);
  EXPECT_EQ(SourceOptions().positive_classes, (std::vector<int>{0, 2, 4, 6}));
  // Every default is accepted back as text.
  for (const auto& e : RunParams().entries()) {
    if (e.info.default_note) continue;  // a sentinel ("the algorithm's")
    RunConfig d;
    EXPECT_NO_THROW(SetParam(d, e.info.name, e.info.Format(e.info.default_value))) << e.info.name;
  }
  // "auto" is a word: the number that stands for it is refused as a number.
  RunConfig d;
  EXPECT_THROW(SetParam(d, "lr", "0"), ConfigError);
  EXPECT_THROW(SetParam(d, "reg", "-1"), ConfigError);
  EXPECT_THROW(SetParam(d, "batch", "0"), ConfigError);
  EXPECT_NO_THROW(SetParam(d, "reg", "0"));
  EXPECT_EQ(RunParams().GetText(d, "reg"), "0");
  SetParam(d, "reg", "auto");
  EXPECT_EQ(RunParams().GetText(d, "reg"), "auto");
}

TEST(ResolveRunConfig, EveryFlagIsCheckedBeforeAnyDataIsRead) {
  ExpectRefused({{"rho", "1"}, {"algo", "ga"}}, "--rho", "only meaningful with --algo admm");
  ExpectRefused({{"l1", "0.1"}, {"algo", "ma"}}, "--l1", "only meaningful with --algo admm");
  ExpectRefused({{"local-steps", "3"}, {"algo", "admm"}}, "--local-steps", "only meaningful with --algo ma");
  ExpectRefused({{"lr-decay", "1"}}, "--lr-decay", "and --lr-schedule inverse or inverse-sqrt");
  ExpectRefused({{"dpus", "4"}}, "--dpus", "only meaningful with --backend pim");
  // CoCoA has no learning rate: its schedule, decay and the PIM sigmoid's exp, and the SGD kernels' tasklet split,
  // were accepted and ignored.
  ExpectRefused({{"lr-schedule", "constant"}}, "--lr-schedule", "only meaningful with --algo sgd");
  ExpectRefused({{"backend", "pim"}, {"sigmoid", "float"}}, "--sigmoid", "--algo sgd, mbsgd, ga, ma, dsgd or admm");
  ExpectRefused({{"backend", "pim"}, {"tasklet-split", "features"}}, "--tasklet-split", "--algo sgd");
  ExpectRefused({{"algo", "ma"}, {"lr-schedule", "inverse"}}, "--lr-decay", "need a decay rate > 0");
  ExpectRefused({{"sigmoid", "float"}}, "--sigmoid", "only meaningful with --backend pim and --model lr");
  ExpectRefused({{"backend", "pim"}, {"model", "svm"}, {"sigmoid", "float"}}, "--sigmoid");
  ExpectRefused({{"backend", "pim"}, {"algo", "sgd"}, {"dpus", "4"}}, "--dpus", "sgd runs on one DPU");
  ExpectRefused({{"backend", "pim"}, {"algo", "ma"}, {"dpus", "4"}, {"workers", "8"}}, "--dpus", "contradicts");
  ExpectRefused({{"backend", "pim"}, {"tasklets", "40"}}, "--tasklets", "1..24");
  ExpectRefused({{"backend", "pim"}, {"tasklets", "18"}}, "--tasklets",
                "18 tasklets do not fit: the linear kernel's WRAM buffers (2200 bytes per tasklet, and its stack) fit "
                "at most 17 tasklets in the 65536 bytes of WRAM of profile 'pim-opt'");
  ExpectRefused({{"backend", "pim"}, {"profile-set", "colour=1"}}, "--profile-set", "colour");
  ExpectRefused({{"algo", "sgd"}, {"workers", "4"}}, "--workers");
  ExpectRefused({{"algo", "sgd"}, {"batch", "8"}}, "--batch");
  ExpectRefused({{"algo", "ga"}, {"workers", "8"}, {"batch", "4"}}, "--batch");
  ExpectRefused({{"algo", "admm"}, {"lr", "0.1"}, {"rho", "20"}}, "--rho", "lr * rho");
  ExpectRefused({{"algo", "mbsgd"}, {"lr", "0.1"}, {"reg", "20"}}, "--lr", "lr * reg");
  ExpectRefused({{"lr", "0.1"}}, "--lr", "only meaningful with --algo");  // the default, cocoa, takes none
  ExpectRefused({{"test", "fashion-mnist:test"}, {"test-fraction", "0.2"}}, "--test-fraction");
  ExpectRefused({{"resume", "true"}}, "--resume", "needs --checkpoint");
  ExpectRefused({{"checkpoint-every", "5"}}, "--checkpoint-every", "needs --checkpoint");  // it wrote none, silently
  ExpectRefused({{"out", "/tmp/same"}, {"report", "/tmp/same"}}, "--report", "also the file of --out");
  ExpectRefused({{"out", "/no/such/dir/m.model"}}, "--out", "does not exist");
  ExpectRefused({{"algo", "mbsgd"}}, "--algo", "under mpirun use ga, ma, dsgd, admm or cocoa", 2);
  ExpectRefused({{"algo", "ga"}, {"workers", "3"}}, "--workers", "at least one worker per MPI rank", 4);
  ExpectRefused({{"algo", "ga"}, {"backend", "pim"}, {"project-dpus", "64"}}, "--project-dpus", "one process", 2);
  try {
    RunConfig c = Config({{"data", "dense:rows=oops"}});
    ResolveRunConfig(c, 1);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("rows='oops'"), std::string::npos) << e.what();
  }
}

TEST(ResolveRunConfig, TaskletsUpToWhatTheKernelsWramAllows) {
  RunConfig c = Config({{"data", "x.svm"}, {"backend", "pim"}, {"tasklets", "17"}});
  EXPECT_NO_THROW(ResolveRunConfig(c, 1));
  RunConfig wide = Config({{"data", "x.svm"}, {"backend", "pim"}, {"tasklets", "24"}, {"profile", "future-wide"}});
  EXPECT_NO_THROW(ResolveRunConfig(wide, 1));  // 256 KB of WRAM
}

TEST(ResolveRunConfig, ResolvesTheAlgorithmsDefaultsAndDpus) {
  RunConfig c = Config({{"data", "x.svm"}, {"algo", "admm"}});
  ResolveRunConfig(c, 1);
  EXPECT_EQ(c.train.workers, 8);
  EXPECT_EQ(c.train.batch, TrainConfig::kAutoBatch);  // resolved with the data (AutoBatch)
  EXPECT_EQ(AutoBatch(c.train, 1000000), 16u);
  RunConfig p = Config({{"data", "x.svm"}, {"algo", "ma"}, {"backend", "pim"}, {"dpus", "32"}, {"threads", "3"}});
  ResolveRunConfig(p, 1);
  EXPECT_EQ(p.train.workers, 32);
  EXPECT_EQ(p.backend_options.As<PimBackendOptions>("pim").host_threads, 3);
  RunConfig s = Config({{"data", "x.svm"}, {"algo", "sgd"}});
  ResolveRunConfig(s, 1);
  EXPECT_EQ(s.train.workers, 1);
  EXPECT_EQ(AutoBatch(s.train, 1000000), 1u);
}

// --algo auto, the default: newton for LR on the CPU backend in one process unless a flag asks for cocoa's workers
// or does not apply to newton; cocoa otherwise; an explicit --algo is kept.
TEST(ResolveRunConfig, AutoIsNewtonForLogisticRegressionWhereItFitsElseCocoa) {
  auto resolved = [](std::vector<std::pair<std::string, std::string>> flags, int processes = 1) {
    flags.emplace_back("data", "x.svm");
    RunConfig c = Config(flags);
    EXPECT_TRUE(c.train.algorithm_auto);
    ResolveRunConfig(c, processes);
    EXPECT_FALSE(c.train.algorithm_auto);
    return c.train.algorithm;
  };
  EXPECT_EQ(resolved({}), "newton");
  EXPECT_EQ(resolved({{"model", "lr"}, {"reg", "1e-3"}, {"tol", "0.001"}, {"threads", "3"}}), "newton");
  EXPECT_EQ(resolved({{"model", "svm"}}), "cocoa");
  EXPECT_EQ(resolved({{"workers", "4"}}), "cocoa");
  EXPECT_EQ(resolved({{"batch", "1"}}), "cocoa");
  EXPECT_EQ(resolved({{"dual-passes", "2"}}), "cocoa");
  EXPECT_EQ(resolved({{"backend", "pim"}}), "cocoa");
  EXPECT_EQ(resolved({}, 3), "cocoa");  // under mpirun
  RunConfig ranks = Config({{"data", "x.svm"}});
  ResolveRunConfig(ranks, 3);
  EXPECT_EQ(ranks.train.workers, 3);  // one worker per rank without --workers (cocoa's default is one)
  RunConfig ma = Config({{"data", "x.svm"}, {"algo", "ma"}});
  ResolveRunConfig(ma, 3);
  EXPECT_EQ(ma.train.workers, 8);  // its own default where that is enough
  RunConfig explicit_cocoa = Config({{"data", "x.svm"}, {"algo", "cocoa"}});
  EXPECT_FALSE(explicit_cocoa.train.algorithm_auto);
  ResolveRunConfig(explicit_cocoa, 1);
  EXPECT_EQ(explicit_cocoa.train.algorithm, "cocoa");
  EXPECT_EQ(RunParams().GetText(RunConfig(), "algo"), "auto");
  EXPECT_EQ(TrainConfig().algorithm, "cocoa");  // a library TrainConfig names its algorithm
}

TEST(ResumeOptions, HoldEveryOptionThatChangesTheResultAndNoOther) {
  RunConfig c = Config({{"data", "x.svm"},
                        {"algo", "ma"},
                        {"backend", "pim"},
                        {"sigmoid", "float"},
                        {"tasklet-split", "features"},
                        {"profile", "prim-640"},
                        {"profile-set", "dma_pipeline_stall=0.5"},
                        {"tasklets", "12"},
                        {"scale", "minmax"},
                        {"threads", "1"},
                        {"epochs", "3"},
                        {"out", "/tmp/m"}});
  ResolveRunConfig(c, 1);
  std::map<std::string, std::string> options;
  for (const auto& [name, value] : ResumeOptions(c)) options[name] = value;
  for (const char* name :
       {"sigmoid", "tasklet-split", "profile", "profile-set", "tasklets",      "scale",           "storage", "algo",
        "model",   "workers",       "batch",   "lr",          "reg",           "local-steps",     "seed",    "backend",
        "dpus",    "class-weights", "no-bias", "no-shuffle",  "test-fraction", "positive-classes"}) {
    EXPECT_TRUE(options.count(name)) << name;
  }
  EXPECT_EQ(options["sigmoid"], "float");
  EXPECT_EQ(options["profile-set"], "dma_pipeline_stall=0.5");
  for (const char* name :
       {"epochs", "threads", "out", "data", "test", "quiet", "rho", "l1", "checkpoint", "resume", "project-dpus"}) {
    EXPECT_FALSE(options.count(name)) << name;
  }
  // On the CPU backend the PIM options do not apply and are not recorded.
  RunConfig cpu = Config({{"data", "x.svm"}});
  ResolveRunConfig(cpu, 1);
  for (const auto& [name, value] : ResumeOptions(cpu)) {
    EXPECT_TRUE(name != "sigmoid" && name != "tasklets" && name != "profile") << name;
  }
  // The model file records the options that change the model, not those that change only modeled time.
  std::map<std::string, std::string> result;
  for (const auto& [name, value] : ResultOptions(c)) result[name] = value;
  EXPECT_TRUE(result.count("sigmoid"));
  EXPECT_TRUE(result.count("epochs"));
  EXPECT_FALSE(result.count("tasklets"));
}

TEST(Report, ConfigBlockHoldsEveryParameterThatApplies) {
  RunConfig c = Config({{"data", "x.svm"}, {"algo", "admm"}, {"rho", "0.5"}});
  ResolveRunConfig(c, 1);
  const nlohmann::json block = ConfigToJson(c);
  for (const auto& e : RunParams().entries()) {
    EXPECT_EQ(block.contains(e.info.name), RunParams().Applies(e, c)) << e.info.name;
  }
  EXPECT_EQ(block["rho"], 0.5);
  EXPECT_EQ(block["workers"], 8);
  EXPECT_EQ(block["algo"], "admm");
  EXPECT_FALSE(block.contains("sigmoid"));
}

}  // namespace
}  // namespace pimopt

namespace pimopt {
namespace {

TEST(Report, TheEpochLineNamesWhatItPrints) {
  EXPECT_NE(EpochHeader().find("test_obj"), std::string::npos);
  EXPECT_EQ(EpochHeader().find("test_loss"), std::string::npos);
  EpochRecord r;
  r.epoch = 3;
  r.lr = 0.1;
  Metrics test;
  test.accuracy = 0.9;
  test.auc = 0.95;
  test.objective = 0.1234567;
  test.log_loss = 0.777;
  r.test = test;
  const std::string line = FormatEpochLine(r);
  EXPECT_NE(line.find("0.12346"), std::string::npos) << line;  // the objective, under test_obj, rounded
  EXPECT_EQ(line.find("0.777"), std::string::npos) << line;    // not the log loss
  // Numbers wider than their column are rounded to fit, never cut (36120995.97 was printed 3612099, 0.92306 0.9230).
  r.test->objective = 36120995.97;
  r.test->accuracy = 0.92306;
  r.train.rows = 10;
  r.train.objective = 9.856e33;
  r.train.accuracy = 1;
  const std::string wide = FormatEpochLine(r);
  EXPECT_NE(wide.find(" 3.612e+07 "), std::string::npos) << wide;
  EXPECT_NE(wide.find(" 0.9231 "), std::string::npos) << wide;
  EXPECT_NE(wide.find(" 9.856e+33 "), std::string::npos) << wide;
  EXPECT_EQ(wide.find("3612099"), std::string::npos) << wide;
}

}  // namespace
}  // namespace pimopt

namespace pimopt {
namespace {

// After --resume the records start after the checkpoint: a target the first resumed epoch meets may have been met
// before, which the line says (it claimed the resumed epoch); an AUC no epoch has (a test set of one class) is not a
// best of 0.
TEST(Report, TimeToTargetSaysWhatItCountsFrom) {
  RunConfig c;
  SetParam(c, "target-accuracy", "0.5");
  SetParam(c, "target-auc", "0.9");
  TrainResult result;
  result.resumed_from_epoch = 3;
  EpochRecord r;
  r.epoch = 4;
  Metrics test;
  test.rows = 10;
  test.accuracy = 0.8;
  test.auc = NAN;
  r.test = test;
  result.epochs.push_back(r);
  const std::vector<TargetReached> targets = TimesToTargets(c, result);
  ASSERT_EQ(targets.size(), 2u);
  EXPECT_TRUE(targets[0].reached);
  EXPECT_EQ(targets[0].counted_from_epoch, 4);
  EXPECT_NE(FormatTarget(targets[0]).find("counted from epoch 4, where this run resumed"), std::string::npos)
      << FormatTarget(targets[0]);
  EXPECT_FALSE(targets[1].measured);
  EXPECT_NE(FormatTarget(targets[1]).find("not measurable"), std::string::npos) << FormatTarget(targets[1]);
  EXPECT_EQ(FormatTarget(targets[1]).find("best 0"), std::string::npos) << FormatTarget(targets[1]);
}

TEST(Report, TimeToTargetIsTheFirstEpochThatReachesIt) {
  RunConfig c;
  SetParam(c, "target-accuracy", "0.9");
  SetParam(c, "target-auc", "0.99");
  TrainResult result;
  const double accuracy[] = {0.8, 0.91, 0.88, 0.95};
  for (int e = 0; e < 4; ++e) {
    EpochRecord r;
    r.epoch = e + 1;
    r.train_seconds = 0.5;
    r.phase_seconds["modeled_total"] = 2.0;
    r.phase_seconds["modeled_total_uncertainty"] = 0.25;
    Metrics m;
    m.rows = 10;
    m.accuracy = accuracy[e];
    m.auc = 0.9 + 0.01 * e;
    r.test = m;
    result.epochs.push_back(r);
  }
  const auto targets = TimesToTargets(c, result);
  ASSERT_EQ(targets.size(), 2u);
  EXPECT_EQ(targets[0].metric, "accuracy");
  EXPECT_EQ(targets[0].set, "test");
  EXPECT_TRUE(targets[0].reached);
  EXPECT_EQ(targets[0].epoch, 2);
  EXPECT_DOUBLE_EQ(targets[0].train_wall_s, 1.0);
  EXPECT_DOUBLE_EQ(targets[0].modeled_s, 4.0);
  EXPECT_DOUBLE_EQ(targets[0].modeled_uncertainty_s, 0.5);
  EXPECT_DOUBLE_EQ(targets[0].best, 0.95);
  EXPECT_FALSE(targets[1].reached);  // the AUC peaks at 0.93
  EXPECT_NE(FormatTarget(targets[1]).find("not reached (best 0.93)"), std::string::npos) << FormatTarget(targets[1]);
  EXPECT_NE(FormatTarget(targets[0])
                .find("reached in epoch 2 after 1.0000 s of training (modeled PIM time 4.0000 s +- 0.5000)"),
            std::string::npos)
      << FormatTarget(targets[0]);
}

}  // namespace
}  // namespace pimopt
