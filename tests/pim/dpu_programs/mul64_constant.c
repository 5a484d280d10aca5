/* 64-bit multiplies by constants, as random number generators make them (upmem-rng's PCG32): by a constant that is
 * not a power of two the DPU backend calls __muldi3, as for a run-time operand; by a power of two it shifts. */
#include <defs.h>
#include <stdint.h>

__host uint32_t n;
__host uint32_t power_of_two;
__host uint64_t state;

int main(void) {
  if (me() != 0) return 0;
  uint64_t x = state;
  if (power_of_two) {
    for (uint32_t i = 0; i < n; ++i) x = x * 8u + i;
  } else {
    for (uint32_t i = 0; i < n; ++i) x = x * 6364136223846793005ull + 1442695040888963407ull;
  }
  state = x;
  return 0;
}
