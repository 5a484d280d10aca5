// The DPU-side kernel API of pimopt's UPMEM emulator.
//
// A kernel is a C++ class whose Main() runs on every tasklet (hardware thread) of every DPU, natively on the host,
// as a fiber. It sees what a UPMEM DPU program sees ([SDK], [SDK-docs] in docs/sources.md): its tasklet id (me()), the DPU's 64 KB
// WRAM (host-visible variables declared in the KernelSpec, a bump heap: MemAlloc/MemReset), the DPU's 64 MB MRAM
// only through DMA (MramRead/MramWrite, with UPMEM's rules: 8-byte aligned, 8..2,048 bytes, multiple of 8),
// barriers and mutexes. It reports the work it does with Charge(Op, count) - the instruction classes of the
// profile's cost table - so the timing model can turn it into cycles; DMA and synchronization are charged by the
// API itself. Breaking a hardware rule throws PimError naming the kernel, DPU and tasklet.
//
// Example (the vector-add kernel of examples/pim_vector_add.cc, abridged):
//
//   class VectorAdd final : public pim::Kernel {
//    public:
//     pim::KernelSpec Spec() const override { return {"vector_add", 16, 0, {{"num_elements", 8}}, {}}; }
//     void Main(pim::Tasklet& t) override {
//       const uint64_t n = *t.Wram<uint64_t>("num_elements");
//       auto* a = static_cast<int32_t*>(t.MemAlloc(1024));   // per-tasklet WRAM buffers
//       auto* b = static_cast<int32_t*>(t.MemAlloc(1024));
//       for (uint64_t i = t.me() * 256; i < n; i += t.nr_tasklets() * 256) {   // blocks of 256 int32
//         t.MramRead(t.MramHeap() + 4 * i, a, 1024);
//         t.MramRead(t.MramHeap() + 4 * (n + i), b, 1024);
//         for (int j = 0; j < 256; ++j) a[j] += b[j];
//         t.Charge(pim::Op::kWramLoad, 2 * 256); ... // what the DPU compiler would emit
//         t.MramWrite(a, t.MramHeap() + 4 * (2 * n + i), 1024);
//       }
//     }
//   };
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "pimopt/core/error.h"
#include "pimopt/pim/profile.h"

namespace pimopt::pim {

// A kernel broke a hardware rule, or the host misused the API. The message names the kernel, the DPU and (for
// DPU-side errors) the tasklet.
class PimError : public Error {
 public:
  using Error::Error;
};

struct SymbolSpec {
  std::string name;
  uint32_t bytes = 0;
};

struct KernelSpec {
  std::string name;
  uint32_t tasklets = 16;                // NR_TASKLETS; overridable at load
  uint32_t stack_bytes = 0;              // WRAM stack per tasklet; 0 = the profile's default
  std::vector<SymbolSpec> wram_symbols;  // __host WRAM variables, placed 8-aligned from WRAM address 0
  std::vector<SymbolSpec> mram_symbols;  // __mram variables, placed from MRAM address 0; the heap follows
  // WRAM heap a launch takes per tasklet (MemAlloc, each allocation rounded up to 8 bytes). Declared, it lets a load
  // with more tasklets than fit be refused at once (MaxTasklets), and a launch that takes more than tasklets x this
  // fails naming the declaration. 0: undeclared (only the heap's end is checked).
  uint32_t heap_bytes_per_tasklet = 0;
};

// The most tasklets of `spec` whose variables, stacks and declared heaps fit the profile's WRAM (at most the
// profile's max_tasklets; 0 if not even one fits).
uint32_t MaxTasklets(const KernelSpec& spec, const HardwareProfile& profile);

class Tasklet;

class Kernel {
 public:
  virtual ~Kernel() = default;
  virtual KernelSpec Spec() const = 0;
  // Runs on every tasklet of every loaded DPU, concurrently across DPUs: keep per-DPU state in WRAM/MRAM, not in
  // the kernel object.
  virtual void Main(Tasklet& t) = 0;
};

// Kernels can be loaded by name once registered (e.g. from a static initializer in the kernel's file).
using KernelFactory = std::function<std::unique_ptr<Kernel>()>;
void RegisterKernel(const std::string& name, KernelFactory factory);
std::unique_ptr<Kernel> CreateKernel(const std::string& name);

class Dpu;

class Tasklet {
 public:
  uint32_t me() const { return id_; }
  uint32_t nr_tasklets() const { return num_tasklets_; }
  uint32_t dpu_index() const { return dpu_index_; }

  // --- work accounting (issue slots come from the profile's table)
  void Charge(Op op, uint64_t count = 1) { op_counts_[static_cast<size_t>(op)] += count; }
  // A 32-bit multiply that costs what __mulsi3 costs for these operands (setup + bit length of the smaller one).
  int32_t Mul32(int32_t a, int32_t b);

  // --- WRAM
  template <typename T>
  T* Wram(std::string_view symbol) {
    return static_cast<T*>(WramSymbol(symbol, sizeof(T)));
  }
  void* WramSymbol(std::string_view symbol, uint32_t min_bytes = 0);
  void* MemAlloc(uint32_t bytes);  // 8-byte aligned, shared heap of the DPU; throws when WRAM is exhausted
  void MemReset();

  // --- MRAM (DMA)
  uint64_t MramSymbol(std::string_view symbol) const;
  uint64_t MramHeap() const;  // DPU_MRAM_HEAP_POINTER
  void MramRead(uint64_t mram_address, void* wram_destination, uint32_t bytes);
  void MramWrite(const void* wram_source, uint64_t mram_address, uint32_t bytes);

  // --- synchronization
  void BarrierWait(uint32_t barrier = 0);  // all nr_tasklets() tasklets meet
  void MutexLock(uint32_t mutex);
  void MutexUnlock(uint32_t mutex);

  // Throws PimError with this kernel/DPU/tasklet as context.
  [[noreturn]] void Fail(const std::string& what) const;

 private:
  friend class Dpu;
  Dpu* dpu_ = nullptr;
  uint32_t id_ = 0;
  uint32_t num_tasklets_ = 0;
  uint32_t dpu_index_ = 0;
  std::array<uint64_t, kNumOps> op_counts_{};
  double extra_slots_ = 0;         // operand-dependent costs (Mul32), mutex slots
  double dma_latency_cycles_ = 0;  // sum of this tasklet's DMA latencies (it waits for each)
};

}  // namespace pimopt::pim
