/* pimopt's host headers (see dpu_error.h). dpu_log.h: the older name of dpu_log_read for one DPU. */
#ifndef PIMOPT_DPU_LOG_H
#define PIMOPT_DPU_LOG_H

#include <stdio.h>

#include "dpu.h"

#ifdef __cplusplus
extern "C" {
#endif
dpu_error_t dpulog_read_for_dpu(struct dpu_t* dpu, FILE* stream);
#ifdef __cplusplus
}
#endif

#endif
