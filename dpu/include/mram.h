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
void __pimopt_dpu_mram_read_sized(const __mram_ptr void* from, void* to, unsigned int nb_of_bytes);
void __pimopt_dpu_mram_write_sized(const void* from, __mram_ptr void* to, unsigned int nb_of_bytes);
#ifdef __cplusplus
}
#endif

/* A size the compiler knows must be valid (the SDK refuses another when it compiles; here the DMA fails, naming the
 * line). A size known only at run time goes through the DMA's 8-bit length field, as on the DPU:
 * (((n >> 3) - 1) mod 256 + 1) x 8 bytes move, so 0 bytes move 2,048 and 12 move 8; the emulator counts such a
 * resized DMA. */
#define mram_read(from, to, nb_of_bytes)                                     \
  (__builtin_constant_p(nb_of_bytes) ? mram_read((from), (to), (nb_of_bytes)) \
                                     : __pimopt_dpu_mram_read_sized((from), (to), (nb_of_bytes)))
#define mram_write(from, to, nb_of_bytes)                                     \
  (__builtin_constant_p(nb_of_bytes) ? mram_write((from), (to), (nb_of_bytes)) \
                                     : __pimopt_dpu_mram_write_sized((from), (to), (nb_of_bytes)))

/* The first MRAM byte after the program's MRAM variables. */
#define DPU_MRAM_HEAP_POINTER ((__mram_ptr void*)__pimopt_dpu_mram_heap())

#endif
