// Private: one emulated DPU (lazily backed MRAM, WRAM, symbols, the tasklet scheduler and its time accounting).
#pragma once

#include <array>
#include <boost/context/fiber.hpp>
#include <cstdint>
#include <exception>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "pimopt/pim/kernel.h"
#include "pimopt/pim/system.h"
#include "pimopt/pim/timing.h"

#include <sys/mman.h>

namespace pimopt::pim {

// Memory mapped below 2 GiB of the host's address space where the host allows it (x86-64 Linux's MAP_32BIT), else
// anywhere: a DPU's WRAM image. A DPU program may keep a WRAM pointer in a 32-bit integer, as its addresses are 16-bit
// on the DPU (SimplePIM's reductions loop over `(uint32_t)` addresses of mem_alloc'd buffers); the image's host
// addresses then survive the round trip. Every block is its own mapping, unmapped when freed.
template <class T>
struct LowAddressAllocator {
  using value_type = T;
  LowAddressAllocator() = default;
  template <class U>
  LowAddressAllocator(const LowAddressAllocator<U>&) {}
  T* allocate(size_t n) {
    const size_t bytes = n * sizeof(T);
    void* p = MAP_FAILED;
#ifdef MAP_32BIT
    p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
#endif
    if (p == MAP_FAILED) p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t n) { munmap(p, n * sizeof(T)); }
  template <class U>
  bool operator==(const LowAddressAllocator<U>&) const { return true; }
};

// Memory backed by 64 KB pages allocated on first write; untouched pages read as zeros.
class LazyMemory {
 public:
  static constexpr uint64_t kPageBytes = 64u << 10;
  explicit LazyMemory(uint64_t size) : size_(size) {}
  uint64_t size() const { return size_; }
  void Read(uint64_t address, void* destination, uint64_t bytes) const;
  void Write(uint64_t address, const void* source, uint64_t bytes);
  uint64_t backed_bytes() const { return backed_pages_ * kPageBytes; }

 private:
  uint64_t size_;
  std::vector<std::unique_ptr<uint8_t[]>> pages_;
  uint64_t backed_pages_ = 0;
};

class Dpu;
class TaskletFiber;

// One tasklet's part of a launch: its job, the fiber it runs on, and the events it stopped at.
struct TaskletRun {
  // Events the tasklet has done but the clock has not yet taken: the batched scheduler lets a tasklet run on past
  // events that do not block (timing::EventBlocks), up to this many.
  static constexpr uint32_t kRunAhead = 64;
  struct QueuedEvent {
    double slots = 0;  // issue slots since the previous event
    timing::Event event;
  };
  Dpu* dpu = nullptr;
  Kernel* kernel = nullptr;
  Tasklet* tasklet = nullptr;
  TaskletFiber* fiber = nullptr;    // reused across launches on the host thread (dpu.cc)
  boost::context::fiber scheduler;  // the scheduler's continuation while this tasklet runs
  bool done = false;                // Main returned or threw
  std::exception_ptr error;
  // queue[next, size) are the events to give the clock, in order; the tasklet runs again once they are taken.
  uint32_t next = 0, size = 0;
  std::array<QueuedEvent, kRunAhead> queue;
  // The scheduler's stack bounds for AddressSanitizer's fiber-switch annotations and its fiber for
  // ThreadSanitizer's (unused otherwise).
  const void* scheduler_bottom = nullptr;
  size_t scheduler_size = 0;
  void* tsan_scheduler = nullptr;
};

// The launches of one DPU set's launch on one host thread as their clocks saw them: a tree whose paths are event
// sequences. A node is an event the clock took (the tasklet, its issue slots and event, and the result the tasklet
// found when it resumed for it); a path from the root is the start of a DPU's launch, and a node where a launch
// ended holds what the clock made of it. The clock is deterministic: two DPUs whose tasklets do the same events up to
// a node have the same clock state there, so the same tasklet runs next (all children of a node are its events) and a
// DPU whose whole launch is a path gets that path's cycles. The batched scheduler follows the tree with each DPU's
// events and runs the clock only from the first event no path has taken, adding its events as a new branch (dpu.cc).
// Data-dependent costs (a multiply's steps follow its operands' bits) give a node a few children instead of breaking
// the sharing for the rest of the launch.
struct LaunchTree {
  struct Step {
    uint32_t tasklet = 0;
    timing::Event event;
    double slots = 0;
    uint64_t resume_result = 0;  // timing::DpuClock::Result of the tasklet when the event was taken
  };
  struct Node {
    Step step;                  // the event that leads here (the root: none)
    uint32_t first_child = 0;   // 0: none (the root, node 0, is nobody's child)
    uint32_t next_sibling = 0;  // 0: none
    uint16_t children = 0;
    int32_t end = -1;  // index in `ends` when a launch ended after this event
  };
  struct End {
    std::vector<int32_t> semaphores_after;
    DpuCycles cycles;
    uint64_t dmas = 0, barrier_waits = 0, lock_contentions = 0;
  };
  uint64_t launch_id = 0;  // 0: empty
  // The semaphores' counts at the launch's start (a DPU follows the tree only from the same start).
  std::vector<int32_t> semaphores_before;
  std::vector<Node> nodes;  // nodes[0]: the root
  std::vector<End> ends;
  // The DPUs that took part so far, their events and those of them the tree had.
  uint64_t launches = 0, events = 0, events_shared = 0;
  void Reset(uint64_t id, const std::vector<int32_t>& semaphores) {
    launch_id = id;
    semaphores_before = semaphores;
    nodes.assign(1, Node{});
    ends.clear();
    launches = events = events_shared = 0;
  }
  // Whether a DPU's new events are worth adding: while the tree has paid for at least a quarter of the events (a
  // launch whose events part at every DPU, a long kernel with data-dependent costs throughout, would only fill memory
  // with paths no later DPU takes to their end).
  bool WorthGrowing() const { return launches < 4 || 4 * events_shared >= events; }
};

struct DpuLaunchResult {
  DpuCycles cycles;
  std::array<uint64_t, kCountedOps> op_counts{};
  double issue_slots = 0;
  uint64_t mram_read_bytes = 0;
  uint64_t mram_write_bytes = 0;
  uint64_t dmas = 0;
  uint64_t unaligned_dmas = 0;
  uint64_t resized_dmas = 0;
  uint64_t barrier_waits = 0;
  uint64_t lock_contentions = 0;
  uint64_t events = 0;         // events the clock took (every tasklet's, kExit included)
  uint64_t events_shared = 0;  // of them, those another DPU's clock had already timed (LaunchTree)
  timing::DpuTrace trace;  // when recorded
};

// A kernel's symbols (a handful): found by a scan that compares lengths first, faster than a tree for the lookups a
// kernel makes at every launch of every tasklet.
class SymbolTable {
 public:
  struct Placement {
    uint64_t offset = 0;
    uint64_t bytes = 0;
  };
  void Clear() { entries_.clear(); }
  // False when the name is taken.
  bool Add(std::string_view name, Placement placement);
  const Placement* Find(std::string_view name) const {
    for (const Entry& e : entries_) {
      if (e.name.size() == name.size() && std::memcmp(e.name.data(), name.data(), name.size()) == 0)
        return &e.placement;
    }
    return nullptr;
  }

 private:
  struct Entry {
    std::string name;
    Placement placement;
  };
  std::vector<Entry> entries_;
};

class Dpu {
 public:
  Dpu(const HardwareProfile& profile, uint32_t index);

  void Load(const KernelSpec& spec, uint32_t tasklets);
  struct LaunchOptions {
    uint64_t shuffle_seed = 0;  // 0: none; else simultaneous events in a seeded random order
    bool record = false;        // keep the events in the result's trace
    Scheduler scheduler = Scheduler::kBatched;
    // The launch of the DPU set this DPU's launch is part of (0: none): with the batched scheduler, DPUs of one
    // launch whose tasklets do the same events (the same issue slots, DMAs and synchronization, in the same order)
    // share their clock's work (LaunchTree).
    uint64_t launch_id = 0;
    bool share_clock = false;  // worth trying: the host thread runs several DPUs of the launch
  };
  // Runs every tasklet to its end in the order of the modeled clock.
  DpuLaunchResult Launch(Kernel& kernel, const LaunchOptions& options);

  // Host transfers (validated: symbol known, bounds, UPMEM alignment).
  void HostWrite(std::string_view symbol, uint64_t offset, const void* source, uint64_t bytes);
  void HostRead(std::string_view symbol, uint64_t offset, void* destination, uint64_t bytes);
  void CheckHostAccess(std::string_view symbol, uint64_t offset, uint64_t bytes, const char* verb) const;
  uint64_t HostMemoryBytes() const { return mram_.backed_bytes() + wram_.size(); }
  const std::string& kernel_name() const { return kernel_name_; }
  uint32_t index() const { return index_; }

  // Services for Tasklet.
  void* WramSymbol(const Tasklet& t, std::string_view symbol, uint32_t min_bytes);
  void* MemAlloc(const Tasklet& t, uint32_t bytes);
  void MemReset() { heap_top_ = heap_start_; }
  uint32_t WramAddress(const Tasklet& t, const void* p) const;
  void* WramAtAddress(const Tasklet& t, uint32_t address, uint32_t bytes);
  uint64_t MramSymbol(const Tasklet& t, std::string_view symbol) const;
  uint64_t mram_heap() const { return mram_heap_start_; }
  void Dma(Tasklet& t, bool read, uint64_t mram_address, void* wram, uint32_t bytes);
  uint32_t RuntimeDmaBytes(uint64_t bytes);  // Tasklet::RuntimeDmaBytes
  // Ends the tasklet's run of instructions with `event`. The tasklet goes on at once if the event does not block
  // and the batched scheduler runs, else when the modeled clock has taken its events. Returns the event's result
  // (timing::DpuClock::Result; 0 for an event that does not block).
  uint64_t Event(Tasklet& t, const timing::Event& event);
  // Each mutex's holder this launch (its tasklet + 1; 0: free): mutex_unlock by another tasklet is an error, as the
  // SDK's mutexes are the holder's to release. Kept here, not in the program's WRAM (the SDK's mutex is one byte).
  uint8_t& MutexHolder(uint32_t mutex) { return mutex_holders_[mutex % mutex_holders_.size()]; }
  [[noreturn]] void Fail(const Tasklet* t, const std::string& what) const;
  const HardwareProfile& profile() const { return profile_; }

 private:
  using Placement = SymbolTable::Placement;
  friend class TaskletFiber;
  // Takes the running tasklet's counts since its previous event: its issue slots.
  double Harvest();
  void Yield(Tasklet& t);
  // Queues `event` (with the issue slots counted since the previous one) for the clock.
  void Queue(TaskletRun& run, const timing::Event& event);
  // Runs the tasklet's kernel to its end on its fiber; an exception other than an abort is kept in run.error.
  void RunTasklet(TaskletRun& run);
  // Ends every suspended tasklet by resuming it with `aborting_` set (Yield then throws TaskletAbort, which
  // unwinds the tasklet's stack), so no fiber is destroyed while suspended.
  void AbortSuspended(std::vector<TaskletRun>& runs);
  [[noreturn]] void AbortLaunch(std::vector<TaskletRun>& runs, const std::string& what);
  // Takes the tasklets' events down the tree as long as a path has them; returns the node reached, with its path
  // from the root (the nodes after the root) in `path`.
  uint32_t FollowTree(const LaunchTree& tree, std::vector<TaskletRun>& runs, bool record, std::vector<uint32_t>& path);

  const HardwareProfile& profile_;
  timing::ClockParams clock_params_;
  std::array<double, kCountedOps> op_slots_;  // the profile's issue slots per op, padded with zeros
  uint32_t index_;
  std::string kernel_name_;
  uint32_t tasklets_ = 0;
  std::vector<int32_t> semaphores_;
  LazyMemory mram_;
  std::vector<uint8_t, LowAddressAllocator<uint8_t>> wram_;
  std::array<uint8_t, timing::kMaxSyncObjects> mutex_holders_{};
  SymbolTable wram_symbols_;
  SymbolTable mram_symbols_;
  uint64_t heap_start_ = 0, heap_top_ = 0, heap_end_ = 0;
  uint64_t heap_declared_ = 0;  // tasklets x KernelSpec::heap_bytes_per_tasklet (0: undeclared)
  uint64_t mram_heap_start_ = 0;
  // Per launch.
  std::vector<TaskletRun>* runs_ = nullptr;
  timing::DpuClock* clock_ = nullptr;
  bool aborting_ = false;
  DpuLaunchResult* result_ = nullptr;
  bool run_ahead_ = true;          // Scheduler::kBatched
  const uint64_t* logged_result_ = nullptr;  // while following a LaunchTree: the result a resumed tasklet finds
};

}  // namespace pimopt::pim
