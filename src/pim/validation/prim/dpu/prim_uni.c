/* PrIM's UNI (unique, int64: drop each element equal to the one before it) as a DPU program for the UPMEM SDK:
 * pimopt's own text of the kernel structure of [PrIM] dpu/task.c as [uPIMulator] timed it (BL = 10,
 * TYPE = INT64). As SEL, with the last value of each tasklet's block (and of the previous round's last block)
 * passed along the chain of handshakes, so that a run of equal elements across blocks keeps one. Tasklet 0 keeps
 * the DPU's first element in DPU_RESULTS[0]; the last tasklet the DPU's count and last element in
 * DPU_RESULTS[NR_TASKLETS - 1]. */
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
#define REGS (BLOCK_SIZE >> 3) /* elements of a block */

typedef struct {
  uint32_t size;   /* bytes of input on this DPU, a multiple of BLOCK_SIZE * NR_TASKLETS */
  uint32_t kernel; /* which of kernels[] runs */
} dpu_arguments_t;

typedef struct {
  uint32_t t_count; /* elements kept so far on this DPU */
  TYPE first;       /* the DPU's first element */
  TYPE last;        /* the DPU's last element */
} dpu_results_t;

typedef struct {
  unsigned int x, y, z;
} uint3;

__host dpu_arguments_t DPU_INPUT_ARGUMENTS;
__host dpu_results_t DPU_RESULTS[NR_TASKLETS];

/* For tasklet i from its predecessor: the count kept before it in this round (message), the predecessor's last
 * kept element (message_value), how many first elements were dropped before it (message_offset). Across rounds:
 * the count kept in the rounds before and the last element of the previous round. */
uint32_t message[NR_TASKLETS];
TYPE message_value[NR_TASKLETS];
uint32_t message_offset[NR_TASKLETS];
uint32_t message_partial_count;
TYPE message_last_from_last;

/* Copies the first element of a block and each that differs from the one before it to output; returns how many. */
static unsigned int __attribute__((noinline)) unique(TYPE *output, TYPE *input) {
  unsigned int pos = 0;
  output[pos] = input[pos];
  pos++;
#pragma unroll
  for (unsigned int j = 1; j < REGS; j++) {
    if (input[j] != input[j - 1]) {
      output[pos] = input[j];
      pos++;
    }
  }
  return pos;
}

/* The chain of handshakes: x = the count kept before this tasklet in this round, y = the first elements dropped
 * before it, z = 1 when its own first element repeats the element before it. */
static uint3 __attribute__((noinline)) handshake_sync(TYPE *output, unsigned int l_count, unsigned int tasklet_id) {
  unsigned int p_count, o_count, offset;
  if (tasklet_id != 0) {
    handshake_wait_for(tasklet_id - 1);
    p_count = message[tasklet_id];
    offset = (message_value[tasklet_id] == output[0]) ? 1 : 0;
    o_count = message_offset[tasklet_id];
  } else {
    p_count = 0;
    offset = (message_last_from_last == output[0]) ? 1 : 0;
    o_count = 0;
  }
  if (tasklet_id < NR_TASKLETS - 1) {
    message[tasklet_id + 1] = p_count + l_count;
    message_value[tasklet_id + 1] = output[l_count - 1];
    message_offset[tasklet_id + 1] = o_count + offset;
    handshake_notify();
  }
  uint3 counts = {p_count, o_count, offset};
  return counts;
}

BARRIER_INIT(my_barrier, NR_TASKLETS);

static int main_kernel1(void) {
  const unsigned int tasklet_id = me();
  if (tasklet_id == 0) mem_reset();
  barrier_wait(&my_barrier);

  dpu_results_t *result = &DPU_RESULTS[tasklet_id];

  const uint32_t input_size_dpu_bytes = DPU_INPUT_ARGUMENTS.size;
  const uint32_t base_tasklet = tasklet_id << BLOCK_SIZE_LOG2;
  const uint32_t mram_base_addr_A = (uint32_t)DPU_MRAM_HEAP_POINTER;
  const uint32_t mram_base_addr_B = (uint32_t)(DPU_MRAM_HEAP_POINTER + input_size_dpu_bytes);

  TYPE *cache_A = (TYPE *)mem_alloc(BLOCK_SIZE);
  TYPE *cache_B = (TYPE *)mem_alloc(BLOCK_SIZE);

  if (tasklet_id == NR_TASKLETS - 1) {
    message_partial_count = 0;
    message_last_from_last = 0xFFFFFFFF; /* not a value of the input */
  }
  barrier_wait(&my_barrier);

  unsigned int i = 0; /* the round */
  for (unsigned int byte_index = base_tasklet; byte_index < input_size_dpu_bytes;
       byte_index += BLOCK_SIZE * NR_TASKLETS) {
    mram_read((__mram_ptr void const *)(mram_base_addr_A + byte_index), cache_A, BLOCK_SIZE);

    const unsigned int l_count = unique(cache_B, cache_A);
    const uint3 po_count = handshake_sync(cache_B, l_count, tasklet_id);

    mram_write(&cache_B[po_count.z],
               (__mram_ptr void *)(mram_base_addr_B +
                                   (message_partial_count + po_count.x - po_count.y) * sizeof(TYPE)),
               l_count * sizeof(TYPE));

    if (tasklet_id == 0 && i == 0) result->first = cache_B[0];

    if (tasklet_id == NR_TASKLETS - 1) {
      message_last_from_last = cache_B[l_count - 1];
      result->last = cache_B[l_count - 1];
      result->t_count = message_partial_count + po_count.x + l_count - po_count.y - po_count.z;
      message_partial_count = result->t_count;
    }

    barrier_wait(&my_barrier);
    i++;
  }
  return 0;
}

int (*kernels[1])(void) = {main_kernel1};

int main(void) { return kernels[DPU_INPUT_ARGUMENTS.kernel](); }
