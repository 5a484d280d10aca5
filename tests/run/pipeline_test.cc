// The training run's library stages, run by P ranks as threads (InProcessGroup) and by one process: every rank
// loads only its rows, agrees on storage and scaling, and the ranks together give bit for bit the model, the
// metrics and the host <-> worker traffic of one process with the same workers - on both backends.
#include "pimopt/run/pipeline.h"

#include <gtest/gtest.h>

#include <cstring>
#include <mutex>

#include "pimopt/collectives/in_process_communicator.h"
#include "pimopt/data/binary_format.h"
#include "pimopt/data/libsvm.h"
#include "test_util.h"

namespace pimopt {
namespace {

struct Case {
  std::string backend, algo, data;
  bool defaults = false;  // every training parameter at its default (auto batch, lr, reg; the plateau schedule)
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.backend << " " << c.algo << " " << c.data << (c.defaults ? " defaults" : "");
}

RunConfig ConfigFor(const Case& c) {
  RunConfig config;
  if (c.defaults) {
    for (const auto& [name, value] : std::vector<std::pair<std::string, std::string>>{
             {"data", c.data}, {"backend", c.backend}, {"algo", c.algo}, {"workers", "4"}, {"threads", "1"},
             {"quiet", "true"}}) {
      SetParam(config, name, value);
    }
    return config;
  }
  for (const auto& [name, value] : std::vector<std::pair<std::string, std::string>>{
           {"data", c.data}, {"backend", c.backend}, {"algo", c.algo}, {"workers", "4"}, {"batch", "8"},
           {"epochs", "2"}, {"lr", "0.2"}, {"threads", "1"}, {"scale", "minmax"}, {"quiet", "true"}}) {
    SetParam(config, name, value);
  }
  if (c.algo == "admm") SetParam(config, "rho", "0.1");
  return config;
}

class Pipeline : public ::testing::TestWithParam<Case> {};

TEST_P(Pipeline, RanksAsThreadsGiveTheModelMetricsAndTrafficOfOneProcess) {
  const RunConfig config = ConfigFor(GetParam());
  const RunOutcome single = RunTraining(config, SingleProcess(), "test");
  for (int ranks : {2, 3}) {
    InProcessGroup group(ranks);
    RunOutcome rank0;
    std::mutex m;
    group.Run([&](Communicator& comm) {
      RunOutcome outcome = RunTraining(config, comm, "test");
      EXPECT_EQ(outcome.result.partition.ranks, ranks);
      if (comm.rank() == 0) {
        std::lock_guard<std::mutex> lock(m);
        rank0 = std::move(outcome);
      }
    });
    const TrainResult& a = single.result;
    const TrainResult& b = rank0.result;
    ASSERT_EQ(a.model.weights.size(), b.model.weights.size());
    EXPECT_EQ(std::memcmp(a.model.weights.data(), b.model.weights.data(), 4 * a.model.weights.size()), 0) << ranks;
    EXPECT_EQ(a.model.bias, b.model.bias);
    EXPECT_EQ(a.epochs.back().train.accuracy, b.epochs.back().train.accuracy);
    EXPECT_EQ(a.epochs.back().test->auc, b.epochs.back().test->auc);
    EXPECT_EQ(a.epochs.back().test->rows, b.epochs.back().test->rows);
    if (GetParam().backend == "pim" && GetParam().algo == "ga") {
      // Each process pads its DPUs' row lists to its own longest list, so P processes push no more than one.
      EXPECT_LE(b.traffic.to_workers_bytes, a.traffic.to_workers_bytes) << ranks << " ranks";
      EXPECT_GT(b.traffic.to_workers_bytes, a.traffic.to_workers_bytes * 9 / 10) << ranks << " ranks";
    } else {
      EXPECT_EQ(a.traffic.to_workers_bytes, b.traffic.to_workers_bytes) << ranks << " ranks";
    }
    EXPECT_EQ(a.traffic.from_workers_bytes, b.traffic.from_workers_bytes) << ranks << " ranks";
    EXPECT_EQ(a.traffic.syncs, b.traffic.syncs) << ranks << " ranks";
    EXPECT_GT(b.traffic.mpi_bytes, 0u);
    EXPECT_EQ(rank0.report["mpi"]["ranks"], ranks);
  }
}

INSTANTIATE_TEST_SUITE_P(
    BackendsAlgorithmsData, Pipeline,
    ::testing::Values(Case{"cpu", "ga", "dense:rows=600,features=12,separation=0.2,seed=3"},
                      Case{"cpu", "ma", "dense:rows=600,features=12,separation=0.2,seed=3"},
                      Case{"cpu", "admm", "dense:rows=600,features=12,separation=0.2,seed=3"},
                      Case{"cpu", "ga", "sparse:rows=1200,features=2000,seed=3"},
                      Case{"cpu", "admm", "sparse:rows=1200,features=2000,seed=3"},
                      Case{"pim", "ga", "dense:rows=600,features=12,separation=0.2,seed=3"},
                      Case{"pim", "ma", "sparse:rows=1200,features=2000,seed=3"},
                      Case{"pim", "admm", "dense:rows=600,features=12,separation=0.2,seed=3"},
                      Case{"cpu", "ma", "dense:rows=600,features=12,separation=0.2,seed=3", true},
                      Case{"cpu", "admm", "sparse:rows=1200,features=2000,seed=3", true},
                      Case{"pim", "ga", "dense:rows=600,features=12,separation=0.2,seed=3", true},
                      // CoCoA: its rows' duals stay with their ranks; the certificate that stops it sums over them.
                      Case{"cpu", "cocoa", "dense:rows=600,features=12,separation=0.2,seed=3", true},
                      Case{"cpu", "cocoa", "sparse:rows=1200,features=2000,seed=3", true},
                      Case{"pim", "cocoa", "dense:rows=600,features=12,separation=0.2,seed=3", true}),
    [](const auto& info) {
      return info.param.backend + "_" + info.param.algo + "_" + info.param.data.substr(0, 5) +
             (info.param.defaults ? "_defaults" : "");
    });

TEST(PipelineStages, LoadRunDataHoldsThisRanksRowsOnly) {
  RunConfig config;
  SetParam(config, "data", "dense:rows=601,features=5,seed=2");
  SetParam(config, "algo", "ma");
  SetParam(config, "workers", "3");
  ResolveRunConfig(config, 2);
  InProcessGroup group(2);
  std::vector<uint64_t> rows(2), test_rows(2);
  group.Run([&](Communicator& comm) {
    ThreadPool pool(1);
    const RunData d = LoadRunData(config, comm, pool);
    EXPECT_EQ(d.train.num_rows(), d.partition.local_rows);
    EXPECT_EQ(d.partition.total_rows, 601u);
    rows[comm.rank()] = d.train.num_rows();
    test_rows[comm.rank()] = d.test->num_rows();
    EXPECT_EQ(d.total_test_rows, 150u);  // a synthetic set's own test rows: rows / 4
  });
  EXPECT_EQ(rows[0], 200u);  // workers 0 (rank 0) and 1, 2 (rank 1) of shards 200, 200, 201
  EXPECT_EQ(rows[1], 401u);
  EXPECT_EQ(test_rows[0] + test_rows[1], 150u);
}

// Under MPI each rank reads only its rows of a binary cache; rank 0 also streams the file to check its checksum, so
// a corrupt cache fails on every rank (it once trained silently with exit 0).
TEST(PipelineStages, ACorruptBinaryCacheFailsOnEveryRank) {
  testing::TempDir dir;
  WriteBinaryDataset(testing::SmallDense(600, 12, 3), dir.Path("train.bin"));
  std::string bytes = testing::ReadText(dir.Path("train.bin"));
  bytes[bytes.size() - 7] ^= 0x10;  // a value of the last rows, which rank 0 does not hold
  testing::WriteText(dir.Path("train.bin"), bytes);
  RunConfig config;
  for (const auto& [name, value] : std::vector<std::pair<std::string, std::string>>{
           {"data", dir.Path("train.bin")}, {"algo", "ga"}, {"workers", "4"}, {"epochs", "1"}, {"threads", "1"},
           {"quiet", "true"}}) {
    SetParam(config, name, value);
  }
  InProcessGroup group(2);
  std::mutex m;
  std::vector<std::string> errors;
  group.Run([&](Communicator& comm) {
    try {
      RunTraining(config, comm, "test");
    } catch (const Error& e) {
      std::lock_guard<std::mutex> lock(m);
      errors.push_back(e.what());
    }
  });
  ASSERT_EQ(errors.size(), 2u);
  for (const std::string& e : errors) EXPECT_NE(e.find("checksum mismatch"), std::string::npos) << e;
}

// Defaults: with no training flags the features' scales do not decide the result. A copy of the data whose
// features are multiplied by 1e-3 .. 1e3 and shifted gives the same test accuracy for every algorithm (the
// default min-max scaling makes both copies the same up to rounding, and the automatic batch, learning rate and
// regularization depend on the data only through them).
TEST(PipelineDefaults, DifferentlyScaledCopiesGiveTheSameAccuracy) {
  testing::TempDir dir;
  const Dataset base = testing::SmallDense(2400, 12, 9);
  auto rescaled = [](const Dataset& d) {
    std::vector<float> values(d.dense_values().begin(), d.dense_values().end());
    for (size_t i = 0; i < d.num_rows(); ++i) {
      for (size_t j = 0; j < d.num_features(); ++j) {
        float& v = values[i * d.num_features() + j];
        v = v * std::pow(10.0f, static_cast<float>(j % 7) - 3.0f) + 50.0f * static_cast<float>(j);
      }
    }
    return Dataset::FromDense(d.num_features(), std::move(values),
                              std::vector<float>(d.labels().begin(), d.labels().end()));
  };
  const std::vector<uint32_t> all = [&] {
    std::vector<uint32_t> rows(base.num_rows());
    for (uint32_t i = 0; i < rows.size(); ++i) rows[i] = i;
    return rows;
  }();
  const std::span<const uint32_t> rows(all);
  const Dataset train = base.SelectRows(rows.first(1800)), test = base.SelectRows(rows.subspan(1800));
  WriteLibsvm(train, dir.Path("a_train.svm"));
  WriteLibsvm(test, dir.Path("a_test.svm"));
  WriteLibsvm(rescaled(train), dir.Path("b_train.svm"));
  WriteLibsvm(rescaled(test), dir.Path("b_test.svm"));
  for (const std::string algo : {"sgd", "mbsgd", "ga", "ma", "admm"}) {
    for (const std::string model : {"lr", "svm"}) {
      double accuracy[2];
      for (int copy = 0; copy < 2; ++copy) {
        const std::string name = copy == 0 ? "a" : "b";
        RunConfig config;
        for (const auto& [param, value] : std::vector<std::pair<std::string, std::string>>{
                 {"data", dir.Path(name + "_train.svm")}, {"test", dir.Path(name + "_test.svm")}, {"algo", algo},
                 {"model", model}, {"storage", "dense"}, {"quiet", "true"}}) {
          SetParam(config, param, value);
        }
        const RunOutcome outcome = RunTraining(config, SingleProcess(), "test");
        EXPECT_TRUE(outcome.result.converged) << algo << " " << model << " copy " << name;
        accuracy[copy] = outcome.result.epochs.back().test->accuracy;
      }
      EXPECT_GT(accuracy[0], 0.85) << algo << " " << model;
      EXPECT_NEAR(accuracy[0], accuracy[1], 1.5 / 600) << algo << " " << model;  // at most a row apart
    }
  }
}

}  // namespace
}  // namespace pimopt
