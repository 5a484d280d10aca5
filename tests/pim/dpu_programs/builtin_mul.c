/* The SDK's multiply builtins (built_ins.h; pimopt's own text): a short times a short from its four byte products,
 * as the DPU compiler builds it, checked by the host against the product. Tasklet 0. */
#include <built_ins.h>
#include <defs.h>
#include <stdint.h>

__host uint32_t n;
__host int16_t a[256];
__host int16_t b[256];
__host int32_t product[256];

int main(void) {
  if (me() != 0) return 0;
  for (uint32_t i = 0; i < n; ++i) {
    int32_t low, mid1, mid2, high;
    __builtin_mul_ul_ul_rrr(low, a[i], b[i]);
    __builtin_mul_sh_ul_rrr(mid1, a[i], b[i]);
    __builtin_mul_ul_sh_rrr(mid2, a[i], b[i]);
    __builtin_mul_sh_sh_rrr(high, a[i], b[i]);
    product[i] = low + (mid1 << 8) + (mid2 << 8) + (high << 16);
  }
  return 0;
}
