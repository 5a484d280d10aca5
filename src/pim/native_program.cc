// DPU C programs on the emulator (native_program.h): the loader and the DPU runtime the compiled program calls.
//
// The runtime functions (me(), mram_read, barrier_wait, ... and the pass's __pimopt_dpu_* hooks) find the running
// tasklet in thread-local variables. A tasklet is a fiber, and a fiber switch (at a DMA or a synchronization) may
// run another tasklet, of this DPU or another, on this host thread: every call that can switch restores them when
// it returns, from the values its own frame kept.
#include "pimopt/pim/native_program.h"

#include <dlfcn.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>

#include <algorithm>
#include <array>
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
  uint64_t kind;  // 0 WRAM, 1 MRAM, 2 MRAM without initial value, 3 a WRAM semaphore
  uint64_t offset;
  uint64_t bytes;
  const uint8_t* initial;
};

class NativeProgram;

struct Running {
  Tasklet* tasklet = nullptr;
  uint8_t* wram = nullptr;
  NativeProgram* program = nullptr;
  const char* location = nullptr;  // "task.c:LINE" of the SDK call being made (the pass's __pimopt_dpu_at)
};
thread_local Running t_running;

constexpr uintptr_t kWramBytes = uintptr_t{1} << 16;  // a DPU's WRAM image

// The WRAM address of the `bytes` at `p` when they lie in the running DPU's WRAM; -1 otherwise.
int64_t WramOffset(const void* p, size_t bytes) {
  const uintptr_t at = reinterpret_cast<uintptr_t>(p), base = reinterpret_cast<uintptr_t>(t_running.wram);
  return at >= base && at + bytes <= base + kWramBytes ? static_cast<int64_t>(at - base) : -1;
}

class NativeProgram final : public DpuProgram {
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
    spec_.tasklets = tasklets ? *static_cast<const uint32_t*>(tasklets) : 1;  // the SDK's default
    for (uint64_t i = 0; i < count; ++i) {
      const SymbolRecord& r = records[i];
      SymbolSpec s{r.name, static_cast<uint32_t>(r.bytes), {}};
      if (r.initial) s.initial.assign(r.initial, r.initial + r.bytes);
      const bool wram = r.kind == 0 || r.kind == 3;
      if (r.kind == 3) {  // SEMAPHORE_INIT: its initial count, set at each load (a launch leaves its count to the next)
        int32_t initial = 0;
        if (r.initial) std::memcpy(&initial, r.initial, sizeof(initial));
        semaphores_[r.offset] = static_cast<uint32_t>(spec_.semaphores.size());
        spec_.semaphores.push_back(initial);
      }
      (wram ? spec_.wram_symbols : spec_.mram_symbols).push_back(std::move(s));
      (wram ? wram_offsets_ : mram_offsets_).push_back(r.offset);
    }
  }
  ~NativeProgram() override { dlclose(handle_); }

  KernelSpec Spec() const override { return spec_; }
  const std::string& path() const override { return path_; }

  std::string Log(uint32_t dpu) const override {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = logs_.find(dpu);
    return it == logs_.end() ? std::string() : it->second;
  }
  void ClearLogs(uint32_t first, uint32_t count) override {
    std::lock_guard<std::mutex> lock(mutex_);
    logs_.erase(logs_.lower_bound(first), count > UINT32_MAX - first ? logs_.end() : logs_.lower_bound(first + count));
  }
  void AppendLog(uint32_t dpu, std::string_view text) {
    std::lock_guard<std::mutex> lock(mutex_);
    logs_[dpu].append(text);
  }

  // The emulator's number for the SEMAPHORE_INIT object at `p`.
  uint32_t Semaphore(const void* p) const {
    const int64_t offset = WramOffset(p, 1);
    const auto it = offset >= 0 ? semaphores_.find(static_cast<uint64_t>(offset)) : semaphores_.end();
    if (it == semaphores_.end()) t_running.tasklet->Fail("sem_take / sem_give on an object not made by SEMAPHORE_INIT");
    return it->second;
  }

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
    const int64_t offset = WramOffset(p, 1);
    const bool in_wram = offset >= 0;
    const uintptr_t key = in_wram ? static_cast<uintptr_t>(offset) : reinterpret_cast<uintptr_t>(p);
    // A number, once given, never changes: each host thread keeps the ones it looked up (a barrier or mutex call of
    // every tasklet took the program's lock and a map lookup), tagged with this program's serial, never reused.
    struct Cached {
      uint64_t program = 0;
      uintptr_t key = 0;
      bool in_wram = false, barrier = false;
      uint32_t id = 0;
    };
    thread_local std::array<Cached, 16> cache;
    Cached& slot = cache[(key * 0x9E3779B97F4A7C15ull >> 60) ^ (barrier ? 1 : 0)];
    if (slot.program == serial_ && slot.key == key && slot.in_wram == in_wram && slot.barrier == barrier) return slot.id;
    std::lock_guard<std::mutex> lock(mutex_);
    auto& ids = barrier ? barriers_ : mutexes_;
    auto [it, added] = ids.try_emplace({in_wram, key}, static_cast<uint32_t>(ids.size()));
    (void)added;
    slot = {serial_, key, in_wram, barrier, it->second};
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
  // Unique among the programs this process loads (the sync objects' per-thread cache tells them apart by it).
  inline static std::atomic<uint64_t> next_serial_{1};
  const uint64_t serial_ = next_serial_.fetch_add(1);
  mutable std::mutex mutex_;
  std::map<std::pair<bool, uintptr_t>, uint32_t> barriers_, mutexes_;
  std::map<uint64_t, uint32_t> semaphores_;  // WRAM offset -> the emulator's semaphore number
  std::map<uint32_t, std::string> logs_;     // per DPU: what its printf wrote since the last ClearLogs
  std::map<uint32_t, uint64_t> counter_reset_;  // per DPU: the cycle of the last reset
};

// Restores the running tasklet after a call that may switch fibers.
class Resume {
 public:
  Resume() : saved_(t_running) { t_running.location = nullptr; }
  ~Resume() {
    t_running = saved_;
    t_running.location = nullptr;
  }
  Tasklet& tasklet() const { return *saved_.tasklet; }
  NativeProgram& program() const { return *saved_.program; }
  // Runs an SDK call's work; a rule it breaks is reported at the call's source line.
  template <typename F>
  auto Checked(F&& work) const {
    try {
      return work();
    } catch (const PimError& e) {
      if (saved_.location == nullptr) throw;
      throw PimError(StrCat(saved_.location, ": ", e.what()));
    }
  }

 private:
  Running saved_;
};

// A __mram_ptr access of `bytes` at `address`: the DMA of the aligned 8-byte words around it, into a stack buffer
// of the tasklet (as the SDK's compiler does it; a store is a read, a change and a write).
constexpr uint32_t kMramWord = 8;
uint64_t WordsAround(uint64_t address, uint64_t bytes) {
  return (address + bytes + kMramWord - 1) / kMramWord - address / kMramWord;
}
void MramLoad(Tasklet& t, uint64_t address, uint8_t* to, uint64_t bytes) {
  while (bytes > 0) {
    alignas(8) uint8_t words[2048];
    const uint64_t first = address / kMramWord * kMramWord;
    const uint64_t words_bytes = std::min<uint64_t>(WordsAround(address, bytes) * kMramWord, sizeof(words));
    t.MramRead(first, words, static_cast<uint32_t>(words_bytes));
    const uint64_t n = std::min(bytes, first + words_bytes - address);
    std::memcpy(to, words + (address - first), n);
    address += n, to += n, bytes -= n;
  }
}
void MramStore(Tasklet& t, const uint8_t* from, uint64_t address, uint64_t bytes) {
  while (bytes > 0) {
    alignas(8) uint8_t words[2048];
    const uint64_t first = address / kMramWord * kMramWord;
    const uint64_t words_bytes = std::min<uint64_t>(WordsAround(address, bytes) * kMramWord, sizeof(words));
    const uint64_t n = std::min(bytes, first + words_bytes - address);
    if (address != first || n != words_bytes) t.MramRead(first, words, static_cast<uint32_t>(words_bytes));
    std::memcpy(words + (address - first), from, n);
    t.MramWrite(words, first, static_cast<uint32_t>(words_bytes));
    address += n, from += n, bytes -= n;
  }
}

}  // namespace

std::shared_ptr<DpuProgram> LoadNativeProgram(const std::string& path) {
  if (FILE* f = std::fopen(path.c_str(), "rb")) {
    std::fclose(f);
  } else {
    throw InputError(StrCat(path, ": cannot open the DPU program: ", std::strerror(errno)));
  }
  // dlopen searches the library path for a name without a slash: a program's path is a file's, so make it one.
  const std::string file = path.find('/') == std::string::npos ? "./" + path : path;
  // The program calls the emulator's runtime (the pass's counters, the SDK's DPU functions) by name: they must be
  // global. An executable exports them (ENABLE_EXPORTS); a shared object that holds the emulator and was itself
  // opened locally (Python's extension module) is made global here.
  Dl_info self{};
  if (dladdr(reinterpret_cast<void*>(&LoadNativeProgram), &self) != 0 && self.dli_fname != nullptr) {
    if (void* runtime = dlopen(self.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL)) dlclose(runtime);
  }
  void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) throw InputError(StrCat(path, ": not a DPU program built by pimopt-dpu-cc: ", dlerror()));
  return std::make_shared<NativeProgram>(path, handle);
}

}  // namespace pimopt::pim

using pimopt::pim::Op;
using pimopt::pim::t_running;

extern "C" {

// --- the pass's hooks
uint8_t* __pimopt_dpu_wram_base() { return t_running.wram; }
void __pimopt_dpu_at(const char* location) { t_running.location = location; }
// built_ins.h: one of the DPU's 8 x 8 multiplies (one issue slot), the bytes chosen by `selects`.
int32_t __pimopt_dpu_mul8(uint32_t a, uint32_t b, uint32_t selects) {
  pimopt::pim::Count(Op::kMul8);
  auto byte = [](uint32_t v, bool is_signed, bool high) {
    const uint32_t x = (v >> (high ? 8 : 0)) & 0xFFu;
    return is_signed ? static_cast<int32_t>(static_cast<int8_t>(x)) : static_cast<int32_t>(x);
  };
  return byte(a, (selects & 1) != 0, (selects & 2) != 0) * byte(b, (selects & 4) != 0, (selects & 8) != 0);
}
// The SDK compiler's __builtin_nop_ (dpu/include/pimopt_compiler_builtins.h): one issue slot.
void __pimopt_dpu_nop() { pimopt::pim::Count(Op::kInt32Logic); }
uint32_t __pimopt_dpu_udiv32(uint32_t a, uint32_t b) { return (pimopt::pim::u32(a) / pimopt::pim::u32(b)).value(); }
int32_t __pimopt_dpu_sdiv32(int32_t a, int32_t b) { return (pimopt::pim::i32(a) / pimopt::pim::i32(b)).value(); }
uint32_t __pimopt_dpu_urem32(uint32_t a, uint32_t b) { return (pimopt::pim::u32(a) % pimopt::pim::u32(b)).value(); }
int32_t __pimopt_dpu_srem32(int32_t a, int32_t b) { return (pimopt::pim::i32(a) % pimopt::pim::i32(b)).value(); }

// --- defs.h, mram.h, alloc.h
uint32_t __pimopt_dpu_me() { return t_running.tasklet->me(); }
uintptr_t __pimopt_dpu_mram_heap() { return t_running.tasklet->MramHeap(); }
void mram_read(const void* from, void* to, unsigned int bytes) {
  const pimopt::pim::Resume r;
  r.Checked([&] { r.tasklet().MramRead(reinterpret_cast<uintptr_t>(from), to, bytes); });
}
void mram_write(const void* from, void* to, unsigned int bytes) {
  const pimopt::pim::Resume r;
  r.Checked([&] { r.tasklet().MramWrite(from, reinterpret_cast<uintptr_t>(to), bytes); });
}
void __pimopt_dpu_mram_read_sized(const void* from, void* to, unsigned int bytes) {
  const pimopt::pim::Resume r;
  r.Checked([&] { r.tasklet().MramReadRuntimeSize(reinterpret_cast<uintptr_t>(from), to, bytes); });
}
void __pimopt_dpu_mram_write_sized(const void* from, void* to, unsigned int bytes) {
  const pimopt::pim::Resume r;
  r.Checked([&] { r.tasklet().MramWriteRuntimeSize(from, reinterpret_cast<uintptr_t>(to), bytes); });
}
// A WRAM access through an MRAM variable's address (the pass's TrapWramAccessesThroughMram): the tasklet stops.
void __pimopt_dpu_mram_as_wram(const char* what) {
  const pimopt::pim::Resume r;
  r.Checked([&]() -> void { r.tasklet().Fail(what); });
}
void* mem_alloc(size_t bytes) {
  const pimopt::pim::Resume r;
  if (bytes > UINT32_MAX) r.Checked([&]() -> void { r.tasklet().Fail(pimopt::StrCat("mem_alloc(", bytes, ")")); });
  return r.Checked([&] { return r.tasklet().MemAlloc(static_cast<uint32_t>(bytes)); });
}

// --- __mram_ptr loads, stores, copies and fills (the pass's lowering)
void __pimopt_dpu_mram_copy_from(uint8_t* to, uint64_t address, uint64_t bytes) {
  const pimopt::pim::Resume r;
  r.Checked([&] { pimopt::pim::MramLoad(r.tasklet(), address, to, bytes); });
}
void __pimopt_dpu_mram_copy_to(uint64_t address, const uint8_t* from, uint64_t bytes) {
  const pimopt::pim::Resume r;
  r.Checked([&] { pimopt::pim::MramStore(r.tasklet(), from, address, bytes); });
}
void __pimopt_dpu_mram_copy(uint64_t to, uint64_t from, uint64_t bytes) {
  const pimopt::pim::Resume r;
  r.Checked([&] {
    std::vector<uint8_t> staging(bytes);
    pimopt::pim::MramLoad(r.tasklet(), from, staging.data(), bytes);
    pimopt::pim::MramStore(r.tasklet(), staging.data(), to, bytes);
  });
}
void __pimopt_dpu_mram_set(uint64_t address, uint8_t value, uint64_t bytes) {
  const pimopt::pim::Resume r;
  r.Checked([&] {
    const std::vector<uint8_t> filled(bytes, value);
    pimopt::pim::MramStore(r.tasklet(), filled.data(), address, bytes);
  });
}

// --- printf: the DPU's log, read by the host with dpu_log_read
int __pimopt_dpu_printf(const char* format, ...) {
  va_list args;
  va_start(args, format);
  va_list again;
  va_copy(again, args);
  const int n = std::vsnprintf(nullptr, 0, format, args);
  va_end(args);
  std::string text(n > 0 ? static_cast<size_t>(n) : 0, '\0');
  if (n > 0) std::vsnprintf(text.data(), text.size() + 1, format, again);
  va_end(again);
  t_running.program->AppendLog(t_running.tasklet->dpu_index(), text);
  return n;
}
// assert.h: a failed assertion is the DPU's fault (the SDK's assert halts the DPU), reported with its line, DPU
// and tasklet, never an abort of the emulator's process.
void __pimopt_dpu_assert_fail(const char* expression, const char* file, unsigned int line) {
  const char* base = std::strrchr(file, '/');
  t_running.tasklet->Fail(pimopt::StrCat(base ? base + 1 : file, ":", line, ": assertion failed: ", expression));
}
int __pimopt_dpu_puts(const char* s) {
  t_running.program->AppendLog(t_running.tasklet->dpu_index(), pimopt::StrCat(s, "\n"));
  return 1;
}
int __pimopt_dpu_putchar(int c) {
  const char ch = static_cast<char>(c);
  t_running.program->AppendLog(t_running.tasklet->dpu_index(), std::string_view(&ch, 1));
  return c;
}
void mem_reset() { t_running.tasklet->MemReset(); }

// --- barrier.h, mutex.h, perfcounter.h
struct barrier_t {  // dpu/include/barrier.h
  uint8_t wait_queue;
  uint8_t count;
  uint8_t initial_count;
  uint8_t lock;
};
void barrier_wait(barrier_t* barrier) {
  const pimopt::pim::Resume r;
  const uint32_t id = r.program().SyncObject(barrier, true);
  r.Checked([&] { r.tasklet().BarrierWait(id, barrier->initial_count); });
}
// The SDK's mutex is one byte (mutex_id_t is uint8_t *): the program's byte only names it; the holder is the
// emulator's (Tasklet::MutexUnlock checks it).
void mutex_lock(void* mutex) {
  const pimopt::pim::Resume r;
  r.Checked([&] { r.tasklet().MutexLock(r.program().SyncObject(mutex, false)); });
}
void mutex_unlock(void* mutex) {
  const pimopt::pim::Resume r;
  r.Checked([&] { r.tasklet().MutexUnlock(r.program().SyncObject(mutex, false)); });
}
void sem_take(void* semaphore) {
  const pimopt::pim::Resume r;
  r.Checked([&] { r.tasklet().SemTake(r.program().Semaphore(semaphore)); });
}
void sem_give(void* semaphore) {
  const pimopt::pim::Resume r;
  r.Checked([&] { r.tasklet().SemGive(r.program().Semaphore(semaphore)); });
}
void handshake_notify() {
  const pimopt::pim::Resume r;
  r.Checked([&] { r.tasklet().HandshakeNotify(); });
}
int handshake_wait_for(uint32_t notifier) {
  const pimopt::pim::Resume r;
  return r.Checked([&] {
    if (notifier >= r.tasklet().nr_tasklets()) {
      r.tasklet().Fail(pimopt::StrCat("handshake_wait_for(", notifier, "): there are ", r.tasklet().nr_tasklets(),
                                      " tasklets"));
    }
    return r.tasklet().HandshakeWaitFor(notifier);
  });
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
