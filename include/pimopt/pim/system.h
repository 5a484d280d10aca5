// The host side of pimopt's UPMEM emulator, mirroring the UPMEM host library's verbs ([SDK-docs]):
// allocate DPUs, load a kernel, launch it on every DPU of the set, copy to / from one DPU, prepared parallel
// push / pull (the same length for every DPU), broadcast. Every verb returns or records the time the real machine
// would take (modeled seconds, from the profile); functional results never depend on the profile or on the
// number of host threads.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "pimopt/pim/kernel.h"
#include "pimopt/pim/machine_log.h"
#include "pimopt/pim/profile.h"
#include "pimopt/pim/timing.h"

namespace pimopt {
class ThreadPool;
}

namespace pimopt::pim {

// How the emulator runs a launch's tasklets. Both give the same modeled cycles, bit for bit, and the same results
// for a kernel without races (tests/pim/scheduler_test.cc runs every PrIM port and the training kernel under both).
enum class Scheduler : uint8_t {
  // A tasklet's code runs on past the events that do not block (DMAs, mutex unlocks, semaphore gives:
  // timing::EventBlocks) and queues them; it gives up its fiber where an order or a result matters.
  kBatched,
  // A tasklet stops at every event, the clock times it, then the tasklet it says is next runs: the reference.
  kReference,
};
const char* SchedulerName(Scheduler scheduler);

// The MRAM heap symbol (the SDK's DPU_MRAM_HEAP_POINTER_NAME): MRAM after the kernel's MRAM variables.
inline constexpr std::string_view kMramHeapSymbol = "__sys_used_mram_end";
// The SDK runtime's WRAM variable holding the DPU's frequency in Hz (perfcounter.h): a program that declares it finds
// the profile's dpu_frequency_hz there, as the host does by its name.
inline constexpr std::string_view kClocksPerSecSymbol = "CLOCKS_PER_SEC";

struct LaunchStats {
  std::string kernel;
  uint32_t dpus = 0;
  uint32_t tasklets = 0;
  DpuCycles slowest;               // the DPU that bounds the launch
  std::vector<DpuCycles> per_dpu;  // every DPU's cycles, in DPU order
  double mean_total_cycles = 0;
  double kernel_s = 0;                        // slowest DPU's cycles / frequency
  double overhead_s = 0;                      // host launch overhead
  double energy_j = 0;                        // DPU active power x each DPU's busy time
  uint64_t issue_slots = 0;                   // all DPUs
  std::array<uint64_t, kNumOps> op_counts{};  // all DPUs: constructs counted, by class
  uint64_t mram_read_bytes = 0;
  uint64_t mram_write_bytes = 0;
  uint64_t dmas = 0;
  uint64_t unaligned_dmas = 0;  // DMAs whose address had low bits set (ignored, as the DPU does)
  uint64_t resized_dmas = 0;    // DMAs whose run-time size the DMA's 8-bit length field changed (Tasklet::MramRead)
  uint64_t barrier_waits = 0;
  uint64_t lock_contentions = 0;         // acquires that found the lock taken (user mutexes and the SDK's own)
  uint64_t events = 0;                   // all DPUs: events their clocks took (every tasklet's end included)
  uint64_t events_shared = 0;            // of them, those a DPU took from the clock of another (dpu.h LaunchTree)
  double host_wall_s = 0;                // real time the emulation took
  std::vector<timing::DpuTrace> traces;  // per DPU, when the set records traces (DpuSet::RecordTraces)
};

// Totals over the life of a DpuSet (modeled seconds by phase, bytes by direction).
struct SetStats {
  double to_dpu_s = 0;
  double from_dpu_s = 0;
  double kernel_s = 0;
  double launch_overhead_s = 0;
  double energy_j = 0;
  uint64_t to_dpu_bytes = 0;
  uint64_t from_dpu_bytes = 0;
  uint64_t launches = 0;
  uint64_t transfers = 0;
  double host_wall_s = 0;
};

class DpuSet {
 public:
  DpuSet(const HardwareProfile& profile, uint32_t num_dpus, ThreadPool& pool);
  ~DpuSet();
  DpuSet(DpuSet&&) noexcept;
  DpuSet& operator=(DpuSet&&) noexcept;

  uint32_t size() const;
  uint32_t num_ranks() const;
  const HardwareProfile& profile() const { return *profile_; }

  // Loads a kernel on every DPU (places its symbols, zeroes WRAM). `tasklets` = 0 keeps the spec's count.
  void Load(std::shared_ptr<Kernel> kernel, uint32_t tasklets = 0);
  // A name ending in .dpu is a compiled DPU program's path (LoadNativeProgram); any other a registered kernel.
  void Load(const std::string& kernel_name, uint32_t tasklets = 0);

  // Runs the loaded kernel on every DPU (synchronously) and returns its modeled time and statistics.
  LaunchStats Launch();
  // Runs it on DPUs first .. first + count - 1 only (the SDK's launch of one rank or DPU of an allocation); the others
  // keep their state. PimError for a range outside the set.
  LaunchStats Launch(uint32_t first, uint32_t count);

  // Every transfer verb below is recorded in the set's log() under `tag` (the caller's: what it served).
  // Serial copies to / from one DPU (dpu_copy_to / dpu_copy_from). Return modeled seconds.
  double CopyTo(uint32_t dpu, std::string_view symbol, uint64_t offset, const void* source, uint64_t bytes,
                uint32_t tag = 0);
  double CopyFrom(uint32_t dpu, std::string_view symbol, uint64_t offset, void* destination, uint64_t bytes,
                  uint32_t tag = 0);
  // dpu_prepare_xfer: the host buffer of one DPU for the next PushXfer (must hold at least the pushed length).
  void PrepareXfer(uint32_t dpu, void* buffer, uint64_t buffer_bytes);
  // dpu_push_xfer: `bytes` to / from every DPU with a prepared buffer, in one parallel transfer; clears the
  // prepared buffers (also when it fails). Returns modeled seconds. `modeled_bytes` (not 0): the modeled machine
  // moves that many bytes per DPU instead (an encoded pull: PimMachine::PullEncoded), as timed and logged.
  double PushXfer(XferDirection direction, std::string_view symbol, uint64_t offset, uint64_t bytes,
                  uint32_t tag = 0, uint64_t modeled_bytes = 0);
  // dpu_broadcast_to: the same buffer to every DPU. Returns modeled seconds.
  double BroadcastTo(std::string_view symbol, uint64_t offset, const void* source, uint64_t bytes,
                     uint32_t tag = 0);
  // The transfers this set made, by tag and shape (machine_log.h): what re-timing them under another profile or
  // DPU count needs.
  const MachineLog& log() const { return log_; }

  const SetStats& stats() const { return stats_; }
  // Tasklets that become ready at the same modeled cycle run in tasklet order; with a seed (not 0) in a seeded
  // random order instead, as are simultaneous lock hand-overs: a kernel whose results change with the seed has a
  // race (it relies on an order the DPU does not guarantee).
  void SetShuffleSeed(uint64_t seed) { shuffle_seed_ = seed; }
  // How launches run their tasklets (default: kBatched).
  void SetScheduler(Scheduler scheduler) { scheduler_ = scheduler; }
  Scheduler scheduler() const { return scheduler_; }
  // Launches keep every DPU's events in LaunchStats::traces.
  void RecordTraces(bool on) { record_traces_ = on; }
  // Host memory the emulated MRAM and WRAM actually occupy (MRAM is backed lazily, 64 KB pages on first write).
  uint64_t HostMemoryBytes() const;

 private:
  const HardwareProfile* profile_;
  ThreadPool* pool_;
  std::vector<std::unique_ptr<Dpu>> dpus_;
  std::shared_ptr<Kernel> kernel_;
  std::string kernel_name_;
  std::vector<std::pair<void*, uint64_t>> prepared_;
  SetStats stats_;
  uint64_t shuffle_seed_ = 0;
  bool record_traces_ = false;
  Scheduler scheduler_ = Scheduler::kBatched;
  MachineLog log_;
  // Times a transfer the set just made, records it, and adds it to the statistics.
  double Transferred(const TransferVerb& verb, uint32_t tag);
};

// Owns a profile and the host threads that run the DPUs.
class PimSystem {
 public:
  explicit PimSystem(HardwareProfile profile, int host_threads = 0);
  ~PimSystem();
  const HardwareProfile& profile() const { return profile_; }
  // dpu_alloc: exactly `num_dpus` DPUs (at most the profile's count).
  DpuSet Allocate(uint32_t num_dpus);
  DpuSet AllocateAll() { return Allocate(profile_.num_dpus); }

 private:
  HardwareProfile profile_;
  std::unique_ptr<ThreadPool> pool_;
};

}  // namespace pimopt::pim
