/* A DMA the DPU refuses (12 bytes: not a multiple of 8), as a mistaken program would write it. */
#include <defs.h>
#include <mram.h>
#include <stdint.h>

__dma_aligned uint8_t buffer[16];

int main(void) {
  mram_read(DPU_MRAM_HEAP_POINTER, buffer, 12);
  return 0;
}
