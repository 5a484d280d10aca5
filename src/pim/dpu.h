// Private: one emulated DPU (lazily backed MRAM, WRAM, symbols, the tasklet scheduler and its time accounting).
#pragma once

#include <boost/context/fiber.hpp>
#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "pimopt/pim/kernel.h"
#include "pimopt/pim/system.h"

namespace pimopt::pim {

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

// One tasklet's part of a launch: its job, its scheduling state and the fiber it runs on.
struct TaskletRun {
  enum class State { kRunnable, kBarrier, kMutex, kDone };
  Dpu* dpu = nullptr;
  Kernel* kernel = nullptr;
  Tasklet* tasklet = nullptr;
  TaskletFiber* fiber = nullptr;    // reused across launches on the host thread (dpu.cc)
  boost::context::fiber scheduler;  // the scheduler's continuation while this tasklet runs
  State state = State::kRunnable;
  uint32_t waiting_on = 0;
  std::exception_ptr error;
  // The scheduler's stack bounds for AddressSanitizer's fiber-switch annotations and its fiber for
  // ThreadSanitizer's (unused otherwise).
  const void* scheduler_bottom = nullptr;
  size_t scheduler_size = 0;
  void* tsan_scheduler = nullptr;
};

struct DpuLaunchResult {
  DpuCycles cycles;
  uint64_t issue_slots = 0;
  uint64_t mram_read_bytes = 0;
  uint64_t mram_write_bytes = 0;
  uint64_t barrier_waits = 0;
};

class Dpu {
 public:
  Dpu(const HardwareProfile& profile, uint32_t index);

  void Load(const KernelSpec& spec, uint32_t tasklets);
  DpuLaunchResult Launch(Kernel& kernel);

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
  uint64_t MramSymbol(const Tasklet& t, std::string_view symbol) const;
  uint64_t mram_heap() const { return mram_heap_start_; }
  void Dma(Tasklet& t, bool read, uint64_t mram_address, void* wram, uint32_t bytes);
  void Barrier(Tasklet& t, uint32_t barrier);
  void MutexLock(Tasklet& t, uint32_t mutex);
  void MutexUnlock(Tasklet& t, uint32_t mutex);
  [[noreturn]] void Fail(const Tasklet* t, const std::string& what) const;
  const HardwareProfile& profile() const { return profile_; }

 private:
  struct Placement {
    uint64_t offset = 0;
    uint64_t bytes = 0;
  };
  friend class TaskletFiber;
  void Yield(Tasklet& t);
  // Runs the tasklet's kernel to its end on its fiber; an exception other than an abort is kept in run.error.
  void RunTasklet(TaskletRun& run);
  // Ends every suspended tasklet by resuming it with `aborting_` set (Yield then throws TaskletAbort, which
  // unwinds the tasklet's stack), so no fiber is destroyed while suspended.
  void AbortSuspended(std::vector<TaskletRun>& runs);
  DpuCycles Time(const std::vector<Tasklet>& tasklets) const;

  const HardwareProfile& profile_;
  uint32_t index_;
  std::string kernel_name_;
  uint32_t tasklets_ = 0;
  LazyMemory mram_;
  std::vector<uint8_t> wram_;
  std::map<std::string, Placement, std::less<>> wram_symbols_;
  std::map<std::string, Placement, std::less<>> mram_symbols_;
  uint64_t heap_start_ = 0, heap_top_ = 0, heap_end_ = 0;
  uint64_t heap_declared_ = 0;  // tasklets x KernelSpec::heap_bytes_per_tasklet (0: undeclared)
  uint64_t mram_heap_start_ = 0;
  // Per launch.
  std::vector<TaskletRun>* runs_ = nullptr;
  bool aborting_ = false;
  std::vector<uint32_t> barrier_arrived_;
  std::map<uint32_t, int> mutex_owner_;  // mutex -> tasklet holding it
  double dma_occupancy_cycles_ = 0;
  uint64_t barrier_episodes_ = 0;
  uint64_t barrier_waits_ = 0;
  uint64_t mutex_contentions_ = 0;
  uint64_t mram_read_bytes_ = 0, mram_write_bytes_ = 0;
};

}  // namespace pimopt::pim
