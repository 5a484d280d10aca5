// The DPU-side kernel API of pimopt's UPMEM emulator.
//
// A kernel is a C++ class whose Main() runs on every tasklet (hardware thread) of every DPU, natively on the host,
// as a fiber. It sees what a UPMEM DPU program sees ([SDK], [SDK-docs] in docs/sources.md): its tasklet id (me()),
// the DPU's 64 KB WRAM (host-visible variables declared in the KernelSpec, a bump heap: MemAlloc/MemReset, its
// stack), the DPU's 64 MB MRAM only through DMA (MramRead/MramWrite: 8..2,048 bytes, a multiple of 8; as on the
// DPU, the low 3 bits of both addresses are ignored, and such DMAs are counted), barriers, mutexes, handshakes and
// semaphores, and a cycle counter. Its work is counted by the operand types of dpu_types.h (pim::u32, pim::i64,
// pim::WramPtr, ...): write the kernel with them and every add, load, compare-and-branch and software multiply is
// charged as the DPU executes it; Charge(Op, count) remains for what they cannot see. Tasklets run in the order of
// the modeled clock (timing.h): each runs until its next DMA or synchronization, so a mutex is found taken, a
// handshake waits and a barrier holds as they would on the DPU. Breaking a hardware rule throws PimError naming
// the kernel, the DPU and the tasklet.
//
// Example (the vector-add kernel of examples/pim_vector_add.cc, abridged):
//
//   class VectorAdd final : public pim::Kernel {
//    public:
//     pim::KernelSpec Spec() const override { return {"vector_add", 16, 0, {{"num_elements", 8}}, {}}; }
//     void Main(pim::Tasklet& t) override {
//       const pim::u64 n = *t.Wram<uint64_t>("num_elements");
//       auto a = t.Alloc<int32_t>(256), b = t.Alloc<int32_t>(256);      // per-tasklet WRAM buffers
//       for (pim::u64 i = t.me() * 256; i < n; i += t.nr_tasklets() * 256) {
//         t.MramRead(t.MramHeap() + 4 * i, a, 1024);
//         t.MramRead(t.MramHeap() + 4 * (n + i), b, 1024);
//         for (pim::u32 j = 0; j < 256; ++j) a[j] += b[j];                 // counted: add, load, load, add, store
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
#include <type_traits>
#include <vector>

#include "pimopt/core/error.h"
#include "pimopt/pim/dpu_types.h"
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
  // The variable's value when the program is loaded (a C initializer); empty: zero. At most `bytes` long.
  std::vector<uint8_t> initial = {};
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
  // Semaphores (SEMAPHORE_INIT(name, count)): the initial count of semaphore i, for every launch.
  std::vector<int32_t> semaphores = {};
};

// The most tasklets of `spec` whose variables, stacks and declared heaps fit the profile's WRAM (at most the
// profile's max_tasklets; 0 if not even one fits).
uint32_t MaxTasklets(const KernelSpec& spec, const HardwareProfile& profile);
// ConfigError naming --tasklets, before any load, when `tasklets` of `spec` do not fit (MaxTasklets): "N tasklets do
// not fit: WHAT fit at most M tasklets in the W bytes of WRAM of profile 'P'" (`what` names the kernel's WRAM need).
void CheckTaskletsFit(const KernelSpec& spec, const HardwareProfile& profile, uint32_t tasklets,
                      const std::string& what);

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
struct TaskletRun;

class Tasklet {
 public:
  uint32_t me() const { return id_; }
  uint32_t nr_tasklets() const { return num_tasklets_; }
  uint32_t dpu_index() const { return dpu_index_; }

  // --- work the operand types cannot see (issue slots come from the profile's table)
  void Charge(Op op, uint64_t count = 1) { Count(op, count); }
  // A 32-bit multiply costed as __mulsi3 for these operands (the same as pim::i32 * pim::i32).
  int32_t Mul32(int32_t a, int32_t b) { return (i32(a) * i32(b)).value(); }

  // --- WRAM
  // A host-visible WRAM variable (looked up by name: do it once per launch, not in a loop).
  template <typename T>
  T* Wram(std::string_view symbol) {
    return static_cast<T*>(WramSymbol(symbol, sizeof(T)));
  }
  template <typename T>
  WramPtr<T> WramVar(std::string_view symbol) {
    return WramPtr<T>(Wram<T>(symbol));
  }
  void* WramSymbol(std::string_view symbol, uint32_t min_bytes = 0);
  void* MemAlloc(uint32_t bytes);  // 8-byte aligned, shared heap of the DPU; throws when WRAM is exhausted
  template <typename T>
  WramPtr<T> Alloc(uint32_t count) {
    return WramPtr<T>(static_cast<T*>(MemAlloc(static_cast<uint32_t>(count * sizeof(T)))));
  }
  void MemReset();
  // WRAM addresses as the DPU has them: 32-bit offsets from WRAM's start (a pointer a kernel keeps in WRAM, as
  // PrIM's HST-S keeps its tasklets' histograms, is one of these, not a host pointer).
  uint32_t WramAddress(const void* p) const;
  template <typename T>
  WramPtr<T> WramAt(uint32_t address) {
    return WramPtr<T>(static_cast<T*>(WramAtAddress(address, sizeof(T))));
  }

  // --- MRAM (DMA). The WRAM side may be any WRAM buffer or a variable on this tasklet's stack.
  uint64_t MramSymbol(std::string_view symbol) const;
  uint64_t MramHeap() const;  // DPU_MRAM_HEAP_POINTER
  void MramRead(uint64_t mram_address, void* wram_destination, uint32_t bytes);
  void MramWrite(const void* wram_source, uint64_t mram_address, uint32_t bytes);
  template <typename A, typename T>
  void MramRead(A mram_address, WramPtr<T> wram_destination, uint32_t bytes) {
    MramRead(Address(mram_address), wram_destination.get(), bytes);
  }
  template <typename A, typename T>
  void MramWrite(WramPtr<T> wram_source, A mram_address, uint32_t bytes) {
    MramWrite(wram_source.get(), Address(mram_address), bytes);
  }
  // A size known only at run time is packed into the DMA's operand first (a shift and an add), as the DPU's 8-bit
  // length field: the DMA moves (((bytes >> 3) - 1) mod 256 + 1) x 8 bytes, so 0 bytes move 2,048 and 2,056 move 8
  // ([uPIMulator] logic.go, ldma / sdma). Such a resized DMA is done as the hardware does it, and counted.
  // A size that is a compile-time constant (a plain integer) must be valid: the SDK rejects others when compiling.
  template <typename A, typename T, typename U>
  void MramRead(A mram_address, WramPtr<T> wram_destination, Int<U> bytes) {
    MramReadRuntimeSize(Address(mram_address), wram_destination.get(), static_cast<uint64_t>(bytes.value()));
  }
  template <typename A, typename T, typename U>
  void MramWrite(WramPtr<T> wram_source, A mram_address, Int<U> bytes) {
    MramWriteRuntimeSize(wram_source.get(), Address(mram_address), static_cast<uint64_t>(bytes.value()));
  }
  // A DMA of a run-time size (the templates above, and a DPU C program's mram_read / mram_write whose size the
  // compiler does not know: dpu/include/mram.h): packed and resized as above, and counted.
  void MramReadRuntimeSize(uint64_t mram_address, void* wram_destination, uint64_t bytes);
  void MramWriteRuntimeSize(const void* wram_source, uint64_t mram_address, uint64_t bytes);
  template <typename A, typename = std::enable_if_t<!std::is_integral_v<A>>>
  void MramRead(A mram_address, void* wram_destination, uint32_t bytes) {
    MramRead(Address(mram_address), wram_destination, bytes);
  }
  template <typename A, typename = std::enable_if_t<!std::is_integral_v<A>>>
  void MramWrite(const void* wram_source, A mram_address, uint32_t bytes) {
    MramWrite(wram_source, Address(mram_address), bytes);
  }

  // --- synchronization ([SDK] barrier.h, mutex.h, handshake.h, sem.h)
  // All `participants` tasklets (0: every tasklet of the DPU) meet at barrier `barrier`.
  void BarrierWait(uint32_t barrier = 0, uint32_t participants = 0);
  void MutexLock(uint32_t mutex);
  void MutexUnlock(uint32_t mutex);
  // handshake_notify: stops until a tasklet waits for this one, then resumes it.
  void HandshakeNotify();
  // handshake_wait_for: waits until `notifier` notifies; 0, or kHandshakeAlready when another tasklet already waits
  // for that notifier (the SDK's EALREADY).
  int HandshakeWaitFor(uint32_t notifier);
  static constexpr int kHandshakeAlready = 114;
  void SemTake(uint32_t semaphore);
  void SemGive(uint32_t semaphore);
  // Lets the other tasklets run (no modeled cost): a loop that waits on WRAM without pim::Volatile needs it.
  void Yield();
  // perfcounter_get with COUNT_CYCLES: the DPU's cycles since the launch began, at this instruction.
  uint64_t Cycles();

  // Throws PimError with this kernel/DPU/tasklet as context.
  [[noreturn]] void Fail(const std::string& what) const;

 private:
  uint32_t RuntimeDmaBytes(uint64_t bytes);  // the length field's size (above), counting a changed one
  friend class Dpu;
  template <typename A>
  static uint64_t Address(A a) {
    if constexpr (std::is_integral_v<A>) {
      return static_cast<uint64_t>(a);
    } else {
      return static_cast<uint64_t>(a.value());
    }
  }
  void* WramAtAddress(uint32_t address, uint32_t bytes);
  Dpu* dpu_ = nullptr;
  uint32_t id_ = 0;
  uint32_t num_tasklets_ = 0;
  uint32_t dpu_index_ = 0;
};

}  // namespace pimopt::pim
