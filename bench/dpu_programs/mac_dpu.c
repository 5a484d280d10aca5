/* The multiply-accumulate kernel of bench/pim_speed.cc as a DPU C program (pimopt-dpu-cc): acc += x[i] * w[i % 256]
 * over the DPU's MRAM heap in 1 KB blocks, per-tasklet partial sums combined by tasklet 0. */
#include <alloc.h>
#include <barrier.h>
#include <defs.h>
#include <mram.h>
#include <stdint.h>

#define BLOCK 256

__host uint64_t n;
__host int32_t w[BLOCK];
__host int64_t partials[24];
__host int64_t result;
BARRIER_INIT(all, NR_TASKLETS);

int main(void) {
  const uint32_t id = me();
  int32_t* x = mem_alloc(4 * BLOCK);
  int64_t acc = 0;
  for (uint64_t i = (uint64_t)id * BLOCK; i < n; i += (uint64_t)NR_TASKLETS * BLOCK) {
    mram_read((__mram_ptr void*)((uintptr_t)DPU_MRAM_HEAP_POINTER + i * 4), x, 4 * BLOCK);
    for (uint32_t j = 0; j < BLOCK; ++j) acc += (int64_t)(x[j] * w[j]);
  }
  partials[id] = acc;
  barrier_wait(&all);
  if (id == 0) {
    int64_t total = 0;
    for (uint32_t k = 0; k < NR_TASKLETS; ++k) total += partials[k];
    result = total;
    mem_reset();
  }
  return 0;
}
