/* PrIM's GEMV kernel (matrix-vector product, int32), which both pimopt's GEMV and MLP host programs load, as a DPU
 * program for the UPMEM SDK: pimopt's own text of the kernel structure of [PrIM] dpu/task.c as [uPIMulator] timed
 * it (BL = 10, T = int32_t). The MRAM heap holds max_rows rows of n_size_pad elements (row i at i x n_size
 * elements), then the vector, then the results. Each tasklet takes its share of the rows in pairs; a row is read in
 * 1 KB blocks, and a row that starts at an address that is not 8-byte aligned (odd n_size) is read from the aligned
 * address below it (the DPU ignores the low 3 bits) and shifted down one element. Each pair's two sums are written
 * with one 8-byte DMA. */
#include <alloc.h>
#include <barrier.h>
#include <defs.h>
#include <mram.h>
#include <stdint.h>
#include <stdio.h>

#ifndef BL
#define BL 10
#endif
#define BLOCK_SIZE_LOG2 BL
#define BLOCK_SIZE (1 << BLOCK_SIZE_LOG2)

#ifndef T
#define T int32_t
#endif
/* sizeof(T) as the DPU's 32-bit size_t */
#define T_BYTES ((uint32_t)sizeof(T))
/* elements per block */
#define BLOCK_ELEMS (BLOCK_SIZE / T_BYTES)

typedef struct {
  uint32_t n_size;     /* elements per row */
  uint32_t n_size_pad; /* n_size rounded up to even */
  uint32_t nr_rows;    /* this DPU's rows */
  uint32_t max_rows;   /* the most rows of any DPU, even */
} dpu_arguments_t;

__host dpu_arguments_t DPU_INPUT_ARGUMENTS;

/* One block's dot product, added into bufferC[pos]. */
static void __attribute__((noinline)) gemv(T *bufferC, T *bufferA, T *bufferB, int pos) {
  for (unsigned int i = 0; i < BLOCK_ELEMS; i++) bufferC[pos] += bufferA[i] * bufferB[i];
}

BARRIER_INIT(my_barrier, NR_TASKLETS);

int main(void) {
  const unsigned int tasklet_id = me();
  if (tasklet_id == 0) mem_reset();
  barrier_wait(&my_barrier);

  const int32_t n_size = DPU_INPUT_ARGUMENTS.n_size;
  const int32_t n_size_pad = DPU_INPUT_ARGUMENTS.n_size_pad;
  const uint32_t nr_rows = DPU_INPUT_ARGUMENTS.nr_rows;
  const uint32_t max_rows = DPU_INPUT_ARGUMENTS.max_rows;

  /* The rows in pairs: each tasklet gets dbl_chunks rows, and the first rest_rows / 2 tasklets (rounded up) two
   * more; start_row is the first row of the tasklet's run. */
  const unsigned int nrows = nr_rows;
  unsigned int rows_per_tasklet;
  unsigned int start_row;
  const unsigned int chunks = nrows / (NR_TASKLETS + NR_TASKLETS);
  const unsigned int dbl_chunks = chunks + chunks;
  rows_per_tasklet = dbl_chunks;
  const unsigned int rest_rows = nrows % (NR_TASKLETS + NR_TASKLETS);
  if ((tasklet_id + tasklet_id) < rest_rows) rows_per_tasklet += 2;
  if (rest_rows > 0) {
    if ((tasklet_id + tasklet_id) >= rest_rows) {
      const unsigned int hlf_rest_rows = rest_rows >> 1;
      if ((rest_rows & 1) == 1)
        start_row = (hlf_rest_rows + 1) * (dbl_chunks + 2) + (tasklet_id - 1 - hlf_rest_rows) * dbl_chunks;
      else
        start_row = hlf_rest_rows * (dbl_chunks + 2) + (tasklet_id - hlf_rest_rows) * dbl_chunks;
    } else {
      start_row = tasklet_id * (dbl_chunks + 2);
    }
  } else {
    start_row = tasklet_id * dbl_chunks;
  }

  const uint32_t heap = (uint32_t)DPU_MRAM_HEAP_POINTER;
  const uint32_t mram_base_addr_A = heap + start_row * n_size * T_BYTES;
  const uint32_t mram_base_addr_B = heap + max_rows * n_size_pad * T_BYTES;
  uint32_t mram_base_addr_C = heap + max_rows * n_size_pad * T_BYTES + n_size_pad * T_BYTES + start_row * T_BYTES;
  uint32_t mram_temp_addr_A = mram_base_addr_A;
  uint32_t mram_temp_addr_B = mram_base_addr_B;

  T *cache_A = (T *)mem_alloc(BLOCK_SIZE + 8);
  T *cache_A_aux = (T *)mem_alloc(8);
  T *cache_B = (T *)mem_alloc(BLOCK_SIZE);
  T *cache_C = (T *)mem_alloc(8);

  int offset = 0; /* the current row starts 4 bytes past an aligned address */

  for (unsigned int i = start_row; i < start_row + rows_per_tasklet; i += 2) {
    mram_temp_addr_A = heap + i * n_size * T_BYTES;
    mram_temp_addr_B = mram_base_addr_B;

    cache_C[0] = 0;
    cache_C[1] = 0;
    for (unsigned int pos = 0; pos < 2 && i + pos < nr_rows; pos++) {
      int n = 0, j;
      /* the row's whole blocks but the last */
      for (n = 0; n < (int32_t)(n_size - BLOCK_ELEMS); n += BLOCK_ELEMS) {
        mram_read((__mram_ptr void const *)(mram_temp_addr_A), cache_A, BLOCK_SIZE);
        mram_read((__mram_ptr void const *)(mram_temp_addr_B), cache_B, BLOCK_SIZE);
        if (offset) {
          for (unsigned int off = 0; off < BLOCK_ELEMS - 1; off++) cache_A[off] = cache_A[off + 1];
          mram_read((__mram_ptr void const *)(mram_temp_addr_A + BLOCK_SIZE), cache_A_aux, 8);
          cache_A[BLOCK_ELEMS - 1] = cache_A_aux[0];
        }
        gemv(cache_C, cache_A, cache_B, pos);
        mram_temp_addr_A += BLOCK_SIZE;
        mram_temp_addr_B += BLOCK_SIZE;
      }

      /* the last block: its n_size - n elements */
      mram_read((__mram_ptr void const *)(mram_temp_addr_A), cache_A, BLOCK_SIZE);
      if (offset) {
        for (unsigned int off = 0; off < BLOCK_ELEMS - 1; off++) cache_A[off] = cache_A[off + 1];
        mram_read((__mram_ptr void const *)(mram_temp_addr_A + BLOCK_SIZE), cache_A_aux, 8);
        cache_A[BLOCK_ELEMS - 1] = cache_A_aux[0];
      }
      mram_read((__mram_ptr void const *)(mram_temp_addr_B), cache_B, BLOCK_SIZE);
      for (j = 0; j < (int)(n_size - n); j++) {
        if (j >= (int)BLOCK_ELEMS) { /* cannot happen */
          printf("error\n");
          break;
        }
        cache_C[pos] += cache_A[j] * cache_B[j];
      }

      /* the next row starts right after this one's last element */
      mram_temp_addr_A += (BLOCK_SIZE - (BLOCK_ELEMS - (n_size - n)) * T_BYTES);
      mram_temp_addr_B = mram_base_addr_B;
      if (mram_temp_addr_A % 8 != 0)
        offset = 1;
      else
        offset = 0;
    }
    mram_write(cache_C, (__mram_ptr void *)(mram_base_addr_C), 8);
    mram_base_addr_C += 2 * T_BYTES;
  }
  return 0;
}
