/* PrIM's VA (vector addition, int32) as a DPU program for the UPMEM SDK: pimopt's own text of the kernel structure
 * of [PrIM] dpu/task.c as [uPIMulator] timed it (BL = 10, TYPE = INT32). Each tasklet takes 1 KB blocks in turn,
 * reads a block of a and of b from the MRAM heap, adds, and writes the block of b back. */
#include <alloc.h>
#include <barrier.h>
#include <defs.h>
#include <mram.h>
#include <stdint.h>

#ifndef BL
#define BL 10
#endif
#define BLOCK_SIZE_LOG2 BL
#define BLOCK_SIZE (1 << BLOCK_SIZE_LOG2)

typedef struct {
  uint32_t size;          /* bytes of a on this DPU */
  uint32_t transfer_size; /* bytes between a and b in MRAM */
  uint32_t kernel;
} dpu_arguments_t;

__host dpu_arguments_t DPU_INPUT_ARGUMENTS;
BARRIER_INIT(my_barrier, NR_TASKLETS);

static void __attribute__((noinline)) vector_addition(int32_t *bufferB, int32_t *bufferA, uint32_t l_size) {
  for (uint32_t i = 0; i < l_size; i++) bufferB[i] += bufferA[i];
}

static int main_kernel1(void) {
  const unsigned int tasklet_id = me();
  if (tasklet_id == 0) mem_reset();
  barrier_wait(&my_barrier);

  const uint32_t input_size_dpu_bytes = DPU_INPUT_ARGUMENTS.size;
  const uint32_t input_size_dpu_bytes_transfer = DPU_INPUT_ARGUMENTS.transfer_size;
  const uint32_t base_tasklet = tasklet_id << BLOCK_SIZE_LOG2;
  const uint32_t mram_base_addr_A = (uint32_t)DPU_MRAM_HEAP_POINTER;
  const uint32_t mram_base_addr_B = mram_base_addr_A + input_size_dpu_bytes_transfer;

  int32_t *cache_A = (int32_t *)mem_alloc(BLOCK_SIZE);
  int32_t *cache_B = (int32_t *)mem_alloc(BLOCK_SIZE);

  for (uint32_t byte_index = base_tasklet; byte_index < input_size_dpu_bytes;
       byte_index += BLOCK_SIZE * NR_TASKLETS) {
    const uint32_t l_size_bytes = (byte_index + BLOCK_SIZE >= input_size_dpu_bytes)
                                      ? (input_size_dpu_bytes - byte_index)
                                      : BLOCK_SIZE;
    mram_read((__mram_ptr void const *)(mram_base_addr_A + byte_index), cache_A, l_size_bytes);
    mram_read((__mram_ptr void const *)(mram_base_addr_B + byte_index), cache_B, l_size_bytes);
    vector_addition(cache_B, cache_A, l_size_bytes >> 2);
    mram_write(cache_B, (__mram_ptr void *)(mram_base_addr_B + byte_index), l_size_bytes);
  }
  return 0;
}

int (*kernels[1])(void) = {main_kernel1};

int main(void) { return kernels[DPU_INPUT_ARGUMENTS.kernel](); }
