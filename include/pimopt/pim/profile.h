// Hardware profiles of a UPMEM-like PIM system: sizes, clock, and every constant of the timing model, each with
// its source. A profile is data: swapping profiles changes modeled time, never functional results.
//
// Sources (ids of shared/docs/upmem-model.md section 0): S1 PrIM paper (Gomez-Luna et al. 2022), S3 uPIMulator,
// S5/S7 UPMEM SDK sources and docs, S8 upmem-sdk-light measurements (2,048 DPUs, SDK 2023.2), S9 launch/transfer
// latencies (4 ranks), S13 Hot Chips 2019. "(inferred)" marks values derived in upmem-model.md, not measured.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace pimopt::pim {

// Instruction classes a kernel charges. Costs are issue slots (one slot = one pipeline issue) in the profile.
enum class Op : uint8_t {
  kInt32Add,    // add/sub/compare/move (also address arithmetic)
  kInt32Logic,  // and/or/xor/not
  kInt32Shift,
  kInt64Add,
  kInt64Logic,
  kInt64Shift,
  kMul8,      // native 8x8 -> 16 bit multiply
  kInt32Mul,  // __mulsi3, operand-independent average (Tasklet::Mul32 charges the operand-dependent cost)
  kInt32Div,
  kInt64Mul,
  kInt64Div,
  kFloatAdd,
  kFloatSub,
  kFloatMul,
  kFloatDiv,
  kDoubleAdd,
  kDoubleSub,
  kDoubleMul,
  kDoubleDiv,
  kFloatConvert,  // int <-> float conversions and float compares
  kWramLoad,
  kWramStore,
  kBranch,
  kCount
};
inline constexpr size_t kNumOps = static_cast<size_t>(Op::kCount);
const char* OpName(Op op);

struct HardwareProfile {
  std::string name;
  // --- organization [S1, S7, S13]
  uint32_t num_dpus = 2048;
  uint32_t dpus_per_rank = 64;          // 8 chips x 8 DPUs [S7]
  double dpu_frequency_hz = 350e6;      // v1A nominal; PrIM 2,556-DPU system [S1]
  uint64_t mram_bytes = 64ull << 20;    // per DPU [S7]
  uint32_t wram_bytes = 64u << 10;      // per DPU [S7]
  uint32_t max_tasklets = 24;           // v1A [S7]
  uint32_t default_stack_bytes = 1024;  // WRAM stack reserved per tasklet (SDK STACK_SIZE_DEFAULT) [S5]
  // --- pipeline [S3 thread_scheduler.go, S13]
  uint32_t revolver_cycles = 11;  // a tasklet issues at most every 11 cycles: IPC = min(1, n/11)
  // Issue slots per op class (upmem-model.md 2.2 and 8.1: PrIM saturated MOPS at 350 MHz -> 350/MOPS - 5 loop
  // instructions; 32-bit mul/div from the SDK soft routines [S5]).
  std::array<double, kNumOps> op_slots{};
  double mul32_setup_slots = 8;  // __mulsi3: setup + call/return; + bitlen(smaller operand) [S5] (inferred)
  // --- MRAM <-> WRAM DMA [S1 MRAM-Latency, corroborated by S11]: latency = alpha + beta * bytes
  double dma_read_alpha_cycles = 77;
  double dma_write_alpha_cycles = 61;
  double dma_beta_cycles_per_byte = 0.5;
  double dma_occupancy_alpha_fraction =
      1.0;  // engine occupancy = fraction*alpha + beta*bytes (1 = fully serialized, upmem-model 8.2)
  uint32_t dma_max_bytes = 2048;  // [S5 mram.h]
  uint32_t dma_min_bytes = 8;
  // Imperfect overlap of DMA and pipeline: T = max(issue, dma, chain) + kappa * min(issue, dma)
  // (upmem-model 8.3, calibrated on PrIM VA: 10.26 cycles/element measured [S3 input.xlsx]).
  double overlap_kappa = 0.55;
  // --- synchronization [S5 barrier.c, mutex.h] (inferred costs, upmem-model 8.1)
  double barrier_slots_per_tasklet = 17.5;  // serialized through the barrier lock, 11 cycles per slot
  double mutex_slots = 1;                   // lock and unlock, uncontended
  double mutex_contention_cycles = 22;      // extra cycles per contended lock (two spin retries) (inferred)
  // --- host <-> DPU transfers (upmem-model 4.2, 4.3, 8.4)
  double serial_to_dpu_bytes_per_s = 0.33e9;         // 1 DPU dpu_copy_to [S1, S11]
  double serial_from_dpu_bytes_per_s = 0.12e9;       // 1 DPU dpu_copy_from [S1, S11]
  double serial_call_overhead_s = 30e-6;             // 4 KB serial copy ~30 us [S11]
  double rank_to_dpu_bytes_per_s = 6.68e9;           // 64 DPUs, parallel push [S1]
  double rank_from_dpu_bytes_per_s = 4.74e9;         // [S1]
  double rank_broadcast_bytes_per_s = 16.88e9;       // bytes delivered [S1]
  double max_to_dpu_bytes_per_s = 22.6e9;            // many-rank cap, 32 ranks SDK 2023.2 [S8]
  double max_from_dpu_bytes_per_s = 11.1e9;          // [S8]
  double max_broadcast_bytes_per_s = 8 * 22.6e9;     // (inferred) broadcast writes one copy per chip group
  double push_to_dpu_overhead_s = 60e-6;             // per parallel push, 1 rank [S9] ...
  double push_to_dpu_overhead_per_rank_s = 12e-6;    // ... growing to ~0.45 ms at 32 ranks [S8] (inferred fit)
  double push_from_dpu_overhead_s = 150e-6;          // [S9]
  double push_from_dpu_overhead_per_rank_s = 28e-6;  // ~1 ms at 32 ranks [S8] (inferred fit)
  double launch_overhead_s = 50e-6;                  // dpu_launch(SYNC) of a trivial kernel: 183 us at 4 ranks [S9]
  double launch_overhead_per_rank_s = 33e-6;         // (inferred fit: 50 + 4 x 33 = 182 us)
  // --- energy [S13]: 1.2 W per chip of 8 busy DPUs
  double dpu_active_power_w = 0.15;

  uint32_t num_ranks() const { return (num_dpus + dpus_per_rank - 1) / dpus_per_rank; }
  double slots(Op op) const { return op_slots[static_cast<size_t>(op)]; }
  // Throws InputError naming the field when a value is out of range.
  void Validate() const;
};

// Named presets: "pim-opt" (2,048 DPUs, 350 MHz: the PIM-Opt server), "prim-2556" (2,556 DPUs, 350 MHz),
// "prim-640" (640 DPUs, 267 MHz), "upmem-2524" (2,524 DPUs, 425 MHz), and what-if designs: "future-fpu"
// (hardware FPU and 32-bit multiplier), "future-wide" (500 MHz, 256 KB WRAM, 4x host links).
HardwareProfile MakeProfile(const std::string& name);
std::vector<std::string> ProfileNames();
// Applies "field=value,field=value" overrides (field names as in HardwareProfile, op costs as "slots.<op>").
void ApplyOverrides(HardwareProfile& profile, const std::string& overrides);

}  // namespace pimopt::pim
