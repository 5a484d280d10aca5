/* An SDK-style DPU program (pimopt's test corpus): each DPU sums its slice of an MRAM array with a sequential
 * reader per tasklet, the tasklets pass a running total along with handshakes, tasklet 0 writes results through
 * an MRAM pointer and an MRAM variable, prints to the log, and reads the cycle counter. */
#include <alloc.h>
#include <barrier.h>
#include <defs.h>
#include <handshake.h>
#include <mram.h>
#include <mutex.h>
#include <perfcounter.h>
#include <seqread.h>
#include <stdint.h>
#include <stdio.h>

#define MAX_ELEMENTS (1 << 16)

__host uint32_t n_elements;   /* per DPU, a multiple of NR_TASKLETS */
__host uint32_t scale = 1;    /* an initialized WRAM variable */
__host uint64_t total;        /* the DPU's sum x scale */
__host uint64_t prefix[NR_TASKLETS];
__host uint32_t cycles;
__host uint32_t calls;        /* launches so far (WRAM keeps it between launches) */
__mram_noinit uint32_t input[MAX_ELEMENTS];
__mram uint64_t mram_total;   /* written through its address */
__mram uint64_t mram_checksum = 0x0123456789abcdefULL;
BARRIER_INIT(start, NR_TASKLETS);
MUTEX_INIT(calls_mutex);

int main(void) {
  const uint32_t id = me();
  if (id == 0) {
    mem_reset();
    perfcounter_config(COUNT_CYCLES, true);
  }
  barrier_wait(&start);
  if (n_elements > MAX_ELEMENTS || n_elements % NR_TASKLETS != 0) return 1;
  const uint32_t per = n_elements / NR_TASKLETS;
  seqreader_buffer_t cache = seqread_alloc();
  seqreader_t reader;
  uint32_t* p = seqread_init(cache, &input[id * per], &reader);
  uint64_t sum = 0;
  for (uint32_t i = 0; i < per; ++i) {
    sum += *p * scale;
    p = seqread_get(p, sizeof(uint32_t), &reader);
  }
  /* A chain of handshakes: tasklet i adds its predecessor's prefix. */
  if (id > 0) handshake_wait_for(id - 1);
  prefix[id] = sum + (id > 0 ? prefix[id - 1] : 0);
  if (id + 1 < NR_TASKLETS) handshake_notify();
  if (id == NR_TASKLETS / 2) {
    mutex_lock(calls_mutex);
    calls++;
    mutex_unlock(calls_mutex);
  }
  barrier_wait(&start);
  if (id == 0) {
    total = prefix[NR_TASKLETS - 1];
    __mram_ptr uint64_t* where = &mram_total;
    *where = total;
    mram_checksum ^= total;
    cycles = (uint32_t)perfcounter_get();
    printf("DPU total %lu after %u launches\n", (unsigned long)total, calls);
  }
  return 0;
}
