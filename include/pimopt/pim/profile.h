// Hardware profiles of a UPMEM-like PIM system: sizes, clock, and every constant of the timing model. A profile is
// data: swapping profiles changes modeled time, never functional results.
//
// Every field is declared once in ProfileFields() with its name (what --profile-set and `pimopt profile` use),
// unit, bounds, meaning and source (a key of docs/sources.md: [PrIM], [SDK], [uPIMulator], ...; "inferred" marks a
// value derived in docs/pim-emulator.md rather than measured). The declared defaults are UPMEM's v1A DPU at 350 MHz
// in the PIM-Opt server ("pim-opt"); the presets of ProfilePresets() are that base with some fields changed.
#pragma once

#include <array>
#include <cstdint>

#include "pimopt/pim/op.h"
#include <string>
#include <utility>
#include <vector>

#include "pimopt/core/params.h"

namespace pimopt::pim {

// The constructs a kernel's work is counted in: what the emulator's operand types (dpu_types.h) count
// automatically, and what Tasklet::Charge counts by hand. Each costs the profile's issue slots ("slots.<name>");
// docs/pim-emulator.md "What a construct costs" lists them with their sources.
// The operation classes the DPU's issue slots are priced by (Op, kNumOps, OpName): pimopt/pim/op.h.

// Which DPUs a what-if DPU <-> DPU link joins: none (today's hardware: every byte passes through the host), the DPUs of
// a chip, of a rank, or every DPU (within a rank through the DPUs' ports, across ranks through the ranks' ports).
enum class LinkScope : uint8_t { kNone, kChip, kRank, kSystem };

// The fields; their defaults, units and sources are in ProfileFields() (and `pimopt profile pim-opt` prints them).
struct HardwareProfile {
  HardwareProfile();  // the declared defaults, named "pim-opt"

  std::string name;
  // organization
  uint32_t num_dpus;
  uint32_t dpus_per_rank;
  double dpu_frequency_hz;
  uint64_t mram_bytes;  // per DPU
  uint32_t wram_bytes;  // per DPU
  uint32_t max_tasklets;
  uint32_t default_stack_bytes;  // WRAM stack reserved per tasklet
  // pipeline
  uint32_t revolver_cycles;              // a tasklet issues at most every this many cycles: IPC = min(1, n / revolver)
  std::array<double, kNumOps> op_slots;  // issue slots per op class ("slots.<op>")
  double issue_stall_cycles;  // pipeline cycles an issued instruction loses on average (register-file hazards)
  // MRAM <-> WRAM DMA: latency = alpha + beta * bytes; engine occupancy = occupancy + occupancy_per_byte * bytes
  double dma_read_alpha_cycles;
  double dma_write_alpha_cycles;
  double dma_beta_cycles_per_byte;
  double dma_occupancy_cycles;
  double dma_occupancy_cycles_per_byte;  // engine occupancy per byte (the sustained rate of queued DMAs)
  double dma_pipeline_stall;             // share of issue slots lost while the engine is busy
  double dma_issue_slots;                // mram_read / mram_write's own instructions
  uint32_t dma_max_bytes;
  uint32_t dma_min_bytes;
  // synchronization: the SDK routines' instructions (timing.h)
  double lock_acquire_slots;
  double lock_release_slots;
  double barrier_call_slots;
  double barrier_critical_slots;
  double barrier_resume_slots;
  double sync_return_slots;
  double handshake_critical_slots;
  double semaphore_critical_slots;
  double read_clock_slots;
  // emulator checks (never change the modeled time of a kernel that passes them)
  double spin_limit_cycles;
  // host <-> DPU transfers
  double serial_to_dpu_bytes_per_s;
  double serial_from_dpu_bytes_per_s;
  double serial_call_overhead_s;
  double rank_to_dpu_bytes_per_s;
  double rank_from_dpu_bytes_per_s;
  double rank_broadcast_bytes_per_s;
  double max_to_dpu_bytes_per_s;
  double max_from_dpu_bytes_per_s;
  double max_broadcast_bytes_per_s;
  double push_to_dpu_overhead_s;
  double push_to_dpu_overhead_per_rank_s;
  double push_from_dpu_overhead_s;
  double push_from_dpu_overhead_per_rank_s;
  double push_to_dpu_overhead_per_dpu_s;
  double push_from_dpu_overhead_per_dpu_s;
  double push_bandwidth_knee_bytes;
  double push_bandwidth_knee_exponent;
  double launch_overhead_s;
  double launch_overhead_per_rank_s;
  // Error bars: the relative error the hardware validation supports per component (hw_validation.h).
  double kernel_time_uncertainty;
  double cpu_to_dpu_time_uncertainty;
  double dpu_to_cpu_time_uncertainty;
  // What-if DPU <-> DPU links (none on today's hardware; interconnect.h): which pairs of DPUs are linked, each
  // DPU's port, and the port every rank has to the other ranks.
  LinkScope link_scope;
  uint32_t dpus_per_chip;
  double link_bytes_per_s;             // one DPU's port, each direction
  double link_latency_s;               // per message
  double inter_rank_link_bytes_per_s;  // one rank's port to the other ranks, each direction
  double inter_rank_link_latency_s;
  // Software collectives on today's hardware (collectives.h, PID-Comm's route): host threads that read and write the
  // ranks' MRAM directly, without the SDK's layout conversion, over the DIMMs' channels.
  double direct_to_dpu_bytes_per_s;    // one rank written directly
  double direct_from_dpu_bytes_per_s;  // one rank read directly
  double pim_channel_bytes_per_s;      // one memory channel of PIM DIMMs
  uint32_t dpus_per_channel;           // the DPUs of the DIMMs that share a channel
  uint32_t collective_host_threads;    // the host threads a software collective starts
  // energy (pim/energy.h)
  double dpu_active_power_w;
  double host_core_power_w;          // one host core at work (moving data, reducing, launching)
  double channel_energy_j_per_byte;  // a byte over a DRAM channel between the host and a PIM DIMM
  // the host's reduction at every synchronization (pim/host_model.h)
  uint32_t host_cores;
  uint32_t host_reduction_threads;
  double host_clock_hz;
  double host_cycles_per_element;         // sum one 32/64-bit value into a 64-bit accumulator, one thread
  double host_update_cycles_per_element;  // the per-coordinate step after the sums
  double host_thread_bytes_per_s;         // one thread streaming from memory
  double host_memory_bytes_per_s;         // the host's memory, every thread streaming
  double host_thread_start_s;             // create and join one reduction thread

  // The ranks that hold `dpus` DPUs (counted in 64 bits: no wrap near 2^32 DPUs).
  uint32_t RanksFor(uint32_t dpus) const {
    return static_cast<uint32_t>((uint64_t{dpus} + dpus_per_rank - 1) / dpus_per_rank);
  }
  uint32_t num_ranks() const { return RanksFor(num_dpus); }
  double slots(Op op) const { return op_slots[static_cast<size_t>(op)]; }
  // Every field within its declared bounds and the rules between fields; ConfigError naming "profile.FIELD".
  void Validate() const;
};

// Every field of a profile: name, type, default (the "pim-opt" base), bounds, unit, meaning, source.
const ParamTable<HardwareProfile>& ProfileFields();

// A named profile: the base with the listed fields changed (values as text, checked by ProfileFields()).
struct ProfilePreset {
  std::string name;
  std::string description;
  std::string source;
  std::vector<std::pair<std::string, std::string>> fields;
};
// pim-opt, prim-2556, prim-640, upmem-2524, and the what-ifs: future-fpu, links-chip, links-rank, links-system,
// host-x2, host-x4, pim-mmu, numa-aware and future-wide.
const std::vector<ProfilePreset>& ProfilePresets();
std::vector<std::string> ProfileNames();
// The preset; ConfigError naming --profile (with the known names) for an unknown one.
HardwareProfile MakeProfile(const std::string& name);
// The preset after "field=value,..." overrides (none when empty), as --profile and --profile-set give them.
HardwareProfile MakeProfile(const std::string& name, const std::string& overrides);
// Applies "field=value,field=value" overrides (any field of ProfileFields(), op costs as "slots.<op>"), then
// validates; ConfigError naming --profile-set and the field.
void ApplyOverrides(HardwareProfile& profile, const std::string& overrides);

}  // namespace pimopt::pim
