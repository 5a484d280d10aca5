/* pimopt's DPU headers (see attributes.h). mutex.h: MUTEX_INIT(name) declares a mutex; mutex_lock and mutex_unlock
 * take and release it. As the SDK's, a mutex is one byte (mutex_id_t is a uint8_t pointer: a program may lock the
 * bytes of an array of its own, as SimplePIM's tables do); the emulator keeps who holds it, and reports a
 * mutex_unlock by a tasklet that does not hold it at its line. */
#ifndef PIMOPT_DPU_MUTEX_H
#define PIMOPT_DPU_MUTEX_H

#include <stdint.h>

#include <atomic_bit.h> /* as the SDK's mutex.h */
#include "attributes.h"

typedef uint8_t* mutex_id_t;

#ifdef __cplusplus
extern "C" {
#endif
void mutex_lock(mutex_id_t mutex);
void mutex_unlock(mutex_id_t mutex);
#ifdef __cplusplus
}
#endif

/* The mutex MUTEX_INIT(name) declared, as a mutex_id_t. */
#define MUTEX_GET(name) name

#define MUTEX_INIT(name)                 \
  uint8_t __pimopt_mutex_##name = 0;     \
  const mutex_id_t name = &__pimopt_mutex_##name

#endif
