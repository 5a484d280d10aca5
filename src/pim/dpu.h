// Private: one emulated DPU (lazily backed MRAM, WRAM, symbols, the tasklet scheduler and its time accounting).
#pragma once

#include <array>
#include <boost/context/fiber.hpp>
#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "pimopt/pim/kernel.h"
#include "pimopt/pim/system.h"
#include "pimopt/pim/timing.h"

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

// One tasklet's part of a launch: its job, the fiber it runs on, and the event it stopped at.
struct TaskletRun {
  Dpu* dpu = nullptr;
  Kernel* kernel = nullptr;
  Tasklet* tasklet = nullptr;
  TaskletFiber* fiber = nullptr;    // reused across launches on the host thread (dpu.cc)
  boost::context::fiber scheduler;  // the scheduler's continuation while this tasklet runs
  bool done = false;                // Main returned or threw
  std::exception_ptr error;
  double pending_slots = 0;  // issue slots since the previous event
  timing::Event pending;     // the event the tasklet stopped at
  // The scheduler's stack bounds for AddressSanitizer's fiber-switch annotations and its fiber for
  // ThreadSanitizer's (unused otherwise).
  const void* scheduler_bottom = nullptr;
  size_t scheduler_size = 0;
  void* tsan_scheduler = nullptr;
};

struct DpuLaunchResult {
  DpuCycles cycles;
  std::array<uint64_t, kNumOps> op_counts{};
  double issue_slots = 0;
  uint64_t mram_read_bytes = 0;
  uint64_t mram_write_bytes = 0;
  uint64_t dmas = 0;
  uint64_t unaligned_dmas = 0;
  uint64_t resized_dmas = 0;
  uint64_t barrier_waits = 0;
  uint64_t lock_contentions = 0;
  timing::DpuTrace trace;  // when recorded
};

class Dpu {
 public:
  Dpu(const HardwareProfile& profile, uint32_t index);

  void Load(const KernelSpec& spec, uint32_t tasklets);
  // Runs every tasklet to its end in the order of the modeled clock; `shuffle_seed` (0: none) shuffles
  // simultaneous events; `record` keeps the events in the result's trace.
  DpuLaunchResult Launch(Kernel& kernel, uint64_t shuffle_seed = 0, bool record = false);

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
  // Ends the tasklet's run of instructions with `event`: it resumes when the modeled clock says so. Returns the
  // event's result (timing::DpuClock::Result).
  uint64_t Event(Tasklet& t, const timing::Event& event);
  [[noreturn]] void Fail(const Tasklet* t, const std::string& what) const;
  const HardwareProfile& profile() const { return profile_; }

 private:
  struct Placement {
    uint64_t offset = 0;
    uint64_t bytes = 0;
  };
  friend class TaskletFiber;
  // Takes the running tasklet's counts since its previous event: its issue slots.
  double Harvest();
  void Yield(Tasklet& t);
  // Runs the tasklet's kernel to its end on its fiber; an exception other than an abort is kept in run.error.
  void RunTasklet(TaskletRun& run);
  // Ends every suspended tasklet by resuming it with `aborting_` set (Yield then throws TaskletAbort, which
  // unwinds the tasklet's stack), so no fiber is destroyed while suspended.
  void AbortSuspended(std::vector<TaskletRun>& runs);
  [[noreturn]] void AbortLaunch(std::vector<TaskletRun>& runs, const std::string& what);

  const HardwareProfile& profile_;
  timing::ClockParams clock_params_;
  uint32_t index_;
  std::string kernel_name_;
  uint32_t tasklets_ = 0;
  std::vector<int32_t> semaphores_;
  LazyMemory mram_;
  std::vector<uint8_t> wram_;
  std::map<std::string, Placement, std::less<>> wram_symbols_;
  std::map<std::string, Placement, std::less<>> mram_symbols_;
  uint64_t heap_start_ = 0, heap_top_ = 0, heap_end_ = 0;
  uint64_t heap_declared_ = 0;  // tasklets x KernelSpec::heap_bytes_per_tasklet (0: undeclared)
  uint64_t mram_heap_start_ = 0;
  // Per launch.
  std::vector<TaskletRun>* runs_ = nullptr;
  timing::DpuClock* clock_ = nullptr;
  bool aborting_ = false;
  DpuLaunchResult* result_ = nullptr;
  bool record_ = false;
};

}  // namespace pimopt::pim
