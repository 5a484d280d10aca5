/* pimopt's DPU headers (see attributes.h). seqread.h: a sequential reader of an MRAM area through a WRAM cache of two
 * pages of SEQREAD_CACHE_SIZE bytes (32 to 1,024, a power of two; default 256). seqread_init loads the pages around
 * an MRAM address and returns the WRAM pointer to its byte; seqread_get advances such a pointer by fewer than
 * SEQREAD_CACHE_SIZE bytes and loads the next pages when it leaves the first page. The functions are the program's
 * own code here (inline), so the pass charges them as it charges the program. */
#ifndef PIMOPT_DPU_SEQREAD_H
#define PIMOPT_DPU_SEQREAD_H

#include <stdint.h>

#include "alloc.h"
#include "mram.h"

#ifndef SEQREAD_CACHE_SIZE
#define SEQREAD_CACHE_SIZE 256
#endif
#if SEQREAD_CACHE_SIZE != 32 && SEQREAD_CACHE_SIZE != 64 && SEQREAD_CACHE_SIZE != 128 && \
    SEQREAD_CACHE_SIZE != 256 && SEQREAD_CACHE_SIZE != 512 && SEQREAD_CACHE_SIZE != 1024
#error "seqread.h: SEQREAD_CACHE_SIZE must be 32, 64, 128, 256, 512 or 1024"
#endif

typedef uintptr_t seqreader_buffer_t;
typedef struct {
  uintptr_t wram_cache; /* the two pages in WRAM */
  uintptr_t mram_addr;  /* the MRAM address of the first page */
} seqreader_t;

/* The cache: two pages of the WRAM heap. */
static inline seqreader_buffer_t seqread_alloc(void) {
  return (seqreader_buffer_t)mem_alloc(2 * SEQREAD_CACHE_SIZE);
}

static inline void* seqread_seek(__mram_ptr void* mram_addr, seqreader_t* reader) {
  const uintptr_t address = (uintptr_t)mram_addr;
  reader->mram_addr = address & ~(uintptr_t)(SEQREAD_CACHE_SIZE - 1);
  mram_read((__mram_ptr void*)reader->mram_addr, (void*)reader->wram_cache, 2 * SEQREAD_CACHE_SIZE);
  return (void*)(reader->wram_cache + (address & (SEQREAD_CACHE_SIZE - 1)));
}

static inline void* seqread_init(seqreader_buffer_t cache, __mram_ptr void* mram_addr, seqreader_t* reader) {
  reader->wram_cache = cache;
  return seqread_seek(mram_addr, reader);
}

static inline void* seqread_get(void* ptr, uint32_t inc, seqreader_t* reader) {
  uintptr_t offset = (uintptr_t)ptr + inc - reader->wram_cache;
  if (offset >= SEQREAD_CACHE_SIZE) {
    reader->mram_addr += SEQREAD_CACHE_SIZE;
    offset -= SEQREAD_CACHE_SIZE;
    mram_read((__mram_ptr void*)reader->mram_addr, (void*)reader->wram_cache, 2 * SEQREAD_CACHE_SIZE);
  }
  return (void*)(reader->wram_cache + offset);
}

/* The MRAM address a reader's pointer stands for. */
static inline __mram_ptr void* seqread_tell(void* ptr, seqreader_t* reader) {
  return (__mram_ptr void*)(reader->mram_addr + ((uintptr_t)ptr - reader->wram_cache));
}

#endif
