/* pimopt's DPU headers (see attributes.h). alloc.h: the WRAM heap shared by the tasklets (8-byte aligned blocks),
 * and the fixed-size block allocator (fsb_allocator.h). */
#ifndef PIMOPT_DPU_ALLOC_H
#define PIMOPT_DPU_ALLOC_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif
void* mem_alloc(size_t size);
void mem_reset(void);
#ifdef __cplusplus
}
#endif

#include <fsb_allocator.h> /* as the SDK's alloc.h: the fixed-size block allocator */

#endif
