/* pimopt's DPU headers (see attributes.h). profiling.h: the SDK's profiling sections (PROFILING_INIT(name),
 * profiling_start(&name), profiling_stop(&name)), which the SDK's profiler reads; some programs include the header
 * and use nothing of it (usecase_dpu_alignment). Here a section counts the cycles between its starts and stops
 * (perfcounter_get), in a host-readable variable; pimopt's own profile of a run is PIMOPT_REPORT. */
#ifndef PIMOPT_DPU_PROFILING_H
#define PIMOPT_DPU_PROFILING_H

#include <stdint.h>

#include "attributes.h"
#include "perfcounter.h"

typedef struct {
  uint64_t start;
  uint64_t cycles;
} dpu_profiling_t;

#define PROFILING_INIT(name) __host dpu_profiling_t name

static inline void profiling_start(dpu_profiling_t* section) { section->start = perfcounter_get(); }
static inline void profiling_stop(dpu_profiling_t* section) { section->cycles += perfcounter_get() - section->start; }

#endif
