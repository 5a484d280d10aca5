/* pimopt's DPU headers (see attributes.h). mutex_pool.h: MUTEX_POOL_INIT(name, size) declares `size` mutexes (a
 * power of 2) chosen by a key; mutex_pool_lock(&name, key) and mutex_pool_unlock(&name, key) take and release the
 * one numbered key & (size - 1), as the SDK's pool maps keys. Each is a mutex of mutex.h: timed and checked alike. */
#ifndef PIMOPT_DPU_MUTEX_POOL_H
#define PIMOPT_DPU_MUTEX_POOL_H

#include <stdint.h>

#include "mutex.h"

#define MUTEX_POOL_INIT(name, size)                                                                 \
  _Static_assert((size) > 0 && ((size) & ((size)-1)) == 0, "MUTEX_POOL_INIT: size must be a power of 2"); \
  uint8_t name[size]

#define __PIMOPT_MUTEX_POOL_MEMBER(pool, key) \
  (&(*(pool))[(uint32_t)(key) & (uint32_t)(sizeof(*(pool)) - 1)])
#define mutex_pool_lock(pool, key) mutex_lock(__PIMOPT_MUTEX_POOL_MEMBER(pool, key))
#define mutex_pool_unlock(pool, key) mutex_unlock(__PIMOPT_MUTEX_POOL_MEMBER(pool, key))

#endif
