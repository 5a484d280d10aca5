/* Multiplies of narrow operands, as the DPU compiler makes them from the DPU's 8 x 8 multiplies (pimopt's own text):
 * a char times a char is one multiply (mul_sl_sl), a char times a short four byte products added with three lsl_add,
 * a char times an int a call of __mulsi3 with its steps. `which` picks the loop. Tasklet 0. */
#include <defs.h>
#include <stdint.h>

__host uint32_t n;
__host uint32_t which;
__host int8_t bytes[512];
__host int16_t shorts[512];
__host int32_t ints[512];
__host int32_t sum;

int main(void) {
  if (me() != 0) return 0;
  int32_t s = 0;
  if (which == 8) {
    for (uint32_t i = 0; i < n; ++i) s += bytes[i] * bytes[511 - i];
  } else if (which == 16) {
    for (uint32_t i = 0; i < n; ++i) s += bytes[i] * shorts[i];
  } else {
    for (uint32_t i = 0; i < n; ++i) s += bytes[i] * ints[i];
  }
  sum = s;
  return 0;
}
