/* pimopt's DPU headers (see attributes.h). sem.h: SEMAPHORE_INIT(name, count) declares a counting semaphore with
 * `count` tokens when the program is loaded; sem_take takes one (waiting while there is none), sem_give gives one
 * back. Like any WRAM variable, its count stays from one launch to the next. */
#ifndef PIMOPT_DPU_SEM_H
#define PIMOPT_DPU_SEM_H

#include <stdint.h>

typedef struct sem_t {
  int32_t initial; /* the count at load: the loader reads it */
  uint32_t unused;
} sem_t;

#ifdef __cplusplus
extern "C" {
#endif
void sem_take(sem_t* semaphore);
void sem_give(sem_t* semaphore);
#ifdef __cplusplus
}
#endif

/* Ends with its own ';', as the SDK's. */
#define SEMAPHORE_INIT(name, count) \
  sem_t name __attribute__((section(".pimopt.semaphore"), aligned(8))) = {(count), 0};

#endif
