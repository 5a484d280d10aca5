// Private: what the PrIM host programs share: PrIM's timers as result columns, the emulator's host verbs that
// record what they time, PrIM's helpers (divceil, roundup, rand), and one entry point per benchmark.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "pimopt/pim/kernel.h"
#include "pimopt/pim/prim.h"
#include "pimopt/pim/system.h"

namespace pimopt::pim::prim {

// PrIM's timers, as the tags of the transfers they time in the DPU set's log (RunResult::transfers).
enum Column : uint32_t {
  kUntimed = 0,
  kCpuToDpu = kTransferColumnCpuToDpu,
  kDpuToCpu = kTransferColumnDpuToCpu,
  kDpuToDpu = kTransferColumnDpuToDpu
};

// PrIM's support macros.
inline uint64_t DivCeil(uint64_t n, uint64_t m) { return (n - 1) / m + 1; }
inline uint64_t RoundUp(uint64_t n, uint64_t m) { return (n / m) * m + m; }
// SEL's, UNI's and SCAN's host: each DPU's share of the input, rounded up to whole rounds of `per_round` elements
// (every tasklet one block).
inline uint64_t PaddedShare(uint64_t input_size, uint32_t dpus, uint64_t per_round) {
  const uint64_t share = DivCeil(input_size, dpus);
  return share % per_round != 0 ? RoundUp(share, per_round) : share;
}

// A deterministic stand-in for the C library's rand() after srand(0): uniform in [0, 2^31). The benchmarks' timing
// depends on their data only through the software multiply's and divide's operand lengths and through branches,
// which see the distribution, not the exact values.
class Rand {
 public:
  explicit Rand(uint64_t seed = 0) : s_(seed * 0x9E3779B97F4A7C15ull + 1) {}
  int32_t operator()() {
    s_ ^= s_ << 13;
    s_ ^= s_ >> 7;
    s_ ^= s_ << 17;
    return static_cast<int32_t>(s_ >> 33);
  }

 private:
  uint64_t s_;
};

// One run of a PrIM host program on the emulator: the DPU set, and the modeled seconds of every verb added to the
// column of the PrIM timer around it.
class Host {
 public:
  Host(const RunRequest& request, const HardwareProfile& profile, const std::string& benchmark);
  uint32_t dpus() const { return request_.dpus; }
  uint32_t tasklets() const { return request_.tasklets; }
  DpuSet& set() { return *set_; }
  // Loads the DPU program `program` (src/pim/validation/prim/dpu/PROGRAM.c, for the run's tasklets), or with
  // --kernels port the operand-type port `port` (a run may load several, as TRNS does: Reallocate).
  void Load(const std::string& program, std::shared_ptr<Kernel> port);
  // dpu_free + dpu_alloc of `dpus` DPUs (TRNS's last round), then the kernel again.
  void Reallocate(uint32_t dpus);

  // dpu_prepare_xfer per DPU + dpu_push_xfer: `buffers[d]` holds `bytes` for DPU d (a null buffer skips the DPU).
  void Push(Column column, std::string_view symbol, uint64_t offset, uint64_t bytes,
            const std::vector<const void*>& buffers);
  void Pull(Column column, std::string_view symbol, uint64_t offset, uint64_t bytes, const std::vector<void*>& buffers);
  void Broadcast(Column column, std::string_view symbol, uint64_t offset, const void* source, uint64_t bytes);
  // dpu_copy_to / dpu_copy_from of one DPU.
  void CopyTo(Column column, uint32_t dpu, std::string_view symbol, uint64_t offset, const void* source,
              uint64_t bytes);
  void CopyFrom(Column column, uint32_t dpu, std::string_view symbol, uint64_t offset, void* destination,
                uint64_t bytes);
  // dpu_launch(DPU_SYNCHRONOUS); `kernel_timer`: inside the program's kernel timer.
  void Launch(bool kernel_timer = true);

  // The run's result; `check` says what was compared with the host reference.
  RunResult Finish(std::string check);

 private:
  void AddTransfer(Column column, double seconds);
  uint32_t KeepTrace(timing::DpuTrace&& trace);

  RunRequest request_;
  const HardwareProfile& profile_;
  std::unique_ptr<PimSystem> system_;
  std::unique_ptr<DpuSet> set_;
  MachineLog released_log_;  // the transfers of the sets Reallocate replaced
  std::shared_ptr<Kernel> kernel_;
  RunResult result_;
  std::vector<uint64_t> trace_hashes_;
};

// A failed check against the host reference: PimError naming the benchmark and what differed.
[[noreturn]] void Mismatch(const std::string& benchmark, const std::string& what);

RunResult RunVa(const RunRequest& r, const HardwareProfile& p);
RunResult RunRed(const RunRequest& r, const HardwareProfile& p);
RunResult RunSel(const RunRequest& r, const HardwareProfile& p);
RunResult RunUni(const RunRequest& r, const HardwareProfile& p);
RunResult RunHstS(const RunRequest& r, const HardwareProfile& p);
RunResult RunHstL(const RunRequest& r, const HardwareProfile& p);
RunResult RunTs(const RunRequest& r, const HardwareProfile& p);
RunResult RunScanSsa(const RunRequest& r, const HardwareProfile& p);
RunResult RunScanRss(const RunRequest& r, const HardwareProfile& p);
RunResult RunTrns(const RunRequest& r, const HardwareProfile& p);
RunResult RunMlp(const RunRequest& r, const HardwareProfile& p);
RunResult RunGemv(const RunRequest& r, const HardwareProfile& p);
RunResult RunBs(const RunRequest& r, const HardwareProfile& p);

}  // namespace pimopt::pim::prim
