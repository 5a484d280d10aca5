/* Counts kept in registers reach the clock whole: a multiply-accumulate in a loop of a run-time trip count, then the
 * cycle counter (an event: the loop's counts must be in it), then the same through a helper that is not inlined
 * (its counts leave it at its return). Tasklet 0. */
#include <defs.h>
#include <perfcounter.h>
#include <stdint.h>

__host uint32_t n;
__host uint32_t a[512];
__host uint32_t b[512];
__host uint32_t result;
__host uint64_t cycles_after_loop;

__attribute__((noinline)) uint32_t product(uint32_t x, uint32_t y) { return x * y; }

int main(void) {
  if (me() != 0) return 0;
  perfcounter_config(COUNT_CYCLES, true);
  uint32_t acc = 0;
  for (uint32_t i = 0; i < n; ++i) acc += a[i] * b[i];
  cycles_after_loop = perfcounter_get();
  for (uint32_t i = 0; i < n; ++i) acc += product(a[i], b[i]);
  result = acc;
  return 0;
}
