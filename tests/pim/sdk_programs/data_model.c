/* pimopt's test corpus: a DPU program that keeps a WRAM pointer in 32 bits (fine on the DPU, whose WRAM addresses
 * are 16 bits; lossy on the host): pimopt-dpu-cc must warn with the line. */
#include <defs.h>
#include <stdint.h>

__host uint32_t kept;
uint64_t table[4];

int main(void) {
  kept = (uint32_t)(uintptr_t)&table[me() % 4]; /* DATA MODEL */
  return 0;
}
