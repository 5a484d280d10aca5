// The DPU kernel, run on the emulator, produces bit-identical results to the host-side fixed-point reference in
// every mode, for both losses, with class weights, with and without a bias: the port over the operand types and the
// DPU program in C (src/backends/pim/dpu/pimopt_linear.c), each test run for both (.../port, .../program).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "pimopt/backends/pim/linear_kernel.h"
#include "pimopt/core/rng.h"
#include "pimopt/pim/native_program.h"
#include "pimopt/pim/system.h"

namespace pimopt::pimbackend {
namespace {

// What the kernel tests run: set by the parameterized fixture below for each test.
pim::KernelSource g_kernels = pim::KernelSource::kPort;

class PimLinearKernel : public ::testing::TestWithParam<pim::KernelSource> {
 protected:
  void SetUp() override { g_kernels = GetParam(); }
};

std::vector<pim::KernelSource> KernelSources() {
  if (!pim::HaveDpuToolchain()) return {pim::KernelSource::kPort};
  return {pim::KernelSource::kPort, pim::KernelSource::kProgram};
}

INSTANTIATE_TEST_SUITE_P(Kernels, PimLinearKernel, ::testing::ValuesIn(KernelSources()), [](const auto& info) {
  return std::string(info.param == pim::KernelSource::kPort ? "port" : "program");
});

struct Fixture {
  QuantizedShard shard;
  std::vector<int32_t> model, v;
  LinearLayout layout;
};

Fixture Make(uint32_t rows, uint32_t features, uint64_t seed, uint64_t list_entries) {
  Fixture f;
  f.layout = MakeLinearLayout(features, rows, list_entries);
  f.shard.n_pad = f.layout.n_pad;
  f.shard.x.assign(uint64_t{rows} * f.shard.n_pad, 0);
  Rng rng(seed);
  for (uint32_t r = 0; r < rows; ++r) {
    for (uint32_t j = 0; j < features; ++j)
      f.shard.x[uint64_t{r} * f.shard.n_pad + j] = static_cast<int8_t>(rng.Below(256) - 128);
    f.shard.y.push_back(rng.Below(2) ? 1 : -1);
  }
  f.model.resize(f.shard.n_pad + 1);
  f.v.resize(f.shard.n_pad + 1);
  for (auto& w : f.model) w = static_cast<int32_t>(rng.Below(1 << 22)) - (1 << 21);
  for (auto& w : f.v) w = static_cast<int32_t>(rng.Below(1 << 22)) - (1 << 21);
  for (uint32_t j = features; j < f.shard.n_pad; ++j) f.model[j] = f.v[j] = 0;
  return f;
}

// Loads the fixture into DPU 0 of a fresh set and returns the set.
pim::DpuSet Upload(pim::PimSystem& system, const Fixture& f, const LinearKernelArgs& args,
                   const std::vector<uint32_t>& list) {
  pim::DpuSet set = system.Allocate(1);
  if (g_kernels == pim::KernelSource::kProgram) {
    set.Load(LinearProgramPath(16));
  } else {
    set.Load(MakeLinearKernel());
  }
  set.CopyTo(0, pim::kMramHeapSymbol, f.layout.x_offset, f.shard.x.data(), f.shard.x.size());
  std::vector<int8_t> y(f.layout.w_offset - f.layout.y_offset, 0);
  std::copy(f.shard.y.begin(), f.shard.y.end(), y.begin());
  set.CopyTo(0, pim::kMramHeapSymbol, f.layout.y_offset, y.data(), y.size());
  std::vector<int32_t> padded(f.shard.n_pad + 8, 0);
  std::copy(f.model.begin(), f.model.end(), padded.begin());
  set.CopyTo(0, pim::kMramHeapSymbol, f.layout.w_offset, padded.data(), 4 * padded.size());
  std::copy(f.v.begin(), f.v.end(), padded.begin());
  set.CopyTo(0, pim::kMramHeapSymbol, f.layout.v_offset, padded.data(), 4 * padded.size());
  std::vector<uint32_t> list8 = list;
  list8.resize((list.size() + 1) / 2 * 2, kNoRow);
  set.CopyTo(0, pim::kMramHeapSymbol, f.layout.list_offset, list8.data(), 4 * list8.size());
  set.CopyTo(0, pim::kMramHeapSymbol, f.layout.sigmoid_offset, fixed::SigmoidTable().data(),
             4 * fixed::kSigmoidEntries);
  set.CopyTo(0, "args", 0, &args, sizeof(args));
  return set;
}

LinearKernelArgs ArgsFor(const Fixture& f, uint32_t mode, uint32_t loss) {
  LinearKernelArgs a;
  a.mode = static_cast<KernelMode>(mode);
  a.loss = static_cast<KernelLoss>(loss);
  a.n_pad = f.shard.n_pad;
  a.x_offset = f.layout.x_offset;
  a.y_offset = f.layout.y_offset;
  a.w_offset = f.layout.w_offset;
  a.v_offset = f.layout.v_offset;
  a.g_offset = f.layout.g_offset;
  a.list_offset = f.layout.list_offset;
  a.sigmoid_offset = f.layout.sigmoid_offset;
  return a;
}

// Reads G from DPU 0 and checks it against the reference over `list`; returns the reference.
std::vector<int64_t> ExpectSumsMatchReference(pim::DpuSet& set, const Fixture& f, const std::vector<uint32_t>& list,
                                              const LinearKernelArgs& a) {
  std::vector<int64_t> g(f.shard.n_pad + 8);
  set.CopyFrom(0, pim::kMramHeapSymbol, f.layout.g_offset, g.data(), 8 * g.size());
  const auto expected = ReferenceGradient(f.shard, f.model, list, a);
  for (uint32_t j = 0; j <= f.shard.n_pad; ++j) {
    EXPECT_EQ(g[j], expected[j]) << "j " << j;
    if (g[j] != expected[j]) break;
  }
  return expected;
}

TEST_P(PimLinearKernel, GradientModeIsBitIdenticalToTheReference) {
  for (uint32_t loss : {0u, 1u}) {
    const Fixture f = Make(40, 300, 3 + loss, 64);
    LinearKernelArgs a = ArgsFor(f, 0, loss);
    a.positive_weight_q24 = 15 << 24;
    a.negative_weight_q24 = 1 << 23;
    const std::vector<uint32_t> list = {3, 17, 0, 39, 22, 5, 5, 11, 30};
    a.steps = 1;
    a.slots_per_step = 10;
    std::vector<uint32_t> padded = list;
    padded.push_back(kNoRow);
    pim::PimSystem system(pim::MakeProfile("pim-opt"), 1);
    pim::DpuSet set = Upload(system, f, a, padded);
    set.Launch();
    std::vector<int64_t> g(f.shard.n_pad + 8);
    set.CopyFrom(0, pim::kMramHeapSymbol, f.layout.g_offset, g.data(), 8 * g.size());
    const std::vector<int64_t> expected = ReferenceGradient(f.shard, f.model, list, a);
    for (uint32_t j = 0; j < f.shard.n_pad; ++j) ASSERT_EQ(g[j], expected[j]) << "loss " << loss << " feature " << j;
    EXPECT_EQ(g[f.shard.n_pad], expected[f.shard.n_pad]);
    bool nonzero = false;
    for (int64_t v : expected) nonzero |= v != 0;
    EXPECT_TRUE(nonzero);
  }
}

TEST_P(PimLinearKernel, LocalStepModesAreBitIdenticalToTheReference) {
  for (uint32_t mode : {1u, 2u}) {
    for (uint32_t loss : {0u, 1u}) {
      for (uint32_t fit_bias : {0u, 1u}) {
        const Fixture f = Make(64, 200, 10 * mode + loss, 6 * 12);
        LinearKernelArgs a = ArgsFor(f, mode, loss);
        a.fit_bias = fit_bias;
        a.steps = 6;
        a.slots_per_step = 12;
        a.lr_weight_q32 = fixed::ToScale(0.37, "lr");
        a.decay_q32 = fixed::ToScale(mode == 2 ? 0.01 : 0.001, "decay");
        std::vector<std::vector<uint32_t>> steps;
        std::vector<uint32_t> list;
        Rng rng(mode * 7 + loss);
        for (uint32_t s = 0; s < 6; ++s) {
          std::vector<uint32_t> rows;
          const uint32_t count = s == 5 ? 7 : 12;  // a shorter last batch
          for (uint32_t i = 0; i < count; ++i) rows.push_back(static_cast<uint32_t>(rng.Below(64)));
          steps.push_back(rows);
          rows.resize(12, kNoRow);
          list.insert(list.end(), rows.begin(), rows.end());
        }
        pim::PimSystem system(pim::MakeProfile("pim-opt"), 1);
        pim::DpuSet set = Upload(system, f, a, list);
        set.Launch();
        std::vector<int32_t> model(f.shard.n_pad + 8);
        set.CopyFrom(0, pim::kMramHeapSymbol, f.layout.w_offset, model.data(), 4 * model.size());
        std::vector<int32_t> expected = f.model;
        if (!fit_bias) expected[f.shard.n_pad] = 0;
        fixed::Saturation sat;
        ReferenceLocalSteps(f.shard, expected, f.v, steps, a, sat);
        for (uint32_t j = 0; j <= f.shard.n_pad; ++j) {
          ASSERT_EQ(model[j], expected[j]) << "mode " << mode << " loss " << loss << " bias " << fit_bias << " j " << j;
        }
        EXPECT_NE(std::memcmp(expected.data(), f.model.data(), 4 * f.shard.n_pad), 0);  // the steps moved the model
      }
    }
  }
}

// The port is written with the emulator's operand types, the program's blocks are charged by the cost pass: what
// either costs is what it does, and they count the same multiplies. One gradient launch of k
// rows counts 8 native 8 x 8 multiplies per feature and row (4 per product of the score, by the weight's bytes, and 4
// per term of the gradient sum, by the derivative's) and no 64-bit multiply; a local step with a step factor that is
// not a power of two multiplies every coordinate (and the bias) by it with two 32 x 32 -> 64-bit products (no decay:
// none for it), and with a factor of 2^-k shifts instead.
TEST_P(PimLinearKernel, ItsCostIsWhatItDoesByTheOperandTypes) {
  const Fixture f = Make(20, 256, 5, 16);
  auto ops = [&](uint32_t mode, uint64_t lr_weight_q32, uint32_t steps) {
    LinearKernelArgs a = ArgsFor(f, mode, 0);
    a.steps = steps;
    a.slots_per_step = 8;
    a.lr_weight_q32 = lr_weight_q32;
    std::vector<uint32_t> list;
    for (uint32_t s = 0; s < steps; ++s) {
      for (uint32_t i = 0; i < 8; ++i) list.push_back((s * 3 + i) % 20);
    }
    pim::PimSystem system(pim::MakeProfile("pim-opt"), 1);
    pim::DpuSet set = Upload(system, f, a, list);
    return set.Launch().op_counts;
  };
  auto count = [](const std::array<uint64_t, pim::kNumOps>& c, pim::Op op) { return c[static_cast<size_t>(op)]; };
  const uint64_t n_pad = f.shard.n_pad;
  const auto gradient = ops(0, 0, 1);
  EXPECT_EQ(count(gradient, pim::Op::kMul8), 8 * 8 * n_pad);
  EXPECT_EQ(count(gradient, pim::Op::kInt64Mul), 0u);
  // 8 rows per step: lr_weight / 8 is the step's factor.
  const auto multiplied = ops(1, 8 * 3000000001ull, 3), shifted = ops(1, 8 * (uint64_t{1} << 29), 3);
  EXPECT_EQ(count(multiplied, pim::Op::kInt64Mul), 3 * (n_pad + 1) * 2);
  EXPECT_EQ(count(shifted, pim::Op::kInt64Mul), 0u);
  EXPECT_EQ(count(multiplied, pim::Op::kMul8), 3 * 8 * 8 * n_pad);
  EXPECT_EQ(count(multiplied, pim::Op::kInt64Div), 3 * 16u);  // each tasklet: the step's factor, per step
}

TEST_P(PimLinearKernel, SoftwareFloatSigmoidIsBitIdenticalAndCostsMore) {
  const Fixture f = Make(64, 200, 77, 6 * 12);
  double cycles[2];
  for (uint32_t sigmoid_float : {0u, 1u}) {
    LinearKernelArgs a = ArgsFor(f, 1, 0);
    a.sigmoid_float = sigmoid_float;
    a.steps = 6;
    a.slots_per_step = 12;
    a.lr_weight_q32 = fixed::ToScale(0.37, "lr");
    std::vector<std::vector<uint32_t>> steps;
    std::vector<uint32_t> list;
    for (uint32_t s = 0; s < 6; ++s) {
      std::vector<uint32_t> rows;
      for (uint32_t i = 0; i < 12; ++i) rows.push_back((s * 12 + i * 5) % 64);
      steps.push_back(rows);
      list.insert(list.end(), rows.begin(), rows.end());
    }
    pim::PimSystem system(pim::MakeProfile("pim-opt"), 1);
    pim::DpuSet set = Upload(system, f, a, list);
    cycles[sigmoid_float] = set.Launch().slowest.total;
    std::vector<int32_t> model(f.shard.n_pad + 8);
    set.CopyFrom(0, pim::kMramHeapSymbol, f.layout.w_offset, model.data(), 4 * model.size());
    std::vector<int32_t> expected = f.model;
    fixed::Saturation sat;
    ReferenceLocalSteps(f.shard, expected, f.v, steps, a, sat);
    for (uint32_t j = 0; j <= f.shard.n_pad; ++j) ASSERT_EQ(model[j], expected[j]) << sigmoid_float << " " << j;
  }
  EXPECT_GT(cycles[1], cycles[0]);  // a double division per row costs 2,183 issue slots
}

TEST_P(PimLinearKernel, PimOptFeatureSplitIsBitIdenticalAndPaysBarriersPerSample) {
  const Fixture f = Make(64, 2000, 91, 1100);  // 16 feature blocks: every tasklet has work in the feature split
  double sync[2], total[2];
  for (uint32_t mode : {0u, 1u}) {
    for (uint32_t split : {0u, 1u}) {
      LinearKernelArgs a = ArgsFor(f, mode, 1);
      a.feature_split = split;
      a.steps = 1;
      a.slots_per_step = 1100;  // two chunks
      a.lr_weight_q32 = fixed::ToScale(0.25, "lr");
      a.decay_q32 = fixed::ToScale(0.001, "decay");
      std::vector<uint32_t> list;
      for (uint32_t i = 0; i < 1100; ++i) list.push_back((i * 7) % 64);
      pim::PimSystem system(pim::MakeProfile("pim-opt"), 1);
      pim::DpuSet set = Upload(system, f, a, list);
      const pim::LaunchStats stats = set.Launch();
      sync[split] = stats.slowest.sync;
      total[split] = stats.slowest.total;
      if (mode == 0) {
        std::vector<int64_t> g(f.shard.n_pad + 8);
        set.CopyFrom(0, pim::kMramHeapSymbol, f.layout.g_offset, g.data(), 8 * g.size());
        const auto expected = ReferenceGradient(f.shard, f.model, list, a);
        for (uint32_t j = 0; j <= f.shard.n_pad; ++j) ASSERT_EQ(g[j], expected[j]) << split << " " << j;
      } else {
        std::vector<int32_t> model(f.shard.n_pad + 8);
        set.CopyFrom(0, pim::kMramHeapSymbol, f.layout.w_offset, model.data(), 4 * model.size());
        std::vector<int32_t> expected = f.model;
        fixed::Saturation sat;
        ReferenceLocalSteps(f.shard, expected, f.v, {list}, a, sat);
        for (uint32_t j = 0; j <= f.shard.n_pad; ++j) ASSERT_EQ(model[j], expected[j]) << split << " " << j;
      }
    }
    EXPECT_GT(sync[1], 100 * sync[0]);  // two barriers per sample instead of per chunk
    EXPECT_GT(total[1], total[0]);
  }
}

TEST_P(PimLinearKernel, StepsLargerThanOneWramChunkAreBitIdentical) {
  // 2,500 rows in one step: three chunks of at most kMaxRowsPerStep rows, sums collected in MRAM.
  for (uint32_t mode : {0u, 1u}) {
    const Fixture f = Make(64, 200, 40 + mode, 2600);
    LinearKernelArgs a = ArgsFor(f, mode, 0);
    a.steps = 1;
    a.slots_per_step = 2500;
    a.lr_weight_q32 = fixed::ToScale(0.5, "lr");
    a.decay_q32 = fixed::ToScale(0.01, "decay");
    std::vector<uint32_t> list;
    Rng rng(mode + 1);
    for (uint32_t i = 0; i < 2500; ++i) list.push_back(static_cast<uint32_t>(rng.Below(64)));
    pim::PimSystem system(pim::MakeProfile("pim-opt"), 1);
    pim::DpuSet set = Upload(system, f, a, list);
    set.Launch();
    if (mode == 0) {
      ExpectSumsMatchReference(set, f, list, a);
    } else {
      std::vector<int32_t> model(f.shard.n_pad + 8);
      set.CopyFrom(0, pim::kMramHeapSymbol, f.layout.w_offset, model.data(), 4 * model.size());
      std::vector<int32_t> expected = f.model;
      fixed::Saturation sat;
      ReferenceLocalSteps(f.shard, expected, f.v, {list}, a, sat);
      for (uint32_t j = 0; j <= f.shard.n_pad; ++j) ASSERT_EQ(model[j], expected[j]) << j;
    }
  }
}

// PIM-Opt's kernel: the fixture's features as int32 Q0.31 (non-negative, as the artifact's min-max scaled data) in a
// 4-byte layout, the exp table in place of the sigmoid table.
Fixture MakeArtifact(uint32_t rows, uint32_t features, uint64_t seed, uint64_t list_entries) {
  Fixture f = Make(rows, features, seed, list_entries);
  f.layout = MakeLinearLayout(features, rows, list_entries, 0, true);
  f.shard.x31.assign(uint64_t{rows} * f.shard.n_pad, 0);
  Rng rng(seed * 31 + 7);
  for (uint32_t r = 0; r < rows; ++r) {
    for (uint32_t j = 0; j < features; ++j) {
      // Mostly small activations, some zeros, up to 1.0 (2^31 - 1): many products truncate, many terms are -1.
      const uint64_t u = rng.Below(1000);
      f.shard.x31[uint64_t{r} * f.shard.n_pad + j] =
          u < 300 ? 0 : static_cast<int32_t>(rng.Below(u < 900 ? (1u << 20) : 0x7FFFFFFFu));
    }
  }
  return f;
}

pim::DpuSet UploadArtifact(pim::PimSystem& system, const Fixture& f, const LinearKernelArgs& args,
                           const std::vector<uint32_t>& list) {
  pim::DpuSet set = Upload(system, f, args, list);  // (the int8 rows it writes are overwritten below)
  set.CopyTo(0, pim::kMramHeapSymbol, f.layout.x_offset, f.shard.x31.data(), 4 * f.shard.x31.size());
  set.CopyTo(0, pim::kMramHeapSymbol, f.layout.sigmoid_offset, ArtifactExpTable().data(),
             4 * uint64_t{kArtifactExpTableEntries});
  return set;
}

TEST_P(PimLinearKernel, ArtifactKernelIsBitIdenticalToItsReferenceInEveryMode) {
  // Weighted rows (PIM-Opt's Criteo class weights) give every derivative its multiply; unweighted hinge rows take
  // the artifact's SVM path (+-x added, no multiply).
  for (uint32_t mode : {0u, 1u, 2u}) {
    for (uint32_t loss : {0u, 1u, 2u}) {
      const bool weighted = loss != 2u;
      const Fixture f = MakeArtifact(48, 600, 5 + 3 * mode + loss, 8 * 8);
      LinearKernelArgs a = ArgsFor(f, mode, loss == 2u ? 1u : loss);
      a.artifact = 1;
      a.feature_split = 1;
      a.sigmoid_float = 1;
      if (weighted) {
        a.positive_weight_q24 = 15 << 24;
        a.negative_weight_q24 = 1 << 23;
      }
      a.steps = mode == 0 ? 1 : 8;
      a.slots_per_step = 8;
      a.lr_weight_q32 = fixed::ToScale(0.125, "lr");
      a.decay_q32 = fixed::ToScale(1.0 / 1024, "decay");
      std::vector<std::vector<uint32_t>> steps;
      std::vector<uint32_t> list;
      Rng rng(mode * 11 + loss);
      for (uint32_t s = 0; s < a.steps; ++s) {
        std::vector<uint32_t> rows;
        for (uint32_t i = 0; i < 8; ++i) rows.push_back(static_cast<uint32_t>(rng.Below(48)));
        steps.push_back(rows);
        list.insert(list.end(), rows.begin(), rows.end());
      }
      pim::PimSystem system(pim::MakeProfile("pim-opt"), 1);
      pim::DpuSet set = UploadArtifact(system, f, a, list);
      set.Launch();
      if (mode == 0) {
        SCOPED_TRACE("loss " + std::to_string(loss));
        const auto expected = ExpectSumsMatchReference(set, f, list, a);
        // The int32 output the host pulls (in V): G in Q.24, toward zero.
        std::vector<int32_t> narrowed(f.shard.n_pad + 8);
        set.CopyFrom(0, pim::kMramHeapSymbol, f.layout.v_offset, narrowed.data(), 4 * narrowed.size());
        for (uint32_t j = 0; j <= f.shard.n_pad; ++j) {
          ASSERT_EQ(narrowed[j], fixed::ShiftTowardZero(expected[j], fixed::kFeatureFracBits)) << j;
        }
        bool nonzero = false;
        for (int64_t v : expected) nonzero |= v != 0;
        EXPECT_TRUE(nonzero);
      } else {
        std::vector<int32_t> model(f.shard.n_pad + 8);
        set.CopyFrom(0, pim::kMramHeapSymbol, f.layout.w_offset, model.data(), 4 * model.size());
        std::vector<int32_t> expected = f.model;
        fixed::Saturation sat;
        ReferenceLocalSteps(f.shard, expected, f.v, steps, a, sat);
        for (uint32_t j = 0; j <= f.shard.n_pad; ++j) {
          ASSERT_EQ(model[j], expected[j]) << "mode " << mode << " loss " << loss << " j " << j;
        }
      }
    }
  }
}

TEST(PimLinearKernelArithmetic, ArtifactArithmeticTruncatesEachProductAndDropsMinusOne) {
  // A product below 2^-31 vanishes on its own (pimopt's kernel would sum it first); -1 gradient terms are dropped.
  EXPECT_EQ(ArtifactGradientTerm(1, -1), 0);                  // (1 x -1) >> 24 = -1: dropped
  EXPECT_EQ(ArtifactGradientTerm(1 << 24, -3), -3);           // exact
  EXPECT_EQ(ArtifactGradientTerm((1 << 24) + 1, -3), -4);     // floor of -3.0000002
  EXPECT_EQ(ArtifactGradientTerm(1 << 30, 1 << 24), int64_t{1} << 30);  // 0.5 x 1.0 = 0.5 in Q.31
  fixed::Saturation sat;
  EXPECT_EQ(QuantizeFeatureArtifact(0.5f, sat), 1 << 30);
  EXPECT_EQ(QuantizeFeatureArtifact(1.0f, sat), 2147483647);  // 2^31 does not fit: rounded down by 2^-31
  EXPECT_EQ(sat.events, 0u);
  EXPECT_EQ(QuantizeFeatureArtifact(1.5f, sat), 2147483647);  // beyond 1: saturated, counted
  EXPECT_EQ(QuantizeFeatureArtifact(-3.0f, sat), -2147483647);
  EXPECT_EQ(sat.events, 2u);
  // The hinge's margin is 2^-15, not 1.
  EXPECT_EQ(ArtifactDerivative(LossKind::kHinge, 0, 1 << 8, 1), -(1 << 24));  // y z = 2^-16 < 2^-15: active
  EXPECT_EQ(ArtifactDerivative(LossKind::kHinge, 0, 1 << 20, 1), 0);          // y z = 2^-4: inactive (pimopt: active)
  EXPECT_EQ(fixed::Derivative(LossKind::kHinge, 1 << 20, 1), -(1 << 24));
  // The exp table and the entry the range reduction reads.
  EXPECT_FLOAT_EQ(ArtifactExpTable()[0], 1.0f);
  EXPECT_NEAR(ArtifactExpTable()[kArtifactExpTableEntries - 1], std::exp(1.0), 1e-5);
  EXPECT_EQ(ArtifactExpIndex(0), 0u);
  EXPECT_LT(ArtifactExpIndex(-(1 << 23)), 726818u);  // exp(0.5): 0.5 log2 e = 0.72 -> r = 0.72 ln 2 = 0.5
  EXPECT_NEAR(ArtifactExpIndex(-(1 << 23)) / 1048576.0, 0.5, 1e-5);
}

TEST_P(PimLinearKernel, ArtifactKernelCostsSeveralTimesPimoptsKernel) {
  // The same rows and model, one local step of 8 samples: 4-byte features, 64-bit products, two barriers per sample,
  // the float sigmoid against pimopt's int8 features and sample-parallel scoring.
  const Fixture f = MakeArtifact(32, 4096, 21, 8);
  double cycles[2];
  for (uint32_t artifact : {0u, 1u}) {
    LinearKernelArgs a = ArgsFor(f, 1, 0);
    a.artifact = artifact;
    a.feature_split = artifact;
    a.sigmoid_float = artifact;
    a.steps = 1;
    a.slots_per_step = 8;
    a.lr_weight_q32 = fixed::ToScale(0.125, "lr");
    const std::vector<uint32_t> list = {0, 3, 5, 7, 9, 11, 13, 15};
    pim::PimSystem system(pim::MakeProfile("pim-opt"), 1);
    pim::DpuSet set = artifact ? UploadArtifact(system, f, a, list) : Upload(system, f, a, list);
    cycles[artifact] = set.Launch().slowest.total;
  }
  EXPECT_GT(cycles[1], 3 * cycles[0]);
  EXPECT_LT(cycles[1], 30 * cycles[0]);
}

TEST_P(PimLinearKernel, ArtifactSvmAddsItsFeaturesWithoutMultiplying) {
  // The same step of 8 hinge rows (all active at w = 0): unweighted, each gradient term is +-x (the artifact's SVM
  // kernels add or subtract the feature); with a class weight, x d needs its software 64-bit multiply per feature,
  // as the score does. The gradient loop is about half of such a step.
  const Fixture f = MakeArtifact(32, 4096, 23, 8);
  double cycles[2];
  std::vector<int32_t> sums[2];
  for (uint32_t weighted : {0u, 1u}) {
    LinearKernelArgs a = ArgsFor(f, 0, 1);
    a.artifact = 1;
    a.feature_split = 1;
    a.steps = 1;
    a.slots_per_step = 8;
    if (weighted) a.positive_weight_q24 = a.negative_weight_q24 = (1 << 24) + 1;
    const std::vector<uint32_t> list = {0, 3, 5, 7, 9, 11, 13, 15};
    pim::PimSystem system(pim::MakeProfile("pim-opt"), 1);
    pim::DpuSet set = UploadArtifact(system, f, a, list);
    cycles[weighted] = set.Launch().slowest.total;
    sums[weighted].resize(f.shard.n_pad);
    set.CopyFrom(0, pim::kMramHeapSymbol, f.layout.v_offset, sums[weighted].data(), 4 * sums[weighted].size());
  }
  EXPECT_LT(cycles[0], 0.75 * cycles[1]);
  EXPECT_GT(cycles[0], 0.25 * cycles[1]);
  int differing = 0;
  int64_t largest = 0;
  for (size_t j = 0; j < sums[0].size(); ++j) {
    differing += std::abs(sums[0][j] - sums[1][j]) > 9;  // 8 rows x (x >> 24 <= 2^7 in Q.31) = 2^10 Q.31, and rounding
    largest = std::max<int64_t>(largest, std::abs(sums[0][j]));
  }
  EXPECT_EQ(differing, 0);  // the weight 1 + 2^-24 moves the sums only by its own share
  EXPECT_GT(largest, 1 << 24);
}

}  // namespace
}  // namespace pimopt::pimbackend

namespace pimopt::pimbackend {
namespace {

// Dual ascent (mode 3, CoCoA's local solver): the kernel, its dense rows shared by 16 tasklets, gives the host
// reference's model and duals bit for bit, for both losses, with and without a bias, with the rows' costs (class
// weights) in their step parameters, duals starting anywhere in [0, 1] (both ends included) and rows visited twice.
TEST_P(PimLinearKernel, DualAscentModeIsBitIdenticalToTheReference) {
  for (uint32_t loss : {0u, 1u}) {
    for (uint32_t fit_bias : {0u, 1u}) {
      const uint32_t rows = 48;
      const Fixture f = Make(rows, 300, 40 + loss * 2 + fit_bias, 2 * 70);
      const uint64_t dual_offset = (f.layout.end + 7) / 8 * 8;
      const uint64_t param_offset = dual_offset + (uint64_t{rows} * 4 + 7) / 8 * 8;
      Rng rng(90 + loss);
      std::vector<int32_t> duals(rows);
      std::vector<DualRowParams> params(rows);
      for (uint32_t r = 0; r < rows; ++r) {
        duals[r] = r % 7 == 0 ? 0 : r % 7 == 1 ? (1 << 24) : static_cast<int32_t>(rng.Below(1 << 24));
        const double cost = r % 3 == 0 ? 15 : r % 3 == 1 ? 0.5 : 1;
        params[r] = MakeDualRowParams(QuantizedSquaredNorm(f.shard, r, fit_bias != 0), cost, 4, 3.0);
      }
      std::vector<uint32_t> order, list;
      for (uint32_t s = 0; s < 70; ++s) order.push_back(static_cast<uint32_t>(rng.Below(rows)));
      for (uint32_t r : order) list.insert(list.end(), {r, kNoRow});
      LinearKernelArgs a = ArgsFor(f, 3, loss);
      a.fit_bias = fit_bias;
      a.steps = static_cast<uint32_t>(order.size());
      a.slots_per_step = 2;
      a.dual_offset = dual_offset;
      a.row_params_offset = param_offset;
      pim::PimSystem system(pim::MakeProfile("pim-opt"), 1);
      pim::DpuSet set = Upload(system, f, a, list);
      set.CopyTo(0, pim::kMramHeapSymbol, dual_offset, duals.data(), 4 * duals.size());
      set.CopyTo(0, pim::kMramHeapSymbol, param_offset, params.data(), sizeof(DualRowParams) * params.size());
      set.Launch();
      std::vector<int32_t> model(f.shard.n_pad + 8), got_duals(rows);
      set.CopyFrom(0, pim::kMramHeapSymbol, f.layout.w_offset, model.data(), 4 * model.size());
      set.CopyFrom(0, pim::kMramHeapSymbol, dual_offset, got_duals.data(), 4 * got_duals.size());
      std::vector<int32_t> expected = f.model, expected_duals = duals;
      fixed::Saturation sat;
      ReferenceDualPass(f.shard, expected, expected_duals, params, order, a, sat);
      const std::string where = StrCat("loss ", loss, " bias ", fit_bias);
      for (uint32_t j = 0; j <= f.shard.n_pad; ++j) ASSERT_EQ(model[j], expected[j]) << where << " j " << j;
      EXPECT_EQ(got_duals, expected_duals) << where;
      EXPECT_NE(expected_duals, duals) << where;  // the steps moved the duals
      EXPECT_NE(std::memcmp(expected.data(), f.model.data(), 4 * f.shard.n_pad), 0) << where;
      for (int32_t d : expected_duals) ASSERT_TRUE(d >= 0 && d <= (1 << 24)) << where;
    }
  }
}

// The logistic step's bisection lands on the fixed point b = sigma(-(m + q (b - beta))) of the table's sigma, and
// the hinge step is the clipped closed form.
TEST(PimLinearKernelArithmetic, DualStepSolvesItsSubproblemInFixedPoint) {
  const auto mul = [](int64_t v, uint64_t s) { return fixed::MulScale(v, s); };
  const auto sigmoid = [](int64_t z) { return int64_t{fixed::Sigmoid(z)}; };
  const int64_t one = int64_t{1} << 24;
  const DualRowParams p = MakeDualRowParams(2.0, 1.0, 1.0, 4.0);  // q = 0.5
  const int64_t m = one * 9 / 10;
  EXPECT_EQ(DualStep(LossKind::kHinge, one / 4, m, p, mul, sigmoid), one / 4 + 2 * (one - m));  // + (1 - m) / 0.5
  EXPECT_EQ(DualStep(LossKind::kHinge, one / 4, int64_t{3} * one, p, mul, sigmoid), 0);
  EXPECT_EQ(DualStep(LossKind::kHinge, one / 4, -one, p, mul, sigmoid), one);
  for (int64_t m : {-3 * one, -one / 3, int64_t{0}, one, 5 * one}) {
    for (int64_t beta : {int64_t{0}, one / 3, one}) {
      const int64_t b = DualStep(LossKind::kLogistic, beta, m, p, mul, sigmoid);
      ASSERT_GE(b, 0);
      ASSERT_LE(b, one);
      // h(b) = b - sigma(-(m + q (b - beta))) changes sign within one table step of b.
      const int64_t h = b - sigmoid(-m - mul(b - beta, p.q_q32));
      EXPECT_LE(std::llabs(h), one / 40) << "m " << m << " beta " << beta;
    }
  }
}

}  // namespace
}  // namespace pimopt::pimbackend
