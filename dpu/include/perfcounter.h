/* pimopt's DPU headers (see attributes.h). perfcounter.h: the DPU's cycle counter. */
#ifndef PIMOPT_DPU_PERFCOUNTER_H
#define PIMOPT_DPU_PERFCOUNTER_H

#include <stdbool.h>
#include <stdint.h>

typedef uint64_t perfcounter_t;
typedef enum { COUNT_SAME, COUNT_CYCLES, COUNT_INSTRUCTIONS, COUNT_NOTHING } perfcounter_config_t;

#ifdef __cplusplus
extern "C" {
#endif
perfcounter_t perfcounter_config(perfcounter_config_t config, bool reset_value);
perfcounter_t perfcounter_get(void);
#ifdef __cplusplus
}
#endif

#endif
