// Large buffers on transparent huge pages. In a virtual machine a page fault costs microseconds (a hypervisor exit),
// and a buffer of 4 KiB pages takes one per page at its first touch: zero-filling 188 MB (fashion-mnist's training
// set as floats) took 0.65 s on this project's 2-core machine, 0.02-0.30 s once the buffer was advised to huge pages
// (2 MiB: 512 times fewer faults). Advice only: where the kernel has no huge page to give (or transparent huge pages
// are off), the memory is the same memory on small pages. For buffers that are written whole; a buffer touched here
// and there (the emulator's lazily backed MRAM) must not be advised, a huge page backs 2 MiB at once.
#pragma once

#include <cstddef>
#include <vector>

namespace pimopt {

// Buffers from this size on are advised (smaller ones gain little and waste most of a huge page).
inline constexpr size_t kHugePageAdviceBytes = size_t{4} << 20;

// Asks the kernel to back [data, data + bytes) with huge pages where whole 2 MiB pages fit, before the first touch.
// Does nothing below kHugePageAdviceBytes; never fails (the advice is dropped where it cannot be followed).
void AdviseHugePages(const void* data, size_t bytes);

// A vector of n value-initialized elements (zeros), its buffer advised to huge pages before it is filled.
template <class T>
std::vector<T> ZeroedVector(size_t n) {
  std::vector<T> v;
  v.reserve(n);
  AdviseHugePages(v.data(), n * sizeof(T));
  v.resize(n);
  return v;
}

}  // namespace pimopt
