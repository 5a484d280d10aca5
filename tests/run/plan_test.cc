// pimopt plan: its predictions against full runs on the emulator (the stated tolerances), the projection from fewer
// emulated DPUs, the emulated pilot, the recommendation, and the flags it refuses.
#include "pimopt/run/plan.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "pimopt/core/error.h"
#include "pimopt/run/pipeline.h"
#include "pimopt/run/report.h"

namespace pimopt {
namespace {

// A set whose test accuracy climbs over a few epochs at a small constant rate (0.69 -> 0.85 in about 3 epochs).
constexpr const char* kData = "dense:rows=8192,features=32,separation=0.05,noise=0.02,seed=5,test-rows=2048";
constexpr double kTarget = 0.85;

RunConfig Base(uint32_t dpus) {
  RunConfig c;
  SetParam(c, "data", kData);
  SetParam(c, "lr", "0.002");
  SetParam(c, "epochs", "12");
  SetParam(c, "dpus", StrCat(dpus));
  SetParam(c, "target-accuracy", StrCat(kTarget));
  SetParam(c, "threads", "2");
  return c;
}

struct FullRun {
  double epoch_s = 0;  // mean modeled seconds per epoch
  TargetReached target;
};

// The full run the plan predicts: its flags, on the emulator, to the end.
FullRun RunFully(const PlanCandidate& c, uint32_t dpus, int epochs = 12) {
  RunConfig config;
  SetParam(config, "data", kData);
  SetParam(config, "lr", "0.002");
  SetParam(config, "epochs", StrCat(epochs));
  SetParam(config, "backend", "pim");
  SetParam(config, "algo", c.algorithm);
  if (c.algorithm != "mbsgd") SetParam(config, "dpus", StrCat(dpus));
  SetParam(config, "target-accuracy", StrCat(kTarget));
  SetParam(config, "threads", "2");
  const RunOutcome out = RunTraining(config, SingleProcess(), "test");
  FullRun r;
  for (const EpochRecord& e : out.result.epochs) r.epoch_s += e.phase_seconds.at("modeled_total");
  r.epoch_s /= static_cast<double>(out.result.epochs.size());
  r.target = TimesToTargets(out.config, out.result).front();
  return r;
}

// Tolerances the plan is held to (docs/algorithms.md "Planning"): the modeled epoch within 2% when timed at the run's
// size and 6% when projected from fewer DPUs; the float pilot's epochs to the target within 2 of the fixed-point run's.
TEST(Plan, PredictsFullEmulatedRunsWithinTheStatedTolerances) {
  PlanOptions options;
  options.algorithms = {"mbsgd", "ga", "ma", "admm"};
  int calls = 0;
  const Plan plan = MakePlan(Base(16), options, [&](const PlanCandidate&) { ++calls; });
  EXPECT_EQ(calls, 4);
  ASSERT_EQ(plan.candidates.size(), 4u);
  EXPECT_EQ(plan.dpus, 16u);
  EXPECT_EQ(plan.set, "test");
  EXPECT_EQ(plan.metric, "accuracy");
  ASSERT_GE(plan.best, 0);
  std::map<std::string, double> actual_time;
  for (const PlanCandidate& c : plan.candidates) {
    SCOPED_TRACE(c.algorithm);
    EXPECT_TRUE(c.timed_at_run_size);
    EXPECT_EQ(c.dpus, c.algorithm == "mbsgd" ? 1u : 16u);
    EXPECT_NE(c.flags.find("--algo " + c.algorithm), std::string::npos);
    const FullRun full = RunFully(c, 16);
    EXPECT_NEAR(c.epoch.epoch_s / full.epoch_s, 1.0, 0.02);
    ASSERT_TRUE(c.reached);
    ASSERT_TRUE(full.target.reached);
    EXPECT_LE(std::abs(c.epochs_to_target - full.target.epoch), 2);
    EXPECT_NEAR(c.time_to_target_s, c.epochs_to_target * c.epoch.epoch_s, 1e-12);
    EXPECT_GT(c.bytes_to_target, 0);
    actual_time[c.algorithm] = full.target.modeled_s;
  }
  // The recommendation: the fastest of the full runs, or within 25% of it.
  double fastest = INFINITY;
  for (const auto& [algo, t] : actual_time) fastest = std::min(fastest, t);
  EXPECT_LE(actual_time.at(plan.candidates[plan.best].algorithm), 1.25 * fastest);
  for (const PlanCandidate& c : plan.candidates) {
    if (c.reached) {
      EXPECT_GE(c.time_to_target_s, plan.candidates[plan.best].time_to_target_s);
    }
  }
  const nlohmann::json j = PlanJson(plan);
  EXPECT_EQ(j["recommended"], plan.candidates[plan.best].algorithm);
  EXPECT_EQ(j["candidates"].size(), 4u);
  EXPECT_NE(FormatPlan(plan).find("recommended: " + plan.candidates[plan.best].flags), std::string::npos);
}

TEST(Plan, ProjectsFromFewerEmulatedDpusWithinSixPercent) {
  PlanOptions options;
  options.algorithms = {"ga", "ma", "dsgd", "admm"};
  options.timing_dpus = 16;  // the run has 64
  options.pilot_epochs = 2;
  const Plan plan = MakePlan(Base(64), options);
  for (const PlanCandidate& c : plan.candidates) {
    SCOPED_TRACE(c.algorithm);
    EXPECT_FALSE(c.timed_at_run_size);
    EXPECT_EQ(c.epoch.dpus, 64u);
    EXPECT_NEAR(c.epoch.epoch_s / RunFully(c, 64, 2).epoch_s, 1.0, 0.06);
  }
}

TEST(Plan, AnEmulatedPilotIsTheFullRunItself) {
  PlanOptions options;
  options.algorithms = {"ma"};
  options.pilot_backend = "pim";
  const Plan plan = MakePlan(Base(16), options);
  ASSERT_EQ(plan.best, 0);
  const PlanCandidate& c = plan.candidates[0];
  const FullRun full = RunFully(c, 16, c.pilot_epochs);
  EXPECT_EQ(c.epochs_to_target, full.target.epoch);
  EXPECT_NEAR(c.time_to_target_s / full.target.modeled_s, 1.0, 1e-9);
}

TEST(Plan, WithoutATargetAimsHalfAPointBelowTheBestPilot) {
  RunConfig base = Base(8);
  base.target_accuracy = 0;
  base.given.erase("target-accuracy");
  PlanOptions options;
  options.algorithms = {"ma", "admm"};
  options.pilot_epochs = 4;
  const Plan plan = MakePlan(base, options);
  EXPECT_FALSE(plan.target_given);
  double best = 0;
  for (const PlanCandidate& c : plan.candidates) best = std::max(best, c.best_metric);
  EXPECT_NEAR(plan.target, best - 0.005, 1e-4);
  EXPECT_GE(plan.best, 0);
}

std::string ErrorOf(RunConfig base, PlanOptions options = {}) {
  try {
    MakePlan(base, options);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(Plan, RefusesWhatAPlanCannotUseNamingTheFlag) {
  RunConfig with_algo = Base(8);
  SetParam(with_algo, "algo", "ma");
  EXPECT_NE(ErrorOf(with_algo).find("--algo"), std::string::npos);
  EXPECT_NE(ErrorOf(with_algo).find("--algos"), std::string::npos);
  RunConfig with_out = Base(8);
  SetParam(with_out, "out", "/tmp/never.model");
  EXPECT_NE(ErrorOf(with_out).find("--out"), std::string::npos);
  PlanOptions unknown;
  unknown.algorithms = {"ma", "sgdd"};
  EXPECT_NE(ErrorOf(Base(8), unknown).find("--algos"), std::string::npos);
  // More DPUs than the profile has: train refuses that run, so the plan does, before any pilot.
  EXPECT_NE(ErrorOf(Base(100000)).find("--dpus: 100000 DPUs: profile 'pim-opt' has 2048"), std::string::npos);
  PlanOptions twice;  // would run twice and be compared with itself
  twice.algorithms = {"ma", "admm", "ma"};
  EXPECT_NE(ErrorOf(Base(8), twice).find("--algos: 'ma' is listed twice"), std::string::npos);
  PlanOptions backend;
  backend.pilot_backend = "gpu";
  EXPECT_NE(ErrorOf(Base(8), backend).find("--pilot-backend"), std::string::npos);
  RunConfig rho = Base(8);
  SetParam(rho, "rho", "0.1");  // ADMM's only
  PlanOptions no_admm;
  no_admm.algorithms = {"ma", "ga"};
  EXPECT_NE(ErrorOf(rho, no_admm).find("--rho"), std::string::npos);
}

// A candidate whose epoch could not be timed (D-PSGD on 16 DPUs of a profile whose links join only the 8 DPUs of a
// chip, timed on 4) is shown as untimed and never ranked: no time to the target, no place in the recommendation.
TEST(Plan, AnUntimedCandidateIsShownAsSuchAndNeverRanked) {
  RunConfig base = Base(16);
  SetParam(base, "profile", "links-chip");
  SetParam(base, "epochs", "4");
  PlanOptions options;
  options.algorithms = {"dsgd", "mbsgd"};
  options.timing_dpus = 4;
  const Plan plan = MakePlan(base, options);
  ASSERT_EQ(plan.candidates.size(), 2u);
  const PlanCandidate& dsgd = plan.candidates[0];
  EXPECT_FALSE(std::isfinite(dsgd.epoch.epoch_s) && dsgd.epoch.epoch_s > 0);
  EXPECT_FALSE(dsgd.Timed());
  EXPECT_FALSE(dsgd.Ranked());
  EXPECT_TRUE(plan.candidates[1].Timed());
  if (plan.best >= 0) {
    EXPECT_EQ(plan.candidates[plan.best].algorithm, "mbsgd");
  }
  const nlohmann::json j = PlanJson(plan);
  EXPECT_EQ(j["candidates"][0]["timed"], false);
  EXPECT_EQ(j["candidates"][0]["ranked"], false);
  EXPECT_TRUE(j["candidates"][0]["time_to_target_s"].is_null());
  const std::string text = FormatPlan(plan);
  EXPECT_EQ(text.find("nan"), std::string::npos) << text;
  EXPECT_EQ(text.find("next: dsgd"), std::string::npos) << text;
  EXPECT_NE(text.find("untimed"), std::string::npos) << text;
}

}  // namespace
}  // namespace pimopt
