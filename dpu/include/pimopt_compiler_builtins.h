/* pimopt's DPU headers (see attributes.h). What the SDK's DPU compiler knows without a header (its builtins), made
 * known to every file pimopt-dpu-cc compiles (it is included first): __builtin_nop_(), one nop instruction (a
 * synchronization microbenchmark spins on it to make critical sections of a given length), an opaque call here
 * that the optimizer keeps and the emulator charges one issue slot. */
#ifndef PIMOPT_DPU_COMPILER_BUILTINS_H
#define PIMOPT_DPU_COMPILER_BUILTINS_H

#ifdef __cplusplus
extern "C" {
#endif
void __pimopt_dpu_nop(void);
#ifdef __cplusplus
}
#endif
#define __builtin_nop_() __pimopt_dpu_nop()

#endif
