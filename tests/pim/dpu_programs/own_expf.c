/* A program that brings its own expf (as PIM-Opt's programs bring a table-based one): its calls must reach its own
 * definition, not the host's C library, which the emulator's process also has. Its own is 2x, so a call that went
 * to the library's would be plain to see. */
#include <defs.h>
#include <stdint.h>

__host float in;
__host float out;

/* Out of line, as a larger implementation would be: the call stays a call. */
__attribute__((noinline)) float expf(float x) { return 2.0f * x; }

int main(void) {
  if (me() == 0) out = expf(in);
  return 0;
}
