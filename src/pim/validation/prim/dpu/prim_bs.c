/* PrIM's BS (binary search of a sorted int64 vector in MRAM) as a DPU program for the UPMEM SDK: pimopt's own text
 * of the kernel structure of [PrIM] dpu/task.c as [uPIMulator] timed it (BL undefined: 256-byte blocks; DTYPE =
 * int64_t). The heap holds the whole sorted vector, then this DPU's queries; each tasklet searches its share of
 * the queries in turn. A query is read with an 8-byte DMA into a variable on the tasklet's stack; each step of the
 * search reads the 256-byte block at the midpoint (a byte address, often only 4-byte aligned: the DPU ignores the
 * low 3 bits) and scans it. Each tasklet's DPU_RESULTS entry keeps the index of the last query it found. */
#include <alloc.h>
#include <barrier.h>
#include <defs.h>
#include <mram.h>
#include <stdbool.h>
#include <stdint.h>

#ifdef BL
#define BLOCK_SIZE_LOG2 BL
#else
#define BLOCK_SIZE_LOG2 8
#endif
#define BLOCK_SIZE (1 << BLOCK_SIZE_LOG2)

#ifndef DTYPE
#define DTYPE int64_t
#endif
/* sizeof(DTYPE) as the DPU's 32-bit size_t */
#define DTYPE_BYTES ((uint32_t)sizeof(DTYPE))

typedef struct {
  uint64_t input_size;    /* elements of the sorted vector */
  uint64_t slice_per_dpu; /* this DPU's queries */
  uint32_t kernel;
} dpu_arguments_t;

typedef struct {
  DTYPE found;
} dpu_results_t;

__host dpu_arguments_t DPU_INPUT_ARGUMENTS;
__host dpu_results_t DPU_RESULTS[NR_TASKLETS];

/* The query's index in the block, -1 if the block starts at or below it but lacks it, -2 if the block starts above
 * it. */
static DTYPE __attribute__((noinline)) search(DTYPE *bufferA, DTYPE searching_for) {
  DTYPE found = -2;
  if (bufferA[0] <= searching_for) {
    found = -1;
    for (uint32_t i = 0; i < BLOCK_SIZE / DTYPE_BYTES; i++) {
      if (bufferA[i] == searching_for) {
        found = i;
        break;
      }
    }
  }
  return found;
}

BARRIER_INIT(my_barrier, NR_TASKLETS);

static int main_kernel1(void) {
  const unsigned int tasklet_id = me();
  if (tasklet_id == 0) mem_reset();
  barrier_wait(&my_barrier);

  DTYPE searching_for, found;
  const uint64_t input_size = DPU_INPUT_ARGUMENTS.input_size;

  /* MRAM addresses: the vector's bounds and the tasklet's next query */
  uint32_t start_mram_block_addr_A = (uint32_t)DPU_MRAM_HEAP_POINTER;
  uint32_t start_mram_block_addr_aux = start_mram_block_addr_A;
  uint32_t end_mram_block_addr_A = start_mram_block_addr_A + sizeof(DTYPE) * input_size;
  uint32_t current_mram_block_addr_query =
      end_mram_block_addr_A + tasklet_id * (DPU_INPUT_ARGUMENTS.slice_per_dpu / NR_TASKLETS) * sizeof(DTYPE);

  DTYPE *cache_A = (DTYPE *)mem_alloc(BLOCK_SIZE);
  DTYPE *cache_aux_A = (DTYPE *)mem_alloc(BLOCK_SIZE);
  DTYPE *cache_aux_B = (DTYPE *)mem_alloc(BLOCK_SIZE);

  dpu_results_t *result = &DPU_RESULTS[tasklet_id];

  /* [uPIMulator]'s text has a 32-bit count here (PrIM's, 64-bit) */
  for (uint32_t targets = 0; targets < (DPU_INPUT_ARGUMENTS.slice_per_dpu / NR_TASKLETS); targets++) {
    found = -1;

    mram_read((__mram_ptr void const *)current_mram_block_addr_query, &searching_for, 8);
    current_mram_block_addr_query += 8;

    bool end = false;

    start_mram_block_addr_A = (uint32_t)DPU_MRAM_HEAP_POINTER;
    start_mram_block_addr_aux = start_mram_block_addr_A;
    end_mram_block_addr_A = start_mram_block_addr_A + sizeof(DTYPE) * input_size;

    uint32_t current_mram_block_addr_A = start_mram_block_addr_A;

    /* the vector's first and last blocks (PrIM reads them and does not use them; the second starts 8 blocks'
     * worth of bytes before the end) */
    mram_read((__mram_ptr void const *)current_mram_block_addr_A, cache_aux_A, BLOCK_SIZE);
    mram_read((__mram_ptr void const *)(end_mram_block_addr_A - BLOCK_SIZE * DTYPE_BYTES), cache_aux_B, BLOCK_SIZE);

    current_mram_block_addr_A = (start_mram_block_addr_A + end_mram_block_addr_A) / 2;
    while (!end) {
      mram_read((__mram_ptr void const *)current_mram_block_addr_A, cache_A, BLOCK_SIZE);
      found = search(cache_A, searching_for);

      if (found > -1) {
        result->found = found + (current_mram_block_addr_A - start_mram_block_addr_aux) / DTYPE_BYTES;
        break;
      }

      if (found == -2) { /* the query is below the block: keep the lower half */
        end_mram_block_addr_A = current_mram_block_addr_A;
        current_mram_block_addr_A = (current_mram_block_addr_A + start_mram_block_addr_A) / 2;
      } else if (found == -1) { /* above it: keep the upper half */
        start_mram_block_addr_A = current_mram_block_addr_A;
        current_mram_block_addr_A = (current_mram_block_addr_A + end_mram_block_addr_A) / 2;
      }

      /* near the start: search the block there and stop */
      if (current_mram_block_addr_A < (start_mram_block_addr_aux + BLOCK_SIZE)) {
        end = true;
        mram_read((__mram_ptr void const *)current_mram_block_addr_A, cache_A, BLOCK_SIZE);
        found = search(cache_A, searching_for);
        if (found > -1) {
          end = true;
          result->found = found + (current_mram_block_addr_A - start_mram_block_addr_aux) / DTYPE_BYTES;
        }
      }

      /* near the end: search the last block and stop (the index is offset by the midpoint, as in PrIM) */
      if (current_mram_block_addr_A > (end_mram_block_addr_A - BLOCK_SIZE)) {
        end = true;
        mram_read((__mram_ptr void const *)(end_mram_block_addr_A - BLOCK_SIZE), cache_A, BLOCK_SIZE);
        found = search(cache_A, searching_for);
        if (found > -1) {
          result->found = found + (current_mram_block_addr_A - start_mram_block_addr_aux) / DTYPE_BYTES;
        }
      }
    }
  }
  return 0;
}

int (*kernels[1])(void) = {main_kernel1};

int main(void) { return kernels[DPU_INPUT_ARGUMENTS.kernel](); }
