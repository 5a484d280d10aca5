// The DPU kernel that trains linear models on the emulated UPMEM system, and its host-side fixed-point reference.
//
// One kernel, four modes (LinearKernelArgs::mode, a KernelMode):
//   gradient: G = sum over the listed rows of d_i x_i (and G_b = sum d_i), at the model in MRAM (GA-SGD, MB-SGD)
//   local SGD: `steps` mini-batch steps x <- x - lr_w/|beta| G - lr*l2 x  (MA-SGD, SGD)
//   proximal local SGD: x <- x - lr_w/|beta| G - lr*rho (x - v)          (ADMM's x-update; v = z - u_k)
//   dual ascent: per listed row, one dual coordinate step (DualStep below) on the row's dual in MRAM and
//     x <- x + coef a_i                                                   (CoCoA's local solver)
// with d_i = c_i * dl/dz(z_i, y_i) in Q.24 (fixed_point.h), features int8 Q0.7, model int32 Q8.24, sums int64.
//
// Tasklet work split (differs from PIM-Opt, which splits each sample's features over the tasklets and pays two
// barriers per sample): phase A scores the step's rows sample-parallel (each tasklet a whole row, no barrier per
// sample); phase B accumulates and updates feature-parallel (each tasklet owns blocks of 128 features and streams
// those blocks of the step's rows). Two barriers per *step* instead of two per *sample*; each row is read twice
// from MRAM (once per phase).
//
// Sparse rows (CSR, int8 values) use the same phases: phase A gathers w[col] with one 8-byte DMA per non-zero
// (as PIM-Opt's Criteo kernels); phase B scatters d_i x_ij into the int64 sums G in MRAM, tasklet t taking the
// columns with col % T == t (no two tasklets touch the same sum: no race, unlike PIM-Opt Q10), then sweeps the
// whole model once per step (the L2 / proximal decay touches every weight, as in PIM-Opt: cost grows with the
// model size, not with the non-zeros) and clears G for the next step.
//
// The host/DPU contract is typed: modes and losses are enums of fixed values, LinearKernelArgs has the layout of the
// plain-C header linear_kernel_args.h (which a DPU program could include; checked field by field),
// the WRAM variables are named by the constants below (host and kernel use the same ones), and the kernel declares
// the WRAM heap each tasklet takes, so a tasklet count whose buffers do not fit is refused at load.
//
// PIM-Opt's kernel (args.artifact = 1, `--kernel pim-opt`, docs/pim-backend.md "PIM-Opt's kernel"): dense
// features int32 with 31 fractional bits (4 bytes each, as [PIM-Opt]'s uint32 Q1.31), every product 32 x 32 -> 64
// bits shifted right by 31 on its own (truncation per product, before the sum), each gradient term x d shifted
// on its own and dropped when it is -1 (the artifact's "-1 rounding check"), the feature split with two barriers per
// sample (sparse rows: each row's non-zeros dealt out to the tasklets in contiguous runs), tasklet 0's software-float
// sigmoid reading an exp table of 2^20 floats in MRAM, the hinge active below
// a margin of 2^-15 (not 1), and GA-SGD's dense gradients handed to the host as int32 (Q.24, saturated) in the V
// region. The model keeps pimopt's 24 fractional bits; the sums G stay int64 in MRAM; sparse rows keep the CSR
// layout below.
//
// MRAM heap layout (LinearLayout): dense X rows x n_pad int8, or sparse row pointers (rows + 1) uint32, columns
// nnz uint32, values nnz int8 | Y rows int8 | W (n_pad + 8) int32 (bias at n_pad) | V same | G (n_pad + 8) int64 |
// row lists (uint32, kNoRow = padding) | sigmoid table (kSigmoidEntries int32).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <type_traits>
#include <vector>

#include "pimopt/backends/pim/linear_kernel_args.h"
#include "pimopt/fixed/fixed_point.h"
#include "pimopt/pim/kernel.h"

namespace pimopt::pimbackend {

inline constexpr uint32_t kFeatureBlock = 128;     // features per phase-B block and per DMA of a row
inline constexpr uint32_t kMaxRowsPerStep = 1024;  // WRAM holds the step's row numbers and derivatives
inline constexpr uint32_t kNoRow = 0xFFFFFFFFu;
inline constexpr uint32_t kSparseWindow = 128;  // non-zeros per column / value DMA window
inline constexpr uint32_t kMaxTasklets = 24;    // per-tasklet WRAM arrays ("partials", "saturations") hold this many
// PIM-Opt's kernel: the hinge is active while y z < 2^-15 (CONSTRAINT = 0x00010000 in Q1.31), i.e. 2^9 in Q.24; its
// exp table has 2^20 float entries (4 MiB, broadcast once to every DPU).
inline constexpr int64_t kArtifactHingeMarginQ24 = int64_t{1} << 9;
inline constexpr uint32_t kArtifactExpTableEntries = 1u << 20;
inline constexpr int kArtifactFeatureFracBits = 31;

// The WRAM variables the host reads or writes (the others are the kernel's own).
inline constexpr std::string_view kArgsSymbol = "args";              // LinearKernelArgs, pushed before each launch
inline constexpr std::string_view kSaturationsSymbol = "saturations";  // uint64 per tasklet, over all launches
inline constexpr std::string_view kRowsSymbol = "rows";              // the chunk's row numbers
inline constexpr std::string_view kDerivativesSymbol = "d";          // the chunk's loss derivatives (Q.24)
inline constexpr std::string_view kCountSymbol = "count";            // rows in the chunk
inline constexpr std::string_view kPartialsSymbol = "partials";      // per-tasklet partial scores (feature split)
inline constexpr std::string_view kDualCoefficientSymbol = "dual_coef";  // dual ascent: tasklet 0's step for all

// The C header's values (linear_kernel_args.h), typed.
enum class KernelMode : uint32_t {
  kGradient = PIMOPT_KERNEL_GRADIENT,
  kLocalSgd = PIMOPT_KERNEL_LOCAL_SGD,
  kProximalSgd = PIMOPT_KERNEL_PROXIMAL_SGD,
  kDualAscent = PIMOPT_KERNEL_DUAL_ASCENT
};
enum class KernelLoss : uint32_t { kLogistic = PIMOPT_KERNEL_LOGISTIC, kHinge = PIMOPT_KERNEL_HINGE };
KernelLoss ToKernelLoss(LossKind loss);
LossKind FromKernelLoss(KernelLoss loss);

struct LinearKernelArgs {
  KernelMode mode = KernelMode::kGradient;
  KernelLoss loss = KernelLoss::kLogistic;
  uint32_t n_pad = 0;     // features per row in MRAM (a multiple of kFeatureBlock)
  uint32_t artifact = 0;  // 1: PIM-Opt's kernel (above); also keeps the 64-bit fields below 8-byte aligned
  uint32_t steps = 1;
  uint32_t slots_per_step = 0;  // row-list entries per step (valid rows first, then kNoRow)
  uint32_t fit_bias = 1;
  uint32_t sparse = 0;
  uint64_t lr_weight_q32 = 0;  // lr * worker weight, Q0.32 (modes 1, 2; divided by the step's row count)
  uint64_t decay_q32 = 0;      // lr * l2 (mode 1) or lr * rho (mode 2), Q0.32
  uint32_t sigmoid_float = 0;  // 1: PIM-Opt's software-float sigmoid; 0: the fixed-point table
  uint32_t feature_split = 0;  // 1 (dense only): PIM-Opt's per-sample feature split over tasklets
  int32_t positive_weight_q24 = 1 << 24;
  int32_t negative_weight_q24 = 1 << 24;
  // 1 (sparse rows, mode 1, decay 0): each step updates only the coordinates its rows touch instead of sweeping the
  // whole model (the same model: an untouched coordinate's update is zero); the host sets it where that is cheaper.
  uint32_t sparse_update = 0;
  uint32_t reserved = 0;  // keeps the 64-bit fields below 8-byte aligned
  uint64_t x_offset = 0, y_offset = 0, w_offset = 0;
  // Dual ascent (mode 3) has no proximal target and no gradient sums: its regions take their places, under their
  // own names (the rows' duals, their DualRowParams).
  union {
    uint64_t v_offset = 0;
    uint64_t dual_offset;
  };
  union {
    uint64_t g_offset = 0;
    uint64_t row_params_offset;
  };
  uint64_t list_offset = 0, sigmoid_offset = 0;
  uint64_t col_offset = 0, val_offset = 0;  // sparse: x_offset holds the row pointers
};
// The struct is copied byte for byte into WRAM: its layout is the C header's (linear_kernel_args.h), which a DPU
// program would include. Checked field by field.
static_assert(sizeof(LinearKernelArgs) == 144 && std::has_unique_object_representations_v<LinearKernelArgs> &&
                  offsetof(LinearKernelArgs, lr_weight_q32) % 8 == 0 && offsetof(LinearKernelArgs, x_offset) % 8 == 0,
              "LinearKernelArgs must keep its 8-byte aligned layout without implicit padding");
static_assert(sizeof(LinearKernelArgs) == sizeof(pimopt_linear_kernel_args) &&
                  std::has_unique_object_representations_v<pimopt_linear_kernel_args>,
              "LinearKernelArgs and the C header's pimopt_linear_kernel_args must be the same bytes");
#define PIMOPT_SAME_FIELD(field)                                                                            \
  static_assert(offsetof(LinearKernelArgs, field) == offsetof(pimopt_linear_kernel_args, field) &&         \
                    sizeof(LinearKernelArgs::field) == sizeof(pimopt_linear_kernel_args::field),            \
                "LinearKernelArgs::" #field " is not where linear_kernel_args.h puts it")
PIMOPT_SAME_FIELD(mode);
PIMOPT_SAME_FIELD(loss);
PIMOPT_SAME_FIELD(n_pad);
PIMOPT_SAME_FIELD(artifact);
PIMOPT_SAME_FIELD(steps);
PIMOPT_SAME_FIELD(slots_per_step);
PIMOPT_SAME_FIELD(fit_bias);
PIMOPT_SAME_FIELD(sparse);
PIMOPT_SAME_FIELD(lr_weight_q32);
PIMOPT_SAME_FIELD(decay_q32);
PIMOPT_SAME_FIELD(sigmoid_float);
PIMOPT_SAME_FIELD(feature_split);
PIMOPT_SAME_FIELD(positive_weight_q24);
PIMOPT_SAME_FIELD(negative_weight_q24);
PIMOPT_SAME_FIELD(sparse_update);
PIMOPT_SAME_FIELD(reserved);
PIMOPT_SAME_FIELD(x_offset);
PIMOPT_SAME_FIELD(y_offset);
PIMOPT_SAME_FIELD(w_offset);
PIMOPT_SAME_FIELD(v_offset);
PIMOPT_SAME_FIELD(g_offset);
PIMOPT_SAME_FIELD(dual_offset);
PIMOPT_SAME_FIELD(row_params_offset);
PIMOPT_SAME_FIELD(list_offset);
PIMOPT_SAME_FIELD(sigmoid_offset);
PIMOPT_SAME_FIELD(col_offset);
PIMOPT_SAME_FIELD(val_offset);
#undef PIMOPT_SAME_FIELD

// Per-tasklet WRAM buffers of the kernel (MemAlloc, each 8-aligned): a block of a dense row or a window of sparse
// values, a model block, a proximal-target block, a block of sums (shared with the window of column numbers), and
// 16 bytes for small DMAs. The kernel declares it (KernelSpec::heap_bytes_per_tasklet).
inline constexpr uint32_t kHeapBytesPerTasklet =
    (kSparseWindow + 8) + 4 * kFeatureBlock + 4 * kFeatureBlock + 8 * kFeatureBlock + 16;

struct LinearLayout {
  uint32_t n_pad = 0;
  bool sparse = false;
  uint32_t feature_bytes = 1;  // dense: 1 (int8 Q0.7) or 4 (PIM-Opt's kernel: int32 Q0.31)
  uint64_t x_offset = 0, y_offset = 0, w_offset = 0, v_offset = 0, g_offset = 0, list_offset = 0, sigmoid_offset = 0,
           end = 0;
  uint64_t col_offset = 0, val_offset = 0;  // sparse: x_offset holds the row pointers
  uint64_t max_list_entries = 0;            // the row-list region's entries
  uint64_t model_bytes() const { return (uint64_t{n_pad} + 8) * 4; }
  uint64_t gradient_bytes() const { return (uint64_t{n_pad} + 8) * 8; }
};
// Offsets for `max_rows` rows of `features` features and row lists of up to `max_list_entries` entries; sparse when
// `max_nonzeros` > 0 (the most non-zeros of any DPU's shard). `artifact`: PIM-Opt's kernel (4-byte dense features,
// a 4 MiB exp table in place of the sigmoid table).
LinearLayout MakeLinearLayout(uint32_t features, uint32_t max_rows, uint64_t max_list_entries,
                              uint64_t max_nonzeros = 0, bool artifact = false);
// PIM-Opt's exp table: entry i = exp(i 2^-20), float ([PIM-Opt] lut_exp.h).
const std::vector<float>& ArtifactExpTable();
// The entry PIM-Opt's range-reduced expf reads for exp(-z) (z in Q.24): t = -z log2(e), r = frac(t) ln 2,
// index round(r 2^20).
uint32_t ArtifactExpIndex(int64_t z_q24);
// PIM-Opt's kernel: a dense feature as int32 with 31 fractional bits (floor, as its preprocessing; 1.0 becomes
// 2^31 - 1; beyond [-1, 1] saturated to +-(2^31 - 1) and counted).
int32_t QuantizeFeatureArtifact(float x, fixed::Saturation& sat);
// PIM-Opt's kernel's arithmetic, on plain integers (the host reference) or the emulator's operand types (the
// kernel), as fixed/fixed_point.h.
// The loss derivative (Q.24) with its hinge margin of 2^-15.
template <class S, class V, class Y>
S ArtifactDerivative(LossKind loss, S sigma, V z, Y y) {
  if (loss == LossKind::kLogistic) return fixed::DerivativeFromSigmoid(loss, sigma, z, y);
  const fixed::Wide<V> z_q24 = z;
  const fixed::Wide<V> margin = y > 0 ? z_q24 : fixed::Wide<V>(-z_q24);
  return margin < kArtifactHingeMarginQ24 ? S(-y * (1 << fixed::kModelFracBits)) : S(0);
}
// One product of the score, x w (x Q0.31, w Q.24) truncated on its own to Q.24.
template <class X, class W>
auto ArtifactProduct(X x31, W w) {
  using fixed::Widen64;
  return (Widen64(x31) * Widen64(w)) >> kArtifactFeatureFracBits;
}
// One gradient term x d (x Q0.31, d Q.24) in G's unit (Q.31): shifted on its own, -1 dropped.
template <class X, class D>
auto ArtifactGradientTerm(X x31, D d) {
  using fixed::Widen64;
  using T = decltype((Widen64(x31) * Widen64(d)) >> 1);
  const T term = (Widen64(x31) * Widen64(d)) >> (kArtifactFeatureFracBits - fixed::kFeatureFracBits);
  return term == -1 ? T(0) : term;
}

// ---- dual ascent (CoCoA's local solver in fixed point; algorithms/backend.h, LocalSolver::kDualCoordinateAscent)
// Each row's dual beta_i lives in MRAM as int32 Q.24 (0 .. 2^24 for beta in [0, 1]); the row's step parameters, fixed
// for the run, beside it. With s_i = sigma' c_i / (lambda N) and q_i = s_i ||a_i||^2 (a_i the row's quantized
// features and the bias's 1), all Q.32 (fixed::ToScale; 1/q_i at most 2^8):
struct DualRowParams {
  uint64_t inv_q_q32 = 0;  // 1 / q_i (hinge's step); kDualMaxInverse for a row without values or bias
  uint64_t q_q32 = 0;      // q_i (the logistic step's curvature)
  uint64_t scale_q32 = 0;  // s_i: a dual change delta moves the model by delta y_i s_i a_i
};
static_assert(sizeof(DualRowParams) == 24);
inline constexpr uint64_t kDualMaxInverse = uint64_t{1} << 40;  // 1 / q_i capped at 2^8
inline constexpr int kDualBisections = 26;                      // the logistic step's bisection steps, at most
// One row's step in Q.24: beta, margin m = y x.a (both 64-bit values), beta' = argmax psi(b) - (b - beta) m -
// (q/2)(b - beta)^2 over [0, 2^24]: hinge clip(beta + (1 - m)/q), logistic by bisection on b - sigma(-(m + q (b -
// beta))), which increases in b, inside [min(beta, s0), max(beta, s0)], s0 = sigma(-m) (the table's sigma, as the
// SGD modes use). `mul(v, scale_q32)` multiplies by a Q.32 scale toward zero and `sigmoid(z)` looks sigma up: the
// host reference passes fixed::MulScale and fixed::Sigmoid, the kernel its emulated versions, so both give the same
// bits.
template <class V, class Mul, class Sigmoid>
V DualStep(LossKind loss, V beta, V margin, const DualRowParams& p, const Mul& mul, const Sigmoid& sigmoid) {
  const V one = V(int64_t{1} << fixed::kModelFracBits);
  if (loss == LossKind::kHinge) {
    const V b = beta + mul(one - margin, p.inv_q_q32);
    return b < 0 ? V(0) : b > one ? one : b;
  }
  const V s0 = sigmoid(V(0) - margin);
  V lo = beta < s0 ? beta : s0, hi = beta < s0 ? s0 : beta;
  for (int it = 0; it < kDualBisections && hi - lo > 1; ++it) {
    const V mid = (lo + hi) >> 1;
    const V h = mid - sigmoid(V(0) - margin - mul(mid - beta, p.q_q32));
    if (h < 0) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return (lo + hi) >> 1;
}
// A row's dual step parameters from its quantized squared norm (Q0.14 sum of int8 squares, bias's 1 included) and
// its cost c_i (ConfigError naming --reg when a scale is out of Q.32's range).
DualRowParams MakeDualRowParams(double squared_norm, double cost, double sigma, double lambda_n);

// The name the kernel is registered under (pim::RegisterKernel): what a PIM machine loads.
inline constexpr const char* kLinearKernelName = "pimopt_linear";
std::unique_ptr<pim::Kernel> MakeLinearKernel();  // registered under kLinearKernelName (pim_options.cc)
// The same kernel as a DPU program in C (src/backends/pim/dpu/pimopt_linear.c), compiled for `tasklets`: the path a
// PIM machine loads (the build makes the 16-tasklet program; another count is compiled on first use, into
// $PIMOPT_DPU_PROGRAMS when set). ConfigError naming --kernels when pimopt was built without the DPU toolchain.
std::string LinearProgramPath(uint32_t tasklets);

// ---- host-side reference: the same fixed-point math, plainly sequential ----
struct QuantizedShard {
  uint32_t n_pad = 0;
  std::vector<int8_t> x;  // dense: rows x n_pad
  std::vector<int32_t> x31;  // dense, PIM-Opt's kernel: rows x n_pad, Q0.31
  bool sparse = false;    // sparse: CSR below
  std::vector<uint32_t> row_ptr, col;
  std::vector<int8_t> val;
  std::vector<int8_t> y;  // +1 / -1
  uint32_t rows() const { return static_cast<uint32_t>(y.size()); }
};

// Mode 0: G (n_pad + 1 entries, bias last) over `rows` (local row numbers).
std::vector<int64_t> ReferenceGradient(const QuantizedShard& shard, std::span<const int32_t> model,
                                       std::span<const uint32_t> rows, const LinearKernelArgs& args);
// Mode 3: one dual step per row of `rows` (local row numbers, in order) on `model` (n_pad + 1 entries) and `duals`
// (Q.24, one per shard row) in place.
void ReferenceDualPass(const QuantizedShard& shard, std::vector<int32_t>& model, std::vector<int32_t>& duals,
                       std::span<const DualRowParams> params, std::span<const uint32_t> rows,
                       const LinearKernelArgs& args, fixed::Saturation& saturation);
// The squared norm of a quantized row as the dual step sees it: its int8 values / 2^7 squared, plus 1 with a bias.
double QuantizedSquaredNorm(std::span<const int8_t> values, bool fit_bias);
// The same of shard row r.
double QuantizedSquaredNorm(const QuantizedShard& shard, uint32_t r, bool fit_bias);
// Modes 1, 2: runs the steps (each a list of local rows) on `model` (n_pad + 1 entries) in place.
void ReferenceLocalSteps(const QuantizedShard& shard, std::vector<int32_t>& model, std::span<const int32_t> v,
                         const std::vector<std::vector<uint32_t>>& steps, const LinearKernelArgs& args,
                         fixed::Saturation& saturation);

}  // namespace pimopt::pimbackend
