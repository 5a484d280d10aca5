/* DPU assembly in a C program: refused, naming its line (pimopt runs a DPU program as host code). */
#include <defs.h>

int main(void) {
  unsigned r;
  __asm__ volatile("cmpb4 %0, %1, %2" : "=r"(r) : "r"(1u), "r"(2u)); /* ASM */
  return (int)r;
}
