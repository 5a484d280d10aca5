/* pimopt's DPU headers (see attributes.h). barrier.h: BARRIER_INIT(name, count) declares a barrier of `count`
 * tasklets; barrier_wait(&name) holds a tasklet until `count` have arrived. */
#ifndef PIMOPT_DPU_BARRIER_H
#define PIMOPT_DPU_BARRIER_H

#include <stdint.h>

typedef struct barrier_t {
  uint32_t count;
  uint32_t id; /* set on first use: the emulator's barrier number */
} barrier_t;

#ifdef __cplusplus
extern "C" {
#endif
void barrier_wait(barrier_t* barrier);
#ifdef __cplusplus
}
#endif

#define BARRIER_INIT(name, counter) barrier_t name = {(counter), 0}

#endif
