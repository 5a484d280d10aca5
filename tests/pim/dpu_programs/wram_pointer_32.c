/* WRAM pointers kept in 32-bit integers and converted back, as DPU programs may (a DPU address is 16 bits; SimplePIM's
 * reductions loop over (uint32_t) addresses): a heap buffer's and a local's. */
#include <alloc.h>
#include <defs.h>
#include <stdint.h>

__host uint32_t from_heap;
__host uint32_t from_stack;

int main(void) {
  if (me() != 0) return 0;
  mem_reset();
  uint32_t* buffer = (uint32_t*)mem_alloc(16);
  buffer[1] = 42;
  const uint32_t heap_address = (uint32_t)(uintptr_t)buffer;
  from_heap = ((volatile uint32_t*)(uintptr_t)heap_address)[1];
  volatile uint32_t local[2] = {7, 9};
  const uint32_t stack_address = (uint32_t)(uintptr_t)local;
  from_stack = ((volatile uint32_t*)(uintptr_t)stack_address)[1];
  return 0;
}
