/* pimopt's host headers (see dpu.h). dpu_management.h: the SDK's low-level management header, which some host
 * programs include without using it (upmem-db-kernels). Its functions (rank and DPU handles below the dpu.h API) are
 * not provided: a program that calls one does not link. */
#ifndef PIMOPT_DPU_MANAGEMENT_H
#define PIMOPT_DPU_MANAGEMENT_H

#include <dpu.h>

#endif
