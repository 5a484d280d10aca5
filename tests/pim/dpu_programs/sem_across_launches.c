/* A semaphore's count stays from one launch to the next, as any WRAM variable's (the tensor-multiplication runtime
 * of polrolnik2 gives in one launch and takes in the next): `give` launches give a token, `take` launches take one. */
#include <defs.h>
#include <sem.h>
#include <stdint.h>

SEMAPHORE_INIT(tokens, 0)
__host uint32_t give;
__host uint32_t taken;

int main(void) {
  if (me() != 0) return 0;
  if (give) {
    sem_give(&tokens);
  } else {
    sem_take(&tokens);
    taken += 1;
  }
  return 0;
}
