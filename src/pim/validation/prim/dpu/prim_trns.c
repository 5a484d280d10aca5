/* PrIM's TRNS (in-place transposition of an (M_ x m) x (N_ x n) matrix of int64, steps 2 and 3 on the DPU) as a
 * DPU program for the UPMEM SDK: pimopt's own text of the kernel structure of [PrIM] dpu/task.c as [uPIMulator]
 * timed it (T = int64_t; the host passes m = 4, n = 8). Two kernels, picked by DPU_INPUT_ARGUMENTS.kernel:
 *  - kernel 0 (step 2): each tasklet takes whole m x n tiles in turn and transposes each in WRAM;
 *  - kernel 1 (step 3): the tasklets follow the cycles of the permutation of m-element tiles, taking a start tile
 *    from a shared counter (tile_mutex) and marking moved tiles in a bitmap after the matrix in MRAM (done_mutex,
 *    held across the bitmap's 8-byte read and write; the addresses are byte addresses, of which the DPU ignores the
 *    low 3 bits, so 8 tiles share one word). */
#include <alloc.h>
#include <barrier.h>
#include <defs.h>
#include <mram.h>
#include <mutex.h>
#include <stdint.h>

#ifndef T
#define T int64_t
#endif
/* sizeof(T) as the DPU's 32-bit size_t */
#define T_BYTES ((uint32_t)sizeof(T))
/* the most one DMA moves */
#define MAX_DMA_BYTES 2048u

typedef struct {
  uint32_t m;
  uint32_t n;
  uint32_t M_;
  uint32_t kernel; /* 0: step 2, 1: step 3 */
} dpu_arguments_t;

__host dpu_arguments_t DPU_INPUT_ARGUMENTS;

/* step 3's next start tile, taken under tile_mutex */
uint32_t curr_tile = 0;

BARRIER_INIT(my_barrier, NR_TASKLETS);

MUTEX_INIT(tile_mutex);
MUTEX_INIT(done_mutex);

/* Step 2's tile moves: m x n elements between MRAM (offset elements from A) and WRAM, in DMAs of at most 2 KB.
 * As in PrIM, the WRAM side advances by (moved elements) x sizeof(T) elements: the same address while a tile fits
 * one DMA, as here. */
static void __attribute__((noinline)) read_tile_step2(uint32_t A, uint32_t offset, T *variable, uint32_t m,
                                                      uint32_t n) {
  int rest = m * n;
  int transfer;
  while (rest > 0) {
    if ((uint32_t)rest * T_BYTES > MAX_DMA_BYTES)
      transfer = MAX_DMA_BYTES / T_BYTES;
    else
      transfer = rest;
    mram_read((__mram_ptr void const *)(A + (offset + m * n - rest) * T_BYTES), variable + (m * n - rest) * T_BYTES,
              T_BYTES * transfer);
    rest -= transfer;
  }
}

static void __attribute__((noinline)) write_tile_step2(uint32_t A, uint32_t offset, T *variable, uint32_t m,
                                                       uint32_t n) {
  int rest = m * n;
  int transfer;
  while (rest > 0) {
    if ((uint32_t)rest * T_BYTES > MAX_DMA_BYTES)
      transfer = MAX_DMA_BYTES / T_BYTES;
    else
      transfer = rest;
    mram_write(variable + (m * n - rest) * T_BYTES, (__mram_ptr void *)(A + (offset + m * n - rest) * T_BYTES),
               T_BYTES * transfer);
    rest -= transfer;
  }
}

/* Step 3's helpers. */
static uint32_t __attribute__((noinline)) get_tile(void) {
  mutex_lock(tile_mutex);
  const uint32_t value = curr_tile;
  curr_tile++;
  mutex_unlock(tile_mutex);
  return value;
}

static void __attribute__((noinline)) read_tile_step3(uint32_t A, uint32_t offset, T *variable, uint32_t m) {
  mram_read((__mram_ptr void const *)(A + offset * T_BYTES), variable, T_BYTES * m);
}

static void __attribute__((noinline)) write_tile_step3(uint32_t A, uint32_t offset, T *variable, uint32_t m) {
  mram_write(variable, (__mram_ptr void *)(A + offset * T_BYTES), T_BYTES * m);
}

/* Whether tile `address` has been moved: bit (address % 8) of the word read at byte address done_array + address. */
static _Bool __attribute__((noinline)) get_done(uint32_t done_array, uint32_t address, T *read_done) {
  uint32_t result;
  mutex_lock(done_mutex);
  mram_read((__mram_ptr void const *)(done_array + address), read_done, T_BYTES);
  result = ((*read_done & (0x01 << (address % T_BYTES))) != 0);
  mutex_unlock(done_mutex);
  return (_Bool)result;
}

/* The same, and marks the tile moved (the word written back before the mutex is released). */
static _Bool __attribute__((noinline)) get_and_set_done(uint32_t done_array, uint32_t address, T *read_done) {
  uint32_t result;
  mutex_lock(done_mutex);
  mram_read((__mram_ptr void const *)(done_array + address), read_done, T_BYTES);
  result = ((*read_done & (0x01 << (address % T_BYTES))) != 0);
  *read_done |= (0x01 << (address % T_BYTES));
  mram_write(read_done, (__mram_ptr void *)(done_array + address), T_BYTES);
  mutex_unlock(done_mutex);
  return (_Bool)result;
}

/* Step 2: transpose each m x n tile in place. */
static int main_kernel1(void) {
  const unsigned int tasklet_id = me();
  if (tasklet_id == 0) mem_reset();
  barrier_wait(&my_barrier);

  const uint32_t A = (uint32_t)DPU_MRAM_HEAP_POINTER;
  const uint32_t M_ = DPU_INPUT_ARGUMENTS.M_;
  const uint32_t m = DPU_INPUT_ARGUMENTS.m;
  const uint32_t n = DPU_INPUT_ARGUMENTS.n;

  T *data = (T *)mem_alloc(m * n * T_BYTES);
  T *backup = (T *)mem_alloc(m * n * T_BYTES);

  for (unsigned int tile = tasklet_id; tile < M_; tile += NR_TASKLETS) {
    read_tile_step2(A, tile * m * n, data, m, n);
    for (unsigned int i = 0; i < m * n; i++) backup[(i * m) - (m * n - 1) * (i / n)] = data[i];
    write_tile_step2(A, tile * m * n, backup, m, n);
  }
  return 0;
}

/* Step 3: move the m-element tiles along the cycles of the permutation. */
static int main_kernel2(void) {
  const unsigned int tasklet_id = me();
  if (tasklet_id == 0) mem_reset();
  barrier_wait(&my_barrier);

  const uint32_t A = (uint32_t)DPU_MRAM_HEAP_POINTER;
  const uint32_t m = DPU_INPUT_ARGUMENTS.m;
  const uint32_t n = DPU_INPUT_ARGUMENTS.n;
  const uint32_t M_ = DPU_INPUT_ARGUMENTS.M_;
  const uint32_t done_array = A + M_ * m * n * T_BYTES;
  const uint32_t tile_max = M_ * n - 1; /* the last tile, which stays in place */

  T *data = (T *)mem_alloc(T_BYTES * m);
  T *backup = (T *)mem_alloc(T_BYTES * m);
  T *read_done = (T *)mem_alloc(T_BYTES);

  uint32_t tile;
  _Bool done;

  tile = get_tile();
  while (tile < tile_max) {
    uint32_t next_in_cycle = (tile * M_) - tile_max * (tile / n);
    if (next_in_cycle == tile) {
      tile = get_tile();
      continue;
    }
    read_tile_step3(A, tile * m, data, m);
    done = get_done(done_array, tile, read_done);
    for (; done == 0; next_in_cycle = (next_in_cycle * M_) - tile_max * (next_in_cycle / n)) {
      read_tile_step3(A, next_in_cycle * m, backup, m);
      done = get_and_set_done(done_array, next_in_cycle, read_done);
      if (!done) write_tile_step3(A, next_in_cycle * m, data, m);
      for (uint32_t i = 0; i < m; i++) data[i] = backup[i];
    }
    tile = get_tile();
  }
  return 0;
}

int (*kernels[2])(void) = {main_kernel1, main_kernel2};

int main(void) { return kernels[DPU_INPUT_ARGUMENTS.kernel](); }
