/* pimopt's DPU headers (see attributes.h). defs.h: the tasklet's identity. */
#ifndef PIMOPT_DPU_DEFS_H
#define PIMOPT_DPU_DEFS_H

#include <stdint.h>

#include "attributes.h"

#ifndef NR_TASKLETS
#define NR_TASKLETS 1 /* the SDK's default (pimopt-dpu-cc defines it on every command line) */
#endif

typedef uint32_t sysname_t;

/* The loader reads the program's tasklet count here. pimopt-dpu-cc defines it in a linked program's first file from
 * the command line's NR_TASKLETS (before the file's own text, with __PIMOPT_DPU_NR_TASKLETS_DEFINED), which this
 * weak definition in the other files gives way to: a program that does not include defs.h has one too. */
#ifndef __PIMOPT_DPU_NR_TASKLETS_DEFINED
__attribute__((weak)) const uint32_t __pimopt_dpu_nr_tasklets = NR_TASKLETS;
#endif

#ifdef __cplusplus
extern "C" {
#endif
/* The running tasklet's number, 0 to NR_TASKLETS - 1: a register read on the DPU, which its compiler knows reads no
 * memory, so a loop that calls me() computes it once and keeps the values it loaded (const: the optimizer whose code
 * the cost pass charges knows it too). */
__attribute__((const)) sysname_t __pimopt_dpu_me(void);
#ifdef __cplusplus
}
#endif
#define me() __pimopt_dpu_me()

#endif
