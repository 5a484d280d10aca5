/* The linear training kernel's argument block: what the host pushes to the kernel's WRAM variable "args" before
 * each launch (include/pimopt/backends/pim/linear_kernel.h describes the kernel and its modes).
 *
 * Plain C (C99 and C++), so that a DPU program built with the UPMEM toolchain could include this header and read
 * the block the host writes, byte for byte: fixed-width fields, 64-bit fields 8-byte aligned, no implicit padding
 * (144 bytes). The emulator's kernel and the host use the C++ view LinearKernelArgs (typed modes and losses), which
 * linear_kernel.h checks field by field against this layout. */
#ifndef PIMOPT_BACKENDS_PIM_LINEAR_KERNEL_ARGS_H_
#define PIMOPT_BACKENDS_PIM_LINEAR_KERNEL_ARGS_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What a launch computes (the field `mode`). */
enum pimopt_kernel_mode {
  PIMOPT_KERNEL_GRADIENT = 0,     /* G = sum of d_i x_i over the listed rows (GA-SGD, MB-SGD) */
  PIMOPT_KERNEL_LOCAL_SGD = 1,    /* `steps` local mini-batch steps with L2 decay (MA-SGD, SGD) */
  PIMOPT_KERNEL_PROXIMAL_SGD = 2, /* local steps pulled towards V (ADMM's x-update) */
  PIMOPT_KERNEL_DUAL_ASCENT = 3   /* one dual coordinate step per listed row (CoCoA's local solver) */
};

/* The loss (the field `loss`). */
enum pimopt_kernel_loss { PIMOPT_KERNEL_LOGISTIC = 0, PIMOPT_KERNEL_HINGE = 1 };

typedef struct pimopt_linear_kernel_args {
  uint32_t mode;      /* enum pimopt_kernel_mode */
  uint32_t loss;      /* enum pimopt_kernel_loss */
  uint32_t n_pad;     /* features per row in MRAM (a multiple of 128) */
  uint32_t artifact;  /* 1: PIM-Opt's kernel */
  uint32_t steps;
  uint32_t slots_per_step; /* row-list entries per step (valid rows first, then 0xFFFFFFFF) */
  uint32_t fit_bias;
  uint32_t sparse;
  uint64_t lr_weight_q32;  /* lr * worker weight, Q0.32 (local modes; divided by the step's row count) */
  uint64_t decay_q32;      /* lr * l2 (local SGD) or lr * rho (proximal), Q0.32 */
  uint32_t sigmoid_float;  /* 1: PIM-Opt's software-float sigmoid; 0: the fixed-point table */
  uint32_t feature_split;  /* 1 (dense only): PIM-Opt's per-sample feature split over tasklets */
  int32_t positive_weight_q24;
  int32_t negative_weight_q24;
  uint32_t sparse_update; /* 1: a local step updates only the coordinates its rows touch */
  uint32_t reserved;      /* keeps the 64-bit fields below 8-byte aligned */
  /* MRAM offsets of the kernel's regions (sparse: x_offset holds the row pointers). Dual ascent (mode 3) has no
   * proximal target and no gradient sums: its regions take their places, under their own names: the rows' duals
   * (int32 Q.24 each) and their step parameters (3 x uint64 Q.32 per row). */
  uint64_t x_offset, y_offset, w_offset;
  union {
    uint64_t v_offset;    /* modes 0-2: the proximal target V (and PIM-Opt's int32 gradients) */
    uint64_t dual_offset; /* mode 3: the rows' duals */
  };
  union {
    uint64_t g_offset;           /* modes 0-2: the gradient sums G */
    uint64_t row_params_offset;  /* mode 3: the rows' step parameters */
  };
  uint64_t list_offset, sigmoid_offset;
  uint64_t col_offset, val_offset;
} pimopt_linear_kernel_args;

#ifdef __cplusplus
}
#endif

#endif /* PIMOPT_BACKENDS_PIM_LINEAR_KERNEL_ARGS_H_ */
