/* A DPU program as written for the UPMEM SDK (pimopt's own text): c = a + b over the MRAM heap, each tasklet taking
 * blocks of 256 elements in turn; the host sets n (elements per DPU) and reads back the cycle count. */
#include <alloc.h>
#include <barrier.h>
#include <defs.h>
#include <mram.h>
#include <perfcounter.h>
#include <stdint.h>

#define BLOCK 256

__host uint32_t n;
__host uint64_t cycles;
__host uint32_t launches = 100; /* an initialized variable: 100 at load, then one more per launch */
BARRIER_INIT(my_barrier, NR_TASKLETS);

int main(void) {
  const unsigned int tasklet = me();
  if (tasklet == 0) {
    mem_reset();
    perfcounter_config(COUNT_CYCLES, true);
    launches++;
  }
  barrier_wait(&my_barrier);
  int32_t* a = (int32_t*)mem_alloc(BLOCK * sizeof(int32_t));
  int32_t* b = (int32_t*)mem_alloc(BLOCK * sizeof(int32_t));
  const uintptr_t mram_a = (uintptr_t)DPU_MRAM_HEAP_POINTER;
  const uintptr_t mram_b = mram_a + n * sizeof(int32_t), mram_c = mram_b + n * sizeof(int32_t);
  for (uint32_t i = tasklet * BLOCK; i < n; i += NR_TASKLETS * BLOCK) {
    mram_read((__mram_ptr void const*)(mram_a + i * sizeof(int32_t)), a, BLOCK * sizeof(int32_t));
    mram_read((__mram_ptr void const*)(mram_b + i * sizeof(int32_t)), b, BLOCK * sizeof(int32_t));
    for (uint32_t j = 0; j < BLOCK; j++) a[j] += b[j];
    mram_write(a, (__mram_ptr void*)(mram_c + i * sizeof(int32_t)), BLOCK * sizeof(int32_t));
  }
  barrier_wait(&my_barrier);
  if (tasklet == 0) cycles = perfcounter_get();
  return 0;
}
