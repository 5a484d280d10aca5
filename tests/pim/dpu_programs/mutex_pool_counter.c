/* Tasklets add to four WRAM counters, each under the pool mutex its key selects (pimopt's own text, SDK style):
 * keys 0..7 map to the pool's four mutexes, so every count is exact and the tasklets contend. Clearing the counters
 * is one 16-byte vector store on the host: the variable is 8-aligned in WRAM (this program faulted before the pass
 * capped its accesses' alignment). */
#include <barrier.h>
#include <defs.h>
#include <mutex_pool.h>
#include <stdint.h>

__host uint32_t rounds;
__host uint32_t counters[4];
MUTEX_POOL_INIT(counter_mutexes, 4);
BARRIER_INIT(start, NR_TASKLETS);

int main(void) {
  if (me() == 0) {
    for (uint32_t k = 0; k < 4; k++) counters[k] = 0;
  }
  barrier_wait(&start);
  for (uint32_t i = 0; i < rounds; i++) {
    const uint32_t key = (me() + i) % 8; /* keys 4..7 share the mutexes of 0..3 */
    mutex_pool_lock(&counter_mutexes, key);
    counters[key % 4] += 1;
    mutex_pool_unlock(&counter_mutexes, key);
  }
  return 0;
}
