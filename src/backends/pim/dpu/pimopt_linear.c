/* pimopt's linear training kernel as a DPU program for the UPMEM SDK: the same computation, bit for bit, as the
 * kernel over the emulator's operand types (src/backends/pim/linear_kernel.cc, linear_kernel_ops.h,
 * linear_kernel_dual.cc; include/pimopt/backends/pim/linear_kernel.h describes the modes, the work split and the
 * MRAM layout). Both kernels: pimopt's (int8 Q0.7 features) and PIM-Opt's (args.artifact = 1: int32 Q0.31 dense
 * features, products truncated one by one, the feature split with two barriers per sample).
 *
 * The host writes the argument block `args` (linear_kernel_args.h) before each launch; the WRAM variables the host
 * reads or writes are named as linear_kernel.h's constants (args, rows, d, count, partials, saturations); the regions
 * of the MRAM heap are at the offsets the block gives. Built for the emulator by pimopt-dpu-cc (the build makes the
 * 16-tasklet program; another NR_TASKLETS is compiled on first use).
 *
 * Fixed point (include/pimopt/fixed/fixed_point.h): features Q0.7, model int32 Q8.24, sums int64 Q.31, scales uint64
 * Q0.32; every rounding toward zero, every narrowing saturated to +-(2^31 - 1) and counted. Signed shifts to the left
 * are done on unsigned values (the same bits; C leaves a negative value's left shift undefined).
 *
 * One difference from a build for real DPUs: PIM-Opt's sigmoid reads its exp table's entry from MRAM for its cost,
 * but takes the value from the C library's expf, as the operand-type kernel does (the model's bits then equal the
 * host reference's, fixed::SigmoidFloat). */
#include <alloc.h>
#include <barrier.h>
#include <built_ins.h>
#include <defs.h>
#include <math.h>
#include <mram.h>
#include <stdint.h>

#include "pimopt/backends/pim/linear_kernel_args.h"

#define FEATURE_BLOCK 128u       /* features per block and per DMA of a dense row */
#define MAX_ROWS_PER_STEP 1024u  /* row numbers and derivatives WRAM holds */
#define NO_ROW 0xFFFFFFFFu
#define SPARSE_WINDOW 128u /* non-zeros per column / value DMA */
#define MAX_TASKLETS 24u
#define FEATURE_FRAC_BITS 7
#define MODEL_FRAC_BITS 24
#define MODEL_MAX 2147483647LL
#define SIGMOID_ENTRIES 1024
#define ARTIFACT_HINGE_MARGIN_Q24 (1LL << 9)
#define ARTIFACT_EXP_TABLE_ENTRIES (1u << 20)
#define ARTIFACT_FEATURE_FRAC_BITS 31
#define DUAL_BISECTIONS 26
_Static_assert(ARTIFACT_FEATURE_FRAC_BITS - FEATURE_FRAC_BITS == MODEL_FRAC_BITS,
               "a term x d with d = +-1.0 is +-x in G's unit");

__host pimopt_linear_kernel_args args;
__host uint32_t rows[MAX_ROWS_PER_STEP];
__host int32_t d[MAX_ROWS_PER_STEP];
__host uint32_t count[2];
__host int64_t partials[MAX_TASKLETS];
__host uint64_t saturations[MAX_TASKLETS];
int64_t dual_coef; /* dual ascent: tasklet 0's step coefficient for every tasklet */

BARRIER_INIT(step_barrier, NR_TASKLETS) /* the macro ends with its own ";", as the SDK's */

/* The launch's configuration, read from `args` once into registers. */
typedef struct {
  uint32_t mode, loss;
  int artifact, sparse, fit_bias, float_sigmoid, feature_split, sparse_update;
  uint32_t n_pad, blocks, steps, slots_per_step;
  uint32_t x, y, w, v, g, list, sigmoid, col, val; /* MRAM addresses */
  uint32_t dual, row_params;                        /* dual ascent's regions (mode 3) */
  uint64_t lr_weight_q32, decay_q32;
  int32_t positive_weight_q24, negative_weight_q24;
} config_t;

/* Per-tasklet WRAM buffers (mem_alloc). */
typedef struct {
  int8_t* x;      /* a block of a dense row, or a window of sparse values */
  int32_t* w;     /* a model block */
  int32_t* v;     /* a proximal-target block */
  int64_t* acc;   /* a block of gradient sums */
  uint8_t* col;   /* a window of sparse column numbers (shares acc's bytes) */
  int64_t* word;  /* 16 bytes for small DMAs */
} buffers_t;

typedef struct {
  uint64_t events;
} saturation_t;

/* The arithmetic helpers are always inlined: each is a few instructions in a loop over a block's features (a call
 * would cost its call and return on the DPU, and here its counters' flush at the return). */
#define INLINE inline __attribute__((always_inline))

static INLINE __mram_ptr void* at(uint32_t address) { return (__mram_ptr void*)(uintptr_t)address; }

/* ------------------------------------------------------------------------------------------- fixed point */

static INLINE int64_t shl64(int64_t v, int shift) { return (int64_t)((uint64_t)v << shift); }

/* v / 2^shift toward zero. */
static INLINE int64_t shift_toward_zero(int64_t v, int shift) {
  return (v + ((v >> 63) & ((1LL << shift) - 1))) >> shift;
}

static INLINE int32_t saturate_model(int64_t v, saturation_t* sat) {
  if (v > MODEL_MAX) {
    ++sat->events;
    return (int32_t)MODEL_MAX;
  }
  if (v < -MODEL_MAX) {
    ++sat->events;
    return (int32_t)-MODEL_MAX;
  }
  return (int32_t)v;
}

/* The products with a scale's high word (a factor of 1 or more: rare). Out of line, so that the compiler does not
 * compute them ahead of the test that skips them (on the DPU each is a 64-bit multiply routine). */
static __attribute__((noinline)) uint64_t high_word_products(uint64_t vl, int64_t vh, uint64_t sh) {
  return vl * sh + (((uint64_t)vh * sh) << 32);
}

/* (v s) / 2^32 toward zero from 32 x 32 -> 64-bit products (the products with s's high word only when it is not 0);
 * in unsigned arithmetic: the same bits as the signed products, without signed overflow. */
static INLINE int64_t mul_scale(int64_t v, uint64_t s) {
  const uint64_t vl = (uint32_t)v;
  const int64_t vh = v >> 32;
  const uint64_t sl = (uint32_t)s;
  const uint64_t sh = s >> 32;
  const uint64_t ll = vl * sl;
  uint64_t p = (ll >> 32) + (uint64_t)vh * sl;
  if (sh != 0) p += high_word_products(vl, vh, sh);
  if (v < 0 && (ll & 0xFFFFFFFFu) != 0) p += 1;
  return (int64_t)p;
}

/* Multiplying by a Q0.32 factor, decided once per step: zero, a shift when the factor is 2^-k (k <= 32), else
 * mul_scale. */
typedef struct {
  uint64_t scale;
  int zero;
  int shift;
} scaler_t;

static INLINE scaler_t make_scaler(uint64_t scale) {
  scaler_t s = {scale, scale == 0, -1};
  if (!s.zero && (scale & (scale - 1)) == 0 && scale <= (1ULL << 32)) s.shift = __builtin_clzll(scale) - 31;
  return s;
}

static INLINE int64_t apply_scaler(const scaler_t* s, int64_t v) {
  if (s->zero) return 0;
  if (s->shift >= 0) return shift_toward_zero(v, s->shift);
  return mul_scale(v, s->scale);
}

/* x - (g step) / 2^7 - decay(base), toward zero. */
static INLINE int64_t sgd_update(int64_t x, int64_t g_q31, const scaler_t* step, int64_t base, const scaler_t* decay) {
  return x - shift_toward_zero(apply_scaler(step, g_q31), FEATURE_FRAC_BITS) - apply_scaler(decay, base);
}

/* Products of int8 features and int32 weights from the DPU's 8 x 8 multiplier (built_ins.h): each weight byte on its
 * own (the instruction selects the byte of its register: no byte is extracted), summed per byte lane (exact in 32
 * bits for up to 128 products) and shifted into place once. */
typedef struct {
  int32_t l0, l1, l2, l3;
} byte_lanes_t;

static INLINE void lanes_add(byte_lanes_t* z, int8_t x, int32_t w) {
  const int32_t high = w >> 16;
  int32_t p0, p1, p2, p3;
  __builtin_mul_sl_ul_rrr(p0, x, w);    /* x times byte 0 */
  __builtin_mul_sl_uh_rrr(p1, x, w);    /* byte 1 */
  __builtin_mul_sl_ul_rrr(p2, x, high); /* byte 2 */
  __builtin_mul_sl_sh_rrr(p3, x, high); /* byte 3, signed */
  z->l0 += p0;
  z->l1 += p1;
  z->l2 += p2;
  z->l3 += p3;
}

static INLINE int64_t lanes_sum(const byte_lanes_t* z) {
  return shl64(z->l3, 24) + shl64(z->l2, 16) + shl64(z->l1, 8) + (int64_t)z->l0;
}

/* A multiplier taken apart once for x d = (x b3 2^8 + x b2) 2^16 + (x b1 2^8 + x b0), b0..b3 its bytes (b3 signed):
 * each byte product one 8 x 8 multiply of the DPU (built_ins.h), so that no compiler joins two of them into a wider
 * product. */
typedef struct {
  int32_t low;  /* bytes b0 (bits 0-7) and b1 (bits 8-15) */
  int32_t high; /* bytes b2 and b3 */
} byte_split_t;

static INLINE byte_split_t split_bytes(int32_t v) {
  byte_split_t s = {v, v >> 16};
  return s;
}

static INLINE int64_t times(int8_t x, byte_split_t s) {
  int32_t p0, p1, p2, p3;
  __builtin_mul_sl_ul_rrr(p0, x, s.low);  /* x b0 */
  __builtin_mul_sl_uh_rrr(p1, x, s.low);  /* x b1 */
  __builtin_mul_sl_ul_rrr(p2, x, s.high); /* x b2 */
  __builtin_mul_sl_sh_rrr(p3, x, s.high); /* x b3, b3 signed */
  const int32_t low = (int32_t)((uint32_t)p1 << 8) + p0;
  const int32_t high = (int32_t)((uint32_t)p3 << 8) + p2;
  return shl64(high, 16) + (int64_t)low;
}

/* The table's entry of z: -1 below it (sigma = 0), SIGMOID_ENTRIES above it (sigma = 1). */
static INLINE int64_t sigmoid_index(int64_t z_q24) {
  if (z_q24 < -(8LL << MODEL_FRAC_BITS)) return -1;
  const int64_t index = (z_q24 + (8LL << MODEL_FRAC_BITS)) >> (MODEL_FRAC_BITS - 6);
  return index >= SIGMOID_ENTRIES ? SIGMOID_ENTRIES : index;
}

/* dl/dz (Q.24) with sigma looked up; PIM-Opt's kernel's hinge is active below a margin of 2^-15. */
static INLINE int32_t derivative_from_sigmoid(uint32_t loss, int32_t sigma, int64_t z_q24, int32_t y,
                                              int64_t hinge_margin_q24) {
  if (loss == PIMOPT_KERNEL_LOGISTIC) return sigma - (y > 0 ? (1 << MODEL_FRAC_BITS) : 0);
  const int64_t margin = y > 0 ? z_q24 : -z_q24;
  return margin < hinge_margin_q24 ? -y * (1 << MODEL_FRAC_BITS) : 0;
}

static INLINE int32_t apply_class_weight(int32_t derivative, int32_t weight_q24) {
  if (weight_q24 == (1 << MODEL_FRAC_BITS)) return derivative;
  return (int32_t)shift_toward_zero((int64_t)derivative * weight_q24, MODEL_FRAC_BITS);
}

/* ------------------------------------------------------------------------------------------- MRAM access */

static config_t load_config(void) {
  config_t c;
  c.mode = args.mode;
  c.loss = args.loss;
  c.artifact = args.artifact != 0;
  c.sparse = args.sparse != 0;
  c.fit_bias = args.fit_bias != 0;
  c.float_sigmoid = args.sigmoid_float != 0;
  c.feature_split = args.feature_split != 0;
  c.sparse_update = args.sparse_update != 0;
  c.n_pad = args.n_pad;
  c.blocks = c.n_pad / FEATURE_BLOCK;
  c.steps = args.steps;
  c.slots_per_step = args.slots_per_step;
  const uint32_t heap = (uint32_t)(uintptr_t)DPU_MRAM_HEAP_POINTER;
  c.x = heap + (uint32_t)args.x_offset;
  c.y = heap + (uint32_t)args.y_offset;
  c.w = heap + (uint32_t)args.w_offset;
  c.v = heap + (uint32_t)args.v_offset;
  c.g = heap + (uint32_t)args.g_offset;
  c.list = heap + (uint32_t)args.list_offset;
  c.sigmoid = heap + (uint32_t)args.sigmoid_offset;
  c.col = heap + (uint32_t)args.col_offset;
  c.val = heap + (uint32_t)args.val_offset;
  c.dual = heap + (uint32_t)args.dual_offset;
  c.row_params = heap + (uint32_t)args.row_params_offset;
  c.lr_weight_q32 = args.lr_weight_q32;
  c.decay_q32 = args.decay_q32;
  c.positive_weight_q24 = args.positive_weight_q24;
  c.negative_weight_q24 = args.negative_weight_q24;
  return c;
}

/* Tasklet 0: the step's row numbers of chunk `chunk` into `rows`, their count into count[0]. */
static void load_row_list(const config_t* c, uint32_t step, uint32_t chunk) {
  const uint32_t first = chunk * MAX_ROWS_PER_STEP;
  if (first >= c->slots_per_step) {
    count[0] = 0;
    return;
  }
  const uint32_t left = c->slots_per_step - first;
  const uint32_t entries = left < MAX_ROWS_PER_STEP ? left : MAX_ROWS_PER_STEP;
  const uint32_t base = c->list + (step * c->slots_per_step + first) * 4;
  const uint32_t bytes = (entries * 4 + 7) & ~7u;
  uint8_t* to = (uint8_t*)rows;
  for (uint32_t done = 0; done < bytes; done += 2048) {
    const uint32_t rest = bytes - done;
    mram_read(at(base + done), to + done, rest < 2048 ? rest : 2048);
  }
  uint32_t n = 0;
  while (n < entries && rows[n] != NO_ROW) ++n;
  count[0] = n;
}

/* x_r . w over feature block b (pimopt's kernel: int8 features, byte lanes). */
static int64_t dense_dot_block(const config_t* c, buffers_t* buf, uint32_t r, uint32_t b) {
  if (c->artifact) {
    /* PIM-Opt's kernel: int32 Q0.31 features (into the V buffer), each product shifted right by 31 on its own. */
    int32_t* x = buf->v;
    const int32_t* w = buf->w;
    mram_read(at(c->x + (r * c->n_pad + b * FEATURE_BLOCK) * 4), x, 4 * FEATURE_BLOCK);
    mram_read(at(c->w + b * (FEATURE_BLOCK * 4)), buf->w, 4 * FEATURE_BLOCK);
    int64_t z = 0;
    for (uint32_t j = 0; j < FEATURE_BLOCK; ++j) z += ((int64_t)x[j] * w[j]) >> ARTIFACT_FEATURE_FRAC_BITS;
    return z;
  }
  const int8_t* x = buf->x;
  const int32_t* w = buf->w;
  mram_read(at(c->x + r * c->n_pad + b * FEATURE_BLOCK), buf->x, FEATURE_BLOCK);
  mram_read(at(c->w + b * (FEATURE_BLOCK * 4)), buf->w, 4 * FEATURE_BLOCK);
  byte_lanes_t z = {0, 0, 0, 0};
  for (uint32_t j = 0; j < FEATURE_BLOCK; ++j) lanes_add(&z, x[j], w[j]);
  return lanes_sum(&z);
}

static int64_t dense_dot(const config_t* c, buffers_t* buf, uint32_t r) {
  int64_t z = 0;
  for (uint32_t b = 0; b < c->blocks; ++b) z += dense_dot_block(c, buf, r, b);
  return z;
}

/* The row's non-zeros [*begin, *end). */
static void row_range(const config_t* c, buffers_t* buf, uint32_t r, uint32_t* begin, uint32_t* end) {
  mram_read(at(c->x + (r & ~1u) * 4), buf->word, 16);
  const uint32_t* p = (const uint32_t*)buf->word;
  const uint32_t odd = r & 1u;
  *begin = p[odd];
  *end = p[odd + 1];
}

/* Non-zeros [k, k + n) (n <= SPARSE_WINDOW) into WRAM: their column numbers and values. */
static void load_window(const config_t* c, buffers_t* buf, uint32_t k, uint32_t n, uint32_t** cols, int8_t** vals) {
  const uint32_t col_start = c->col + k * 4, col_aligned = col_start & ~7u;
  mram_read(at(col_aligned), buf->col, (col_start + n * 4 - col_aligned + 7) & ~7u);
  const uint32_t val_start = c->val + k, val_aligned = val_start & ~7u;
  mram_read(at(val_aligned), buf->x, (val_start + n - val_aligned + 7) & ~7u);
  *cols = (uint32_t*)(buf->col + (col_start - col_aligned));
  *vals = buf->x + (val_start - val_aligned);
}

/* The window of non-zeros at k (at most SPARSE_WINDOW, none past end) loaded; returns how many. */
static uint32_t window_at(const config_t* c, buffers_t* buf, uint32_t k, uint32_t end, uint32_t** cols,
                          int8_t** vals) {
  const uint32_t rest = end - k;
  const uint32_t n = rest < SPARSE_WINDOW ? rest : SPARSE_WINDOW;
  load_window(c, buf, k, n, cols, vals);
  return n;
}

/* The model's weight of column `col` (one 8-byte DMA per non-zero, as PIM-Opt's Criteo kernels). */
static int32_t weight_of(const config_t* c, buffers_t* buf, uint32_t col) {
  int64_t* word = buf->word + 1;
  mram_read(at(c->w + (col & ~1u) * 4), word, 8);
  return ((const int32_t*)word)[col & 1u];
}

/* The sum over non-zeros [begin, end) of x_k w[col_k]. */
static int64_t sparse_dot_range(const config_t* c, buffers_t* buf, uint32_t begin, uint32_t end) {
  int64_t z = 0;
  for (uint32_t k = begin; k < end; k += SPARSE_WINDOW) {
    uint32_t* cols;
    int8_t* vals;
    const uint32_t n = window_at(c, buf, k, end, &cols, &vals);
    byte_lanes_t window = {0, 0, 0, 0};
    for (uint32_t i = 0; i < n; ++i) lanes_add(&window, vals[i], weight_of(c, buf, cols[i]));
    z += lanes_sum(&window);
  }
  return z;
}

static int64_t sparse_dot(const config_t* c, buffers_t* buf, uint32_t r) {
  uint32_t begin, end;
  row_range(c, buf, r, &begin, &end);
  return sparse_dot_range(c, buf, begin, end);
}

/* sigma(z) from the fixed-point table in MRAM (one 8-byte DMA; none outside the table's range). */
static int32_t table_sigmoid(const config_t* c, buffers_t* buf, int64_t z_q24) {
  const int64_t index = sigmoid_index(z_q24);
  if (index >= SIGMOID_ENTRIES) return 1 << MODEL_FRAC_BITS;
  if (index < 0) return 0;
  const uint32_t entry = (uint32_t)index;
  mram_read(at(c->sigmoid + (entry & ~1u) * 4), buf->word, 8);
  return ((const int32_t*)buf->word)[entry & 1u];
}

/* sigma(z) as PIM-Opt computes it: z in float, expf(-z) by range reduction and the entry of its table of 2^20 floats
 * in MRAM (read for its cost: the value is the C library's expf, as the host reference's), then 2^24 / (1 + e) in
 * double, rounded to nearest. */
static int32_t float_sigmoid(const config_t* c, buffers_t* buf, int64_t z_q24) {
  const float z = (float)z_q24 * (1.0f / (float)(1 << MODEL_FRAC_BITS));
  const float x = -z;
  const float scaled = x * 1.4426950408889634f;
  /* k = floor(scaled); a score beyond +-2^30 in model units (never met) is clamped first: the conversion would
   * overflow. Only the table entry read depends on k, not the value. */
  int32_t k = (int32_t)(scaled > 1.0e9f ? 1.0e9f : scaled < -1.0e9f ? -1.0e9f : scaled);
  if ((float)k > scaled) --k;
  const float r = (scaled - (float)k) * 0.6931471805599453f;
  uint32_t index = c->artifact ? (uint32_t)nearbyintf(r * 1048576.0f) : 0;
  if (index >= ARTIFACT_EXP_TABLE_ENTRIES) index = ARTIFACT_EXP_TABLE_ENTRIES - 1;
  mram_read(at(c->sigmoid + (index & ~1u) * 4), buf->word, 8);
  const float e = expf(x);
  const double q = (double)(1 << MODEL_FRAC_BITS) / (1.0 + (double)e);
  return (int32_t)nearbyint(q);
}

/* The label of row r (+1 / -1), from the Y region (one 8-byte DMA). */
static int32_t row_label(const config_t* c, buffers_t* buf, uint32_t r) {
  mram_read(at(c->y + (r & ~7u)), buf->word, 8);
  return ((const int8_t*)buf->word)[r & 7u];
}

/* Row r's loss derivative at score z (Q.24), class-weighted. */
static int32_t row_derivative(const config_t* c, buffers_t* buf, uint32_t r, int64_t z_q24) {
  const int32_t y = row_label(c, buf, r);
  int32_t sigma = 0;
  if (c->loss == PIMOPT_KERNEL_LOGISTIC && (c->artifact || c->float_sigmoid)) {
    sigma = float_sigmoid(c, buf, z_q24);
  } else if (c->loss == PIMOPT_KERNEL_LOGISTIC) {
    sigma = table_sigmoid(c, buf, z_q24);
  }
  const int32_t weight = y > 0 ? c->positive_weight_q24 : c->negative_weight_q24;
  const int32_t derivative =
      derivative_from_sigmoid(c->loss, sigma, z_q24, y, c->artifact ? ARTIFACT_HINGE_MARGIN_Q24 : 1LL << MODEL_FRAC_BITS);
  return apply_class_weight(derivative, weight);
}

static void clear_block(int64_t* block) {
  for (uint32_t j = 0; j < FEATURE_BLOCK; ++j) block[j] = 0;
}

static int64_t sum_of(uint32_t n) {
  int64_t sum = 0;
  for (uint32_t i = 0; i < n; ++i) sum += d[i];
  return sum;
}

/* G[col] += term in MRAM (an 8-byte read, add, write). */
static void add_to_sum(const config_t* c, buffers_t* buf, uint32_t col, int64_t term) {
  const uint32_t address = c->g + col * 8;
  int64_t* word = buf->word + 1;
  mram_read(at(address), word, 8);
  word[0] += term;
  mram_write(word, at(address), 8);
}

/* ------------------------------------------------------------------------------------------- the phases */

/* PIM-Opt's per-sample protocol: this tasklet's partial score is published; a barrier; tasklet 0 adds the partials
 * and the bias (`shift` fractional bits above Q.24) and computes the row's derivative into d[i]; a barrier. */
static int32_t exchange_score(const config_t* c, buffers_t* buf, uint32_t r, int64_t z, int32_t bias, int shift,
                              uint32_t i, uint32_t tasklet) {
  partials[tasklet] = z;
  barrier_wait(&step_barrier);
  if (tasklet == 0) {
    int64_t total = c->fit_bias ? shl64(bias, shift) : 0;
    for (uint32_t k = 0; k < NR_TASKLETS; ++k) total += partials[k];
    d[i] = row_derivative(c, buf, r, shift_toward_zero(total, shift));
  }
  barrier_wait(&step_barrier);
  return d[i];
}

/* PIM-Opt's work split for a chunk of dense rows: per sample, each tasklet's feature blocks give a partial score,
 * tasklet 0 finishes it, each tasklet adds d x to its blocks of G in MRAM. */
static void feature_split_chunk(const config_t* c, buffers_t* buf, uint32_t n, int32_t bias, uint32_t chunk,
                                uint32_t tasklet) {
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t r = rows[i];
    int64_t z = 0;
    for (uint32_t b = tasklet; b < c->blocks; b += NR_TASKLETS) z += dense_dot_block(c, buf, r, b);
    const int32_t di = exchange_score(c, buf, r, z, bias, c->artifact ? 0 : FEATURE_FRAC_BITS, i, tasklet);
    const byte_split_t split = split_bytes(di);
    int64_t* acc = buf->acc;
    for (uint32_t b = tasklet; b < c->blocks; b += NR_TASKLETS) {
      const uint32_t g_address = c->g + b * (FEATURE_BLOCK * 8);
      if (chunk == 0 && i == 0) {
        clear_block(acc);
      } else {
        mram_read(at(g_address), acc, 8 * FEATURE_BLOCK);
      }
      if (c->artifact) {
        /* x d per feature, shifted on its own, -1 dropped. The hinge's derivative is -1, 0 or +1 (unweighted): a
         * term is then +-x itself (Q0.31 x 1.0 in Q.24, shifted by 24: G's Q.31), added or subtracted as the
         * artifact's SVM kernels do, with no multiply; an inactive row adds nothing. */
        const int32_t* x = buf->w;
        mram_read(at(c->x + (r * c->n_pad + b * FEATURE_BLOCK) * 4), buf->w, 4 * FEATURE_BLOCK);
        if (di == (1 << MODEL_FRAC_BITS)) {
          for (uint32_t j = 0; j < FEATURE_BLOCK; ++j) acc[j] += x[j];
        } else if (di == -(1 << MODEL_FRAC_BITS)) {
          for (uint32_t j = 0; j < FEATURE_BLOCK; ++j) acc[j] -= x[j];
        } else if (di != 0) {
          for (uint32_t j = 0; j < FEATURE_BLOCK; ++j) {
            const int64_t term = ((int64_t)x[j] * di) >> (ARTIFACT_FEATURE_FRAC_BITS - FEATURE_FRAC_BITS);
            acc[j] += term == -1 ? 0 : term;
          }
        }
      } else {
        const int8_t* x = buf->x;
        mram_read(at(c->x + r * c->n_pad + b * FEATURE_BLOCK), buf->x, FEATURE_BLOCK);
        for (uint32_t j = 0; j < FEATURE_BLOCK; ++j) acc[j] += times(x[j], split);
      }
      mram_write(acc, at(g_address), 8 * FEATURE_BLOCK);
    }
  }
}

/* PIM-Opt's split of sparse rows: each row's non-zeros dealt out to the tasklets in contiguous runs. */
static void sparse_feature_split_chunk(const config_t* c, buffers_t* buf, uint32_t n, int32_t bias,
                                       uint32_t tasklet) {
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t r = rows[i];
    uint32_t begin, end;
    row_range(c, buf, r, &begin, &end);
    const uint32_t nnz = end - begin, base = nnz / NR_TASKLETS, extra = nnz % NR_TASKLETS;
    const uint32_t mine = base + (tasklet < extra ? 1 : 0);
    const uint32_t first = begin + tasklet * base + (tasklet < extra ? tasklet : extra);
    const int64_t z = sparse_dot_range(c, buf, first, first + mine);
    const byte_split_t di = split_bytes(exchange_score(c, buf, r, z, bias, FEATURE_FRAC_BITS, i, tasklet));
    for (uint32_t k = first; k < first + mine; k += SPARSE_WINDOW) {
      uint32_t* cols;
      int8_t* vals;
      const uint32_t window = window_at(c, buf, k, first + mine, &cols, &vals);
      for (uint32_t e = 0; e < window; ++e) add_to_sum(c, buf, cols[e], times(vals[e], di));
    }
  }
}

/* Adds this chunk's sums of feature block b to G (the first chunk of a step writes them). */
static void dense_accumulate(const config_t* c, buffers_t* buf, uint32_t n, uint32_t b, uint32_t chunk) {
  const uint32_t g_address = c->g + b * (FEATURE_BLOCK * 8);
  int64_t* acc = buf->acc;
  const int8_t* x = buf->x;
  if (chunk == 0) {
    clear_block(acc);
  } else {
    mram_read(at(g_address), acc, 8 * FEATURE_BLOCK);
  }
  for (uint32_t i = 0; i < n; ++i) {
    mram_read(at(c->x + rows[i] * c->n_pad + b * FEATURE_BLOCK), buf->x, FEATURE_BLOCK);
    const byte_split_t di = split_bytes(d[i]);
    for (uint32_t j = 0; j < FEATURE_BLOCK; ++j) acc[j] += times(x[j], di);
  }
  mram_write(acc, at(g_address), 8 * FEATURE_BLOCK);
}

/* G[col] += d_i x_ij for the non-zeros of the chunk's rows whose column this tasklet owns (col % T == tasklet). */
static void sparse_scatter(const config_t* c, buffers_t* buf, uint32_t n, uint32_t tasklet) {
  for (uint32_t i = 0; i < n; ++i) {
    uint32_t begin, end;
    row_range(c, buf, rows[i], &begin, &end);
    const byte_split_t di = split_bytes(d[i]);
    for (uint32_t k = begin; k < end; k += SPARSE_WINDOW) {
      uint32_t* cols;
      int8_t* vals;
      const uint32_t window = window_at(c, buf, k, end, &cols, &vals);
      for (uint32_t e = 0; e < window; ++e) {
        const uint32_t col = cols[e];
        if (col % NR_TASKLETS != tasklet) continue;
        add_to_sum(c, buf, col, times(vals[e], di));
      }
    }
  }
}

/* Local SGD without decay on sparse rows: only the coordinates the step's rows touch move; each tasklet takes the
 * coordinates whose 8-byte model word it owns ((col / 2) % T), updates each from its sum and clears the sum. */
static void sparse_update(const config_t* c, buffers_t* buf, uint32_t step, const scaler_t* scale,
                          saturation_t* sat, uint32_t tasklet) {
  const scaler_t no_decay = make_scaler(0);
  int64_t* word = buf->word + 1;
  for (uint32_t chunk = 0;; ++chunk) {
    barrier_wait(&step_barrier); /* every tasklet is done with the row list of the phase before */
    if (tasklet == 0) load_row_list(c, step, chunk);
    barrier_wait(&step_barrier);
    const uint32_t n = count[0];
    for (uint32_t i = 0; i < n; ++i) {
      uint32_t begin, end;
      row_range(c, buf, rows[i], &begin, &end);
      for (uint32_t k = begin; k < end; k += SPARSE_WINDOW) {
        uint32_t* cols;
        int8_t* vals;
        const uint32_t window = window_at(c, buf, k, end, &cols, &vals);
        for (uint32_t e = 0; e < window; ++e) {
          const uint32_t col = cols[e];
          if ((col >> 1) % NR_TASKLETS != tasklet) continue;
          const uint32_t g_address = c->g + col * 8;
          mram_read(at(g_address), word, 8);
          const int64_t g = word[0];
          if (g == 0) continue;
          const uint32_t w_address = c->w + (col & ~1u) * 4;
          mram_read(at(w_address), word, 8);
          int32_t* w = (int32_t*)word + (col & 1u);
          const int64_t x = *w;
          *w = saturate_model(sgd_update(x, g, scale, x, &no_decay), sat);
          mram_write(word, at(w_address), 8);
          word[0] = 0;
          mram_write(word, at(g_address), 8);
        }
      }
    }
    if (n < MAX_ROWS_PER_STEP) break;
  }
}

/* PIM-Opt's GA-SGD output on dense data: G's block b (Q.31) as int32 Q.24 (toward zero, saturated) in V. */
static void narrow_block(const config_t* c, buffers_t* buf, uint32_t b, saturation_t* sat) {
  mram_read(at(c->g + b * (FEATURE_BLOCK * 8)), buf->acc, 8 * FEATURE_BLOCK);
  for (uint32_t j = 0; j < FEATURE_BLOCK; ++j) {
    buf->w[j] = saturate_model(shift_toward_zero(buf->acc[j], FEATURE_FRAC_BITS), sat);
  }
  mram_write(buf->w, at(c->v + b * (FEATURE_BLOCK * 4)), 4 * FEATURE_BLOCK);
}

/* Local and proximal SGD: model block b from the sums in buf->acc. */
static void update_block(const config_t* c, buffers_t* buf, uint32_t b, const scaler_t* scale, const scaler_t* decay,
                         saturation_t* sat) {
  const uint32_t w_address = c->w + b * (FEATURE_BLOCK * 4);
  mram_read(at(w_address), buf->w, 4 * FEATURE_BLOCK);
  const int proximal = c->mode == PIMOPT_KERNEL_PROXIMAL_SGD;
  if (proximal) mram_read(at(c->v + b * (FEATURE_BLOCK * 4)), buf->v, 4 * FEATURE_BLOCK);
  for (uint32_t j = 0; j < FEATURE_BLOCK; ++j) {
    const int64_t x = buf->w[j];
    const int64_t base = proximal ? x - buf->v[j] : x;
    buf->w[j] = saturate_model(sgd_update(x, buf->acc[j], scale, base, decay), sat);
  }
  mram_write(buf->w, at(w_address), 4 * FEATURE_BLOCK);
}

/* The bias: G_b = sum_i d_i (in G's unit), output (gradient mode) or update (no L2 on the bias). */
static void update_bias(const config_t* c, buffers_t* buf, int64_t d_sum, const scaler_t* scale, saturation_t* sat) {
  const int64_t g = shl64(d_sum, FEATURE_FRAC_BITS);
  if (c->mode == PIMOPT_KERNEL_GRADIENT) {
    buf->word[0] = g;
    mram_write(buf->word, at(c->g + c->n_pad * 8), 8);
    if (c->artifact && !c->sparse) { /* the int32 output: the bias after the narrowed gradient */
      buf->word[0] = (int64_t)(uint32_t)saturate_model(shift_toward_zero(g, FEATURE_FRAC_BITS), sat);
      mram_write(buf->word, at(c->v + c->n_pad * 4), 8);
    }
    return;
  }
  mram_read(at(c->w + c->n_pad * 4), buf->word, 8);
  const int64_t old = ((const int32_t*)buf->word)[0];
  int64_t base = 0;
  const int proximal = c->mode == PIMOPT_KERNEL_PROXIMAL_SGD;
  if (proximal) {
    mram_read(at(c->v + c->n_pad * 4), buf->word + 1, 8);
    base = old - ((const int32_t*)buf->word)[2];
  }
  const scaler_t decay = make_scaler(proximal ? c->decay_q32 : 0);
  int32_t updated = saturate_model(sgd_update(old, g, scale, base, &decay), sat);
  if (!c->fit_bias) updated = 0;
  buf->word[0] = (int64_t)(uint32_t)updated;
  mram_write(buf->word, at(c->w + c->n_pad * 4), 8);
}

/* ------------------------------------------------------------------------------------------- dual ascent */

/* A row's dual step parameters (linear_kernel.h DualRowParams): 1 / q, q, s, each Q0.32. */
typedef struct {
  uint64_t inv_q_q32, q_q32, scale_q32;
} dual_row_params_t;

/* beta' = argmax of the row's dual objective (linear_kernel.h DualStep): hinge by a clipped step, logistic by
 * bisection. */
static int64_t dual_step(const config_t* c, buffers_t* buf, int64_t beta, int64_t margin, const dual_row_params_t* p) {
  const int64_t one = 1LL << MODEL_FRAC_BITS;
  if (c->loss == PIMOPT_KERNEL_HINGE) {
    const int64_t b = beta + mul_scale(one - margin, p->inv_q_q32);
    return b < 0 ? 0 : b > one ? one : b;
  }
  const int64_t s0 = table_sigmoid(c, buf, 0 - margin);
  int64_t lo = beta < s0 ? beta : s0, hi = beta < s0 ? s0 : beta;
  for (int it = 0; it < DUAL_BISECTIONS && hi - lo > 1; ++it) {
    const int64_t mid = (lo + hi) >> 1;
    const int64_t h = mid - table_sigmoid(c, buf, 0 - margin - mul_scale(mid - beta, p->q_q32));
    if (h < 0) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return (lo + hi) >> 1;
}

/* Tasklet 0's part of a row: the score, the step, the dual and the bias written; returns coef. */
static int64_t take_step(const config_t* c, buffers_t* buf, uint32_t r, int64_t score_q31, saturation_t* sat) {
  const uint32_t dual = c->dual, row_params = c->row_params; /* the mode's regions (linear_kernel_args.h) */
  mram_read(at(c->w + c->n_pad * 4), buf->word, 8);
  const int32_t bias = ((const int32_t*)buf->word)[0];
  int64_t z = score_q31;
  if (c->fit_bias) z += shl64(bias, FEATURE_FRAC_BITS);
  const int64_t z24 = shift_toward_zero(z, FEATURE_FRAC_BITS);
  const int32_t y = row_label(c, buf, r);
  const int64_t margin = y > 0 ? z24 : 0 - z24;
  mram_read(at(row_params + r * (uint32_t)sizeof(dual_row_params_t)), buf->acc, sizeof(dual_row_params_t));
  const dual_row_params_t p = {(uint64_t)buf->acc[0], (uint64_t)buf->acc[1], (uint64_t)buf->acc[2]};
  int64_t* dual_word = buf->word + 1;
  const uint32_t dual_address = dual + (r & ~1u) * 4;
  mram_read(at(dual_address), dual_word, 8);
  int32_t* duals = (int32_t*)dual_word;
  const int64_t beta = duals[r & 1u];
  const int64_t next = dual_step(c, buf, beta, margin, &p);
  duals[r & 1u] = (int32_t)next;
  mram_write(dual_word, at(dual_address), 8);
  const int64_t delta = next - beta;
  const int64_t coef = saturate_model(mul_scale(y > 0 ? delta : 0 - delta, p.scale_q32), sat);
  if (c->fit_bias) {
    mram_read(at(c->w + c->n_pad * 4), buf->word, 8); /* again: the label's and sigma's DMAs reused the buffer */
    int32_t* bias_word = (int32_t*)buf->word;
    bias_word[0] = saturate_model((int64_t)bias_word[0] + coef, sat);
    mram_write(buf->word, at(c->w + c->n_pad * 4), 8);
  }
  return coef;
}

/* w + coef x toward zero for one int8 feature x, saturated. */
static INLINE int32_t add_scaled(int32_t w, int8_t x, byte_split_t coef, saturation_t* sat) {
  return saturate_model((int64_t)w + shift_toward_zero(times(x, coef), FEATURE_FRAC_BITS), sat);
}

static void update_dense_block(const config_t* c, buffers_t* buf, uint32_t r, uint32_t b, byte_split_t coef,
                               saturation_t* sat) {
  const int8_t* x = buf->x;
  int32_t* w = buf->w;
  mram_read(at(c->x + r * c->n_pad + b * FEATURE_BLOCK), buf->x, FEATURE_BLOCK);
  const uint32_t w_address = c->w + b * (FEATURE_BLOCK * 4);
  mram_read(at(w_address), w, 4 * FEATURE_BLOCK);
  for (uint32_t j = 0; j < FEATURE_BLOCK; ++j) w[j] = add_scaled(w[j], x[j], coef, sat);
  mram_write(w, at(w_address), 4 * FEATURE_BLOCK);
}

static void update_sparse_row(const config_t* c, buffers_t* buf, uint32_t r, byte_split_t coef, saturation_t* sat) {
  uint32_t begin, end;
  row_range(c, buf, r, &begin, &end);
  int64_t* word = buf->word + 1;
  for (uint32_t k = begin; k < end; k += SPARSE_WINDOW) {
    uint32_t* cols;
    int8_t* vals;
    const uint32_t window = window_at(c, buf, k, end, &cols, &vals);
    for (uint32_t i = 0; i < window; ++i) {
      const uint32_t col = cols[i];
      const uint32_t address = c->w + (col & ~1u) * 4;
      mram_read(at(address), word, 8);
      int32_t* pair = (int32_t*)word;
      pair[col & 1u] = add_scaled(pair[col & 1u], vals[i], coef, sat);
      mram_write(word, at(address), 8);
    }
  }
}

/* One dual coordinate step per step's row: a dense row's feature blocks shared by the tasklets (three barriers per
 * row), a sparse row tasklet 0's alone. */
static void dual_ascent_pass(const config_t* c, buffers_t* buf, saturation_t* sat, uint32_t tasklet) {
  for (uint32_t step = 0; step < c->steps; ++step) {
    if (tasklet == 0) load_row_list(c, step, 0);
    barrier_wait(&step_barrier);
    if (count[0] == 0) continue;
    const uint32_t r = rows[0];
    if (c->sparse) {
      if (tasklet == 0) {
        const int64_t coef = take_step(c, buf, r, sparse_dot(c, buf, r), sat);
        if (coef != 0) update_sparse_row(c, buf, r, split_bytes((int32_t)coef), sat);
      }
      barrier_wait(&step_barrier); /* the next row's score reads the updated model */
      continue;
    }
    int64_t partial = 0;
    for (uint32_t b = tasklet; b < c->blocks; b += NR_TASKLETS) partial += dense_dot_block(c, buf, r, b);
    partials[tasklet] = partial;
    barrier_wait(&step_barrier);
    if (tasklet == 0) {
      int64_t score = 0;
      for (uint32_t k = 0; k < NR_TASKLETS; ++k) score += partials[k];
      dual_coef = take_step(c, buf, r, score, sat);
    }
    barrier_wait(&step_barrier);
    const int64_t coef = dual_coef;
    if (coef != 0) {
      const byte_split_t split = split_bytes((int32_t)coef);
      for (uint32_t b = tasklet; b < c->blocks; b += NR_TASKLETS) update_dense_block(c, buf, r, b, split, sat);
    }
  }
}

/* ------------------------------------------------------------------------------------------- main */

int main(void) {
  const uint32_t tasklet = me();
  if (tasklet == 0) mem_reset();
  barrier_wait(&step_barrier);
  const config_t config = load_config();
  const config_t* c = &config;
  buffers_t buffers;
  buffers_t* buf = &buffers;
  buf->x = (int8_t*)mem_alloc(SPARSE_WINDOW + 8);
  buf->w = (int32_t*)mem_alloc(4 * FEATURE_BLOCK);
  buf->v = (int32_t*)mem_alloc(4 * FEATURE_BLOCK);
  buf->acc = (int64_t*)mem_alloc(8 * FEATURE_BLOCK);
  buf->col = (uint8_t*)buf->acc; /* the column window is used only where the sums are not */
  buf->word = (int64_t*)mem_alloc(16);
  saturation_t saturation = {0};
  if (c->mode == PIMOPT_KERNEL_DUAL_ASCENT) {
    dual_ascent_pass(c, buf, &saturation, tasklet);
    saturations[tasklet] += saturation.events;
    return 0;
  }
  if (c->sparse && c->mode == PIMOPT_KERNEL_GRADIENT) {
    clear_block(buf->acc); /* the host read the previous step's sums; start from zero */
    for (uint32_t b = tasklet; b < c->blocks; b += NR_TASKLETS) {
      mram_write(buf->acc, at(c->g + b * (FEATURE_BLOCK * 8)), 8 * FEATURE_BLOCK);
    }
    barrier_wait(&step_barrier);
  }
  const uint32_t bias_owner = NR_TASKLETS - 1;
  for (uint32_t step = 0; step < c->steps; ++step) {
    uint32_t step_rows = 0;
    int64_t bias_sum = 0; /* bias owner only */
    for (uint32_t chunk = 0;; ++chunk) {
      if (tasklet == 0) load_row_list(c, step, chunk);
      barrier_wait(&step_barrier);
      const uint32_t n = count[0];
      if (n == 0) break;
      mram_read(at(c->w + c->n_pad * 4), buf->word, 8);
      const int32_t bias = ((const int32_t*)buf->word)[0];
      if ((c->feature_split && !c->sparse) || (c->artifact && c->sparse)) {
        if (c->sparse) {
          sparse_feature_split_chunk(c, buf, n, bias, tasklet);
        } else {
          feature_split_chunk(c, buf, n, bias, chunk, tasklet);
        }
        if (tasklet == bias_owner) bias_sum += sum_of(n);
        step_rows += n;
        barrier_wait(&step_barrier);
        if (n < MAX_ROWS_PER_STEP) break;
        continue;
      }
      /* Phase A: scores and derivatives, one row per tasklet at a time. */
      for (uint32_t i = tasklet; i < n; i += NR_TASKLETS) {
        const uint32_t r = rows[i];
        int64_t z = c->fit_bias ? shl64(bias, FEATURE_FRAC_BITS) : 0;
        z += c->sparse ? sparse_dot(c, buf, r) : dense_dot(c, buf, r);
        d[i] = row_derivative(c, buf, r, shift_toward_zero(z, FEATURE_FRAC_BITS));
      }
      barrier_wait(&step_barrier);
      /* Phase B: this chunk's d_i x_i added to G. */
      if (c->sparse) {
        sparse_scatter(c, buf, n, tasklet);
      } else {
        for (uint32_t b = tasklet; b < c->blocks; b += NR_TASKLETS) dense_accumulate(c, buf, n, b, chunk);
      }
      if (tasklet == bias_owner) bias_sum += sum_of(n);
      step_rows += n;
      barrier_wait(&step_barrier); /* the next chunk overwrites the row list and the derivatives */
      if (n < MAX_ROWS_PER_STEP) break;
    }
    if (step_rows == 0) continue;
    /* Output (mode 0) or update (modes 1, 2) from the sums. */
    const int updates = c->mode != PIMOPT_KERNEL_GRADIENT;
    const scaler_t step_scale = make_scaler(updates ? c->lr_weight_q32 / step_rows : 0);
    if (tasklet == bias_owner) update_bias(c, buf, bias_sum, &step_scale, &saturation);
    if (!updates && c->artifact && !c->sparse) {
      for (uint32_t b = tasklet; b < c->blocks; b += NR_TASKLETS) narrow_block(c, buf, b, &saturation);
    }
    if (updates && c->sparse_update) {
      sparse_update(c, buf, step, &step_scale, &saturation, tasklet);
    } else if (updates) {
      const scaler_t decay = make_scaler(c->decay_q32);
      for (uint32_t b = tasklet; b < c->blocks; b += NR_TASKLETS) {
        const uint32_t g_address = c->g + b * (FEATURE_BLOCK * 8);
        mram_read(at(g_address), buf->acc, 8 * FEATURE_BLOCK);
        update_block(c, buf, b, &step_scale, &decay, &saturation);
        if (c->sparse) { /* the next step's scatter adds to G: clear it (dense chunks overwrite it) */
          clear_block(buf->acc);
          mram_write(buf->acc, at(g_address), 8 * FEATURE_BLOCK);
        }
      }
    }
    barrier_wait(&step_barrier); /* the next step reads the updated model */
  }
  saturations[tasklet] += saturation.events; /* accumulates over launches */
  return 0;
}
