/* pimopt's DPU headers: the UPMEM SDK's documented DPU API, for DPU C programs compiled by pimopt-dpu-cc and run on
 * pimopt's emulator (docs/pim-emulator.md "DPU C programs"). The names and meanings are the SDK's; the text is
 * pimopt's. attributes.h: where a variable lives. */
#ifndef PIMOPT_DPU_ATTRIBUTES_H
#define PIMOPT_DPU_ATTRIBUTES_H

/* A WRAM variable the host reads and writes by name (dpu_copy_to / dpu_copy_from). Every WRAM global is one. */
#define __host
/* A pointer into MRAM: its value is an MRAM address. Loads and stores through it are DMAs of the 8 aligned bytes
 * around the access, as the SDK's compiler makes them. */
#define __mram_ptr __attribute__((address_space(255)))
/* MRAM variables: reached by DMA (mram_read, mram_write) or through their address (a __mram_ptr), placed from MRAM
 * address 0. */
#define __mram __mram_ptr __attribute__((section(".mram"), aligned(8)))
#define __mram_noinit __mram_ptr __attribute__((section(".mram.noinit"), aligned(8)))
#define __dma_aligned __attribute__((aligned(8)))
#define __noinline __attribute__((noinline))
#define __keep __attribute__((used))
/* The SDK places a variable among the DPU's atomic bits (section .atomic); here it is a plain byte. */
#define __atomic_bit

#endif
