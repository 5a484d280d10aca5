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

/* The DPU's frequency in Hz, a variable of the runtime that a program and its host read (the host by its name, with
 * dpu_copy_from) to turn counted cycles into seconds: the loader writes the profile's dpu_frequency_hz. Read-only to
 * the program, as the SDK declares it; defined here under the same name (weak: one for the whole program; writable,
 * so that it lies in WRAM, where the host reaches it) since the runtime is not a separate object. */
extern const volatile uint32_t CLOCKS_PER_SEC;
__attribute__((weak)) volatile uint32_t __pimopt_dpu_clocks_per_sec __asm__("CLOCKS_PER_SEC");

#endif
