/* Accesses through an MRAM variable's address cast to a WRAM pointer, as PIM-Opt's programs read
 * `(uint32_t)(*tmp_DPU_RESULTS)`. On the DPU they reach WRAM at the MRAM address modulo the WRAM's size: a load of the
 * first MRAM variable's first word reads the runtime's zero word at WRAM address 0 (0 here too); a load of its word
 * at byte 64 (layout-dependent) and a store anywhere are errors here. Each is warned at compile time. */
#include <defs.h>
#include <mram.h>
#include <stdint.h>

__mram_noinit uint64_t RESULTS[64];
__host uint32_t base;
__host uint32_t beyond;
__host uint32_t which;

int main(void) {
  uint32_t *tmp = (uint32_t *)(&RESULTS);
  if (me() == 0) base = *tmp + 1;                /* line 16: the zero word */
  if (me() == 0 && which == 1) beyond = tmp[16]; /* line 17: layout-dependent */
  if (me() == 0 && which == 2) *tmp = 5;         /* line 18: a store, even into the zero word */
  return 0;
}
