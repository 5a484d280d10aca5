/* What the pass charges per element of a loop, as the DPU's code generation makes it: a 64-bit load is one `ld`; a
 * test of a 64-bit value's low bit is a 32-bit `and` (its high half is known zero); the loop's index and its compare
 * stay 32-bit (the cost layout), and an unsigned max is a compare and a select. Tasklet 0. */
#include <defs.h>
#include <stdint.h>

__host uint32_t n;
__host uint64_t wide[512];
__host uint32_t narrow[512];
__host uint32_t even;
__host uint32_t largest;

int main(void) {
  if (me() != 0) return 0;
  uint32_t count = 0, max = 0;
  for (uint32_t i = 0; i < n; ++i) {
    if ((wide[i] & 1) == 0) ++count;
    max = narrow[i] > max ? narrow[i] : max;
  }
  even = count;
  largest = max;
  return 0;
}
