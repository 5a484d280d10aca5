#include "pimopt/backends/pim/linear_kernel.h"

#include <algorithm>
#include <cmath>

namespace pimopt::pimbackend {

using fixed::kModelFracBits;
using pim::Op;
using pim::Tasklet;

namespace {

uint64_t Align8(uint64_t v) { return (v + 7) / 8 * 8; }

// Per-tasklet WRAM buffers.
struct Buffers {
  int8_t* x;      // a block of a dense row, or a window of sparse values
  int32_t* w;     // a model block
  int32_t* v;     // a proximal-target block
  int64_t* acc;   // a block of gradient sums
  uint32_t* col;  // a window of sparse column numbers
  int64_t* word;  // 16 bytes for small DMAs
};

class LinearKernel final : public pim::Kernel {
 public:
  pim::KernelSpec Spec() const override {
    pim::KernelSpec spec;
    spec.name = "pimopt_linear";
    spec.tasklets = 16;
    spec.wram_symbols = {{std::string(kArgsSymbol), sizeof(LinearKernelArgs)},
                         {std::string(kRowsSymbol), 4 * kMaxRowsPerStep},
                         {std::string(kDerivativesSymbol), 4 * kMaxRowsPerStep},
                         {std::string(kCountSymbol), 8},
                         {std::string(kPartialsSymbol), 8 * kMaxTasklets},
                         {std::string(kSaturationsSymbol), 8 * kMaxTasklets}};
    spec.heap_bytes_per_tasklet = kHeapBytesPerTasklet;
    return spec;
  }

  void Main(Tasklet& t) override {
    if (t.me() == 0) t.MemReset();
    t.BarrierWait();
    const LinearKernelArgs a = *t.Wram<LinearKernelArgs>(kArgsSymbol);
    auto* rows = t.Wram<uint32_t>(kRowsSymbol);
    auto* d = t.Wram<int32_t>(kDerivativesSymbol);
    auto* count = t.Wram<uint32_t>(kCountSymbol);
    Buffers buf;
    buf.x = static_cast<int8_t*>(t.MemAlloc(kSparseWindow + 8));
    buf.w = static_cast<int32_t*>(t.MemAlloc(4 * kFeatureBlock));
    buf.v = static_cast<int32_t*>(t.MemAlloc(4 * kFeatureBlock));
    buf.acc = static_cast<int64_t*>(t.MemAlloc(8 * kFeatureBlock));
    // The column window is only used by the gather / scatter phases, the sums only by the sweep: they share WRAM
    // (16 tasklets x 2.2 KB must fit beside the shared arrays and the stacks).
    static_assert(4 * kSparseWindow + 8 <= 8 * kFeatureBlock);
    buf.col = reinterpret_cast<uint32_t*>(buf.acc);
    buf.word = static_cast<int64_t*>(t.MemAlloc(16));
    fixed::Saturation saturation;
    if (a.artifact && !a.sparse && !a.feature_split) t.Fail("PIM-Opt's kernel (artifact = 1) needs feature_split = 1");
    if (a.sparse_update && (!a.sparse || a.artifact || a.mode != KernelMode::kLocalSgd || a.decay_q32 != 0)) {
      t.Fail("sparse_update = 1 needs sparse rows, pimopt's kernel, local SGD (mode 1) and no decay");
    }
    if (a.sparse && a.mode == KernelMode::kGradient) {
      ClearSums(t, a, buf);  // the host read the previous step's sums; start from zero
      t.BarrierWait();
    }
    const uint32_t blocks = a.n_pad / kFeatureBlock;
    const uint32_t bias_owner = t.nr_tasklets() - 1;
    for (uint32_t step = 0; step < a.steps; ++step) {
      // A step's rows are processed in chunks of at most kMaxRowsPerStep (the WRAM arrays); the sums of all
      // chunks collect in G in MRAM, so a step may have any number of rows.
      uint32_t step_rows = 0;
      int64_t bias_sum = 0;  // bias owner only
      for (uint32_t chunk = 0;; ++chunk) {
        if (t.me() == 0) LoadRowList(t, a, step, chunk, rows, count);
        t.BarrierWait();
        const uint32_t n = *count;
        if (n == 0) break;
        t.MramRead(a.w_offset + uint64_t{a.n_pad} * 4, buf.word, 8);
        const int32_t bias = static_cast<int32_t>(buf.word[0] & 0xFFFFFFFF);
        if ((a.feature_split && !a.sparse) || (a.artifact && a.sparse)) {
          // PIM-Opt's split ([PIM-Opt] */dpu/task.c, docs/sources.md): every tasklet takes its feature blocks (dense)
          // or its share of the non-zeros (sparse) of each sample; two barriers per sample; G is read-modified-written
          // in MRAM per sample.
          if (a.sparse) {
            SparseFeatureSplitChunk(t, a, buf, rows, d, n, bias);
          } else {
            FeatureSplitChunk(t, a, buf, rows, d, n, bias, chunk);
          }
          if (t.me() == bias_owner) {
            for (uint32_t i = 0; i < n; ++i) bias_sum += d[i];
            t.Charge(Op::kWramLoad, n);
            t.Charge(Op::kInt64Add, n);
          }
          step_rows += n;
          t.BarrierWait();
          if (n < kMaxRowsPerStep) break;
          continue;
        }
        // Phase A: scores and derivatives, one row per tasklet at a time.
        for (uint32_t i = t.me(); i < n; i += t.nr_tasklets()) {
          const uint32_t r = rows[i];
          int64_t z = a.fit_bias ? static_cast<int64_t>(bias) << fixed::kFeatureFracBits : 0;
          z += a.sparse ? SparseDot(t, a, buf, r) : DenseDot(t, a, buf, r);
          d[i] = RowDerivative(t, a, buf, r, fixed::ShiftTowardZero(z, fixed::kFeatureFracBits));
        }
        t.BarrierWait();
        // Phase B: add this chunk's d_i x_i to G.
        if (a.sparse) {
          SparseScatter(t, a, buf, rows, d, n);
        } else {
          for (uint32_t b = t.me(); b < blocks; b += t.nr_tasklets()) DenseAccumulate(t, a, buf, rows, d, n, b, chunk);
        }
        if (t.me() == bias_owner) {
          for (uint32_t i = 0; i < n; ++i) bias_sum += d[i];
          t.Charge(Op::kWramLoad, n);
          t.Charge(Op::kInt64Add, n);
        }
        step_rows += n;
        t.BarrierWait();  // the next chunk overwrites the row list and the derivatives
        if (n < kMaxRowsPerStep) break;
      }
      if (step_rows == 0) continue;
      // Output (mode 0) or update (modes 1, 2) from the sums.
      const bool updates = a.mode != KernelMode::kGradient;
      const uint64_t scale = updates ? a.lr_weight_q32 / step_rows : 0;
      if (updates) t.Charge(Op::kInt64Div, 1);
      if (t.me() == bias_owner) UpdateBias(t, a, buf, bias_sum, scale, saturation);
      if (!updates && a.artifact && !a.sparse) {
        // PIM-Opt's GA-SGD hands its dense gradients over as int32: G's blocks narrowed into V (the host pulls V).
        for (uint32_t b = t.me(); b < blocks; b += t.nr_tasklets()) NarrowBlock(t, a, buf, b, saturation);
      }
      if (updates && a.sparse_update) {
        SparseUpdate(t, a, buf, rows, count, step, scale, saturation);
      } else if (updates) {
        for (uint32_t b = t.me(); b < blocks; b += t.nr_tasklets()) {
          t.MramRead(a.g_offset + uint64_t{b} * kFeatureBlock * 8, buf.acc, 8 * kFeatureBlock);
          UpdateBlock(t, a, buf, b, scale, saturation);
          if (a.sparse) {  // the scatter of the next step adds to G: clear it (dense chunks overwrite it)
            std::fill(buf.acc, buf.acc + kFeatureBlock, 0);
            t.MramWrite(buf.acc, a.g_offset + uint64_t{b} * kFeatureBlock * 8, 8 * kFeatureBlock);
            t.Charge(Op::kWramStore, kFeatureBlock);
          }
        }
      }
      t.BarrierWait();  // the next step reads the updated model
    }
    t.Wram<uint64_t>(kSaturationsSymbol)[t.me()] += saturation.events;  // accumulates over launches
  }

 private:
  static void LoadRowList(Tasklet& t, const LinearKernelArgs& a, uint32_t step, uint32_t chunk, uint32_t* rows,
                          uint32_t* count) {
    const uint64_t first = uint64_t{chunk} * kMaxRowsPerStep;
    if (first >= a.slots_per_step) {
      *count = 0;
      return;
    }
    const uint64_t entries = std::min<uint64_t>(kMaxRowsPerStep, a.slots_per_step - first);
    const uint64_t base = a.list_offset + (uint64_t{step} * a.slots_per_step + first) * 4;
    const uint64_t bytes = Align8(entries * 4);
    for (uint64_t done = 0; done < bytes; done += 2048) {
      t.MramRead(base + done, reinterpret_cast<uint8_t*>(rows) + done,
                 static_cast<uint32_t>(std::min<uint64_t>(2048, bytes - done)));
    }
    uint32_t n = 0;
    while (n < entries && rows[n] != kNoRow) ++n;
    *count = n;
    t.Charge(Op::kWramLoad, n + 1);
    t.Charge(Op::kBranch, n + 1);
  }

  // Charges of one 8x32-bit product accumulated in 64 bits: 4 native 8x8 products, 3 shifts, a 64-bit add.
  static void ChargeProducts(Tasklet& t, uint64_t count) {
    t.Charge(Op::kMul8, 4 * count);
    t.Charge(Op::kInt32Shift, 3 * count);
    t.Charge(Op::kInt64Add, count);
  }

  // x_r . w over feature block b (DMA of the row's and the model's block, then the products).
  static int64_t DenseDotBlock(Tasklet& t, const LinearKernelArgs& a, Buffers& buf, uint32_t r, uint32_t b) {
    if (a.artifact) return ArtifactDotBlock(t, a, buf, r, b);
    t.MramRead(a.x_offset + uint64_t{r} * a.n_pad + uint64_t{b} * kFeatureBlock, buf.x, kFeatureBlock);
    t.MramRead(a.w_offset + uint64_t{b} * kFeatureBlock * 4, buf.w, 4 * kFeatureBlock);
    int64_t z = 0;
    for (uint32_t j = 0; j < kFeatureBlock; ++j) z += static_cast<int64_t>(buf.x[j]) * buf.w[j];
    t.Charge(Op::kWramLoad, 2 * kFeatureBlock);
    ChargeProducts(t, kFeatureBlock);
    t.Charge(Op::kBranch, kFeatureBlock);
    return z;
  }

  // PIM-Opt's kernel: 128 int32 Q0.31 features (into the V buffer, free while scoring) times the model block, each
  // product 32 x 32 -> 64 bits (a software 64-bit multiply on the DPU) shifted right by 31 on its own: Q.24.
  static int64_t ArtifactDotBlock(Tasklet& t, const LinearKernelArgs& a, Buffers& buf, uint32_t r, uint32_t b) {
    auto* x = reinterpret_cast<int32_t*>(buf.v);
    t.MramRead(a.x_offset + (uint64_t{r} * a.n_pad + uint64_t{b} * kFeatureBlock) * 4, x, 4 * kFeatureBlock);
    t.MramRead(a.w_offset + uint64_t{b} * kFeatureBlock * 4, buf.w, 4 * kFeatureBlock);
    int64_t z = 0;
    for (uint32_t j = 0; j < kFeatureBlock; ++j) z += ArtifactProduct(x[j], buf.w[j]);
    t.Charge(Op::kWramLoad, 2 * kFeatureBlock);
    t.Charge(Op::kInt64Mul, kFeatureBlock);
    t.Charge(Op::kInt64Shift, kFeatureBlock);
    t.Charge(Op::kInt64Add, kFeatureBlock);
    t.Charge(Op::kBranch, kFeatureBlock);
    return z;
  }

  static int64_t DenseDot(Tasklet& t, const LinearKernelArgs& a, Buffers& buf, uint32_t r) {
    int64_t z = 0;
    for (uint32_t b = 0; b < a.n_pad / kFeatureBlock; ++b) z += DenseDotBlock(t, a, buf, r, b);
    return z;
  }

  // The row's [begin, end) non-zeros.
  static std::pair<uint32_t, uint32_t> RowRange(Tasklet& t, const LinearKernelArgs& a, Buffers& buf, uint32_t r) {
    t.MramRead(a.x_offset + uint64_t{r & ~1u} * 4, buf.word, 16);
    const auto* p = reinterpret_cast<const uint32_t*>(buf.word) + (r & 1);
    return {p[0], p[1]};
  }

  // Loads non-zeros [k, k + count) (count <= kSparseWindow) into WRAM; returns pointers to the first column and value.
  static std::pair<const uint32_t*, const int8_t*> LoadWindow(Tasklet& t, const LinearKernelArgs& a, Buffers& buf,
                                                              uint32_t k, uint32_t count) {
    const uint64_t col_start = a.col_offset + uint64_t{k} * 4, col_aligned = col_start & ~uint64_t{7};
    t.MramRead(col_aligned, buf.col, static_cast<uint32_t>(Align8(col_start + 4 * uint64_t{count} - col_aligned)));
    const uint64_t val_start = a.val_offset + k, val_aligned = val_start & ~uint64_t{7};
    t.MramRead(val_aligned, buf.x, static_cast<uint32_t>(Align8(val_start + count - val_aligned)));
    return {reinterpret_cast<const uint32_t*>(reinterpret_cast<const uint8_t*>(buf.col) + (col_start - col_aligned)),
            buf.x + (val_start - val_aligned)};
  }

  static int64_t SparseDot(Tasklet& t, const LinearKernelArgs& a, Buffers& buf, uint32_t r) {
    const auto [begin, end] = RowRange(t, a, buf, r);
    return SparseDotRange(t, a, buf, begin, end);
  }

  // sum over non-zeros [begin, end) of x_k w[col_k].
  static int64_t SparseDotRange(Tasklet& t, const LinearKernelArgs& a, Buffers& buf, uint32_t begin, uint32_t end) {
    int64_t z = 0;
    for (uint32_t k = begin; k < end; k += kSparseWindow) {
      const uint32_t count = std::min(kSparseWindow, end - k);
      const auto [cols, vals] = LoadWindow(t, a, buf, k, count);
      for (uint32_t i = 0; i < count; ++i) {
        // One 8-byte aligned DMA per non-zero for its weight (PIM-Opt's Criteo kernels do the same).
        const uint32_t c = cols[i];
        const int8_t v = vals[i];
        t.MramRead(a.w_offset + uint64_t{c & ~1u} * 4, buf.word + 1, 8);
        z += static_cast<int64_t>(v) * reinterpret_cast<const int32_t*>(buf.word + 1)[c & 1];
      }
      t.Charge(Op::kWramLoad, 3 * count);
      ChargeProducts(t, count);
      t.Charge(Op::kInt32Add, 2 * count);
      t.Charge(Op::kBranch, count);
    }
    return z;
  }

  static int32_t RowDerivative(Tasklet& t, const LinearKernelArgs& a, Buffers& buf, uint32_t r, int64_t z24) {
    const LossKind loss = FromKernelLoss(a.loss);
    t.MramRead(a.y_offset + (r & ~7u), buf.word, 8);
    const int y = reinterpret_cast<const int8_t*>(buf.word)[r & 7];
    int32_t sigma = 0;
    if (loss == LossKind::kLogistic && (a.artifact || a.sigmoid_float)) {
      // PIM-Opt ([PIM-Opt] lut_exp.h, docs/sources.md): expf from a range-reduced lookup table in MRAM (one 8-byte DMA),
      // ldexpf, 1 + e, a double-precision division, conversions: all software floating point. PIM-Opt's kernel reads
      // the entry of its 2^20-entry exp table; --sigmoid float alone (pimopt's MRAM has no such table) reads one word
      // that stands for it.
      sigma = fixed::SigmoidFloat(z24);
      const uint32_t index = a.artifact ? ArtifactExpIndex(z24) : 0;
      t.MramRead(a.sigmoid_offset + uint64_t{index & ~1u} * 4, buf.word, 8);
      t.Charge(Op::kFloatConvert, 3);
      t.Charge(Op::kFloatMul, 2);
      t.Charge(Op::kFloatAdd, 1);
      t.Charge(Op::kDoubleDiv, 1);
      t.Charge(Op::kInt32Add, 12);
      t.Charge(Op::kInt32Shift, 6);
    } else if (loss == LossKind::kLogistic) {
      const int64_t index = fixed::SigmoidIndex(z24);
      if (index >= fixed::kSigmoidEntries) {
        sigma = 1 << kModelFracBits;
      } else if (index >= 0) {
        t.MramRead(a.sigmoid_offset + static_cast<uint64_t>(index & ~int64_t{1}) * 4, buf.word, 8);
        sigma = reinterpret_cast<const int32_t*>(buf.word)[index & 1];
      }
    }
    t.Charge(Op::kInt64Shift, 2);
    t.Charge(Op::kInt32Add, 8);
    t.Charge(Op::kBranch, 4);
    t.Charge(Op::kWramStore, 1);
    const int32_t weight = y > 0 ? a.positive_weight_q24 : a.negative_weight_q24;
    const int32_t d =
        a.artifact ? ArtifactDerivative(loss, sigma, z24, y) : fixed::DerivativeFromSigmoid(loss, sigma, z24, y);
    return fixed::ApplyClassWeight(d, weight);
  }

  // The middle of PIM-Opt's per-sample protocol: this tasklet's partial score `z` is published; a barrier; tasklet
  // 0 sums the partials and the bias (in the partials' unit, `shift` fractional bits above Q.24) and computes the
  // row's derivative into *d; a barrier. Returns the derivative.
  static int64_t ExchangeScore(Tasklet& t, const LinearKernelArgs& a, Buffers& buf, uint32_t r, int64_t z,
                               int32_t bias, int shift, int32_t* d) {
    auto* partials = t.Wram<int64_t>(kPartialsSymbol);
    partials[t.me()] = z;
    t.BarrierWait();
    if (t.me() == 0) {
      int64_t total = a.fit_bias ? static_cast<int64_t>(bias) << shift : 0;
      for (uint32_t k = 0; k < t.nr_tasklets(); ++k) total += partials[k];
      t.Charge(Op::kInt64Add, t.nr_tasklets());
      *d = RowDerivative(t, a, buf, r, fixed::ShiftTowardZero(total, shift));
    }
    t.BarrierWait();
    return *d;
  }

  // PIM-Opt's work split for one chunk of dense rows: per sample, each tasklet's feature blocks give a partial
  // score (barrier), tasklet 0 finishes the score and the derivative (barrier), each tasklet adds d x to its blocks
  // of G in MRAM.
  static void FeatureSplitChunk(Tasklet& t, const LinearKernelArgs& a, Buffers& buf, const uint32_t* rows, int32_t* d,
                                uint32_t n, int32_t bias, uint32_t chunk) {
    const uint32_t blocks = a.n_pad / kFeatureBlock;
    for (uint32_t i = 0; i < n; ++i) {
      const uint32_t r = rows[i];
      int64_t z = 0;
      for (uint32_t b = t.me(); b < blocks; b += t.nr_tasklets()) z += DenseDotBlock(t, a, buf, r, b);
      // pimopt's partials are Q.31 (Q0.7 x Q.24), the artifact's already Q.24 (shifted per product).
      const int64_t di = ExchangeScore(t, a, buf, r, z, bias, a.artifact ? 0 : fixed::kFeatureFracBits, &d[i]);
      for (uint32_t b = t.me(); b < blocks; b += t.nr_tasklets()) {
        const uint64_t g_address = a.g_offset + uint64_t{b} * kFeatureBlock * 8;
        if (chunk == 0 && i == 0) {
          std::fill(buf.acc, buf.acc + kFeatureBlock, 0);
        } else {
          t.MramRead(g_address, buf.acc, 8 * kFeatureBlock);
        }
        if (a.artifact) {
          // PIM-Opt's kernel: x d per feature, shifted on its own, -1 dropped; LR multiplies (64-bit), the hinge's
          // d is a class-weighted +-1 that the artifact applies with shifts.
          auto* x = reinterpret_cast<int32_t*>(buf.w);  // the model block is not needed here
          t.MramRead(a.x_offset + (uint64_t{r} * a.n_pad + uint64_t{b} * kFeatureBlock) * 4, x, 4 * kFeatureBlock);
          for (uint32_t j = 0; j < kFeatureBlock; ++j) buf.acc[j] += ArtifactGradientTerm(x[j], di);
          t.Charge(a.loss == KernelLoss::kLogistic ? Op::kInt64Mul : Op::kInt64Shift, kFeatureBlock);
          t.Charge(Op::kInt64Shift, kFeatureBlock);
          t.Charge(Op::kInt64Add, 2 * kFeatureBlock);  // the -1 test and the accumulation
          t.Charge(Op::kBranch, kFeatureBlock);
        } else {
          t.MramRead(a.x_offset + uint64_t{r} * a.n_pad + uint64_t{b} * kFeatureBlock, buf.x, kFeatureBlock);
          for (uint32_t j = 0; j < kFeatureBlock; ++j) buf.acc[j] += di * buf.x[j];
          ChargeProducts(t, kFeatureBlock);
        }
        t.Charge(Op::kWramLoad, 2 * kFeatureBlock);
        t.Charge(Op::kWramStore, kFeatureBlock);
        t.Charge(Op::kBranch, kFeatureBlock);
        t.MramWrite(buf.acc, g_address, 8 * kFeatureBlock);
      }
    }
  }

  // PIM-Opt's split on sparse rows (its Criteo kernels): the row's non-zeros are dealt out to the tasklets in
  // contiguous runs (39 non-zeros over 16 tasklets: 3 each for tasklets 0-6, 2 for 7-15); each tasklet reads only its
  // own column numbers and values, one 8-byte DMA per weight; a barrier; tasklet 0 finishes the score and the
  // derivative; a barrier; each tasklet adds d x to its columns' sums in MRAM (a row's columns are distinct: no race).
  static void SparseFeatureSplitChunk(Tasklet& t, const LinearKernelArgs& a, Buffers& buf, const uint32_t* rows,
                                      int32_t* d, uint32_t n, int32_t bias) {
    for (uint32_t i = 0; i < n; ++i) {
      const uint32_t r = rows[i];
      const auto [begin, end] = RowRange(t, a, buf, r);
      const uint32_t nnz = end - begin, base = nnz / t.nr_tasklets(), extra = nnz % t.nr_tasklets();
      const uint32_t mine = base + (t.me() < extra ? 1 : 0);
      const uint32_t first = begin + t.me() * base + std::min(t.me(), extra);
      t.Charge(Op::kInt32Add, 6);
      t.Charge(Op::kInt32Mul, 2);
      const int64_t z = SparseDotRange(t, a, buf, first, first + mine);
      const int64_t di = ExchangeScore(t, a, buf, r, z, bias, fixed::kFeatureFracBits, &d[i]);
      for (uint32_t k = first; k < first + mine; k += kSparseWindow) {
        const uint32_t count = std::min(kSparseWindow, first + mine - k);
        const auto [cols, vals] = LoadWindow(t, a, buf, k, count);
        for (uint32_t e = 0; e < count; ++e) {
          const uint64_t address = a.g_offset + uint64_t{cols[e]} * 8;
          t.MramRead(address, buf.word + 1, 8);
          buf.word[1] += di * vals[e];
          t.MramWrite(buf.word + 1, address, 8);
        }
        t.Charge(Op::kWramLoad, 2 * count);
        ChargeProducts(t, count);
        t.Charge(Op::kBranch, count);
      }
    }
  }

  // Adds this chunk's sums of feature block b to G (the first chunk of a step writes them).
  static void DenseAccumulate(Tasklet& t, const LinearKernelArgs& a, Buffers& buf, const uint32_t* rows,
                              const int32_t* d, uint32_t n, uint32_t b, uint32_t chunk) {
    const uint64_t g_address = a.g_offset + uint64_t{b} * kFeatureBlock * 8;
    if (chunk == 0) {
      std::fill(buf.acc, buf.acc + kFeatureBlock, 0);
    } else {
      t.MramRead(g_address, buf.acc, 8 * kFeatureBlock);
    }
    for (uint32_t i = 0; i < n; ++i) {
      t.MramRead(a.x_offset + uint64_t{rows[i]} * a.n_pad + uint64_t{b} * kFeatureBlock, buf.x, kFeatureBlock);
      const int64_t di = d[i];
      for (uint32_t j = 0; j < kFeatureBlock; ++j) buf.acc[j] += di * buf.x[j];
    }
    // Per feature and row: 2 loads, the product, an accumulator store, loop control.
    t.Charge(Op::kWramLoad, 2ull * n * kFeatureBlock);
    ChargeProducts(t, uint64_t{n} * kFeatureBlock);
    t.Charge(Op::kWramStore, uint64_t{n} * kFeatureBlock);
    t.Charge(Op::kBranch, uint64_t{n} * kFeatureBlock);
    t.MramWrite(buf.acc, g_address, 8 * kFeatureBlock);
  }

  // Walks the non-zeros of rows[0..n) window by window (RowRange, then LoadWindow): visit(i, cols, vals, count)
  // for each window of row i.
  template <typename Visit>
  static void ForEachWindow(Tasklet& t, const LinearKernelArgs& a, Buffers& buf, const uint32_t* rows, uint32_t n,
                            Visit&& visit) {
    for (uint32_t i = 0; i < n; ++i) {
      const auto [begin, end] = RowRange(t, a, buf, rows[i]);
      for (uint32_t k = begin; k < end; k += kSparseWindow) {
        const uint32_t count = std::min(kSparseWindow, end - k);
        const auto [cols, vals] = LoadWindow(t, a, buf, k, count);
        visit(i, cols, vals, count);
      }
    }
  }

  // G[col] += d_i x_ij for the non-zeros of the step's rows whose column this tasklet owns (col % T == me).
  static void SparseScatter(Tasklet& t, const LinearKernelArgs& a, Buffers& buf, const uint32_t* rows, const int32_t* d,
                            uint32_t n) {
    ForEachWindow(t, a, buf, rows, n, [&](uint32_t i, const uint32_t* cols, const int8_t* vals, uint32_t count) {
      uint32_t mine = 0;
      for (uint32_t e = 0; e < count; ++e) {
        if (cols[e] % t.nr_tasklets() != t.me()) continue;
        ++mine;
        const uint64_t address = a.g_offset + uint64_t{cols[e]} * 8;
        t.MramRead(address, buf.word + 1, 8);
        buf.word[1] += static_cast<int64_t>(d[i]) * vals[e];
        t.MramWrite(buf.word + 1, address, 8);
      }
      t.Charge(Op::kWramLoad, 2 * count);
      t.Charge(Op::kInt32Logic, count);  // the ownership test
      t.Charge(Op::kBranch, count);
      ChargeProducts(t, mine);
    });
  }

  // Local SGD without decay on sparse rows: only the coordinates the step's rows touch move. Each tasklet takes the
  // coordinates whose 8-byte model word it owns ((col / 2) % T: two tasklets never write one word), updates each
  // from its sum in G as UpdateBlock would, and clears the sum; a column met again in the step finds its sum
  // cleared and is skipped (an exact zero sum leaves the coordinate as it is either way). G is zero again after it,
  // as the dense sweep leaves it.
  static void SparseUpdate(Tasklet& t, const LinearKernelArgs& a, Buffers& buf, uint32_t* rows, uint32_t* count,
                           uint32_t step, uint64_t scale, fixed::Saturation& saturation) {
    for (uint32_t chunk = 0;; ++chunk) {
      t.BarrierWait();  // every tasklet is done with the row list of the phase before
      if (t.me() == 0) LoadRowList(t, a, step, chunk, rows, count);
      t.BarrierWait();
      const uint32_t n = *count;
      ForEachWindow(t, a, buf, rows, n, [&](uint32_t, const uint32_t* cols, const int8_t*, uint32_t window) {
        uint32_t updated = 0, cleared = 0;
        for (uint32_t e = 0; e < window; ++e) {
          const uint32_t c = cols[e];
          if ((c >> 1) % t.nr_tasklets() != t.me()) continue;
          const uint64_t g_address = a.g_offset + uint64_t{c} * 8;
          t.MramRead(g_address, buf.word + 1, 8);
          const int64_t g = buf.word[1];
          ++cleared;
          if (g == 0) continue;
          const uint64_t w_address = a.w_offset + uint64_t{c & ~1u} * 4;
          t.MramRead(w_address, buf.word + 1, 8);
          int32_t& w = reinterpret_cast<int32_t*>(buf.word + 1)[c & 1];
          w = fixed::SaturateModel(fixed::SgdUpdate(w, g, scale, w, a.decay_q32), saturation);
          t.MramWrite(buf.word + 1, w_address, 8);
          buf.word[1] = 0;
          t.MramWrite(buf.word + 1, g_address, 8);
          ++updated;
        }
        t.Charge(Op::kWramLoad, 2 * window + cleared);
        t.Charge(Op::kInt32Shift, window);  // the ownership test: a shift, a modulo by T (a mask or a multiply)
        t.Charge(Op::kInt32Logic, window);
        t.Charge(Op::kBranch, window + cleared);
        // Per updated coordinate, as UpdateBlock's: the step's multiply, shifts, adds, saturation checks, loads
        // and stores (no decay).
        t.Charge(fixed::ScaleShift(scale) >= 0 ? Op::kInt64Shift : Op::kInt64Mul, updated);
        t.Charge(Op::kInt64Shift, updated);
        t.Charge(Op::kInt64Add, 3 * updated);
        t.Charge(Op::kBranch, 2 * updated);
        t.Charge(Op::kWramLoad, 2 * updated);
        t.Charge(Op::kWramStore, 2 * updated);
      });
      if (n < kMaxRowsPerStep) break;
    }
  }

  // PIM-Opt's GA-SGD output on dense data: G's block b (int64, Q.31) as int32 Q.24 (toward zero, saturated) in V.
  static void NarrowBlock(Tasklet& t, const LinearKernelArgs& a, Buffers& buf, uint32_t b,
                          fixed::Saturation& saturation) {
    t.MramRead(a.g_offset + uint64_t{b} * kFeatureBlock * 8, buf.acc, 8 * kFeatureBlock);
    for (uint32_t j = 0; j < kFeatureBlock; ++j) {
      buf.w[j] = fixed::SaturateModel(fixed::ShiftTowardZero(buf.acc[j], fixed::kFeatureFracBits), saturation);
    }
    t.Charge(Op::kWramLoad, kFeatureBlock);
    t.Charge(Op::kInt64Shift, kFeatureBlock);
    t.Charge(Op::kBranch, 2 * kFeatureBlock);
    t.Charge(Op::kWramStore, kFeatureBlock);
    t.MramWrite(buf.w, a.v_offset + uint64_t{b} * kFeatureBlock * 4, 4 * kFeatureBlock);
  }

  static void ClearSums(Tasklet& t, const LinearKernelArgs& a, Buffers& buf) {
    std::fill(buf.acc, buf.acc + kFeatureBlock, 0);
    for (uint32_t b = t.me(); b < a.n_pad / kFeatureBlock; b += t.nr_tasklets()) {
      t.MramWrite(buf.acc, a.g_offset + uint64_t{b} * kFeatureBlock * 8, 8 * kFeatureBlock);
    }
  }

  // Local and proximal SGD: updates model block b from the sums in buf.acc (the gradient mode never calls this).
  static void UpdateBlock(Tasklet& t, const LinearKernelArgs& a, Buffers& buf, uint32_t b, uint64_t scale,
                          fixed::Saturation& saturation) {
    t.MramRead(a.w_offset + uint64_t{b} * kFeatureBlock * 4, buf.w, 4 * kFeatureBlock);
    const bool proximal = a.mode == KernelMode::kProximalSgd;
    if (proximal) t.MramRead(a.v_offset + uint64_t{b} * kFeatureBlock * 4, buf.v, 4 * kFeatureBlock);
    for (uint32_t j = 0; j < kFeatureBlock; ++j) {
      const int64_t base = proximal ? int64_t{buf.w[j]} - buf.v[j] : int64_t{buf.w[j]};
      buf.w[j] = fixed::SaturateModel(fixed::SgdUpdate(buf.w[j], buf.acc[j], scale, base, a.decay_q32), saturation);
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
    t.MramWrite(buf.w, a.w_offset + uint64_t{b} * kFeatureBlock * 4, 4 * kFeatureBlock);
  }

  // The bias: G_b = sum_i d_i (in G's unit), output (gradient mode) or update (no L2 on the bias).
  static void UpdateBias(Tasklet& t, const LinearKernelArgs& a, Buffers& buf, int64_t d_sum, uint64_t scale,
                         fixed::Saturation& saturation) {
    const int64_t g = d_sum << fixed::kFeatureFracBits;  // Q.24 -> Q.31, the unit of G
    if (a.mode == KernelMode::kGradient) {
      buf.word[0] = g;
      t.MramWrite(buf.word, a.g_offset + uint64_t{a.n_pad} * 8, 8);
      if (a.artifact && !a.sparse) {  // the int32 output: the bias after the narrowed model-sized gradient
        buf.word[0] = static_cast<uint32_t>(
            fixed::SaturateModel(fixed::ShiftTowardZero(g, fixed::kFeatureFracBits), saturation));
        t.MramWrite(buf.word, a.v_offset + uint64_t{a.n_pad} * 4, 8);
      }
      return;
    }
    t.MramRead(a.w_offset + uint64_t{a.n_pad} * 4, buf.word, 8);
    const int32_t old = static_cast<int32_t>(buf.word[0] & 0xFFFFFFFF);
    int64_t base = 0;
    if (a.mode == KernelMode::kProximalSgd) {
      t.MramRead(a.v_offset + uint64_t{a.n_pad} * 4, buf.word + 1, 8);
      base = int64_t{old} - static_cast<int32_t>(buf.word[1] & 0xFFFFFFFF);
    }
    int32_t updated = fixed::SaturateModel(fixed::SgdUpdate(old, g, scale, base, a.decay_q32), saturation);
    if (!a.fit_bias) updated = 0;
    buf.word[0] = static_cast<uint32_t>(updated);
    t.MramWrite(buf.word, a.w_offset + uint64_t{a.n_pad} * 4, 8);
    t.Charge(Op::kInt64Mul, 2);
    t.Charge(Op::kInt64Add, 3);
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

int32_t ArtifactDerivative(LossKind loss, int32_t sigma, int64_t z_q24, int y) {
  if (loss == LossKind::kLogistic) return fixed::DerivativeFromSigmoid(loss, sigma, z_q24, y);
  const int64_t margin = y > 0 ? z_q24 : -z_q24;
  return margin < kArtifactHingeMarginQ24 ? -y * (1 << fixed::kModelFracBits) : 0;
}

std::shared_ptr<pim::Kernel> MakeLinearKernel() { return std::make_shared<LinearKernel>(); }

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

}  // namespace pimopt::pimbackend
