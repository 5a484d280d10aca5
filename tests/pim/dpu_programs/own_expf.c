/* A program that brings its own math functions (as PIM-Opt's programs bring a table-based expf, TransPimLib its
 * sqrtf): its calls must reach its own definitions, neither the host's C library, which the emulator's process also
 * has, nor the host's instruction that the compiler knows for the library's function (x86-64's sqrtss, andps for
 * fabsf, roundss for floorf). Each is deliberately wrong (2x, x / 2, x + 1, x - 1), so a call that went elsewhere is
 * plain to see. */
#include <defs.h>
#include <stdint.h>

__host float in;
__host float out;
__host float out_sqrt;
__host float out_fabs;
__host float out_floor;

/* Out of line, as a larger implementation would be: the call stays a call. */
__attribute__((noinline)) float expf(float x) { return 2.0f * x; }
__attribute__((noinline)) float sqrtf(float x) { return 0.5f * x; }
/* Inlined where the compiler likes: still the program's arithmetic. */
float fabsf(float x) { return x + 1.0f; }
float floorf(float x) { return x - 1.0f; }

int main(void) {
  if (me() == 0) {
    out = expf(in);
    out_sqrt = sqrtf(in);
    out_fabs = fabsf(-in);
    out_floor = floorf(in);
  }
  return 0;
}
