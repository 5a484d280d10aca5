// GA-SGD with K workers and global batch B must give MB-SGD's model (batch B) up to float rounding; with PIM-Opt's
// per-worker batches (--ga-batches per-worker) every worker gets B/K rows of its own shard per step.
#include <gtest/gtest.h>

#include "pimopt/backends/cpu/cpu_backend.h"
#include "pimopt/core/thread_pool.h"
#include "test_util.h"

namespace pimopt {
namespace {

double MaxAbsDiff(const LinearModel& a, const LinearModel& b) {
  double d = std::fabs(a.bias - b.bias);
  for (size_t j = 0; j < a.weights.size(); ++j)
    d = std::max(d, static_cast<double>(std::fabs(a.weights[j] - b.weights[j])));
  return d;
}

double MaxAbs(const LinearModel& a) {
  double m = std::fabs(a.bias);
  for (float w : a.weights) m = std::max(m, static_cast<double>(std::fabs(w)));
  return m;
}

void ExpectGaEqualsMb(const Dataset& data, LossKind loss, int workers, uint64_t batch) {
  TrainConfig mb;
  mb.algorithm = "mbsgd";
  mb.objective.loss = loss;
  mb.objective.l2 = 1e-3;
  mb.batch = batch;
  mb.lr = 0.2;
  mb.epochs = 3;
  TrainConfig ga = mb;
  ga.algorithm = "ga";
  ga.workers = workers;
  const TrainResult a = testing::TrainCpu(data, mb), b = testing::TrainCpu(data, ga);
  ASSERT_GT(MaxAbs(a.model), 0.1);
  EXPECT_LT(MaxAbsDiff(a.model, b.model), 1e-4 * MaxAbs(a.model))
      << LossName(loss) << " K=" << workers << " B=" << batch;
  // A different batch size gives a genuinely different model: the comparison above can fail.
  TrainConfig other = mb;
  other.batch = batch * 2;
  EXPECT_GT(MaxAbsDiff(a.model, testing::TrainCpu(data, other).model), 1e-3);
}

TEST(GaEqualsMb, DenseLogisticAndHinge) {
  const Dataset data = testing::SmallDense(1500, 40);
  ExpectGaEqualsMb(data, LossKind::kLogistic, 4, 64);
  ExpectGaEqualsMb(data, LossKind::kHinge, 7, 50);  // 50 rows over 7 workers: uneven slices
}

TEST(GaEqualsMb, Sparse) {
  const Dataset data = testing::SmallSparse(3000, 1 << 10);
  ExpectGaEqualsMb(data, LossKind::kLogistic, 5, 128);
}

// Sparse gradient steps keep the L2 decay as a lazy scale and touch only the batch's coordinates; the same rows
// stored dense take the dense formula. The models agree up to rounding, also when the scale is folded back into the
// weights many times (decay 0.75 per step: below 1e-5 every 40 steps). The local SGD steps too (MA-SGD and ADMM
// start each round from the global model, which the sparse steps read in place; D-PSGD from each worker's own).
TEST(SparseSteps, MatchTheDenseFormula) {
  const Dataset sparse = testing::SmallSparse(2000, 1 << 9, 5);
  const Dataset dense = sparse.ToDense();
  for (const char* algo : {"mbsgd", "ga", "ma", "admm", "dsgd"}) {
    for (const double l2 : {1e-3, 0.5}) {
      TrainConfig c;
      c.algorithm = algo;
      c.workers = std::string(algo) == "mbsgd" ? 1 : 3;
      c.objective.l2 = l2;
      c.batch = 32;
      c.lr = 0.5;
      c.epochs = 2;
      const TrainResult a = testing::TrainCpu(sparse, c), b = testing::TrainCpu(dense, c);
      ASSERT_GT(MaxAbs(b.model), 1e-3) << algo << " l2 " << l2;
      EXPECT_LT(MaxAbsDiff(a.model, b.model), 1e-4 * MaxAbs(b.model)) << algo << " l2 " << l2;
    }
  }
}

// Forwards to a CPU backend and records the rows each GradientStep gives each worker.
class RecordingBackend final : public IBackend {
 public:
  explicit RecordingBackend(ThreadPool& pool) : inner_(pool) {}
  std::string name() const override { return "recording"; }
  void Setup(const Dataset& d, const TrainConfig& c, const Partition& p, Communicator& comm) override {
    inner_.Setup(d, c, p, comm);
  }
  void GradientStep(std::span<const std::span<const uint32_t>> rows, uint64_t batch_rows, double lr) override {
    std::vector<std::vector<uint32_t>> step;
    for (auto r : rows) step.emplace_back(r.begin(), r.end());
    steps.push_back(std::move(step));
    batch_sizes.push_back(batch_rows);
    inner_.GradientStep(rows, batch_rows, lr);
  }
  void LocalSolve(const LocalSolveRequest& r) override { inner_.LocalSolve(r); }
  void AverageLocalModels() override { inner_.AverageLocalModels(); }
  ConsensusNorms Consensus(const ConsensusRule& rule) override { return inner_.Consensus(rule); }
  void ScaleOffsets(double factor) override { inner_.ScaleOffsets(factor); }
  void MixLocalModels(const Topology& topology) override { inner_.MixLocalModels(topology); }
  LinearModel ExportModel() const override { return inner_.ExportModel(); }
  std::map<std::string, double> PhaseSeconds() const override { return inner_.PhaseSeconds(); }
  TrafficCounters Traffic() const override { return inner_.Traffic(); }
  BackendState SaveState() override { return inner_.SaveState(); }
  void RestoreState(const BackendState& s) override { inner_.RestoreState(s); }

  std::vector<std::vector<std::vector<uint32_t>>> steps;  // per step, per worker: local rows
  std::vector<uint64_t> batch_sizes;

 private:
  CpuBackend inner_;
};

TEST(GaPerWorkerBatches, EveryWorkerTakesTheNextRunOfItsOwnShard) {
  const Dataset data = testing::SmallDense(1000, 20);
  TrainConfig c;
  c.algorithm = "ga";
  c.workers = 4;
  c.batch = 64;  // 16 rows per worker per step
  c.epochs = 1;
  c.shuffle = false;  // the artifact's cursor: data order
  c.Set("ga-batches", (true) ? "per-worker" : "random");
  ThreadPool pool(2);
  RecordingBackend backend(pool);
  Train(data, nullptr, c, backend, TrainOptions{});
  const auto shards = MakeShards(1000, 4);  // 250 rows each: 16 runs of 16 (the last 10 rows, then wrapping)
  ASSERT_EQ(backend.steps.size(), 16u);
  for (size_t t = 0; t < backend.steps.size(); ++t) {
    ASSERT_EQ(backend.steps[t].size(), 4u);
    for (uint32_t k = 0; k < 4; ++k) {
      const auto& rows = backend.steps[t][k];
      const uint32_t expected = t < 15 ? 16 : 10;
      ASSERT_EQ(rows.size(), expected) << "step " << t << " worker " << k;
      for (uint32_t i = 0; i < rows.size(); ++i) {
        EXPECT_EQ(rows[i], shards[k].begin + t * 16 + i) << "step " << t << " worker " << k;
      }
    }
    EXPECT_EQ(backend.batch_sizes[t], t < 15 ? 64u : 40u);
  }
  // The random global batch gives other rows, and another model.
  TrainConfig random = c;
  random.Set("ga-batches", (false) ? "per-worker" : "random");
  RecordingBackend other(pool);
  const TrainResult a = Train(data, nullptr, random, other, TrainOptions{});
  EXPECT_NE(other.steps[0], backend.steps[0]);
  EXPECT_GT(MaxAbsDiff(a.model, backend.ExportModel()), 1e-4);
}

TEST(GaPerWorkerBatches, OneWorkerInDataOrderIsMbSgdInDataOrder) {
  const Dataset data = testing::SmallDense(800, 30);
  TrainConfig mb;
  mb.algorithm = "mbsgd";
  mb.batch = 32;
  mb.lr = 0.2;
  mb.epochs = 2;
  mb.shuffle = false;
  TrainConfig ga = mb;
  ga.algorithm = "ga";
  ga.workers = 1;
  ga.Set("ga-batches", (true) ? "per-worker" : "random");
  const TrainResult a = testing::TrainCpu(data, mb), b = testing::TrainCpu(data, ga);
  ASSERT_GT(MaxAbs(a.model), 0.1);
  EXPECT_LT(MaxAbsDiff(a.model, b.model), 1e-5 * MaxAbs(a.model));
}

TEST(GaPerWorkerBatches, TheBatchMustSplitEvenlyOverTheWorkers) {
  const Dataset data = testing::SmallDense(400, 10);
  TrainConfig c;
  c.algorithm = "ga";
  c.workers = 3;
  c.batch = 64;
  c.Set("ga-batches", (true) ? "per-worker" : "random");
  try {
    testing::TrainCpu(data, c);
    FAIL() << "accepted a batch that does not split over the workers";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("--batch"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("multiple of --workers (3)"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace pimopt
