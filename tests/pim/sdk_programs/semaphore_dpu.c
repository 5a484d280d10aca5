/* An SDK-style DPU program (pimopt's test corpus): a semaphore of 3 tokens lets at most 3 tasklets into a section
 * at once; a mutex guards the bookkeeping. */
#include <barrier.h>
#include <defs.h>
#include <mram.h>
#include <mutex.h>
#include <sem.h>
#include <stdint.h>

__host uint32_t inside, most_inside, entries;
SEMAPHORE_INIT(three, 3);
MUTEX_INIT(book);
__dma_aligned uint64_t scratch[NR_TASKLETS];

int main(void) {
  for (int round = 0; round < 4; ++round) {
    sem_take(&three);
    mutex_lock(book);
    inside++;
    entries++;
    if (inside > most_inside) most_inside = inside;
    mutex_unlock(book);
    mram_read(DPU_MRAM_HEAP_POINTER, &scratch[me()], 8); /* time inside the section */
    mutex_lock(book);
    inside--;
    mutex_unlock(book);
    sem_give(&three);
  }
  return 0;
}
