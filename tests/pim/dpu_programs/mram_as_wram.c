/* A WRAM load through an MRAM variable's address (its address cast to a WRAM pointer), as PIM-Opt's programs write
 * `(uint32_t)(*tmp_DPU_RESULTS)`: warned at compile time, stopped with the line at run time. */
#include <defs.h>
#include <mram.h>
#include <stdint.h>

__mram_noinit uint64_t RESULTS[64];
__host uint32_t base;

int main(void) {
  uint32_t *tmp = (uint32_t *)(&RESULTS);
  if (me() == 0) base = *tmp; /* line 12 */
  return 0;
}
