/* An SDK-style DPU program (pimopt's test corpus) that breaks the DPU's rules on purpose: `which` picks the
 * mistake. The host (errors_host.c) checks that each is reported with this file's line, the DPU and the tasklet. */
#include <alloc.h>
#include <barrier.h>
#include <defs.h>
#include <mram.h>
#include <mutex.h>
#include <stdint.h>

__host uint32_t which;
__dma_aligned uint8_t buffer[16];
MUTEX_INIT(never_locked);

int main(void) {
  if (me() != 1) return 0;
  switch (which) {
    case 0:
      mram_read(DPU_MRAM_HEAP_POINTER, buffer, 12); /* FAULT 0: not a multiple of 8 */
      break;
    case 1:
      mem_alloc(1 << 20); /* FAULT 1: more than WRAM */
      break;
    case 2:
      mutex_unlock(never_locked); /* FAULT 2: a mutex not held */
      break;
    case 3: {
      __mram_ptr uint64_t* beyond = (__mram_ptr uint64_t*)(uintptr_t)(64u << 20);
      buffer[0] = (uint8_t)*beyond; /* FAULT 3: past the end of MRAM */
      break;
    }
    default:
      break;
  }
  return 0;
}
