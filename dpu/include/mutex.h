/* pimopt's DPU headers (see attributes.h). mutex.h: MUTEX_INIT(name) declares a mutex; mutex_lock and mutex_unlock
 * take and release it. */
#ifndef PIMOPT_DPU_MUTEX_H
#define PIMOPT_DPU_MUTEX_H

#include <stdint.h>

typedef struct mutex_t {
  uint32_t holder; /* the holding tasklet + 1, 0 when free: the runtime checks mutex_unlock against it */
} * mutex_id_t;

#ifdef __cplusplus
extern "C" {
#endif
void mutex_lock(mutex_id_t mutex);
void mutex_unlock(mutex_id_t mutex);
#ifdef __cplusplus
}
#endif

#define MUTEX_INIT(name)                  \
  struct mutex_t __pimopt_mutex_##name = {0}; \
  const mutex_id_t name = &__pimopt_mutex_##name

#endif
