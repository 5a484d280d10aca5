/* An SDK-style host program (pimopt's test corpus): the API's errors. Each misuse must return the SDK's status;
 * each broken DPU rule (fault_dpu.c) must fail the launch with DPU_ERR_DPU_FAULT and a message naming
 * fault_dpu.c:LINE, the DPU and the tasklet. Prints "sdk errors: PASS" and exits 0 when all hold. */
#include <dpu.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef FAULT_BINARY
#define FAULT_BINARY "fault_dpu.dpu"
#endif
#ifndef SUM_BINARY
#define SUM_BINARY "sum_dpu.dpu"
#endif
#ifndef FAULT_SOURCE
#define FAULT_SOURCE "fault_dpu.c"
#endif

static int failures = 0;
#define EXPECT_STATUS(call, status)                                                             \
  do {                                                                                          \
    dpu_error_t got = (call);                                                                   \
    if (got != (status)) {                                                                      \
      fprintf(stderr, "FAILED %s: %s, expected %s\n", #call, dpu_error_to_string(got), #status); \
      failures++;                                                                               \
    }                                                                                           \
  } while (0)

/* What the library printed to stderr during `call`. */
static char captured[4096];
#define CAPTURE(call)                                   \
  do {                                                  \
    fflush(stderr);                                     \
    FILE* sink = tmpfile();                             \
    int saved = dup(2);                                 \
    dup2(fileno(sink), 2);                              \
    call;                                               \
    fflush(stderr);                                     \
    dup2(saved, 2);                                     \
    close(saved);                                       \
    rewind(sink);                                       \
    size_t n = fread(captured, 1, sizeof(captured) - 1, sink); \
    captured[n] = 0;                                    \
    fclose(sink);                                       \
  } while (0)

/* The line of fault_dpu.c that has "FAULT k". */
static int FaultLine(int k) {
  FILE* f = fopen(FAULT_SOURCE, "r");
  if (!f) return -1;
  char line[512], mark[32];
  snprintf(mark, sizeof(mark), "FAULT %d:", k);
  for (int number = 1; fgets(line, sizeof(line), f); ++number) {
    if (strstr(line, mark)) {
      fclose(f);
      return number;
    }
  }
  fclose(f);
  return -1;
}

int main(void) {
  struct dpu_set_t set, dpu;
  uint32_t value = 0;
  EXPECT_STATUS(dpu_alloc(100000, NULL, &set), DPU_ERR_ALLOCATION);
  EXPECT_STATUS(dpu_alloc(4, "backend=simulator,cycleAccurate=true", &set), DPU_ERR_INVALID_PROFILE);
  /* The SDK's host-thread settings are accepted (they change no modeled time). */
  EXPECT_STATUS(dpu_alloc(4, "backend=hw,nrThreadsPerRank=2,nrJobsPerRank=256", &set), DPU_OK);
  EXPECT_STATUS(dpu_free(set), DPU_OK);
  /* The system's DPUs are shared by the live allocations: two of 1,000 leave too few for a third. */
  struct dpu_set_t first, second, third;
  EXPECT_STATUS(dpu_alloc(1000, NULL, &first), DPU_OK);
  EXPECT_STATUS(dpu_alloc(1000, NULL, &second), DPU_OK);
  EXPECT_STATUS(dpu_alloc(1000, NULL, &third), DPU_ERR_ALLOCATION);
  EXPECT_STATUS(dpu_free(second), DPU_OK);
  EXPECT_STATUS(dpu_alloc(1000, NULL, &third), DPU_OK);
  EXPECT_STATUS(dpu_free(first), DPU_OK);
  EXPECT_STATUS(dpu_free(third), DPU_OK);
  EXPECT_STATUS(dpu_alloc(4, NULL, &set), DPU_OK);
  EXPECT_STATUS(dpu_copy_to(set, "which", 0, &value, 4), DPU_ERR_UNKNOWN_SYMBOL);  /* nothing loaded */
  EXPECT_STATUS(dpu_load(set, "no/such/program.dpu", NULL), DPU_ERR_ELF_NO_SUCH_FILE);
  EXPECT_STATUS(dpu_load(set, FAULT_SOURCE, NULL), DPU_ERR_ELF_INVALID_FILE);
  EXPECT_STATUS(dpu_load(set, SUM_BINARY, NULL), DPU_OK);
#ifdef PROGRAM_DIR
  /* A program named without a folder is the file in the current folder (not a library search). */
  if (chdir(PROGRAM_DIR) != 0) failures++;
  EXPECT_STATUS(dpu_load(set, "sum_dpu.dpu", NULL), DPU_OK);
#endif
  EXPECT_STATUS(dpu_copy_to(set, "no_such_symbol", 0, &value, 4), DPU_ERR_UNKNOWN_SYMBOL);
  EXPECT_STATUS(dpu_copy_to(set, "n_elements", 0, &value, 3), DPU_ERR_INVALID_WRAM_ACCESS);
  EXPECT_STATUS(dpu_copy_to(set, "n_elements", 4, &value, 4), DPU_ERR_INVALID_WRAM_ACCESS);
  EXPECT_STATUS(dpu_copy_to(set, "input", 0, &value, 4), DPU_ERR_INVALID_MRAM_ACCESS);
  EXPECT_STATUS(dpu_launch(set, (dpu_launch_policy_t)7), DPU_ERR_INVALID_LAUNCH_POLICY);
  EXPECT_STATUS(dpu_push_xfer(set, (dpu_xfer_t)5, "n_elements", 0, 4, DPU_XFER_DEFAULT),
                DPU_ERR_INVALID_MEMORY_TRANSFER);
  DPU_FOREACH(set, dpu) {  /* one program per allocation: another one on one DPU of four is refused */
    EXPECT_STATUS(dpu_load(dpu, FAULT_BINARY, NULL), DPU_ERR_DIFFERENT_DPU_PROGRAMS);
    EXPECT_STATUS(dpu_load(dpu, SUM_BINARY, NULL), DPU_OK); /* the loaded one: nothing to do */
    break;
  }
  EXPECT_STATUS(dpu_load(set, FAULT_BINARY, NULL), DPU_OK);
  for (int k = 0; k < 4; ++k) {
    value = (uint32_t)k;
    EXPECT_STATUS(dpu_broadcast_to(set, "which", 0, &value, 4, DPU_XFER_DEFAULT), DPU_OK);
    dpu_error_t status = DPU_OK;
    CAPTURE(status = dpu_launch(set, DPU_SYNCHRONOUS));
    if (status != DPU_ERR_DPU_FAULT) {
      fprintf(stderr, "FAILED fault %d: %s\n", k, dpu_error_to_string(status));
      failures++;
    }
    char where[64];
    snprintf(where, sizeof(where), "fault_dpu.c:%d: ", FaultLine(k));
    if (!strstr(captured, where) || !strstr(captured, "DPU 0, tasklet 1")) {
      fprintf(stderr, "FAILED fault %d: the message does not name %s DPU 0, tasklet 1:\n%s", k, where, captured);
      failures++;
    } else {
      printf("fault %d: %s", k, captured);
    }
  }
  EXPECT_STATUS(dpu_free(set), DPU_OK);
  EXPECT_STATUS(dpu_free(set), DPU_ERR_INVALID_DPU_SET);  /* freed already */
  EXPECT_STATUS(dpu_get_nr_dpus(set, &value), DPU_ERR_INVALID_DPU_SET);
  if (failures == 0) printf("sdk errors: PASS\n");
  return failures == 0 ? 0 : 1;
}
