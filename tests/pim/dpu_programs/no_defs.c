/* A program that includes none of the SDK's headers: its tasklets are the command line's NR_TASKLETS all the same
 * (SJTU-DDST's hash table builds with -DNR_TASKLETS=1 and never includes defs.h), or the SDK's default, 1. */
#include <stdint.h>

uint32_t runs;

int main(void) {
  runs += 1;
  return 0;
}
