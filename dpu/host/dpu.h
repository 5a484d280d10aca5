/* pimopt's host headers (see dpu_error.h). dpu.h: allocate DPUs, load a program built by pimopt-dpu-cc, move data,
 * launch, read the DPUs' logs; every call returns a dpu_error_t and, on an error, also prints pimopt's account of it
 * (which call, DPU, tasklet and source line) to stderr. pimopt's own additions are named pimopt_*. */
#ifndef PIMOPT_DPU_H
#define PIMOPT_DPU_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "dpu_error.h"

#ifdef __cplusplus
extern "C" {
#endif

struct dpu_t;
struct dpu_rank_t;
struct dpu_program_t;

enum _dpu_set_kind_t { DPU_SET_RANKS, DPU_SET_DPU };

/* A set of DPUs: the ranks of an allocation (or one rank), or one DPU. Passed by value. */
struct dpu_set_t {
  enum _dpu_set_kind_t kind;
  union {
    struct {
      uint32_t nr_ranks;
      struct dpu_rank_t** ranks;
    } list;
    struct dpu_t* dpu;
  };
};

/* A symbol of a loaded program: WRAM symbols at their WRAM address, MRAM ones at 0x08000000 + their MRAM address. */
struct dpu_symbol_t {
  uint32_t address;
  uint32_t size;
};

typedef enum _dpu_launch_policy_t PIMOPT_DPU_ENUM_BASE { DPU_ASYNCHRONOUS, DPU_SYNCHRONOUS } dpu_launch_policy_t;
typedef enum _dpu_xfer_t PIMOPT_DPU_ENUM_BASE { DPU_XFER_TO_DPU, DPU_XFER_FROM_DPU } dpu_xfer_t;
typedef enum _dpu_xfer_flags_t PIMOPT_DPU_ENUM_BASE {
  DPU_XFER_DEFAULT = 0,  /* clear the prepared buffers after the transfer */
  DPU_XFER_NO_RESET = 1, /* keep them */
  DPU_XFER_ASYNC = 2,    /* queue the transfer behind a running launch (done in order here) */
} dpu_xfer_flags_t;

#define DPU_ALLOCATE_ALL (UINT_MAX)
/* The MRAM heap's symbol (DPU_MRAM_HEAP_POINTER on the DPU side). */
#define DPU_MRAM_HEAP_POINTER_NAME "__sys_used_mram_end"

/* The calling statement's status, printed with its place when it is not DPU_OK; DPU_ASSERT then exits. */
#define DPU_CHECK(statement, on_error)                                                                   \
  do {                                                                                                   \
    dpu_error_t __pimopt_status = (statement);                                                           \
    if (__pimopt_status != DPU_OK) {                                                                     \
      fprintf(stderr, "%s:%d(%s): DPU Error (%s)\n", __FILE__, __LINE__, __func__,                       \
              dpu_error_to_string(__pimopt_status));                                                     \
      on_error;                                                                                          \
    }                                                                                                    \
  } while (0)
#define DPU_ASSERT(statement) DPU_CHECK(statement, exit(EXIT_FAILURE))

/* nr_dpus DPUs (DPU_ALLOCATE_ALL: every DPU of the emulated system), in ranks of the system's DPUs per rank.
 * `profile` is the SDK's "key=value,..." text: "backend=..." is accepted (every backend is the emulator here);
 * other keys are refused (DPU_ERR_INVALID_PROFILE). The emulated system is the profile named by the environment's
 * PIMOPT_PROFILE (default prim-2556), with PIMOPT_PROFILE_SET="field=value,..." overrides. */
dpu_error_t dpu_alloc(uint32_t nr_dpus, const char* profile, struct dpu_set_t* dpu_set);
/* nr_ranks whole ranks. */
dpu_error_t dpu_alloc_ranks(uint32_t nr_ranks, const char* profile, struct dpu_set_t* dpu_set);
dpu_error_t dpu_free(struct dpu_set_t dpu_set);
dpu_error_t dpu_get_nr_ranks(struct dpu_set_t dpu_set, uint32_t* nr_ranks);
dpu_error_t dpu_get_nr_dpus(struct dpu_set_t dpu_set, uint32_t* nr_dpus);

/* Iterators (the loops of DPU_FOREACH and DPU_RANK_FOREACH). */
struct dpu_set_rank_iterator_t {
  struct dpu_set_t* set;
  uint32_t count;
  uint32_t next_idx;
  bool has_next;
  struct dpu_set_t next;
};
struct dpu_set_dpu_iterator_t {
  struct dpu_set_rank_iterator_t rank_iterator;
  uint32_t count;
  uint32_t next_idx;
  bool has_next;
  struct dpu_set_t next;
};
struct dpu_set_rank_iterator_t dpu_set_rank_iterator_from(struct dpu_set_t* set);
void dpu_set_rank_iterator_next(struct dpu_set_rank_iterator_t* iterator);
struct dpu_set_dpu_iterator_t dpu_set_dpu_iterator_from(struct dpu_set_t* set);
void dpu_set_dpu_iterator_next(struct dpu_set_dpu_iterator_t* iterator);

#define _PIMOPT_DPU_PICK(_1, _2, _3, name, ...) name
/* DPU_FOREACH(set, dpu) or DPU_FOREACH(set, dpu, i): every DPU of `set`, in order, with its index i. */
#define DPU_FOREACH(...) _PIMOPT_DPU_PICK(__VA_ARGS__, _PIMOPT_DPU_FOREACH_I, _PIMOPT_DPU_FOREACH_X, _)(__VA_ARGS__)
#define _PIMOPT_DPU_FOREACH_X(set, dpu)                                                                       \
  for (struct dpu_set_dpu_iterator_t __dpu_it = dpu_set_dpu_iterator_from(&(set)); (dpu) = __dpu_it.next, \
                                     __dpu_it.has_next;                                                   \
       dpu_set_dpu_iterator_next(&__dpu_it))
#define _PIMOPT_DPU_FOREACH_I(set, dpu, i)                                                   \
  for (struct dpu_set_dpu_iterator_t __dpu_it = dpu_set_dpu_iterator_from(&(set));           \
       (i) = __dpu_it.count, (dpu) = __dpu_it.next, __dpu_it.has_next;                     \
       dpu_set_dpu_iterator_next(&__dpu_it))
/* DPU_RANK_FOREACH(set, rank) or DPU_RANK_FOREACH(set, rank, i): every rank of `set`. */
#define DPU_RANK_FOREACH(...) \
  _PIMOPT_DPU_PICK(__VA_ARGS__, _PIMOPT_DPU_RANK_FOREACH_I, _PIMOPT_DPU_RANK_FOREACH_X, _)(__VA_ARGS__)
#define _PIMOPT_DPU_RANK_FOREACH_X(set, rank)                                                          \
  for (struct dpu_set_rank_iterator_t __rank_it = dpu_set_rank_iterator_from(&(set));                 \
       (rank) = __rank_it.next, __rank_it.has_next; dpu_set_rank_iterator_next(&__rank_it))
#define _PIMOPT_DPU_RANK_FOREACH_I(set, rank, i)                                                       \
  for (struct dpu_set_rank_iterator_t __rank_it = dpu_set_rank_iterator_from(&(set));                 \
       (i) = __rank_it.count, (rank) = __rank_it.next, __rank_it.has_next;                            \
       dpu_set_rank_iterator_next(&__rank_it))

/* Loads the program (a file of pimopt-dpu-cc) on every DPU of the allocation `dpu_set` belongs to: one program per
 * allocation (a load on a rank or DPU of it loads the whole allocation the first time, does nothing for the program
 * already loaded, and refuses another with DPU_ERR_DIFFERENT_DPU_PROGRAMS). */
dpu_error_t dpu_load(struct dpu_set_t dpu_set, const char* binary_path, struct dpu_program_t** program);
dpu_error_t dpu_get_symbol(struct dpu_program_t* program, const char* symbol_name, struct dpu_symbol_t* symbol);

/* Runs the loaded program on every DPU of the set (the allocation, a rank or a DPU). DPU_ASYNCHRONOUS returns at
 * once in the modeled time (the emulation itself is done when the call returns); dpu_sync, dpu_status or the next
 * call on those DPUs waits, in modeled time, for the launch to end; launches on other DPUs may be in flight too. */
dpu_error_t dpu_launch(struct dpu_set_t dpu_set, dpu_launch_policy_t policy);
dpu_error_t dpu_status(struct dpu_set_t dpu_set, bool* done, bool* fault);
dpu_error_t dpu_sync(struct dpu_set_t dpu_set);

/* Copies to / from every DPU of the set (one DPU: a serial copy; more: the same bytes to each). */
dpu_error_t dpu_copy_to(struct dpu_set_t dpu_set, const char* symbol_name, uint32_t symbol_offset, const void* src,
                        size_t length);
dpu_error_t dpu_copy_from(struct dpu_set_t dpu_set, const char* symbol_name, uint32_t symbol_offset, void* dst,
                          size_t length);
dpu_error_t dpu_copy_to_symbol(struct dpu_set_t dpu_set, struct dpu_symbol_t symbol, uint32_t symbol_offset,
                               const void* src, size_t length);
dpu_error_t dpu_copy_from_symbol(struct dpu_set_t dpu_set, struct dpu_symbol_t symbol, uint32_t symbol_offset,
                                 void* dst, size_t length);
dpu_error_t dpu_broadcast_to(struct dpu_set_t dpu_set, const char* symbol_name, uint32_t symbol_offset,
                             const void* src, size_t length, dpu_xfer_flags_t flags);
dpu_error_t dpu_broadcast_to_symbol(struct dpu_set_t dpu_set, struct dpu_symbol_t symbol, uint32_t symbol_offset,
                                    const void* src, size_t length, dpu_xfer_flags_t flags);
/* The host buffer of each DPU of the set for the next dpu_push_xfer (NULL clears it). */
dpu_error_t dpu_prepare_xfer(struct dpu_set_t dpu_set, void* buffer);
/* `length` bytes to / from every DPU of the set that has a prepared buffer, as one parallel transfer. */
dpu_error_t dpu_push_xfer(struct dpu_set_t dpu_set, dpu_xfer_t xfer, const char* symbol_name, uint32_t symbol_offset,
                          size_t length, dpu_xfer_flags_t flags);
dpu_error_t dpu_push_xfer_symbol(struct dpu_set_t dpu_set, dpu_xfer_t xfer, struct dpu_symbol_t symbol,
                                 uint32_t symbol_offset, size_t length, dpu_xfer_flags_t flags);

/* What the set's DPUs printed during the last launch (one DPU: its text; more: each after a "DPU n:" line). */
dpu_error_t dpu_log_read(struct dpu_set_t dpu_set, FILE* stream);

/* Calls `callback` once per rank of the set (with that rank as a set and its index in the set), or once with the
 * whole set and index 0 (DPU_CALLBACK_SINGLE_CALL, or a set of one DPU); the first status that is not DPU_OK is
 * returned. Here every callback runs at the call, in the calling thread, once the DPUs' work in flight has ended in
 * modeled time (as after dpu_sync): DPU_CALLBACK_ASYNC and DPU_CALLBACK_NONBLOCKING are accepted and change nothing
 * else. */
typedef enum _dpu_callback_flags_t PIMOPT_DPU_ENUM_BASE {
  DPU_CALLBACK_DEFAULT = 0,
  DPU_CALLBACK_ASYNC = 1,
  DPU_CALLBACK_NONBLOCKING = 2,
  DPU_CALLBACK_SINGLE_CALL = 4,
} dpu_callback_flags_t;
dpu_error_t dpu_callback(struct dpu_set_t dpu_set, dpu_error_t (*callback)(struct dpu_set_t, uint32_t, void*),
                         void* args, dpu_callback_flags_t flags);

/* --- pimopt's additions */
/* The modeled seconds of every call so far (transfers, launches and their overheads), as the emulated system would
 * take them. With PIMOPT_MODELED_CLOCK=1 in the environment, the program's own clock (gettimeofday, clock_gettime
 * with CLOCK_REALTIME or CLOCK_MONOTONIC, on the thread that loaded the program) reads the real time spent outside
 * these calls plus this modeled time, so a program's own timers print the system's times. */
double pimopt_modeled_seconds(void);
/* The modeled seconds of the last launch's kernel (the slowest DPU) and its host overhead. */
double pimopt_last_launch_seconds(void);
/* The emulated system's name (PIMOPT_PROFILE). */
const char* pimopt_profile_name(void);

#ifdef __cplusplus
}
#endif

#endif
