#include "pimopt/backends/pim/linear_kernel.h"

#include <algorithm>

namespace pimopt::pimbackend {

using fixed::kModelFracBits;
using pim::Op;
using pim::Tasklet;

namespace {

uint64_t Align8(uint64_t v) { return (v + 7) / 8 * 8; }

// Update of one model coordinate: x - (G * scale) / 2^32 / 2^7 - decay term, saturated.
inline int64_t UpdatedCoordinate(int64_t x, int64_t g_q31, uint64_t scale_q32, int64_t decay_base, uint64_t decay_q32) {
  const int64_t delta = fixed::ShiftTowardZero(fixed::MulScale(g_q31, scale_q32), fixed::kFeatureFracBits);
  return x - delta - fixed::MulScale(decay_base, decay_q32);
}

class LinearKernel final : public pim::Kernel {
 public:
  pim::KernelSpec Spec() const override {
    pim::KernelSpec spec;
    spec.name = "pimopt_linear";
    spec.tasklets = 16;
    spec.wram_symbols = {{"args", sizeof(LinearKernelArgs)},
                         {"rows", 4 * kMaxRowsPerStep},
                         {"d", 4 * kMaxRowsPerStep},
                         {"count", 8},
                         {"saturations", 8 * 24}};
    return spec;
  }

  void Main(Tasklet& t) override {
    if (t.me() == 0) t.MemReset();
    t.BarrierWait();
    const LinearKernelArgs a = *t.Wram<LinearKernelArgs>("args");
    const auto loss = a.loss == 0 ? LossKind::kLogistic : LossKind::kHinge;
    auto* rows = t.Wram<uint32_t>("rows");
    auto* d = t.Wram<int32_t>("d");
    auto* count = t.Wram<uint32_t>("count");
    auto* x_block = static_cast<int8_t*>(t.MemAlloc(kFeatureBlock));
    auto* w_block = static_cast<int32_t*>(t.MemAlloc(4 * kFeatureBlock));
    auto* v_block = static_cast<int32_t*>(t.MemAlloc(4 * kFeatureBlock));
    auto* acc = static_cast<int64_t*>(t.MemAlloc(8 * kFeatureBlock));
    auto* word = static_cast<int64_t*>(t.MemAlloc(16));
    const uint32_t blocks = a.n_pad / kFeatureBlock;
    fixed::Saturation saturation;

    for (uint32_t step = 0; step < a.steps; ++step) {
      // The step's row list (tasklet 0), valid rows first.
      if (t.me() == 0) {
        const uint64_t base = a.list_offset + uint64_t{step} * a.slots_per_step * 4;
        const uint64_t bytes = Align8(uint64_t{a.slots_per_step} * 4);
        for (uint64_t done = 0; done < bytes; done += 2048) {
          t.MramRead(base + done, reinterpret_cast<uint8_t*>(rows) + done,
                     static_cast<uint32_t>(std::min<uint64_t>(2048, bytes - done)));
        }
        uint32_t n = 0;
        while (n < a.slots_per_step && rows[n] != kNoRow) ++n;
        *count = n;
        t.Charge(Op::kWramLoad, n + 1);
        t.Charge(Op::kBranch, n + 1);
      }
      t.BarrierWait();
      const uint32_t n = *count;
      if (n == 0) continue;

      // Phase A: scores and derivatives, one row per tasklet at a time.
      int32_t bias = 0;
      t.MramRead(a.w_offset + uint64_t{a.n_pad} * 4, word, 8);
      bias = static_cast<int32_t>(word[0] & 0xFFFFFFFF);
      for (uint32_t i = t.me(); i < n; i += t.nr_tasklets()) {
        const uint32_t r = rows[i];
        int64_t z = a.fit_bias ? static_cast<int64_t>(bias) << fixed::kFeatureFracBits : 0;
        for (uint32_t b = 0; b < blocks; ++b) {
          t.MramRead(a.x_offset + uint64_t{r} * a.n_pad + uint64_t{b} * kFeatureBlock, x_block, kFeatureBlock);
          t.MramRead(a.w_offset + uint64_t{b} * kFeatureBlock * 4, w_block, 4 * kFeatureBlock);
          for (uint32_t j = 0; j < kFeatureBlock; ++j) z += static_cast<int64_t>(x_block[j]) * w_block[j];
          // Per feature: 2 loads, an 8x32-bit product from 4 native 8x8 products and 3 shifts, a 64-bit add,
          // loop control.
          t.Charge(Op::kWramLoad, 2 * kFeatureBlock);
          t.Charge(Op::kMul8, 4 * kFeatureBlock);
          t.Charge(Op::kInt32Shift, 3 * kFeatureBlock);
          t.Charge(Op::kInt64Add, kFeatureBlock);
          t.Charge(Op::kBranch, kFeatureBlock);
        }
        const int64_t z24 = fixed::ShiftTowardZero(z, fixed::kFeatureFracBits);
        t.MramRead(a.y_offset + (r & ~7u), word, 8);
        const int y = reinterpret_cast<const int8_t*>(word)[r & 7];
        int32_t sigma = 0;
        if (loss == LossKind::kLogistic) {
          const int64_t index = fixed::SigmoidIndex(z24);
          if (index >= fixed::kSigmoidEntries) {
            sigma = 1 << kModelFracBits;
          } else if (index >= 0) {
            t.MramRead(a.sigmoid_offset + static_cast<uint64_t>(index & ~int64_t{1}) * 4, word, 8);
            sigma = reinterpret_cast<const int32_t*>(word)[index & 1];
          }
        }
        const int32_t weight = y > 0 ? a.positive_weight_q24 : a.negative_weight_q24;
        d[i] = fixed::ApplyClassWeight(fixed::DerivativeFromSigmoid(loss, sigma, z24, y), weight);
        t.Charge(Op::kInt64Shift, 2);
        t.Charge(Op::kInt32Add, 8);
        t.Charge(Op::kBranch, 4);
        t.Charge(Op::kWramStore, 1);
      }
      t.BarrierWait();

      // Phase B: per feature block, G = sum_i d_i x_i, then output (mode 0) or update (modes 1, 2).
      const uint64_t scale = a.mode == 0 ? 0 : a.lr_weight_q32 / n;
      if (a.mode != 0) t.Charge(Op::kInt64Div, 1);
      for (uint32_t b = t.me(); b <= blocks; b += t.nr_tasklets()) {
        if (b == blocks) {  // the bias coordinate
          int64_t g = 0;
          for (uint32_t i = 0; i < n; ++i) g += d[i];
          t.Charge(Op::kWramLoad, n);
          t.Charge(Op::kInt64Add, n);
          g <<= fixed::kFeatureFracBits;  // Q.24 -> Q.31, the unit of G
          if (a.mode == 0) {
            word[0] = g;
            t.MramWrite(word, a.g_offset + uint64_t{a.n_pad} * 8, 8);
            continue;
          }
          t.MramRead(a.w_offset + uint64_t{a.n_pad} * 4, word, 8);
          const int32_t old = static_cast<int32_t>(word[0] & 0xFFFFFFFF);
          int64_t base = 0;
          if (a.mode == 2) {
            t.MramRead(a.v_offset + uint64_t{a.n_pad} * 4, word + 1, 8);
            base = int64_t{old} - static_cast<int32_t>(word[1] & 0xFFFFFFFF);
          }
          int32_t updated = fixed::SaturateModel(UpdatedCoordinate(old, g, scale, base, a.decay_q32), saturation);
          if (!a.fit_bias) updated = 0;
          word[0] = static_cast<uint32_t>(updated);
          t.MramWrite(word, a.w_offset + uint64_t{a.n_pad} * 4, 8);
          t.Charge(fixed::ScaleShift(scale) >= 0 ? Op::kInt64Shift : Op::kInt64Mul, 1);
          t.Charge(fixed::ScaleShift(a.decay_q32) >= 0 ? Op::kInt64Shift : Op::kInt64Mul, 1);
          t.Charge(Op::kInt64Add, 3);
          continue;
        }
        std::fill(acc, acc + kFeatureBlock, 0);
        for (uint32_t i = 0; i < n; ++i) {
          t.MramRead(a.x_offset + uint64_t{rows[i]} * a.n_pad + uint64_t{b} * kFeatureBlock, x_block, kFeatureBlock);
          const int64_t di = d[i];
          for (uint32_t j = 0; j < kFeatureBlock; ++j) acc[j] += di * x_block[j];
        }
        // Per feature and row: a load, the 32x8-bit product (4 native 8x8 + 3 shifts), accumulator load, 64-bit add,
        // store, loop control.
        t.Charge(Op::kWramLoad, 2ull * n * kFeatureBlock);
        t.Charge(Op::kMul8, 4ull * n * kFeatureBlock);
        t.Charge(Op::kInt32Shift, 3ull * n * kFeatureBlock);
        t.Charge(Op::kInt64Add, 1ull * n * kFeatureBlock);
        t.Charge(Op::kWramStore, 1ull * n * kFeatureBlock);
        t.Charge(Op::kBranch, 1ull * n * kFeatureBlock);
        if (a.mode == 0) {
          t.MramWrite(acc, a.g_offset + uint64_t{b} * kFeatureBlock * 8, 8 * kFeatureBlock);
          continue;
        }
        t.MramRead(a.w_offset + uint64_t{b} * kFeatureBlock * 4, w_block, 4 * kFeatureBlock);
        if (a.mode == 2) t.MramRead(a.v_offset + uint64_t{b} * kFeatureBlock * 4, v_block, 4 * kFeatureBlock);
        for (uint32_t j = 0; j < kFeatureBlock; ++j) {
          const int64_t base = a.mode == 2 ? int64_t{w_block[j]} - v_block[j] : int64_t{w_block[j]};
          w_block[j] =
              fixed::SaturateModel(UpdatedCoordinate(w_block[j], acc[j], scale, base, a.decay_q32), saturation);
        }
        // Per feature: the step and the decay multiplies (a shift when the factor is a power of two, else a software
        // 64-bit multiply), shifts, adds, saturation checks, loads and a store.
        t.Charge(fixed::ScaleShift(scale) >= 0 ? Op::kInt64Shift : Op::kInt64Mul, kFeatureBlock);
        t.Charge(fixed::ScaleShift(a.decay_q32) >= 0 ? Op::kInt64Shift : Op::kInt64Mul, kFeatureBlock);
        t.Charge(Op::kInt64Shift, kFeatureBlock);
        t.Charge(Op::kInt64Add, 3 * kFeatureBlock);
        t.Charge(Op::kBranch, 2 * kFeatureBlock);
        t.Charge(Op::kWramLoad, 3 * kFeatureBlock);
        t.Charge(Op::kWramStore, kFeatureBlock);
        t.MramWrite(w_block, a.w_offset + uint64_t{b} * kFeatureBlock * 4, 4 * kFeatureBlock);
      }
      t.BarrierWait();  // the next step's phase A reads the updated model
    }
    t.Wram<uint64_t>("saturations")[t.me()] += saturation.events;  // accumulates over launches
  }
};

}  // namespace

LinearLayout MakeLinearLayout(uint32_t features, uint32_t max_rows, uint64_t max_list_entries) {
  LinearLayout l;
  l.n_pad = (features + kFeatureBlock - 1) / kFeatureBlock * kFeatureBlock;
  if (l.n_pad == 0) l.n_pad = kFeatureBlock;
  l.x_offset = 0;
  l.y_offset = Align8(uint64_t{max_rows} * l.n_pad);
  l.w_offset = l.y_offset + Align8(max_rows);
  l.v_offset = l.w_offset + l.model_bytes();
  l.g_offset = l.v_offset + l.model_bytes();
  l.list_offset = l.g_offset + l.gradient_bytes();
  l.sigmoid_offset = l.list_offset + Align8(max_list_entries * 4);
  l.end = l.sigmoid_offset + 4 * fixed::kSigmoidEntries;
  return l;
}

std::shared_ptr<pim::Kernel> MakeLinearKernel() { return std::make_shared<LinearKernel>(); }

// ---------------------------------------------------------------- host reference
namespace {

int32_t ReferenceDerivative(const QuantizedShard& shard, std::span<const int32_t> model, uint32_t r,
                            const LinearKernelArgs& a) {
  const int8_t* x = shard.x.data() + uint64_t{r} * shard.n_pad;
  int64_t z = a.fit_bias ? static_cast<int64_t>(model[shard.n_pad]) << fixed::kFeatureFracBits : 0;
  for (uint32_t j = 0; j < shard.n_pad; ++j) z += static_cast<int64_t>(x[j]) * model[j];
  const int64_t z24 = fixed::ShiftTowardZero(z, fixed::kFeatureFracBits);
  const int y = shard.y[r];
  const auto loss = a.loss == 0 ? LossKind::kLogistic : LossKind::kHinge;
  return fixed::ApplyClassWeight(fixed::Derivative(loss, z24, y),
                                 y > 0 ? a.positive_weight_q24 : a.negative_weight_q24);
}

}  // namespace

std::vector<int64_t> ReferenceGradient(const QuantizedShard& shard, std::span<const int32_t> model,
                                       std::span<const uint32_t> rows, const LinearKernelArgs& args) {
  std::vector<int64_t> g(shard.n_pad + 1, 0);
  for (uint32_t r : rows) {
    const int64_t d = ReferenceDerivative(shard, model, r, args);
    const int8_t* x = shard.x.data() + uint64_t{r} * shard.n_pad;
    for (uint32_t j = 0; j < shard.n_pad; ++j) g[j] += d * x[j];
    g[shard.n_pad] += d << fixed::kFeatureFracBits;
  }
  return g;
}

void ReferenceLocalSteps(const QuantizedShard& shard, std::vector<int32_t>& model, std::span<const int32_t> v,
                         const std::vector<std::vector<uint32_t>>& steps, const LinearKernelArgs& args,
                         fixed::Saturation& saturation) {
  for (const auto& rows : steps) {
    if (rows.empty()) continue;
    const std::vector<int64_t> g = ReferenceGradient(shard, model, rows, args);
    const uint64_t scale = args.lr_weight_q32 / rows.size();
    for (uint32_t j = 0; j <= shard.n_pad; ++j) {
      const bool is_bias = j == shard.n_pad;
      int64_t base = 0;
      if (args.mode == 2) {
        base = int64_t{model[j]} - v[j];
      } else if (!is_bias) {
        base = model[j];
      }
      model[j] = fixed::SaturateModel(UpdatedCoordinate(model[j], g[j], scale, base, args.decay_q32), saturation);
    }
    if (!args.fit_bias) model[shard.n_pad] = 0;
  }
}

}  // namespace pimopt::pimbackend
