// A capability a backend may offer: one epoch of its run extrapolated to another machine size. Asked of the backend
// (IBackend::projector()), never found by a cast; the PIM backend offers it from its ledger of modeled work.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>

#include "pimopt/core/error.h"
#include "pimopt/pim/energy.h"

namespace pimopt {

// One epoch of a run extrapolated to another DPU count and rows per DPU (weak scaling), from what the run
// measured: kernel times scale with the rows per DPU; the number of synchronizations scales as each algorithm's
// sync count does (AlgorithmTraits::syncs: with the rows per DPU, or once per epoch; GA-SGD keeps the run's rows per
// DPU per step, i.e. a global batch proportional to the DPU count); every transfer is re-evaluated by the transfer
// model at the target DPU count with the same bytes per DPU; launch overheads at the target rank count; each host
// reduction by the profile's host model at the target DPU count (with --host-time measured: this host's measured
// reduction time, linearly in DPUs x syncs). Extrapolated, not run: every field.
struct EpochProjection {
  uint32_t dpus = 0;
  uint64_t rows_per_dpu = 0;
  double epoch_s = 0;
  double cpu_to_dpu_s = 0, kernel_s = 0, launch_overhead_s = 0, dpu_to_cpu_s = 0, host_reduction_s = 0;
  double cpu_to_dpu_bytes = 0, dpu_to_cpu_bytes = 0;
  double mram_wram_bytes = 0;  // DMA between every DPU's MRAM and WRAM, both directions
  double link_s = 0;           // exchanges over what-if DPU links, re-modeled at the target DPU count
  double link_bytes = 0;
  double collective_s = 0;     // --sync-path software: the software collectives, re-modeled at the target DPU count
  double overlap_saved_s = 0;  // --transfers async: pulls and host reductions that overlap (subtracted)
  pim::EnergyJoules energy;    // per epoch (pim/energy.h)
  // Empty, or why the epoch is not projected: the profile's links do not cover the target DPU count, so a run there
  // would synchronize through the host, which this run did not time. Then every figure the synchronizations are
  // part of is NaN (the epoch, transfers, launches, host, links, their bytes and energy; the total energy with
  // them); the kernel, its MRAM-WRAM bytes and the DPUs' energy stay.
  std::string note;
  bool Timed() const { return note.empty(); }
  // Every figure of a timed projection is finite (an untimed one's synchronization figures are NaN by design).
  // Throws InternalError naming the first that is not: no report shows a time computed from a non-finite value.
  void CheckFinite() const {
    if (!Timed()) return;
    const std::pair<const char*, double> figures[] = {
        {"epoch", epoch_s},         {"CPU->DPU", cpu_to_dpu_s},       {"kernel", kernel_s},
        {"launch", launch_overhead_s}, {"DPU->CPU", dpu_to_cpu_s},    {"host reduction", host_reduction_s},
        {"CPU->DPU bytes", cpu_to_dpu_bytes}, {"DPU->CPU bytes", dpu_to_cpu_bytes},
        {"MRAM-WRAM bytes", mram_wram_bytes}, {"link", link_s},       {"link bytes", link_bytes},
        {"collectives", collective_s}, {"overlap", overlap_saved_s}, {"energy", energy.total_j()}};
    for (const auto& [name, value] : figures) {
      if (!std::isfinite(value)) {
        throw InternalError(StrCat("the projection to ", dpus, " DPUs x ", rows_per_dpu, " rows has a non-finite ",
                                   name, " figure (", value, ")"));
      }
    }
  }
};

class EpochProjector {
 public:
  virtual ~EpochProjector() = default;
  // Per-epoch modeled time of this run (`epochs` epochs done) projected to `target_workers` x
  // `target_rows_per_worker`.
  virtual EpochProjection Project(uint32_t target_workers, uint64_t target_rows_per_worker, int epochs) const = 0;
};

}  // namespace pimopt
