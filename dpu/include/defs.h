/* pimopt's DPU headers (see attributes.h). defs.h: the tasklet's identity. */
#ifndef PIMOPT_DPU_DEFS_H
#define PIMOPT_DPU_DEFS_H

#include <stdint.h>

#include "attributes.h"

#ifndef NR_TASKLETS
#define NR_TASKLETS 1 /* the SDK's default (pimopt-dpu-cc defines it on every command line) */
#endif

typedef uint32_t sysname_t;

/* The loader reads the program's tasklet count here (pimopt-dpu-cc also links a definition of its own, from the
 * command line's NR_TASKLETS, which replaces this one: a program that does not include defs.h has one too). */
__attribute__((weak)) const uint32_t __pimopt_dpu_nr_tasklets = NR_TASKLETS;

#ifdef __cplusplus
extern "C" {
#endif
/* The running tasklet's number, 0 to NR_TASKLETS - 1. */
sysname_t __pimopt_dpu_me(void);
#ifdef __cplusplus
}
#endif
#define me() __pimopt_dpu_me()

#endif
