/* A walk along a chain of WRAM nodes that ends at a null pointer, at most 8 steps: it must stop at the chain's end
 * (5 nodes). Under a data layout with a 32-bit pointer index, LLVM 14's IndVarSimplify deleted the loop's null test
 * and the walk always took 8 steps, reading through null: pimopt-dpu-cc's cost layout keeps the host's 64-bit index
 * for that reason. */
#include <defs.h>
#include <stdint.h>

struct node {
  struct node* next;
  uint32_t value;
};

struct node nodes[5];
struct node* head;
__host uint32_t steps;
__host uint32_t sum;

int main(void) {
  if (me() != 0) return 0;
  for (uint32_t i = 0; i < 5; ++i) {
    nodes[i].next = i + 1 < 5 ? &nodes[i + 1] : 0;
    nodes[i].value = i + 1;
  }
  head = &nodes[0];
  uint32_t n = 0, total = 0;
  for (; n < 8; ++n) {
    struct node* taken = head;
    if (taken == 0) break;
    head = taken->next;
    total += taken->value;
  }
  steps = n;
  sum = total;
  return 0;
}
