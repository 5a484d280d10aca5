/* MRAM variables and the DPU's software arithmetic (pimopt's own text, SDK style): tasklet 0 reads a table of
 * divisors from an initialized __mram array, multiplies and divides the host's inputs (in a __mram_noinit buffer)
 * by them, and writes the results back. */
#include <defs.h>
#include <mram.h>
#include <stdint.h>

#define N 64

__mram int32_t divisors[8] = {1, 2, 3, 5, 7, 11, 13, -17};
__mram_noinit int32_t values[N];
__mram_noinit int32_t products[N];
__mram_noinit int32_t quotients[N];
__dma_aligned int32_t table[8];
__dma_aligned int32_t in[N];
__dma_aligned int32_t out[N];

int main(void) {
  if (me() != 0) return 0;
  mram_read(divisors, table, sizeof(table));
  mram_read(values, in, sizeof(in));
  for (int i = 0; i < N; i++) out[i] = in[i] * table[i % 8];
  mram_write(out, products, sizeof(out));
  for (int i = 0; i < N; i++) out[i] = in[i] / table[i % 8];
  mram_write(out, quotients, sizeof(out));
  return 0;
}
