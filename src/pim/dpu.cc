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

 private:
  // Boost.Context stack allocator: plain heap memory (the fibers live as long as their host thread).
  // The top of each stack is offset by a different multiple of a cache line (its colour): with equal 256 KB stacks,
  // the 16 tasklets' active frames would sit at the same offset modulo 4 KB and compete for the same L1 sets.
  struct Stack {
    void** base_out;
    size_t colour_bytes;
    ctx::stack_context allocate() {
      void* base = ::operator new(kStackBytes);
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
      ::operator delete(base);
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

// ---------------------------------------------------------------- Tasklet
int32_t Tasklet::Mul32(int32_t a, int32_t b) {
  // __mulsi3 puts the unsigned-smaller operand in the shift register and stops at its highest set bit ([SDK] mul32.c).
  const uint32_t smaller = std::min(static_cast<uint32_t>(a), static_cast<uint32_t>(b));
  extra_slots_ += dpu_->profile().mul32_setup_slots + static_cast<double>(std::bit_width(smaller));
  return static_cast<int32_t>(static_cast<uint32_t>(a) * static_cast<uint32_t>(b));
}
void* Tasklet::WramSymbol(std::string_view symbol, uint32_t min_bytes) {
  return dpu_->WramSymbol(*this, symbol, min_bytes);
}
void* Tasklet::MemAlloc(uint32_t bytes) { return dpu_->MemAlloc(*this, bytes); }
void Tasklet::MemReset() { dpu_->MemReset(); }
uint64_t Tasklet::MramSymbol(std::string_view symbol) const { return dpu_->MramSymbol(*this, symbol); }
uint64_t Tasklet::MramHeap() const { return dpu_->mram_heap(); }
void Tasklet::MramRead(uint64_t mram_address, void* wram_destination, uint32_t bytes) {
  dpu_->Dma(*this, true, mram_address, wram_destination, bytes);
}
void Tasklet::MramWrite(const void* wram_source, uint64_t mram_address, uint32_t bytes) {
  dpu_->Dma(*this, false, mram_address, const_cast<void*>(wram_source), bytes);
}
void Tasklet::BarrierWait(uint32_t barrier) { dpu_->Barrier(*this, barrier); }
void Tasklet::MutexLock(uint32_t mutex) { dpu_->MutexLock(*this, mutex); }
void Tasklet::MutexUnlock(uint32_t mutex) { dpu_->MutexUnlock(*this, mutex); }
void Tasklet::Fail(const std::string& what) const { dpu_->Fail(this, what); }

// ---------------------------------------------------------------- Dpu
Dpu::Dpu(const HardwareProfile& profile, uint32_t index)
    : profile_(profile), index_(index), mram_(profile.mram_bytes), wram_(profile.wram_bytes, 0) {}

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

void Dpu::Load(const KernelSpec& spec, uint32_t tasklets) {
  kernel_name_ = spec.name;
  if (tasklets == 0 || tasklets > profile_.max_tasklets) {
    Fail(nullptr, StrCat(tasklets, " tasklets requested; this DPU runs 1 to ", profile_.max_tasklets));
  }
  tasklets_ = tasklets;
  std::fill(wram_.begin(), wram_.end(), 0);
  wram_symbols_.clear();
  mram_symbols_.clear();
  uint64_t top = 0;
  for (const SymbolSpec& s : spec.wram_symbols) {
    if (wram_symbols_.count(s.name)) Fail(nullptr, StrCat("WRAM symbol '", s.name, "' declared twice"));
    wram_symbols_[s.name] = {top, s.bytes};
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
    mram_symbols_[s.name] = {mtop, s.bytes};
    mtop = AlignUp(mtop + s.bytes, 8);
  }
  if (mtop > mram_.size()) Fail(nullptr, StrCat("MRAM variables need ", mtop, " bytes > ", mram_.size()));
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
  const auto w = wram_symbols_.find(symbol);
  const auto m = mram_symbols_.find(symbol);
  if (w == wram_symbols_.end() && m == mram_symbols_.end()) {
    Fail(nullptr, StrCat(verb, ": unknown symbol '", symbol, "'"));
  }
  const bool is_mram = m != mram_symbols_.end();
  const Placement& p = is_mram ? m->second : w->second;
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
  } else if (auto w = wram_symbols_.find(symbol); w != wram_symbols_.end()) {
    std::memcpy(wram_.data() + w->second.offset + offset, source, bytes);
  } else {
    mram_.Write(mram_symbols_.find(symbol)->second.offset + offset, source, bytes);
  }
}

void Dpu::HostRead(std::string_view symbol, uint64_t offset, void* destination, uint64_t bytes) {
  CheckHostAccess(symbol, offset, bytes, "host read");
  if (symbol == kMramHeapSymbol) {
    mram_.Read(mram_heap_start_ + offset, destination, bytes);
  } else if (auto w = wram_symbols_.find(symbol); w != wram_symbols_.end()) {
    std::memcpy(destination, wram_.data() + w->second.offset + offset, bytes);
  } else {
    mram_.Read(mram_symbols_.find(symbol)->second.offset + offset, destination, bytes);
  }
}

void* Dpu::WramSymbol(const Tasklet& t, std::string_view symbol, uint32_t min_bytes) {
  const auto it = wram_symbols_.find(symbol);
  if (it == wram_symbols_.end()) Fail(&t, StrCat("unknown WRAM symbol '", symbol, "'"));
  if (it->second.bytes < min_bytes) {
    Fail(&t, StrCat("WRAM symbol '", symbol, "' holds ", it->second.bytes, " bytes, ", min_bytes, " requested"));
  }
  return wram_.data() + it->second.offset;
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

uint64_t Dpu::MramSymbol(const Tasklet& t, std::string_view symbol) const {
  const auto it = mram_symbols_.find(symbol);
  if (it == mram_symbols_.end()) Fail(&t, StrCat("unknown MRAM symbol '", symbol, "'"));
  return it->second.offset;
}

void Dpu::Dma(Tasklet& t, bool read, uint64_t mram_address, void* wram, uint32_t bytes) {
  const char* verb = read ? "mram_read" : "mram_write";
  if (bytes < profile_.dma_min_bytes || bytes > profile_.dma_max_bytes || bytes % 8) {
    Fail(&t, StrCat(verb, " of ", bytes, " bytes: the size must be a multiple of 8 in [", profile_.dma_min_bytes, ", ",
                    profile_.dma_max_bytes, "]"));
  }
  const auto* w = static_cast<uint8_t*>(wram);
  if (w < wram_.data() || w + bytes > wram_.data() + wram_.size()) {
    Fail(&t, StrCat(verb, ": the WRAM buffer is not inside this DPU's WRAM (use MemAlloc or a WRAM symbol)"));
  }
  const uint64_t wram_offset = static_cast<uint64_t>(w - wram_.data());
  if (wram_offset % 8 || mram_address % 8) {
    Fail(&t, StrCat(verb, ": addresses must be 8-byte aligned (MRAM 0x", std::hex, mram_address, ", WRAM 0x",
                    wram_offset, ")"));
  }
  if (mram_address + bytes > mram_.size()) {
    Fail(&t, StrCat(verb, " of ", bytes, " bytes at MRAM address ", mram_address, " is out of range (MRAM holds ",
                    mram_.size(), " bytes)"));
  }
  if (read) {
    mram_.Read(mram_address, wram, bytes);
    mram_read_bytes_ += bytes;
  } else {
    mram_.Write(mram_address, wram, bytes);
    mram_write_bytes_ += bytes;
  }
  const double alpha = read ? profile_.dma_read_alpha_cycles : profile_.dma_write_alpha_cycles;
  const double transfer = profile_.dma_beta_cycles_per_byte * bytes;
  t.dma_latency_cycles_ += alpha + transfer;
  dma_occupancy_cycles_ += profile_.dma_occupancy_alpha_fraction * alpha + transfer;
}

void Dpu::Yield(Tasklet& t) {
  TaskletRun& run = (*runs_)[t.me()];
  [[maybe_unused]] void* fake_stack = nullptr;
  PIMOPT_START_SWITCH(&fake_stack, run.scheduler_bottom, run.scheduler_size);
  PIMOPT_TSAN_SWITCH(run.tsan_scheduler);
  run.scheduler = std::move(run.scheduler).resume();
  PIMOPT_FINISH_SWITCH(fake_stack, &run.scheduler_bottom, &run.scheduler_size);
  if (aborting_) throw TaskletAbort{};
}

void Dpu::RunTasklet(TaskletRun& run) {
  try {
    if (!aborting_) run.kernel->Main(*run.tasklet);  // a tasklet first resumed by AbortSuspended never starts
  } catch (const TaskletAbort&) {
    // the launch was abandoned: just end
  } catch (const ctx::detail::forced_unwind&) {
    throw;
  } catch (...) {
    run.error = std::current_exception();
  }
  run.state = TaskletRun::State::kDone;
}

void Dpu::AbortSuspended(std::vector<TaskletRun>& runs) {
  aborting_ = true;
  for (TaskletRun& r : runs) {
    // A kernel that swallows TaskletAbort may suspend again: keep resuming (bounded) until it ends.
    for (int attempt = 0; attempt < 1000 && r.state != TaskletRun::State::kDone; ++attempt) r.fiber->Enter(r);
  }
  aborting_ = false;
}

void Dpu::Barrier(Tasklet& t, uint32_t barrier) {
  if (barrier >= barrier_arrived_.size()) barrier_arrived_.resize(barrier + 1, 0);
  ++barrier_waits_;
  if (++barrier_arrived_[barrier] == tasklets_) {
    barrier_arrived_[barrier] = 0;
    ++barrier_episodes_;
    for (TaskletRun& r : *runs_) {
      if (r.state == TaskletRun::State::kBarrier && r.waiting_on == barrier) r.state = TaskletRun::State::kRunnable;
    }
    return;
  }
  TaskletRun& run = (*runs_)[t.me()];
  run.state = TaskletRun::State::kBarrier;
  run.waiting_on = barrier;
  Yield(t);
}

void Dpu::MutexLock(Tasklet& t, uint32_t mutex) {
  t.extra_slots_ += profile_.mutex_slots;
  auto it = mutex_owner_.find(mutex);
  if (it == mutex_owner_.end() || it->second < 0) {
    mutex_owner_[mutex] = static_cast<int>(t.me());
    return;
  }
  if (it->second == static_cast<int>(t.me())) Fail(&t, StrCat("mutex ", mutex, " locked twice by the same tasklet"));
  ++mutex_contentions_;
  TaskletRun& run = (*runs_)[t.me()];
  run.state = TaskletRun::State::kMutex;
  run.waiting_on = mutex;
  Yield(t);  // resumed owning the mutex (MutexUnlock hands it over)
}

void Dpu::MutexUnlock(Tasklet& t, uint32_t mutex) {
  t.extra_slots_ += profile_.mutex_slots;
  auto it = mutex_owner_.find(mutex);
  if (it == mutex_owner_.end() || it->second != static_cast<int>(t.me())) {
    Fail(&t, StrCat("mutex ", mutex, " unlocked by a tasklet that does not hold it"));
  }
  // Hand over to the first waiter in tasklet order (deterministic).
  for (uint32_t k = 0; k < runs_->size(); ++k) {
    TaskletRun& r = (*runs_)[k];
    if (r.state == TaskletRun::State::kMutex && r.waiting_on == mutex) {
      r.state = TaskletRun::State::kRunnable;
      it->second = static_cast<int>(k);
      return;
    }
  }
  it->second = -1;
}

DpuLaunchResult Dpu::Launch(Kernel& kernel) {
  std::vector<Tasklet> tasklets(tasklets_);
  std::vector<TaskletRun> runs(tasklets_);
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
  runs_ = &runs;
  barrier_arrived_.clear();
  mutex_owner_.clear();
  dma_occupancy_cycles_ = 0;
  barrier_episodes_ = barrier_waits_ = mutex_contentions_ = 0;
  mram_read_bytes_ = mram_write_bytes_ = 0;
  for (uint32_t k = 0; k < tasklets_; ++k) {
    Tasklet& t = tasklets[k];
    t.dpu_ = this;
    t.id_ = k;
    t.num_tasklets_ = tasklets_;
    t.dpu_index_ = index_;
    runs[k].dpu = this;
    runs[k].kernel = &kernel;
    runs[k].tasklet = &t;
    runs[k].fiber = borrowed.fibers[k].get();
    runs[k].tsan_scheduler = PIMOPT_TSAN_CURRENT();
  }
  // Round-robin over runnable tasklets until all are done; deterministic order.
  for (;;) {
    bool progressed = false, all_done = true;
    for (uint32_t k = 0; k < tasklets_; ++k) {
      TaskletRun& r = runs[k];
      if (r.state == TaskletRun::State::kDone) continue;
      all_done = false;
      if (r.state != TaskletRun::State::kRunnable) continue;
      r.fiber->Enter(r);
      progressed = true;
      if (r.error) {
        AbortSuspended(runs);
        runs_ = nullptr;
        std::rethrow_exception(r.error);
      }
    }
    if (all_done) break;
    if (!progressed) {
      std::string waiting;
      for (uint32_t k = 0; k < tasklets_; ++k) {
        const TaskletRun& r = runs[k];
        if (r.state == TaskletRun::State::kBarrier)
          waiting += StrCat(" tasklet ", k, " at barrier ", r.waiting_on, ";");
        if (r.state == TaskletRun::State::kMutex) waiting += StrCat(" tasklet ", k, " on mutex ", r.waiting_on, ";");
      }
      AbortSuspended(runs);
      runs_ = nullptr;
      Fail(nullptr, StrCat("deadlock: no tasklet can run (", waiting,
                           " a barrier needs all tasklets, and finished tasklets never arrive)"));
    }
  }
  runs_ = nullptr;
  DpuLaunchResult result;
  result.cycles = Time(tasklets);
  for (const Tasklet& t : tasklets) {
    double slots = t.extra_slots_;
    for (size_t op = 0; op < kNumOps; ++op) slots += static_cast<double>(t.op_counts_[op]) * profile_.op_slots[op];
    result.issue_slots += static_cast<uint64_t>(slots);
  }
  result.mram_read_bytes = mram_read_bytes_;
  result.mram_write_bytes = mram_write_bytes_;
  result.barrier_waits = barrier_waits_;
  return result;
}

DpuCycles Dpu::Time(const std::vector<Tasklet>& tasklets) const {
  // docs/pim-emulator.md: T = max(T_issue, T_dma, T_chain) + kappa * min(T_issue, T_dma) + T_sync.
  const double revolver = profile_.revolver_cycles;
  const double slot_interval = std::max(revolver, static_cast<double>(tasklets.size()));
  double sum_slots = 0, max_slots = 0, chain = 0;
  for (const Tasklet& t : tasklets) {
    double slots = t.extra_slots_;
    for (size_t op = 0; op < kNumOps; ++op) slots += static_cast<double>(t.op_counts_[op]) * profile_.op_slots[op];
    sum_slots += slots;
    max_slots = std::max(max_slots, slots);
    chain = std::max(chain, slot_interval * slots + t.dma_latency_cycles_);
  }
  DpuCycles c;
  c.issue = std::max(sum_slots, revolver * max_slots);
  c.dma = dma_occupancy_cycles_;
  c.chain = chain;
  c.sync = static_cast<double>(barrier_episodes_) * static_cast<double>(tasklets.size()) *
               profile_.barrier_slots_per_tasklet * revolver +
           static_cast<double>(mutex_contentions_) * profile_.mutex_contention_cycles;
  c.total = std::max({c.issue, c.dma, c.chain}) + profile_.overlap_kappa * std::min(c.issue, c.dma) + c.sync;
  return c;
}

}  // namespace pimopt::pim
