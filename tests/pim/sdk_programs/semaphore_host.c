/* An SDK-style host program (pimopt's test corpus) for semaphore_dpu.c. Prints "sdk semaphore: PASS". */
#include <dpu.h>
#include <stdio.h>

#ifndef DPU_BINARY
#define DPU_BINARY "semaphore_dpu.dpu"
#endif

int main(void) {
  struct dpu_set_t set, dpu;
  int failures = 0;
  DPU_ASSERT(dpu_alloc(2, NULL, &set));
  DPU_ASSERT(dpu_load(set, DPU_BINARY, NULL));
  for (int launch = 0; launch < 2; ++launch) {
    uint32_t zero = 0;
    DPU_ASSERT(dpu_broadcast_to(set, "entries", 0, &zero, 4, DPU_XFER_DEFAULT));
    DPU_ASSERT(dpu_broadcast_to(set, "most_inside", 0, &zero, 4, DPU_XFER_DEFAULT));
    DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));
    DPU_FOREACH(set, dpu) {
      uint32_t entries, most, inside;
      DPU_ASSERT(dpu_copy_from(dpu, "entries", 0, &entries, 4));
      DPU_ASSERT(dpu_copy_from(dpu, "most_inside", 0, &most, 4));
      DPU_ASSERT(dpu_copy_from(dpu, "inside", 0, &inside, 4));
      if (entries != 4 * NR_TASKLETS || most != 3 || inside != 0) {
        fprintf(stderr, "FAILED launch %d: %u entries, at most %u inside, %u left inside\n", launch, entries, most,
                inside);
        failures++;
      }
    }
  }
  DPU_ASSERT(dpu_free(set));
  if (failures == 0) printf("sdk semaphore: PASS\n");
  return failures == 0 ? 0 : 1;
}
