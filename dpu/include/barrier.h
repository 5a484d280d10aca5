/* pimopt's DPU headers (see attributes.h). barrier.h: BARRIER_INIT(name, count) declares a barrier of `count`
 * tasklets; barrier_wait(&name) holds a tasklet until `count` have arrived. */
#ifndef PIMOPT_DPU_BARRIER_H
#define PIMOPT_DPU_BARRIER_H

#include <stdint.h>

#include <atomic_bit.h> /* as the SDK's barrier.h */
#include "attributes.h"

/* The SDK's layout (some programs set up barriers field by field): the emulator uses initial_count, the number of
 * tasklets that meet there. */
typedef struct barrier_t {
  uint8_t wait_queue;
  uint8_t count;
  uint8_t initial_count;
  uint8_t lock;
} barrier_t;

#ifdef __cplusplus
extern "C" {
#endif
void barrier_wait(barrier_t* barrier);
#ifdef __cplusplus
}
#endif

/* Ends with its own ';', as the SDK's (programs write BARRIER_INIT(name, n) with or without one). */
#define BARRIER_INIT(name, counter) barrier_t name = {0xff, (counter), (counter), 0};

#endif
