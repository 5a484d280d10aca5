/* The SDK's fixed-size block allocator (fsb_allocator.h, through alloc.h), shared by every tasklet: 20 blocks of 12
 * bytes, asked for 8 at a time by each tasklet, written, checked, given back, and taken again. */
#include <alloc.h>
#include <barrier.h>
#include <defs.h>
#include <stdint.h>

#define BLOCKS 20
#define ASKS 8

BARRIER_INIT(step, NR_TASKLETS);
__host uint32_t got[NR_TASKLETS];
__host uint32_t intact;   /* every block still holds what its tasklet wrote */
__host uint32_t regot;    /* blocks taken again after every one was given back */
__host uint32_t refused;  /* fsb_get on an empty allocator gave NULL */
fsb_allocator_t allocator;
uint32_t* blocks[NR_TASKLETS][ASKS];

int main(void) {
  const uint32_t t = me();
  if (t == 0) {
    mem_reset();
    allocator = fsb_alloc(12, BLOCKS);
  }
  barrier_wait(&step);
  uint32_t n = 0;
  for (; n < ASKS; ++n) {
    uint32_t* block = (uint32_t*)fsb_get(allocator);
    if (block == 0) break;
    block[0] = 1000 * t + n;
    block[2] = 7;
    blocks[t][n] = block;
  }
  got[t] = n;
  barrier_wait(&step);
  if (t == 0) {
    intact = 1;
    for (uint32_t k = 0; k < NR_TASKLETS; ++k) {
      for (uint32_t i = 0; i < got[k]; ++i) intact &= blocks[k][i][0] == 1000 * k + i && blocks[k][i][2] == 7;
    }
  }
  barrier_wait(&step);
  for (uint32_t i = 0; i < n; ++i) fsb_free(allocator, blocks[t][i]);
  barrier_wait(&step);
  if (t == 0) {
    regot = 0;
    while (fsb_get(allocator) != 0) ++regot;
    refused = fsb_get(allocator) == 0;
  }
  return 0;
}
