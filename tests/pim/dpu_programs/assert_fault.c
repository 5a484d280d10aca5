/* assert() on the DPU: a false assertion is the DPU's fault, named with its expression and line. */
#include <assert.h>
#include <defs.h>
#include <stdint.h>

__host uint32_t value;

int main(void) {
  if (me() == 1) assert(value != 3);
  return 0;
}
