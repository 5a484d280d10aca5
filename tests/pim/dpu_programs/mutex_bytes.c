/* The SDK's mutexes are bytes: a program may lock the bytes of an array of its own (SimplePIM's tables lock one per
 * bucket). Sixteen tasklets each take every lock of 16 adjacent bytes in turn, held by different tasklets at once. */
#include <defs.h>
#include <mutex.h>
#include <stdint.h>

#define ROUNDS 20

uint8_t locks[16];
__host uint32_t counters[16];

int main(void) {
  const uint32_t t = me();
  for (uint32_t round = 0; round < ROUNDS; ++round) {
    for (uint32_t i = 0; i < 16; ++i) {
      const uint32_t k = (t + i) % 16;
      mutex_lock(&locks[k]);
      counters[k] += 1;
      mutex_unlock(&locks[k]);
    }
  }
  return 0;
}
