// End-to-end tests of the pimopt binary: outputs, reports, and every bad-input case of the contract (clear
// message naming the file:line or flag, exit code 2, no partial output file).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "pimopt/algorithms/checkpoint.h"
#include "pimopt/core/file_util.h"
#include "pimopt/model/model_io.h"
#include "pimopt/pim/profile.h"
#include "pimopt/run/run_config.h"
#include "commands.h"  // src/cli: the binary's entry point, for in-process runs
#include "test_util.h"

namespace pimopt {
namespace {

struct RunResult {
  int exit_code;
  std::string output;
};

RunResult RunPimopt(const std::string& args) {
  // A hang is a failure (exit 124), not a stuck test suite.
  const std::string cmd = "timeout 300 " + std::string(PIMOPT_BINARY) + " " + args + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) out.append(buf, n);
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

// `pimopt ARGS` in this process: the binary's own entry point (main is RunCli and a signal handler), its output
// captured. For tables of invocations that end before any work (hundreds of refusals: a process each cost 17 ms of
// loading). ARGS is split at spaces; single quotes keep a word together ('--lr=' is a flag with an empty value).
RunResult RunInProcess(const std::string& args) {
  std::vector<std::string> words = {"pimopt"};
  bool in_word = false, quoted = false;
  for (char c : args) {
    if (c == '\'') {
      quoted = !quoted;
      if (!in_word) words.emplace_back();
      in_word = true;
    } else if (c == ' ' && !quoted) {
      in_word = false;
    } else {
      if (!in_word) words.emplace_back();
      in_word = true;
      words.back() += c;
    }
  }
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  std::ostringstream captured;
  std::streambuf* const out = std::cout.rdbuf(captured.rdbuf());
  std::streambuf* const err = std::cerr.rdbuf(captured.rdbuf());
  const int code = cli::RunCli(static_cast<int>(words.size()), argv.data());
  std::cout.rdbuf(out);
  std::cerr.rdbuf(err);
  return {code, captured.str()};
}

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    train = dir.Path("train.svm");
    test = dir.Path("test.svm");
    ASSERT_EQ(RunPimopt("gen dense --rows 600 --features 12 --separation 0.2 --seed 3 --out " + train).exit_code, 0);
    ASSERT_EQ(RunPimopt("gen dense --rows 200 --features 12 --separation 0.2 --seed 3 --first-row 600 --out " + test)
                  .exit_code,
              0);
  }
  // A bad invocation: exit code 2, the message names `fragment`, and no output file is left behind.
  void ExpectBadInput(const std::string& args, const std::string& fragment) {
    const std::string out_model = dir.Path("should_not_exist.model");
    const RunResult r = RunPimopt(args + " ");
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
    EXPECT_NE(r.output.find(fragment), std::string::npos) << args << "\n" << r.output;
    EXPECT_EQ(r.output.find("internal error"), std::string::npos) << r.output;
    EXPECT_FALSE(std::filesystem::exists(out_model));
    EXPECT_TRUE(testing::TempLeftovers(dir.Path("")).empty());
  }
  std::string TrainArgs(const std::string& data) {
    return "train --data " + data + " --epochs 2 --out " + dir.Path("should_not_exist.model") + " --report " +
           dir.Path("should_not_exist.json");
  }
  testing::TempDir dir;
  std::string train, test;
};

TEST_F(Cli, TrainWritesModelReportAndLiblinearExport) {
  const std::string model = dir.Path("m.model"), report = dir.Path("r.json"), ll = dir.Path("ll.model");
  const RunResult r =
      RunPimopt("train --data " + train + " --test " + test +
                " --model svm --algo admm --workers 3 --epochs 6 --batch 8 --lr 0.2 --rho 0.5 --reg 1e-4"
                " --seed 9 --out " +
                model + " --report " + report + " --liblinear-out " + ll);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("test_acc"), std::string::npos);
  const LinearModel m = ReadModel(model);
  EXPECT_EQ(m.weights.size(), 12u);
  EXPECT_EQ(m.loss, LossKind::kHinge);
  const auto j = nlohmann::json::parse(testing::ReadText(report));
  EXPECT_EQ(j["config"]["algo"], "admm");
  EXPECT_EQ(j["algorithm"]["batch_meaning"], "local batch per worker");
  EXPECT_EQ(j["config"]["workers"], 3);
  EXPECT_EQ(j["config"]["seed"], 9);
  ASSERT_EQ(j["epochs"].size(), 6u);
  EXPECT_TRUE(j["epochs"][5].contains("admm_primal_residual"));
  EXPECT_GT(j["final"]["test"]["accuracy"].get<double>(), 0.8);
  EXPECT_TRUE(j["final"]["test"].contains("auc"));
  EXPECT_TRUE(j["final"]["train"].contains("log_loss"));
  EXPECT_GT(j["time"]["train_wall_seconds"].get<double>(), 0.0);
  EXPECT_TRUE(j["time"]["phases_seconds"].contains("worker_compute"));
  EXPECT_GT(j["traffic"]["host_to_workers_bytes"].get<uint64_t>(), 0u);
  EXPECT_NE(testing::ReadText(ll).find("solver_type L2R_L1LOSS_SVC_DUAL"), std::string::npos);

  // predict reproduces the final test accuracy and writes one line per row.
  const RunResult p = RunPimopt("predict --model " + model + " --data " + test + " --out " + dir.Path("pred.txt"));
  ASSERT_EQ(p.exit_code, 0) << p.output;
  char expected[64];
  std::snprintf(expected, sizeof(expected), "accuracy %.4f", j["final"]["test"]["accuracy"].get<double>());
  EXPECT_NE(p.output.find(expected), std::string::npos) << p.output << " vs " << expected;
  const std::string pred = testing::ReadText(dir.Path("pred.txt"));
  EXPECT_EQ(std::count(pred.begin(), pred.end(), '\n'), 201);
}

// --scale travels with the model: the model file and the LIBLINEAR export score raw features, so predict and
// liblinear-predict on the unscaled test file reproduce the run's test accuracy.
// The header's note that a step of one row runs on one thread: for SGD and cocoa at batch 1 with threads to spare
// (cocoa's evaluations on another), never for newton, whose passes split over them, nor for cocoa's lanes.
TEST_F(Cli, TheOneThreadNoteIsForOneRowStepsOnly) {
  const std::string note = "a step of one row does not split";
  for (const std::string algo : {"sgd", "cocoa", "newton"}) {
    const RunResult r = RunPimopt("train --data " + train + " --epochs 1 --batch 1 --threads 2 --algo " + algo);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const bool spare_threads = std::thread::hardware_concurrency() > 1;  // the note needs a second usable CPU
    EXPECT_EQ(r.output.find(note) != std::string::npos, algo != "newton" && spare_threads) << algo << "\n" << r.output;
    // cocoa's evaluations run beside its epochs on another thread; SGD is pointed to the algorithms that use them.
    EXPECT_EQ(r.output.find("its evaluations another") != std::string::npos, algo == "cocoa" && spare_threads)
        << algo << "\n" << r.output;
  }
  // Lanes split cocoa's pass over the threads: no note.
  const RunResult lanes =
      RunPimopt("train --data " + train + " --epochs 1 --batch 1 --threads 2 --algo cocoa --dual-lanes 2");
  ASSERT_EQ(lanes.exit_code, 0) << lanes.output;
  EXPECT_EQ(lanes.output.find(note), std::string::npos) << lanes.output;
  // On the PIM backend the DPUs run the pass and Train evaluates at each epoch's end: the note does not say
  // otherwise.
  const RunResult pim =
      RunPimopt("train --data " + train + " --epochs 1 --batch 1 --threads 2 --algo cocoa --backend pim");
  ASSERT_EQ(pim.exit_code, 0) << pim.output;
  EXPECT_EQ(pim.output.find("its evaluations another"), std::string::npos) << pim.output;
}

TEST_F(Cli, ScalingIsFoldedIntoTheSavedModel) {
  // The test and train files with every feature moved to 1,000 + 300 x: far from [0, 1].
  auto shifted = [&](const std::string& in, const std::string& out) {
    std::string text, line;
    std::istringstream lines(testing::ReadText(in));
    while (std::getline(lines, line)) {
      std::istringstream tokens(line);
      std::string token;
      tokens >> token;
      text += token;
      while (tokens >> token) {
        const size_t colon = token.find(':');
        text += ' ';
        text.append(token, 0, colon + 1);
        text += std::to_string(1000 + 300 * std::stod(token.substr(colon + 1)));
      }
      text += "\n";
    }
    testing::WriteText(out, text);
  };
  const std::string raw_train = dir.Path("raw_train.svm"), raw_test = dir.Path("raw_test.svm");
  shifted(train, raw_train);
  shifted(test, raw_test);
  const std::string model = dir.Path("scaled.model"), ll = dir.Path("scaled.ll"), report = dir.Path("scaled.json");
  const RunResult r =
      RunPimopt("train --data " + raw_train + " --test " + raw_test + " --scale minmax --epochs 5 --out " + model +
                " --liblinear-out " + ll + " --report " + report + " -q");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const double accuracy = nlohmann::json::parse(testing::ReadText(report))["final"]["test"]["accuracy"].get<double>();
  EXPECT_GT(accuracy, 0.8);
  const RunResult p = RunPimopt("predict --model " + model + " --data " + raw_test);
  ASSERT_EQ(p.exit_code, 0) << p.output;
  char expected[64];
  std::snprintf(expected, sizeof(expected), "accuracy %.4f", accuracy);
  EXPECT_NE(p.output.find(expected), std::string::npos) << p.output << " vs " << expected;
  EXPECT_NE(testing::ReadText(model).find("scale is folded into the weights"), std::string::npos);
  // The same data on its original scale, scaled the same way: the same test accuracy (within one of its 200 rows:
  // the shifted copy's scaled features differ from the original's by float rounding).
  const std::string plain_report = dir.Path("plain.json");
  ASSERT_EQ(RunPimopt("train --data " + train + " --test " + test + " --scale minmax --epochs 5 --report " +
                      plain_report + " -q")
                .exit_code,
            0);
  const double plain =
      nlohmann::json::parse(testing::ReadText(plain_report))["final"]["test"]["accuracy"].get<double>();
  EXPECT_NEAR(plain, accuracy, 1.0 / 200 + 1e-9);
  if (std::system("command -v liblinear-predict > /dev/null 2>&1") == 0) {
    const std::string cmd = "liblinear-predict " + raw_test + " " + ll + " " + dir.Path("ll.out") + " 2>&1";
    FILE* pipe = popen(cmd.c_str(), "r");
    char buf[256] = {0};
    const size_t n = fread(buf, 1, sizeof(buf) - 1, pipe);
    pclose(pipe);
    const std::string out(buf, n);
    std::snprintf(expected, sizeof(expected), "Accuracy = %g%%", 100 * accuracy);
    EXPECT_NE(out.find(expected), std::string::npos) << out << " vs " << expected;
  }
}

TEST_F(Cli, TuneCrossValidatesTheGridThenTrainsTheBest) {
  const std::string model = dir.Path("tuned.model");
  const std::string report = dir.Path("tune.json");
  const RunResult r =
      RunPimopt("tune --data " + train + " --test " + test + " --algo mbsgd --grid 'reg=1e-5,0.5;lr=0.1' --cv 3 --epochs 3 --out " +
                model + " --report " + report);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(testing::ReadText(report));
  ASSERT_EQ(j["tuning"]["trials"].size(), 2u);
  EXPECT_EQ(j["tuning"]["trials"][1]["setting"]["reg"], "0.5");
  EXPECT_EQ(j["tuning"]["folds"], 3);
  const size_t best = j["tuning"]["best"].get<size_t>();
  EXPECT_EQ(j["config"]["reg"].get<double>(), best == 0 ? 1e-5 : 0.5);  // the final training is the best setting
  EXPECT_NE(r.output.find("2 settings x 3 folds"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("reg=0.5 lr=0.1: 3-fold cross-validation: accuracy"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("best: --reg"), std::string::npos) << r.output;
  EXPECT_TRUE(std::filesystem::exists(model));
  // Warm starts are the default; --no-warm-start trains every setting from zero (the first setting is the same).
  const RunResult warm = RunPimopt("tune --data " + train + " --grid 'reg=auto,1e-3' --cv 3 -q");
  const RunResult cold = RunPimopt("tune --data " + train + " --grid 'reg=auto,1e-3' --cv 3 -q --no-warm-start");
  ASSERT_EQ(warm.exit_code, 0) << warm.output;
  ASSERT_EQ(cold.exit_code, 0) << cold.output;
  auto line_of = [](const std::string& out, const std::string& start) {
    const size_t at = out.find(start);
    return at == std::string::npos ? std::string() : out.substr(at, out.find('\n', at) - at);
  };
  const std::string first = line_of(warm.output, "reg=auto: 3-fold");
  EXPECT_FALSE(first.empty()) << warm.output;
  EXPECT_EQ(first.substr(0, first.find(" (")), line_of(cold.output, "reg=auto: 3-fold").substr(0, first.find(" (")));
  const RunResult bad = RunPimopt("tune --data " + train + " --grid 'seed'");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.output.find("--grid"), std::string::npos) << bad.output;
  const RunResult cv = RunPimopt("train --data " + train + " --cv 4 --epochs 2 -q");
  ASSERT_EQ(cv.exit_code, 0) << cv.output;
  EXPECT_NE(cv.output.find("4-fold cross-validation: accuracy"), std::string::npos) << cv.output;
}

// A model whose finite weights overflow float arithmetic on the data (scores inf - inf = NaN) is bad input naming
// the model file; predict once looped forever ranking NaN scores.
TEST_F(Cli, PlanPrintsTheTableAndRecommendationOrJsonAndRefusesTrainOnlyFlags) {
  const std::string data = "dense:rows=4096,features=16,separation=0.05,noise=0.02,seed=5,test-rows=1024";
  const RunResult r =
      RunPimopt("plan --data " + data + " --dpus 8 --algos ma,admm --pilot-epochs 3 --lr 0.002 --target-accuracy 0.75");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("8 DPUs of profile pim-opt; target test accuracy 0.75"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("recommended: --algo "), std::string::npos) << r.output;
  const RunResult j = RunPimopt("plan --data " + data +
                                " --dpus 8 --algos ma --pilot-epochs 2 --json --transfers async --tasklet-split features");
  ASSERT_EQ(j.exit_code, 0) << j.output;
  const auto plan = nlohmann::json::parse(j.output);
  EXPECT_EQ(plan["candidates"].size(), 1u);
  // The PIM settings the timed epoch used are part of the flags that reproduce it.
  const std::string flags = plan["candidates"][0]["flags"].get<std::string>();
  EXPECT_NE(flags.find("--transfers async"), std::string::npos) << flags;
  EXPECT_NE(flags.find("--tasklet-split features"), std::string::npos) << flags;
  EXPECT_FALSE(plan["target_given"].get<bool>());
  EXPECT_GT(plan["candidates"][0]["epoch"]["modeled_epoch_s"].get<double>(), 0);
  const RunResult algo = RunPimopt("plan --data " + data + " --algo ma");
  EXPECT_EQ(algo.exit_code, 2);
  EXPECT_NE(algo.output.find("--algo: not a flag of 'pimopt plan'"), std::string::npos) << algo.output;
  const RunResult unknown = RunPimopt("plan --data " + data + " --algos ma,nope");
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.output.find("--algos"), std::string::npos) << unknown.output;
}

// predict labels data of classes (IDX) as the model's training data was: with the default --positive-classes a
// one-vs-rest model of class 1 was scored against classes 0,2,4,6 (accuracy 0.50 instead of 0.99), silently.
TEST_F(Cli, PredictLabelsClassesAsTheModelsTrainingDid) {
  const std::string model = dir.Path("class1.model");
  const RunResult t = RunPimopt(
      "train --data fashion-mnist:test --positive-classes 1 --epochs 2 -q --threads 2 "
      "--test-fraction 0.5 --out " +
      model);
  ASSERT_EQ(t.exit_code, 0) << t.output;
  const RunResult p = RunPimopt("predict --model " + model + " --data fashion-mnist:test --threads 2");
  ASSERT_EQ(p.exit_code, 0) << p.output;
  const size_t at = p.output.find("accuracy ");
  ASSERT_NE(at, std::string::npos) << p.output;
  EXPECT_GT(std::stod(p.output.substr(at + 9)), 0.95) << p.output;
  ExpectBadInput("predict --model " + model + " --data fashion-mnist:test --positive-classes 3",
                 "--positive-classes: the model " + model + " was trained with --positive-classes 1");
}

TEST_F(Cli, PredictRefusesAModelWhoseScoresOverflow) {
  const std::string model = dir.Path("m.model"), huge = dir.Path("huge.model");
  ASSERT_EQ(RunPimopt("train --data " + train + " --epochs 2 -q --out " + model).exit_code, 0);
  // Every weight and the bias near FLT_MAX: any row with a positive feature scores inf (or inf - inf = NaN).
  std::string text;
  bool in_weights = false;
  for (const std::string& line : SplitText(testing::ReadText(model), '\n')) {
    if (line.empty()) continue;
    in_weights = in_weights && line != "end";
    text += (in_weights ? "3.4e38" : line.rfind("bias ", 0) == 0 ? "bias 3.4e38" : line) + "\n";
    in_weights = in_weights || line == "weights";
  }
  testing::WriteText(huge, text);
  const RunResult r = RunPimopt("predict --model " + huge + " --data " + test);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(huge + ": the model gives"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("a non-finite score"), std::string::npos) << r.output;
  EXPECT_EQ(RunPimopt("predict --model " + model + " --data " + test).exit_code, 0);
}

// Hostile paths and sizes: an output over an input, /dev/null as an output, an unwritable second output (nothing
// of the command is left), absurd thread counts and row numbers. Each is bad input (exit 2) naming the flag.
TEST_F(Cli, OutputsNeverReplaceInputsDevicesOrEachOther) {
  ExpectBadInput("train --data " + train + " --epochs 1 --out " + train,
                 "--out: '" + train + "' is the file of --data");
  ExpectBadInput("train --data " + train + " --test " + test + " --epochs 1 --report " + test,
                 "is the file of --test: writing it would destroy the input");
  ExpectBadInput("train --data " + train + " --epochs 1 --out " + dir.Path("m") + " --report " + dir.Path("./m"),
                 "--report: '" + dir.Path("./m") + "' is also the file of --out");
  // predict and convert too (predict --out over its data or its model wrote the predictions over them).
  const std::string kept = dir.Path("kept.model"), copy = dir.Path("copy.svm");
  ASSERT_EQ(RunPimopt("train --data " + train + " --epochs 1 -q --out " + kept).exit_code, 0);
  testing::WriteText(copy, testing::ReadText(test));
  const std::string model_text = testing::ReadText(kept), data_text = testing::ReadText(copy);
  ExpectBadInput("predict --model " + kept + " --data " + copy + " --out " + copy,
                 "--out: '" + copy + "' is the file of --data");
  ExpectBadInput("predict --model " + kept + " --data " + copy + " --out " + kept,
                 "--out: '" + kept + "' is the file of --model");
  ExpectBadInput("convert " + copy + " " + dir.Path("./copy.svm"), "is the file of IN");
  EXPECT_EQ(testing::ReadText(kept), model_text);
  EXPECT_EQ(testing::ReadText(copy), data_text);
  // /dev/null as an output: written through, still a character device afterwards.
  const RunResult null_out = RunPimopt("train --data " + train + " --epochs 1 -q --out /dev/null --report /dev/null");
  EXPECT_EQ(null_out.exit_code, 0) << null_out.output;
  struct stat st;
  ASSERT_EQ(::stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  // The report fails (a full device) after the model was written: the model is not left behind.
  const std::string model = dir.Path("first.model");
  const RunResult full = RunPimopt("train --data " + train + " --epochs 1 -q --out " + model + " --report /dev/full");
  EXPECT_EQ(full.exit_code, 2) << full.output;
  EXPECT_NE(full.output.find("/dev/full: write failed"), std::string::npos) << full.output;
  EXPECT_FALSE(std::filesystem::exists(model));
  EXPECT_TRUE(testing::TempLeftovers(dir.Path("")).empty());
  // A full disk at the checkpoint or the model: bad input naming the file, nothing left behind.
  ExpectBadInput("train --data " + train + " --epochs 2 --checkpoint /dev/full", "/dev/full: write failed");
  ExpectBadInput("train --data " + train + " --epochs 1 --out /dev/full --report " + dir.Path("r.json"),
                 "/dev/full: write failed");
  EXPECT_FALSE(std::filesystem::exists(dir.Path("r.json")));
  // A diverging learning rate: a clear error naming the remedy, never a NaN model.
  ExpectBadInput("train --data " + train + " --algo mbsgd --epochs 3 --lr 3e38 --reg 0 --out " + dir.Path("nan.model"),
                 "training diverged in epoch 1 (non-finite weights or bias): lower --lr or raise --reg");
  EXPECT_FALSE(std::filesystem::exists(dir.Path("nan.model")));
  ExpectBadInput("train --data " + train + " --epochs 1 --threads 100000", "--threads: 100000 is out of range");
  ExpectBadInput("predict --model " + model + " --data " + test + " --threads 5000", "--threads");
  ExpectBadInput("gen dense --rows 10 --first-row 18446744073709551610 --out " + dir.Path("g.svm"),
                 "--first-row: rows 18446744073709551610");
}

// A tiny file whose feature numbers are huge: the training state (CPU: 35 vectors of 2^28 floats for 8 ADMM
// workers, 35 GiB; PIM: 2,048 DPUs' MRAM for 4 million features) would exceed the machine's memory. Refused before any
// allocation, naming the flag that sizes it, instead of ending in the out-of-memory killer.
TEST_F(Cli, MemoryNeedsBeyondTheMachineAreRefusedBeforeAllocating) {
  std::string rows;
  for (int i = 0; i < 8; ++i) rows += StrCat(i % 2 ? "+1" : "-1", " 1:1 268435456:1\n");
  testing::WriteText(dir.Path("wide.svm"), rows);
  if (AvailableMemoryBytes() < (uint64_t{35} << 30)) {
    ExpectBadInput("train --data " + dir.Path("wide.svm") + " --scale none --algo admm --workers 8 --epochs 1",
                   "--workers: the training state (35 vectors of 268435457 floats");
  }
  std::string many;
  for (int i = 0; i < 2048; ++i) many += StrCat(i % 2 ? "+1" : "-1", " 1:1 4000000:1\n");
  testing::WriteText(dir.Path("pim_wide.svm"), many);
  ExpectBadInput("train --data " + dir.Path("pim_wide.svm") +
                     " --scale none --backend pim --algo ma --dpus 2048 "
                     "--epochs 1",
                 "--dpus: the emulated MRAM (2048 DPUs x ");
  // Synthetic data beyond any machine's memory: refused before the planted direction or a row is allocated (each
  // ended in "out of memory", exit 1, or allocated for minutes).
  const std::string out = " --out " + dir.Path("g.svm");
  ExpectBadInput("gen dense --rows 1000000000 --features 1000000" + out,
                 "--rows: generating 1000000000 rows x 1000000 dense features needs");
  ExpectBadInput("gen yfcc --rows 10 --features 100000000000" + out, "--rows: generating 10 rows x 100000000000 dense");
  ExpectBadInput("gen dense --rows 1 --features 18446744073709551615" + out, "--rows: generating 1 rows x");
  ExpectBadInput("gen sparse --vocabulary 100000000000" + out, "--vocabulary: the value tables of 39 fields");
  ExpectBadInput("train --data dense:rows=1000000000,features=1000000", "--rows: generating");
}

// SIGTERM at any moment of a run that writes checkpoints: the process ends by the signal, no temporary file is
// left, and the checkpoint (when one was written) is complete and resumes.
TEST_F(Cli, SigtermLeavesNoTemporaryAndAValidCheckpoint) {
  const std::string args =
      "train --data dense:rows=40000,features=2000,seed=5 --algo sgd --lr 0.001 -q "
      "--no-train-metrics --checkpoint-every 1";
  for (const char* delay : {"0.05", "0.6", "1.5"}) {
    testing::TempDir run_dir;
    const std::string ckpt = run_dir.Path("run.ckpt");
    const std::string script = "bash -c '" + std::string(PIMOPT_BINARY) + " " + args + " --epochs 30 --checkpoint " +
                               ckpt + " > /dev/null 2>&1 & pid=$!; sleep " + delay +
                               "; kill -TERM $pid; wait $pid; echo status=$?'";
    FILE* pipe = popen(script.c_str(), "r");
    char buf[256] = {};
    const size_t got = fread(buf, 1, sizeof(buf) - 1, pipe);
    pclose(pipe);
    EXPECT_NE(std::string(buf, got).find("status=143"), std::string::npos) << delay << ": " << std::string(buf, got);
    EXPECT_TRUE(testing::TempLeftovers(run_dir.Path("")).empty()) << delay;
    if (std::filesystem::exists(ckpt)) {
      EXPECT_GE(ReadCheckpoint(ckpt).epochs_done, 1) << delay;  // complete: it parses, checksum included
    }
  }
}

// Runs pimopt with `args` (words split at spaces) in a child process whose output goes to /dev/null, sends `sig`
// after `delay_s` and returns the wait status. `ignore_sig`: the child starts with `sig` ignored, as under nohup.
int RunAndSignal(const std::string& args, double delay_s, int sig, bool ignore_sig = false) {
  std::vector<std::string> words{PIMOPT_BINARY};
  std::istringstream in(args);
  for (std::string w; in >> w;) words.push_back(w);
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    const int null_fd = ::open("/dev/null", O_WRONLY);
    ::dup2(null_fd, 1);
    ::dup2(null_fd, 2);
    if (ignore_sig) ::signal(sig, SIG_IGN);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(delay_s));
  ::kill(pid, sig);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

double SecondsToRun(const std::string& args) {
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(RunPimopt(args).exit_code, 0) << args;
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// SIGTERM, SIGINT or SIGHUP at a random moment of a command (seeded: the same moments on every run of the suite),
// half of them near the end, where the outputs are written: every output is either the old file, byte for byte, or
// the complete new one; one command's outputs are replaced all together or not at all; no temporary is left.
TEST_F(Cli, SignalsAtRandomMomentsLeaveEachOutputOldOrCompleteNeverHalfWritten) {
  const std::string model = dir.Path("m.model"), report = dir.Path("r.json"), ll = dir.Path("ll.model"),
                    ckpt = dir.Path("run.ckpt"), gen = dir.Path("g.svm"), bin = dir.Path("g.bin"),
                    pred = dir.Path("p.txt");
  const std::string train_args =
      "train --data sparse:rows=10000,features=131072,seed=3 --algo mbsgd --lr 0.1 -q "
      "--checkpoint-every 1 --checkpoint " +
      ckpt + " --out " + model + " --report " + report + " --liblinear-out " + ll + " --epochs ";
  const std::string gen_args = "gen sparse --rows 50000 --features 100000 --out " + gen + " --seed ";
  const std::string convert_args = "convert " + gen + " " + bin;
  const std::string predict_args = "predict --model " + model + " --data " + gen + " --out " + pred;
  // The old outputs (another run's) and the new ones an uninterrupted run writes.
  std::map<std::string, std::string> old_bytes, new_bytes;
  auto snapshot = [&](std::map<std::string, std::string>& into, const std::vector<std::string>& paths) {
    for (const std::string& p : paths) into[p] = testing::ReadText(p);
  };
  // The old binary cache and predictions are of other data (seed 5) than the old LIBSVM file (seed 1).
  ASSERT_EQ(RunPimopt(gen_args + "5").exit_code, 0);
  ASSERT_EQ(RunPimopt(train_args + "2").exit_code, 0);
  ASSERT_EQ(RunPimopt(convert_args).exit_code, 0);
  ASSERT_EQ(RunPimopt(predict_args).exit_code, 0);
  ASSERT_EQ(RunPimopt(gen_args + "1").exit_code, 0);
  snapshot(old_bytes, {model, report, ll, ckpt, gen, bin, pred});
  struct Case {
    std::string args;
    std::vector<std::string> outputs;  // replaced together
    int trials;
  };
  // Each command reads the old files of the others (the inputs stay as they were before the trials).
  const std::vector<Case> cases = {{train_args + "3", {model, report, ll}, 8},
                                   {gen_args + "2", {gen}, 4},
                                   {"convert " + gen + " " + bin, {bin}, 4},
                                   {predict_args, {pred}, 4}};
  auto restore = [&] {
    for (const auto& [path, bytes] : old_bytes) testing::WriteText(path, bytes);
  };
  std::mt19937 rng(13);
  const int signals[] = {SIGTERM, SIGINT, SIGHUP};
  int completed = 0, killed = 0, trial = 0;
  for (const Case& c : cases) {
    restore();
    const double seconds = SecondsToRun(c.args);
    snapshot(new_bytes, c.outputs);
    for (const std::string& out : c.outputs) ASSERT_NE(new_bytes[out], old_bytes[out]) << out;
    for (int k = 0; k < c.trials; ++k, ++trial) {
      restore();
      const double delay = k % 2 == 0 ? std::uniform_real_distribution<double>(0.0, seconds)(rng)
                                      : std::uniform_real_distribution<double>(0.8 * seconds, 1.05 * seconds)(rng);
      const int sig = signals[trial % 3];
      const int status = RunAndSignal(c.args, delay, sig);
      const std::string what = c.args.substr(0, c.args.find(' ')) + " signal " + std::to_string(sig) + " after " +
                               std::to_string(delay) + " s";
      ASSERT_TRUE((WIFEXITED(status) && WEXITSTATUS(status) == 0) || (WIFSIGNALED(status) && WTERMSIG(status) == sig))
          << what << ": status " << status;
      (WIFEXITED(status) ? completed : killed)++;
      const std::vector<std::string> leftovers = testing::TempLeftovers(dir.Path(""));
      EXPECT_TRUE(leftovers.empty()) << what << ": left " << (leftovers.empty() ? "" : leftovers.front());
      for (const std::string& left : leftovers) std::filesystem::remove(left);  // one failure, not every later trial
      bool all_old = true, all_new = true;
      for (const std::string& out : c.outputs) {
        const std::string now = testing::ReadText(out);
        all_old = all_old && now == old_bytes[out];
        // The report holds measured times: it is new when it is complete JSON of this run (3 epochs).
        const auto json = out == report ? nlohmann::json::parse(now, nullptr, false) : nlohmann::json();
        const bool is_new = out == report ? json.is_object() && json.contains("final") && json["epochs"].size() == 3
                                          : now == new_bytes[out];
        all_new = all_new && is_new;
      }
      EXPECT_TRUE(all_old != all_new) << what << ": the outputs are neither all old nor all complete new ones";
      if (WIFEXITED(status)) {
        EXPECT_TRUE(all_new) << what;
      }
      if (c.outputs[0] == model) {
        EXPECT_GE(ReadCheckpoint(ckpt).epochs_done, 1) << what;  // complete, the old one or a new one
      }
    }
  }
  std::cout << "signals: " << completed << " runs completed, " << killed << " killed\n";
  EXPECT_GT(killed, 0);
}

// A run started with SIGHUP ignored (nohup) survives a SIGHUP and writes its outputs. The run must still be going
// when the signal comes at 0.2 s: 40 epochs take about 0.9 s here (3 epochs, 0.23 s after the dense-step prefetch,
// ended before the signal once).
TEST_F(Cli, IgnoredHangupStaysIgnored) {
  const std::string model = dir.Path("m.model");
  const std::string args =
      "train --data dense:rows=20000,features=1000,seed=5 --algo mbsgd --epochs 40 --lr 0.01 -q --out " + model;
  const auto start = std::chrono::steady_clock::now();
  const int status = RunAndSignal(args, 0.2, SIGHUP, /*ignore_sig=*/true);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
  ASSERT_GT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 0.25)
      << "the run ended before the signal";
  EXPECT_EQ(ReadModel(model).weights.size(), 1000u);
}

TEST_F(Cli, PimBackendReportsModeledPhasesAndCounters) {
  const std::string report = dir.Path("pim.json");
  const RunResult r = RunPimopt("train --data " + train + " --test " + test +
                                " --backend pim --algo ma --dpus 8 --tasklets 12 --profile prim-640 --batch 8 "
                                "--lr 0.2 --epochs 3 -q --report " +
                                report);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(testing::ReadText(report));
  EXPECT_EQ(j["backend"], "pim");
  EXPECT_EQ(j["backend_counters"]["dpus"], 8);
  EXPECT_EQ(j["backend_counters"]["tasklets"], 12);
  EXPECT_EQ(j["backend_counters"]["dpu_frequency_hz"], 267e6);
  for (const char* phase :
       {"modeled_cpu_to_dpu", "modeled_dpu_kernel", "modeled_dpu_compute", "modeled_dpu_dma", "modeled_dpu_sync",
        "modeled_dpu_to_cpu", "modeled_host_reduction", "measured_host_reduction", "emulation_wall"}) {
    EXPECT_TRUE(j["epochs"][2]["phases_seconds"].contains(phase)) << phase;
    EXPECT_TRUE(j["time"]["phases_seconds"].contains(phase)) << phase;
  }
  EXPECT_GT(j["epochs"][2]["traffic"]["workers_to_host_bytes"].get<uint64_t>(), 0u);
  EXPECT_GT(j["final"]["test"]["accuracy"].get<double>(), 0.8);
}

TEST_F(Cli, KilledRunResumesFromTheLastCheckpointToTheSameModel) {
  const std::string ckpt = dir.Path("run.ckpt"), resumed = dir.Path("resumed.model"), full = dir.Path("full.model");
  const std::string args =
      "train --data dense:rows=20000,features=2000,seed=5 --algo sgd --lr 0.001 --epochs 40 -q "
      "--no-train-metrics";
  // SIGKILL the run once its first checkpoint exists (it is then a few epochs in, or writing another checkpoint).
  const std::string kill_script = "bash -c '" + std::string(PIMOPT_BINARY) + " " + args + " --checkpoint " + ckpt +
                                  " > /dev/null 2>&1 & pid=$!; for i in $(seq 1500); do [ -f " + ckpt +
                                  " ] && break; sleep 0.02; done; sleep 0.2; kill -9 $pid; wait $pid; echo status=$?'";
  FILE* pipe = popen(kill_script.c_str(), "r");
  char buf[256] = {};
  const size_t got = fread(buf, 1, sizeof(buf) - 1, pipe);
  pclose(pipe);
  ASSERT_NE(std::string(buf, got).find("status=137"), std::string::npos)
      << std::string(buf, got) << " (the run ended before the kill)";
  ASSERT_TRUE(std::filesystem::exists(ckpt));
  const RunResult r = RunPimopt(args + " --checkpoint " + ckpt + " --resume --out " + resumed + " --report " +
                                dir.Path("resumed.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(testing::ReadText(dir.Path("resumed.json")));
  EXPECT_GE(j["resumed_from_epoch"].get<int>(), 1);
  EXPECT_LT(j["resumed_from_epoch"].get<int>(), 40);
  ASSERT_EQ(RunPimopt(args + " --out " + full).exit_code, 0);
  auto weights = [](const std::string& path) {
    const std::string t = testing::ReadText(path);
    return t.substr(t.find("loss "));  // skip the comment lines that record the command line
  };
  EXPECT_EQ(weights(resumed), weights(full));
  ExpectBadInput(TrainArgs(train) + " --resume", "--resume: needs --checkpoint");
}

TEST_F(Cli, SameSeedSameModelFileWhateverTheThreads) {
  const std::string a = dir.Path("a.model"), b = dir.Path("b.model");
  ASSERT_EQ(
      RunPimopt("train --data " + train + " --algo ga --workers 4 --batch 32 --epochs 2 --threads 1 -q --out " + a)
          .exit_code,
      0);
  ASSERT_EQ(
      RunPimopt("train --data " + train + " --algo ga --workers 4 --batch 32 --epochs 2 --threads 3 -q --out " + b)
          .exit_code,
      0);
  auto weights = [](const std::string& path) {
    const std::string t = testing::ReadText(path);
    return t.substr(t.find("loss "));  // skip the comment lines that record the command line
  };
  EXPECT_EQ(weights(a), weights(b));
}

TEST_F(Cli, GenConvertInfoRoundTrip) {
  const std::string bin = dir.Path("t.bin"), back = dir.Path("back.svm");
  ASSERT_EQ(RunPimopt("convert " + train + " " + bin).exit_code, 0);
  ASSERT_EQ(RunPimopt("convert " + bin + " " + back).exit_code, 0);
  EXPECT_EQ(testing::ReadText(train), testing::ReadText(back));
  const RunResult info = RunPimopt("info " + bin);
  ASSERT_EQ(info.exit_code, 0);
  EXPECT_NE(info.output.find("rows         600"), std::string::npos) << info.output;
  EXPECT_NE(info.output.find("features     12"), std::string::npos);
  const RunResult sparse = RunPimopt("gen sparse --rows 500 --features 4096 --out " + dir.Path("s.svm"));
  ASSERT_EQ(sparse.exit_code, 0) << sparse.output;
  EXPECT_NE(RunPimopt("info " + dir.Path("s.svm")).output.find("sparse"), std::string::npos);
}

TEST_F(Cli, MalformedDataFilesNameFileAndLine) {
  const std::string bad = dir.Path("bad.svm");
  testing::WriteText(bad, "1 1:0.5\n-1 3:1 2:1\n");
  ExpectBadInput(TrainArgs(bad), "bad.svm:2: feature indices must increase");
  testing::WriteText(bad, "1 1:0.5\n7 1:1\n");
  ExpectBadInput(TrainArgs(bad), "bad.svm:2: unknown label value '7'");
  testing::WriteText(bad, "1 0:1\n");
  ExpectBadInput(TrainArgs(bad), "bad.svm:1: feature index 0");
  testing::WriteText(bad, "1 1:nan\n");
  ExpectBadInput(TrainArgs(bad), "bad.svm:1:");
  testing::WriteText(bad, "");
  ExpectBadInput(TrainArgs(bad), "bad.svm: empty file");
  ExpectBadInput(TrainArgs(dir.Path("missing.svm")), "missing.svm: no such file");
  testing::WriteText(dir.Path("x-images-idx3-ubyte"), std::string("\x01\x02\x08\x03", 4));
  ExpectBadInput(TrainArgs(dir.Path("x-images-idx3-ubyte")), "wrong magic");
  std::string bin = testing::ReadText(train);
  ASSERT_EQ(RunPimopt("convert " + train + " " + dir.Path("ok.bin")).exit_code, 0);
  bin = testing::ReadText(dir.Path("ok.bin"));
  testing::WriteText(dir.Path("cut.bin"), bin.substr(0, bin.size() / 2));
  ExpectBadInput(TrainArgs(dir.Path("cut.bin")), "cut.bin: truncated");
  ExpectBadInput("predict --model " + train + " --data " + test, "not a pimopt model");
}

TEST_F(Cli, BadFlagsNameTheFlag) {
  ExpectBadInput(TrainArgs(train) + " --algo lbfgs", "--algo");
  ExpectBadInput(TrainArgs(train) + " --algo newton --model svm", "--model");
  ExpectBadInput(TrainArgs(train) + " --algo newton --backend pim", "--algo");
  ExpectBadInput(TrainArgs(train) + " --algo newton --batch 8", "--batch");
  ExpectBadInput(TrainArgs(train) + " --model mlp", "--model");
  ExpectBadInput(TrainArgs(train) + " --lr -0.1", "--lr");
  ExpectBadInput(TrainArgs(train) + " --lr abc", "--lr");
  ExpectBadInput(TrainArgs(train) + " --epochs 0", "--epochs");
  ExpectBadInput(TrainArgs(train) + " --reg -1", "--reg");
  ExpectBadInput(TrainArgs(train) + " --algo sgd --workers 4", "--workers");
  ExpectBadInput(TrainArgs(train) + " --algo ga --workers 4 --batch 2", "--batch");
  ExpectBadInput(TrainArgs(train) + " --algo ma --l1 0.1", "--l1");
  ExpectBadInput(TrainArgs(train) + " --algo ga --rho 1", "--rho");
  ExpectBadInput(TrainArgs(train) + " --algo admm --local-steps 3", "--local-steps");
  ExpectBadInput(TrainArgs(train) + " --backend mpi",
                 "--backend: there is no 'mpi' backend: start pimopt under mpirun");
  ExpectBadInput(TrainArgs(train) + " --dpus 64", "--dpus: only meaningful with --backend pim");
  ExpectBadInput(TrainArgs(train) + " --backend pim --profile cray", "unknown hardware profile 'cray'");
  ExpectBadInput(TrainArgs(train) + " --backend pim --algo sgd --dpus 4", "--dpus");
  ExpectBadInput(TrainArgs(train) + " --backend pim --algo ma --dpus 4 --workers 8", "contradicts --workers");
  ExpectBadInput(TrainArgs(train) + " --backend pim --algo ma --dpus 4 --tasklets 40", "--tasklets");
  ExpectBadInput(TrainArgs(train) + " --backend pim --algo ma --dpus 4 --profile-set colour=1", "--profile-set");
  ExpectBadInput(TrainArgs(train) + " --backend pim --algo ma --dpus 4 --tasklet-split rows", "--tasklet-split");
  ExpectBadInput(TrainArgs(train) + " --backend pim --algo ma --dpus 4 --sigmoid cubic", "--sigmoid");
  ExpectBadInput(TrainArgs(train) + " --sigmoid float", "--sigmoid: only meaningful with --backend pim");
  ExpectBadInput(TrainArgs(train) + " --test " + test + " --test-fraction 0.2", "--test-fraction");
  ExpectBadInput(TrainArgs(train) + " --class-weights 15", "--class-weights");
  ExpectBadInput(TrainArgs(train) + " --scale zscore", "--scale");
  ExpectBadInput(TrainArgs(train) + " --workers 100000 --algo ma", "--workers");
  ExpectBadInput("train --data " + train + " --out /no/such/dir/m.model", "--out");
  ExpectBadInput(TrainArgs("dense:rows=oops"), "rows='oops'");
  ExpectBadInput("frobnicate", "frobnicate");
  ExpectBadInput("gen dense --fields 3 --out " + dir.Path("g.svm"), "--fields: not a parameter of gen dense");
  ExpectBadInput("gen sparse --positive-rate 2 --out " + dir.Path("g.svm"), "--positive-rate: 2 is out of range");
}

// pimopt prim's numbers: a negative, an overflowing, a fractional or an empty value is refused naming the flag (it
// once wrapped to 2^64 - 1 and crashed), and a size whose input cannot fit the DPUs' MRAM is refused before any
// allocation, naming the largest that fits.
// --command names one command for every format: json printed every command whatever it named (an unknown name too).
TEST_F(Cli, ParamsCommandIsCheckedForEveryFormat) {
  for (const std::string format : {"text", "markdown", "json"}) {
    const RunResult r = RunPimopt("params --format " + format + " --command nope");
    EXPECT_EQ(r.exit_code, 2) << format << "\n" << r.output;
    EXPECT_NE(r.output.find("--command: unknown command 'nope'"), std::string::npos) << format << "\n" << r.output;
  }
  const RunResult one = RunPimopt("params --format json --command tune");
  ASSERT_EQ(one.exit_code, 0) << one.output;
  const nlohmann::json only = nlohmann::json::parse(one.output);
  EXPECT_EQ(only.size(), 1u);
  EXPECT_TRUE(only.contains("tune"));
  EXPECT_GT(nlohmann::json::parse(RunPimopt("params --format json").output).size(), 10u);  // every command
  // What the README says the listing holds, the JSON too: what each parameter affects, its unit and its help.
  const nlohmann::json train = nlohmann::json::parse(RunPimopt("params --format json --command train").output)["train"];
  std::map<std::string, nlohmann::json> by_name;
  for (const nlohmann::json& p : train) by_name[p["name"]] = p;
  EXPECT_EQ(by_name.at("reg")["affects"], "result");
  EXPECT_EQ(by_name.at("threads")["affects"], "none");
  EXPECT_EQ(by_name.at("cv")["unit"], "folds");
  EXPECT_NE(by_name.at("reg")["help"].get<std::string>().find("L2 strength"), std::string::npos);
}

// pimopt collectives: both routes of every collective for each size, as a table or JSON; bad sizes, element widths
// and DPU counts are refused naming the flag.
TEST_F(Cli, CollectivesCompareTheHostAndTheSoftwareRoute) {
  const RunResult r = RunPimopt("collectives --dpus 256 --bytes 65536,1048576 --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j["dpus"], 256);
  ASSERT_EQ(j["rows"].size(), 10u);  // five collectives x two sizes
  for (const auto& row : j["rows"]) {
    EXPECT_GT(row["host"]["seconds"].get<double>(), 0.0) << row.dump();
    EXPECT_NEAR(row["speedup"].get<double>(),
                row["host"]["seconds"].get<double>() / row["software"]["seconds"].get<double>(), 1e-9);
    EXPECT_EQ(row["host"]["from_dpu_bytes"], row["software"]["from_dpu_bytes"]) << row.dump();
  }
  const RunResult table = RunPimopt("collectives --dpus 64 --bytes 4096 --profile-set direct_from_dpu_bytes_per_s=1e9");
  ASSERT_EQ(table.exit_code, 0) << table.output;
  EXPECT_NE(table.output.find("| reduce-scatter | 4096 |"), std::string::npos) << table.output;
  ExpectBadInput("collectives --bytes 12", "--bytes: '12'");
  ExpectBadInput("collectives --bytes 64,,128", "--bytes: ''");
  ExpectBadInput("collectives --bytes -8", "--bytes");
  ExpectBadInput("collectives --bytes 99999999999999999999", "--bytes");
  ExpectBadInput("collectives --element-bytes 3", "--element-bytes");
  ExpectBadInput("collectives --dpus 0", "--dpus");
  ExpectBadInput("collectives --dpus 9999", "--dpus: 9999 DPUs");
}

TEST_F(Cli, PrimRefusesNumbersItCannotHoldNamingTheFlag) {
  ExpectBadInput("prim VA --param -1", "--param");
  ExpectBadInput("prim VA --param 18446744073709551616", "--param: 18446744073709551616 is out of range");
  ExpectBadInput("prim VA --param 18446744073709551615", "at most 8388608 on 1 DPUs");
  ExpectBadInput("prim VA --param 2.7", "--param");
  ExpectBadInput("prim VA --param ''", "--param");
  ExpectBadInput("prim MLP --param 100000 --dpus 4", "--param");
  ExpectBadInput("prim GEMV --param 4294967296 --dpus 64", "--param");
  ExpectBadInput("prim VA --dpus -1 --param 1024", "--dpus");
  ExpectBadInput("prim VA --dpus 0 --param 1024", "--dpus");
  ExpectBadInput("prim VA --tasklets 99999999999 --param 1024", "--tasklets");
  ExpectBadInput("prim VA --threads -2 --param 1024", "--threads");
  ExpectBadInput("prim VA --tasklets 24 --param 4096", "--tasklets: 24 tasklets do not fit: kernel 'prim_va'");
  ExpectBadInput("prim VA --shuffle-seed -3 --param 1024", "--shuffle-seed");
  ExpectBadInput("gen dense --rows 10 --first-row -1 --out " + dir.Path("g.svm"), "--first-row");
  EXPECT_EQ(RunPimopt("prim VA --param 8388608").exit_code, 0);  // the largest that fits one DPU
  ExpectBadInput("prim VA --kernels nope --param 1024", "--kernels");
  EXPECT_EQ(RunPimopt("prim VA --kernels port --param 4096").exit_code, 0);  // the C++ port, the programs' reference
}

// Every parameter of every command, as the binary declares it (pimopt params --format json), given hostile values:
// each value outside the declared bounds or type is refused with exit 2 naming the flag; a value within them never
// ends in a signal or an internal error (the commands that read an input are given a missing one, so a value within
// the bounds ends at that input's error, after every flag check). A command added without a base invocation here
// fails the test.
TEST_F(Cli, EveryDeclaredParameterRefusesHostileValuesNamingItself) {
  const RunResult listed = RunPimopt("params --format json");
  ASSERT_EQ(listed.exit_code, 0) << listed.output;
  const nlohmann::json commands = nlohmann::json::parse(listed.output);
  const std::string missing = dir.Path("missing.svm"), out = dir.Path("should_not_exist.svm");
  struct Base {
    std::string args;
    bool inputs_missing;  // values within the bounds can run: they end at the missing input
  };
  const std::map<std::string, Base> bases = {
      {"train", {"train --data " + missing, true}},
      {"tune", {"tune --grid reg=1,2 --data " + missing, true}},
      {"plan", {"plan --data " + missing, true}},
      {"predict", {"predict --model " + dir.Path("missing.model") + " --data " + missing, true}},
      {"gen dense", {"gen dense --out " + out, false}},
      {"gen sparse", {"gen sparse --out " + out, false}},
      {"gen yfcc", {"gen yfcc --out " + out, false}},
      {"convert", {"convert " + missing + " " + out, true}},
      {"info", {"info " + missing, true}},
      {"params", {"params", false}},
      {"profile", {"profile pim-opt", false}},
      {"validate", {"validate -q --hw-data " + dir.Path("missing.csv"), true}},
      {"prim", {"prim VA --param 1024", false}},
      {"collectives", {"collectives --bytes 4096", false}},
  };
  struct Hostile {
    std::string text;
    std::optional<double> number;  // nullopt: not a number at all
    bool whole;
  };
  const std::vector<Hostile> hostile = {
      {"-1", -1.0, true},   {"0", 0.0, true},         {"18446744073709551616", 18446744073709551616.0, true},
      {"1e308", 1e308, false}, {"nan", std::nullopt, false}, {"inf", std::nullopt, false},
      {"2.7", 2.7, false},  {"", std::nullopt, false}, {"[1,2]", std::nullopt, false},
      {"2147483648", 2147483648.0, true}, {"4294967296", 4294967296.0, true}};  // past int32, uint32
  std::set<std::string> tested;  // a declaration shared by commands (train's table in tune and plan) runs once
  int refused = 0, within = 0;
  for (const auto& [command, params] : commands.items()) {
    ASSERT_TRUE(bases.count(command)) << "no base invocation for '" << command << "': add one to this test";
    const Base& base = bases.at(command);
    for (const nlohmann::json& p : params) {
      const std::string type = p["type"];
      if (type == "flag" || type == "text" || !tested.insert(p.dump()).second) continue;
      std::string conditions;
      for (const auto& [param, values] : p["applies_when"].items()) {
        const std::string value = values[0];
        conditions += " --" + param + (value == "true" ? "" : " " + value);  // a flag's condition: the flag
      }
      const bool whole_type = type == "integer" || type == "count";
      for (const Hostile& h : hostile) {
        bool refuse = !h.number.has_value();
        if (type == "choice") {
          refuse = true;  // none of the values is a choice's name
        } else if (h.number) {
          const double v = *h.number;
          if (whole_type && (!h.whole || h.text == "18446744073709551616")) refuse = true;  // beyond every whole type
          if (p.contains("min") && (v < p["min"].get<double>() || (p["min_exclusive"] && v == p["min"].get<double>())))
            refuse = true;
          if (p.contains("max") && (v > p["max"].get<double>() || (p["max_exclusive"] && v == p["max"].get<double>())))
            refuse = true;
        }
        if (!refuse && !base.inputs_missing) continue;  // it would run the command for real
        const std::string flag = p["flag"];
        const std::string args = base.args + conditions + " '" + flag + "=" + h.text + "'";
        const RunResult r = RunInProcess(args);
        EXPECT_EQ(r.output.find("internal error"), std::string::npos) << args << "\n" << r.output;
        if (refuse) {
          ++refused;
          EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
          EXPECT_NE(r.output.find(flag), std::string::npos) << args << "\n" << r.output;
        } else {
          ++within;
          EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 2) << args << "\n" << r.output;  // never a signal
        }
      }
    }
  }
  EXPECT_GT(refused, 600);
  EXPECT_GT(within, 40);
  std::printf("%d values refused, %d within the bounds ran\n", refused, within);
  EXPECT_FALSE(std::filesystem::exists(out));
}

TEST_F(Cli, FlagsAreCheckedBeforeTheDataIsRead) {
  // The data file does not exist: the flag's error must come first.
  const std::string missing = "train --data " + dir.Path("missing.svm");
  ExpectBadInput(missing + " --backend pim --sigmoid cubic", "--sigmoid: unknown sigmoid 'cubic'");
  ExpectBadInput(missing + " --backend pim --tasklet-split rows", "--tasklet-split");
  ExpectBadInput(missing + " --backend pim --tasklets 40", "--tasklets");
  ExpectBadInput(missing + " --backend pim --tasklets 20", "--tasklets: 20 tasklets do not fit");
  ExpectBadInput(missing + " --backend pim --profile-set colour=1", "--profile-set");
  ExpectBadInput(missing + " --algo admm --rho -1", "--rho");
  ExpectBadInput(missing, "missing.svm: no such file");
}

TEST_F(Cli, HelpListsEveryParameterOfTheTable) {
  const RunResult help = RunPimopt("train --help");
  ASSERT_EQ(help.exit_code, 0);
  const RunResult params = RunPimopt("params");
  ASSERT_EQ(params.exit_code, 0);
  for (const auto& e : RunParams().entries()) {
    EXPECT_NE(help.output.find(e.info.Flag() + " "), std::string::npos) << e.info.name;
    EXPECT_NE(help.output.find(e.info.help.substr(0, 30)), std::string::npos) << e.info.name;
    EXPECT_NE(params.output.find(e.info.Flag()), std::string::npos) << e.info.name;
  }
}

TEST_F(Cli, ProfileCommandShowsEveryFieldWithUnitAndSource) {
  const RunResult list = RunPimopt("profile");
  ASSERT_EQ(list.exit_code, 0);
  for (const std::string& name : pim::ProfileNames()) EXPECT_NE(list.output.find(name), std::string::npos) << name;
  const RunResult one = RunPimopt("profile pim-opt --set slots.float_mul=7");
  ASSERT_EQ(one.exit_code, 0) << one.output;
  for (const auto& e : pim::ProfileFields().entries()) {
    EXPECT_NE(one.output.find(e.info.name + " "), std::string::npos) << e.info.name;
    EXPECT_NE(one.output.find(e.info.source), std::string::npos) << e.info.name;
  }
  EXPECT_NE(one.output.find("*7 "), std::string::npos) << one.output;
  const RunResult prim = RunPimopt("profile prim-640");
  EXPECT_NE(prim.output.find("2.67e+08       Hz           [PrIM] (this preset)"), std::string::npos) << prim.output;
  ExpectBadInput("profile cray", "unknown hardware profile 'cray'");
  ExpectBadInput("profile pim-opt --set colour=1", "unknown profile field 'colour'");
}

TEST_F(Cli, CalibratedHostConstantsAreAcceptedByTrain) {
  const RunResult calib = RunPimopt("profile --calibrate-host --budget 0.3");
  ASSERT_EQ(calib.exit_code, 0) << calib.output;
  const size_t at = calib.output.find("--profile-set ");
  ASSERT_NE(at, std::string::npos) << calib.output;
  std::string overrides = calib.output.substr(at + 14);
  overrides = overrides.substr(0, overrides.find_first_of(" \n"));
  const RunResult run = RunPimopt("train --data " + train +
                                  " --backend pim --algo ma --dpus 4 --batch 8 -q "
                                  "--epochs 1 --profile-set " +
                                  overrides);
  EXPECT_EQ(run.exit_code, 0) << run.output;
  ExpectBadInput("profile --calibrate-host --budget 0", "--budget");
  ExpectBadInput("profile pim-opt --budget 3", "--budget: only meaningful with --calibrate-host");
}

TEST_F(Cli, ResumeUnderAnotherResultOptionIsRefusedNamingIt) {
  const std::string ckpt = dir.Path("run.ckpt");
  const std::string run = "train --data " + train + " --backend pim --algo ma --dpus 4 --batch 8 -q";
  ASSERT_EQ(RunPimopt(run + " --epochs 3 --checkpoint " + ckpt).exit_code, 0);
  ExpectBadInput(run + " --epochs 4 --checkpoint " + ckpt + " --resume --sigmoid float",
                 "belongs to another run: it was written with --sigmoid table; this run has --sigmoid float");
  ExpectBadInput(run + " --epochs 4 --checkpoint " + ckpt + " --resume --tasklet-split features",
                 "it was written with --tasklet-split samples; this run has --tasklet-split features");
  ExpectBadInput(run + " --epochs 4 --checkpoint " + ckpt + " --resume --profile-set dma_pipeline_stall=0.5",
                 "it was written with --profile-set ; this run has --profile-set dma_pipeline_stall=0.5");
  ExpectBadInput(run + " --epochs 4 --checkpoint " + ckpt + " --resume --scale none",
                 "it was written with --scale minmax; this run has --scale none");
  ExpectBadInput(run + " --epochs 4 --checkpoint " + ckpt + " --resume --reg 0.001",
                 "it was written with --reg auto; this run has --reg 0.001");
  ExpectBadInput(
      "train --data " + train + " --algo ma --workers 4 --batch 8 -q --epochs 4 --checkpoint " + ckpt + " --resume",
      "belongs to another run: it was written by the pim backend; this run uses --backend cpu");
  ExpectBadInput("train --data " + test + " --backend pim --algo ma --dpus 4 --batch 8 --epochs 4 -q --checkpoint " +
                     ckpt + " --resume",
                 "it was written for other training data (600 rows x 12 features; this run: 200 x 12)");
  // The same options (and more epochs) resume.
  const RunResult ok = RunPimopt(run + " --epochs 4 --checkpoint " + ckpt + " --resume --report " + dir.Path("r.json"));
  ASSERT_EQ(ok.exit_code, 0) << ok.output;
  EXPECT_EQ(nlohmann::json::parse(testing::ReadText(dir.Path("r.json")))["resumed_from_epoch"], 3);
}

}  // namespace
}  // namespace pimopt
