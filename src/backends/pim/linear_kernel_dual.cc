// The linear kernel's dual ascent mode (linear_kernel.h, mode 3): CoCoA's local solver on a DPU. Per step, one row:
//   z = x.a_r (Q.24), m = y_r z, beta' = DualStep(beta_r, m) (the row's dual in MRAM, Q.24),
//   coef = (beta' - beta_r) y_r s_r (Q.24, saturated), x <- x + coef a_r (each product toward zero, saturated).
// Rows depend on each other through the model, so they run one after another. A dense row is shared by the
// tasklets: tasklet t scores the feature blocks b = t, t + T, ... into its partial; a barrier; tasklet 0 adds the
// partials in tasklet order, takes the step, writes the dual and the bias, publishes coef; a barrier; each tasklet
// updates its blocks of the model in MRAM (no two tasklets share a block: no race); the next row's barrier. Three
// barriers per row. A sparse row (tens of non-zeros) is tasklet 0's alone: the others wait at the barriers.
#include "linear_kernel_ops.h"

namespace pimopt::pimbackend::kernel_ops {

namespace {

// The row's step parameters (one 24-byte DMA).
DualRowParams LoadRowParams(Tasklet& t, const Config& c, Buffers& buf, u32 r) {
  t.MramRead(c.row_params + r * u32(sizeof(DualRowParams)), buf.acc, sizeof(DualRowParams));
  const WramPtr<uint64_t> p = buf.acc.As<uint64_t>();
  return {p[0].load().value(), p[1].load().value(), p[2].load().value()};
}

// w + coef x toward zero for one int8 feature x, saturated.
[[gnu::always_inline]] inline i32 AddScaled(i32 w, i8 x, const ByteSplit& coef, fixed::Saturation& sat) {
  return fixed::SaturateModel(Cast<int64_t>(w) + fixed::ShiftTowardZero(Times(x, coef), fixed::kFeatureFracBits), sat);
}

// The model's block b plus coef times the row's block b.
void UpdateDenseBlock(Tasklet& t, const Config& c, Buffers& buf, u32 r, u32 b, const ByteSplit& coef,
                      fixed::Saturation& sat) {
  t.MramRead(c.x + r * c.n_pad + b * kFeatureBlock, buf.x, kFeatureBlock);
  const u32 w_address = c.w + b * (kFeatureBlock * 4);
  t.MramRead(w_address, buf.w, 4 * kFeatureBlock);
  for (u32 j = 0; j < kFeatureBlock; ++j) buf.w[j] = AddScaled(buf.w[j], buf.x[j], coef, sat);
  t.MramWrite(buf.w, w_address, 4 * kFeatureBlock);
}

// The model's entries at a sparse row's columns plus coef times its values (read-modify-write of each 8-byte word).
void UpdateSparseRow(Tasklet& t, const Config& c, Buffers& buf, u32 r, const ByteSplit& coef, fixed::Saturation& sat) {
  const auto [begin, end] = RowRange(t, c, buf, r);
  const WramPtr<int64_t> word = buf.word + 1;
  ForEachWindowIn(t, c, buf, begin, end, [&](WramPtr<uint32_t> cols, WramPtr<int8_t> vals, u32 count) {
    for (u32 i = 0; i < count; ++i) {
      const u32 col = cols[i];
      const u32 address = c.w + (col & ~1u) * 4;
      t.MramRead(address, word, 8);
      const WramPtr<int32_t> pair = word.As<int32_t>();
      pair[col & 1u] = AddScaled(pair[col & 1u], vals[i], coef, sat);
      t.MramWrite(word, address, 8);
    }
  });
}

// Tasklet 0's part of a row: the score from the partials, the step, the dual and the bias written; returns coef.
i64 TakeStep(Tasklet& t, const Config& c, Buffers& buf, u32 r, i64 score_q31, fixed::Saturation& sat) {
  t.MramRead(c.w + c.n_pad * 4, buf.word, 8);
  const WramPtr<int32_t> bias_word = buf.word.As<int32_t>();
  const i32 bias = bias_word[0];
  i64 z = score_q31;
  if (c.fit_bias) z += Cast<int64_t>(bias) << fixed::kFeatureFracBits;
  const i64 z24 = fixed::ShiftTowardZero(z, fixed::kFeatureFracBits);
  const i32 y = RowLabel(t, c, buf, r);
  const i64 margin = y > 0 ? z24 : i64(0) - z24;
  const DualRowParams p = LoadRowParams(t, c, buf, r);
  const WramPtr<int64_t> dual_word = buf.word + 1;
  const u32 dual_address = c.dual + (r & ~1u) * 4;
  t.MramRead(dual_address, dual_word, 8);
  const WramPtr<int32_t> duals = dual_word.As<int32_t>();
  const i64 beta = Cast<int64_t>(duals[r & 1u].load());
  const auto mul = [](i64 v, uint64_t scale) { return MulScale(v, u64(scale)); };
  const auto sigmoid = [&](i64 v) { return Cast<int64_t>(TableSigmoid(t, c, buf, v)); };
  const i64 next = DualStep(FromKernelLoss(c.loss), beta, margin, p, mul, sigmoid);
  duals[r & 1u] = Cast<int32_t>(next);
  t.MramWrite(dual_word, dual_address, 8);
  const i64 delta = next - beta;
  const i64 coef = Cast<int64_t>(fixed::SaturateModel(MulScale(y > 0 ? delta : i64(0) - delta, u64(p.scale_q32)), sat));
  if (c.fit_bias) {
    t.MramRead(c.w + c.n_pad * 4, buf.word, 8);  // the word again: the label's and sigma's DMAs reused the buffer
    bias_word[0] = fixed::SaturateModel(Cast<int64_t>(bias_word[0].load()) + coef, sat);  // before phase B
    t.MramWrite(buf.word, c.w + c.n_pad * 4, 8);
  }
  return coef;
}

}  // namespace

void DualAscentPass(Tasklet& t, const Config& c, Buffers& buf, WramPtr<uint32_t> rows, WramPtr<uint32_t> count,
                    WramPtr<int64_t> partials, WramPtr<int64_t> shared, fixed::Saturation& saturation) {
  const u32 me = t.me();
  const uint32_t tasklets = t.nr_tasklets();
  for (u32 step = 0; step < c.steps; ++step) {
    if (me == 0u) LoadRowList(t, c, step, 0, rows, count);
    t.BarrierWait();
    if (count[0] == 0u) continue;
    const u32 r = rows[0];
    if (c.sparse) {
      if (me == 0u) {
        const i64 coef = TakeStep(t, c, buf, r, SparseDot(t, c, buf, r), saturation);
        if (coef != 0) UpdateSparseRow(t, c, buf, r, ByteSplit(Cast<int32_t>(coef)), saturation);
      }
      t.BarrierWait();  // the next row's score reads the updated model
      continue;
    }
    i64 partial = 0;
    for (u32 b = me; b < c.blocks; b += tasklets) partial += DenseDotBlock(t, c, buf, r, b);
    partials[me] = partial;
    t.BarrierWait();
    if (me == 0u) {
      i64 score = 0;
      for (u32 k = 0; k < tasklets; ++k) score += partials[k].load();
      shared[0] = TakeStep(t, c, buf, r, score, saturation);
    }
    t.BarrierWait();
    const i64 coef = shared[0].load();
    if (coef != 0) {
      const ByteSplit split(Cast<int32_t>(coef));
      for (u32 b = me; b < c.blocks; b += tasklets) UpdateDenseBlock(t, c, buf, r, b, split, saturation);
    }
  }
}

}  // namespace pimopt::pimbackend::kernel_ops
