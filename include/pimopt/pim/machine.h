// The machine seam: the verbs a program needs of a PIM system, each returning its time and whether that time was
// modeled or measured. They are the UPMEM SDK's host verbs one to one (docs/pim-emulator.md "A hardware machine"):
//   AllocateEmulatedMachine / a hardware machine's constructor   dpu_alloc(n, ...)
//   Load(kernel name, tasklets)                                  dpu_load(set, binary, ...) (NR_TASKLETS at build)
//   PrepareXfer(dpu, buffer, bytes)                              dpu_prepare_xfer(dpu, buffer)
//   PushXfer(direction, symbol, offset, bytes, tag)              dpu_push_xfer(set, DPU_XFER_TO/FROM_DPU, ...)
//   BroadcastTo(symbol, offset, source, bytes, tag)              dpu_broadcast_to(set, symbol, offset, ...)
//   CopyFrom(dpu, symbol, offset, destination, bytes, tag)       dpu_copy_from(dpu, symbol, offset, ...)
//   Launch()                                                     dpu_launch(set, DPU_SYNCHRONOUS)
// and a log of every transfer it made (log(): what re-timing them at another DPU count or profile needs). One verb
// is the emulated machine's own: PullEncoded, a pull the modeled machine makes in fewer bytes than the emulator's.
// The emulator (system.h) is the one implementation here; a PIM backend reaches DPUs only through this interface.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "pimopt/pim/machine_log.h"
#include "pimopt/pim/system.h"

namespace pimopt::pim {

// A verb's time: modeled by the emulator's timing model, or measured on hardware.
struct MachineTime {
  double seconds = 0;
  bool measured = false;
};

// A launch: its statistics (the emulator models every field; a hardware machine measures the kernel's time and
// leaves what it cannot observe, such as the slowest DPU's cycle split, at zero) and whether they were measured.
struct MachineLaunch {
  LaunchStats stats;
  bool measured = false;
};

class PimMachine {
 public:
  virtual ~PimMachine() = default;
  virtual const HardwareProfile& profile() const = 0;
  virtual uint32_t size() const = 0;  // the DPUs allocated
  // Loads the kernel registered under `kernel_name`, or the compiled DPU program at that path (NAME.dpu), on every
  // DPU with `tasklets` tasklets.
  virtual void Load(const std::string& kernel_name, uint32_t tasklets) = 0;
  // The host buffer of one DPU for the next PushXfer (it must hold at least the pushed length).
  virtual void PrepareXfer(uint32_t dpu, void* buffer, uint64_t buffer_bytes) = 0;
  // The transfers record themselves in log() under `tag`: the caller's number for what the transfer served.
  // `bytes` to / from every DPU with a prepared buffer, in one parallel transfer.
  virtual MachineTime PushXfer(XferDirection direction, std::string_view symbol, uint64_t offset, uint64_t bytes,
                               uint32_t tag) = 0;
  // A parallel pull that the modeled machine makes encoded, `encoded_bytes` per DPU (compacted (index, value) pairs,
  // quantized deltas: a capability of the emulated machine, not an SDK verb): the emulator copies the `bytes` per
  // DPU its host code decodes from; the time and the log are the encoded pull's.
  virtual MachineTime PullEncoded(std::string_view symbol, uint64_t offset, uint64_t bytes, uint64_t encoded_bytes,
                                  uint32_t tag) = 0;
  // The same buffer to every DPU.
  virtual MachineTime BroadcastTo(std::string_view symbol, uint64_t offset, const void* source, uint64_t bytes,
                                  uint32_t tag) = 0;
  // A serial copy from one DPU.
  virtual MachineTime CopyFrom(uint32_t dpu, std::string_view symbol, uint64_t offset, void* destination,
                               uint64_t bytes, uint32_t tag) = 0;
  // Every transfer so far, by tag and shape (machine_log.h): re-timed under another profile or DPU count with
  // ModelTransferSeconds.
  virtual const MachineLog& log() const = 0;
  // Runs the loaded kernel on every DPU and waits for it.
  virtual MachineLaunch Launch() = 0;
};

// How the emulator runs (never what it computes or models).
struct EmulatedMachineOptions {
  int host_threads = 0;  // 0: all cores
  Scheduler scheduler = Scheduler::kBatched;
};

// `dpus` DPUs of the emulated system `profile` (at most the profile's count: ConfigError naming --dpus otherwise).
std::unique_ptr<PimMachine> AllocateEmulatedMachine(const HardwareProfile& profile, uint32_t dpus,
                                                    EmulatedMachineOptions options = {});

}  // namespace pimopt::pim
