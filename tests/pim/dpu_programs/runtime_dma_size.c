/* One DMA of a size the host sets at run time (pimopt's own text, SDK style): the DPU moves what its 8-bit length
 * field holds; `moved` says how many bytes of the 2,048-byte buffer the read filled (the rest stays zero). */
#include <defs.h>
#include <mram.h>
#include <stdint.h>

__host uint32_t size;
__host uint32_t moved;
__dma_aligned uint8_t buffer[2048];

int main(void) {
  if (me() != 0) return 0;
  for (uint32_t i = 0; i < 2048; i++) buffer[i] = 0;
  mram_read(DPU_MRAM_HEAP_POINTER, buffer, size);
  uint32_t n = 0;
  for (uint32_t i = 0; i < 2048; i++) {
    if (buffer[i] != 0) n = i + 1;
  }
  moved = n;
  return 0;
}
