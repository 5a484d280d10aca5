/* What the SDK's compiler and headers accept that a program may rely on: __builtin_nop_() (a builtin, no header),
 * BARRIER_INIT and SEMAPHORE_INIT without a ';' of their own (the SDK's macros end with one), the __atomic_bit
 * attribute, and atomic_bit.h through barrier.h (UPMEM_synchronization_benchmarks writes all of these); a profiling
 * section (profiling.h) around tasklet 0's nops. */
#include <barrier.h>
#include <defs.h>
#include <profiling.h>
#include <sem.h>
#include <stdint.h>

BARRIER_INIT(all, NR_TASKLETS)
SEMAPHORE_INIT(one, 1)
uint8_t __atomic_bit flags[4];
ATOMIC_BIT_INIT(bit);
__host uint32_t spins;
__host uint32_t passed;
PROFILING_INIT(section);

int main(void) {
  if (me() == 0) profiling_start(&section);
  for (uint32_t i = 0; i < spins; ++i) __builtin_nop_();
  if (me() == 0) profiling_stop(&section);
  barrier_wait(&all);
  sem_take(&one);
  passed += 1;
  sem_give(&one);
  return 0;
}
