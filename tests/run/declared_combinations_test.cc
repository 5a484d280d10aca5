// Every parameter applies where it is accepted, and every declared combination ends in a model or a refusal that
// names a flag, never in an internal error. For each backend and algorithm, each parameter of `pimopt train` that
// affects the result or the modeled time is given a value other than its default:
//   - where its declaration says it does not apply (its conditions on --algo or --backend), the run is refused with
//     a ConfigError naming it;
//   - where it applies (its other conditions set), the run trains or is refused naming a flag (a combination the
//     backend cannot do), and a run that trains must differ from the same run without the parameter: in the model,
//     the epochs, the modeled times or the bytes moved. A parameter accepted where it changes nothing fails here.
// The data parameters are the data sources' and the scaler's (tests/data, tests/run/pipeline_test.cc); the
// modeled-time parameters are checked for where they apply, their effects at sizes where they matter elsewhere
// (tests/pim, tests/backends).
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <set>

#include "pimopt/algorithms/algorithm.h"
#include "pimopt/backends/registry.h"
#include "pimopt/core/error.h"
#include "pimopt/data/sources.h"
#include "pimopt/run/pipeline.h"

namespace pimopt {
namespace {

// A value other than the default for the numeric and text parameters: one the run accepts on small data and that
// changes what the parameter governs. A new parameter without an entry here (and no choices) fails the test.
const std::map<std::string, std::string>& AlternativeValues() {
  static const std::map<std::string, std::string> values{
      {"workers", "4"},        {"tol", "0.3"},          {"batch", "2"},          {"lr", "0.01"},
      {"lr-decay", "0.5"},     {"reg", "0.01"},         {"l1", "0.01"},          {"local-steps", "2"},
      {"rho", "0.1"},          {"local-epochs", "2"},   {"dual-passes", "2"},    {"class-weights", "3:1"}, {"cg-tol", "0.5"}, {"cg-iterations", "1"}, {"dual-lanes", "2"},
      {"seed", "5"},           {"tasklets", "4"},       {"profile-set", "dpu_frequency_hz=4e8"},
      {"dpus", "4"}};
  return values;
}

// Parameters whose alternative may legitimately leave everything the same, and why.
const std::map<std::string, std::string>& MayChangeNothing() {
  static const std::map<std::string, std::string> reasons{
      // auto compacts a synchronization only when that is smaller; on these rows every DPU touches every feature.
      {"sync-format=auto", "lossless, and dense is chosen where compacting does not pay"},
      // The measured host time is this machine's: it may equal the model by chance, never systematically.
      {"host-time=measured", "a measurement"},
      // 2 epochs of a run that reaches no plateau: a tolerance that is not met changes nothing.
      {"tol=0.3", "not met in 2 epochs by every algorithm"},
      // --lr-schedule plateau is what auto resolves to with --lr auto, and it is constant until its first plateau.
      {"lr-schedule=plateau", "the default's resolution with --lr auto"},
      {"lr-schedule=constant", "the plateau schedule (auto) is constant until its first plateau"},
      // The batched and the reference scheduler give the same models and modeled times by design.
      {"scheduler=reference", "the same results by design (docs/pim-emulator.md)"},
      // A profile whose what-if links are absent leaves every synchronization on the host.
      {"sync-path=host", "the default profile has no links: auto is host"},
      // A row shrinks in a pass where it would not move anyway; skipping it changes a later pass, beyond 2 epochs
      // (tests/algorithms/cocoa_test.cc checks what it changes).
      {"no-shrinking=true", "no effect within 2 epochs"},
      // A lane takes 256 rows a round: the test's 96 rows are one lane's, which is the sequential pass.
      {"dual-lanes=2", "the test's rows fit one lane"}};
  return reasons;
}

struct Fingerprint {
  std::vector<float> weights;
  float bias = 0;
  size_t epochs = 0;
  std::map<std::string, double> modeled;
  uint64_t bytes = 0;
  bool operator==(const Fingerprint& o) const {
    return std::memcmp(&bias, &o.bias, sizeof(float)) == 0 && weights.size() == o.weights.size() &&
           std::memcmp(weights.data(), o.weights.data(), weights.size() * sizeof(float)) == 0 &&
           epochs == o.epochs && modeled == o.modeled && bytes == o.bytes;
  }
};

enum class Outcome { kTrained, kRefused, kBroken };

struct Attempt {
  Outcome outcome = Outcome::kBroken;
  std::string message;
  Fingerprint print;
};

Attempt TryRun(const std::vector<std::pair<std::string, std::string>>& flags) {
  RunConfig config;
  for (const auto& [name, value] : flags) SetParam(config, name, value);
  Attempt a;
  try {
    const RunOutcome out = RunTraining(config, SingleProcess(), "test");
    a.outcome = Outcome::kTrained;
    a.print.weights = out.result.model.weights;
    a.print.bias = out.result.model.bias;
    a.print.epochs = out.result.epochs.size();
    for (const auto& [phase, s] : out.result.phase_seconds) {
      if (phase.rfind("modeled", 0) == 0 && phase != "modeled_host_reduction") a.print.modeled[phase] = s;
    }
    a.print.bytes = out.result.traffic.to_workers_bytes + out.result.traffic.from_workers_bytes;
  } catch (const ConfigError& e) {
    a.outcome = Outcome::kRefused;
    a.message = e.what();
  } catch (const std::exception& e) {
    a.outcome = Outcome::kBroken;
    a.message = e.what();
  }
  return a;
}

std::string Describe(const std::vector<std::pair<std::string, std::string>>& flags) {
  std::string s;
  for (const auto& [name, value] : flags) s += StrCat(" --", name, " ", value);
  return s;
}

TEST(DeclaredCombinations, EveryParameterAppliesWhereAcceptedAndNoCombinationBreaks) {
  const ParamTable<RunConfig>& table = RunParams();
  int trained = 0, refused = 0;
  std::set<std::string> changed_somewhere, tried, accepted_somewhere;
  for (const std::string backend : {"cpu", "pim"}) {
    for (const AlgorithmTraits* algo : RegisteredAlgorithms()) {
      const std::vector<std::pair<std::string, std::string>> base{
          {"data", "dense:rows=96,features=6,seed=3,test-rows=16"}, {"backend", backend}, {"algo", algo->name},
          {"epochs", "2"}, {"threads", "1"}, {"quiet", "true"}, {"no-train-metrics", "true"}};
      for (const auto& e : table.entries()) {
        const ParamInfo& info = e.info;
        if (info.effect == ParamEffect::kNone || info.group == kDataParamGroup) continue;
        if (info.name == "algo" || info.name == "backend" || info.name == "epochs") continue;
        tried.insert(info.name);
        // The values to try: every other choice, the flag set, or the alternative value.
        std::vector<std::string> values;
        if (info.type == ParamType::kChoice) {
          RunConfig defaults;
          const std::string current = table.GetText(defaults, info.name);
          for (const ParamChoice& c : info.Choices()) {
            if (c.name != current) values.push_back(c.name);
          }
        } else if (info.type == ParamType::kFlag) {
          values.push_back("true");
        } else {
          const auto it = AlternativeValues().find(info.name);
          ASSERT_NE(it, AlternativeValues().end()) << "--" << info.name << " has no alternative value in this test";
          values.push_back(it->second);
        }
        // Where it applies by its declaration: the conditions on --algo and --backend decide; the others are set.
        bool applies = true;
        std::vector<std::pair<std::string, std::string>> context = base;
        if (info.name == "train-metrics-every-epoch") {  // contradicts the base's --no-train-metrics
          std::erase_if(context, [](const auto& flag) { return flag.first == "no-train-metrics"; });
        }
        for (const ParamCondition& cond : info.applies_when) {
          if (cond.param == "algo" || cond.param == "backend") {
            const std::string& have = cond.param == "algo" ? algo->name : backend;
            applies = applies && [&] { const auto v = cond.Values(); return std::find(v.begin(), v.end(), have) != v.end(); }();
          } else {
            context.emplace_back(cond.param, cond.Values().front());
          }
        }
        if (info.name == "dpus" || info.name == "workers") {
          if (!algo->distributed) applies = false;  // sgd and mbsgd run on one worker (refused otherwise)
        }
        const Attempt reference = TryRun(context);
        ASSERT_NE(reference.outcome, Outcome::kBroken) << Describe(context) << ": " << reference.message;
        for (const std::string& value : values) {
          auto flags = context;
          flags.emplace_back(info.name, value);
          // A parameter that another needs (the inverse schedules' decay rate) comes with it.
          if (info.name == "lr-schedule" && value.rfind("inverse", 0) == 0) flags.emplace_back("lr-decay", "0.5");
          const Attempt a = TryRun(flags);
          const std::string what = Describe(flags);
          ASSERT_NE(a.outcome, Outcome::kBroken) << what << ": an internal error: " << a.message;
          if (a.outcome == Outcome::kRefused) {
            ++refused;
            EXPECT_EQ(a.message.rfind("--", 0), 0u) << what << ": a refusal must name its flag: " << a.message;
            if (!applies) {  // refused naming it, or a flag it needs that does not apply either
              bool named = false;
              for (const auto& [name, v] : flags) named = named || (name != "data" && a.message.rfind("--" + name + ":", 0) == 0);
              EXPECT_TRUE(named && a.message.rfind("--data", 0) != 0)
                  << what << ": refused for another reason: " << a.message;
            }
            continue;
          }
          ++trained;
          accepted_somewhere.insert(info.name);
          EXPECT_TRUE(applies) << what << ": accepted although its declaration says it does not apply";
          // The modeled-time parameters change times only at sizes where what they govern matters (more than
          // one chunk or DPU): their effects are the emulator's and the PIM backend's tests'.
          if (reference.outcome != Outcome::kTrained || info.effect != ParamEffect::kResult) continue;
          const std::string key = StrCat(info.name, "=", value);
          if (!(a.print == reference.print)) {
            changed_somewhere.insert(key);
          } else if (info.name == "seed" && algo->batch_meaning == BatchMeaning::kFullBatch) {
            // A full-batch method (newton) draws nothing at random: its seed only splits data, which these rows
            // (given test rows) do not need.
          } else if (!MayChangeNothing().count(key)) {
            ADD_FAILURE() << what << ": accepted, and changes neither the model, the epochs, the modeled times nor "
                          << "the bytes moved";
          }
        }
      }
    }
  }
  // A declaration that refuses its parameter everywhere (a condition that no value meets) is caught here.
  for (const std::string& name : tried) EXPECT_TRUE(accepted_somewhere.count(name)) << "--" << name << " is never accepted";
  EXPECT_GT(trained, 100);
  EXPECT_GT(refused, 20);
}

}  // namespace
}  // namespace pimopt
