/* PrIM's HST-L (histogram of 12-bit pixels into 256 bins, one histogram shared by the tasklets) as a DPU program for
 * the UPMEM SDK: pimopt's own text of the kernel structure of [PrIM] dpu/task.c as [uPIMulator] timed it (BL = 10,
 * TYPE = UINT32, DEPTH = 12, NR_HISTO = 1). Tasklet 0 allocates the histogram; the tasklets clear it together, then
 * count their 1 KB blocks into it, taking the histogram's mutex around every increment; tasklet 0 writes it to MRAM
 * after the input. */
#include <alloc.h>
#include <barrier.h>
#include <defs.h>
#include <mram.h>
#include <mutex.h>
#include <stdint.h>

#ifndef BL
#define BL 10
#endif
#define BLOCK_SIZE_LOG2 BL
#define BLOCK_SIZE (1 << BLOCK_SIZE_LOG2)
#ifndef DEPTH
#define DEPTH 12
#endif
#ifndef NR_HISTO
#define NR_HISTO 1
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

/* Where each histogram is in WRAM. */
uint32_t *message[NR_TASKLETS];

BARRIER_INIT(my_barrier, NR_TASKLETS);
/* One barrier per histogram, for the tasklets that share it, set up by tasklet 0. */
barrier_t barriers[NR_HISTO];

/* The histograms' mutexes: never initialized, as in PrIM (each the SDK's mutex 0). */
mutex_id_t my_mutex[NR_HISTO];

static void __attribute__((noinline)) histogram(uint32_t *histo, uint32_t bins, T *input, uint32_t histo_id,
                                                unsigned int l_size) {
  for (unsigned int j = 0; j < l_size; j++) {
    T d = (input[j] * bins) >> DEPTH;
    mutex_lock(my_mutex[histo_id]);
    histo[d] += 1;
    mutex_unlock(my_mutex[histo_id]);
  }
}

static int main_kernel1(void) {
  const unsigned int tasklet_id = me();
  const unsigned int l_tasklet_id = tasklet_id / NR_HISTO;
  const unsigned int nr_l_tasklet = NR_TASKLETS / NR_HISTO;
  const unsigned int my_histo_id = tasklet_id & (NR_HISTO - 1);

  if (tasklet_id == 0) {
    mem_reset();
    for (unsigned int each_barrier = 0; each_barrier < NR_HISTO; each_barrier++) {
      barriers[each_barrier].wait_queue = 0xff;
      barriers[each_barrier].count = nr_l_tasklet;
      barriers[each_barrier].initial_count = nr_l_tasklet;
      /* PrIM stores the WRAM address of the barrier's atomic bit here, which a host pointer does not fit: the
       * bit's number instead (the emulator's barriers do not read the field). */
      barriers[each_barrier].lock = (uint8_t)each_barrier;
    }
  }
  barrier_wait(&my_barrier);

  const uint32_t input_size_dpu_bytes = DPU_INPUT_ARGUMENTS.size;
  const uint32_t input_size_dpu_bytes_transfer = DPU_INPUT_ARGUMENTS.transfer_size;
  const uint32_t bins = DPU_INPUT_ARGUMENTS.bins;

  const uint32_t base_tasklet = tasklet_id << BLOCK_SIZE_LOG2;
  const uint32_t mram_base_addr_A = (uint32_t)DPU_MRAM_HEAP_POINTER;
  const uint32_t mram_base_addr_histo = mram_base_addr_A + input_size_dpu_bytes_transfer;

  T *cache_A = (T *)mem_alloc(BLOCK_SIZE);
  if (tasklet_id < NR_HISTO) {
    uint32_t *histo = (uint32_t *)mem_alloc(bins * sizeof(uint32_t));
    message[tasklet_id] = histo;
  }
  barrier_wait(&barriers[my_histo_id]);

  uint32_t *my_histo = message[my_histo_id];
  for (unsigned int i = l_tasklet_id; i < bins; i += nr_l_tasklet) my_histo[i] = 0;
  barrier_wait(&barriers[my_histo_id]);

  for (unsigned int byte_index = base_tasklet; byte_index < input_size_dpu_bytes;
       byte_index += BLOCK_SIZE * NR_TASKLETS) {
    const uint32_t l_size_bytes = (byte_index + BLOCK_SIZE >= input_size_dpu_bytes)
                                      ? (input_size_dpu_bytes - byte_index)
                                      : BLOCK_SIZE;
    mram_read((__mram_ptr void const *)(mram_base_addr_A + byte_index), cache_A, l_size_bytes);
    histogram(my_histo, bins, cache_A, my_histo_id, l_size_bytes >> DIV);
  }
  barrier_wait(&my_barrier);

  /* Merge the histograms into the first, bin by bin. */
  uint32_t *histo_dpu = message[0];
  for (unsigned int i = tasklet_id; i < bins; i += NR_TASKLETS) {
    uint32_t b = 0;
    for (unsigned int j = 0; j < NR_HISTO; j++) b += *(message[j] + i);
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
