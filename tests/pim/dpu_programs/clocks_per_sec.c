/* The runtime's CLOCKS_PER_SEC (perfcounter.h), read by the program and by its host by name, declared once more as
 * a program that follows the SDK's header text may (TransPimLib's microbenchmarks read it from the host). */
#include <defs.h>
#include <perfcounter.h>
#include <stdint.h>

extern const volatile uint32_t CLOCKS_PER_SEC;
__host uint32_t seen;

int main(void) {
  if (me() == 0) seen = CLOCKS_PER_SEC;
  return 0;
}
