/* PrIM's SEL (select, uint64: keep the elements for which pred(x), x % 2 == 0, is false) as a DPU program for the
 * UPMEM SDK: pimopt's own text of the kernel structure of [PrIM] dpu/task.c as [uPIMulator] timed it (BL = 10,
 * TYPE = UINT64). Each tasklet selects from its 1 KB block of the MRAM heap into a second buffer, the tasklets pass
 * their running counts along a chain of handshakes, meet at a barrier, and write their kept elements after the
 * input, where the counts say; the last tasklet keeps the DPU's count in DPU_RESULTS[NR_TASKLETS - 1]. */
#include <alloc.h>
#include <barrier.h>
#include <defs.h>
#include <handshake.h>
#include <mram.h>
#include <stdbool.h>
#include <stdint.h>

#ifndef BL
#define BL 10
#endif
#define BLOCK_SIZE_LOG2 BL
#define BLOCK_SIZE (1 << BLOCK_SIZE_LOG2)

#ifndef TYPE
#define TYPE uint64_t
#endif
#define REGS (BLOCK_SIZE >> 3) /* elements of a block */

typedef struct {
  uint32_t size;   /* bytes of input on this DPU, a multiple of BLOCK_SIZE * NR_TASKLETS */
  uint32_t kernel; /* which of kernels[] runs */
} dpu_arguments_t;

typedef struct {
  uint32_t t_count; /* elements kept so far on this DPU (the last tasklet's entry) */
} dpu_results_t;

__host dpu_arguments_t DPU_INPUT_ARGUMENTS;
__host dpu_results_t DPU_RESULTS[NR_TASKLETS];

/* message[i]: the count of the tasklets before i in this round; message_partial_count: the rounds before. */
uint32_t message[NR_TASKLETS];
uint32_t message_partial_count;

/* The predicate: true drops the element. */
static inline bool pred(const TYPE x) { return (x % 2) == 0; }

/* Copies the elements of a block that fail the predicate to output; returns how many. */
static unsigned int __attribute__((noinline)) select(TYPE *output, TYPE *input) {
  unsigned int pos = 0;
#pragma unroll
  for (unsigned int j = 0; j < REGS; j++) {
    if (!pred(input[j])) {
      output[pos] = input[j];
      pos++;
    }
  }
  return pos;
}

/* The chain of handshakes: takes the count of the tasklets before this one from its predecessor, hands on that
 * plus l_count to its successor. */
static unsigned int __attribute__((noinline)) handshake_sync(unsigned int l_count, unsigned int tasklet_id) {
  unsigned int p_count;
  if (tasklet_id != 0) {
    handshake_wait_for(tasklet_id - 1);
    p_count = message[tasklet_id];
  } else {
    p_count = 0;
  }
  if (tasklet_id < NR_TASKLETS - 1) {
    message[tasklet_id + 1] = p_count + l_count;
    handshake_notify();
  }
  return p_count;
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

  if (tasklet_id == NR_TASKLETS - 1) message_partial_count = 0;
  barrier_wait(&my_barrier);

  for (unsigned int byte_index = base_tasklet; byte_index < input_size_dpu_bytes;
       byte_index += BLOCK_SIZE * NR_TASKLETS) {
    mram_read((__mram_ptr void const *)(mram_base_addr_A + byte_index), cache_A, BLOCK_SIZE);

    const uint32_t l_count = select(cache_B, cache_A);
    const uint32_t p_count = handshake_sync(l_count, tasklet_id);
    barrier_wait(&my_barrier);

    mram_write(cache_B, (__mram_ptr void *)(mram_base_addr_B + (message_partial_count + p_count) * sizeof(TYPE)),
               l_count * sizeof(TYPE));

    if (tasklet_id == NR_TASKLETS - 1) {
      result->t_count = message_partial_count + p_count + l_count;
      message_partial_count = result->t_count;
    }
  }
  return 0;
}

int (*kernels[1])(void) = {main_kernel1};

int main(void) { return kernels[DPU_INPUT_ARGUMENTS.kernel](); }
