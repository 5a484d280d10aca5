/* Work done while a mutex is held (pimopt's own text, SDK style): with `inside` set, each tasklet's round takes the
 * lock, updates sixteen shared words and releases it, all in one basic block; otherwise it does the same work on
 * its own words first and takes the lock only around nothing. Held for the work, the lock serializes the tasklets. */
#include <barrier.h>
#include <defs.h>
#include <mutex.h>
#include <stdint.h>

__host uint32_t rounds;
__host uint32_t inside;
__host uint32_t shared_words[16];
uint32_t own_words[NR_TASKLETS][16];
MUTEX_INIT(words_mutex);
BARRIER_INIT(start, NR_TASKLETS);

#define UPDATE(w, k, i) w[k] = w[k] * 3 + (i)
#define UPDATE_ALL(w, i)                                                                                           \
  UPDATE(w, 0, i); UPDATE(w, 1, i); UPDATE(w, 2, i); UPDATE(w, 3, i); UPDATE(w, 4, i); UPDATE(w, 5, i);            \
  UPDATE(w, 6, i); UPDATE(w, 7, i); UPDATE(w, 8, i); UPDATE(w, 9, i); UPDATE(w, 10, i); UPDATE(w, 11, i);          \
  UPDATE(w, 12, i); UPDATE(w, 13, i); UPDATE(w, 14, i); UPDATE(w, 15, i)

int main(void) {
  const uint32_t id = me();
  barrier_wait(&start);
  if (inside) {
    for (uint32_t i = 0; i < rounds; i++) {
      mutex_lock(words_mutex);
      UPDATE_ALL(shared_words, i);
      mutex_unlock(words_mutex);
    }
  } else {
    uint32_t* mine = own_words[id];
    for (uint32_t i = 0; i < rounds; i++) {
      UPDATE_ALL(mine, i);
      mutex_lock(words_mutex);
      mutex_unlock(words_mutex);
    }
  }
  return 0;
}
