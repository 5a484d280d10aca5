// A new algorithm is one file: it registers its name and traits, and both backends run it without a line changed,
// because they read the traits (here: worker state with duals) instead of switching on which algorithm runs.
// A new backend is registered the same way: the run's parameters, checks, factory and report follow from its
// registration, with nothing in src/run or src/cli changed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "pimopt/algorithms/algorithm.h"
#include "pimopt/backends/cpu/cpu_backend.h"
#include "pimopt/backends/pim/pim_backend.h"
#include "pimopt/backends/registry.h"
#include "pimopt/core/thread_pool.h"
#include "pimopt/run/pipeline.h"
#include "test_util.h"

namespace pimopt {
namespace {

// Consensus ADMM without regularization that always runs two proximal local passes per round (a variant a user
// might add): its host rule (z = the workers' mean, in both number formats) is its own, written here; no backend
// file knows it.
class MeanRule final : public ConsensusRule {
 public:
  void Apply(std::span<const float> mean, std::span<float> z, bool) const override {
    std::copy(mean.begin(), mean.end(), z.begin());
  }
  void Apply(std::span<const int64_t> mean, std::span<int64_t> z, bool) const override {
    std::copy(mean.begin(), mean.end(), z.begin());
  }
};

// Its own parameter, declared here like any algorithm's (pimopt params lists it under --algo admm2).
struct TwoPassOptions {
  TwoPassOptions() { Table().ApplyDefaults(*this); }
  double prox;
  static const ParamTable<TwoPassOptions>& Table() {
    static const ParamTable<TwoPassOptions> table = [] {
      ParamTable<TwoPassOptions> t;
      t.Add("prox", &TwoPassOptions::prox, 0.05)
          .Positive()
          .AppliesWhen("algo", {"admm2"})
          .Group(kAlgorithmParamGroup)
          .Help("admm2's proximal weight");
      return t;
    }();
    return table;
  }
};

class TwoPassAdmm final : public Algorithm {
 public:
  void Validate(const TrainConfig&) const override {}
  void ValidateForData(const TrainConfig& config, uint64_t rows) const override { ValidateLocalBatch(config, rows); }
  EpochInfo RunEpoch(IBackend& backend, const TrainConfig& config, const Partition& part, int epoch) override {
    uint64_t steps = 0;
    for (int pass = 0; pass < 2; ++pass) {
      const ShardPlan plan(LocalShards(part), config.batch, config.seed, 2 * static_cast<uint64_t>(epoch) + pass,
                           config.shuffle, part.first_worker);
      LocalSolveRequest request;
      request.plan = &plan;
      request.num_steps = MaxShardBatches(part.total_rows, config.workers, config.batch);
      request.lr = config.LearningRate(epoch);
      request.solver = LocalSolver::kProximalSgd;
      request.prox = config.algorithm_options.As<TwoPassOptions>("admm2").prox;
      backend.LocalSolve(request);
      steps += request.num_steps;
    }
    const ConsensusNorms norms = backend.Consensus(MeanRule());
    return {.steps = steps,
            .syncs = 1,
            .figures_title = "admm2",
            .figures = {{"admm2_primal_residual", "r", std::sqrt(norms.local_minus_global_sq)}}};
  }
};

PIMOPT_REGISTER_ALGORITHM_WITH_PARAMS(TwoPassAdmm, TwoPassOptions, TwoPassOptions::Table, .name = "admm2", .aliases = {}, .title = "ADMM with two local passes",
                          .listing_order = 90, .distributed = true, .default_workers = 4,
                          .batch_meaning = BatchMeaning::kLocalPerWorker, .default_batch = 8, .worker_offsets = true,
                          .syncs = SyncScaling::kOncePerEpoch);

TEST(NewAlgorithm, RunsOnBothBackendsFromItsRegistrationAlone) {
  const Dataset data = testing::SmallDense(800, 16, 5);
  TrainConfig c;
  c.algorithm = "admm2";
  c.lr = 0.1;
  c.Set("prox", "0.1");
  EXPECT_EQ(c.algorithm_options.As<TwoPassOptions>("admm2").prox, 0.1);
  EXPECT_EQ(TrainParams().Get("prox").info.AppliesText(), "--algo admm2");
  c.epochs = 4;
  EXPECT_EQ(MakeAlgorithm("admm2") != nullptr, true);
  ThreadPool pool(2);
  CpuBackend cpu(pool);
  const TrainResult a = Train(data, nullptr, c, cpu);
  EXPECT_EQ(a.partition.total_workers, 4);  // the default it declared
  EXPECT_GT(a.epochs.back().train.accuracy, 0.85);
  ASSERT_TRUE(a.epochs.back().info.Figure("admm2_primal_residual").has_value());
  EXPECT_EQ(cpu.SaveState().per_worker[0].size(), 2u);  // local model and offset, as its traits say
  PimBackend pim(pool, PimBackendOptions{});
  const TrainResult b = Train(data, nullptr, c, pim);
  EXPECT_GT(b.epochs.back().train.accuracy, 0.85);
  EXPECT_NEAR(b.epochs.back().train.accuracy, a.epochs.back().train.accuracy, 0.02);
  EXPECT_EQ(FindAlgorithm("admm2").title, "ADMM with two local passes");
}

// A backend a user might add: the CPU backend's workers behind a wrapper that counts the verbs it serves, with one
// parameter of its own.
struct CountingOptions {
  CountingOptions() { Table().ApplyDefaults(*this); }
  uint64_t report_every = 0;
  int host_threads = 0;
  static const ParamTable<CountingOptions>& Table() {
    static const ParamTable<CountingOptions> table = [] {
      ParamTable<CountingOptions> t;
      t.Add("count-every", &CountingOptions::report_every, 1)
          .Min(1)
          .Effect(ParamEffect::kNone)
          .AppliesWhen("backend", {"counting"})
          .Group("Counting backend")
          .Help("a test backend's knob");
      return t;
    }();
    return table;
  }
};

int counting_backends_made = 0;
int counting_resolved_threads = -1;
uint64_t counting_made_with = 0;

class CountingBackend final : public IBackend {
 public:
  explicit CountingBackend(ThreadPool& pool) : cpu_(pool) {}
  std::string name() const override { return "counting"; }
  using IBackend::Setup;
  void Setup(const Dataset& d, const TrainConfig& c, const Partition& p, Communicator& comm) override {
    cpu_.Setup(d, c, p, comm);
  }
  void GradientStep(std::span<const std::span<const uint32_t>> rows, uint64_t n, double lr) override {
    ++verbs_;
    cpu_.GradientStep(rows, n, lr);
  }
  void LocalSolve(const LocalSolveRequest& r) override {
    ++verbs_;
    cpu_.LocalSolve(r);
  }
  void AverageLocalModels() override {
    ++verbs_;
    cpu_.AverageLocalModels();
  }
  void MixLocalModels(const Topology& t) override { cpu_.MixLocalModels(t); }
  ConsensusNorms Consensus(const ConsensusRule& rule) override { return cpu_.Consensus(rule); }
  void ScaleOffsets(double f) override { cpu_.ScaleOffsets(f); }
  LinearModel ExportModel() const override { return cpu_.ExportModel(); }
  std::map<std::string, double> PhaseSeconds() const override { return cpu_.PhaseSeconds(); }
  TrafficCounters Traffic() const override { return cpu_.Traffic(); }
  std::map<std::string, double> Counters() override { return {{"verbs", static_cast<double>(verbs_)}}; }
  BackendState SaveState() override { return cpu_.SaveState(); }
  void RestoreState(const BackendState& s) override { cpu_.RestoreState(s); }

 private:
  CpuBackend cpu_;
  uint64_t verbs_ = 0;
};

BackendRegistration CountingRegistration() {
  BackendRegistration r;
  r.traits.name = "counting";
  r.traits.help = "the CPU backend, counting its verbs (a test)";
  r.traits.listing_order = 90;
  r.traits.param_group = "Counting backend";
  r.params = EraseParamTable(CountingOptions::Table());
  r.default_options = [] { return std::any(CountingOptions()); };
  r.resolve = [](std::any& o, int threads) {
    counting_resolved_threads = std::any_cast<CountingOptions&>(o).host_threads = threads;
  };
  r.make = [](ThreadPool& pool, const std::any& o) -> std::unique_ptr<IBackend> {
    counting_made_with = std::any_cast<const CountingOptions&>(o).report_every;
    ++counting_backends_made;
    return std::make_unique<CountingBackend>(pool);
  };
  return r;
}
const bool counting_registered = RegisterBackend(CountingRegistration());

void ExpectConfigError(const std::function<void()>& f, const std::string& flag, const std::string& fragment) {
  try {
    f();
    FAIL() << "accepted; expected an error naming " << flag;
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.parameter(), flag) << e.what();
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

RunConfig CountingRun(const std::string& backend) {
  RunConfig c;
  SetParam(c, "data", "dense:rows=600,features=12,seed=3");
  SetParam(c, "algo", "ma");
  SetParam(c, "workers", "4");
  SetParam(c, "epochs", "2");
  SetParam(c, "threads", "2");
  SetParam(c, "backend", backend);
  SetParam(c, "quiet", "true");
  return c;
}

TEST(NewBackend, RunsFromItsRegistrationAlone) {
  ASSERT_TRUE(counting_registered);
  // Its parameter and its name reach the run's table and --backend's choices.
  const auto& backend_param = RunParams().Get("backend").info;
  bool listed = false;
  for (const ParamChoice& choice : backend_param.Choices()) listed = listed || choice.name == "counting";
  EXPECT_TRUE(listed);
  ASSERT_NE(RunParams().Find("count-every"), nullptr);
  // The run builds it through the registry, with its options as given, and reads its counters into the report.
  RunConfig c = CountingRun("counting");
  SetParam(c, "count-every", "7");
  const RunOutcome counted = RunTraining(c, SingleProcess(), "test");
  EXPECT_EQ(counting_backends_made, 1);
  EXPECT_EQ(counting_made_with, 7u);
  EXPECT_EQ(counting_resolved_threads, 2);
  EXPECT_EQ(counted.result.epochs.size(), 2u);
  // The same model as the CPU backend it wraps.
  const RunOutcome cpu = RunTraining(CountingRun("cpu"), SingleProcess(), "test");
  EXPECT_EQ(counted.result.model.weights, cpu.result.model.weights);
  EXPECT_EQ(counted.result.model.bias, cpu.result.model.bias);
  // Its parameter applies only to it; the device parameters not at all (its workers are threads, it projects no
  // epochs).
  RunConfig wrong = CountingRun("cpu");
  SetParam(wrong, "count-every", "7");
  ExpectConfigError([&] { ResolveRunConfig(wrong, 1); }, "--count-every", "--backend counting");
  RunConfig projecting = CountingRun("counting");
  SetParam(projecting, "project-dpus", "64");
  ExpectConfigError([&] { ResolveRunConfig(projecting, 1); }, "--project-dpus", "only meaningful");
  ThreadPool pool(1);
  EXPECT_EQ(MakeBackend("counting", pool, RunConfig().backend_options)->projector(), nullptr);
  EXPECT_NE(MakeBackend("pim", pool, RunConfig().backend_options)->projector(), nullptr);
  EXPECT_EQ(counting_backends_made, 2);
  // An unknown name lists every registered backend.
  ExpectConfigError([] { FindBackend("gpu"); }, "--backend", "cpu, pim, counting");
}

}  // namespace
}  // namespace pimopt
