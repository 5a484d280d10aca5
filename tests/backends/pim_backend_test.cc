// The PIM backend end to end: its verbs reproduce the fixed-point reference bit for bit, results do not depend on
// host threads, and bad configurations are rejected with the flag named.
#include "pimopt/backends/pim/pim_backend.h"

#include <gtest/gtest.h>

#include <cctype>
#include <cstring>
#include <functional>
#include <map>
#include <tuple>

#include "pimopt/algorithms/admm.h"
#include "pimopt/core/error.h"
#include "pimopt/core/thread_pool.h"
#include "pimopt/pim/energy.h"
#include "pimopt/pim/host_model.h"
#include "pimopt/pim/native_program.h"
#include "pimopt/pim/profile.h"
#include "test_util.h"

namespace pimopt {
namespace {

using pimbackend::QuantizedShard;

// The shards as the backend quantizes them (dense rows or CSR), built independently of the backend.
std::vector<QuantizedShard> Quantize(const Dataset& d, int workers, bool artifact = false) {
  std::vector<QuantizedShard> shards;
  const auto layout = pimbackend::MakeLinearLayout(static_cast<uint32_t>(d.num_features()), 1, 1);
  fixed::Saturation sat;
  for (const Shard& s : MakeShards(d.num_rows(), workers)) {
    QuantizedShard q;
    q.n_pad = layout.n_pad;
    q.sparse = d.is_sparse();
    if (q.sparse) {
      const CsrMatrix& m = d.csr();
      for (uint32_t r = s.begin; r <= s.end; ++r)
        q.row_ptr.push_back(static_cast<uint32_t>(m.row_ptr[r] - m.row_ptr[s.begin]));
      for (uint64_t e = m.row_ptr[s.begin]; e < m.row_ptr[s.end]; ++e) {
        q.col.push_back(m.col[e]);
        q.val.push_back(fixed::QuantizeFeature(m.val[e], sat));
      }
    } else {
      q.x.assign(uint64_t{s.size()} * q.n_pad, 0);
      if (artifact) q.x31.assign(uint64_t{s.size()} * q.n_pad, 0);
      for (uint32_t r = 0; r < s.size(); ++r) {
        for (size_t j = 0; j < d.num_features(); ++j) {
          q.x[uint64_t{r} * q.n_pad + j] = fixed::QuantizeFeature(d.dense_row(s.begin + r)[j], sat);
          if (artifact) {
            q.x31[uint64_t{r} * q.n_pad + j] = pimbackend::QuantizeFeatureArtifact(d.dense_row(s.begin + r)[j], sat);
          }
        }
      }
    }
    for (uint32_t r = s.begin; r < s.end; ++r) q.y.push_back(d.labels()[r] > 0 ? 1 : -1);
    shards.push_back(std::move(q));
  }
  return shards;
}

pimbackend::LinearKernelArgs ReferenceArgs(const TrainConfig& c, uint32_t n_pad) {
  pimbackend::LinearKernelArgs a;
  a.loss = pimbackend::ToKernelLoss(c.objective.loss);
  a.n_pad = n_pad;
  a.fit_bias = 1;
  return a;
}

TrainConfig SmallConfig(std::string algo, LossKind loss) {
  TrainConfig c;
  c.algorithm = algo;
  c.objective.loss = loss;
  c.objective.l2 = 1e-3;
  c.workers = 3;
  c.batch = 5;
  c.lr = 0.3;
  return c;
}

// One MA-SGD round (local steps from the global model, then the average) on the PIM backend equals the reference
// run per shard and averaged toward zero, bit for bit.
void ExpectMaRoundMatchesReference(const Dataset& data, const TrainConfig& c, uint64_t steps, uint64_t seed,
                                   bool artifact = false) {
  ThreadPool pool(2);
  PimBackendOptions options;
  options.artifact_kernel = artifact;
  PimBackend backend(pool, options);
  backend.Setup(data, c);
  const ShardPlan plan(MakeShards(data.num_rows(), c.workers), c.batch, seed, 0, true);
  LocalSolveRequest req;
  req.plan = &plan;
  req.num_steps = steps;
  req.lr = c.lr;
  req.start_from_global = true;
  backend.LocalSolve(req);
  backend.AverageLocalModels();
  const LinearModel got = backend.ExportModel();

  const auto shards = Quantize(data, c.workers, artifact);
  const uint32_t n_pad = shards[0].n_pad;
  std::vector<int64_t> sum(n_pad + 1, 0);
  for (int k = 0; k < c.workers; ++k) {
    pimbackend::LinearKernelArgs a = ReferenceArgs(c, n_pad);
    a.artifact = artifact ? 1 : 0;
    a.mode = pimbackend::KernelMode::kLocalSgd;
    a.lr_weight_q32 = fixed::ToScale(c.lr, "lr");
    a.decay_q32 = fixed::ToScale(c.lr * c.objective.l2, "decay");
    fixed::Saturation ignored;
    a.positive_weight_q24 = fixed::ToModel(c.objective.positive_weight, ignored);
    a.negative_weight_q24 = fixed::ToModel(c.objective.negative_weight, ignored);
    std::vector<std::vector<uint32_t>> local_steps;
    for (uint64_t s = 0; s < steps; ++s) {
      std::vector<uint32_t> rows;
      for (uint32_t r : plan.LocalBatch(k, s)) rows.push_back(r - plan.shards()[k].begin);
      local_steps.push_back(rows);
    }
    std::vector<int32_t> model(n_pad + 1, 0);
    fixed::Saturation sat;
    pimbackend::ReferenceLocalSteps(shards[k], model, {}, local_steps, a, sat);
    for (uint32_t j = 0; j <= n_pad; ++j) sum[j] += model[j];
  }
  size_t nonzero = 0;
  for (size_t j = 0; j < data.num_features(); ++j) {
    ASSERT_EQ(got.weights[j], static_cast<float>(fixed::FromModel(sum[j] / c.workers))) << j;
    nonzero += got.weights[j] != 0;
  }
  EXPECT_EQ(got.bias, static_cast<float>(fixed::FromModel(sum[n_pad] / c.workers)));
  EXPECT_GT(nonzero, 20u);  // the comparison is not between two zero models
}

TEST(PimBackend, MaSgdRoundMatchesTheReferenceBitForBit) {
  const Dataset data = testing::SmallDense(301, 150, 4);  // 301 rows over 3 DPUs: uneven shards
  for (LossKind loss : {LossKind::kLogistic, LossKind::kHinge}) {
    ExpectMaRoundMatchesReference(data, SmallConfig("ma", loss), 4, 7);
    TrainConfig four = SmallConfig("ma", loss);  // a power of two: the host averages by shifts
    four.workers = 4;
    ExpectMaRoundMatchesReference(data, four, 4, 7);
  }
}

TEST(PimBackend, SparseMaSgdRoundMatchesTheReferenceBitForBit) {
  TrainConfig c = SmallConfig("ma", LossKind::kLogistic);
  c.objective.positive_weight = 15;  // PIM-Opt's Criteo weights
  c.objective.negative_weight = 0.5;
  ExpectMaRoundMatchesReference(testing::SmallSparse(500, 1000, 8), c, 5, 3);
}

// One CoCoA round (a pass of dual ascent on every DPU from the global model, then the add) equals the reference's
// pass per shard, its duals read back from MRAM, and the average of the DPUs' models, bit for bit: dense rows
// (shared by the tasklets) and sparse rows (tasklet 0's), uneven shards, class weights.
void ExpectCocoaRoundMatchesReference(const Dataset& data, TrainConfig c) {
  c.algorithm = "cocoa";
  c.batch = 1;
  c.objective.l2 = 0.02;
  c.ResolveDefaults();
  ThreadPool pool(2);
  PimBackend backend(pool, PimBackendOptions{});
  backend.Setup(data, c);
  const ShardPlan plan(MakeShards(data.num_rows(), c.workers), 1, 5, 0, true);
  LocalSolveRequest req;
  req.plan = &plan;
  req.num_steps = plan.max_batches();
  req.solver = LocalSolver::kDualCoordinateAscent;
  req.sigma = c.workers;
  req.start_from_global = true;
  backend.LocalSolve(req);
  const std::vector<float> duals = backend.RowDuals();
  backend.AverageLocalModels();
  const LinearModel got = backend.ExportModel();

  const auto shards = Quantize(data, c.workers);
  const uint32_t n_pad = shards[0].n_pad;
  std::vector<int64_t> sum(n_pad + 1, 0);
  for (int k = 0; k < c.workers; ++k) {
    pimbackend::LinearKernelArgs a = ReferenceArgs(c, n_pad);
    std::vector<uint32_t> rows;
    for (uint64_t s = 0; s < req.num_steps; ++s) rows.push_back(plan.LocalBatch(k, s)[0] - plan.shards()[k].begin);
    std::vector<pimbackend::DualRowParams> params;
    for (uint32_t i = 0; i < shards[k].rows(); ++i) {
      const float y = data.labels()[plan.shards()[k].begin + i];
      params.push_back(pimbackend::MakeDualRowParams(pimbackend::QuantizedSquaredNorm(shards[k], i, true),
                                                     c.objective.ClassWeight(y), c.workers,
                                                     c.objective.l2 * static_cast<double>(data.num_rows())));
    }
    std::vector<int32_t> model(n_pad + 1, 0), beta(shards[k].rows(), 0);
    fixed::Saturation sat;
    pimbackend::ReferenceDualPass(shards[k], model, beta, params, rows, a, sat);
    for (uint32_t j = 0; j <= n_pad; ++j) sum[j] += model[j];
    for (uint32_t i = 0; i < shards[k].rows(); ++i) {
      ASSERT_EQ(duals[plan.shards()[k].begin + i], static_cast<float>(fixed::FromModel(beta[i]))) << k << " " << i;
    }
  }
  size_t nonzero = 0;
  for (size_t j = 0; j < data.num_features(); ++j) {
    ASSERT_EQ(got.weights[j], static_cast<float>(fixed::FromModel(sum[j] / c.workers))) << j;
    nonzero += got.weights[j] != 0;
  }
  EXPECT_EQ(got.bias, static_cast<float>(fixed::FromModel(sum[n_pad] / c.workers)));
  EXPECT_GT(nonzero, 20u);
}

TEST(PimBackend, CocoaRoundMatchesTheReferenceBitForBit) {
  for (LossKind loss : {LossKind::kLogistic, LossKind::kHinge}) {
    TrainConfig c = SmallConfig("cocoa", loss);
    c.objective.positive_weight = 3;
    ExpectCocoaRoundMatchesReference(testing::SmallDense(301, 150, 4), c);
    ExpectCocoaRoundMatchesReference(testing::SmallSparse(500, 1000, 8), c);
  }
}

// Without L2 on sparse rows the kernel updates only the coordinates each step touches (LinearKernelArgs::
// sparse_update): the same model as the reference's dense update, bit for bit, for a fraction of the kernel time.
TEST(PimBackend, SparseLocalStepsWithoutDecayUpdateOnlyTheTouchedCoordinates) {
  TrainConfig c = SmallConfig("ma", LossKind::kLogistic);
  c.objective.l2 = 0;
  c.objective.positive_weight = 15;
  c.objective.negative_weight = 0.5;
  const Dataset wide = testing::SmallSparse(500, 1 << 14, 8);
  ExpectMaRoundMatchesReference(wide, c, 5, 3);
  // Steps of more rows than the kernel's WRAM holds (1,024): the update walks the step's row list chunk by chunk.
  TrainConfig big = c;
  big.workers = 2;
  big.batch = 2500;
  ExpectMaRoundMatchesReference(testing::SmallSparse(5200, 1 << 16, 9), big, 1, 4);
  // One epoch each with and without a decay (which needs the sweep): the kernel time falls several times.
  ThreadPool pool(2);
  double kernel_s[2];
  for (int decay = 0; decay < 2; ++decay) {
    TrainConfig e = c;
    e.objective.l2 = decay ? 1e-4 : 0.0;
    e.workers = 4;
    e.epochs = 1;
    PimBackend backend(pool, PimBackendOptions{});
    const TrainResult r = Train(wide, nullptr, e, backend, TrainOptions{});
    kernel_s[decay] = r.phase_seconds.at("modeled_dpu_kernel");
  }
  EXPECT_LT(3 * kernel_s[0], kernel_s[1]) << kernel_s[0] << " " << kernel_s[1];
}

// --kernel pim-opt end to end: PIM-Opt's arithmetic on dense rows, its feature split of the non-zeros on sparse
// rows, both losses (the hinge with its 2^-15 margin), class weights: the reference's model bit for bit.
TEST(PimBackend, ArtifactKernelMaSgdRoundMatchesTheReferenceBitForBit) {
  const Dataset dense = testing::SmallDense(300, 150, 4);
  const Dataset sparse = testing::SmallSparse(500, 1000, 8);
  for (LossKind loss : {LossKind::kLogistic, LossKind::kHinge}) {
    TrainConfig c = SmallConfig("ma", loss);
    ExpectMaRoundMatchesReference(dense, c, 4, 7, true);
    c.objective.positive_weight = 15;
    c.objective.negative_weight = 0.5;
    ExpectMaRoundMatchesReference(sparse, c, 5, 3, true);
  }
}

TEST(PimBackend, SparseAndDenseKernelPathsComputeTheSameModel) {
  // The sparse path (gather / scatter / sweep) and the dense path compute the same fixed-point sums.
  const Dataset sparse = testing::SmallSparse(400, 300, 9);
  const Dataset dense = sparse.ToDense();
  for (std::string algo : {"ga", "ma", "admm"}) {
    TrainConfig c = SmallConfig(algo, LossKind::kHinge);
    c.workers = 4;
    c.batch = algo == "ga" ? 64 : 8;
    c.algorithm_options.As<AdmmOptions>("admm").rho = 0.1;
    c.epochs = 2;
    ThreadPool pool(2);
    PimBackend a(pool, {}), b(pool, {});
    TrainOptions options;
    const TrainResult rs = Train(sparse, nullptr, c, a, options), rd = Train(dense, nullptr, c, b, options);
    EXPECT_EQ(rs.model.weights, rd.model.weights) << algo;
    EXPECT_EQ(rs.model.bias, rd.model.bias) << algo;
  }
}

TEST(PimBackend, GaStepMatchesTheReferenceBitForBit) {
  const Dataset data = testing::SmallDense(200, 130, 5);
  const TrainConfig c = SmallConfig("ga", LossKind::kLogistic);
  ThreadPool pool(2);
  PimBackend backend(pool, {});
  backend.Setup(data, c);
  const std::vector<std::vector<uint32_t>> rows = {{1, 7, 30}, {80, 81}, {199, 150, 140, 133}};
  std::vector<std::span<const uint32_t>> spans(rows.begin(), rows.end());
  backend.GradientStep(spans, 9, c.lr);
  backend.GradientStep(spans, 9, c.lr);  // a second step starts from a non-zero model
  const LinearModel got = backend.ExportModel();

  const auto shards = Quantize(data, c.workers);
  const auto bounds = MakeShards(data.num_rows(), c.workers);
  const uint32_t n_pad = shards[0].n_pad;
  std::vector<int32_t> model(n_pad + 1, 0);
  fixed::Saturation sat;
  for (int step = 0; step < 2; ++step) {
    std::vector<int64_t> g(n_pad + 1, 0);
    for (int k = 0; k < c.workers; ++k) {
      std::vector<uint32_t> local;
      for (uint32_t r : rows[k]) local.push_back(r - bounds[k].begin);
      const auto gk = pimbackend::ReferenceGradient(shards[k], model, local, ReferenceArgs(c, n_pad));
      for (uint32_t j = 0; j <= n_pad; ++j) g[j] += gk[j];
    }
    const uint64_t scale = fixed::ToScale(c.lr / 9.0, "lr"), decay = fixed::ToScale(c.lr * c.objective.l2, "reg");
    for (uint32_t j = 0; j <= n_pad; ++j) {
      const int64_t delta = fixed::ShiftTowardZero(fixed::MulScale(g[j], scale), fixed::kFeatureFracBits);
      const int64_t shrink = j < n_pad ? fixed::MulScale(model[j], decay) : 0;
      model[j] = fixed::SaturateModel(model[j] - delta - shrink, sat);
    }
  }
  for (size_t j = 0; j < data.num_features(); ++j) {
    ASSERT_EQ(got.weights[j], static_cast<float>(fixed::FromModel(model[j]))) << j;
  }
  EXPECT_EQ(got.bias, static_cast<float>(fixed::FromModel(model[n_pad])));
  EXPECT_NE(got.bias, 0.0f);
}

TEST(PimBackend, SameModelWhateverTheHostThreadsAndModeledTimesAreReported) {
  const Dataset data = testing::SmallDense(600, 40, 6);
  for (std::string algo : {"ga", "ma", "admm"}) {
    TrainConfig c = SmallConfig(algo, LossKind::kLogistic);
    c.workers = 5;
    c.batch = algo == "ga" ? 40 : 8;
    c.algorithm_options.As<AdmmOptions>("admm").rho = 0.1;
    c.epochs = 2;
    ThreadPool one(1), three(3);
    PimBackendOptions o1, o3;
    o1.host_threads = 1;
    o3.host_threads = 3;
    PimBackend a(one, o1), b(three, o3);
    TrainOptions options;
    const TrainResult ra = Train(data, nullptr, c, a, options), rb = Train(data, nullptr, c, b, options);
    ASSERT_EQ(ra.model.weights, rb.model.weights) << algo;
    EXPECT_EQ(ra.phase_seconds.at("modeled_dpu_kernel"), rb.phase_seconds.at("modeled_dpu_kernel"));
    EXPECT_GT(ra.phase_seconds.at("modeled_dpu_kernel"), 0);
    EXPECT_GT(ra.phase_seconds.at("modeled_cpu_to_dpu"), 0);
    EXPECT_GT(ra.phase_seconds.at("modeled_dpu_to_cpu"), 0);
    // The host's reduction is modeled from the profile: the same whatever this machine's threads and load.
    EXPECT_EQ(ra.phase_seconds.at("modeled_host_reduction"), rb.phase_seconds.at("modeled_host_reduction"));
    EXPECT_GT(ra.phase_seconds.at("modeled_host_reduction"), 0);
    EXPECT_EQ(a.Project(2048, 3328, 2).epoch_s, b.Project(2048, 3328, 2).epoch_s) << algo;
    EXPECT_NEAR(ra.phase_seconds.at("modeled_total"),
                ra.phase_seconds.at("modeled_cpu_to_dpu") + ra.phase_seconds.at("modeled_dpu_kernel") +
                    ra.phase_seconds.at("modeled_launch_overhead") + ra.phase_seconds.at("modeled_dpu_to_cpu") +
                    ra.phase_seconds.at("modeled_host_reduction"),
                1e-12);
    // The error bar: each validated component times the profile's relative uncertainty.
    const pim::HardwareProfile p = pim::MakeProfile("pim-opt");
    EXPECT_NEAR(ra.phase_seconds.at("modeled_total_uncertainty"),
                p.kernel_time_uncertainty *
                        (ra.phase_seconds.at("modeled_dpu_kernel") + ra.phase_seconds.at("modeled_launch_overhead")) +
                    p.cpu_to_dpu_time_uncertainty * ra.phase_seconds.at("modeled_cpu_to_dpu") +
                    p.dpu_to_cpu_time_uncertainty * ra.phase_seconds.at("modeled_dpu_to_cpu"),
                1e-12);
    EXPECT_GT(ra.phase_seconds.at("modeled_total_uncertainty"), 0.05 * ra.phase_seconds.at("modeled_total"));
    EXPECT_GT(ra.epochs.back().train.accuracy, 0.85) << algo;
    EXPECT_EQ(a.Counters().at("dpu_saturations"), 0);
  }
}

// Energy beside time (pim/energy.h): the DPUs' busy time at their active power, the transfers' bytes over the
// channel and the host cores that move them (one per rank), the host's cores while reducing and launching; the parts
// add up, every epoch's record has its share, a profile with twice the figures doubles them, and a projection to
// more DPUs scales the DPUs' part with them.
TEST(PimBackend, ModeledEnergyAddsUpItsPartsFromTheProfilesFigures) {
  const Dataset data = testing::SmallDense(640, 30, 4);
  TrainConfig c = SmallConfig("ma", LossKind::kLogistic);
  c.workers = 8;
  c.batch = 8;
  c.epochs = 2;
  auto run = [&](const std::string& overrides, EpochProjection* projection) {
    ThreadPool pool(2);
    PimBackendOptions o;
    o.profile_overrides = overrides;
    PimBackend backend(pool, o);
    TrainResult r = Train(data, nullptr, c, backend, TrainOptions{});
    if (projection) *projection = backend.Project(64, 80, 2);
    return r;
  };
  EpochProjection projection;
  const TrainResult r = run("", &projection);
  const auto& p = r.phase_seconds;
  const pim::HardwareProfile profile = pim::MakeProfile("pim-opt");
  EXPECT_GT(p.at("modeled_energy_dpu_j"), 0);
  EXPECT_GT(p.at("modeled_energy_transfer_j"), 0);
  EXPECT_GT(p.at("modeled_energy_host_j"), 0);
  EXPECT_EQ(p.at("modeled_energy_link_j"), 0);
  EXPECT_NEAR(p.at("modeled_energy_j"),
              p.at("modeled_energy_dpu_j") + p.at("modeled_energy_transfer_j") + p.at("modeled_energy_host_j"), 1e-12);
  // The host: its reduction on min(threads, cores) cores and its launches on one, at the core's power.
  EXPECT_NEAR(p.at("modeled_energy_host_j"),
              profile.host_core_power_w * (16 * p.at("modeled_host_reduction") + p.at("modeled_launch_overhead")),
              1e-12);
  // The DPUs: at most every DPU busy for the whole kernel time (the slowest DPU's).
  EXPECT_LE(p.at("modeled_energy_dpu_j"), 8 * p.at("modeled_dpu_kernel") * profile.dpu_active_power_w * (1 + 1e-9));
  double per_epoch = 0;
  for (const EpochRecord& e : r.epochs) per_epoch += e.phase_seconds.at("modeled_energy_j");
  EXPECT_NEAR(per_epoch, p.at("modeled_energy_j"), 1e-9);
  const TrainResult doubled =
      run(StrCat("dpu_active_power_w=", 2 * profile.dpu_active_power_w, ",host_core_power_w=",
                 2 * profile.host_core_power_w, ",channel_energy_j_per_byte=", 2 * profile.channel_energy_j_per_byte),
          nullptr);
  EXPECT_NEAR(doubled.phase_seconds.at("modeled_energy_j"), 2 * p.at("modeled_energy_j"), 1e-9);
  EXPECT_EQ(doubled.phase_seconds.at("modeled_total"), p.at("modeled_total"));  // energy figures never change time
  // Projected to 64 DPUs of 80 rows (8 x 80 here): the DPUs' energy per epoch grows with the DPUs.
  EXPECT_NEAR(projection.energy.dpu_j, p.at("modeled_energy_dpu_j") / 2 * 8, 1e-9);
  EXPECT_GT(projection.energy.transfer_j, 0);
}

TEST(PimBackend, ModeledHostReductionIsTheProfilesModelOfEachSynchronization) {
  const Dataset data = testing::SmallDense(640, 30, 4);
  TrainConfig c = SmallConfig("ma", LossKind::kLogistic);
  c.workers = 4;
  c.batch = 8;
  c.epochs = 1;
  ThreadPool pool(1);
  PimBackendOptions o;
  PimBackend backend(pool, o);
  const TrainResult r = Train(data, nullptr, c, backend, TrainOptions{});
  const uint64_t syncs = backend.ledger().syncs;
  ASSERT_EQ(syncs, 640u / 4 / 8);                                                   // one model average per local step
  const uint64_t coordinates = backend.ledger().host_work.begin()->first.elements;  // n_pad + bias
  const double one = pim::ModelHostReductionSeconds(pim::MakeProfile("pim-opt"), {.vectors = 4,
                                                                                  .elements = coordinates,
                                                                                  .bytes_per_element = 4,
                                                                                  .update_elements = coordinates,
                                                                                  .update_bytes_per_element = 20});
  EXPECT_NEAR(r.phase_seconds.at("modeled_host_reduction"), one * static_cast<double>(syncs), 1e-12);
  // --host-time measured puts this machine's measured seconds in the modeled times instead.
  PimBackendOptions measured;
  measured.measured_host = true;
  PimBackend m(pool, measured);
  const TrainResult rm = Train(data, nullptr, c, m, TrainOptions{});
  EXPECT_EQ(rm.phase_seconds.at("modeled_host_reduction"), rm.phase_seconds.at("measured_host_reduction"));
  EXPECT_EQ(rm.model.weights, r.model.weights);
}

// --sync-format auto on sparse data: GA-SGD's gradients and MA-SGD's model deltas (--reg 0) go up as (index, value)
// pairs: the same model, far fewer bytes and less modeled DPU->CPU time, the DPUs' compaction charged; dense data,
// MA-SGD with L2 (every coordinate decays) and ADMM keep the dense vectors.
TEST(PimBackend, CompactedSynchronizationMovesOnlyTheTouchedCoordinates) {
  const Dataset sparse = testing::SmallSparse(4096, 1 << 14, 3);
  ThreadPool pool(2);
  for (const std::string algo : {"ga", "ma"}) {
    SCOPED_TRACE(algo);
    TrainConfig c = SmallConfig(algo, LossKind::kLogistic);
    c.workers = 8;
    c.batch = algo == "ga" ? 64 : 8;
    c.epochs = 1;
    c.objective.l2 = 0;
    PimBackendOptions dense, compact;
    compact.sync_format = PimBackendOptions::SyncFormat::kAuto;
    PimBackend a(pool, dense), b(pool, compact);
    const TrainResult ra = Train(sparse, nullptr, c, a, TrainOptions{});
    const TrainResult rb = Train(sparse, nullptr, c, b, TrainOptions{});
    EXPECT_EQ(ra.model.weights, rb.model.weights);
    EXPECT_EQ(ra.model.bias, rb.model.bias);
    EXPECT_LT(rb.traffic.from_workers_bytes * 20, ra.traffic.from_workers_bytes);
    EXPECT_EQ(rb.traffic.to_workers_bytes, ra.traffic.to_workers_bytes);  // the model still comes down whole
    EXPECT_LT(rb.phase_seconds.at("modeled_dpu_to_cpu") * 5, ra.phase_seconds.at("modeled_dpu_to_cpu"));
    EXPECT_LT(rb.phase_seconds.at("modeled_host_reduction"), ra.phase_seconds.at("modeled_host_reduction"));
    EXPECT_GT(b.ledger().encoding_s, 0.0);
    EXPECT_NEAR(rb.phase_seconds.at("modeled_dpu_kernel") - ra.phase_seconds.at("modeled_dpu_kernel"),
                b.ledger().encoding_s, 1e-12);
    EXPECT_EQ(a.ledger().syncs, b.ledger().syncs);
    // Bytes per DPU per pull: 8 per pair (the distinct columns of the DPU's rows and the bias) and a count.
    const uint64_t pulls = b.ledger().from_dpu[static_cast<size_t>(PimBackend::Activity::kTraining)].count;
    ASSERT_GT(pulls, 0u);
    EXPECT_EQ(rb.traffic.from_workers_bytes % 8, 0u);
  }
  // Where the pairs would not be smaller, or the vector is not sparse: the dense pulls, bit for bit the same time.
  for (const auto& [algo, l2, data] : {std::tuple{std::string("ma"), 1e-4, &sparse},
                                       std::tuple{std::string("admm"), 0.0, &sparse}}) {
    SCOPED_TRACE(algo);
    TrainConfig c = SmallConfig(algo, LossKind::kLogistic);
    c.workers = 8;
    c.batch = 8;
    c.epochs = 1;
    c.objective.l2 = l2;
    PimBackendOptions dense, compact;
    compact.sync_format = PimBackendOptions::SyncFormat::kAuto;
    PimBackend a(pool, dense), b(pool, compact);
    const TrainResult ra = Train(*data, nullptr, c, a, TrainOptions{});
    const TrainResult rb = Train(*data, nullptr, c, b, TrainOptions{});
    EXPECT_EQ(ra.phase_seconds.at("modeled_total"), rb.phase_seconds.at("modeled_total"));
    EXPECT_EQ(ra.traffic.from_workers_bytes, rb.traffic.from_workers_bytes);
  }
}

// --sync-format int16 / int8: MA-SGD's model deltas quantized with error feedback: a quarter (int8) of the bytes up,
// a model close to the dense one (the error is fed back, not lost), the same bits on any host thread count, a
// checkpoint that holds the errors (a resumed run continues bit for bit), and the refusal for other algorithms.
TEST(PimBackend, QuantizedModelDeltasWithErrorFeedback) {
  const Dataset train = testing::SmallDense(4096, 64, 5);
  const Dataset test = testing::SmallDense(1024, 64, 5, 4096);
  TrainConfig c = SmallConfig("ma", LossKind::kLogistic);
  c.workers = 8;
  c.batch = 8;
  c.epochs = 3;
  ThreadPool one(1), two(2);
  PimBackendOptions dense;
  PimBackend reference(two, dense);
  const TrainResult r = Train(train, &test, c, reference, TrainOptions{});
  for (const auto& [format, bits] : {std::pair{PimBackendOptions::SyncFormat::kInt16, 16},
                                     std::pair{PimBackendOptions::SyncFormat::kInt8, 8}}) {
    SCOPED_TRACE(bits);
    PimBackendOptions o;
    o.sync_format = format;
    PimBackend a(two, o), b(one, o);
    const TrainResult qa = Train(train, &test, c, a, TrainOptions{});
    const TrainResult qb = Train(train, &test, c, b, TrainOptions{});
    EXPECT_EQ(qa.model.weights, qb.model.weights);  // integer quantization: no dependence on threads
    EXPECT_NE(qa.model.weights, r.model.weights);   // lossy
    EXPECT_NEAR(qa.epochs.back().test->accuracy, r.epochs.back().test->accuracy, 0.01);
    // Bytes up: bits / 8 per coordinate (rounded to 8 bytes) and an 8-byte step, against 4 per coordinate.
    const double ratio =
        static_cast<double>(qa.traffic.from_workers_bytes) / static_cast<double>(r.traffic.from_workers_bytes);
    EXPECT_NEAR(ratio, bits / 32.0, 0.12);
    EXPECT_LT(qa.phase_seconds.at("modeled_dpu_to_cpu"), r.phase_seconds.at("modeled_dpu_to_cpu"));
    EXPECT_GT(a.ledger().encoding_s, 0.0);
  }
  // The int8 run's errors travel in checkpoints: two epochs, a new backend restoring the state, a third epoch.
  PimBackendOptions o8;
  o8.sync_format = PimBackendOptions::SyncFormat::kInt8;
  PimBackend whole(two, o8);
  const TrainResult full = Train(train, nullptr, c, whole, TrainOptions{});
  testing::TempDir dir;
  TrainOptions first;
  first.checkpoint_path = dir.Path("q.ckpt");
  first.checkpoint_every = 1;
  TrainConfig half = c;
  half.epochs = 2;
  PimBackend b1(two, o8);
  Train(train, nullptr, half, b1, first);
  TrainOptions resume = first;
  resume.resume = true;
  PimBackend b2(two, o8);
  const TrainResult resumed = Train(train, nullptr, c, b2, resume);
  EXPECT_EQ(resumed.resumed_from_epoch, 2);
  EXPECT_EQ(resumed.model.weights, full.model.weights);
  // Only MA-SGD's averages are quantized.
  TrainConfig ga = c;
  ga.algorithm = "ga";
  ga.batch = 64;
  PimBackend g(two, o8);
  try {
    Train(train, nullptr, ga, g, TrainOptions{});
    FAIL() << "GA-SGD accepted --sync-format int8";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.parameter(), "--sync-format") << e.what();
  }
}

// A projection to the run's own DPU count and rows per DPU re-times the machine's logged training transfers as the
// run timed them (one function times both): pimopt's broadcasts, PIM-Opt's pushes of one model buffer to every DPU
// (one source per rank, whose host cache knee a projection once missed), the encoded pulls of --sync-format.
TEST(PimBackend, AProjectionToTheRunsOwnSizeRetimesItsTransfersAsTheRunDid) {
  const Dataset data = testing::SmallDense(3200, 300, 9);
  ThreadPool pool(2);
  for (const bool artifact : {false, true}) {
    for (const std::string algo : {"ga", "ma"}) {
      TrainConfig c = SmallConfig(algo, LossKind::kLogistic);
      c.workers = 16;
      c.batch = algo == "ga" ? 64 : 8;
      c.epochs = 2;
      c.objective.l2 = 0;
      PimBackendOptions options;
      options.artifact_kernel = artifact;
      if (!artifact && algo == "ma") options.sync_format = PimBackendOptions::SyncFormat::kInt8;
      PimBackend backend(pool, options);
      Train(data, nullptr, c, backend, TrainOptions{});
      const auto training = static_cast<size_t>(PimBackend::Activity::kTraining);
      const EpochProjection same = backend.Project(16, 200, 2);
      const double to_s = backend.ledger().to_dpu[training].modeled_s / 2;
      const double from_s = backend.ledger().from_dpu[training].modeled_s / 2;
      EXPECT_NEAR(same.cpu_to_dpu_s, to_s, 1e-12 * to_s) << algo << (artifact ? " pim-opt" : "");
      EXPECT_NEAR(same.dpu_to_cpu_s, from_s, 1e-12 * from_s) << algo << (artifact ? " pim-opt" : "");
      EXPECT_GT(to_s, 0);
      EXPECT_GT(from_s, 0);
    }
  }
}

// Rows that do not divide over the DPUs: the run's times are its largest shard's (the slowest DPU, the steps of an
// epoch), and a projection to its own DPU count and that shard's rows gives them back. The mean rows per DPU projected
// a run of 133 rows on 64 DPUs onto itself 44% high.
// MA-SGD on `workers` DPUs, local batch 8, 2 epochs.
TrainConfig SmallMaConfig(int workers) {
  TrainConfig c = SmallConfig("ma", LossKind::kLogistic);
  c.workers = workers;
  c.batch = 8;
  c.epochs = 2;
  return c;
}

TEST(PimBackend, AProjectionToTheRunsOwnSizeGivesItsKernelTimeWhenRowsDoNotDivide) {
  const Dataset data = testing::SmallDense(3203, 40, 9);
  ThreadPool pool(2);
  TrainConfig c = SmallMaConfig(16);
  c.objective.l2 = 0;
  PimBackend backend(pool, PimBackendOptions{});
  Train(data, nullptr, c, backend, TrainOptions{});
  const EpochProjection same = backend.Project(16, (3203 + 15) / 16, 2);
  const double kernel_s = backend.ledger().kernel_s / 2;
  ASSERT_GT(kernel_s, 0);
  EXPECT_NEAR(same.kernel_s, kernel_s, 1e-12 * kernel_s);
  const auto training = static_cast<size_t>(PimBackend::Activity::kTraining);
  const double to_s = backend.ledger().to_dpu[training].modeled_s / 2;
  EXPECT_NEAR(same.cpu_to_dpu_s, to_s, 1e-12 * to_s);
}

// The DPUs' encoding of a --sync-format int8 pull is kernel time (modeled_dpu_kernel counts it) and costs the DPUs'
// active power for it, as a launch's kernel time does: it added time and no energy. The two runs' launches are the
// same work here (the encoding is the only difference: their energies differ by it alone).
TEST(PimBackend, TheSyncEncodingCostsTheDpusEnergy) {
  const Dataset data = testing::SmallDense(640, 30, 9);
  ThreadPool pool(2);
  const TrainConfig c = SmallMaConfig(8);
  PimBackendOptions plain, int8;
  int8.sync_format = PimBackendOptions::SyncFormat::kInt8;
  PimBackend a(pool, plain), b(pool, int8);
  Train(data, nullptr, c, a, TrainOptions{});
  Train(data, nullptr, c, b, TrainOptions{});
  const double encoding_s = b.Counters().at("modeled_dpu_encoding_s");
  ASSERT_GT(encoding_s, 0);
  const double expected = pim::DpuEnergyJoules(pim::MakeProfile(int8.profile), encoding_s * c.workers);
  const double kernel_added = b.PhaseSeconds().at("modeled_dpu_kernel") - a.PhaseSeconds().at("modeled_dpu_kernel");
  ASSERT_NEAR(kernel_added, encoding_s, 1e-9 * encoding_s);  // the same launches: the encoding is all that differs
  const double energy_added = b.PhaseSeconds().at("modeled_energy_dpu_j") - a.PhaseSeconds().at("modeled_energy_dpu_j");
  EXPECT_NEAR(energy_added, expected, 1e-6 * expected);
}

// --kernel pim-opt: PIM-Opt's transfer pattern, synchronization by synchronization, and a model as good as pimopt's.
TEST(PimBackend, ArtifactKernelMovesWhatPimOptMoves) {
  using Kind = PimBackend::TransferKind;
  const Dataset data = testing::SmallDense(640, 300, 9);
  ThreadPool pool(2);
  for (const std::string algo : {"ma", "ga", "admm"}) {
    TrainConfig c = SmallConfig(algo, LossKind::kLogistic);
    c.workers = 4;
    c.batch = algo == "ga" ? 32 : 8;
    c.epochs = 2;
    c.lr = 0.25;
    PimBackendOptions pimopt_options, artifact_options;
    artifact_options.artifact_kernel = true;
    PimBackend pimopt_backend(pool, pimopt_options), artifact_backend(pool, artifact_options);
    const TrainResult mine = Train(data, &data, c, pimopt_backend, TrainOptions{});
    const TrainResult theirs = Train(data, &data, c, artifact_backend, TrainOptions{});
    const auto& ledger = artifact_backend.ledger();
    const uint64_t n_pad = 384, model_bytes = (n_pad + 8) * 4, gradient_bytes = (n_pad + 8) * 8;
    const uint64_t syncs = ledger.syncs;
    ASSERT_GT(syncs, 0u);
    // The training transfers of `kind` and `bytes` per DPU, as the machine logged them.
    auto count_in = [](const PimBackend& backend, Kind kind, uint64_t bytes) {
      uint64_t n = 0;
      for (const auto& [key, times] : backend.machine_log().transfers()) {
        if (PimBackend::LoggedActivity(key.tag) == PimBackend::Activity::kTraining &&
            PimBackend::LoggedKind(key.tag) == kind && key.verb.bytes_per_dpu == bytes) {
          n += times;
        }
      }
      return n;
    };
    auto count = [&](Kind kind, uint64_t bytes) { return count_in(artifact_backend, kind, bytes); };
    for (const auto& [key, n] : artifact_backend.machine_log().transfers()) {
      if (PimBackend::LoggedActivity(key.tag) != PimBackend::Activity::kTraining) continue;
      EXPECT_NE(key.verb.kind, pim::TransferVerb::Kind::kBroadcast) << algo << ": PIM-Opt pushes the model to each DPU";
    }
    if (algo == "ma") {
      EXPECT_EQ(count(Kind::kPushModels, model_bytes), syncs);
      EXPECT_EQ(count(Kind::kPullModels, model_bytes), syncs);
    } else if (algo == "ga") {
      EXPECT_EQ(count(Kind::kPushModels, model_bytes), syncs);
      EXPECT_EQ(count(Kind::kPullGradients, model_bytes), syncs);  // int32 gradients on dense data
      EXPECT_EQ(count_in(pimopt_backend, Kind::kPullGradients, gradient_bytes),
                pimopt_backend.ledger().syncs);  // pimopt's are int64
    } else {
      EXPECT_EQ(syncs, 2u);                                     // one consensus round per epoch
      EXPECT_EQ(count(Kind::kPushModels, model_bytes), syncs);  // x_k back to each DPU (zeros in round 0)
      EXPECT_EQ(count(Kind::kPushTargets, model_bytes), syncs);
      EXPECT_EQ(count(Kind::kPullModels, model_bytes), syncs);
    }
    // Setup: the 4-byte rows and PIM-Opt's 4 MiB exp table on every DPU.
    const auto setup = static_cast<size_t>(PimBackend::Activity::kSetup);
    EXPECT_GE(ledger.to_dpu[setup].bytes, 4ull * (4u << 20) + 640ull * n_pad * 4);
    // The artifact's kernel costs more modeled time and learns a model as good as pimopt's.
    EXPECT_GT(theirs.phase_seconds.at("modeled_dpu_kernel"), 2 * mine.phase_seconds.at("modeled_dpu_kernel")) << algo;
    EXPECT_NEAR(theirs.epochs.back().test->accuracy, mine.epochs.back().test->accuracy, 0.03) << algo;
    EXPECT_GT(theirs.epochs.back().test->accuracy, 0.7) << algo;
  }
}

// The machine seam (pim/machine.h): the backend reaches the DPUs only through a PimMachine. A machine that wraps
// the emulator, counts every verb and calls its times measured (as hardware would) trains the same model; the
// backend loads its kernel by name, its ledger counts every launch and transfer the machine served, and the report
// says how many times were measured.
class WrappedMachine final : public pim::PimMachine {
 public:
  WrappedMachine(std::unique_ptr<pim::PimMachine> inner, std::map<std::string, uint64_t>& verbs)
      : inner_(std::move(inner)), verbs_(verbs) {}
  const pim::HardwareProfile& profile() const override { return inner_->profile(); }
  uint32_t size() const override { return inner_->size(); }
  void Load(const std::string& name, uint32_t tasklets) override {
    ++verbs_["load " + name];
    inner_->Load(name, tasklets);
  }
  void PrepareXfer(uint32_t dpu, void* buffer, uint64_t bytes) override { inner_->PrepareXfer(dpu, buffer, bytes); }
  pim::MachineTime PushXfer(pim::XferDirection d, std::string_view symbol, uint64_t offset, uint64_t bytes,
                            uint32_t tag) override {
    ++verbs_["push"];
    return Measured(inner_->PushXfer(d, symbol, offset, bytes, tag));
  }
  pim::MachineTime PullEncoded(std::string_view symbol, uint64_t offset, uint64_t bytes, uint64_t encoded_bytes,
                               uint32_t tag) override {
    ++verbs_["pull encoded"];
    return Measured(inner_->PullEncoded(symbol, offset, bytes, encoded_bytes, tag));
  }
  pim::MachineTime BroadcastTo(std::string_view symbol, uint64_t offset, const void* source, uint64_t bytes,
                               uint32_t tag) override {
    ++verbs_["broadcast"];
    return Measured(inner_->BroadcastTo(symbol, offset, source, bytes, tag));
  }
  pim::MachineTime CopyFrom(uint32_t dpu, std::string_view symbol, uint64_t offset, void* destination,
                            uint64_t bytes, uint32_t tag) override {
    ++verbs_["copy"];
    return Measured(inner_->CopyFrom(dpu, symbol, offset, destination, bytes, tag));
  }
  const pim::MachineLog& log() const override { return inner_->log(); }
  pim::MachineLaunch Launch() override {
    ++verbs_["launch"];
    pim::MachineLaunch l = inner_->Launch();
    l.measured = true;
    return l;
  }

 private:
  static pim::MachineTime Measured(pim::MachineTime t) {
    t.measured = true;
    return t;
  }
  std::unique_ptr<pim::PimMachine> inner_;
  std::map<std::string, uint64_t>& verbs_;
};

TEST(PimBackend, TrainsOnAnyPimMachineThroughTheSeam) {
  const Dataset data = testing::SmallDense(600, 24, 8);
  for (std::string algo : {"ga", "ma", "admm"}) {
    TrainConfig c = SmallConfig(algo, LossKind::kLogistic);
    c.workers = 4;
    c.batch = algo == "ga" ? 32 : 8;
    c.algorithm_options.As<AdmmOptions>("admm").rho = 0.1;
    c.epochs = 2;
    ThreadPool pool(2);
    std::map<std::string, uint64_t> verbs;
    PimBackendOptions wrapped_options;
    wrapped_options.machine = [&](const pim::HardwareProfile& profile, uint32_t dpus,
                                  const pim::EmulatedMachineOptions& how) -> std::unique_ptr<pim::PimMachine> {
      return std::make_unique<WrappedMachine>(pim::AllocateEmulatedMachine(profile, dpus, how), verbs);
    };
    PimBackend emulated(pool, PimBackendOptions{}), wrapped(pool, wrapped_options);
    const TrainResult a = Train(data, nullptr, c, emulated), b = Train(data, nullptr, c, wrapped);
    ASSERT_EQ(a.model.weights, b.model.weights) << algo;
    EXPECT_EQ(a.model.bias, b.model.bias) << algo;
    EXPECT_EQ(a.phase_seconds.at("modeled_total"), b.phase_seconds.at("modeled_total")) << algo;
    // One load of the linear kernel: by name (--kernels port) or as its compiled DPU program (--kernels program,
    // the default where pimopt has its DPU toolchain).
    uint64_t loads = 0;
    for (const auto& [verb, count] : verbs) {
      if (verb.rfind("load ", 0) == 0) {
        EXPECT_NE(verb.find("pimopt_linear"), std::string::npos) << verb;
        loads += count;
      }
    }
    EXPECT_EQ(loads, 1u) << algo;
    EXPECT_EQ(verbs["launch"], wrapped.ledger().launches) << algo;
    uint64_t transfers = 0;
    for (size_t i = 0; i < PimBackend::kNumActivities; ++i) {
      transfers += wrapped.ledger().to_dpu[i].count + wrapped.ledger().from_dpu[i].count;
    }
    // Every transfer the ledger holds came from the machine, and the machine's log holds each of them once.
    EXPECT_EQ(verbs["push"] + verbs["pull encoded"] + verbs["broadcast"] + verbs["copy"], transfers) << algo;
    uint64_t logged = 0;
    for (const auto& [key, times] : wrapped.machine_log().transfers()) logged += times;
    EXPECT_EQ(logged, transfers) << algo;
    EXPECT_EQ(wrapped.ledger().measured_times, transfers + verbs["launch"]) << algo;
    const auto counters = wrapped.Counters();  // reads the saturation counters: one copy per DPU, measured too
    EXPECT_EQ(counters.at("machine_measured_times"), static_cast<double>(transfers + verbs["launch"] + 4)) << algo;
    EXPECT_EQ(emulated.Counters().count("machine_measured_times"), 0u) << algo;
  }
}

TEST(PimBackend, RejectsWhatItCannotRun) {
  ThreadPool pool(1);
  auto expect_flag = [&](const Dataset& d, TrainConfig c, PimBackendOptions o, const std::string& flag) {
    PimBackend backend(pool, o);
    try {
      backend.Setup(d, c);
      FAIL() << "accepted; expected an error naming " << flag;
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.parameter(), flag) << e.what();
    }
  };
  const Dataset dense = testing::SmallDense(100, 10);
  TrainConfig c = SmallConfig("ma", LossKind::kLogistic);
  TrainConfig many = c;
  many.workers = 3000;  // more DPUs than the profile has (and rows enough for them)
  expect_flag(testing::SmallDense(3000, 10), many, {}, "--dpus");
  expect_flag(dense, many, {}, "--workers");  // more workers than rows: refused before anything is sized by them
  PimBackendOptions too_many;
  too_many.tasklets = 30;
  expect_flag(dense, c, too_many, "--tasklets");
  PimBackendOptions cray;
  cray.profile = "cray";
  EXPECT_THROW(PimBackend(pool, cray).Setup(dense, c), ConfigError);
  PimBackendOptions async_measured;
  async_measured.async_transfers = true;
  async_measured.measured_host = true;
  expect_flag(dense, c, async_measured, "--transfers");
}

// --transfers async: the same model and the same transfers, kernels and reductions; the modeled total is the
// synchronous one less what the pipelined reductions saved, at the run's DPU count and re-modeled in projections,
// where at 2,048 DPUs the large gradients' pulls and sums overlap.
TEST(PimBackend, AsynchronousTransfersOverlapPullsWithTheHostsReduction) {
  const Dataset sparse = testing::SmallSparse(4096, 1 << 16, 3);  // 512 KB vectors: chunks pay their calls
  ThreadPool pool(2);
  for (const std::string algo : {"ga", "ma"}) {
    SCOPED_TRACE(algo);
    TrainConfig c = SmallConfig(algo, LossKind::kLogistic);
    c.workers = 8;
    c.batch = algo == "ga" ? 512 : 64;
    c.epochs = 1;
    PimBackendOptions sync, async;
    async.async_transfers = true;
    PimBackend a(pool, sync), b(pool, async);
    const TrainResult ra = Train(sparse, nullptr, c, a, TrainOptions{});
    const TrainResult rb = Train(sparse, nullptr, c, b, TrainOptions{});
    EXPECT_EQ(ra.model.weights, rb.model.weights);
    for (const auto& [phase, seconds] : ra.phase_seconds) {
      if (phase == "modeled_total" || phase == "modeled_overlap_saved" || phase.rfind("measured", 0) == 0 ||
          phase == "emulation_wall") {
        continue;
      }
      EXPECT_EQ(seconds, rb.phase_seconds.at(phase)) << phase;
    }
    EXPECT_EQ(ra.phase_seconds.at("modeled_overlap_saved"), 0);
    const double saved = rb.phase_seconds.at("modeled_overlap_saved");
    EXPECT_GE(saved, 0);
    EXPECT_NEAR(rb.phase_seconds.at("modeled_total"), ra.phase_seconds.at("modeled_total") - saved, 1e-12);
    uint64_t reductions = 0;
    for (const auto& [key, count] : b.ledger().reductions) reductions += count;
    EXPECT_EQ(reductions, b.ledger().syncs);
    // At 2,048 DPUs (32 ranks) the pulls wait for the host's cap and the sums grow with the DPUs: they overlap.
    const EpochProjection pa = a.Project(2048, 4096, 1), pb = b.Project(2048, 4096, 1);
    EXPECT_EQ(pa.overlap_saved_s, 0);
    EXPECT_GT(pb.overlap_saved_s, 0.02 * pb.epoch_s);
    EXPECT_LE(pb.overlap_saved_s, std::min(pb.dpu_to_cpu_s, pb.host_reduction_s));
    EXPECT_NEAR(pb.epoch_s, pa.epoch_s - pb.overlap_saved_s, 1e-9 * pa.epoch_s);
  }
}

// A small training run of the PIM backend: an algorithm on the small dense or sparse set, either kernel.
struct SmallPimRun {
  std::string algo;
  const Dataset* data;
  LossKind loss = LossKind::kLogistic;
  bool artifact = false, feature_split = false;
  double l2 = 1e-3;

  std::string What(const Dataset& dense) const {
    return algo + (data == &dense ? " dense " : " sparse ") + LossName(loss) + (artifact ? ", pim-opt kernel" : "") +
           (feature_split ? ", feature split" : "") + (l2 == 0 ? ", no decay" : "");
  }
  // Trains two epochs with the backend's options as `configure` leaves them.
  TrainResult Train(const std::function<void(PimBackendOptions&)>& configure) const {
    TrainConfig c = SmallConfig(algo, loss);
    c.workers = algo == "sgd" || algo == "mbsgd" ? 1 : 8;
    c.batch = algo == "ga" || algo == "mbsgd" ? 32 : algo == "sgd" || algo == "cocoa" ? 1 : 4;
    c.objective.l2 = l2;
    c.algorithm_options.As<AdmmOptions>("admm").rho = 0.1;
    c.epochs = 2;
    ThreadPool pool(2);
    PimBackendOptions o;
    o.host_threads = 2;
    o.artifact_kernel = artifact;
    o.feature_split = feature_split || artifact;
    o.sigmoid_float = artifact;
    configure(o);
    PimBackend backend(pool, o);
    return pimopt::Train(*data, nullptr, c, backend, TrainOptions{});
  }
};

// The training kernel under the batched scheduler (tasklets run ahead past their DMAs; DPUs with the same events
// share their clock's work) and the reference one: every algorithm, dense and sparse rows, pimopt's kernel and
// PIM-Opt's, the feature split and the sparse local steps, the same model and the same modeled times to the bit.
TEST(PimBackend, EveryAlgorithmTrainsTheSameModelInTheSameModeledTimeUnderBothSchedulers) {
  const Dataset dense = testing::SmallDense(480, 150, 3), sparse = testing::SmallSparse(600, 1 << 10, 3);
  const LossKind lr = LossKind::kLogistic;
  const std::vector<SmallPimRun> cases = {
      {"sgd", &dense},   {"mbsgd", &dense}, {"ga", &dense},      {"ma", &dense},
      {"dsgd", &dense},  {"admm", &dense},  {"ga", &sparse},     {"ma", &sparse},
      {"ma", &sparse, lr, false, false, 0.0},  // sparse local steps (no decay)
      {"admm", &sparse}, {"ga", &dense, lr, true}, {"admm", &dense, lr, true}, {"ma", &sparse, lr, true},
      {"ma", &dense, lr, false, true}};
  for (const SmallPimRun& k : cases) {
    const std::string what = k.What(dense);
    TrainResult results[2];
    for (int s = 0; s < 2; ++s) {
      results[s] = k.Train([s](PimBackendOptions& o) {
        o.scheduler = s == 0 ? pim::Scheduler::kReference : pim::Scheduler::kBatched;
      });
    }
    ASSERT_EQ(results[0].model.weights, results[1].model.weights) << what;
    EXPECT_EQ(results[0].model.bias, results[1].model.bias) << what;
    for (const auto& [phase, seconds] : results[0].phase_seconds) {
      if (phase.rfind("modeled", 0) == 0) {
        EXPECT_EQ(seconds, results[1].phase_seconds.at(phase)) << what << " " << phase;
      }
    }
    EXPECT_GT(results[1].phase_seconds.at("modeled_dpu_kernel"), 0) << what;
  }
}

// The linear kernel as a DPU program in C (--kernels program, src/backends/pim/dpu/pimopt_linear.c) trains the
// model of its port over the operand types (--kernels port), bit for bit, in every algorithm, on dense and sparse
// rows, with both kernels; the transfers (their modeled times) are the same, and the kernel time the cost pass
// charges stays near what the operand types count (measured: within -13% .. +16%, docs/pim-backend.md).
TEST(PimBackend, TheKernelsDpuProgramTrainsItsPortsModelInEveryAlgorithm) {
  if (!pim::HaveDpuToolchain()) GTEST_SKIP() << "built without the DPU toolchain";
  const Dataset dense = testing::SmallDense(480, 150, 3), sparse = testing::SmallSparse(600, 1 << 10, 3);
  const LossKind lr = LossKind::kLogistic, svm = LossKind::kHinge;
  const std::vector<SmallPimRun> cases = {
      {"sgd", &dense},    {"mbsgd", &sparse, svm}, {"ga", &dense},     {"ma", &dense, svm},
      {"dsgd", &sparse},  {"admm", &dense},        {"ga", &sparse, svm}, {"admm", &sparse},
      {"ma", &sparse, lr, false, false, 0.0},  // sparse local steps (no decay)
      {"cocoa", &dense},  {"cocoa", &sparse, svm}, {"ga", &dense, lr, true}, {"admm", &dense, svm, true},
      {"ma", &sparse, lr, true}, {"ma", &dense, lr, false, true}};
  for (const SmallPimRun& k : cases) {
    const std::string what = k.What(dense);
    TrainResult results[2];
    for (int s = 0; s < 2; ++s) {
      results[s] = k.Train([s](PimBackendOptions& o) {
        o.kernels = s == 0 ? pim::KernelSource::kPort : pim::KernelSource::kProgram;
      });
    }
    ASSERT_EQ(results[0].model.weights, results[1].model.weights) << what;
    EXPECT_EQ(results[0].model.bias, results[1].model.bias) << what;
    for (const char* phase : {"modeled_cpu_to_dpu", "modeled_dpu_to_cpu", "modeled_dpu_to_dpu"}) {
      EXPECT_EQ(results[0].phase_seconds.at(phase), results[1].phase_seconds.at(phase)) << what << " " << phase;
    }
    const double port = results[0].phase_seconds.at("modeled_dpu_kernel");
    const double program = results[1].phase_seconds.at("modeled_dpu_kernel");
    std::string key = what;  // an XML attribute name
    for (char& ch : key) ch = std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
    RecordProperty(key, StrCat("kernel: port ", port, " s, program ", program, " s"));
    EXPECT_GT(program, 0.8 * port) << what;
    EXPECT_LT(program, 1.2 * port) << what;
  }
}

}  // namespace
}  // namespace pimopt
