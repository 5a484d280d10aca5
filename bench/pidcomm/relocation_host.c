/* Host program for bench/pidcomm_relocation.sh: launches PID-Comm's relocation kernel (built from the user's checkout
 * of AIS-SNU/PID-Comm, whose support/common.h declares dpu_arguments_comm_t) on one DPU of pimopt's emulator through
 * the SDK's host API (libpimopt_dpu) and prints the launch's modeled milliseconds.
 * Usage: relocation_host PROGRAM.dpu BYTES_PER_DPU COMM_DPUS */
#include <dpu.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "common.h"

double pimopt_last_launch_seconds(void);

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s PROGRAM.dpu BYTES_PER_DPU COMM_DPUS\n", argv[0]);
    return 2;
  }
  char* end = NULL;
  const unsigned long bytes = strtoul(argv[2], &end, 10);
  if (*end != '\0' || bytes == 0 || bytes % 2048 != 0 || bytes > (32ul << 20)) {
    fprintf(stderr, "BYTES_PER_DPU: a multiple of 2048 up to 32 MiB, not '%s'\n", argv[2]);
    return 2;
  }
  const unsigned long comm = strtoul(argv[3], &end, 10);
  if (*end != '\0' || comm == 0 || comm % 8 != 0 || bytes % (comm * 4) != 0) {
    fprintf(stderr, "COMM_DPUS: a multiple of 8 that divides BYTES_PER_DPU / 4, not '%s'\n", argv[3]);
    return 2;
  }
  struct dpu_set_t set, dpu;
  DPU_ASSERT(dpu_alloc(1, NULL, &set));
  DPU_ASSERT(dpu_load(set, argv[1], NULL));
  DPU_FOREACH(set, dpu) {
    dpu_arguments_comm_t arguments = {0};
    arguments.start_offset = 0;
    arguments.target_offset = (uint32_t)bytes;
    arguments.total_data_size = (uint32_t)bytes;
    arguments.num_comm_dpu = (uint32_t)comm;
    arguments.each_dpu = 0;
    arguments.no_rotate = false;
    DPU_ASSERT(dpu_copy_to(dpu, "DPU_INPUT_ARGUMENTS_RS1", 0, &arguments, sizeof(arguments)));
  }
  DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));
  printf("%.6f\n", 1e3 * pimopt_last_launch_seconds());
  DPU_ASSERT(dpu_free(set));
  return 0;
}
