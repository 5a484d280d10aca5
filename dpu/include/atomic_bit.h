/* pimopt's DPU headers (see attributes.h). atomic_bit.h: the SDK's named atomic bits, which some programs use to
 * set up barriers by hand (barrier_t.lock). Here they are plain bytes: the emulator's barriers and mutexes do not
 * use them. */
#ifndef PIMOPT_DPU_ATOMIC_BIT_H
#define PIMOPT_DPU_ATOMIC_BIT_H

#include <stdint.h>

#define ATOMIC_BIT_INIT(name) uint8_t __pimopt_atomic_bit_##name
#define ATOMIC_BIT_GET(name) __pimopt_atomic_bit_##name
#define ATOMIC_BIT_EXTERN(name) extern uint8_t __pimopt_atomic_bit_##name

#endif
