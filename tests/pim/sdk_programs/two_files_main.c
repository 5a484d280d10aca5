/* pimopt's test corpus: a DPU program of two files (with two_files_helper.c): one WRAM layout for both. */
#include <defs.h>
#include <stdint.h>

extern uint32_t helper_counter;
uint32_t add_twice(uint32_t v);
__host uint32_t main_value = 5;

int main(void) {
  if (me() == 0) main_value = add_twice(main_value) + helper_counter;
  return 0;
}
