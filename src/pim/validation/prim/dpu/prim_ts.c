/* PrIM's TS (time-series analysis: the matrix profile of a 64-element query against a series; int32) as a DPU
 * program for the UPMEM SDK: pimopt's own text of the kernel structure of [PrIM] dpu/task.c as [uPIMulator] timed it
 * (BL undefined, as its build passes -DBL10: 256-byte blocks, BLOCK_SIZE = 1 << 8; DTYPE = INT32). Each tasklet takes
 * a share of the DPU's subsequences, 64 at a time: the dot products of the 64 subsequences with the query (a 64 x 64
 * block of multiply-adds per block of query), then each subsequence's distance from the means and deviations; it
 * keeps the nearest in DPU_RESULTS. MRAM: the query, then the series slice, its means and its deviations. */
#include <alloc.h>
#include <barrier.h>
#include <defs.h>
#include <mram.h>
#include <stdint.h>

#ifndef BL
#define BLOCK_SIZE_LOG2 8
#else
#define BLOCK_SIZE_LOG2 BL
#endif
#define BLOCK_SIZE (1 << BLOCK_SIZE_LOG2)
#define DTYPE int32_t
#define DTYPE_MAX INT32_MAX
#define DOTPIP (BLOCK_SIZE / sizeof(DTYPE))

typedef struct {
  uint32_t ts_length;
  uint32_t query_length;
  DTYPE query_mean;
  DTYPE query_std;
  uint32_t slice_per_dpu;
  int32_t exclusion_zone;
  uint32_t kernel;
} dpu_arguments_t;

typedef struct {
  DTYPE minValue;
  uint32_t minIndex;
  DTYPE maxValue;
  uint32_t maxIndex;
} dpu_result_t;

__host dpu_arguments_t DPU_INPUT_ARGUMENTS;
__host dpu_result_t DPU_RESULTS[NR_TASKLETS];

BARRIER_INIT(my_barrier, NR_TASKLETS);

/* result[j] += the dot product of the subsequence starting at j (in vectorA, then vectorA_aux) with vectorB. */
static void __attribute__((noinline)) dot_product(DTYPE *vectorA, DTYPE *vectorA_aux, DTYPE *vectorB,
                                                  DTYPE *result) {
  for (uint32_t i = 0; i < BLOCK_SIZE / sizeof(DTYPE); i++) {
    for (uint32_t j = 0; j < DOTPIP; j++) {
      if ((j + i) > BLOCK_SIZE / sizeof(DTYPE) - 1) {
        result[j] += vectorA_aux[(j + i) - BLOCK_SIZE / sizeof(DTYPE)] * vectorB[i];
      } else {
        result[j] += vectorA[j + i] * vectorB[i];
      }
    }
  }
}

static int main_kernel1(void) {
  const unsigned int tasklet_id = me();
  if (tasklet_id == 0) mem_reset();
  barrier_wait(&my_barrier);

  const uint32_t query_length = DPU_INPUT_ARGUMENTS.query_length;
  const DTYPE query_mean = DPU_INPUT_ARGUMENTS.query_mean;
  const DTYPE query_std = DPU_INPUT_ARGUMENTS.query_std;
  const uint32_t slice_per_dpu = DPU_INPUT_ARGUMENTS.slice_per_dpu;

  /* This tasklet's subsequences. */
  const uint32_t myStartElem = tasklet_id * (slice_per_dpu / NR_TASKLETS);
  uint32_t myEndElem = myStartElem + (slice_per_dpu / NR_TASKLETS) - 1;
  if (myEndElem > slice_per_dpu - query_length) myEndElem = slice_per_dpu - query_length;

  /* MRAM: the query, the slice of the series (from this tasklet's start), its means, its deviations. */
  uint32_t mem_offset = (uint32_t)DPU_MRAM_HEAP_POINTER;
  uint32_t current_mram_block_addr_query = mem_offset;
  mem_offset += query_length * sizeof(DTYPE);
  mem_offset += myStartElem * sizeof(DTYPE);
  const uint32_t starting_offset_ts = mem_offset;
  uint32_t current_mram_block_addr_TS = mem_offset;
  mem_offset += (slice_per_dpu + query_length) * sizeof(DTYPE);
  uint32_t current_mram_block_addr_TSMean = mem_offset;
  mem_offset += (slice_per_dpu + query_length) * sizeof(DTYPE);
  uint32_t current_mram_block_addr_TSSigma = mem_offset;

  DTYPE *cache_TS = (DTYPE *)mem_alloc(BLOCK_SIZE);
  DTYPE *cache_TS_aux = (DTYPE *)mem_alloc(BLOCK_SIZE);
  DTYPE *cache_query = (DTYPE *)mem_alloc(BLOCK_SIZE);
  DTYPE *cache_TSMean = (DTYPE *)mem_alloc(BLOCK_SIZE);
  DTYPE *cache_TSSigma = (DTYPE *)mem_alloc(BLOCK_SIZE);
  DTYPE *cache_dotprods = (DTYPE *)mem_alloc(BLOCK_SIZE);

  dpu_result_t *result = &DPU_RESULTS[tasklet_id];

  DTYPE distance;
  DTYPE min_distance = DTYPE_MAX;
  uint32_t min_index = 0;

  for (uint32_t i = myStartElem; i < myEndElem; i += BLOCK_SIZE / sizeof(DTYPE)) {
    for (uint32_t d = 0; d < DOTPIP; d++) cache_dotprods[d] = 0;

    current_mram_block_addr_TS = starting_offset_ts + (i - myStartElem) * sizeof(DTYPE);
    current_mram_block_addr_query = (uint32_t)DPU_MRAM_HEAP_POINTER;

    for (uint32_t j = 0; j < query_length / (BLOCK_SIZE / sizeof(DTYPE)); j++) {
      mram_read((__mram_ptr void const *)current_mram_block_addr_TS, cache_TS, BLOCK_SIZE);
      mram_read((__mram_ptr void const *)(current_mram_block_addr_TS + BLOCK_SIZE), cache_TS_aux, BLOCK_SIZE);
      mram_read((__mram_ptr void const *)current_mram_block_addr_query, cache_query, BLOCK_SIZE);
      current_mram_block_addr_TS += BLOCK_SIZE;
      current_mram_block_addr_query += BLOCK_SIZE;
      dot_product(cache_TS, cache_TS_aux, cache_query, cache_dotprods);
    }

    mram_read((__mram_ptr void const *)current_mram_block_addr_TSMean, cache_TSMean, BLOCK_SIZE);
    mram_read((__mram_ptr void const *)current_mram_block_addr_TSSigma, cache_TSSigma, BLOCK_SIZE);
    current_mram_block_addr_TSMean += BLOCK_SIZE;
    current_mram_block_addr_TSSigma += BLOCK_SIZE;

    for (uint32_t k = 0; k < BLOCK_SIZE / sizeof(DTYPE); k++) {
      distance = 2 * ((DTYPE)query_length -
                      (cache_dotprods[k] - (DTYPE)query_length * cache_TSMean[k] * query_mean) /
                          (cache_TSSigma[k] * query_std));
      if (distance < min_distance) {
        min_distance = distance;
        min_index = i + k;
      }
    }
  }

  result->minValue = min_distance;
  result->minIndex = min_index;
  return 0;
}

int (*kernels[1])(void) = {main_kernel1};

int main(void) { return kernels[DPU_INPUT_ARGUMENTS.kernel](); }
