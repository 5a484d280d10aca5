#include "pimopt/backends/pim/linear_kernel.h"

#include <algorithm>
#include <cmath>

#include "pimopt/pim/native_program.h"

#include "linear_kernel_ops.h"

namespace pimopt::pimbackend {

using namespace kernel_ops;  // NOLINT: the kernel's building blocks and their operand types (linear_kernel_ops.h)

namespace {

uint64_t Align8(uint64_t v) { return (v + 7) / 8 * 8; }

class LinearKernel final : public pim::Kernel {
 public:
  pim::KernelSpec Spec() const override {
    pim::KernelSpec spec;
    spec.name = kLinearKernelName;
    spec.tasklets = 16;
    spec.wram_symbols = {{std::string(kArgsSymbol), sizeof(LinearKernelArgs)},
                         {std::string(kRowsSymbol), 4 * kMaxRowsPerStep},
                         {std::string(kDerivativesSymbol), 4 * kMaxRowsPerStep},
                         {std::string(kCountSymbol), 8},
                         {std::string(kPartialsSymbol), 8 * kMaxTasklets},
                         {std::string(kDualCoefficientSymbol), 8},
                         {std::string(kSaturationsSymbol), 8 * kMaxTasklets}};
    spec.heap_bytes_per_tasklet = kHeapBytesPerTasklet;
    return spec;
  }

  void Main(Tasklet& t) override {
    const u32 me = t.me();
    const uint32_t tasklets = t.nr_tasklets();
    if (me == 0u) t.MemReset();
    t.BarrierWait();
    const auto* args = t.Wram<LinearKernelArgs>(kArgsSymbol);
    const Config c = LoadConfig(t, args);
    const WramPtr<uint32_t> rows = t.WramVar<uint32_t>(kRowsSymbol);
    const WramPtr<int32_t> d = t.WramVar<int32_t>(kDerivativesSymbol);
    const WramPtr<uint32_t> count = t.WramVar<uint32_t>(kCountSymbol);
    Buffers buf;
    buf.x = t.Alloc<int8_t>(kSparseWindow + 8);
    buf.w = t.Alloc<int32_t>(kFeatureBlock);
    buf.v = t.Alloc<int32_t>(kFeatureBlock);
    buf.acc = t.Alloc<int64_t>(kFeatureBlock);
    // The column window is only used by the gather / scatter phases, the sums only by the sweep: they share WRAM
    // (16 tasklets x 2.2 KB must fit beside the shared arrays and the stacks).
    static_assert(4 * kSparseWindow + 8 <= 8 * kFeatureBlock);
    buf.col = buf.acc.As<uint8_t>();
    buf.word = t.Alloc<int64_t>(2);
    fixed::Saturation saturation;
    if (c.mode == KernelMode::kDualAscent) {
      if (c.artifact || c.feature_split) t.Fail("dual ascent (mode 3) runs pimopt's kernel without feature_split");
      DualAscentPass(t, c, buf, rows, count, t.WramVar<int64_t>(kPartialsSymbol),
                     t.WramVar<int64_t>(kDualCoefficientSymbol), saturation);
      t.WramVar<uint64_t>(kSaturationsSymbol)[me] += u64(saturation.events);
      return;
    }
    if (c.artifact && !c.sparse && !c.feature_split) t.Fail("PIM-Opt's kernel (artifact = 1) needs feature_split = 1");
    if (c.sparse_update && (!c.sparse || c.artifact || c.mode != KernelMode::kLocalSgd || args->decay_q32 != 0)) {
      t.Fail("sparse_update = 1 needs sparse rows, pimopt's kernel, local SGD (mode 1) and no decay");
    }
    if (c.sparse && c.mode == KernelMode::kGradient) {
      ClearSums(t, c, buf, me, tasklets);  // the host read the previous step's sums; start from zero
      t.BarrierWait();
    }
    const uint32_t bias_owner = tasklets - 1;
    for (u32 step = 0; step < c.steps; ++step) {
      // A step's rows are processed in chunks of at most kMaxRowsPerStep (the WRAM arrays); the sums of all
      // chunks collect in G in MRAM, so a step may have any number of rows.
      u32 step_rows = 0;
      i64 bias_sum = 0;  // bias owner only
      for (u32 chunk = 0;; ++chunk) {
        if (me == 0u) LoadRowList(t, c, step, chunk, rows, count);
        t.BarrierWait();
        const u32 n = count[0];
        if (n == 0u) break;
        t.MramRead(c.w + c.n_pad * 4, buf.word, 8);
        const i32 bias = buf.word.As<int32_t>()[0];
        if ((c.feature_split && !c.sparse) || (c.artifact && c.sparse)) {
          // PIM-Opt's split ([PIM-Opt] */dpu/task.c, docs/sources.md): every tasklet takes its feature blocks (dense)
          // or its share of the non-zeros (sparse) of each sample; two barriers per sample; G is read-modified-written
          // in MRAM per sample.
          if (c.sparse) {
            SparseFeatureSplitChunk(t, c, buf, rows, d, n, bias, me, tasklets);
          } else {
            FeatureSplitChunk(t, c, buf, rows, d, n, bias, chunk, me, tasklets);
          }
          if (me == bias_owner) bias_sum += SumOf(d, n);
          step_rows += n;
          t.BarrierWait();
          if (n < kMaxRowsPerStep) break;
          continue;
        }
        // Phase A: scores and derivatives, one row per tasklet at a time.
        for (u32 i = me; i < n; i += tasklets) {
          const u32 r = rows[i];
          i64 z = c.fit_bias ? Cast<int64_t>(bias) << fixed::kFeatureFracBits : i64(0);
          z += c.sparse ? SparseDot(t, c, buf, r) : DenseDot(t, c, buf, r);
          d[i] = RowDerivative(t, c, buf, r, fixed::ShiftTowardZero(z, fixed::kFeatureFracBits));
        }
        t.BarrierWait();
        // Phase B: add this chunk's d_i x_i to G.
        if (c.sparse) {
          SparseScatter(t, c, buf, rows, d, n, me, tasklets);
        } else {
          for (u32 b = me; b < c.blocks; b += tasklets) DenseAccumulate(t, c, buf, rows, d, n, b, chunk);
        }
        if (me == bias_owner) bias_sum += SumOf(d, n);
        step_rows += n;
        t.BarrierWait();  // the next chunk overwrites the row list and the derivatives
        if (n < kMaxRowsPerStep) break;
      }
      if (step_rows == 0u) continue;
      // Output (mode 0) or update (modes 1, 2) from the sums.
      const bool updates = c.mode != KernelMode::kGradient;
      const u64 scale = updates ? c.lr_weight_q32 / Cast<uint64_t>(step_rows) : u64(0);
      const Scaler step_scale(scale);
      if (me == bias_owner) UpdateBias(t, c, buf, bias_sum, step_scale, saturation);
      if (!updates && c.artifact && !c.sparse) {
        // PIM-Opt's GA-SGD hands its dense gradients over as int32: G's blocks narrowed into V (the host pulls V).
        for (u32 b = me; b < c.blocks; b += tasklets) NarrowBlock(t, c, buf, b, saturation);
      }
      if (updates && c.sparse_update) {
        SparseUpdate(t, c, buf, rows, count, step, step_scale, saturation, me, tasklets);
      } else if (updates) {
        const Scaler decay(c.decay_q32);
        for (u32 b = me; b < c.blocks; b += tasklets) {
          const u32 g_address = c.g + b * (kFeatureBlock * 8);
          t.MramRead(g_address, buf.acc, 8 * kFeatureBlock);
          UpdateBlock(t, c, buf, b, step_scale, decay, saturation);
          if (c.sparse) {  // the scatter of the next step adds to G: clear it (dense chunks overwrite it)
            Clear(buf.acc);
            t.MramWrite(buf.acc, g_address, 8 * kFeatureBlock);
          }
        }
      }
      t.BarrierWait();  // the next step reads the updated model
    }
    t.WramVar<uint64_t>(kSaturationsSymbol)[me] += u64(saturation.events);  // accumulates over launches
  }

 private:
  static void Clear(WramPtr<int64_t> block) {
    for (u32 j = 0; j < kFeatureBlock; ++j) block[j] = 0;
  }

  // d[0] + ... + d[n - 1] (the bias's gradient sum).
  static i64 SumOf(WramPtr<int32_t> d, u32 n) {
    i64 sum = 0;
    for (u32 i = 0; i < n; ++i) sum += Cast<int64_t>(d[i].load());
    return sum;
  }

  // sigma(z) as PIM-Opt computes it ([PIM-Opt] lut_exp.h, docs/sources.md): z in float, expf(-z) by range reduction
  // and the entry of its table of 2^20 floats in MRAM (one 8-byte DMA; --sigmoid float alone reads one word that
  // stands for it: pimopt's MRAM has no such table), then 2^24 / (1 + e) in double, rounded. The model keeps the
  // host's expf (fixed::SigmoidFloat, bit for bit): the table's entry is read for its cost, not its value.
  static i32 FloatSigmoid(Tasklet& t, const Config& c, Buffers& buf, i64 z24) {
    const pim::f32 z = pim::f32(z24) * pim::f32(1.0f / static_cast<float>(1 << kModelFracBits));
    const pim::f32 x = -z;
    // expf(x): k = floor(x log2 e), r = (x log2 e - k) ln 2, entry round(r 2^20), then 2^k times it (the exponent
    // field's add).
    const pim::f32 scaled = x * pim::f32(1.4426950408889634f);
    i32 k = scaled.To<int32_t>();
    if (pim::f32(k) > scaled) --k;
    const pim::f32 r = (scaled - pim::f32(k)) * pim::f32(0.6931471805599453f);
    u32 index = c.artifact ? (r * pim::f32(1048576.0f)).Round<uint32_t>() : u32(0);
    if (index >= kArtifactExpTableEntries) index = kArtifactExpTableEntries - 1;
    t.MramRead(c.sigmoid + (index & ~1u) * 4, buf.word, 8);
    const i32 entry_bits = buf.word.As<int32_t>()[index & 1u];
    const i32 exponent_added = entry_bits + (k << 23);
    static_cast<void>(exponent_added);
    const pim::f32 e(std::exp(x.value()));
    const pim::f64 q = pim::f64(static_cast<double>(1 << kModelFracBits)) / (pim::f64(1.0) + pim::f64(e));
    return q.Round<int32_t>();
  }

  static i32 RowDerivative(Tasklet& t, const Config& c, Buffers& buf, u32 r, i64 z24) {
    t.MramRead(c.y + (r & ~7u), buf.word, 8);
    const i32 y = buf.word.As<int8_t>()[r & 7u].load();
    i32 sigma = 0;
    const LossKind loss = FromKernelLoss(c.loss);
    if (loss == LossKind::kLogistic && (c.artifact || c.float_sigmoid)) {
      sigma = FloatSigmoid(t, c, buf, z24);
    } else if (loss == LossKind::kLogistic) {
      const i64 index = fixed::SigmoidIndex(z24);
      if (index >= fixed::kSigmoidEntries) {
        sigma = 1 << kModelFracBits;
      } else if (index >= 0) {
        const u32 entry = Cast<uint32_t>(index);
        t.MramRead(c.sigmoid + (entry & ~1u) * 4, buf.word, 8);
        sigma = buf.word.As<int32_t>()[entry & 1u];
      }
    }
    const i32 weight = y > 0 ? c.positive_weight_q24 : c.negative_weight_q24;
    const i32 derivative = c.artifact ? ArtifactDerivative(loss, sigma, z24, y)
                                      : fixed::DerivativeFromSigmoid(loss, sigma, z24, y);
    return fixed::ApplyClassWeight(derivative, weight);
  }

  // The middle of PIM-Opt's per-sample protocol: this tasklet's partial score `z` is published; a barrier; tasklet
  // 0 sums the partials and the bias (in the partials' unit, `shift` fractional bits above Q.24) and computes the
  // row's derivative into d[i]; a barrier. Returns the derivative.
  static i32 ExchangeScore(Tasklet& t, const Config& c, Buffers& buf, u32 r, i64 z, i32 bias, int shift,
                           WramPtr<int32_t> d, u32 i, u32 me) {
    const WramPtr<int64_t> partials = t.WramVar<int64_t>(kPartialsSymbol);
    partials[me] = z;
    t.BarrierWait();
    if (me == 0u) {
      i64 total = c.fit_bias ? Cast<int64_t>(bias) << shift : i64(0);
      for (uint32_t k = 0; k < t.nr_tasklets(); ++k) total += partials[k];  // unrolled: NR_TASKLETS
      d[i] = RowDerivative(t, c, buf, r, fixed::ShiftTowardZero(total, shift));
    }
    t.BarrierWait();
    return d[i];
  }

  // PIM-Opt's work split for one chunk of dense rows: per sample, each tasklet's feature blocks give a partial
  // score (barrier), tasklet 0 finishes the score and the derivative (barrier), each tasklet adds d x to its blocks
  // of G in MRAM.
  static void FeatureSplitChunk(Tasklet& t, const Config& c, Buffers& buf, WramPtr<uint32_t> rows,
                                WramPtr<int32_t> d, u32 n, i32 bias, u32 chunk, u32 me, uint32_t tasklets) {
    for (u32 i = 0; i < n; ++i) {
      const u32 r = rows[i];
      i64 z = 0;
      for (u32 b = me; b < c.blocks; b += tasklets) z += DenseDotBlock(t, c, buf, r, b);
      // pimopt's partials are Q.31 (Q0.7 x Q.24), the artifact's already Q.24 (shifted per product).
      const i32 di =
          ExchangeScore(t, c, buf, r, z, bias, c.artifact ? 0 : fixed::kFeatureFracBits, d, i, me);
      const ByteSplit split(di);
      for (u32 b = me; b < c.blocks; b += tasklets) {
        const u32 g_address = c.g + b * (kFeatureBlock * 8);
        if (chunk == 0u && i == 0u) {
          Clear(buf.acc);
        } else {
          t.MramRead(g_address, buf.acc, 8 * kFeatureBlock);
        }
        if (c.artifact) {
          // PIM-Opt's kernel: x d per feature, shifted on its own, -1 dropped (the model block is not needed here).
          // The hinge's unweighted derivative (-1, 0, +1) makes each term +-x itself, added or subtracted with no
          // multiply, as the artifact's SVM kernels do; an inactive row adds nothing.
          const WramPtr<int32_t> x = buf.w;
          t.MramRead(c.x + (r * c.n_pad + b * kFeatureBlock) * 4, x, 4 * kFeatureBlock);
          static_assert(kArtifactFeatureFracBits - fixed::kFeatureFracBits == kModelFracBits);
          if (di == (1 << kModelFracBits)) {
            for (u32 j = 0; j < kFeatureBlock; ++j) buf.acc[j] += Cast<int64_t>(x[j].load());
          } else if (di == -(1 << kModelFracBits)) {
            for (u32 j = 0; j < kFeatureBlock; ++j) buf.acc[j] -= Cast<int64_t>(x[j].load());
          } else if (di != 0) {
            const i64 wide_d = Cast<int64_t>(di);
            for (u32 j = 0; j < kFeatureBlock; ++j) buf.acc[j] += ArtifactGradientTerm(x[j].load(), wide_d);
          }
        } else {
          t.MramRead(c.x + r * c.n_pad + b * kFeatureBlock, buf.x, kFeatureBlock);
          for (u32 j = 0; j < kFeatureBlock; ++j) buf.acc[j] += Times(buf.x[j], split);
        }
        t.MramWrite(buf.acc, g_address, 8 * kFeatureBlock);
      }
    }
  }

  // PIM-Opt's split on sparse rows (its Criteo kernels): the row's non-zeros are dealt out to the tasklets in
  // contiguous runs (39 non-zeros over 16 tasklets: 3 each for tasklets 0-6, 2 for 7-15); each tasklet reads only its
  // own column numbers and values, one 8-byte DMA per weight; a barrier; tasklet 0 finishes the score and the
  // derivative; a barrier; each tasklet adds d x to its columns' sums in MRAM (a row's columns are distinct: no race).
  static void SparseFeatureSplitChunk(Tasklet& t, const Config& c, Buffers& buf, WramPtr<uint32_t> rows,
                                      WramPtr<int32_t> d, u32 n, i32 bias, u32 me, uint32_t tasklets) {
    for (u32 i = 0; i < n; ++i) {
      const u32 r = rows[i];
      const auto [begin, end] = RowRange(t, c, buf, r);
      const u32 nnz = end - begin, base = nnz / tasklets, extra = nnz % tasklets;
      const u32 mine = base + (me < extra ? u32(1) : u32(0));
      const u32 first = begin + me * base + (me < extra ? me : extra);
      const i64 z = SparseDotRange(t, c, buf, first, first + mine);
      const ByteSplit di(ExchangeScore(t, c, buf, r, z, bias, fixed::kFeatureFracBits, d, i, me));
      for (u32 k = first; k < first + mine; k += kSparseWindow) {
        const u32 rest = first + mine - k;
        const u32 count = rest < kSparseWindow ? rest : u32(kSparseWindow);
        const auto [cols, vals] = LoadWindow(t, c, buf, k, count);
        for (u32 e = 0; e < count; ++e) AddToSum(t, c, buf, cols[e], Times(vals[e], di));
      }
    }
  }

  // G[col] += term in MRAM (an 8-byte read, add, write).
  static void AddToSum(Tasklet& t, const Config& c, Buffers& buf, u32 col, i64 term) {
    const u32 address = c.g + col * 8;
    const WramPtr<int64_t> word = buf.word + 1;
    t.MramRead(address, word, 8);
    word[0] += term;
    t.MramWrite(word, address, 8);
  }

  // Adds this chunk's sums of feature block b to G (the first chunk of a step writes them).
  static void DenseAccumulate(Tasklet& t, const Config& c, Buffers& buf, WramPtr<uint32_t> rows,
                              WramPtr<int32_t> d, u32 n, u32 b, u32 chunk) {
    const u32 g_address = c.g + b * (kFeatureBlock * 8);
    if (chunk == 0u) {
      Clear(buf.acc);
    } else {
      t.MramRead(g_address, buf.acc, 8 * kFeatureBlock);
    }
    for (u32 i = 0; i < n; ++i) {
      t.MramRead(c.x + rows[i] * c.n_pad + b * kFeatureBlock, buf.x, kFeatureBlock);
      const ByteSplit di(d[i]);
      for (u32 j = 0; j < kFeatureBlock; ++j) buf.acc[j] += Times(buf.x[j], di);
    }
    t.MramWrite(buf.acc, g_address, 8 * kFeatureBlock);
  }

  // Walks the non-zeros of rows[0..n) window by window (RowRange, then LoadWindow): visit(i, cols, vals, count)
  // for each window of row i.
  template <typename Visit>
  static void ForEachWindow(Tasklet& t, const Config& c, Buffers& buf, WramPtr<uint32_t> rows, u32 n,
                            Visit&& visit) {
    for (u32 i = 0; i < n; ++i) {
      const auto [begin, end] = RowRange(t, c, buf, rows[i]);
      ForEachWindowIn(t, c, buf, begin, end,
                      [&](WramPtr<uint32_t> cols, WramPtr<int8_t> vals, u32 count) { visit(i, cols, vals, count); });
    }
  }

  // G[col] += d_i x_ij for the non-zeros of the step's rows whose column this tasklet owns (col % T == me).
  static void SparseScatter(Tasklet& t, const Config& c, Buffers& buf, WramPtr<uint32_t> rows, WramPtr<int32_t> d,
                            u32 n, u32 me, uint32_t tasklets) {
    ForEachWindow(t, c, buf, rows, n, [&](u32 i, WramPtr<uint32_t> cols, WramPtr<int8_t> vals, u32 count) {
      const ByteSplit di(d[i]);
      for (u32 e = 0; e < count; ++e) {
        const u32 col = cols[e];
        if (col % tasklets != me) continue;
        AddToSum(t, c, buf, col, Times(vals[e], di));
      }
    });
  }

  // Local SGD without decay on sparse rows: only the coordinates the step's rows touch move. Each tasklet takes the
  // coordinates whose 8-byte model word it owns ((col / 2) % T: two tasklets never write one word), updates each
  // from its sum in G as UpdateBlock would, and clears the sum; a column met again in the step finds its sum
  // cleared and is skipped (an exact zero sum leaves the coordinate as it is either way). G is zero again after it,
  // as the dense sweep leaves it.
  static void SparseUpdate(Tasklet& t, const Config& c, Buffers& buf, WramPtr<uint32_t> rows, WramPtr<uint32_t> count,
                           u32 step, const Scaler& scale, fixed::Saturation& saturation, u32 me, uint32_t tasklets) {
    const Scaler no_decay(0);
    const WramPtr<int64_t> word = buf.word + 1;
    for (u32 chunk = 0;; ++chunk) {
      t.BarrierWait();  // every tasklet is done with the row list of the phase before
      if (me == 0u) LoadRowList(t, c, step, chunk, rows, count);
      t.BarrierWait();
      const u32 n = count[0];
      ForEachWindow(t, c, buf, rows, n, [&](u32, WramPtr<uint32_t> cols, WramPtr<int8_t>, u32 window) {
        for (u32 e = 0; e < window; ++e) {
          const u32 col = cols[e];
          if ((col >> 1) % tasklets != me) continue;
          const u32 g_address = c.g + col * 8;
          t.MramRead(g_address, word, 8);
          const i64 g = word[0];
          if (g == 0) continue;
          const u32 w_address = c.w + (col & ~1u) * 4;
          t.MramRead(w_address, word, 8);
          const pim::Ref<int32_t> w = word.As<int32_t>()[col & 1u];
          const i64 x = Cast<int64_t>(w.load());
          w = fixed::SaturateModel(fixed::SgdUpdateWith(x, g, scale, x, no_decay), saturation);
          t.MramWrite(word, w_address, 8);
          word[0] = 0;
          t.MramWrite(word, g_address, 8);
        }
      });
      if (n < kMaxRowsPerStep) break;
    }
  }

  // PIM-Opt's GA-SGD output on dense data: G's block b (int64, Q.31) as int32 Q.24 (toward zero, saturated) in V.
  static void NarrowBlock(Tasklet& t, const Config& c, Buffers& buf, u32 b, fixed::Saturation& saturation) {
    t.MramRead(c.g + b * (kFeatureBlock * 8), buf.acc, 8 * kFeatureBlock);
    for (u32 j = 0; j < kFeatureBlock; ++j) {
      buf.w[j] = fixed::SaturateModel(fixed::ShiftTowardZero(buf.acc[j].load(), fixed::kFeatureFracBits), saturation);
    }
    t.MramWrite(buf.w, c.v + b * (kFeatureBlock * 4), 4 * kFeatureBlock);
  }

  static void ClearSums(Tasklet& t, const Config& c, Buffers& buf, u32 me, uint32_t tasklets) {
    Clear(buf.acc);
    for (u32 b = me; b < c.blocks; b += tasklets) t.MramWrite(buf.acc, c.g + b * (kFeatureBlock * 8), 8 * kFeatureBlock);
  }

  // Local and proximal SGD: updates model block b from the sums in buf.acc (the gradient mode never calls this).
  static void UpdateBlock(Tasklet& t, const Config& c, Buffers& buf, u32 b, const Scaler& scale, const Scaler& decay,
                          fixed::Saturation& saturation) {
    const u32 w_address = c.w + b * (kFeatureBlock * 4);
    t.MramRead(w_address, buf.w, 4 * kFeatureBlock);
    const bool proximal = c.mode == KernelMode::kProximalSgd;
    if (proximal) t.MramRead(c.v + b * (kFeatureBlock * 4), buf.v, 4 * kFeatureBlock);
    for (u32 j = 0; j < kFeatureBlock; ++j) {
      const i64 x = Cast<int64_t>(buf.w[j].load());
      const i64 base = proximal ? x - Cast<int64_t>(buf.v[j].load()) : x;
      buf.w[j] = fixed::SaturateModel(fixed::SgdUpdateWith(x, buf.acc[j].load(), scale, base, decay), saturation);
    }
    t.MramWrite(buf.w, w_address, 4 * kFeatureBlock);
  }

  // The bias: G_b = sum_i d_i (in G's unit), output (gradient mode) or update (no L2 on the bias).
  static void UpdateBias(Tasklet& t, const Config& c, Buffers& buf, i64 d_sum, const Scaler& scale,
                         fixed::Saturation& saturation) {
    const i64 g = d_sum << fixed::kFeatureFracBits;  // Q.24 -> Q.31, the unit of G
    if (c.mode == KernelMode::kGradient) {
      buf.word[0] = g;
      t.MramWrite(buf.word, c.g + c.n_pad * 8, 8);
      if (c.artifact && !c.sparse) {  // the int32 output: the bias after the narrowed model-sized gradient
        buf.word[0] = Cast<int64_t>(Cast<uint32_t>(
            fixed::SaturateModel(fixed::ShiftTowardZero(g, fixed::kFeatureFracBits), saturation)));
        t.MramWrite(buf.word, c.v + c.n_pad * 4, 8);
      }
      return;
    }
    t.MramRead(c.w + c.n_pad * 4, buf.word, 8);
    const i64 old = Cast<int64_t>(buf.word.As<int32_t>()[0].load());
    i64 base = 0;
    const bool proximal = c.mode == KernelMode::kProximalSgd;
    if (proximal) {
      t.MramRead(c.v + c.n_pad * 4, buf.word + 1, 8);
      base = old - Cast<int64_t>(buf.word.As<int32_t>()[2].load());
    }
    // The decay of the bias's update multiplies `base`: 0 unless proximal.
    const Scaler decay(proximal ? c.decay_q32 : u64(0));
    i32 updated = fixed::SaturateModel(fixed::SgdUpdateWith(old, g, scale, base, decay), saturation);
    if (!c.fit_bias) updated = 0;
    buf.word[0] = Cast<int64_t>(Cast<uint32_t>(updated));
    t.MramWrite(buf.word, c.w + c.n_pad * 4, 8);
  }
};

}  // namespace

KernelLoss ToKernelLoss(LossKind loss) {
  return loss == LossKind::kLogistic ? KernelLoss::kLogistic : KernelLoss::kHinge;
}

LossKind FromKernelLoss(KernelLoss loss) {
  return loss == KernelLoss::kLogistic ? LossKind::kLogistic : LossKind::kHinge;
}

LinearLayout MakeLinearLayout(uint32_t features, uint32_t max_rows, uint64_t max_list_entries, uint64_t max_nonzeros,
                              bool artifact) {
  LinearLayout l;
  l.n_pad = (features + kFeatureBlock - 1) / kFeatureBlock * kFeatureBlock;
  if (l.n_pad == 0) l.n_pad = kFeatureBlock;
  l.sparse = max_nonzeros > 0;
  l.x_offset = 0;
  if (l.sparse) {
    l.col_offset = Align8((uint64_t{max_rows} + 2) * 4);
    l.val_offset = l.col_offset + Align8(max_nonzeros * 4 + 8);
    l.y_offset = l.val_offset + Align8(max_nonzeros + 8);
  } else {
    l.feature_bytes = artifact ? 4 : 1;
    l.y_offset = Align8(uint64_t{max_rows} * l.n_pad * l.feature_bytes);
  }
  l.w_offset = l.y_offset + Align8(max_rows);
  l.v_offset = l.w_offset + l.model_bytes();
  l.g_offset = l.v_offset + l.model_bytes();
  l.list_offset = l.g_offset + l.gradient_bytes();
  l.max_list_entries = max_list_entries;
  l.sigmoid_offset = l.list_offset + Align8(max_list_entries * 4);
  l.end = l.sigmoid_offset + 4 * uint64_t{artifact ? kArtifactExpTableEntries : fixed::kSigmoidEntries};
  return l;
}

const std::vector<float>& ArtifactExpTable() {
  static const std::vector<float> table = [] {
    std::vector<float> t(kArtifactExpTableEntries);
    for (uint32_t i = 0; i < kArtifactExpTableEntries; ++i) t[i] = std::exp(static_cast<float>(std::ldexp(i, -20)));
    return t;
  }();
  return table;
}

uint32_t ArtifactExpIndex(int64_t z_q24) {
  // t = -z log2(e) in fixed point with 23 fractional bits (valid while |t| < 256: clamped there), k = floor(t),
  // r = (t - k) ln 2 in [0, ln 2), index round(r 2^20) < 726,818.
  const double t = std::clamp(-static_cast<double>(z_q24) / (1 << fixed::kModelFracBits) * 1.4426950408889634,
                              -255.0, 255.0);
  const int64_t t23 = static_cast<int64_t>(std::floor(t * (1 << 23)));
  const double fraction = static_cast<double>(t23 & ((1 << 23) - 1)) / (1 << 23);
  return static_cast<uint32_t>(std::nearbyint(fraction * 0.6931471805599453 * (1 << 20)));
}

int32_t QuantizeFeatureArtifact(float x, fixed::Saturation& sat) {
  const double q = std::floor(static_cast<double>(x) * 2147483648.0);
  // 1.0 (the maximum of min-max scaled data, 2^31 in the artifact's uint32) is 2^-31 above the largest int32: a
  // rounding, not a saturation.
  if (q == 2147483648.0) return 2147483647;
  if (q > 2147483647.0 || q < -2147483647.0) {
    ++sat.events;
    return q > 0 ? 2147483647 : -2147483647;
  }
  return static_cast<int32_t>(q);
}


std::unique_ptr<pim::Kernel> MakeLinearKernel() { return std::make_unique<LinearKernel>(); }

std::string LinearProgramPath(uint32_t tasklets) {
#if !defined(PIMOPT_LINEAR_PROGRAM_DIR) || !defined(PIMOPT_LINEAR_PROGRAM_SOURCE) || !defined(PIMOPT_INCLUDE_DIR)
  (void)tasklets;
  throw ConfigError("--kernels", "pimopt was built without the DPU toolchain (clang and llvm-dev, 14 or newer): the "
                                 "kernel's DPU program cannot be built; --kernels port runs the C++ port");
#else
  return pim::BuiltProgramPath(PIMOPT_LINEAR_PROGRAM_SOURCE, {"PIMOPT_DPU_PROGRAMS", PIMOPT_LINEAR_PROGRAM_DIR},
                               "pimopt_linear", tasklets,
                               {StrCat("-I", PIMOPT_INCLUDE_DIR), "-fno-strict-aliasing", "-std=c11"});
#endif
}

// ---------------------------------------------------------------- host reference
namespace {

int32_t ReferenceDerivative(const QuantizedShard& shard, std::span<const int32_t> model, uint32_t r,
                            const LinearKernelArgs& a) {
  const bool artifact_dense = a.artifact && !shard.sparse;
  const int shift = artifact_dense ? 0 : fixed::kFeatureFracBits;
  int64_t z = a.fit_bias ? static_cast<int64_t>(model[shard.n_pad]) << shift : 0;
  if (artifact_dense) {
    const int32_t* x = shard.x31.data() + uint64_t{r} * shard.n_pad;
    for (uint32_t j = 0; j < shard.n_pad; ++j) z += ArtifactProduct(x[j], model[j]);
  } else if (shard.sparse) {
    for (uint32_t k = shard.row_ptr[r]; k < shard.row_ptr[r + 1]; ++k) {
      z += static_cast<int64_t>(shard.val[k]) * model[shard.col[k]];
    }
  } else {
    const int8_t* x = shard.x.data() + uint64_t{r} * shard.n_pad;
    for (uint32_t j = 0; j < shard.n_pad; ++j) z += static_cast<int64_t>(x[j]) * model[j];
  }
  const int64_t z24 = fixed::ShiftTowardZero(z, shift);
  const int y = shard.y[r];
  const LossKind loss = FromKernelLoss(a.loss);
  // The kernel's choices (RowDerivative): PIM-Opt's derivative implies its float sigmoid.
  const bool float_sigmoid = (a.sigmoid_float || a.artifact) && loss == LossKind::kLogistic;
  const int32_t sigma = float_sigmoid ? fixed::SigmoidFloat(z24) : 0;
  const int32_t d = a.artifact        ? ArtifactDerivative(loss, sigma, z24, y)
                    : float_sigmoid ? fixed::DerivativeFromSigmoid(loss, sigma, z24, y)
                                    : fixed::Derivative(loss, z24, y);
  return fixed::ApplyClassWeight(d, y > 0 ? a.positive_weight_q24 : a.negative_weight_q24);
}

}  // namespace

std::vector<int64_t> ReferenceGradient(const QuantizedShard& shard, std::span<const int32_t> model,
                                       std::span<const uint32_t> rows, const LinearKernelArgs& args) {
  std::vector<int64_t> g(shard.n_pad + 1, 0);
  for (uint32_t r : rows) {
    const int64_t d = ReferenceDerivative(shard, model, r, args);
    if (shard.sparse) {
      for (uint32_t k = shard.row_ptr[r]; k < shard.row_ptr[r + 1]; ++k) g[shard.col[k]] += d * shard.val[k];
    } else if (args.artifact) {
      const int32_t* x = shard.x31.data() + uint64_t{r} * shard.n_pad;
      for (uint32_t j = 0; j < shard.n_pad; ++j) g[j] += ArtifactGradientTerm(x[j], d);
    } else {
      const int8_t* x = shard.x.data() + uint64_t{r} * shard.n_pad;
      for (uint32_t j = 0; j < shard.n_pad; ++j) g[j] += d * x[j];
    }
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
      if (args.mode == KernelMode::kProximalSgd) {
        base = int64_t{model[j]} - v[j];
      } else if (!is_bias) {
        base = model[j];
      }
      model[j] = fixed::SaturateModel(fixed::SgdUpdate(model[j], g[j], scale, base, args.decay_q32), saturation);
    }
    if (!args.fit_bias) model[shard.n_pad] = 0;
  }
}

DualRowParams MakeDualRowParams(double squared_norm, double cost, double sigma, double lambda_n) {
  DualRowParams p;
  const double scale = sigma * cost / lambda_n, q = scale * squared_norm;
  p.scale_q32 = fixed::ToScale(scale, "--reg");
  p.q_q32 = fixed::ToScale(q, "--reg");
  p.inv_q_q32 = q > 0 ? std::min(kDualMaxInverse, fixed::ToScale(std::min(1.0 / q, 256.0), "--reg")) : kDualMaxInverse;
  return p;
}

double QuantizedSquaredNorm(std::span<const int8_t> values, bool fit_bias) {
  int64_t sum = 0;  // of the int8 values' squares (Q0.14)
  for (const int8_t x : values) sum += int64_t{x} * x;
  return std::ldexp(static_cast<double>(sum), -2 * fixed::kFeatureFracBits) + (fit_bias ? 1.0 : 0.0);
}

double QuantizedSquaredNorm(const QuantizedShard& shard, uint32_t r, bool fit_bias) {
  if (shard.sparse) {
    return QuantizedSquaredNorm(
        std::span<const int8_t>(shard.val.data() + shard.row_ptr[r], shard.row_ptr[r + 1] - shard.row_ptr[r]),
        fit_bias);
  }
  return QuantizedSquaredNorm(std::span<const int8_t>(shard.x.data() + uint64_t{r} * shard.n_pad, shard.n_pad),
                              fit_bias);
}

void ReferenceDualPass(const QuantizedShard& shard, std::vector<int32_t>& model, std::vector<int32_t>& duals,
                       std::span<const DualRowParams> params, std::span<const uint32_t> rows,
                       const LinearKernelArgs& args, fixed::Saturation& saturation) {
  const uint32_t n_pad = shard.n_pad;
  const auto mul = [](int64_t v, uint64_t scale) { return fixed::MulScale(v, scale); };
  const auto sigmoid = [](int64_t z) { return int64_t{fixed::Sigmoid(z)}; };
  const auto add_scaled = [&](int32_t w, int8_t x, int64_t coef) {
    return fixed::SaturateModel(int64_t{w} + fixed::ShiftTowardZero(int64_t{x} * coef, fixed::kFeatureFracBits),
                                saturation);
  };
  for (const uint32_t r : rows) {
    int64_t z = 0;
    if (shard.sparse) {
      for (uint32_t k = shard.row_ptr[r]; k < shard.row_ptr[r + 1]; ++k) z += int64_t{shard.val[k]} * model[shard.col[k]];
    } else {
      const int8_t* x = shard.x.data() + uint64_t{r} * n_pad;
      for (uint32_t j = 0; j < n_pad; ++j) z += int64_t{x[j]} * model[j];
    }
    if (args.fit_bias) z += int64_t{model[n_pad]} << fixed::kFeatureFracBits;
    const int64_t z24 = fixed::ShiftTowardZero(z, fixed::kFeatureFracBits);
    const int y = shard.y[r];
    const int64_t margin = y > 0 ? z24 : -z24;
    const int64_t beta = duals[r];
    const int64_t next = DualStep(FromKernelLoss(args.loss), beta, margin, params[r], mul, sigmoid);
    duals[r] = static_cast<int32_t>(next);
    const int64_t delta = next - beta;
    const int64_t coef = fixed::SaturateModel(fixed::MulScale(y > 0 ? delta : -delta, params[r].scale_q32), saturation);
    if (args.fit_bias) model[n_pad] = fixed::SaturateModel(int64_t{model[n_pad]} + coef, saturation);
    if (coef == 0) continue;
    if (shard.sparse) {
      for (uint32_t k = shard.row_ptr[r]; k < shard.row_ptr[r + 1]; ++k) {
        model[shard.col[k]] = add_scaled(model[shard.col[k]], shard.val[k], coef);
      }
    } else {
      const int8_t* x = shard.x.data() + uint64_t{r} * n_pad;
      for (uint32_t j = 0; j < n_pad; ++j) model[j] = add_scaled(model[j], x[j], coef);
    }
  }
}

}  // namespace pimopt::pimbackend
