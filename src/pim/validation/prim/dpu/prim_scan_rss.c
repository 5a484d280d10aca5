/* PrIM's SCAN-RSS (prefix sum, reduce-scan-scan; int64) as a DPU program for the UPMEM SDK: pimopt's own text of
 * the kernel structure of [PrIM] dpu/task.c as [uPIMulator] timed it (BL = 10, TYPE = INT64). Kernel 1: each tasklet
 * sums its 1 KB blocks and tasklet 0 adds the tasklets' sums into DPU_RESULTS. The host scans the DPUs' sums; kernel
 * 2 scans the DPU's blocks as SCAN-SSA's kernel 1 does, starting from the DPU's prefix: each tasklet scans a block,
 * gets the running total of the tasklets before it along the handshake chain, adds it and writes the block. */
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
#define T int64_t
#define DIV 3 /* log2(sizeof(T)) */
#define REGS (BLOCK_SIZE >> DIV)

typedef struct {
  uint32_t size;   /* bytes of input on this DPU */
  uint32_t kernel; /* 0: reduce, 1: scan */
  T t_count;       /* kernel 2: the sum of the DPUs before */
} dpu_arguments_t;

typedef struct {
  T t_count;
} dpu_results_t;

__host dpu_arguments_t DPU_INPUT_ARGUMENTS;
__host dpu_results_t DPU_RESULTS[NR_TASKLETS];

/* The running total handed from tasklet to tasklet, and the total of the blocks done. */
T message[NR_TASKLETS];
T message_partial_count;

BARRIER_INIT(my_barrier, NR_TASKLETS);

static T __attribute__((noinline)) reduction(T *input) {
  T output = 0;
#pragma unroll
  for (unsigned int j = 0; j < REGS; j++) output += input[j];
  return output;
}

static T __attribute__((noinline)) scan(T *output, T *input) {
  output[0] = input[0];
#pragma unroll
  for (unsigned int j = 1; j < REGS; j++) output[j] = output[j - 1] + input[j];
  return output[REGS - 1];
}

static T __attribute__((noinline)) handshake_sync(T l_count, unsigned int tasklet_id) {
  T p_count;
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

static void __attribute__((noinline)) add(T *output, T p_count) {
#pragma unroll
  for (unsigned int j = 0; j < REGS; j++) output[j] += p_count;
}

static int main_kernel1(void) {
  const unsigned int tasklet_id = me();
  if (tasklet_id == 0) mem_reset();
  barrier_wait(&my_barrier);

  dpu_results_t *result = &DPU_RESULTS[tasklet_id];
  const uint32_t input_size_dpu_bytes = DPU_INPUT_ARGUMENTS.size;

  const uint32_t base_tasklet = tasklet_id << BLOCK_SIZE_LOG2;
  const uint32_t mram_base_addr_A = (uint32_t)DPU_MRAM_HEAP_POINTER;

  T *cache_A = (T *)mem_alloc(BLOCK_SIZE);
  T l_count = 0;
  for (unsigned int byte_index = base_tasklet; byte_index < input_size_dpu_bytes;
       byte_index += BLOCK_SIZE * NR_TASKLETS) {
    mram_read((__mram_ptr void const *)(mram_base_addr_A + byte_index), cache_A, BLOCK_SIZE);
    l_count += reduction(cache_A);
  }
  message[tasklet_id] = l_count;

  /* Tasklet 0 adds up the tasklets' sums. */
  barrier_wait(&my_barrier);
  if (tasklet_id == 0) {
    for (unsigned int each_tasklet = 1; each_tasklet < NR_TASKLETS; each_tasklet++) {
      message[0] += message[each_tasklet];
    }
    result->t_count = message[0];
  }
  return 0;
}

static int main_kernel2(void) {
  const unsigned int tasklet_id = me();
  if (tasklet_id == 0) mem_reset();
  barrier_wait(&my_barrier);

  dpu_results_t *result = &DPU_RESULTS[tasklet_id];
  const uint32_t input_size_dpu_bytes = DPU_INPUT_ARGUMENTS.size;

  const uint32_t base_tasklet = tasklet_id << BLOCK_SIZE_LOG2;
  const uint32_t mram_base_addr_A = (uint32_t)DPU_MRAM_HEAP_POINTER;
  const uint32_t mram_base_addr_B = mram_base_addr_A + input_size_dpu_bytes;

  T *cache_A = (T *)mem_alloc(BLOCK_SIZE);
  T *cache_B = (T *)mem_alloc(BLOCK_SIZE);

  if (tasklet_id == NR_TASKLETS - 1) message_partial_count = DPU_INPUT_ARGUMENTS.t_count;
  barrier_wait(&my_barrier);

  for (unsigned int byte_index = base_tasklet; byte_index < input_size_dpu_bytes;
       byte_index += BLOCK_SIZE * NR_TASKLETS) {
    mram_read((__mram_ptr void const *)(mram_base_addr_A + byte_index), cache_A, BLOCK_SIZE);
    const T l_count = scan(cache_B, cache_A);
    const T p_count = handshake_sync(l_count, tasklet_id);
    barrier_wait(&my_barrier);
    add(cache_B, message_partial_count + p_count);
    mram_write(cache_B, (__mram_ptr void *)(mram_base_addr_B + byte_index), BLOCK_SIZE);
    if (tasklet_id == NR_TASKLETS - 1) {
      result->t_count = message_partial_count + p_count + l_count;
      message_partial_count = result->t_count;
    }
  }
  return 0;
}

int (*kernels[2])(void) = {main_kernel1, main_kernel2};

int main(void) { return kernels[DPU_INPUT_ARGUMENTS.kernel](); }
