#include "dpu.h"

#include <algorithm>
#include <bit>
#include <cstring>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
// AddressSanitizer must be told when execution moves to another stack (fiber switches).
#define PIMOPT_START_SWITCH(save, bottom, size) __sanitizer_start_switch_fiber(save, bottom, size)
#define PIMOPT_FINISH_SWITCH(save, bottom, size) __sanitizer_finish_switch_fiber(save, bottom, size)
#else
#define PIMOPT_START_SWITCH(save, bottom, size) ((void)(save), (void)(bottom), (void)(size))
#define PIMOPT_FINISH_SWITCH(save, bottom, size) ((void)(save), (void)(bottom), (void)(size))
#endif

#if defined(__SANITIZE_THREAD__)
#define PIMOPT_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define PIMOPT_TSAN 1
#endif
#endif
#if defined(PIMOPT_TSAN)
#include <sanitizer/tsan_interface.h>
// ThreadSanitizer must be told which fiber runs: each tasklet is a fiber of its own, and every switch between a
// tasklet and the scheduler synchronizes (they run one after the other on one host thread). A switch is announced
// just before the jump, so that each call's entry and exit land on the same fiber's shadow stack; only the end of a
// fiber (when its host thread ends) is announced after the jump, because the frames that end a fiber never return.
#define PIMOPT_TSAN_CURRENT() __tsan_get_current_fiber()
#define PIMOPT_TSAN_CREATE() __tsan_create_fiber(0)
#define PIMOPT_TSAN_DESTROY(fiber) __tsan_destroy_fiber(fiber)
#define PIMOPT_TSAN_SWITCH(fiber) __tsan_switch_to_fiber(fiber, 0)
#else
#define PIMOPT_TSAN_CURRENT() nullptr
#define PIMOPT_TSAN_CREATE() nullptr
#define PIMOPT_TSAN_DESTROY(fiber) ((void)(fiber))
#define PIMOPT_TSAN_SWITCH(fiber) ((void)(fiber))
#endif

namespace pimopt::pim {
namespace ctx = boost::context;

// ---------------------------------------------------------------- lazily backed memory
void LazyMemory::Read(uint64_t address, void* destination, uint64_t bytes) const {
  auto* out = static_cast<uint8_t*>(destination);
  while (bytes > 0) {
    const uint64_t page = address / kPageBytes, in_page = address % kPageBytes;
    const uint64_t n = std::min(bytes, kPageBytes - in_page);
    if (page < pages_.size() && pages_[page]) {
      const uint8_t* src = pages_[page].get() + in_page;
      // A DPU's tasklets mostly stream through MRAM: fetch the following block (which the next tasklet usually
      // reads) while this one is copied. Measured: 3.9x -> 2.8x of the native loop in bench/pim_speed.cc.
      for (uint64_t ahead = n; ahead < 2 * n && in_page + ahead < kPageBytes; ahead += 64)
        __builtin_prefetch(src + ahead);
      std::memcpy(out, src, n);
    } else {
      std::memset(out, 0, n);
    }
    out += n;
    address += n;
    bytes -= n;
  }
}

void LazyMemory::Write(uint64_t address, const void* source, uint64_t bytes) {
  const auto* in = static_cast<const uint8_t*>(source);
  if (pages_.empty()) pages_.resize((size_ + kPageBytes - 1) / kPageBytes);
  while (bytes > 0) {
    const uint64_t page = address / kPageBytes, in_page = address % kPageBytes;
    const uint64_t n = std::min(bytes, kPageBytes - in_page);
    if (!pages_[page]) {
      // A page never written reads as zeros: writing zeros to it leaves it unbacked (a host program that pushes
      // calloc'd buffers, PIM-Opt's, would otherwise back every page it pushes).
      bool zeros = true;
      for (uint64_t k = 0; k < n && zeros; ++k) zeros = in[k] == 0;
      if (zeros) {
        in += n;
        address += n;
        bytes -= n;
        continue;
      }
      pages_[page].reset(new uint8_t[kPageBytes]());
      ++backed_pages_;
    }
    std::memcpy(pages_[page].get() + in_page, in, n);
    in += n;
    address += n;
    bytes -= n;
  }
}

// ---------------------------------------------------------------- tasklet fibers
namespace {

// Thrown inside a suspended tasklet to unwind it when its DPU's launch is abandoned (another tasklet failed).
struct TaskletAbort {};

}  // namespace

// A fiber that runs one tasklet per launch and waits, suspended, for the next launch on its host thread. Fibers are
// kept per host thread (IdleTaskletFibers) instead of made per launch: 16 tasklets x 2,048 DPUs per launch must not
// allocate stacks, and a fiber that ends leaves frames that never return, which ThreadSanitizer's shadow stack of
// the fiber would keep (its stack depot grew past 8 GB on a 100-epoch test).
class TaskletFiber {
 public:
  static constexpr size_t kStackBytes = 256u << 10;

  TaskletFiber() : tsan_fiber_(PIMOPT_TSAN_CREATE()) {
    fiber_ = ctx::fiber(std::allocator_arg, Stack{&stack_base_, NextStackColourBytes()},
                        [this](ctx::fiber&& scheduler) { return Loop(std::move(scheduler)); });
  }
  ~TaskletFiber() {
    if (fiber_ && !busy_) {  // waiting for a job: let the loop return, so the fiber ends on its own
      TaskletRun quit;
      quit.tsan_scheduler = PIMOPT_TSAN_CURRENT();
      quit_ = true;
      Enter(quit);
      PIMOPT_TSAN_SWITCH(quit.tsan_scheduler);  // after the jump: the frames that end a fiber never return
    }
    // A fiber still inside a job (a kernel that ignored its abort) is unwound by Boost.Context's destructor.
    fiber_ = ctx::fiber();
    PIMOPT_TSAN_DESTROY(tsan_fiber_);
  }
  TaskletFiber(const TaskletFiber&) = delete;
  TaskletFiber& operator=(const TaskletFiber&) = delete;

  // Runs `run` on this fiber from the scheduler (whose ThreadSanitizer fiber `run` holds), until the tasklet
  // suspends or ends.
  void Enter(TaskletRun& run) {
    run_ = &run;
    [[maybe_unused]] void* fake_stack = nullptr;
    PIMOPT_START_SWITCH(&fake_stack, stack_base_, kStackBytes);
    PIMOPT_TSAN_SWITCH(tsan_fiber_);
    fiber_ = std::move(fiber_).resume();
    PIMOPT_FINISH_SWITCH(fake_stack, nullptr, nullptr);
  }
  bool busy() const { return busy_; }
  // Whether [p, p + bytes) lies on this fiber's stack (a DMA may target a tasklet's stack variables).
  bool OnStack(const void* p, size_t bytes) const {
    const auto* b = static_cast<const uint8_t*>(stack_base_);
    const auto* q = static_cast<const uint8_t*>(p);
    return b != nullptr && q >= b && q + bytes <= b + kStackBytes;
  }

 private:
  // Boost.Context stack allocator: memory below 2 GiB where the host allows it (LowAddressAllocator: a pointer to a
  // tasklet's local kept in 32 bits comes back whole, as WRAM's do; the fibers live as long as their host thread).
  // The top of each stack is offset by a different multiple of a cache line (its colour): with equal 256 KB stacks,
  // the 16 tasklets' active frames would sit at the same offset modulo 4 KB and compete for the same L1 sets.
  struct Stack {
    void** base_out;
    size_t colour_bytes;
    ctx::stack_context allocate() {
      void* base = LowAddressAllocator<uint8_t>().allocate(kStackBytes);
      *base_out = base;
      ctx::stack_context sc;
      sc.size = kStackBytes - colour_bytes;
      sc.sp = static_cast<char*>(base) + sc.size;
      return sc;
    }
    void deallocate(ctx::stack_context& sc) noexcept {
      void* base = static_cast<char*>(sc.sp) - sc.size;
#if defined(__SANITIZE_ADDRESS__)
      __asan_unpoison_memory_region(base, kStackBytes);  // the redzones of the frames that ran on it
#endif
      LowAddressAllocator<uint8_t>().deallocate(static_cast<uint8_t*>(base), kStackBytes);
    }
  };

  static size_t NextStackColourBytes() {
    thread_local size_t fibers_made = 0;
    return (fibers_made++ % 32) * 192;  // 32 colours spread over 6 KB (more than a 4 KB L1 way)
  }

  ctx::fiber Loop(ctx::fiber&& scheduler) {
    PIMOPT_FINISH_SWITCH(nullptr, &run_->scheduler_bottom, &run_->scheduler_size);
    while (!quit_) {
      TaskletRun& run = *run_;
      run.scheduler = std::move(scheduler);
      busy_ = true;
      run.dpu->RunTasklet(run);
      busy_ = false;
      // Back to the scheduler; resumed by the next launch's Enter.
      [[maybe_unused]] void* fake_stack = nullptr;
      PIMOPT_START_SWITCH(&fake_stack, run.scheduler_bottom, run.scheduler_size);
      PIMOPT_TSAN_SWITCH(run.tsan_scheduler);
      scheduler = std::move(run.scheduler).resume();
      PIMOPT_FINISH_SWITCH(fake_stack, &run_->scheduler_bottom, &run_->scheduler_size);
    }
    PIMOPT_START_SWITCH(nullptr, run_->scheduler_bottom, run_->scheduler_size);  // this fiber ends
    return std::move(scheduler);
  }

  ctx::fiber fiber_;
  void* stack_base_ = nullptr;
  void* tsan_fiber_;
  TaskletRun* run_ = nullptr;
  bool busy_ = false;
  bool quit_ = false;
};

namespace {

// The idle tasklet fibers of this host thread.
std::vector<std::unique_ptr<TaskletFiber>>& IdleTaskletFibers() {
  thread_local std::vector<std::unique_ptr<TaskletFiber>> idle;
  return idle;
}

uint64_t AlignUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

}  // namespace

__thread OpCounts tls_op_counts;

namespace {
// The tasklet running on this host thread (for the operand types' faults and spin-wait yields).
thread_local Tasklet* tls_current_tasklet = nullptr;
}  // namespace

namespace detail {
void DpuFault(const char* what) {
  if (tls_current_tasklet != nullptr) tls_current_tasklet->Fail(what);
  throw PimError(StrCat("DPU fault outside a launch: ", what));
}
void VolatileYield() {
  if (tls_current_tasklet == nullptr) {  // host code outside a launch
    tls_op_counts.volatile_reads = tls_op_counts.volatile_writes = 0;
    return;
  }
  tls_current_tasklet->Yield();  // a spin when the tasklet only read shared WRAM since its last event
}
}  // namespace detail

// ---------------------------------------------------------------- Tasklet
void* Tasklet::WramSymbol(std::string_view symbol, uint32_t min_bytes) {
  return dpu_->WramSymbol(*this, symbol, min_bytes);
}
void* Tasklet::MemAlloc(uint32_t bytes) { return dpu_->MemAlloc(*this, bytes); }
void Tasklet::MemReset() { dpu_->MemReset(); }
uint32_t Tasklet::WramAddress(const void* p) const { return dpu_->WramAddress(*this, p); }
void* Tasklet::WramAtAddress(uint32_t address, uint32_t bytes) { return dpu_->WramAtAddress(*this, address, bytes); }
uint64_t Tasklet::MramSymbol(std::string_view symbol) const { return dpu_->MramSymbol(*this, symbol); }
uint64_t Tasklet::MramHeap() const { return dpu_->mram_heap(); }
void Tasklet::MramRead(uint64_t mram_address, void* wram_destination, uint32_t bytes) {
  dpu_->Dma(*this, true, mram_address, wram_destination, bytes);
}
uint32_t Tasklet::RuntimeDmaBytes(uint64_t bytes) { return dpu_->RuntimeDmaBytes(bytes); }
void Tasklet::MramReadRuntimeSize(uint64_t mram_address, void* wram_destination, uint64_t bytes) {
  Count(Op::kInt32Shift);
  Count(Op::kInt32Add);
  MramRead(mram_address, wram_destination, RuntimeDmaBytes(bytes));
}
void Tasklet::MramWriteRuntimeSize(const void* wram_source, uint64_t mram_address, uint64_t bytes) {
  Count(Op::kInt32Shift);
  Count(Op::kInt32Add);
  MramWrite(wram_source, mram_address, RuntimeDmaBytes(bytes));
}
void Tasklet::MramWrite(const void* wram_source, uint64_t mram_address, uint32_t bytes) {
  dpu_->Dma(*this, false, mram_address, const_cast<void*>(wram_source), bytes);
}
void Tasklet::BarrierWait(uint32_t barrier, uint32_t participants) {
  if (participants > num_tasklets_) {
    Fail(StrCat("barrier ", barrier, " for ", participants, " tasklets: the DPU runs ", num_tasklets_));
  }
  dpu_->Event(*this, {timing::EventKind::kBarrier, barrier, participants});
}
void Tasklet::MutexLock(uint32_t mutex) {
  dpu_->Event(*this, {timing::EventKind::kMutexLock, mutex, 0});
  dpu_->MutexHolder(mutex) = static_cast<uint8_t>(id_ + 1);  // the clock has given it to this tasklet
}
void Tasklet::MutexUnlock(uint32_t mutex) {
  const uint8_t holder = dpu_->MutexHolder(mutex);
  if (holder != id_ + 1) {
    Fail(holder == 0 ? std::string("mutex_unlock of a mutex no tasklet holds")
                     : StrCat("mutex_unlock of a mutex tasklet ", holder - 1, " holds"));
  }
  dpu_->MutexHolder(mutex) = 0;
  dpu_->Event(*this, {timing::EventKind::kMutexUnlock, mutex, 0});
}
void Tasklet::HandshakeNotify() { dpu_->Event(*this, {timing::EventKind::kHandshakeNotify, 0, 0}); }
int Tasklet::HandshakeWaitFor(uint32_t notifier) {
  if (notifier >= num_tasklets_) Fail(StrCat("handshake_wait_for(", notifier, "): there is no tasklet ", notifier));
  if (notifier == id_) Fail(StrCat("handshake_wait_for(", notifier, "): a tasklet cannot wait for itself"));
  return static_cast<int>(dpu_->Event(*this, {timing::EventKind::kHandshakeWait, notifier, 0}));
}
void Tasklet::SemTake(uint32_t semaphore) { dpu_->Event(*this, {timing::EventKind::kSemTake, semaphore, 0}); }
void Tasklet::SemGive(uint32_t semaphore) { dpu_->Event(*this, {timing::EventKind::kSemGive, semaphore, 0}); }
void Tasklet::Yield() {
  const bool spin = tls_op_counts.volatile_reads > 0 && tls_op_counts.volatile_writes == 0;
  dpu_->Event(*this, {spin ? timing::EventKind::kSpinYield : timing::EventKind::kYield, 0, 0});
}
uint64_t Tasklet::Cycles() { return dpu_->Event(*this, {timing::EventKind::kReadClock, 0, 0}); }
void Tasklet::Fail(const std::string& what) const { dpu_->Fail(this, what); }

// ---------------------------------------------------------------- Dpu
bool SymbolTable::Add(std::string_view name, Placement placement) {
  if (Find(name)) return false;
  entries_.push_back({std::string(name), placement});
  return true;
}

namespace {
std::array<double, kCountedOps> PaddedOpSlots(const HardwareProfile& p) {
  std::array<double, kCountedOps> slots{};
  std::copy(p.op_slots.begin(), p.op_slots.end(), slots.begin());
  return slots;
}
}  // namespace

Dpu::Dpu(const HardwareProfile& profile, uint32_t index)
    : profile_(profile),
      clock_params_(timing::FromProfile(profile)),
      op_slots_(PaddedOpSlots(profile)),
      index_(index),
      mram_(profile.mram_bytes),
      wram_(profile.wram_bytes, 0) {}

void Dpu::Fail(const Tasklet* t, const std::string& what) const {
  if (t) throw PimError(StrCat("kernel '", kernel_name_, "', DPU ", index_, ", tasklet ", t->me(), ": ", what));
  throw PimError(StrCat("kernel '", kernel_name_, "', DPU ", index_, ": ", what));
}

uint32_t MaxTasklets(const KernelSpec& spec, const HardwareProfile& profile) {
  uint64_t variables = 0;
  for (const SymbolSpec& s : spec.wram_symbols) variables = AlignUp(variables + s.bytes, 8);
  const uint64_t stack = spec.stack_bytes ? spec.stack_bytes : profile.default_stack_bytes;
  const uint64_t per_tasklet = stack + AlignUp(spec.heap_bytes_per_tasklet, 8);
  if (variables >= profile.wram_bytes) return 0;
  const uint64_t fit = per_tasklet == 0 ? profile.max_tasklets : (profile.wram_bytes - variables) / per_tasklet;
  return static_cast<uint32_t>(std::min<uint64_t>(fit, profile.max_tasklets));
}

void CheckTaskletsFit(const KernelSpec& spec, const HardwareProfile& profile, uint32_t tasklets,
                      const std::string& what) {
  const uint32_t fit = MaxTasklets(spec, profile);
  if (tasklets <= fit) return;
  throw ConfigError("--tasklets", StrCat(tasklets, " tasklets do not fit: ", what, " fit at most ", fit,
                                         " tasklets in the ", profile.wram_bytes, " bytes of WRAM of profile '",
                                         profile.name, "'"));
}

void Dpu::Load(const KernelSpec& spec, uint32_t tasklets) {
  kernel_name_ = spec.name;
  if (tasklets == 0 || tasklets > profile_.max_tasklets) {
    Fail(nullptr, StrCat(tasklets, " tasklets requested; this DPU runs 1 to ", profile_.max_tasklets));
  }
  if (spec.semaphores.size() > timing::kMaxSyncObjects) {
    Fail(nullptr, StrCat(spec.semaphores.size(), " semaphores declared; a DPU has room for ", timing::kMaxSyncObjects));
  }
  tasklets_ = tasklets;
  semaphores_ = spec.semaphores;
  std::fill(wram_.begin(), wram_.end(), 0);
  wram_symbols_.Clear();
  mram_symbols_.Clear();
  uint64_t top = 0;
  for (const SymbolSpec& s : spec.wram_symbols) {
    if (!wram_symbols_.Add(s.name, {top, s.bytes})) {
      Fail(nullptr, StrCat("WRAM symbol '", s.name, "' declared twice"));
    }
    if (s.initial.size() > s.bytes) Fail(nullptr, StrCat("WRAM symbol '", s.name, "': initial value too long"));
    if (!s.initial.empty() && top + s.initial.size() <= wram_.size()) {
      std::copy(s.initial.begin(), s.initial.end(), wram_.begin() + static_cast<std::ptrdiff_t>(top));
    }
    if (s.name == kClocksPerSecSymbol && s.bytes == 4 && top + 4 <= wram_.size()) {
      // The SDK runtime's variable (perfcounter.h) that the host reads to turn cycles into seconds: the loader
      // writes the DPU's frequency.
      const auto hz = static_cast<uint32_t>(std::llround(profile_.dpu_frequency_hz));
      std::memcpy(wram_.data() + top, &hz, 4);
    }
    top = AlignUp(top + s.bytes, 8);
  }
  const uint64_t stack = spec.stack_bytes ? spec.stack_bytes : profile_.default_stack_bytes;
  heap_start_ = heap_top_ = top;
  heap_declared_ = uint64_t{tasklets} * AlignUp(spec.heap_bytes_per_tasklet, 8);
  const uint64_t stacks = stack * tasklets;
  if (top + stacks + heap_declared_ > wram_.size()) {
    Fail(nullptr, StrCat("WRAM exhausted at load: ", top, " bytes of variables + ", tasklets, " tasklets x (", stack,
                         " bytes of stack + ", AlignUp(spec.heap_bytes_per_tasklet, 8), " bytes of heap) > ",
                         wram_.size(), " bytes of WRAM: at most ", MaxTasklets(spec, profile_), " tasklets fit"));
  }
  heap_end_ = wram_.size() - stacks;
  uint64_t mtop = 0;
  for (const SymbolSpec& s : spec.mram_symbols) {
    if (!mram_symbols_.Add(s.name, {mtop, s.bytes})) {
      Fail(nullptr, StrCat("MRAM symbol '", s.name, "' declared twice"));
    }
    if (s.initial.size() > s.bytes) Fail(nullptr, StrCat("MRAM symbol '", s.name, "': initial value too long"));
    mtop = AlignUp(mtop + s.bytes, 8);
  }
  if (mtop > mram_.size()) Fail(nullptr, StrCat("MRAM variables need ", mtop, " bytes > ", mram_.size()));
  for (const SymbolSpec& s : spec.mram_symbols) {
    if (!s.initial.empty()) mram_.Write(mram_symbols_.Find(s.name)->offset, s.initial.data(), s.initial.size());
  }
  mram_heap_start_ = mtop;
}

void Dpu::CheckHostAccess(std::string_view symbol, uint64_t offset, uint64_t bytes, const char* verb) const {
  if (symbol == kMramHeapSymbol) {
    if (offset % 8 || bytes % 8)
      Fail(nullptr, StrCat(verb, " to the MRAM heap: offset and length must be multiples of 8"));
    if (mram_heap_start_ + offset + bytes > mram_.size()) {
      Fail(nullptr, StrCat(verb, " of ", bytes, " bytes at MRAM heap offset ", offset, " exceeds the ",
                           mram_.size() - mram_heap_start_, " bytes of MRAM heap"));
    }
    return;
  }
  const Placement* w = wram_symbols_.Find(symbol);
  const Placement* m = mram_symbols_.Find(symbol);
  if (w == nullptr && m == nullptr) Fail(nullptr, StrCat(verb, ": unknown symbol '", symbol, "'"));
  const bool is_mram = m != nullptr;
  const Placement& p = is_mram ? *m : *w;
  const uint64_t align = is_mram ? 8 : 4;  // UPMEM host transfers: MRAM multiple of 8, WRAM of 4 [SDK-docs]
  if (offset % align || bytes % align) {
    Fail(nullptr, StrCat(verb, " of symbol '", symbol, "': offset ", offset, " and length ", bytes,
                         " must be multiples of ", align));
  }
  if (offset + bytes > p.bytes) {
    Fail(nullptr, StrCat(verb, " of ", bytes, " bytes at offset ", offset, " overruns symbol '", symbol, "' (", p.bytes,
                         " bytes)"));
  }
}

void Dpu::HostWrite(std::string_view symbol, uint64_t offset, const void* source, uint64_t bytes) {
  CheckHostAccess(symbol, offset, bytes, "host write");
  if (symbol == kMramHeapSymbol) {
    mram_.Write(mram_heap_start_ + offset, source, bytes);
  } else if (const Placement* w = wram_symbols_.Find(symbol)) {
    std::memcpy(wram_.data() + w->offset + offset, source, bytes);
  } else {
    mram_.Write(mram_symbols_.Find(symbol)->offset + offset, source, bytes);
  }
}

void Dpu::HostRead(std::string_view symbol, uint64_t offset, void* destination, uint64_t bytes) {
  CheckHostAccess(symbol, offset, bytes, "host read");
  if (symbol == kMramHeapSymbol) {
    mram_.Read(mram_heap_start_ + offset, destination, bytes);
  } else if (const Placement* w = wram_symbols_.Find(symbol)) {
    std::memcpy(destination, wram_.data() + w->offset + offset, bytes);
  } else {
    mram_.Read(mram_symbols_.Find(symbol)->offset + offset, destination, bytes);
  }
}

void* Dpu::WramSymbol(const Tasklet& t, std::string_view symbol, uint32_t min_bytes) {
  const Placement* p = wram_symbols_.Find(symbol);
  if (p == nullptr) Fail(&t, StrCat("unknown WRAM symbol '", symbol, "'"));
  if (p->bytes < min_bytes) {
    Fail(&t, StrCat("WRAM symbol '", symbol, "' holds ", p->bytes, " bytes, ", min_bytes, " requested"));
  }
  return wram_.data() + p->offset;
}

void* Dpu::MemAlloc(const Tasklet& t, uint32_t bytes) {
  const uint64_t start = AlignUp(heap_top_, 8);
  if (heap_declared_ > 0 && start + bytes - heap_start_ > heap_declared_) {
    Fail(&t, StrCat("mem_alloc(", bytes, ") takes the heap to ", start + bytes - heap_start_, " bytes, beyond the ",
                    heap_declared_, " its kernel declares (", tasklets_,
                    " tasklets x KernelSpec::heap_bytes_per_tasklet)"));
  }
  if (start + bytes > heap_end_) {
    Fail(&t, StrCat("WRAM exhausted: mem_alloc(", bytes, ") with ", heap_end_ - std::min(start, heap_end_),
                    " bytes left of the ", heap_end_ - heap_start_, "-byte heap"));
  }
  heap_top_ = start + bytes;
  return wram_.data() + start;
}

uint32_t Dpu::WramAddress(const Tasklet& t, const void* p) const {
  const auto* q = static_cast<const uint8_t*>(p);
  if (q < wram_.data() || q >= wram_.data() + wram_.size()) {
    Fail(&t,
         "WramAddress: the pointer is not inside this DPU's WRAM (a stack variable has no address the other "
         "tasklets could use in the emulator)");
  }
  return static_cast<uint32_t>(q - wram_.data());
}

void* Dpu::WramAtAddress(const Tasklet& t, uint32_t address, uint32_t bytes) {
  if (uint64_t{address} + bytes > wram_.size()) {
    Fail(&t, StrCat("WRAM address 0x", std::hex, address, std::dec, " (+", bytes, " bytes) is beyond the ",
                    wram_.size(), " bytes of WRAM"));
  }
  return wram_.data() + address;
}

uint64_t Dpu::MramSymbol(const Tasklet& t, std::string_view symbol) const {
  const Placement* p = mram_symbols_.Find(symbol);
  if (p == nullptr) Fail(&t, StrCat("unknown MRAM symbol '", symbol, "'"));
  return p->offset;
}

uint32_t Dpu::RuntimeDmaBytes(uint64_t bytes) {
  // The length field holds (bytes / 8 - 1) in as many bits as the largest DMA needs ([uPIMulator] logic.go).
  const uint64_t units = std::max<uint64_t>(1, profile_.dma_max_bytes / 8);
  const uint64_t encoded = (((bytes >> 3) + units - 1) % units + 1) * 8;
  if (encoded != bytes) ++result_->resized_dmas;
  return static_cast<uint32_t>(encoded);
}

void Dpu::Dma(Tasklet& t, bool read, uint64_t mram_address, void* wram, uint32_t bytes) {
  const char* verb = read ? "mram_read" : "mram_write";
  if (bytes < profile_.dma_min_bytes || bytes > profile_.dma_max_bytes || bytes % 8) {
    Fail(&t, StrCat(verb, " of ", bytes, " bytes: the size must be a multiple of 8 in [", profile_.dma_min_bytes, ", ",
                    profile_.dma_max_bytes, "]"));
  }
  // The DPU ignores the low 3 bits of both addresses ([SDK-docs] mram_read: "addresses must be aligned on 8 bytes";
  // the DMA engine drops the low bits): so does the emulator, and it counts such DMAs.
  auto* w = static_cast<uint8_t*>(wram);
  const bool in_wram = w >= wram_.data() && w + bytes <= wram_.data() + wram_.size();
  bool unaligned = false;
  if (in_wram) {
    const uint64_t offset = static_cast<uint64_t>(w - wram_.data());
    if (offset % 8) {
      unaligned = true;
      w -= offset % 8;
    }
  } else {
    TaskletRun& run = (*runs_)[t.me()];
    const uint64_t misalign = reinterpret_cast<uintptr_t>(w) % 8;
    if (!run.fiber->OnStack(w - misalign, bytes)) {
      Fail(&t, StrCat(verb,
                      ": the WRAM buffer is neither inside this DPU's WRAM nor on the tasklet's stack (use "
                      "MemAlloc, a WRAM symbol or a local variable)"));
    }
    if (misalign) {
      unaligned = true;
      w -= misalign;
    }
  }
  if (mram_address % 8) {
    unaligned = true;
    mram_address &= ~uint64_t{7};
  }
  if (mram_address + bytes > mram_.size()) {
    Fail(&t, StrCat(verb, " of ", bytes, " bytes at MRAM address ", mram_address, " is out of range (MRAM holds ",
                    mram_.size(), " bytes)"));
  }
  if (read) {
    mram_.Read(mram_address, w, bytes);
    result_->mram_read_bytes += bytes;
  } else {
    mram_.Write(mram_address, w, bytes);
    result_->mram_write_bytes += bytes;
  }
  if (unaligned) ++result_->unaligned_dmas;
  Event(t, {read ? timing::EventKind::kDmaRead : timing::EventKind::kDmaWrite, bytes, 0});
}

double Dpu::Harvest() {
  // sum over ops of count x slots, in eight fixed lanes (a vector register): the same order at every event, on
  // every host, under either scheduler. Local copies: the compiler then knows that nothing aliases.
  alignas(64) uint64_t n[kCountedOps];
  std::memcpy(n, tls_op_counts.n, sizeof n);
  std::memset(tls_op_counts.n, 0, sizeof n);
  tls_op_counts.volatile_reads = tls_op_counts.volatile_writes = 0;
  alignas(64) double lanes[8] = {};
  for (size_t i = 0; i < kCountedOps; i += 8) {
    for (size_t l = 0; l < 8; ++l) lanes[l] += static_cast<double>(n[i + l]) * op_slots_[i + l];
  }
  uint64_t* counts = result_->op_counts.data();
  for (size_t i = 0; i < kCountedOps; ++i) counts[i] += n[i];
  const double slots = ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) + ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
  result_->issue_slots += slots;
  return slots;
}

void Dpu::Queue(TaskletRun& run, const timing::Event& event) {
  run.queue[run.size++] = {Harvest(), event};
}

uint64_t Dpu::Event(Tasklet& t, const timing::Event& event) {
  TaskletRun& run = (*runs_)[t.me()];
  Queue(run, event);
  if (run_ahead_ && run.size < TaskletRun::kRunAhead && !timing::EventBlocks(event.kind)) return 0;
  Yield(t);
  return logged_result_ ? logged_result_[t.me()] : clock_->Result(t.me());
}

void Dpu::Yield(Tasklet& t) {
  TaskletRun& run = (*runs_)[t.me()];
  tls_current_tasklet = nullptr;
  [[maybe_unused]] void* fake_stack = nullptr;
  PIMOPT_START_SWITCH(&fake_stack, run.scheduler_bottom, run.scheduler_size);
  PIMOPT_TSAN_SWITCH(run.tsan_scheduler);
  run.scheduler = std::move(run.scheduler).resume();
  PIMOPT_FINISH_SWITCH(fake_stack, &run.scheduler_bottom, &run.scheduler_size);
  if (aborting_) throw TaskletAbort{};
  tls_current_tasklet = &t;
}

void Dpu::RunTasklet(TaskletRun& run) {
  try {
    if (!aborting_) {  // a tasklet first resumed by AbortSuspended never starts
      tls_current_tasklet = run.tasklet;
      run.kernel->Main(*run.tasklet);
      Queue(run, {timing::EventKind::kExit, 0, 0});
    }
  } catch (const TaskletAbort&) {
    // the launch was abandoned: just end
  } catch (const ctx::detail::forced_unwind&) {
    throw;
  } catch (...) {
    run.error = std::current_exception();
  }
  tls_current_tasklet = nullptr;
  run.done = true;
}

void Dpu::AbortSuspended(std::vector<TaskletRun>& runs) {
  aborting_ = true;
  for (TaskletRun& r : runs) {
    // A kernel that swallows TaskletAbort may suspend again: keep resuming (bounded) until it ends.
    for (int attempt = 0; attempt < 1000 && !r.done && r.fiber->busy(); ++attempt) r.fiber->Enter(r);
  }
  aborting_ = false;
}

void Dpu::AbortLaunch(std::vector<TaskletRun>& runs, const std::string& what) {
  AbortSuspended(runs);
  runs_ = nullptr;
  clock_ = nullptr;
  Fail(nullptr, what);
}

uint32_t Dpu::FollowTree(const LaunchTree& tree, std::vector<TaskletRun>& runs, bool record,
                         std::vector<uint32_t>& path) {
  std::vector<uint64_t> results(tasklets_, 0);
  logged_result_ = nullptr;
  path.clear();
  const std::vector<LaunchTree::Node>& nodes = tree.nodes;
  uint32_t at = 0;
  for (;;) {
    const uint32_t first = nodes[at].first_child;
    if (first == 0) break;
    const uint32_t k = nodes[first].step.tasklet;  // the same for every child: the clock's state is the path's
    TaskletRun& r = runs[k];
    if (r.next == r.size) {
      if (r.done) break;  // failed, or ended early: the clock takes over and reports it
      r.next = r.size = 0;
      results[k] = nodes[first].step.resume_result;
      logged_result_ = results.data();
      r.fiber->Enter(r);
      logged_result_ = nullptr;
      if (r.next == r.size) break;
    }
    const TaskletRun::QueuedEvent& e = r.queue[r.next];
    uint32_t child = first;
    for (; child != 0; child = nodes[child].next_sibling) {
      const LaunchTree::Step& step = nodes[child].step;
      if (e.slots == step.slots && e.event.kind == step.event.kind && e.event.a == step.event.a &&
          e.event.b == step.event.b) {
        break;
      }
    }
    if (child == 0) break;
    ++r.next;
    if (record) result_->trace.tasklets[k].push_back({e.slots, e.event});
    path.push_back(child);
    at = child;
  }
  return at;
}

namespace {
// 48 bytes a node: about 50 MB of tree per host thread at most (a single DPU's endless loop, or events that differ
// at every launch, stop adding to it there; what it holds is still followed).
constexpr size_t kMaxTreeNodes = size_t{1} << 20;
// A node with this many children (an event whose slots vary with the data at every launch) takes no more.
constexpr uint16_t kMaxChildren = 64;
}  // namespace

DpuLaunchResult Dpu::Launch(Kernel& kernel, const LaunchOptions& options) {
  const bool record = options.record;
  mutex_holders_.fill(0);  // a boot: every mutex free
  // The tasklets' records are kept per host thread and reused by the DPUs it runs.
  thread_local std::vector<Tasklet> tasklets;
  thread_local std::vector<TaskletRun> runs;
  tasklets.assign(tasklets_, Tasklet{});
  runs.resize(tasklets_);
  // This host thread's idle fibers run the tasklets and go back to it afterwards (all but one still inside a job:
  // a kernel that ignored its abort).
  struct BorrowedFibers {
    std::vector<std::unique_ptr<TaskletFiber>> fibers;
    explicit BorrowedFibers(uint32_t count) {
      auto& idle = IdleTaskletFibers();
      while (fibers.size() < count && !idle.empty()) {
        fibers.push_back(std::move(idle.back()));
        idle.pop_back();
      }
      while (fibers.size() < count) fibers.push_back(std::make_unique<TaskletFiber>());
    }
    ~BorrowedFibers() {
      auto& idle = IdleTaskletFibers();
      for (auto& f : fibers) {
        if (!f->busy()) idle.push_back(std::move(f));
      }
    }
  } borrowed(tasklets_);
  DpuLaunchResult result;
  // One clock per host thread, reused by the DPUs it runs (its buffers stay allocated and in cache).
  thread_local timing::DpuClock clock(clock_params_, tasklets_, options.shuffle_seed);
  runs_ = &runs;
  clock_ = &clock;
  result_ = &result;
  run_ahead_ = options.scheduler == Scheduler::kBatched;
  if (record) {
    result.trace.tasklets.resize(tasklets_);
    result.trace.semaphores = semaphores_;
  }
  for (uint32_t k = 0; k < tasklets_; ++k) {
    Tasklet& t = tasklets[k];
    t.dpu_ = this;
    t.id_ = k;
    t.num_tasklets_ = tasklets_;
    t.dpu_index_ = index_;
    TaskletRun& r = runs[k];
    r.dpu = this;
    r.kernel = &kernel;
    r.tasklet = &t;
    r.fiber = borrowed.fibers[k].get();
    r.done = false;
    r.error = nullptr;
    r.next = r.size = 0;
    r.tsan_scheduler = PIMOPT_TSAN_CURRENT();
  }
  // Counts of code that ran on this host thread outside a tasklet (host references) are not the kernel's.
  tls_op_counts = OpCounts{};
  auto abandon = [&] {
    AbortSuspended(runs);
    runs_ = nullptr;
    clock_ = nullptr;
  };
  auto clock_step = [&](auto&& step) {
    try {
      return step();
    } catch (const timing::TaskletError& e) {  // a misuse the clock found (a mutex unlocked by another tasklet)
      abandon();
      Fail(&tasklets[e.tasklet()], e.what());
    }
  };
  auto finish = [&] {
    runs_ = nullptr;
    clock_ = nullptr;
    result_ = nullptr;
  };

  // The DPUs of this launch this host thread ran before: as long as this one's tasklets do the events of a path of
  // their tree, its clock's work is theirs.
  thread_local LaunchTree tree;
  thread_local std::vector<uint32_t> path;
  bool shared_clock = options.scheduler == Scheduler::kBatched && options.launch_id != 0 && options.share_clock;
  uint32_t at = 0;  // the tree's node this launch's events lead to so far
  if (shared_clock && (tree.launch_id != options.launch_id || tree.semaphores_before != semaphores_)) {
    tree.Reset(options.launch_id, semaphores_);
  }
  if (shared_clock) {
    at = FollowTree(tree, runs, record, path);
    result.events = result.events_shared = path.size();
    tree.events_shared += path.size();
    ++tree.launches;
    if (tree.nodes[at].end >= 0) {
      tree.events += path.size();
      const LaunchTree::End& end = tree.ends[static_cast<size_t>(tree.nodes[at].end)];
      finish();
      semaphores_ = end.semaphores_after;
      result.cycles = end.cycles;
      result.dmas = end.dmas;
      result.barrier_waits = end.barrier_waits;
      result.lock_contentions = end.lock_contentions;
      return result;
    }
  }
  // The clock, brought to where the tree and this DPU part (every event before is the same), then on.
  clock.Reset(clock_params_, tasklets_, options.shuffle_seed);
  clock.SetSemaphores(semaphores_);
  if (shared_clock) {
    for (const uint32_t node : path) {
      const LaunchTree::Step& step = tree.nodes[node].step;
      if (clock.Advance() != timing::DpuClock::State::kReady || clock.NextReady() != step.tasklet) {
        Fail(nullptr, "internal: the clock did not retrace the shared launch");
      }
      clock_step([&] {  // an event another DPU's launch failed at fails this one's the same way
        clock.Submit(step.tasklet, step.slots, step.event);
        return 0;
      });
    }
  }
  // This DPU's further events become a branch of the tree from `at`, while it has room.
  bool grow = shared_clock && tree.nodes[at].children < kMaxChildren && tree.WorthGrowing();
  for (;;) {
    const timing::DpuClock::State state = clock_step([&] { return clock.Advance(); });
    if (state == timing::DpuClock::State::kFinished) break;
    if (state == timing::DpuClock::State::kDeadlock) {
      AbortLaunch(runs, StrCat("deadlock: no tasklet can run (", clock.Describe(),
                               "; a barrier needs all its tasklets, and finished tasklets never arrive)"));
    }
    if (state == timing::DpuClock::State::kSpinStall) {
      AbortLaunch(runs, StrCat("spin-wait without progress: ", clock.Describe(), " for more than ",
                               clock_params_.spin_limit_cycles,
                               " cycles (profile field spin_limit_cycles) while no other tasklet can change what it "
                               "reads; wait with a handshake, a semaphore or a barrier, or make the writer run"));
    }
    const uint32_t k = clock.NextReady();
    TaskletRun& r = runs[k];
    if (r.next == r.size) {
      // Every event the tasklet queued is timed: it runs on to its next. A failure surfaces here, at the modeled
      // time the tasklet reaches it, also when the tasklet ran ahead to it.
      if (!r.done) {
        r.next = r.size = 0;
        r.fiber->Enter(r);
      }
      if (r.next == r.size) {  // no event: the tasklet failed
        if (!r.error) Fail(nullptr, StrCat("internal: tasklet ", k, " resumed after its end"));
        abandon();
        std::rethrow_exception(r.error);
      }
    }
    const TaskletRun::QueuedEvent& e = r.queue[r.next++];
    if (record) result.trace.tasklets[k].push_back({e.slots, e.event});
    ++result.events;
    if (grow && tree.nodes.size() >= kMaxTreeNodes) grow = false;
    if (grow) {
      const uint32_t node = static_cast<uint32_t>(tree.nodes.size());
      LaunchTree::Node added;
      added.step = {k, e.event, e.slots, clock.Result(k)};
      added.next_sibling = tree.nodes[at].first_child;
      tree.nodes[at].first_child = node;
      ++tree.nodes[at].children;
      tree.nodes.push_back(added);
      at = node;
    }
    clock_step([&] {
      clock.Submit(k, e.slots, e.event);
      return 0;
    });
  }
  finish();
  // A semaphore is a WRAM variable of the program: its count stays for the next launch, as the SDK's does (its
  // SEMAPHORE_INIT count is set again only by dpu_load).
  semaphores_ = clock.SemaphoreCounts(semaphores_.size());
  result.cycles = clock.Cycles();
  result.dmas = clock.dmas();
  result.barrier_waits = clock.barrier_waits();
  result.lock_contentions = clock.lock_contentions();
  if (shared_clock) tree.events += result.events;
  if (grow) {  // the branch reached the launch's end: a later DPU with these events takes what the clock made of them
    tree.nodes[at].end = static_cast<int32_t>(tree.ends.size());
    tree.ends.push_back({semaphores_, result.cycles, result.dmas, result.barrier_waits, result.lock_contentions});
  }
  return result;
}

}  // namespace pimopt::pim
