/* The linear kernel's argument block is plain C, as a DPU program would compile it: this file is built by the C
 * compiler with the test suite (C11 for the assertions), and fails the build when the header stops being C or its
 * layout moves. */
#include <stddef.h>

#include "pimopt/backends/pim/linear_kernel_args.h"

_Static_assert(sizeof(pimopt_linear_kernel_args) == 144, "the argument block is 144 bytes");
_Static_assert(offsetof(pimopt_linear_kernel_args, lr_weight_q32) == 32, "64-bit fields start 8-byte aligned");
_Static_assert(offsetof(pimopt_linear_kernel_args, x_offset) == 72, "the MRAM offsets start 8-byte aligned");
_Static_assert(PIMOPT_KERNEL_PROXIMAL_SGD == 2 && PIMOPT_KERNEL_HINGE == 1, "the modes' and losses' values");

int pimopt_kernel_args_c_check(void) { return (int)sizeof(pimopt_linear_kernel_args); }
