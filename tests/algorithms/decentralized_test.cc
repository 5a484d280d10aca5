// Topologies, their mixing matrices and D-PSGD (decentralized SGD with gossip averaging).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <mutex>

#include "pimopt/algorithms/topology.h"
#include "pimopt/algorithms/train.h"
#include "pimopt/backends/pim/pim_backend.h"
#include "pimopt/collectives/in_process_communicator.h"
#include "pimopt/core/error.h"
#include "pimopt/core/thread_pool.h"
#include "pimopt/run/pipeline.h"
#include "pimopt/run/report.h"
#include "test_util.h"

namespace pimopt {
namespace {

constexpr double kPi = 3.14159265358979323846;

TEST(Topology, MetropolisWeightsAreSymmetricAndDoublyStochastic) {
  for (const TopologyKind kind :
       {TopologyKind::kComplete, TopologyKind::kRing, TopologyKind::kTorus, TopologyKind::kHierarchical}) {
    for (const uint32_t k : {1u, 2u, 5u, 12u, 64u}) {
      const Topology t(kind, k);
      std::vector<double> w(size_t{k} * k, 0.0);
      for (uint32_t i = 0; i < k; ++i) {
        const MixingRow& row = t.row(i);
        ASSERT_TRUE(std::is_sorted(row.neighbours.begin(), row.neighbours.end()));
        double sum = 0;
        for (size_t e = 0; e < row.neighbours.size(); ++e) {
          EXPECT_GT(row.weights[e], 0) << Topology::Name(kind) << " " << k;
          w[size_t{i} * k + row.neighbours[e]] = row.weights[e];
          sum += row.weights[e];
        }
        EXPECT_NEAR(sum, 1.0, 1e-12) << Topology::Name(kind) << " " << k;
      }
      for (uint32_t i = 0; i < k; ++i) {
        for (uint32_t j = 0; j < k; ++j) EXPECT_EQ(w[size_t{i} * k + j], w[size_t{j} * k + i]);
      }
    }
  }
}

TEST(Topology, ShapesDegreesAndMixingRates) {
  EXPECT_EQ(Topology(TopologyKind::kRing, 16).max_degree(), 2u);
  EXPECT_EQ(Topology(TopologyKind::kRing, 16).edges(), 16u);
  EXPECT_EQ(Topology(TopologyKind::kTorus, 16).max_degree(), 4u);  // 4 x 4
  EXPECT_EQ(Topology(TopologyKind::kTorus, 16).edges(), 32u);
  EXPECT_EQ(Topology(TopologyKind::kComplete, 16).edges(), 16u * 15 / 2);
  // Hierarchical over 64: 8 complete groups of 8 (28 links each) and a ring of 8 over the groups' first workers.
  EXPECT_EQ(Topology(TopologyKind::kHierarchical, 64).edges(), 8u * 28 + 8);
  // Exact averaging in one step; a ring of K with weights 1/3: second eigenvalue (1 + 2 cos(2 pi / K)) / 3.
  EXPECT_NEAR(Topology(TopologyKind::kComplete, 16).MixingRate(), 0.0, 1e-9);
  EXPECT_NEAR(Topology(TopologyKind::kRing, 16).MixingRate(), (1 + 2 * std::cos(2 * kPi / 16)) / 3, 1e-6);
  // The torus mixes faster than the ring of the same size.
  EXPECT_LT(Topology(TopologyKind::kTorus, 64).MixingRate(), Topology(TopologyKind::kRing, 64).MixingRate());
  EXPECT_NE(Topology(TopologyKind::kTorus, 12).Describe().find("3 x 4"), std::string::npos);
}

TrainConfig DsgdConfig(TopologyKind topology) {
  TrainConfig c;
  c.algorithm = "dsgd";
  c.Set("topology", Topology::Name(topology));
  c.workers = 8;
  c.batch = 8;
  c.lr = 0.1;
  c.objective.l2 = 1e-4;
  c.epochs = 4;
  c.seed = 3;
  return c;
}

// Gossip over the complete graph is exact averaging: D-PSGD is MA-SGD (to float rounding: the weighted sum 1/K x_j
// against the sum of the x_j times 1/K).
TEST(Dsgd, OverTheCompleteGraphIsModelAveraging) {
  const Dataset train = testing::SmallDense(3000, 20, 7);
  TrainConfig c = DsgdConfig(TopologyKind::kComplete);
  const TrainResult gossip = testing::TrainCpu(train, c);
  c.algorithm = "ma";
  const TrainResult ma = testing::TrainCpu(train, c);
  ASSERT_EQ(gossip.model.weights.size(), ma.model.weights.size());
  for (size_t j = 0; j < ma.model.weights.size(); ++j) {
    EXPECT_NEAR(gossip.model.weights[j], ma.model.weights[j], 1e-5 * (1 + std::fabs(ma.model.weights[j]))) << j;
  }
  EXPECT_NEAR(gossip.model.bias, ma.model.bias, 1e-5);
}

TEST(Dsgd, EveryTopologyConvergesOnBothModels) {
  const Dataset train = testing::SmallDense(4000, 20, 7);
  const Dataset test = testing::SmallDense(2000, 20, 7, 4000);
  for (const TopologyKind kind : {TopologyKind::kRing, TopologyKind::kTorus, TopologyKind::kHierarchical}) {
    for (const LossKind loss : {LossKind::kLogistic, LossKind::kHinge}) {
      TrainConfig c = DsgdConfig(kind);
      c.workers = 16;
      c.objective.loss = loss;
      c.epochs = 8;
      const TrainResult r = testing::TrainCpu(train, c, 2, &test);
      EXPECT_GT(r.epochs.back().test->accuracy, 0.93) << Topology::Name(kind) << " " << ModelName(loss);
      EXPECT_LT(r.epochs.back().train.objective, r.epochs.front().train.objective) << Topology::Name(kind);
    }
  }
}

TEST(Dsgd, TheSameModelOnAnyThreadCountAndCheaperGossipOnSparserGraphs) {
  const Dataset train = testing::SmallDense(3000, 30, 5);
  TrainConfig c = DsgdConfig(TopologyKind::kRing);
  const TrainResult one = testing::TrainCpu(train, c, 1);
  const TrainResult two = testing::TrainCpu(train, c, 2);
  EXPECT_EQ(one.model.weights, two.model.weights);
  // A ring of 8 sends 2 x 8 models per gossip step, the complete graph 2 x 28.
  c.Set("topology", Topology::Name(TopologyKind::kComplete));
  const TrainResult complete = testing::TrainCpu(train, c, 2);
  EXPECT_LT(one.traffic.to_workers_bytes, complete.traffic.to_workers_bytes);
}

TEST(Dsgd, ThePimBackendTrainsTheSameModelToItsFixedPoint) {
  const Dataset train = testing::SmallDense(3000, 20, 7);
  const Dataset test = testing::SmallDense(1000, 20, 7, 3000);
  TrainConfig c = DsgdConfig(TopologyKind::kTorus);
  c.epochs = 3;
  const TrainResult cpu = testing::TrainCpu(train, c, 2, &test);
  ThreadPool pool(2);
  PimBackend pim(pool, PimBackendOptions{});
  const TrainResult r = Train(train, &test, c, pim, {});
  EXPECT_NEAR(r.epochs.back().test->accuracy, cpu.epochs.back().test->accuracy, 0.01);
  EXPECT_GT(pim.ledger().to_dpu[1].bytes, 0u);  // the host-routed gossip pushed models
}

// A what-if profile changes modeled time, never the model: with links within each rank the gossip moves DPU to DPU
// (modeled by the link model) instead of through the host.
TEST(Dsgd, WhatIfLinksCarryTheGossipWithTheSameModel) {
  const Dataset train = testing::SmallDense(3000, 64, 7);
  TrainConfig c = DsgdConfig(TopologyKind::kRing);
  c.workers = 16;
  c.epochs = 2;
  ThreadPool pool(2);
  PimBackendOptions today, linked;
  linked.profile = "links-rank";
  PimBackend host_routed(pool, today), direct(pool, linked);
  const TrainResult a = Train(train, nullptr, c, host_routed, {});
  const TrainResult b = Train(train, nullptr, c, direct, {});
  EXPECT_EQ(a.model.weights, b.model.weights);
  EXPECT_EQ(a.phase_seconds.at("modeled_dpu_to_dpu"), 0.0);
  EXPECT_GT(b.phase_seconds.at("modeled_dpu_to_dpu"), 0.0);
  EXPECT_GT(direct.Counters().at("dpu_to_dpu_bytes"), 0.0);
  // The host no longer moves the gossip: far less CPU <-> DPU traffic and modeled time.
  EXPECT_LT(b.traffic.to_workers_bytes, a.traffic.to_workers_bytes / 4);
  EXPECT_LT(b.phase_seconds.at("modeled_total"), a.phase_seconds.at("modeled_total"));
}

// MA-SGD's averaging as a ring all-reduce over links: the same model, the time on the links, and --sync-path's
// refusals naming what is missing.
TEST(WhatIfLinks, ModelAveragingByAllReduceAndTheSyncPathsRefusals) {
  const Dataset train = testing::SmallDense(3000, 64, 7);
  TrainConfig c = DsgdConfig(TopologyKind::kRing);
  c.algorithm = "ma";
  c.workers = 16;
  c.epochs = 2;
  ThreadPool pool(2);
  PimBackendOptions today, linked, forced_host;
  linked.profile = "links-system";
  forced_host.profile = "links-system";
  forced_host.sync_path = PimBackendOptions::SyncPath::kHost;
  PimBackend a_backend(pool, today), b_backend(pool, linked), c_backend(pool, forced_host);
  const TrainResult a = Train(train, nullptr, c, a_backend, {});
  const TrainResult b = Train(train, nullptr, c, b_backend, {});
  const TrainResult h = Train(train, nullptr, c, c_backend, {});
  EXPECT_EQ(a.model.weights, b.model.weights);
  EXPECT_GT(b.phase_seconds.at("modeled_dpu_to_dpu"), 0.0);
  EXPECT_EQ(b.traffic.from_workers_bytes, 0u);               // no model comes up to the host
  EXPECT_EQ(h.phase_seconds.at("modeled_dpu_to_dpu"), 0.0);  // --sync-path host ignores the links
  EXPECT_EQ(h.phase_seconds.at("modeled_total"), a.phase_seconds.at("modeled_total"));
  // --sync-path links on today's hardware names the profile.
  PimBackendOptions demand;
  demand.sync_path = PimBackendOptions::SyncPath::kLinks;
  PimBackend d_backend(pool, demand);
  try {
    Train(train, nullptr, c, d_backend, {});
    FAIL() << "averaged over links that do not exist";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.parameter(), "--profile") << e.what();
  }
}

// GA-SGD's gradient sum and ADMM's consensus as all-reduces over links: the same model as through the host, no
// model or gradient comes up to the host, the time on the links; projections re-model the links at more DPUs.
TEST(WhatIfLinks, GaSgdAndAdmmSumByAllReduce) {
  const Dataset train = testing::SmallDense(4096, 64, 7);
  for (const std::string algo : {"ga", "admm"}) {
    SCOPED_TRACE(algo);
    TrainConfig c = DsgdConfig(TopologyKind::kRing);
    c.algorithm = algo;
    c.workers = 16;
    c.batch = algo == "ga" ? 64 : 16;
    c.epochs = 2;
    ThreadPool pool(2);
    PimBackendOptions today, linked;
    linked.profile = "links-rank";
    linked.sync_path = PimBackendOptions::SyncPath::kLinks;
    PimBackend host_backend(pool, today), link_backend(pool, linked);
    const TrainResult a = Train(train, nullptr, c, host_backend, {});
    const TrainResult b = Train(train, nullptr, c, link_backend, {});
    EXPECT_EQ(a.model.weights, b.model.weights);
    EXPECT_EQ(a.model.bias, b.model.bias);
    EXPECT_EQ(a.phase_seconds.at("modeled_dpu_to_dpu"), 0.0);
    EXPECT_GT(b.phase_seconds.at("modeled_dpu_to_dpu"), 0.0);
    EXPECT_EQ(b.traffic.from_workers_bytes, 0u);
    EXPECT_GT(a.traffic.from_workers_bytes, 0u);
    EXPECT_EQ(b.phase_seconds.at("modeled_host_reduction"), 0.0);
    // The projection to the run's own size is the run; to 64 DPUs (one rank) it re-models the ring.
    const EpochProjection same = link_backend.Project(16, 256, 2), wider = link_backend.Project(64, 256, 2);
    EXPECT_NEAR(same.link_s, link_backend.ledger().link_s / 2, 1e-12);
    EXPECT_GT(wider.link_s, same.link_s);
    EXPECT_TRUE(wider.note.empty());
    const EpochProjection beyond = link_backend.Project(128, 256, 2);  // rank links do not reach a second rank
    EXPECT_FALSE(beyond.note.empty());
    EXPECT_FALSE(beyond.Timed());
    EXPECT_TRUE(std::isnan(beyond.epoch_s));
    // Every figure the untimed synchronizations are part of is missing, not a partial sum; the DPUs' own stay.
    for (double figure : {beyond.cpu_to_dpu_s, beyond.dpu_to_cpu_s, beyond.host_reduction_s, beyond.link_s,
                          beyond.cpu_to_dpu_bytes, beyond.link_bytes, beyond.energy.total_j()}) {
      EXPECT_TRUE(std::isnan(figure));
    }
    EXPECT_GT(beyond.kernel_s, 0);
    EXPECT_GT(beyond.energy.dpu_j, 0);
    const std::string text = FormatProjection(beyond);
    EXPECT_NE(text.find("no epoch time, bytes moved or energy"), std::string::npos) << text;
    EXPECT_EQ(text.find("nan"), std::string::npos) << text;
    const nlohmann::json json = ProjectionJson(beyond);
    EXPECT_FALSE(json["timed"].get<bool>());
    EXPECT_TRUE(json["modeled_epoch_s"].is_null());
    EXPECT_TRUE(json["modeled_energy_j"].is_null());
  }
  // One DPU (MB-SGD): its gradients come up to the host on every profile, links or not (no collective over one
  // DPU), in the same modeled time; links demanded for it are refused on every profile, naming the profile.
  TrainConfig one = DsgdConfig(TopologyKind::kRing);
  one.algorithm = "mbsgd";
  one.workers = 1;
  one.batch = 64;
  one.epochs = 1;
  ThreadPool pool(2);
  PimBackend today(pool, PimBackendOptions{});
  const TrainResult r = Train(train, nullptr, one, today, {});
  EXPECT_GT(r.traffic.from_workers_bytes, 0u);
  EXPECT_GT(r.phase_seconds.at("modeled_host_reduction"), 0.0);
  EXPECT_EQ(r.phase_seconds.at("modeled_dpu_to_dpu"), 0.0);
  for (const std::string profile : {"links-chip", "links-rank", "links-system"}) {
    SCOPED_TRACE(profile);
    PimBackendOptions o;
    o.profile = profile;
    PimBackend linked(pool, o);
    const TrainResult l = Train(train, nullptr, one, linked, {});
    EXPECT_EQ(l.model.weights, r.model.weights);
    EXPECT_EQ(l.traffic.from_workers_bytes, r.traffic.from_workers_bytes);
    EXPECT_EQ(l.phase_seconds.at("modeled_dpu_to_dpu"), 0.0);
    EXPECT_EQ(l.phase_seconds.at("modeled_total"), r.phase_seconds.at("modeled_total"));
    o.sync_path = PimBackendOptions::SyncPath::kLinks;
    PimBackend demanded(pool, o);
    try {
      Train(train, nullptr, one, demanded, {});
      FAIL() << "MB-SGD's one DPU synchronized over links";
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.parameter(), "--sync-path") << e.what();
    }
  }
}

// Under MPI every process gathers the models for the gossip step and mixes its own workers': every split into
// processes gives the bits of one process, on both backends.
TEST(Dsgd, RanksAsThreadsGiveTheModelOfOneProcess) {
  for (const std::string backend : {"cpu", "pim"}) {
    RunConfig config;
    for (const auto& [name, value] :
         std::vector<std::pair<std::string, std::string>>{{"data", "dense:rows=600,features=12,separation=0.2,seed=3"},
                                                          {"backend", backend},
                                                          {"algo", "dsgd"},
                                                          {"topology", "torus"},
                                                          {"workers", "6"},
                                                          {"batch", "8"},
                                                          {"epochs", "2"},
                                                          {"lr", "0.2"},
                                                          {"threads", "1"},
                                                          {"quiet", "true"}}) {
      SetParam(config, name, value);
    }
    const RunOutcome single = RunTraining(config, SingleProcess(), "test");
    for (int ranks : {2, 3}) {
      InProcessGroup group(ranks);
      RunOutcome rank0;
      std::mutex m;
      group.Run([&](Communicator& comm) {
        RunOutcome outcome = RunTraining(config, comm, "test");
        if (comm.rank() == 0) {
          std::lock_guard<std::mutex> lock(m);
          rank0 = std::move(outcome);
        }
      });
      EXPECT_EQ(single.result.model.weights, rank0.result.model.weights) << backend << ", " << ranks << " ranks";
      EXPECT_EQ(single.result.model.bias, rank0.result.model.bias);
      EXPECT_EQ(single.result.traffic.to_workers_bytes, rank0.result.traffic.to_workers_bytes) << backend;
    }
  }
}

}  // namespace
}  // namespace pimopt
