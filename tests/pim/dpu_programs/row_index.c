/* A tasklet's row of a two-dimensional WRAM array, indexed in the loop as rows[me()][i] (mode 0) or through a row
 * pointer taken before the loop (mode 1): the DPU compiler computes rows + me() * ROW once either way, so the pass
 * charges both loops alike (me() is the same all along the loop), one lsl_add per access. */
#include <defs.h>
#include <stdint.h>

#define ROW 256

__host uint32_t n;
__host uint32_t mode;
__host uint8_t rows[NR_TASKLETS][ROW];
__host uint32_t sums[NR_TASKLETS];

int main(void) {
  const uint32_t id = me();
  uint32_t sum = 0;
  if (mode == 0) {
    for (uint32_t i = 0; i < n; ++i) sum += rows[me()][i]; /* me() in the loop, as published programs write it */
  } else {
    const uint8_t* row = rows[id];
    for (uint32_t i = 0; i < n; ++i) sum += row[i];
  }
  sums[id] = sum;
  return 0;
}
