// --sync-path software: every algorithm's synchronizations as PID-Comm-style software collectives on today's
// hardware. The same model bits as through the host, the same bytes over the channels; only the time moves, into
// `modeled_collectives`; projections re-model the collectives at the target DPU count.
#include <gtest/gtest.h>

#include <string>

#include "pimopt/algorithms/topology.h"
#include "pimopt/algorithms/train.h"
#include "pimopt/backends/pim/pim_backend.h"
#include "pimopt/core/thread_pool.h"
#include "pimopt/pim/collectives.h"
#include "test_util.h"

namespace pimopt {
namespace {

TrainConfig MaConfig(int workers) {
  TrainConfig c;
  c.algorithm = "ma";
  c.workers = workers;
  c.batch = workers > 1 ? 16 : 8;
  c.lr = 0.1;
  c.epochs = 1;
  return c;
}

PimBackendOptions Software() {
  PimBackendOptions o;
  o.sync_path = PimBackendOptions::SyncPath::kSoftware;
  return o;
}

struct Case {
  std::string algo;
  LossKind loss;
  uint64_t batch;
  bool artifact_kernel = false;  // PIM-Opt's kernel and transfers (--kernel pim-opt): int32 dense gradients
};

TEST(SoftwareCollectives, EveryAlgorithmTrainsTheSameModelWithTheSameBytesInAnotherTime) {
  const Dataset train = testing::SmallDense(4096, 64, 7);
  for (const Case& k : {Case{"ma", LossKind::kLogistic, 8}, Case{"ga", LossKind::kHinge, 64},
                        Case{"admm", LossKind::kLogistic, 16}, Case{"cocoa", LossKind::kHinge, 1},
                        Case{"dsgd", LossKind::kLogistic, 8}, Case{"ga", LossKind::kLogistic, 64, true},
                        Case{"ma", LossKind::kHinge, 8, true}}) {
    SCOPED_TRACE(k.algo + (k.artifact_kernel ? " (PIM-Opt's kernel)" : ""));
    TrainConfig c;
    c.algorithm = k.algo;
    c.objective.loss = k.loss;
    c.objective.l2 = 1e-4;
    c.workers = 16;
    c.batch = k.batch;
    c.lr = 0.1;
    c.epochs = 2;
    c.seed = 3;
    if (k.algo == "dsgd") c.Set("topology", Topology::Name(TopologyKind::kRing));
    ThreadPool pool(2);
    PimBackendOptions host_options, software_options = Software();
    host_options.artifact_kernel = software_options.artifact_kernel = k.artifact_kernel;
    PimBackend host_backend(pool, host_options), software_backend(pool, software_options);
    const TrainResult a = Train(train, nullptr, c, host_backend, {});
    const TrainResult b = Train(train, nullptr, c, software_backend, {});
    EXPECT_EQ(a.model.weights, b.model.weights);
    EXPECT_EQ(a.model.bias, b.model.bias);
    EXPECT_EQ(a.traffic.syncs, b.traffic.syncs);
    EXPECT_EQ(a.phase_seconds.at("modeled_collectives"), 0.0);
    EXPECT_GT(b.phase_seconds.at("modeled_collectives"), 0.0);
    // No SDK pull and no host reduction in DRAM: the host reads the DPUs' vectors directly.
    EXPECT_EQ(b.phase_seconds.at("modeled_dpu_to_cpu"), 0.0);
    EXPECT_EQ(b.phase_seconds.at("modeled_host_reduction"), 0.0);
    EXPECT_GT(a.phase_seconds.at("modeled_host_reduction"), 0.0);
    // The collectives' bytes cross the channels as the SDK's transfers' did.
    EXPECT_GT(b.traffic.from_workers_bytes, 0u);
    EXPECT_NE(a.phase_seconds.at("modeled_total"), b.phase_seconds.at("modeled_total"));
    // Energy: the relocation kernels keep every DPU busy a little longer; the channels carry the collectives' bytes.
    EXPECT_GT(b.phase_seconds.at("modeled_energy_dpu_j"), a.phase_seconds.at("modeled_energy_dpu_j"));
    const double channel_j = pim::MakeProfile("pim-opt").channel_energy_j_per_byte *
                             static_cast<double>(b.traffic.to_workers_bytes + b.traffic.from_workers_bytes);
    EXPECT_GT(b.phase_seconds.at("modeled_energy_transfer_j"), channel_j);
    // The ledger's collectives are the model's: each re-modeled at the run's own size gives the run's time.
    const EpochProjection same = software_backend.Project(16, 256, 2);
    EXPECT_NEAR(same.collective_s, software_backend.ledger().collective_s / 2,
                1e-12 + 1e-9 * software_backend.ledger().collective_s);
    const EpochProjection wider = software_backend.Project(1024, 256, 2);
    EXPECT_GT(wider.collective_s, same.collective_s);
    EXPECT_TRUE(wider.Timed());
  }
}

// The route's time is ModelCollective's: an all-reduce of MA-SGD's int32 models per averaging.
TEST(SoftwareCollectives, ModelAveragingIsOneSoftwareAllReduceOfTheModelsPerSync) {
  const Dataset train = testing::SmallDense(2048, 100, 5);
  ThreadPool pool(2);
  PimBackend backend(pool, Software());
  const TrainResult r = Train(train, nullptr, MaConfig(8), backend, {});
  const PimBackend::Ledger& l = backend.ledger();
  ASSERT_EQ(l.collective_work.size(), 1u);
  const auto& [work, count] = *l.collective_work.begin();
  EXPECT_EQ(work.collective, pim::Collective::kAllReduce);
  EXPECT_EQ(count, r.traffic.syncs);
  const pim::CollectiveCost one = pim::ModelCollective(pim::MakeProfile("pim-opt"), pim::Collective::kAllReduce,
                                                       pim::CollectiveRoute::kSoftware, 8, work.bytes, 4);
  EXPECT_NEAR(l.collective_s, static_cast<double>(count) * one.seconds, 1e-12);
}

// Over one DPU there is nothing to exchange: the host path, as --sync-path host.
TEST(SoftwareCollectives, OneDpuSynchronizesThroughTheHost) {
  const Dataset train = testing::SmallDense(512, 16, 2);
  ThreadPool pool(2);
  PimBackend backend(pool, Software()), host(pool, {});
  const TrainResult a = Train(train, nullptr, MaConfig(1), backend, {});
  const TrainResult b = Train(train, nullptr, MaConfig(1), host, {});
  EXPECT_EQ(a.phase_seconds.at("modeled_collectives"), 0.0);
  EXPECT_EQ(a.phase_seconds.at("modeled_total"), b.phase_seconds.at("modeled_total"));
}

}  // namespace
}  // namespace pimopt
