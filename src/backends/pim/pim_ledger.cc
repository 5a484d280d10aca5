// The PIM backend's ledger: every transfer, launch, host reduction, encoding and link exchange recorded once, when
// it happens, under what it served; the phase times, traffic and counters a report reads are sums over it.
#include <algorithm>
#include <chrono>
#include <cmath>

#include "pimopt/algorithms/algorithm.h"
#include "pimopt/backends/pim/pim_backend.h"
#include "pimopt/core/error.h"
#include "pimopt/core/file_util.h"
#include "pimopt/core/thread_pool.h"
#include "pimopt/pim/encoding_cost.h"
#include "pimopt/pim/energy.h"
#include "pimopt/pim/host_model.h"
#include "pimopt/pim/interconnect.h"
#include "pimopt/pim/pipelined_reduction.h"

namespace pimopt {

using Clock = std::chrono::steady_clock;

pim::HostReductionWork PimBackend::HostReduction(const Ledger::HostWork& work, uint32_t dpus) {
  return {.vectors = uint64_t{work.vectors_per_dpu} * dpus,
          .elements = work.elements,
          .bytes_per_element = work.bytes_per_element,
          .update_elements = uint64_t{work.updates_per_dpu} * dpus * work.elements +
                             (work.model_elements > 0 ? work.model_elements : work.elements),
          .update_bytes_per_element = work.update_bytes_per_element};
}

double PimBackend::ModelHostSeconds(const Ledger::HostWork& work, uint32_t dpus) const {
  return pim::ModelHostReductionSeconds(profile_, HostReduction(work, dpus));
}

void PimBackend::RecordHostWork(const Ledger::HostWork& work, Clock::time_point t0, double comm_s0) {
  ledger_.host_reduction_s += HostSecondsSince(t0, comm_s0);
  ledger_.modeled_host_reduction_s += ModelHostSeconds(work, run_.part.total_workers);
  ++ledger_.host_work[work];
  ++ledger_.syncs;
  if (options_.async_transfers && !ledger_.round_pulls.empty()) {
    // The pulls since the last launch and this reduction, pipelined in chunks (this process's DPUs' pulls, as the
    // ledger's transfers; the host's reduction over all DPUs, as its modeled time).
    ledger_.overlap_saved_s += pim::ModelPipelinedReduction(profile_, shards_.dpus, ledger_.round_pulls,
                                                            HostReduction(work, run_.part.total_workers))
                                   .saved_s();
    ++ledger_.reductions[{ledger_.round_pulls, work}];
  }
  ledger_.round_pulls.clear();
}

void PimBackend::Record(Activity activity, bool to_dpu, const pim::MachineTime& time, uint64_t bytes_per_dpu) {
  Ledger::Transfers& t = (to_dpu ? ledger_.to_dpu : ledger_.from_dpu)[static_cast<size_t>(activity)];
  t.modeled_s += time.seconds;
  ledger_.measured_times += time.measured ? 1 : 0;
  t.bytes += uint64_t{shards_.dpus} * bytes_per_dpu;
  ++t.count;
  if (activity == Activity::kTraining && !to_dpu) ledger_.round_pulls.push_back({bytes_per_dpu});
}

void PimBackend::Push(Activity activity, TransferKind kind, std::string_view symbol, uint64_t offset,
                      uint64_t bytes_per_dpu) {
  const pim::MachineTime t =
      machine_->PushXfer(pim::XferDirection::kToDpu, symbol, offset, bytes_per_dpu, LogTag(activity, kind));
  Record(activity, true, t, bytes_per_dpu);
}

void PimBackend::Pull(Activity activity, TransferKind kind, std::string_view symbol, uint64_t offset,
                      uint64_t bytes_per_dpu, uint64_t encoded_bytes) {
  const uint32_t tag = LogTag(activity, kind);
  const pim::MachineTime t =
      encoded_bytes != 0 ? machine_->PullEncoded(symbol, offset, bytes_per_dpu, encoded_bytes, tag)
                         : machine_->PushXfer(pim::XferDirection::kFromDpu, symbol, offset, bytes_per_dpu, tag);
  Record(activity, false, t, encoded_bytes != 0 ? encoded_bytes : bytes_per_dpu);
}

void PimBackend::Broadcast(Activity activity, TransferKind kind, uint64_t offset, const void* source, uint64_t bytes) {
  const pim::MachineTime t =
      machine_->BroadcastTo(pim::kMramHeapSymbol, offset, source, bytes, LogTag(activity, kind));
  Record(activity, true, t, bytes);
}

PimBackend::SyncRoute PimBackend::Route(const std::optional<pim::LinkExchangeTime>& covered, const char* what) const {
  using SyncPath = PimBackendOptions::SyncPath;
  if (options_.sync_path == SyncPath::kSoftware) {
    // Software collectives over more than one DPU; one DPU has nothing to exchange (its host path moves nothing
    // between DPUs).
    return {run_.part.total_workers > 1 ? SyncRoute::Path::kSoftware : SyncRoute::Path::kHost, std::nullopt};
  }
  if (options_.sync_path == SyncPath::kHost) return {};
  if (!covered && options_.sync_path == SyncPath::kLinks && run_.part.total_workers == 1) {
    throw ConfigError("--sync-path", StrCat("links: ", what, " over one DPU is no exchange between DPUs (it goes "
                                            "through the host on every profile); use --sync-path host or auto, or "
                                            "more workers"));
  }
  if (!covered && options_.sync_path == SyncPath::kLinks) {
    const std::string scope = pim::ProfileFields().GetText(profile_, "link_scope");
    throw ConfigError("--profile", StrCat("profile '", profile_.name, "' (link_scope ", scope,
                                          ") has no DPU links for ", what, " over ", run_.part.total_workers,
                                          " DPUs; use --sync-path host or auto, "
                                          "or a profile with wider links (links-rank, links-system)"));
  }
  if (!covered) return {};
  return {SyncRoute::Path::kLinks, covered};
}

void PimBackend::RecordSync(const SyncRoute& route, const SyncWork& work, Clock::time_point t0, double comm_s0) {
  switch (route.path) {
    case SyncRoute::Path::kLinks:
      RecordLinkWork(*route.link, work.link);
      break;
    case SyncRoute::Path::kSoftware:
      RecordCollective(work.collective);
      break;
    case SyncRoute::Path::kHost:
      RecordHostWork(work.host, t0, comm_s0);
      break;
  }
}

void PimBackend::RecordLinkWork(const pim::LinkExchangeTime& time, const Ledger::LinkWork& work, bool sync) {
  ledger_.round_pulls.clear();
  ledger_.link_s += time.seconds;
  // This process's share of the bytes (the exchange is over all DPUs of the run).
  ledger_.link_bytes += time.link_bytes * shards_.dpus / static_cast<uint64_t>(run_.part.total_workers);
  ++ledger_.link_work[work];
  if (sync) ++ledger_.syncs;
}

void PimBackend::RecordCollective(const Ledger::CollectiveWork& work, bool sync) {
  ledger_.round_pulls.clear();
  Ledger::CollectiveWork w = work;
  w.bytes = (w.bytes + 7) / 8 * 8;
  const uint32_t all = static_cast<uint32_t>(run_.part.total_workers);
  const pim::CollectiveCost cost =
      pim::ModelCollective(profile_, w.collective, pim::CollectiveRoute::kSoftware, all, w.bytes, w.element_bytes);
  ledger_.collective_s += cost.seconds;
  ledger_.collective_bus_s += cost.bus_s;
  ledger_.collective_dpu_busy_s += cost.dpu_busy_s * shards_.dpus / all;
  // This process's share of the bytes (the collective is over all DPUs of the run).
  ledger_.collective_to_dpu_bytes += cost.to_dpu_bytes * shards_.dpus / all;
  ledger_.collective_from_dpu_bytes += cost.from_dpu_bytes * shards_.dpus / all;
  ++ledger_.collective_work[w];
  if (sync) ++ledger_.syncs;
}

void PimBackend::RecordEncoding(double cycles) {
  ledger_.round_pulls.clear();  // the DPUs' work before the pulls: a stage of its own
  const double seconds = cycles / profile_.dpu_frequency_hz;
  ledger_.kernel_s += seconds;
  ledger_.dma_s += seconds;
  ledger_.encoding_s += seconds;
  // Every DPU encodes its own vector: their active power for that time, as a launch's kernel time costs.
  ledger_.dpu_energy_j += pim::DpuEnergyJoules(profile_, seconds * shards_.dpus);
}

std::map<std::string, double> PimBackend::PhaseSeconds() const {
  const Ledger& l = ledger_;
  const double to_dpu_s = l.to_dpu[static_cast<size_t>(Activity::kTraining)].modeled_s;
  const double from_dpu_s = l.from_dpu[static_cast<size_t>(Activity::kTraining)].modeled_s;
  // The modeled system's host: the profile's model, or (--host-time measured) the seconds measured where pimopt runs.
  const double host_s = options_.measured_host ? l.host_reduction_s : l.modeled_host_reduction_s;
  const double whole = shards_.dpus > 0 ? static_cast<double>(run_.part.total_workers) / shards_.dpus : 1.0;
  const double training_bytes = static_cast<double>(l.to_dpu[static_cast<size_t>(Activity::kTraining)].bytes +
                                                    l.from_dpu[static_cast<size_t>(Activity::kTraining)].bytes);
  pim::EnergyJoules energy;
  energy.dpu_j = l.dpu_energy_j * whole;
  energy.transfer_j = pim::TransferEnergyJoules(profile_, static_cast<uint32_t>(run_.part.total_workers),
                                                training_bytes * whole, to_dpu_s + from_dpu_s);
  const pim::EnergyJoules collectives = pim::CollectiveEnergyJoules(
      profile_, static_cast<double>(l.collective_to_dpu_bytes + l.collective_from_dpu_bytes) * whole,
      l.collective_bus_s, l.collective_dpu_busy_s * whole);
  energy.transfer_j += collectives.transfer_j;
  energy.dpu_j += collectives.dpu_j;
  energy.host_j = pim::HostEnergyJoules(profile_, host_s, l.launch_s);
  energy.link_j = pim::LinkEnergyJoules(profile_, static_cast<double>(l.link_bytes) * whole);
  return {{"modeled_cpu_to_dpu", to_dpu_s},
          {"modeled_dpu_kernel", l.kernel_s},
          {"modeled_dpu_compute", l.compute_s},
          {"modeled_dpu_dma", l.dma_s},
          {"modeled_dpu_sync", l.sync_s},
          {"modeled_launch_overhead", l.launch_s},
          {"modeled_dpu_to_cpu", from_dpu_s},
          {"modeled_host_reduction", host_s},
          {"modeled_dpu_to_dpu", l.link_s},
          {"modeled_collectives", l.collective_s},
          // --transfers async: the pulls and the host's reductions that overlapped (subtracted from the total).
          {"modeled_overlap_saved", l.overlap_saved_s},
          {"modeled_total", to_dpu_s + l.kernel_s + l.launch_s + from_dpu_s + host_s + l.link_s + l.collective_s -
                                l.overlap_saved_s},
          // The error bar the hardware validation supports, each component's share added (its errors repeat from
          // one launch or transfer of the same shape to the next); the host reduction has none (not validated).
          {"modeled_total_uncertainty", profile_.kernel_time_uncertainty * (l.kernel_s + l.launch_s) +
                                            profile_.cpu_to_dpu_time_uncertainty * to_dpu_s +
                                            profile_.dpu_to_cpu_time_uncertainty * from_dpu_s},
          {"measured_host_reduction", l.host_reduction_s},
          {"emulation_wall", l.emulation_wall_s},
          // Energy of the whole machine (pim/energy.h): joules, not seconds, under the same keys' rule (per epoch
          // in the epoch records). This process's DPUs and bytes stand for every process's.
          {"modeled_energy_dpu_j", energy.dpu_j},
          {"modeled_energy_transfer_j", energy.transfer_j},
          {"modeled_energy_host_j", energy.host_j},
          {"modeled_energy_link_j", energy.link_j},
          {"modeled_energy_j", energy.total_j()}};
}

TrafficCounters PimBackend::Traffic() const {
  TrafficCounters t;
  // The software collectives' bytes cross the channels between the host and the DIMMs too.
  t.to_workers_bytes =
      ledger_.to_dpu[static_cast<size_t>(Activity::kTraining)].bytes + ledger_.collective_to_dpu_bytes;
  t.from_workers_bytes =
      ledger_.from_dpu[static_cast<size_t>(Activity::kTraining)].bytes + ledger_.collective_from_dpu_bytes;
  t.syncs = ledger_.syncs;
  return t;
}

std::map<std::string, double> PimBackend::Counters() {
  const auto setup = ledger_.to_dpu[static_cast<size_t>(Activity::kSetup)];
  std::map<std::string, double> c{{"dpus", shards_.dpus},
                                  {"tasklets", options_.tasklets},
                                  {"dpu_frequency_hz", profile_.dpu_frequency_hz},
                                  {"mram_wram_bytes", static_cast<double>(ledger_.mram_wram_bytes)},
                                  {"host_saturations", static_cast<double>(models_.saturation.events)},
                                  {"quantization_saturations", models_.quantization_saturations},
                                  {"setup_to_dpu_bytes", static_cast<double>(setup.bytes)},
                                  {"modeled_setup_to_dpu_s", setup.modeled_s},
                                  {"dpu_to_dpu_bytes", static_cast<double>(ledger_.link_bytes)},
                                  {"modeled_dpu_encoding_s", ledger_.encoding_s}};
  if (machine_) {
    // Each tasklet's saturation counter accumulates over launches in WRAM; reading them is a diagnostic transfer.
    uint64_t total = 0;
    for (uint32_t k = 0; k < shards_.dpus; ++k) {
      uint64_t counters[pimbackend::kMaxTasklets] = {};
      const pim::MachineTime t =
          machine_->CopyFrom(k, pimbackend::kSaturationsSymbol, 0, counters, sizeof(counters),
                             LogTag(Activity::kDiagnostics, TransferKind::kCounters));
      Record(Activity::kDiagnostics, false, t, sizeof(counters));
      for (uint64_t v : counters) total += v;
    }
    c["dpu_saturations"] = static_cast<double>(total);
  }
  // A hardware machine measures what the emulator models: the report says how many of the times were measured.
  if (ledger_.measured_times > 0) c["machine_measured_times"] = static_cast<double>(ledger_.measured_times);
  const auto checkpoint_to = ledger_.to_dpu[static_cast<size_t>(Activity::kCheckpoint)];
  const auto checkpoint_from = ledger_.from_dpu[static_cast<size_t>(Activity::kCheckpoint)];
  c["checkpoint_transfer_bytes"] = static_cast<double>(checkpoint_to.bytes + checkpoint_from.bytes);
  return c;
}

std::string PimBackend::PrecisionLimits() {
  const std::map<std::string, double> c = Counters();
  auto count = [&](const char* key) {
    const auto it = c.find(key);
    return it == c.end() ? 0.0 : it->second;
  };
  const double saturations = count("dpu_saturations") + count("host_saturations");
  return StrCat("the DPUs compute in fixed point (features quantized to int8, ",
                FormatDouble(count("quantization_saturations")), " of them clipped; a Q8.24 model, |w| < 128; ",
                FormatDouble(saturations), " saturation events in the model's and the steps' arithmetic)",
                saturations > 0 ? ": the model the objective needs does not fit the format (lower --class-weights or "
                                  "the sample weights, raise --reg, or use --backend cpu)"
                                : ": the rounding of the int8 features and Q8.24 steps limits how close the "
                                  "certificate can get (raise --tol, or use --backend cpu)");
}

}  // namespace pimopt
