#include "pimopt/pim/system.h"

#include "pimopt/pim/native_program.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <exception>

#include "dpu.h"
#include "pimopt/pim/energy.h"
#include "pimopt/core/thread_pool.h"

namespace pimopt::pim {

const char* SchedulerName(Scheduler scheduler) {
  return scheduler == Scheduler::kBatched ? "batched" : "reference";
}

// ---------------------------------------------------------------- DpuSet
DpuSet::DpuSet(const HardwareProfile& profile, uint32_t num_dpus, ThreadPool& pool)
    : profile_(&profile), pool_(&pool), prepared_(num_dpus, {nullptr, 0}) {
  dpus_.reserve(num_dpus);
  for (uint32_t i = 0; i < num_dpus; ++i) dpus_.push_back(std::make_unique<Dpu>(profile, i));
}
DpuSet::~DpuSet() = default;
DpuSet::DpuSet(DpuSet&&) noexcept = default;
DpuSet& DpuSet::operator=(DpuSet&&) noexcept = default;

uint32_t DpuSet::size() const { return static_cast<uint32_t>(dpus_.size()); }
uint32_t DpuSet::num_ranks() const { return profile_->RanksFor(size()); }

void DpuSet::Load(std::shared_ptr<Kernel> kernel, uint32_t tasklets) {
  if (!kernel) throw PimError("Load: null kernel");
  const KernelSpec spec = kernel->Spec();
  const uint32_t n = tasklets ? tasklets : spec.tasklets;
  for (auto& d : dpus_) d->Load(spec, n);
  kernel_ = std::move(kernel);
  kernel_name_ = spec.name;
}

void DpuSet::Load(const std::string& kernel_name, uint32_t tasklets) {
  // A compiled DPU program is loaded by its path, as the SDK's dpu_load; a port by its registered name.
  if (kernel_name.ends_with(".dpu")) {
    Load(LoadNativeProgram(kernel_name), tasklets);
  } else {
    Load(std::shared_ptr<Kernel>(CreateKernel(kernel_name)), tasklets);
  }
}

LaunchStats DpuSet::Launch() { return Launch(0, size()); }

LaunchStats DpuSet::Launch(uint32_t first, uint32_t count) {
  if (!kernel_) throw PimError("Launch: no kernel loaded on this DPU set");
  if (count == 0 || first > size() || count > size() - first) {
    throw PimError(StrCat("Launch: DPUs ", first, " + ", count, " are not in this set of ", size()));
  }
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<DpuLaunchResult> results(count);
  static std::atomic<uint64_t> launches{0};
  Dpu::LaunchOptions options;
  options.shuffle_seed = shuffle_seed_;
  options.record = record_traces_;
  options.scheduler = scheduler_;
  options.launch_id = ++launches;
  options.share_clock = count > static_cast<uint32_t>(pool_->UsableThreads());
  // Every DPU runs; when several break a rule, the lowest-numbered one's error is reported (not whichever thread
  // failed first), so a failing launch says the same thing every time.
  std::vector<std::exception_ptr> errors(count);
  pool_->ParallelFor(count, [&](size_t i) {
    try {
      results[i] = dpus_[first + i]->Launch(*kernel_, options);
    } catch (...) {
      errors[i] = std::current_exception();
    }
  });
  for (const std::exception_ptr& error : errors) {
    if (error) std::rethrow_exception(error);
  }
  LaunchStats s;
  s.kernel = kernel_name_;
  s.dpus = count;
  s.tasklets = kernel_->Spec().tasklets;
  double sum = 0, busy_s = 0;
  s.per_dpu.reserve(results.size());
  for (const DpuLaunchResult& r : results) {  // DPU order: deterministic sums
    s.per_dpu.push_back(r.cycles);
    if (r.cycles.total > s.slowest.total) s.slowest = r.cycles;
    sum += r.cycles.total;
    busy_s += r.cycles.total / profile_->dpu_frequency_hz;
    s.issue_slots += static_cast<uint64_t>(std::llround(r.issue_slots));
    for (size_t op = 0; op < kNumOps; ++op) s.op_counts[op] += r.op_counts[op];
    s.mram_read_bytes += r.mram_read_bytes;
    s.mram_write_bytes += r.mram_write_bytes;
    s.dmas += r.dmas;
    s.unaligned_dmas += r.unaligned_dmas;
    s.resized_dmas += r.resized_dmas;
    s.barrier_waits += r.barrier_waits;
    s.lock_contentions += r.lock_contentions;
    s.events += r.events;
    s.events_shared += r.events_shared;
  }
  if (record_traces_) {
    s.traces.reserve(results.size());
    for (DpuLaunchResult& r : results) s.traces.push_back(std::move(r.trace));
  }
  s.mean_total_cycles = results.empty() ? 0 : sum / static_cast<double>(results.size());
  s.kernel_s = s.slowest.total / profile_->dpu_frequency_hz;
  s.overhead_s = ModelLaunchOverheadSeconds(*profile_, count);
  s.energy_j = DpuEnergyJoules(*profile_, busy_s);
  s.host_wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  stats_.kernel_s += s.kernel_s;
  stats_.launch_overhead_s += s.overhead_s;
  stats_.energy_j += s.energy_j;
  stats_.host_wall_s += s.host_wall_s;
  ++stats_.launches;
  return s;
}

double DpuSet::Transferred(const TransferVerb& verb, uint32_t tag) {
  const double s = ModelTransferSeconds(*profile_, verb);
  log_.Add(tag, verb);
  if (verb.to_dpu()) {
    stats_.to_dpu_s += s;
    stats_.to_dpu_bytes += verb.bytes();
  } else {
    stats_.from_dpu_s += s;
    stats_.from_dpu_bytes += verb.bytes();
  }
  ++stats_.transfers;
  return s;
}

double DpuSet::CopyTo(uint32_t dpu, std::string_view symbol, uint64_t offset, const void* source, uint64_t bytes,
                      uint32_t tag) {
  if (dpu >= size()) throw PimError(StrCat("CopyTo: DPU ", dpu, " is not in this set of ", size()));
  dpus_[dpu]->HostWrite(symbol, offset, source, bytes);
  return Transferred({TransferVerb::Kind::kCopyTo, size(), bytes}, tag);
}

double DpuSet::CopyFrom(uint32_t dpu, std::string_view symbol, uint64_t offset, void* destination, uint64_t bytes,
                        uint32_t tag) {
  if (dpu >= size()) throw PimError(StrCat("CopyFrom: DPU ", dpu, " is not in this set of ", size()));
  dpus_[dpu]->HostRead(symbol, offset, destination, bytes);
  return Transferred({TransferVerb::Kind::kCopyFrom, size(), bytes}, tag);
}

void DpuSet::PrepareXfer(uint32_t dpu, void* buffer, uint64_t buffer_bytes) {
  if (dpu >= size()) throw PimError(StrCat("PrepareXfer: DPU ", dpu, " is not in this set of ", size()));
  prepared_[dpu] = {buffer, buffer_bytes};
}

double DpuSet::PushXfer(XferDirection direction, std::string_view symbol, uint64_t offset, uint64_t bytes,
                        uint32_t tag, uint64_t modeled_bytes) {
  const char* verb = direction == XferDirection::kToDpu ? "push to DPUs" : "push from DPUs";
  // Prepared buffers are consumed by this push, whether it succeeds or not (DPU_XFER_DEFAULT).
  struct ClearPrepared {
    std::vector<std::pair<void*, uint64_t>>& prepared;
    ~ClearPrepared() { std::fill(prepared.begin(), prepared.end(), std::pair<void*, uint64_t>{nullptr, 0}); }
  } clear_prepared{prepared_};
  uint32_t count = 0;
  for (uint32_t i = 0; i < size(); ++i) {
    if (!prepared_[i].first) continue;
    ++count;
    if (prepared_[i].second < bytes) {
      throw PimError(StrCat("kernel '", kernel_name_, "', DPU ", i, ": ", verb, " of ", bytes,
                            " bytes per DPU, but the buffer prepared for this DPU holds ", prepared_[i].second,
                            " bytes (a parallel push moves the same length to every DPU)"));
    }
    dpus_[i]->CheckHostAccess(symbol, offset, bytes, verb);
  }
  if (count == 0) throw PimError(StrCat(verb, ": no DPU has a prepared buffer (PrepareXfer)"));
  pool_->ParallelFor(size(), [&](size_t i) {
    if (!prepared_[i].first) return;
    if (direction == XferDirection::kToDpu) {
      dpus_[i]->HostWrite(symbol, offset, prepared_[i].first, bytes);
    } else {
      dpus_[i]->HostRead(symbol, offset, prepared_[i].first, bytes);
    }
  });
  TransferVerb transfer{direction == XferDirection::kToDpu ? TransferVerb::Kind::kPush : TransferVerb::Kind::kPull,
                        count, modeled_bytes != 0 ? modeled_bytes : bytes};
  if (direction == XferDirection::kToDpu) {
    std::vector<const void*> sources(prepared_.size());
    for (size_t i = 0; i < prepared_.size(); ++i) sources[i] = prepared_[i].first;
    // Recorded as 0 when every DPU of the fullest rank has a buffer of its own (the same time): the log then says
    // "one per DPU" at any DPU count it is re-timed for.
    const uint32_t sources_per_rank = SourcesPerRank(sources, profile_->dpus_per_rank);
    transfer.sources_per_rank = sources_per_rank == std::min(count, profile_->dpus_per_rank) ? 0 : sources_per_rank;
  }
  return Transferred(transfer, tag);
}

double DpuSet::BroadcastTo(std::string_view symbol, uint64_t offset, const void* source, uint64_t bytes,
                           uint32_t tag) {
  for (auto& d : dpus_) d->CheckHostAccess(symbol, offset, bytes, "broadcast");
  pool_->ParallelFor(size(), [&](size_t i) { dpus_[i]->HostWrite(symbol, offset, source, bytes); });
  return Transferred({TransferVerb::Kind::kBroadcast, size(), bytes}, tag);
}

uint64_t DpuSet::HostMemoryBytes() const {
  uint64_t total = 0;
  for (const auto& d : dpus_) total += d->HostMemoryBytes();
  return total;
}

// ---------------------------------------------------------------- PimSystem
PimSystem::PimSystem(HardwareProfile profile, int host_threads)
    : profile_(std::move(profile)), pool_(std::make_unique<ThreadPool>(host_threads)) {
  profile_.Validate();
}
PimSystem::~PimSystem() = default;

DpuSet PimSystem::Allocate(uint32_t num_dpus) {
  if (num_dpus == 0 || num_dpus > profile_.num_dpus) {
    throw ConfigError(
        "--dpus", StrCat("cannot allocate ", num_dpus, " DPUs: profile '", profile_.name, "' has ", profile_.num_dpus));
  }
  return DpuSet(profile_, num_dpus, *pool_);
}

}  // namespace pimopt::pim
