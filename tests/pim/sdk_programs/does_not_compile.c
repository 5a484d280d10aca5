/* pimopt's test corpus: a DPU program with a syntax error (pimopt-dpu-cc must give clang's diagnostics, exit 2). */
#include <defs.h>

int main(void) {
  return me() +;
}
