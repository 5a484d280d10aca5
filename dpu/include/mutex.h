/* pimopt's DPU headers (see attributes.h). mutex.h: MUTEX_INIT(name) declares a mutex; mutex_lock and mutex_unlock
 * take and release it. */
#ifndef PIMOPT_DPU_MUTEX_H
#define PIMOPT_DPU_MUTEX_H

#include <stdint.h>

typedef struct mutex_t {
  uint32_t id; /* set on first use: the emulator's mutex number */
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
