// Private: the SDK routines PrIM's kernels call, with what they cost on the DPU, and small host helpers.
#pragma once

#include <cstdint>
#include <vector>

#include "pimopt/pim/dpu_types.h"
#include "pimopt/pim/kernel.h"

namespace pimopt::pim::prim {

// main(): `return kernels[DPU_INPUT_ARGUMENTS.kernel]();` - a load and an indirect call.
inline void KernelDispatch(const uint32_t& kernel_field) {
  (void)Load(&kernel_field);
  CountCall();
}
// mem_reset() ([SDK] alloc.h): a call that stores the heap's start.
inline void MemReset(Tasklet& t) {
  CountCall();
  Count(Op::kWramStore);
  t.MemReset();
}
// mem_alloc(bytes) ([SDK] alloc.h): a call that aligns the size and bumps the heap pointer under the allocator's
// lock (load, add, align, compare, store).
template <class T>
inline WramPtr<T> MemAlloc(Tasklet& t, uint32_t bytes) {
  CountCall();
  Count(Op::kInt32Add, 3);
  Count(Op::kInt32Logic);
  Count(Op::kWramLoad);
  Count(Op::kWramStore);
  Count(Op::kBranch);
  return WramPtr<T>(static_cast<T*>(t.MemAlloc(bytes)));
}
// handshake_sync (noinline) of PrIM's SEL and SCAN: the tasklets' running count passed along the handshake chain;
// each tasklet gets the count of the tasklets before it and hands on that plus its own.
template <class T>
Int<T> HandshakeSync(Tasklet& t, WramPtr<T> message, Int<T> l_count, u32 tasklet_id) {
  CountCall();
  Int<T> p_count;
  if (tasklet_id != 0) {
    t.HandshakeWaitFor(tasklet_id.value() - 1);
    p_count = message[tasklet_id];
  } else {
    p_count = 0;
  }
  if (tasklet_id < t.nr_tasklets() - 1) {
    message[tasklet_id + 1] = p_count + l_count;
    t.HandshakeNotify();
  }
  return p_count;
}

// DPU_MRAM_HEAP_POINTER: a link-time constant.
inline u32 HeapPointer(Tasklet& t) { return u32(static_cast<uint32_t>(t.MramHeap())); }

// Host side: the buffer of each DPU, `stride` elements apart.
template <class T>
std::vector<const void*> PerDpu(const T* base, uint64_t stride, uint32_t dpus) {
  std::vector<const void*> v(dpus);
  for (uint32_t d = 0; d < dpus; ++d) v[d] = base + d * stride;
  return v;
}
template <class T>
std::vector<void*> PerDpuOut(T* base, uint64_t stride, uint32_t dpus) {
  std::vector<void*> v(dpus);
  for (uint32_t d = 0; d < dpus; ++d) v[d] = base + d * stride;
  return v;
}

}  // namespace pimopt::pim::prim
