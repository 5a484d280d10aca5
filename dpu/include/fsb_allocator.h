/* pimopt's DPU headers (see attributes.h). fsb_allocator.h: the SDK's fixed-size block allocator (alloc.h includes
 * it). fsb_alloc carves `nb_of_blocks` blocks of `block_size` bytes from the WRAM heap (mem_alloc) once; fsb_get
 * takes a free block (NULL when none is left) and fsb_free gives one back, under the allocator's own mutex, so the
 * tasklets may share an allocator. Inline C here: charged as the program's code, as the SDK's library routines run
 * on the DPU. A block is rounded up to 8 bytes (a free block holds the next one's address, 8 bytes on the host, 4 on
 * the DPU: a block of at most 4 bytes takes 8 here). */
#ifndef PIMOPT_DPU_FSB_ALLOCATOR_H
#define PIMOPT_DPU_FSB_ALLOCATOR_H

#include <stddef.h>

#include <alloc.h> /* mem_alloc (alloc.h includes this header in turn; the guards make either order work) */
#include <mutex.h>

struct pimopt_fsb_allocator {
  void* free_blocks;  /* the first free block; each free block holds the next one's address */
  uint8_t lock;       /* a mutex (mutex.h) */
};
typedef struct pimopt_fsb_allocator* fsb_allocator_t;

static inline fsb_allocator_t fsb_alloc(unsigned int block_size, unsigned int nb_of_blocks) {
  const size_t size = block_size <= 8u ? 8u : ((size_t)block_size + 7u) & ~(size_t)7u;
  fsb_allocator_t allocator = (fsb_allocator_t)mem_alloc(sizeof(struct pimopt_fsb_allocator));
  char* blocks = (char*)mem_alloc(size * nb_of_blocks);
  allocator->free_blocks = NULL;
  for (unsigned int i = nb_of_blocks; i-- > 0;) {
    void** block = (void**)(blocks + (size_t)i * size);
    *block = allocator->free_blocks;
    allocator->free_blocks = block;
  }
  return allocator;
}

static inline void* fsb_get(fsb_allocator_t allocator) {
  mutex_lock(&allocator->lock);
  void** block = (void**)allocator->free_blocks;
  if (block != NULL) allocator->free_blocks = *block;
  mutex_unlock(&allocator->lock);
  return block;
}

static inline void fsb_free(fsb_allocator_t allocator, void* ptr) {
  mutex_lock(&allocator->lock);
  *(void**)ptr = allocator->free_blocks;
  allocator->free_blocks = ptr;
  mutex_unlock(&allocator->lock);
}

#endif
