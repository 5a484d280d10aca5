// The linear kernel's building blocks (linear_kernel.h): its configuration, WRAM buffers and the row and model
// accesses every mode shares, written with the emulator's operand types. Internal to the PIM backend: the linear
// kernel (linear_kernel.cc) and its dual coordinate mode (linear_kernel_dual.cc) include it.
#pragma once

#include <utility>

#include "pimopt/backends/pim/linear_kernel.h"

namespace pimopt::pimbackend::kernel_ops {

using fixed::kModelFracBits;
using pim::Cast;
using pim::i32;
using pim::i64;
using pim::i8;
using pim::Load;
using pim::Tasklet;
using pim::u32;
using pim::u64;
using pim::WramPtr;

// The kernel is written with the emulator's operand types (pim/dpu_types.h): every add, load, compare-and-branch,
// multiply and division it does is counted as the DPU executes it, by the same accounting that the validation
// against PrIM's hardware times checks (docs/pim-emulator.md). Conventions, as the DPU compiler would have them:
//  - the launch's arguments are read from WRAM once into registers (Config); its configuration (mode, loss,
//    layout flags) is decided once per launch, as if the kernel were built for it (branches on it are not
//    counted); the number of tasklets is NR_TASKLETS, a compile-time constant;
//  - MRAM addresses are 32-bit (an MRAM bank is 64 MB): the row's address is a 32-bit multiply (__mulsi3, costed
//    by its operands);
//  - loops over run-time counts and over a block's 128 features are not unrolled: each iteration adds and
//    compares its index, and each indexed WRAM access computes its address.
struct Config {
  KernelMode mode = KernelMode::kGradient;
  KernelLoss loss = KernelLoss::kLogistic;
  bool artifact = false, sparse = false, fit_bias = false, float_sigmoid = false, feature_split = false,
       sparse_update = false;
  u32 n_pad, blocks, steps, slots_per_step;
  u32 x, y, w, v, g, list, sigmoid, col, val;  // MRAM offsets
  u32 dual = 0, row_params = 0;                // dual ascent's regions (read only in that mode)
  u64 lr_weight_q32, decay_q32;
  i32 positive_weight_q24, negative_weight_q24;
};

inline Config LoadConfig(Tasklet& t, const LinearKernelArgs* a) {
  Config c;
  c.mode = a->mode;
  c.loss = a->loss;
  c.artifact = a->artifact != 0;
  c.sparse = a->sparse != 0;
  c.fit_bias = a->fit_bias != 0;
  c.float_sigmoid = a->sigmoid_float != 0;
  c.feature_split = a->feature_split != 0;
  c.sparse_update = a->sparse_update != 0;
  for (uint64_t offset : {a->x_offset, a->y_offset, a->w_offset, a->v_offset, a->g_offset, a->list_offset,
                          a->sigmoid_offset, a->col_offset, a->val_offset}) {
    if (offset > 0xFFFFFFFFu) t.Fail("an MRAM offset beyond 4 GiB: the kernel's addresses are 32-bit");
  }
  c.n_pad = Load(&a->n_pad);
  c.blocks = c.n_pad / kFeatureBlock;
  c.steps = Load(&a->steps);
  c.slots_per_step = Load(&a->slots_per_step);
  c.x = Cast<uint32_t>(Load(&a->x_offset));
  c.y = Cast<uint32_t>(Load(&a->y_offset));
  c.w = Cast<uint32_t>(Load(&a->w_offset));
  c.v = Cast<uint32_t>(Load(&a->v_offset));
  c.g = Cast<uint32_t>(Load(&a->g_offset));
  c.list = Cast<uint32_t>(Load(&a->list_offset));
  c.sigmoid = Cast<uint32_t>(Load(&a->sigmoid_offset));
  c.col = Cast<uint32_t>(Load(&a->col_offset));
  c.val = Cast<uint32_t>(Load(&a->val_offset));
  c.lr_weight_q32 = Load(&a->lr_weight_q32);
  c.decay_q32 = Load(&a->decay_q32);
  c.positive_weight_q24 = Load(&a->positive_weight_q24);
  c.negative_weight_q24 = Load(&a->negative_weight_q24);
  if (c.mode == KernelMode::kDualAscent) {  // the mode's regions: dual_offset and row_params_offset share v_offset's
    c.dual = c.v;                           // and g_offset's places (linear_kernel_args.h), already read above
    c.row_params = c.g;
  }
  return c;
}

// Per-tasklet WRAM buffers.
struct Buffers {
  WramPtr<int8_t> x;     // a block of a dense row, or a window of sparse values
  WramPtr<int32_t> w;    // a model block
  WramPtr<int32_t> v;    // a proximal-target block
  WramPtr<int64_t> acc;  // a block of gradient sums
  WramPtr<uint8_t> col;  // a window of sparse column numbers (bytes: a window may start mid-word)
  WramPtr<int64_t> word;  // 16 bytes for small DMAs
};

// Products of int8 features and int32 weights with the DPU's one multiplier, 8 x 8 bits ([PIM-ML] builds its int8
// products from it): a weight's four bytes, each multiplied on its own. ByteLanes sums the products of a dot
// product byte by byte (each sum exact in 32 bits for up to 128 products: |x b| < 2^15) and shifts them into place
// once; Times forms one product x d with d's bytes taken apart beforehand (ByteSplit).
struct ByteLanes {
  i32 l0 = 0, l1 = 0, l2 = 0, l3 = 0;
  [[gnu::always_inline]] void Add(i8 x, i32 w) {
    l0 += x * Cast<uint8_t>(w);
    l1 += x * Cast<uint8_t>(w >> 8);
    l2 += x * Cast<uint8_t>(w >> 16);
    l3 += x * Cast<int8_t>(w >> 24);
  }
  i64 Sum() const {
    return (Cast<int64_t>(l3) << 24) + (Cast<int64_t>(l2) << 16) + (Cast<int64_t>(l1) << 8) + Cast<int64_t>(l0);
  }
};
struct ByteSplit {
  pim::u8 b0, b1, b2;
  i8 b3;
  explicit ByteSplit(i32 d)
      : b0(Cast<uint8_t>(d)), b1(Cast<uint8_t>(d >> 8)), b2(Cast<uint8_t>(d >> 16)), b3(Cast<int8_t>(d >> 24)) {}
};
// x d = (x b3 2^8 + x b2) 2^16 + (x b1 2^8 + x b0); both halves exact in 32 bits.
[[gnu::always_inline]] inline i64 Times(i8 x, const ByteSplit& d) {
  const i32 low = ((x * d.b1) << 8) + x * d.b0;
  const i32 high = ((x * d.b3) << 8) + x * d.b2;
  return (Cast<int64_t>(high) << 16) + Cast<int64_t>(low);
}

// (v s) / 2^32 toward zero, the bits of fixed::MulScale's 128-bit product, from 32 x 32 -> 64-bit multiplies (the
// DPU has no wider one): v = vh 2^32 + vl, s = sh 2^32 + sl; the products with sh only when sh is not 0.
[[gnu::always_inline]] inline i64 MulScale(i64 v, u64 s) {
  const u64 vl = Cast<uint64_t>(Cast<uint32_t>(v));
  const i64 vh = v >> 32;
  const u64 sl = Cast<uint64_t>(Cast<uint32_t>(s));
  const u64 sh = s >> 32;
  const u64 ll = vl * sl;
  i64 p = Cast<int64_t>(ll >> 32) + vh * Cast<int64_t>(sl);
  if (sh != 0u) p += Cast<int64_t>(vl * sh) + ((vh * Cast<int64_t>(sh)) << 32);
  // Toward zero: a negative product with a fraction is rounded up.
  if (v < 0 && (ll & 0xFFFFFFFFu) != 0u) p += 1;
  return p;
}

// Multiplying by a Q0.32 factor, decided once per step: zero, a shift when the factor is 2^-k (k <= 32: equal to
// fixed::MulScale's product then), else MulScale.
class Scaler {
 public:
  explicit Scaler(u64 scale) : scale_(scale) {
    zero_ = scale == 0u;
    // 2^m has 63 - m leading zeros: the shift 32 - m is their count less 31.
    if (!zero_ && (scale & (scale - 1u)) == 0u && scale <= (uint64_t{1} << fixed::kScaleFracBits)) {
      shift_ = static_cast<int>((pim::CountLeadingZeros(scale) - 31u).value());
    }
  }
  [[gnu::always_inline]] i64 operator()(i64 v) const {
    if (zero_) return 0;
    if (shift_ >= 0) return fixed::ShiftTowardZero(v, shift_);
    return MulScale(v, scale_);
  }

 private:
  u64 scale_;
  bool zero_ = false;
  int shift_ = -1;
};

inline i64 ArtifactDotBlock(Tasklet& t, const Config& c, Buffers& buf, u32 r, u32 b);
inline i64 SparseDotRange(Tasklet& t, const Config& c, Buffers& buf, u32 begin, u32 end);

inline void LoadRowList(Tasklet& t, const Config& c, u32 step, u32 chunk, WramPtr<uint32_t> rows,
                        WramPtr<uint32_t> count) {
  const u32 first = chunk * kMaxRowsPerStep;
  if (first >= c.slots_per_step) {
    count[0] = 0;
    return;
  }
  const u32 left = c.slots_per_step - first;
  const u32 entries = left < kMaxRowsPerStep ? left : u32(kMaxRowsPerStep);
  const u32 base = c.list + (step * c.slots_per_step + first) * 4;
  const u32 bytes = (entries * 4 + 7u) & ~7u;
  const WramPtr<uint8_t> to = rows.As<uint8_t>();
  for (u32 done = 0; done < bytes; done += 2048) {
    const u32 rest = bytes - done;
    t.MramRead(base + done, to + done, rest < 2048u ? rest : u32(2048));
  }
  u32 n = 0;
  while (n < entries && rows[n] != kNoRow) ++n;
  count[0] = n;
}

// x_r . w over feature block b: the row's block and the model's by DMA, then the products.
inline i64 DenseDotBlock(Tasklet& t, const Config& c, Buffers& buf, u32 r, u32 b) {
  if (c.artifact) return ArtifactDotBlock(t, c, buf, r, b);
  t.MramRead(c.x + r * c.n_pad + b * kFeatureBlock, buf.x, kFeatureBlock);
  t.MramRead(c.w + b * (kFeatureBlock * 4), buf.w, 4 * kFeatureBlock);
  ByteLanes z;
  for (u32 j = 0; j < kFeatureBlock; ++j) z.Add(buf.x[j], buf.w[j]);
  return z.Sum();
}

// PIM-Opt's kernel: 128 int32 Q0.31 features (into the V buffer, free while scoring) times the model block, each
// product 32 x 32 -> 64 bits (a software 64-bit multiply on the DPU) shifted right by 31 on its own: Q.24.
inline i64 ArtifactDotBlock(Tasklet& t, const Config& c, Buffers& buf, u32 r, u32 b) {
  const WramPtr<int32_t> x = buf.v;
  t.MramRead(c.x + (r * c.n_pad + b * kFeatureBlock) * 4, x, 4 * kFeatureBlock);
  t.MramRead(c.w + b * (kFeatureBlock * 4), buf.w, 4 * kFeatureBlock);
  i64 z = 0;
  for (u32 j = 0; j < kFeatureBlock; ++j) z += ArtifactProduct(x[j].load(), buf.w[j].load());
  return z;
}

inline i64 DenseDot(Tasklet& t, const Config& c, Buffers& buf, u32 r) {
  i64 z = 0;
  for (u32 b = 0; b < c.blocks; ++b) z += DenseDotBlock(t, c, buf, r, b);
  return z;
}

// The row's [begin, end) non-zeros.
inline std::pair<u32, u32> RowRange(Tasklet& t, const Config& c, Buffers& buf, u32 r) {
  t.MramRead(c.x + (r & ~1u) * 4, buf.word, 16);
  const WramPtr<uint32_t> p = buf.word.As<uint32_t>();
  const u32 odd = r & 1u;
  return {p[odd], p[odd + 1u]};
}

// Loads non-zeros [k, k + count) (count <= kSparseWindow) into WRAM; returns their column numbers and values.
inline std::pair<WramPtr<uint32_t>, WramPtr<int8_t>> LoadWindow(Tasklet& t, const Config& c, Buffers& buf, u32 k,
                                                                 u32 count) {
  const u32 col_start = c.col + k * 4, col_aligned = col_start & ~7u;
  t.MramRead(col_aligned, buf.col, (col_start + count * 4 - col_aligned + 7u) & ~7u);
  const u32 val_start = c.val + k, val_aligned = val_start & ~7u;
  t.MramRead(val_aligned, buf.x, (val_start + count - val_aligned + 7u) & ~7u);
  return {(buf.col + (col_start - col_aligned)).As<uint32_t>(), buf.x + (val_start - val_aligned)};
}

inline i64 SparseDot(Tasklet& t, const Config& c, Buffers& buf, u32 r) {
  const auto [begin, end] = RowRange(t, c, buf, r);
  return SparseDotRange(t, c, buf, begin, end);
}

// The model's weight of column `col` (one 8-byte aligned DMA per non-zero, as PIM-Opt's Criteo kernels).
inline i32 Weight(Tasklet& t, const Config& c, Buffers& buf, u32 col) {
  const WramPtr<int64_t> word = buf.word + 1;
  t.MramRead(c.w + (col & ~1u) * 4, word, 8);
  return word.As<int32_t>()[col & 1u];
}

// Walks non-zeros [begin, end) window by window (LoadWindow, at most kSparseWindow at a time):
// visit(cols, vals, count) for each window.
template <typename Visit>
inline void ForEachWindowIn(Tasklet& t, const Config& c, Buffers& buf, u32 begin, u32 end, Visit&& visit) {
  for (u32 k = begin; k < end; k += kSparseWindow) {
    const u32 rest = end - k;
    const u32 count = rest < kSparseWindow ? rest : u32(kSparseWindow);
    const auto [cols, vals] = LoadWindow(t, c, buf, k, count);
    visit(cols, vals, count);
  }
}

// sum over non-zeros [begin, end) of x_k w[col_k].
inline i64 SparseDotRange(Tasklet& t, const Config& c, Buffers& buf, u32 begin, u32 end) {
  i64 z = 0;
  ForEachWindowIn(t, c, buf, begin, end, [&](WramPtr<uint32_t> cols, WramPtr<int8_t> vals, u32 count) {
    ByteLanes window;
    for (u32 i = 0; i < count; ++i) window.Add(vals[i], Weight(t, c, buf, cols[i]));
    z += window.Sum();
  });
  return z;
}

// sigma(z) from the fixed-point table in MRAM (one 8-byte DMA; none outside the table's range).
inline i32 TableSigmoid(Tasklet& t, const Config& c, Buffers& buf, i64 z24) {
  const i64 index = fixed::SigmoidIndex(z24);
  if (index >= fixed::kSigmoidEntries) return i32(1 << kModelFracBits);
  if (index < 0) return i32(0);
  const u32 entry = Cast<uint32_t>(index);
  t.MramRead(c.sigmoid + (entry & ~1u) * 4, buf.word, 8);
  return buf.word.As<int32_t>()[entry & 1u];
}

// The label of row r (+1 / -1), from the Y region (one 8-byte DMA).
inline i32 RowLabel(Tasklet& t, const Config& c, Buffers& buf, u32 r) {
  t.MramRead(c.y + (r & ~7u), buf.word, 8);
  return buf.word.As<int8_t>()[r & 7u].load();
}

// Dual ascent (mode 3, linear_kernel_dual.cc): one dual coordinate step per step's row, the tasklets sharing each
// dense row's feature blocks (sparse rows: tasklet 0 alone); `shared` is the WRAM word every tasklet reads the
// step's coefficient from (kDualCoefficientSymbol).
void DualAscentPass(Tasklet& t, const Config& c, Buffers& buf, WramPtr<uint32_t> rows, WramPtr<uint32_t> count,
                    WramPtr<int64_t> partials, WramPtr<int64_t> shared, fixed::Saturation& saturation);

}  // namespace pimopt::pimbackend::kernel_ops
