/* PrIM's HST-S (histogram of 12-bit pixels into 256 bins, one histogram per tasklet) as a DPU program for the UPMEM
 * SDK: pimopt's own text of the kernel structure of [PrIM] dpu/task.c as [uPIMulator] timed it (BL = 10,
 * TYPE = UINT32, DEPTH = 12). Every tasklet counts its 1 KB blocks into a WRAM histogram of its own; after a
 * barrier, tasklet k adds bins k, k + NR_TASKLETS, ... of all histograms (found through message[]) into tasklet 0's,
 * which tasklet 0 writes to MRAM after the input. */
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
#ifndef DEPTH
#define DEPTH 12
#endif
#define T uint32_t
#define DIV 2 /* log2(sizeof(T)) */

typedef struct {
  uint32_t size;          /* bytes of pixels on this DPU */
  uint32_t transfer_size; /* bytes from the pixels to the histogram in MRAM */
  uint32_t bins;
  uint32_t kernel;
} dpu_arguments_t;

__host dpu_arguments_t DPU_INPUT_ARGUMENTS;

/* Where each tasklet's histogram is in WRAM. */
uint32_t *message[NR_TASKLETS];

BARRIER_INIT(my_barrier, NR_TASKLETS);

static void __attribute__((noinline)) histogram(uint32_t *histo, uint32_t bins, T *input, unsigned int l_size) {
  for (unsigned int j = 0; j < l_size; j++) {
    T d = input[j];
    histo[(d * bins) >> DEPTH] += 1;
  }
}

static int main_kernel1(void) {
  const unsigned int tasklet_id = me();
  if (tasklet_id == 0) mem_reset();
  barrier_wait(&my_barrier);

  const uint32_t input_size_dpu_bytes = DPU_INPUT_ARGUMENTS.size;
  const uint32_t input_size_dpu_bytes_transfer = DPU_INPUT_ARGUMENTS.transfer_size;
  const uint32_t bins = DPU_INPUT_ARGUMENTS.bins;

  const uint32_t base_tasklet = tasklet_id << BLOCK_SIZE_LOG2;
  const uint32_t mram_base_addr_A = (uint32_t)DPU_MRAM_HEAP_POINTER;
  const uint32_t mram_base_addr_histo = mram_base_addr_A + input_size_dpu_bytes_transfer;

  T *cache_A = (T *)mem_alloc(BLOCK_SIZE);
  uint32_t *histo = (uint32_t *)mem_alloc(bins * sizeof(uint32_t));
  for (unsigned int i = 0; i < bins; i++) histo[i] = 0;

  for (unsigned int byte_index = base_tasklet; byte_index < input_size_dpu_bytes;
       byte_index += BLOCK_SIZE * NR_TASKLETS) {
    const uint32_t l_size_bytes = (byte_index + BLOCK_SIZE >= input_size_dpu_bytes)
                                      ? (input_size_dpu_bytes - byte_index)
                                      : BLOCK_SIZE;
    mram_read((__mram_ptr void const *)(mram_base_addr_A + byte_index), cache_A, l_size_bytes);
    histogram(histo, bins, cache_A, l_size_bytes >> DIV);
  }
  message[tasklet_id] = histo;
  barrier_wait(&my_barrier);

  /* Merge into tasklet 0's histogram, bin by bin. */
  uint32_t *histo_dpu = message[0];
  for (unsigned int i = tasklet_id; i < bins; i += NR_TASKLETS) {
    uint32_t b = 0;
    for (unsigned int j = 0; j < NR_TASKLETS; j++) b += *(message[j] + i);
    histo_dpu[i] = b;
  }
  barrier_wait(&my_barrier);

  if (tasklet_id == 0) {
    if (bins * sizeof(uint32_t) <= 2048) {
      mram_write(histo_dpu, (__mram_ptr void *)(mram_base_addr_histo), bins * sizeof(uint32_t));
    } else {
      for (unsigned int offset = 0; offset < ((bins * sizeof(uint32_t)) >> 11); offset++) {
        mram_write(histo_dpu + (offset << 9), (__mram_ptr void *)(mram_base_addr_histo + (offset << 11)), 2048);
      }
    }
  }
  return 0;
}

int (*kernels[1])(void) = {main_kernel1};

int main(void) { return kernels[DPU_INPUT_ARGUMENTS.kernel](); }
