/* pimopt's host headers (see dpu_error.h). dpu_probe.h: energy and time probes around the DPUs' work, as PrIM's
 * programs use them (built with ENERGY=1). A probe sums, over each window from dpu_probe_start to dpu_probe_stop,
 * the modeled energy of the DPUs' work (each launch's DPU energy and each host <-> DPU transfer's; the profile's
 * energy model, pimopt docs/pim-emulator.md "Energy") and the modeled seconds that passed; dpu_probe_get gives the
 * sum over the windows (DPU_ACCUMULATE) or its mean per window (DPU_AVERAGE). A real probe reads the DIMMs' power
 * meters: this one reads the model. */
#ifndef PIMOPT_DPU_PROBE_H
#define PIMOPT_DPU_PROBE_H

#include <stdint.h>

#include "dpu_error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum _dpu_probe_option_t PIMOPT_DPU_ENUM_BASE { DPU_ENERGY, DPU_TIME } dpu_probe_option_t;
typedef enum _dpu_probe_aggregation_t PIMOPT_DPU_ENUM_BASE { DPU_ACCUMULATE, DPU_AVERAGE } dpu_probe_aggregation_t;

/* Opaque to the program: filled by dpu_probe_init. */
struct dpu_probe_t {
  char name[64];
  int initialized;
  int running;
  uint32_t windows;           /* completed start-stop windows */
  double energy_j, time_s;    /* summed over the completed windows */
  double start_energy_j, start_time_s;
};

dpu_error_t dpu_probe_init(const char* name, struct dpu_probe_t* probe);
dpu_error_t dpu_probe_start(struct dpu_probe_t* probe);
dpu_error_t dpu_probe_stop(struct dpu_probe_t* probe);
/* The window's sum or mean; DPU_ERR_INTERNAL (with pimopt's account on stderr) before any window completed. */
dpu_error_t dpu_probe_get(struct dpu_probe_t* probe, dpu_probe_option_t option, dpu_probe_aggregation_t aggregation,
                          double* value);
dpu_error_t dpu_probe_deinit(struct dpu_probe_t* probe);

#ifdef __cplusplus
}
#endif

#endif
