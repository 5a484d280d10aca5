#include "pimopt/core/huge_pages.h"

#include <sys/mman.h>

#include <cstdint>

namespace pimopt {

void AdviseHugePages(const void* data, size_t bytes) {
  if (data == nullptr || bytes < kHugePageAdviceBytes) return;
  constexpr uintptr_t kHugePage = uintptr_t{2} << 20;
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(data) + kHugePage - 1) & ~(kHugePage - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(data) + bytes) & ~(kHugePage - 1);
  if (end <= begin) return;
  // Only whole huge pages inside the buffer: the advice never reaches memory the buffer does not own.
  ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
}

}  // namespace pimopt
