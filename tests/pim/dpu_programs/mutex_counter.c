/* Tasklets add to one WRAM counter under a mutex (pimopt's own text, SDK style): the count must be exact. */
#include <barrier.h>
#include <defs.h>
#include <mutex.h>
#include <stdint.h>

__host uint32_t rounds;
__host uint32_t counter;
MUTEX_INIT(counter_mutex);
BARRIER_INIT(start, NR_TASKLETS);

int main(void) {
  if (me() == 0) counter = 0;
  barrier_wait(&start);
  for (uint32_t i = 0; i < rounds; i++) {
    mutex_lock(counter_mutex);
    counter += 1;
    mutex_unlock(counter_mutex);
  }
  return 0;
}
