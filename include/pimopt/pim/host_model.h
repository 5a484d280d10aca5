// The host of a PIM system as a model: the reduction a parameter server runs at every synchronization (sum the
// DPUs' vectors, then update the model), timed from the host fields of the hardware profile instead of this
// machine's clock, so a modeled time is the same on every machine that computes it.
//
// Model (docs/pim-emulator.md, "The modeled host"): on T = min(host_reduction_threads, host_cores) threads,
//   sums    = vectors x elements values of bytes_per_element bytes, added into 64-bit sums
//   updates = update_elements coordinates, each reading and writing update_bytes_per_element bytes
//   seconds = host_reduction_threads x host_thread_start_s
//           + max(sums x host_cycles_per_element / (host_clock_hz x T), sum bytes / B)
//           + max(updates x host_update_cycles_per_element / (host_clock_hz x T), update bytes / B)
// where B = min(host_memory_bytes_per_s, T x host_thread_bytes_per_s): every value is streamed from memory.
// The constants of the PIM-Opt server's host are in the "pim-opt" profile; MeasureHost() measures this machine's
// (pimopt profile --calibrate-host) so that a user can model their own host or check the rules here.
#pragma once

#include <cstdint>
#include <string>

#include "pimopt/pim/profile.h"

namespace pimopt::pim {

// One synchronization's host work.
struct HostReductionWork {
  uint64_t vectors = 0;                   // per-DPU vectors summed (K, or 2K when x and u are both averaged)
  uint64_t elements = 0;                  // coordinates of each vector
  uint32_t bytes_per_element = 4;         // bytes of each value summed
  uint64_t update_elements = 0;           // coordinates updated after the sums (the model step, z; ADMM's u_k)
  uint32_t update_bytes_per_element = 0;  // bytes each update reads and writes
};

// Modeled seconds of one synchronization's host work on the profile's host.
double ModelHostReductionSeconds(const HardwareProfile& profile, const HostReductionWork& work);

// This machine's host constants, measured with the reduction loop the model describes (a thread sums a slice of
// every DPU's vector into 64-bit accumulators).
struct HostMeasurement {
  double clock_hz = 0;                  // from a chain of dependent integer adds (one per cycle on x86-64)
  double cycles_per_element = 0;        // one thread, data in cache
  double update_cycles_per_element = 0; // one thread: divide an int64 sum and narrow it, data in cache
  double thread_bytes_per_s = 0;        // one thread streaming from memory
  double memory_bytes_per_s = 0;        // every hardware thread streaming from memory
  double thread_start_s = 0;            // create and join one thread
  uint32_t cores = 0;                   // hardware threads
  // "host_clock_hz=...,host_cores=...,..." for --profile-set.
  std::string ProfileOverrides() const;
};
// Takes about `budget_s` seconds (at least 0.2 s) and up to `memory_bytes` of memory for the streaming runs.
HostMeasurement MeasureHost(double budget_s = 2.0, uint64_t memory_bytes = uint64_t{512} << 20);

}  // namespace pimopt::pim
