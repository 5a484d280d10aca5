// The DPU kernel, run on the emulator, produces bit-identical results to the host-side fixed-point reference in
// every mode, for both losses, with class weights, with and without a bias.
#include <gtest/gtest.h>

#include <cstring>

#include "pimopt/backends/pim/linear_kernel.h"
#include "pimopt/core/rng.h"
#include "pimopt/pim/system.h"

namespace pimopt::pimbackend {
namespace {

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
  set.Load(MakeLinearKernel());
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

TEST(PimLinearKernel, GradientModeIsBitIdenticalToTheReference) {
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

TEST(PimLinearKernel, LocalStepModesAreBitIdenticalToTheReference) {
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

TEST(PimLinearKernel, SoftwareFloatSigmoidIsBitIdenticalAndCostsMore) {
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

TEST(PimLinearKernel, PimOptFeatureSplitIsBitIdenticalAndPaysBarriersPerSample) {
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

TEST(PimLinearKernel, StepsLargerThanOneWramChunkAreBitIdentical) {
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
      std::vector<int64_t> g(f.shard.n_pad + 8);
      set.CopyFrom(0, pim::kMramHeapSymbol, f.layout.g_offset, g.data(), 8 * g.size());
      const auto expected = ReferenceGradient(f.shard, f.model, list, a);
      for (uint32_t j = 0; j <= f.shard.n_pad; ++j) ASSERT_EQ(g[j], expected[j]) << j;
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

}  // namespace
}  // namespace pimopt::pimbackend
