// Checkpoint and resume: a run resumed from a checkpoint ends with the bit-identical model of an uninterrupted run,
// for every algorithm on the CPU backend and for the PIM backend; bad checkpoints are rejected with a clear error.
#include "pimopt/algorithms/admm.h"
#include "pimopt/algorithms/checkpoint.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "pimopt/backends/cpu/cpu_backend.h"
#include "pimopt/backends/pim/pim_backend.h"
#include "pimopt/core/error.h"
#include "pimopt/core/thread_pool.h"
#include "pimopt/data/binary_format.h"
#include "test_util.h"

namespace pimopt {
namespace {

std::unique_ptr<IBackend> MakeBackend(const std::string& kind, ThreadPool& pool) {
  if (kind == "pim") return std::make_unique<PimBackend>(pool, PimBackendOptions{});
  return std::make_unique<CpuBackend>(pool);
}

// "admm-auto": ADMM with its adaptive penalty (--rho auto), whose current value is part of the checkpoint.
TrainConfig ConfigFor(std::string algo) {
  TrainConfig c;
  const bool adaptive_rho = algo == "admm-auto";
  if (adaptive_rho) algo = "admm";
  const bool hinge = algo == "cocoa-svm";  // the hinge loss: its shrinking state is part of each worker's
  if (hinge) algo = "cocoa";
  c.algorithm = algo;
  c.objective.l2 = 1e-3;
  c.lr = 0.1;
  c.algorithm_options.As<AdmmOptions>("admm").rho = 0.1;
  c.workers = (algo == "sgd" || algo == "mbsgd" || algo == "newton") ? 1 : 4;
  c.batch = algo == "sgd" || algo == "cocoa" || algo == "newton" ? 1 : (algo == "ga" || algo == "mbsgd" ? 32 : 8);
  c.schedule = LrSchedule::kInverse;
  c.lr_decay = 0.5;
  c.seed = 4;
  if (adaptive_rho) c.algorithm_options.As<AdmmOptions>("admm").rho = AdmmOptions::kAutoRho;
  if (hinge) c.objective.loss = LossKind::kHinge;
  return c;
}

void ExpectResumeMatchesUninterrupted(const std::string& backend_kind, std::string algo, const Dataset& data) {
  testing::TempDir dir;
  const std::string path = dir.Path("run.ckpt");
  ThreadPool pool(2);
  TrainConfig c = ConfigFor(algo);
  // Shrinking acts over passes: a skipped row differs only in a later pass, so the hinge loss's CoCoA runs longer.
  c.epochs = algo == "cocoa-svm" ? 16 : 4;
  auto full_backend = MakeBackend(backend_kind, pool);
  const LinearModel full = Train(data, nullptr, c, *full_backend, {}).model;

  TrainOptions first;
  first.checkpoint_path = path;
  first.checkpoint_every = 1;
  TrainConfig half = c;
  half.epochs = c.epochs / 2;  // "killed" half way: a new process resumes
  auto b1 = MakeBackend(backend_kind, pool);
  Train(data, nullptr, half, *b1, first);
  ASSERT_TRUE(std::filesystem::exists(path));
  EXPECT_TRUE(testing::TempLeftovers(dir.Path("")).empty());

  TrainOptions resume = first;
  resume.resume = true;
  auto b2 = MakeBackend(backend_kind, pool);
  const TrainResult resumed = Train(data, nullptr, c, *b2, resume);
  EXPECT_EQ(resumed.resumed_from_epoch, half.epochs);
  ASSERT_EQ(resumed.epochs.size(), static_cast<size_t>(c.epochs - half.epochs));
  EXPECT_EQ(resumed.epochs.front().epoch, half.epochs + 1);
  ASSERT_EQ(resumed.model.weights.size(), full.weights.size());
  EXPECT_EQ(std::memcmp(resumed.model.weights.data(), full.weights.data(), 4 * full.weights.size()), 0)
      << backend_kind << " " << algo;
  EXPECT_EQ(resumed.model.bias, full.bias);
}

TEST(Checkpoint, CpuResumeIsBitIdenticalForEveryAlgorithm) {
  const Dataset dense = testing::SmallDense(800, 30, 3);
  const Dataset sparse = testing::SmallSparse(1200, 1 << 10, 3);
  // cocoa: its per-row duals are part of each worker's state.
  for (std::string algo : {"sgd", "mbsgd", "ga", "ma", "admm", "admm-auto", "cocoa", "cocoa-svm", "newton"}) {
    ExpectResumeMatchesUninterrupted("cpu", algo, dense);
    ExpectResumeMatchesUninterrupted("cpu", algo, sparse);
  }
}

// The adaptive penalty changes within the epochs the resume tests cover, so they test that it is checkpointed.
TEST(Checkpoint, TheAdaptivePenaltyMovesWithinTheResumedEpochs) {
  ThreadPool pool(2);
  TrainConfig c = ConfigFor("admm-auto");
  c.epochs = 4;
  CpuBackend backend(pool);
  const TrainResult r = Train(testing::SmallDense(800, 30, 3), nullptr, c, backend, {});
  ASSERT_EQ(r.epochs.size(), 4u);
  EXPECT_NE(*r.epochs[2].info.Figure("admm_rho"), *r.epochs[0].info.Figure("admm_rho"));
}

TEST(Checkpoint, PimResumeIsBitIdentical) {
  const Dataset dense = testing::SmallDense(800, 30, 3);
  for (std::string algo : {"ga", "ma", "admm", "admm-auto", "cocoa"}) {  // cocoa: the duals in MRAM
    ExpectResumeMatchesUninterrupted("pim", algo, dense);
  }
  ExpectResumeMatchesUninterrupted("pim", "admm", testing::SmallSparse(1200, 1 << 10, 3));
}

TEST(Checkpoint, RejectsCorruptForeignAndCompleteCheckpoints) {
  testing::TempDir dir;
  const std::string path = dir.Path("run.ckpt");
  const Dataset data = testing::SmallDense(400, 10, 3);
  ThreadPool pool(1);
  TrainConfig c = ConfigFor("ma");
  c.epochs = 2;
  TrainOptions options;
  options.checkpoint_path = path;
  options.checkpoint_every = 1;
  CpuBackend b0(pool);
  Train(data, nullptr, c, b0, options);
  options.resume = true;

  CpuBackend b1(pool);
  EXPECT_THROW(Train(data, nullptr, c, b1, options), ConfigError);  // all epochs already done
  TrainConfig other = c;
  other.epochs = 4;
  other.lr = 0.2;  // a different run
  CpuBackend b2(pool);
  try {
    Train(data, nullptr, other, b2, options);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("belongs to another run: it was written with --lr 0.1; this run has --lr 0.2"),
              std::string::npos)
        << e.what();
  }
  // A leftover temporary from a write killed half-way does not matter: the last complete checkpoint is used.
  testing::WriteText(path + ".tmp.12345", "half-written");
  other.lr = c.lr;
  CpuBackend b3(pool);
  EXPECT_EQ(Train(data, nullptr, other, b3, options).resumed_from_epoch, 2);
  // Corruption is detected and named.
  std::string bytes = testing::ReadText(path);
  bytes[bytes.size() / 2] ^= 0x55;
  testing::WriteText(path, bytes);
  CpuBackend b4(pool);
  EXPECT_THROW(Train(data, nullptr, other, b4, options), ParseError);
  testing::WriteText(path, bytes.substr(0, 20));
  CpuBackend b5(pool);
  EXPECT_THROW(Train(data, nullptr, other, b5, options), ParseError);
}

// A vector length beyond the file (here 2^62 words, whose byte count wraps around 2^64) is a corrupt checkpoint
// (ParseError), not an allocation failure.
TEST(Checkpoint, AnAbsurdVectorLengthIsACorruptFile) {
  Checkpoint c;
  c.epochs_done = 1;
  c.backend = "cpu";
  c.state.shared.push_back({7, 7, 7, 7, 7});
  const std::string good = SerializeCheckpoint(c);
  EXPECT_NO_THROW(ParseCheckpoint(good, "good"));
  // Find the shared vector's length (5 words), set it to 2^62 and fix the checksum so the structure is read.
  std::string body = good.substr(8, good.size() - 16);
  const uint64_t five = 5;
  const size_t at = body.find(std::string(reinterpret_cast<const char*>(&five), 8));
  ASSERT_NE(at, std::string::npos);
  const uint64_t absurd = uint64_t{1} << 62;
  body.replace(at, 8, std::string(reinterpret_cast<const char*>(&absurd), 8));
  const uint64_t sum = Checksum64({reinterpret_cast<const uint8_t*>(body.data()), body.size()});
  const std::string bad = good.substr(0, 8) + body + std::string(reinterpret_cast<const char*>(&sum), 8);
  try {
    ParseCheckpoint(bad, "bad.ckpt");
    FAIL() << "accepted";
  } catch (const ParseError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.ckpt"), std::string::npos) << e.what();
  }
}

// A run that --tol stops early leaves the checkpoint of the epoch it stopped at (checkpoint_every larger than that).
TEST(Checkpoint, WrittenWhereToleranceStopsTheRun) {
  testing::TempDir dir;
  const std::string path = dir.Path("tol.ckpt");
  ThreadPool pool(2);
  TrainConfig c = ConfigFor("mbsgd");
  c.objective.l2 = 1e-2;
  c.epochs = 100;
  c.schedule = LrSchedule::kConstant;
  c.tol = 1e-2;  // the relative duality gap
  TrainOptions options;
  options.checkpoint_path = path;
  options.checkpoint_every = 1000;
  auto backend = MakeBackend("cpu", pool);
  const TrainResult r = Train(testing::SmallDense(600, 10, 3), nullptr, c, *backend, options);
  ASSERT_TRUE(r.converged);
  EXPECT_TRUE(r.stopped_on_gap);
  ASSERT_LT(r.epochs.size(), 100u);
  EXPECT_EQ(ReadCheckpoint(path).epochs_done, r.epochs.back().epoch);
}

// Under the plateau schedule (every default) a resumed run continues with the rate the plateaus left and the same
// count of stale epochs: interrupted after its first plateau, it ends where the uninterrupted run ends, bit for bit.
TEST(Checkpoint, ResumeKeepsThePlateauSchedulesState) {
  const Dataset data = testing::SmallDense(900, 16, 4);
  for (const std::string backend_kind : {"cpu", "pim"}) {
    testing::TempDir dir;
    const std::string path = dir.Path("plateau.ckpt");
    ThreadPool pool(2);
    TrainConfig c;
    c.algorithm = "ma";
    c.workers = 4;
    auto full_backend = MakeBackend(backend_kind, pool);
    const TrainResult full = Train(data, nullptr, c, *full_backend, {});
    ASSERT_TRUE(full.converged) << backend_kind;
    int first_plateau = 0;
    for (const EpochRecord& e : full.epochs) {
      if (e.plateau) {
        first_plateau = e.epoch;
        break;
      }
    }
    ASSERT_GT(first_plateau, 0);
    ASSERT_LT(first_plateau + 1, full.epochs.back().epoch);
    TrainOptions first;
    first.checkpoint_path = path;
    first.checkpoint_every = 1;
    TrainConfig part = c;
    part.epochs = first_plateau + 1;  // one epoch at the lowered rate, one stale epoch counted
    auto b1 = MakeBackend(backend_kind, pool);
    Train(data, nullptr, part, *b1, first);
    TrainOptions resume = first;
    resume.resume = true;
    auto b2 = MakeBackend(backend_kind, pool);
    const TrainResult resumed = Train(data, nullptr, c, *b2, resume);
    EXPECT_EQ(resumed.resumed_from_epoch, first_plateau + 1);
    EXPECT_EQ(resumed.epochs.back().epoch, full.epochs.back().epoch) << backend_kind;
    EXPECT_EQ(resumed.epochs.front().lr, full.epochs[first_plateau + 1].lr) << backend_kind;
    EXPECT_EQ(resumed.plateaus, full.plateaus);
    EXPECT_EQ(resumed.model.weights, full.model.weights) << backend_kind;
    EXPECT_EQ(resumed.model.bias, full.model.bias) << backend_kind;
    // A run that already stopped at its last plateau does not resume.
    auto b3 = MakeBackend(backend_kind, pool);
    try {
      Train(data, nullptr, c, *b3, resume);
      ADD_FAILURE() << "resumed a finished run";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("already stopped at its"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace pimopt
