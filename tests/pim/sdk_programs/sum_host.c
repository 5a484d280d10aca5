/* An SDK-style host program (pimopt's test corpus) for sum_dpu.c: every host call of the API it uses, checked.
 * Prints "sdk sum: PASS" and exits 0 when every result is right. */
#include <dpu.h>
#include <dpu_log.h>
#include <dpu_probe.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#ifndef DPU_BINARY
#define DPU_BINARY "sum_dpu.dpu"
#endif
#define NR_DPUS 130 /* three ranks of 64: two full, one partial */
#define N 4096

static int failures = 0;
#define EXPECT(cond, ...)                          \
  do {                                             \
    if (!(cond)) {                                 \
      fprintf(stderr, "FAILED %s: ", #cond);       \
      fprintf(stderr, __VA_ARGS__);                \
      fprintf(stderr, "\n");                       \
      failures++;                                  \
    }                                              \
  } while (0)

/* dpu_callback: each call records its rank's DPUs and reads the rank's first DPU's total. */
struct callback_record {
  uint32_t calls;
  uint32_t dpus[4];
  uint64_t first_total[4];
};
static dpu_error_t record_rank(struct dpu_set_t rank, uint32_t index, void* arg) {
  struct callback_record* record = arg;
  struct dpu_set_t dpu;
  if (index >= 4) return DPU_ERR_INTERNAL;
  record->calls++;
  dpu_error_t status = dpu_get_nr_dpus(rank, &record->dpus[index]);
  if (status != DPU_OK) return status;
  DPU_FOREACH(rank, dpu) {
    return dpu_copy_from(dpu, "total", 0, &record->first_total[index], sizeof(uint64_t));
  }
  return DPU_OK;
}
static dpu_error_t fail_second_rank(struct dpu_set_t rank, uint32_t index, void* arg) {
  (void)rank;
  (void)arg;
  return index == 1 ? DPU_ERR_INVALID_DPU_SET : DPU_OK;
}

static double Now(void) {
  struct timeval tv;
  gettimeofday(&tv, NULL);
  return tv.tv_sec + 1e-6 * tv.tv_usec;
}

int main(void) {
  struct dpu_set_t set, dpu, rank;
  struct dpu_program_t* program;
  uint32_t nr_dpus, nr_ranks, i;
  DPU_ASSERT(dpu_alloc(NR_DPUS, "backend=hw", &set));
  DPU_ASSERT(dpu_get_nr_dpus(set, &nr_dpus));
  DPU_ASSERT(dpu_get_nr_ranks(set, &nr_ranks));
  EXPECT(nr_dpus == NR_DPUS, "%u DPUs", nr_dpus);
  EXPECT(nr_ranks == 3, "%u ranks", nr_ranks);
  DPU_ASSERT(dpu_load(set, DPU_BINARY, &program));

  uint32_t* input = malloc(sizeof(uint32_t) * N * NR_DPUS);
  for (i = 0; i < N * NR_DPUS; ++i) input[i] = (i * 2654435761u) >> 20;
  uint32_t n = N;
  DPU_ASSERT(dpu_broadcast_to(set, "n_elements", 0, &n, sizeof(n), DPU_XFER_DEFAULT));
  DPU_FOREACH(set, dpu, i) { DPU_ASSERT(dpu_prepare_xfer(dpu, input + (size_t)i * N)); }
  DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_TO_DPU, "input", 0, N * sizeof(uint32_t), DPU_XFER_DEFAULT));

  /* An energy probe (dpu_probe.h, as PrIM's ENERGY=1 builds use it): nothing to read before a window completes. */
  struct dpu_probe_t probe;
  double probed;
  DPU_ASSERT(dpu_probe_init("energy_probe", &probe));
  EXPECT(dpu_probe_get(&probe, DPU_ENERGY, DPU_AVERAGE, &probed) == DPU_ERR_INTERNAL, "a probe without a window");
  EXPECT(dpu_probe_stop(&probe) == DPU_ERR_INTERNAL, "a probe stopped before it started");
  DPU_ASSERT(dpu_probe_start(&probe));

  /* A synchronous launch, timed by the program's own clock (PIMOPT_MODELED_CLOCK=1: modeled time). */
  const double modeled_before = pimopt_modeled_seconds();
  const double t0 = Now();
  DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));
  const double t1 = Now();
  const double launch_s = pimopt_last_launch_seconds();
  EXPECT(launch_s > 0, "launch %g s", launch_s);
  EXPECT(fabs(pimopt_modeled_seconds() - modeled_before - launch_s) < 1e-12, "modeled clock");
  const char* modeled = getenv("PIMOPT_MODELED_CLOCK");
  if (modeled && strcmp(modeled, "1") == 0) {
    EXPECT(fabs((t1 - t0) - launch_s) < 0.05 * launch_s + 2e-4, "program clock %g s, modeled launch %g s", t1 - t0,
           launch_s);
  }

  /* The probe's first window held the launch: its modeled time, and the DPUs' energy. */
  DPU_ASSERT(dpu_probe_stop(&probe));
  double launch_energy_j;
  DPU_ASSERT(dpu_probe_get(&probe, DPU_TIME, DPU_ACCUMULATE, &probed));
  EXPECT(fabs(probed - launch_s) < 1e-12, "probe time %g s, launch %g s", probed, launch_s);
  DPU_ASSERT(dpu_probe_get(&probe, DPU_ENERGY, DPU_ACCUMULATE, &launch_energy_j));
  EXPECT(launch_energy_j > 0 && launch_energy_j < 1.0, "launch energy %g J", launch_energy_j);

  /* A second window holds a transfer from the DPUs: its time and energy add up, the average halves the sum. */
  uint64_t totals[NR_DPUS];
  DPU_ASSERT(dpu_probe_start(&probe));
  const double pull_before = pimopt_modeled_seconds();
  DPU_FOREACH(set, dpu, i) { DPU_ASSERT(dpu_prepare_xfer(dpu, &totals[i])); }
  DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_FROM_DPU, "total", 0, sizeof(uint64_t), DPU_XFER_DEFAULT));
  const double pull_s = pimopt_modeled_seconds() - pull_before;
  DPU_ASSERT(dpu_probe_stop(&probe));
  double both_energy_j, average_s;
  DPU_ASSERT(dpu_probe_get(&probe, DPU_ENERGY, DPU_ACCUMULATE, &both_energy_j));
  DPU_ASSERT(dpu_probe_get(&probe, DPU_TIME, DPU_AVERAGE, &average_s));
  EXPECT(both_energy_j > launch_energy_j, "energy %g J after a transfer, %g J before", both_energy_j, launch_energy_j);
  EXPECT(fabs(average_s - (launch_s + pull_s) / 2) < 1e-12, "average window %g s", average_s);
  EXPECT(dpu_probe_start(&probe) == DPU_OK && dpu_probe_start(&probe) == DPU_ERR_INTERNAL, "a probe started twice");
  DPU_ASSERT(dpu_probe_stop(&probe));
  DPU_ASSERT(dpu_probe_deinit(&probe));
  EXPECT(dpu_probe_start(&probe) == DPU_ERR_INTERNAL, "a probe after dpu_probe_deinit");
  DPU_FOREACH(set, dpu, i) {
    uint64_t expect = 0, mram_total = 0, checksum = 0, prefix[16];
    for (uint32_t j = 0; j < N; ++j) expect += input[(size_t)i * N + j];
    EXPECT(totals[i] == expect, "DPU %u total %llu, expected %llu", i, (unsigned long long)totals[i],
           (unsigned long long)expect);
    DPU_ASSERT(dpu_copy_from(dpu, "mram_total", 0, &mram_total, sizeof(mram_total)));
    DPU_ASSERT(dpu_copy_from(dpu, "mram_checksum", 0, &checksum, sizeof(checksum)));
    DPU_ASSERT(dpu_copy_from(dpu, "prefix", 0, prefix, sizeof(prefix)));
    EXPECT(mram_total == expect, "DPU %u MRAM total", i);
    EXPECT(checksum == (0x0123456789abcdefULL ^ expect), "DPU %u MRAM checksum", i);
    EXPECT(prefix[15] == expect && prefix[0] <= prefix[1], "DPU %u prefix", i);
  }
  uint32_t cycles = 0;
  DPU_FOREACH(set, dpu) {
    DPU_ASSERT(dpu_copy_from(dpu, "cycles", 0, &cycles, sizeof(cycles)));
    break;
  }
  EXPECT(cycles > N, "%u cycles", cycles);

  /* The log of DPU 129 (in the third rank). */
  DPU_FOREACH(set, dpu, i) {
    if (i != 129) continue;
    char text[256] = {0};
    FILE* log = tmpfile();
    DPU_ASSERT(dpu_log_read(dpu, log));
    rewind(log);
    size_t got = fread(text, 1, sizeof(text) - 1, log);
    fclose(log);
    char expect[128];
    snprintf(expect, sizeof(expect), "DPU total %llu after 1 launches\n", (unsigned long long)totals[129]);
    EXPECT(got > 0 && strcmp(text, expect) == 0, "log '%s', expected '%s'", text, expect);
    DPU_ASSERT(dpulog_read_for_dpu(dpu.dpu, stdout));
  }

  /* By symbol, per rank, and an asynchronous launch with a different scale on the second rank. */
  struct dpu_symbol_t scale_symbol;
  DPU_ASSERT(dpu_get_symbol(program, "scale", &scale_symbol));
  EXPECT(scale_symbol.size == 4, "scale is %u bytes", scale_symbol.size);
  uint32_t ranks_seen = 0, dpus_in_rank[3] = {0, 0, 0};
  DPU_RANK_FOREACH(set, rank, i) {
    uint32_t scale = i == 1 ? 3 : 1, count;
    DPU_ASSERT(dpu_copy_to_symbol(rank, scale_symbol, 0, &scale, sizeof(scale)));
    DPU_ASSERT(dpu_get_nr_dpus(rank, &count));
    dpus_in_rank[i] = count;
    ranks_seen++;
  }
  EXPECT(ranks_seen == 3 && dpus_in_rank[0] == 64 && dpus_in_rank[1] == 64 && dpus_in_rank[2] == 2,
         "ranks %u: %u %u %u", ranks_seen, dpus_in_rank[0], dpus_in_rank[1], dpus_in_rank[2]);
  /* A callback queued behind an asynchronous launch: once per rank, after the launch has ended (modeled time). */
  DPU_ASSERT(dpu_launch(set, DPU_ASYNCHRONOUS));
  const double async_before = pimopt_modeled_seconds();
  struct callback_record record = {0, {0}, {0}};
  DPU_ASSERT(dpu_callback(set, record_rank, &record, DPU_CALLBACK_ASYNC));
  EXPECT(pimopt_modeled_seconds() - async_before >= 0.5 * pimopt_last_launch_seconds(), "the callback waited");
  EXPECT(record.calls == 3 && record.dpus[0] == 64 && record.dpus[1] == 64 && record.dpus[2] == 2,
         "callback ranks %u: %u %u %u", record.calls, record.dpus[0], record.dpus[1], record.dpus[2]);
  EXPECT(record.first_total[1] != 0, "the callback read the second rank's results");
  struct callback_record single = {0, {0}, {0}};
  DPU_ASSERT(dpu_callback(set, record_rank, &single, DPU_CALLBACK_SINGLE_CALL));
  EXPECT(single.calls == 1 && single.dpus[0] == NR_DPUS, "one call for the set: %u calls, %u DPUs", single.calls,
         single.dpus[0]);
  EXPECT(dpu_callback(set, fail_second_rank, NULL, DPU_CALLBACK_DEFAULT) == DPU_ERR_INVALID_DPU_SET,
         "a callback's status");
  EXPECT(dpu_callback(set, record_rank, &single, (dpu_callback_flags_t)64) == DPU_ERR_INTERNAL, "unknown flags");

  DPU_ASSERT(dpu_launch(set, DPU_ASYNCHRONOUS));
  bool done = false, fault = true;
  DPU_ASSERT(dpu_status(set, &done, &fault));
  EXPECT(done && !fault, "status");
  DPU_ASSERT(dpu_sync(set));
  DPU_FOREACH(set, dpu, i) {
    uint64_t total = 0;
    uint32_t calls = 0;
    DPU_ASSERT(dpu_copy_from(dpu, "total", 0, &total, sizeof(total)));
    DPU_ASSERT(dpu_copy_from(dpu, "calls", 0, &calls, sizeof(calls)));
    uint64_t expect = 0;
    for (uint32_t j = 0; j < N; ++j) expect += input[(size_t)i * N + j];
    if (i >= 64 && i < 128) expect *= 3;
    EXPECT(total == expect, "DPU %u second total", i);
    EXPECT(calls == 3, "DPU %u calls %u", i, calls); /* the launches so far */
  }
  /* Prepared buffers survive a DPU_XFER_NO_RESET push. */
  uint64_t first[NR_DPUS], again[NR_DPUS];
  DPU_FOREACH(set, dpu, i) { DPU_ASSERT(dpu_prepare_xfer(dpu, &first[i])); }
  DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_FROM_DPU, "total", 0, 8, DPU_XFER_NO_RESET));
  memcpy(again, first, sizeof(first));
  memset(first, 0, sizeof(first));
  DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_FROM_DPU, "total", 0, 8, DPU_XFER_DEFAULT));
  EXPECT(memcmp(first, again, sizeof(first)) == 0, "NO_RESET kept the buffers");
  /* Launches of single ranks, in flight together: rank 1 does not run, and the modeled clock waits for the longer
   * launch, not for both one after the other. */
  uint32_t calls_before[NR_DPUS];
  DPU_FOREACH(set, dpu, i) { DPU_ASSERT(dpu_copy_from(dpu, "calls", 0, &calls_before[i], sizeof(uint32_t))); }
  double rank_s[3] = {0, 0, 0};
  const double ranks_before = pimopt_modeled_seconds();
  DPU_RANK_FOREACH(set, rank, i) {
    if (i == 1) continue;
    DPU_ASSERT(dpu_load(rank, DPU_BINARY, NULL)); /* the loaded program: nothing to do */
    DPU_ASSERT(dpu_launch(rank, DPU_ASYNCHRONOUS));
    rank_s[i] = pimopt_last_launch_seconds();
  }
  EXPECT(pimopt_modeled_seconds() == ranks_before, "asynchronous launches return at once");
  DPU_ASSERT(dpu_sync(set));
  const double waited = pimopt_modeled_seconds() - ranks_before;
  const double longer = rank_s[0] > rank_s[2] ? rank_s[0] : rank_s[2];
  EXPECT(rank_s[0] > 0 && rank_s[2] > 0 && fabs(waited - longer) < 0.05 * longer + 1e-4,
         "waited %g s for ranks of %g s and %g s", waited, rank_s[0], rank_s[2]);
  DPU_FOREACH(set, dpu, i) {
    uint32_t calls = 0;
    DPU_ASSERT(dpu_copy_from(dpu, "calls", 0, &calls, sizeof(calls)));
    const uint32_t launched = (i < 64 || i >= 128) ? 1 : 0;
    EXPECT(calls == calls_before[i] + launched, "DPU %u: %u launches after %u", i, calls, calls_before[i]);
  }
  DPU_ASSERT(dpu_free(set));
  free(input);
  printf("modeled seconds %.6f on %s\n", pimopt_modeled_seconds(), pimopt_profile_name());
  if (failures == 0) printf("sdk sum: PASS\n");
  return failures == 0 ? 0 : 1;
}
