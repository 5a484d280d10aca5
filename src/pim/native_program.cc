// DPU C programs on the emulator (native_program.h): the loader and the DPU runtime the compiled program calls.
//
// The runtime functions (me(), mram_read, barrier_wait, ... and the pass's __pimopt_dpu_* hooks) find the running
// tasklet in thread-local variables. A tasklet is a fiber, and a fiber switch (at a DMA or a synchronization) may
// run another tasklet, of this DPU or another, on this host thread: every call that can switch restores them when
// it returns, from the values its own frame kept.
#include "pimopt/pim/native_program.h"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include "pimopt/core/error.h"
#include "pimopt/pim/dpu_types.h"
#include "pimopt/pim/profile.h"

namespace pimopt::pim {
namespace {

struct SymbolRecord {  // the pass's __pimopt_dpu_symbols
  const char* name;
  uint64_t kind;  // 0 WRAM, 1 MRAM, 2 MRAM without initial value
  uint64_t offset;
  uint64_t bytes;
  const uint8_t* initial;
};

class NativeProgram;

struct Running {
  Tasklet* tasklet = nullptr;
  uint8_t* wram = nullptr;
  NativeProgram* program = nullptr;
};
thread_local Running t_running;

class NativeProgram final : public Kernel {
 public:
  NativeProgram(const std::string& path, void* handle) : path_(path), handle_(handle) {
    auto symbol = [&](const char* name) {
      void* p = dlsym(handle_, name);
      if (p == nullptr) throw InputError(StrCat(path_, ": not a program built by pimopt-dpu-cc (no ", name, ")"));
      return p;
    };
    main_ = reinterpret_cast<int (*)()>(symbol("main"));
    const auto* records = static_cast<const SymbolRecord*>(symbol("__pimopt_dpu_symbols"));
    const uint64_t count = *static_cast<const uint64_t*>(symbol("__pimopt_dpu_symbol_count"));
    const auto* op_names = static_cast<const char* const*>(symbol("__pimopt_dpu_op_names"));
    for (size_t op = 0; op < kNumOps; ++op) {
      if (std::strcmp(op_names[op], OpName(static_cast<Op>(op))) != 0) {
        throw PimError(StrCat(path_, ": operation ", op, " of its pass is '", op_names[op], "', the emulator's '",
                              OpName(static_cast<Op>(op)), "': rebuild it with this pimopt's pimopt-dpu-cc"));
      }
    }
    const void* tasklets = dlsym(handle_, "__pimopt_dpu_nr_tasklets");
    spec_.name = path_;
    spec_.tasklets = tasklets ? *static_cast<const uint32_t*>(tasklets) : 16;
    for (uint64_t i = 0; i < count; ++i) {
      const SymbolRecord& r = records[i];
      SymbolSpec s{r.name, static_cast<uint32_t>(r.bytes), {}};
      if (r.initial) s.initial.assign(r.initial, r.initial + r.bytes);
      (r.kind == 0 ? spec_.wram_symbols : spec_.mram_symbols).push_back(std::move(s));
      (r.kind == 0 ? wram_offsets_ : mram_offsets_).push_back(r.offset);
    }
  }
  ~NativeProgram() override { dlclose(handle_); }

  KernelSpec Spec() const override { return spec_; }

  void Main(Tasklet& t) override {
    if (!checked_layout_.load(std::memory_order_acquire)) CheckLayout(t);
    Enter(t);
    main_();
  }

  void Enter(Tasklet& t) {
    t_running.tasklet = &t;
    t_running.wram = static_cast<uint8_t*>(static_cast<void*>(t.WramAt<uint64_t>(0).get()));
    t_running.program = this;
  }

  // The emulator's number for the barrier or mutex object at `p` (a WRAM object: by its WRAM address, the same on
  // every DPU; any other: by its host address), given in the order objects are first used.
  uint32_t SyncObject(const void* p, bool barrier) {
    const Running r = t_running;
    const uint8_t* at = static_cast<const uint8_t*>(p);
    const bool in_wram = at >= r.wram && at < r.wram + (1u << 16);
    const uintptr_t key = in_wram ? static_cast<uintptr_t>(at - r.wram) : reinterpret_cast<uintptr_t>(p);
    std::lock_guard<std::mutex> lock(mutex_);
    auto& ids = barrier ? barriers_ : mutexes_;
    auto [it, added] = ids.try_emplace({in_wram, key}, static_cast<uint32_t>(ids.size()));
    (void)added;
    return it->second;
  }

  // The DPU's cycles since its counter's last reset (then resets it when asked).
  uint64_t CounterSince(uint32_t dpu, uint64_t now, bool reset) {
    std::lock_guard<std::mutex> lock(mutex_);
    uint64_t& base = counter_reset_[dpu];
    const uint64_t since = now - std::min(base, now);
    if (reset) base = now;
    return since;
  }

 private:
  // The pass placed the WRAM and MRAM variables as the emulator does (8-aligned, in order, from 0): checked once.
  void CheckLayout(Tasklet& t) {
    const uint8_t* base = static_cast<uint8_t*>(static_cast<void*>(t.WramAt<uint64_t>(0).get()));
    for (size_t i = 0; i < spec_.wram_symbols.size(); ++i) {
      const auto* p = static_cast<const uint8_t*>(t.WramSymbol(spec_.wram_symbols[i].name));
      if (static_cast<uint64_t>(p - base) != wram_offsets_[i]) {
        t.Fail(StrCat(path_, ": WRAM variable ", spec_.wram_symbols[i].name, " placed at ", p - base,
                      ", the program expects ", wram_offsets_[i]));
      }
    }
    for (size_t i = 0; i < spec_.mram_symbols.size(); ++i) {
      if (t.MramSymbol(spec_.mram_symbols[i].name) != mram_offsets_[i]) {
        t.Fail(StrCat(path_, ": MRAM variable ", spec_.mram_symbols[i].name, " misplaced"));
      }
    }
    checked_layout_.store(true, std::memory_order_release);
  }

  std::string path_;
  void* handle_;
  int (*main_)() = nullptr;
  KernelSpec spec_;
  std::vector<uint64_t> wram_offsets_, mram_offsets_;
  std::atomic<bool> checked_layout_{false};
  std::mutex mutex_;
  std::map<std::pair<bool, uintptr_t>, uint32_t> barriers_, mutexes_;
  std::map<uint32_t, uint64_t> counter_reset_;  // per DPU: the cycle of the last reset
};

// Restores the running tasklet after a call that may switch fibers.
class Resume {
 public:
  Resume() : saved_(t_running) {}
  ~Resume() { t_running = saved_; }
  Tasklet& tasklet() const { return *saved_.tasklet; }
  NativeProgram& program() const { return *saved_.program; }

 private:
  Running saved_;
};

}  // namespace

std::shared_ptr<Kernel> LoadNativeProgram(const std::string& path) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) throw InputError(StrCat(path, ": cannot load the DPU program: ", dlerror()));
  return std::make_shared<NativeProgram>(path, handle);
}

}  // namespace pimopt::pim

using pimopt::pim::Op;
using pimopt::pim::t_running;

extern "C" {

// --- the pass's hooks
uint8_t* __pimopt_dpu_wram_base() { return t_running.wram; }
void __pimopt_dpu_count(uint32_t op, uint64_t n) { pimopt::pim::Count(static_cast<Op>(op), n); }
int32_t __pimopt_dpu_mul32(int32_t a, int32_t b) { return (pimopt::pim::i32(a) * pimopt::pim::i32(b)).value(); }
int64_t __pimopt_dpu_mul64(int64_t a, int64_t b) { return (pimopt::pim::i64(a) * pimopt::pim::i64(b)).value(); }
uint32_t __pimopt_dpu_udiv32(uint32_t a, uint32_t b) { return (pimopt::pim::u32(a) / pimopt::pim::u32(b)).value(); }
int32_t __pimopt_dpu_sdiv32(int32_t a, int32_t b) { return (pimopt::pim::i32(a) / pimopt::pim::i32(b)).value(); }
uint32_t __pimopt_dpu_urem32(uint32_t a, uint32_t b) { return (pimopt::pim::u32(a) % pimopt::pim::u32(b)).value(); }
int32_t __pimopt_dpu_srem32(int32_t a, int32_t b) { return (pimopt::pim::i32(a) % pimopt::pim::i32(b)).value(); }

// --- defs.h, mram.h, alloc.h
uint32_t __pimopt_dpu_me() { return t_running.tasklet->me(); }
uintptr_t __pimopt_dpu_mram_heap() { return t_running.tasklet->MramHeap(); }
void mram_read(const void* from, void* to, unsigned int bytes) {
  const pimopt::pim::Resume r;
  r.tasklet().MramRead(reinterpret_cast<uintptr_t>(from), to, bytes);
}
void mram_write(const void* from, void* to, unsigned int bytes) {
  const pimopt::pim::Resume r;
  r.tasklet().MramWrite(from, reinterpret_cast<uintptr_t>(to), bytes);
}
void* mem_alloc(size_t bytes) { return t_running.tasklet->MemAlloc(static_cast<uint32_t>(bytes)); }
void mem_reset() { t_running.tasklet->MemReset(); }

// --- barrier.h, mutex.h, perfcounter.h
struct barrier_t {
  uint32_t count;
  uint32_t id;
};
void barrier_wait(barrier_t* barrier) {
  const pimopt::pim::Resume r;
  const uint32_t id = r.program().SyncObject(barrier, true);
  r.tasklet().BarrierWait(id, barrier->count);
}
void mutex_lock(void* mutex) {
  const pimopt::pim::Resume r;
  r.tasklet().MutexLock(r.program().SyncObject(mutex, false));
}
void mutex_unlock(void* mutex) {
  const pimopt::pim::Resume r;
  r.tasklet().MutexUnlock(r.program().SyncObject(mutex, false));
}
// One counter per DPU: a reset (perfcounter_config(..., true)) makes perfcounter_get count from there.
uint64_t perfcounter_config(int, bool reset) {
  const pimopt::pim::Resume r;
  const uint64_t now = r.tasklet().Cycles();
  return r.program().CounterSince(r.tasklet().dpu_index(), now, reset);
}
uint64_t perfcounter_get() {
  const pimopt::pim::Resume r;
  const uint64_t now = r.tasklet().Cycles();
  return r.program().CounterSince(r.tasklet().dpu_index(), now, false);
}

}  // extern "C"
