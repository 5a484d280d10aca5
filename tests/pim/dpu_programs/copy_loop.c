/* A loop that copies WRAM words and one that clears them, which clang turns into llvm.memmove / llvm.memset: the
 * pass must charge them as the loops the DPU runs (a load, a store, an add and a branch per word). */
#include <defs.h>
#include <stdint.h>

__host uint32_t words[257];
__host uint32_t cleared[256];
__host uint32_t count = 256;

int main(void) {
  if (me() != 0) return 0;
  for (uint32_t i = 0; i < 256; ++i) words[i] = words[i + 1]; /* a constant-length copy */
  for (uint32_t i = 0; i < count; ++i) cleared[i] = 0;        /* a run-time-length fill */
  return 0;
}
