// The PIM backend's epoch projection (projection.h): this run's ledger re-modeled at another DPU count and rows
// per DPU by the emulator's transfer, launch, host, link and energy models.
#include "pimopt/backends/pim/pim_backend.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "pimopt/algorithms/algorithm.h"
#include "pimopt/core/error.h"
#include "pimopt/pim/energy.h"
#include "pimopt/pim/interconnect.h"
#include "pimopt/pim/pipelined_reduction.h"

namespace pimopt {

EpochProjection PimBackend::Project(uint32_t target_dpus, uint64_t target_rows_per_dpu, int epochs) const {
  PIMOPT_CHECK(machine_ && epochs > 0);
  EpochProjection p;
  p.dpus = target_dpus;
  p.rows_per_dpu = target_rows_per_dpu;
  // The rows per DPU that set this run's times: its largest shard's (the slowest DPU's kernel, the steps of an
  // epoch), from the rows it trained on, kept at setup (the dataset itself may be gone: a pilot on a temporary
  // subset). The mean (rows / DPUs) projected a run onto its own DPU count 44% high where the rows did not divide.
  const double run_rows = std::ceil(static_cast<double>(run_.train_rows) / shards_.dpus);
  // Per-DPU work grows with the rows each DPU holds (weak scaling): every kernel's time.
  const double row_factor = static_cast<double>(target_rows_per_dpu) / run_rows;
  // Synchronizations per epoch grow with the rows per DPU: MA-SGD and the one-DPU algorithms take steps over a
  // DPU's rows; GA-SGD keeps the rows per DPU per step (B/K) of this run, i.e. its global batch grows with the DPU
  // count (PIM-Opt's weak scaling: 262,144 / 2,048 = 128 rows per DPU per step); ADMM synchronizes once per epoch.
  double sync_factor = row_factor;
  if (run_.config.traits().syncs == SyncScaling::kOncePerEpoch) sync_factor = 1;
  const double per_epoch = 1.0 / epochs;
  p.kernel_s = ledger_.kernel_s * per_epoch * row_factor;
  p.mram_wram_bytes =
      static_cast<double>(ledger_.mram_wram_bytes) * per_epoch * row_factor * target_dpus / shards_.dpus;
  p.launch_overhead_s = static_cast<double>(ledger_.launches) * per_epoch * sync_factor *
                        pim::ModelLaunchOverheadSeconds(profile_, target_dpus);
  // The training transfers, as the machine logged them, re-timed over the target's DPUs.
  for (const auto& [key, count] : machine_->log().transfers()) {
    if (LoggedActivity(key.tag) != Activity::kTraining) continue;
    pim::TransferVerb at = key.verb;
    at.dpus = target_dpus;
    // Row lists grow with the rows per step (local SGD launches cover an epoch of the DPU's rows).
    if (LoggedKind(key.tag) == TransferKind::kPushRows) {
      at.bytes_per_dpu = static_cast<uint64_t>(at.bytes_per_dpu * std::max(1.0, row_factor / sync_factor));
    }
    const double n = static_cast<double>(count) * per_epoch * sync_factor;
    (at.to_dpu() ? p.cpu_to_dpu_s : p.dpu_to_cpu_s) += n * pim::ModelTransferSeconds(profile_, at);
    (at.to_dpu() ? p.cpu_to_dpu_bytes : p.dpu_to_cpu_bytes) += n * target_dpus * at.bytes_per_dpu;
  }
  if (options_.measured_host) {
    // Measured on this host: linear in the number of DPU vectors reduced.
    p.host_reduction_s = ledger_.host_reduction_s * per_epoch * sync_factor * target_dpus / shards_.dpus;
  } else {
    for (const auto& [work, count] : ledger_.host_work) {
      p.host_reduction_s += static_cast<double>(count) * per_epoch * sync_factor * ModelHostSeconds(work, target_dpus);
    }
  }
  pim::EnergyJoules collective_energy;  // of the software collectives (their bytes, host threads and DPUs)
  double collective_bytes = 0;
  // Exchanges over what-if links, re-modeled at the target: the ring all-reduce over the target's DPUs, the gossip
  // over the run's topology kind built for them.
  for (const auto& [work, count] : ledger_.link_work) {
    std::optional<pim::LinkExchangeTime> t;
    if (!work.topology) {
      t = pim::ModelAllReduce(profile_, target_dpus, work.bytes);
    } else {
      t = pim::ModelNeighbourExchange(profile_, target_dpus, Topology(*work.topology, target_dpus).EdgeList(),
                                      work.bytes);
    }
    if (!t) {
      p.note = StrCat("the links of profile '", profile_.name, "' do not cover ", target_dpus,
                      " DPUs: a run there synchronizes through the host, which this run did not time; no epoch time "
                      "is projected");
      continue;
    }
    const double n = static_cast<double>(count) * per_epoch * sync_factor;
    p.link_s += n * t->seconds;
    p.link_bytes += n * static_cast<double>(t->link_bytes);
  }
  // Software collectives, re-modeled over the target's DPUs; their bytes cross the channels like the transfers'.
  for (const auto& [work, count] : ledger_.collective_work) {
    const double n = static_cast<double>(count) * per_epoch * sync_factor;
    const pim::CollectiveCost c = pim::ModelCollective(profile_, work.collective, pim::CollectiveRoute::kSoftware,
                                                       target_dpus, work.bytes, work.element_bytes);
    p.collective_s += n * c.seconds;
    const pim::EnergyJoules e = pim::CollectiveEnergyJoules(
        profile_, n * static_cast<double>(c.to_dpu_bytes + c.from_dpu_bytes), n * c.bus_s, n * c.dpu_busy_s);
    collective_energy.transfer_j += e.transfer_j;
    collective_energy.dpu_j += e.dpu_j;
    collective_bytes += n * static_cast<double>(c.to_dpu_bytes + c.from_dpu_bytes);
    p.cpu_to_dpu_bytes += n * static_cast<double>(c.to_dpu_bytes);
    p.dpu_to_cpu_bytes += n * static_cast<double>(c.from_dpu_bytes);
  }
  // --transfers async: each pipelined reduction re-modeled at the target DPU count.
  for (const auto& [key, count] : ledger_.reductions) {
    const auto& [pulls, work] = key;
    const double n = static_cast<double>(count) * per_epoch * sync_factor;
    p.overlap_saved_s +=
        n * pim::ModelPipelinedReduction(profile_, target_dpus, pulls, HostReduction(work, target_dpus)).saved_s();
  }
  p.epoch_s = p.kernel_s + p.launch_overhead_s + p.cpu_to_dpu_s + p.dpu_to_cpu_s + p.host_reduction_s + p.link_s +
              p.collective_s - p.overlap_saved_s;
  // Energy per epoch at the target: every DPU busy as this run's were, for its rows (weak scaling), the projected
  // transfers, reductions, launches and link exchanges.
  p.energy.dpu_j = ledger_.dpu_energy_j * per_epoch * row_factor * target_dpus / shards_.dpus;
  p.energy.transfer_j = pim::TransferEnergyJoules(profile_, target_dpus,
                                                  p.cpu_to_dpu_bytes + p.dpu_to_cpu_bytes - collective_bytes,
                                                  p.cpu_to_dpu_s + p.dpu_to_cpu_s) +
                        collective_energy.transfer_j;
  p.energy.dpu_j += collective_energy.dpu_j;
  p.energy.host_j = pim::HostEnergyJoules(profile_, p.host_reduction_s, p.launch_overhead_s);
  p.energy.link_j = pim::LinkEnergyJoules(profile_, p.link_bytes);
  if (!p.note.empty()) {
    // The synchronizations were not timed: every figure they are part of is missing, not a partial sum. What stays
    // is what the DPUs do on their own rows (the kernel, its DMA bytes, the DPUs' energy).
    const double missing = std::numeric_limits<double>::quiet_NaN();
    for (double* figure : {&p.epoch_s, &p.cpu_to_dpu_s, &p.launch_overhead_s, &p.dpu_to_cpu_s, &p.host_reduction_s,
                           &p.cpu_to_dpu_bytes, &p.dpu_to_cpu_bytes, &p.link_s, &p.link_bytes, &p.collective_s, &p.overlap_saved_s,
                           &p.energy.transfer_j, &p.energy.host_j, &p.energy.link_j}) {
      *figure = missing;
    }
  }
  return p;
}

}  // namespace pimopt
