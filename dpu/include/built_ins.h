/* pimopt's DPU headers (see attributes.h). built_ins.h: the DPU's 8 x 8 multiplies as the SDK's builtins,
 * __builtin_mul_XY_ZW_rrr(dc, ra, rb): dc = byte Y of ra times byte W of rb, where Y and W are l (bits 0-7) or h
 * (bits 8-15) and X and Z say whether the byte is taken signed (s) or unsigned (u). One instruction each on the DPU,
 * one slot (`slots.mul8`) here. */
#ifndef PIMOPT_DPU_BUILT_INS_H
#define PIMOPT_DPU_BUILT_INS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif
/* selects: 1 ra's byte signed, 2 ra's high byte, 4 rb's byte signed, 8 rb's high byte. */
int32_t __pimopt_dpu_mul8(uint32_t ra, uint32_t rb, uint32_t selects);
#ifdef __cplusplus
}
#endif

#define __PIMOPT_MUL8(dc, ra, rb, selects) ((dc) = __pimopt_dpu_mul8((uint32_t)(ra), (uint32_t)(rb), (selects)))
#define __builtin_mul_ul_ul_rrr(dc, ra, rb) __PIMOPT_MUL8(dc, ra, rb, 0)
#define __builtin_mul_sl_ul_rrr(dc, ra, rb) __PIMOPT_MUL8(dc, ra, rb, 1)
#define __builtin_mul_uh_ul_rrr(dc, ra, rb) __PIMOPT_MUL8(dc, ra, rb, 2)
#define __builtin_mul_sh_ul_rrr(dc, ra, rb) __PIMOPT_MUL8(dc, ra, rb, 3)
#define __builtin_mul_ul_sl_rrr(dc, ra, rb) __PIMOPT_MUL8(dc, ra, rb, 4)
#define __builtin_mul_sl_sl_rrr(dc, ra, rb) __PIMOPT_MUL8(dc, ra, rb, 5)
#define __builtin_mul_uh_sl_rrr(dc, ra, rb) __PIMOPT_MUL8(dc, ra, rb, 6)
#define __builtin_mul_sh_sl_rrr(dc, ra, rb) __PIMOPT_MUL8(dc, ra, rb, 7)
#define __builtin_mul_ul_uh_rrr(dc, ra, rb) __PIMOPT_MUL8(dc, ra, rb, 8)
#define __builtin_mul_sl_uh_rrr(dc, ra, rb) __PIMOPT_MUL8(dc, ra, rb, 9)
#define __builtin_mul_uh_uh_rrr(dc, ra, rb) __PIMOPT_MUL8(dc, ra, rb, 10)
#define __builtin_mul_sh_uh_rrr(dc, ra, rb) __PIMOPT_MUL8(dc, ra, rb, 11)
#define __builtin_mul_ul_sh_rrr(dc, ra, rb) __PIMOPT_MUL8(dc, ra, rb, 12)
#define __builtin_mul_sl_sh_rrr(dc, ra, rb) __PIMOPT_MUL8(dc, ra, rb, 13)
#define __builtin_mul_uh_sh_rrr(dc, ra, rb) __PIMOPT_MUL8(dc, ra, rb, 14)
#define __builtin_mul_sh_sh_rrr(dc, ra, rb) __PIMOPT_MUL8(dc, ra, rb, 15)

#endif
