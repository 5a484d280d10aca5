// The emulator as a PimMachine (machine.h): every verb forwards to the emulated DPU set, every time is modeled.
#include "pimopt/pim/machine.h"

namespace pimopt::pim {
namespace {

class EmulatedMachine final : public PimMachine {
 public:
  EmulatedMachine(const HardwareProfile& profile, uint32_t dpus, const EmulatedMachineOptions& options)
      : system_(profile, options.host_threads), dpus_(system_.Allocate(dpus)) {
    dpus_.SetScheduler(options.scheduler);
  }
  const HardwareProfile& profile() const override { return system_.profile(); }
  uint32_t size() const override { return dpus_.size(); }
  void Load(const std::string& kernel_name, uint32_t tasklets) override { dpus_.Load(kernel_name, tasklets); }
  void PrepareXfer(uint32_t dpu, void* buffer, uint64_t buffer_bytes) override {
    dpus_.PrepareXfer(dpu, buffer, buffer_bytes);
  }
  MachineTime PushXfer(XferDirection direction, std::string_view symbol, uint64_t offset, uint64_t bytes,
                       uint32_t tag) override {
    return {dpus_.PushXfer(direction, symbol, offset, bytes, tag), false};
  }
  MachineTime PullEncoded(std::string_view symbol, uint64_t offset, uint64_t bytes, uint64_t encoded_bytes,
                          uint32_t tag) override {
    return {dpus_.PushXfer(XferDirection::kFromDpu, symbol, offset, bytes, tag, encoded_bytes), false};
  }
  MachineTime BroadcastTo(std::string_view symbol, uint64_t offset, const void* source, uint64_t bytes,
                          uint32_t tag) override {
    return {dpus_.BroadcastTo(symbol, offset, source, bytes, tag), false};
  }
  MachineTime CopyFrom(uint32_t dpu, std::string_view symbol, uint64_t offset, void* destination, uint64_t bytes,
                       uint32_t tag) override {
    return {dpus_.CopyFrom(dpu, symbol, offset, destination, bytes, tag), false};
  }
  const MachineLog& log() const override { return dpus_.log(); }
  MachineLaunch Launch() override { return {dpus_.Launch(), false}; }

 private:
  PimSystem system_;  // owns the profile and the host threads the DPUs run on
  DpuSet dpus_;
};

}  // namespace

std::unique_ptr<PimMachine> AllocateEmulatedMachine(const HardwareProfile& profile, uint32_t dpus,
                                                    EmulatedMachineOptions options) {
  return std::make_unique<EmulatedMachine>(profile, dpus, options);
}

}  // namespace pimopt::pim
