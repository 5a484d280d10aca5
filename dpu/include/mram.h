/* pimopt's DPU headers (see attributes.h). mram.h: DMA between MRAM and WRAM (8 to 2,048 bytes, a multiple of 8,
 * both addresses 8-aligned), and the start of the MRAM heap. */
#ifndef PIMOPT_DPU_MRAM_H
#define PIMOPT_DPU_MRAM_H

#include <stdint.h>

#include "attributes.h"

#ifdef __cplusplus
extern "C" {
#endif
void mram_read(const __mram_ptr void* from, void* to, unsigned int nb_of_bytes);
void mram_write(const void* from, __mram_ptr void* to, unsigned int nb_of_bytes);
uintptr_t __pimopt_dpu_mram_heap(void);
#ifdef __cplusplus
}
#endif

/* The first MRAM byte after the program's MRAM variables. */
#define DPU_MRAM_HEAP_POINTER ((__mram_ptr void*)__pimopt_dpu_mram_heap())

#endif
