/* PrIM's RED (reduction, int64) as a DPU program for the UPMEM SDK: pimopt's own text of the kernel structure of
 * [PrIM] dpu/task.c as [uPIMulator] timed it (BL = 10, TYPE = INT64, SYNC = HAND, PERF = 0; the single-tasklet
 * final reduction, not TREE). Each tasklet sums its 1 KB blocks of the MRAM heap in turn; after a barrier,
 * tasklet 0 adds up the tasklets' partial sums and stores the DPU's total in DPU_RESULTS[0]. */
#include <alloc.h>
#include <barrier.h>
#include <defs.h>
#include <handshake.h>
#include <mram.h>
#include <stdint.h>

#ifndef BL
#define BL 10
#endif
#define BLOCK_SIZE_LOG2 BL
#define BLOCK_SIZE (1 << BLOCK_SIZE_LOG2)

#ifndef TYPE
#define TYPE int64_t
#endif
#ifndef DIV
#define DIV 3 /* log2(sizeof(TYPE)) */
#endif

typedef struct {
  uint32_t size;   /* bytes of input on this DPU */
  uint32_t kernel; /* which of kernels[] runs */
  TYPE t_count;
} dpu_arguments_t;

typedef struct {
  uint64_t cycles;
  TYPE t_count; /* the DPU's sum (tasklet 0's entry) */
} dpu_results_t;

__host dpu_arguments_t DPU_INPUT_ARGUMENTS;
__host dpu_results_t DPU_RESULTS[NR_TASKLETS];

/* Each tasklet's partial sum, for tasklet 0 to add up. */
TYPE message[NR_TASKLETS];

BARRIER_INIT(my_barrier, NR_TASKLETS);

/* The sum of the l_size elements of a block. */
static TYPE __attribute__((noinline)) reduction(TYPE *input, uint32_t l_size) {
  TYPE sum = 0;
  for (uint32_t j = 0; j < l_size; j++) sum += input[j];
  return sum;
}

static int main_kernel1(void) {
  const unsigned int tasklet_id = me();
  if (tasklet_id == 0) mem_reset();
  barrier_wait(&my_barrier);

  dpu_results_t *result = &DPU_RESULTS[tasklet_id];

  const uint32_t input_size_dpu_bytes = DPU_INPUT_ARGUMENTS.size;
  const uint32_t base_tasklet = tasklet_id << BLOCK_SIZE_LOG2;
  const uint32_t mram_base_addr_A = (uint32_t)DPU_MRAM_HEAP_POINTER;

  TYPE *cache_A = (TYPE *)mem_alloc(BLOCK_SIZE);

  TYPE l_count = 0;
  for (uint32_t byte_index = base_tasklet; byte_index < input_size_dpu_bytes;
       byte_index += BLOCK_SIZE * NR_TASKLETS) {
    const uint32_t l_size_bytes = (byte_index + BLOCK_SIZE >= input_size_dpu_bytes)
                                      ? (input_size_dpu_bytes - byte_index)
                                      : BLOCK_SIZE;
    mram_read((__mram_ptr void const *)(mram_base_addr_A + byte_index), cache_A, l_size_bytes);
    l_count += reduction(cache_A, l_size_bytes >> DIV);
  }

  /* Single-tasklet reduction of the partial sums. */
  message[tasklet_id] = l_count;
  barrier_wait(&my_barrier);
  if (tasklet_id == 0) {
#pragma unroll
    for (uint32_t each_tasklet = 1; each_tasklet < NR_TASKLETS; each_tasklet++) message[0] += message[each_tasklet];
  }

  if (tasklet_id == 0) result->t_count = message[0];
  return 0;
}

int (*kernels[1])(void) = {main_kernel1};

int main(void) { return kernels[DPU_INPUT_ARGUMENTS.kernel](); }
