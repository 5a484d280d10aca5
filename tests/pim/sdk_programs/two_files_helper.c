/* pimopt's test corpus: the second file of two_files_main.c. */
#include <defs.h>
#include <stdint.h>

__host uint32_t helper_counter = 100;

uint32_t add_twice(uint32_t v) { return v + v; }
