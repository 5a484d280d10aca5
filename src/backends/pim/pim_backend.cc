#include "pimopt/backends/pim/pim_backend.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstring>

#include "pimopt/algorithms/algorithm.h"
#include "pimopt/core/error.h"
#include "pimopt/core/file_util.h"
#include "pimopt/core/thread_pool.h"
#include "pimopt/pim/encoding_cost.h"
#include "pimopt/pim/host_model.h"
#include "pimopt/pim/interconnect.h"
#include "pimopt/pim/pipelined_reduction.h"

namespace pimopt {

using pimbackend::kNoRow;
using pimbackend::LinearKernelArgs;

namespace {
using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
constexpr size_t kReduceBlock = 4096;  // coordinates per host-reduction task
// The kernel updates only touched coordinates when a step has fewer non-zeros than the model has coordinates divided
// by this (LocalSgd without decay; docs/pim-backend.md "Sparse local steps").
constexpr uint64_t kSparseUpdateRatio = 1;

// v / divisor rounded toward zero, as C++'s '/': by shifts when the divisor is a power of two (DPU counts usually
// are), which the host's per-coordinate loops would otherwise spend a 64-bit division on.
class DivideTowardZero {
 public:
  explicit DivideTowardZero(int64_t divisor) : divisor_(divisor) {
    if (divisor > 0 && (divisor & (divisor - 1)) == 0) shift_ = std::countr_zero(static_cast<uint64_t>(divisor));
  }
  int64_t operator()(int64_t v) const {
    if (shift_ < 0) return v / divisor_;
    const int64_t bias = (v >> 63) & ((int64_t{1} << shift_) - 1);  // negative: round toward zero
    return (v + bias) >> shift_;
  }

 private:
  int64_t divisor_;
  int shift_ = -1;
};
}  // namespace

namespace {

ParamTable<PimBackendOptions> MakePimParams() {
  ParamTable<PimBackendOptions> t;
  const std::string group = kPimParamGroup;
  t.Add("tasklets", &PimBackendOptions::tasklets, 16)
      .Min(1)
      .Unit("tasklets")
      .Effect(ParamEffect::kModeledTime)
      .AppliesWhen("backend", {"pim"})
      .Group(group)
      .Help("tasklets (hardware threads) per DPU; at most what the profile and the kernel's WRAM allow");
  t.AddCustom(
       "profile", ParamType::kChoice, std::string("pim-opt"),
       [](const PimBackendOptions& o) -> ParamValue { return o.profile; },
       [](PimBackendOptions& o, const ParamValue& v) { o.profile = std::get<std::string>(v); })
      .ListChoices([] {
        std::vector<ParamChoice> choices;
        for (const pim::ProfilePreset& p : pim::ProfilePresets()) choices.push_back({p.name, p.description, {}});
        return choices;
      })
      .Noun("hardware profile")
      .Effect(ParamEffect::kModeledTime)
      .AppliesWhen("backend", {"pim"})
      .Group(group)
      .Help("hardware profile ('pimopt profile' lists them and their fields)");
  t.Add("profile-set", &PimBackendOptions::profile_overrides, "")
      .Effect(ParamEffect::kModeledTime)
      .AppliesWhen("backend", {"pim"})
      .Group(group)
      .Help(
          "profile overrides FIELD=VALUE,... (any field 'pimopt profile NAME' shows, e.g. "
          "dpu_frequency_hz=4e8,slots.float_mul=1)");
  t.AddChoice("kernel", &PimBackendOptions::artifact_kernel, false,
              std::vector<std::pair<ParamChoice, bool>>{
                  {{"pimopt", "pimopt's: int8 features, sample-parallel scoring, the model broadcast", {}}, false},
                  {{"pim-opt",
                    "PIM-Opt's: int32 Q0.31 features with 64-bit products shifted one by one, its -1 rule, feature "
                    "split, float sigmoid with a 4 MiB exp table, hinge margin 2^-15, int32 GA gradients on dense "
                    "data, the model pushed to each DPU and ADMM's x_k pushed back every round",
                    {}},
                   true}})
      .Noun("kernel")
      .AppliesWhen("backend", {"pim"})
      .Group(group)
      .Help("the DPU kernel and transfer pattern (docs/pim-backend.md compares them)");
  t.AddChoice("sigmoid", &PimBackendOptions::sigmoid_float, false,
              std::vector<std::pair<ParamChoice, bool>>{
                  {{"table", "fixed-point lookup table", {}}, false},
                  {{"float", "PIM-Opt's software-float exp (slower on DPUs)", {}}, true}})
      .Noun("sigmoid")
      .AppliesWhen("backend", {"pim"})
      .AppliesWhen("model", {"lr"})
      .Group(group)
      .Help("how DPUs compute the logistic sigmoid");
  t.AddChoice("tasklet-split", &PimBackendOptions::feature_split, false,
              std::vector<std::pair<ParamChoice, bool>>{
                  {{"samples", "each tasklet whole rows, 2 barriers per step", {}}, false},
                  {{"features", "PIM-Opt's: each tasklet part of every row, 2 barriers per row", {}}, true}})
      .Noun("split")
      .Effect(ParamEffect::kModeledTime)
      .AppliesWhen("backend", {"pim"})
      .Group(group)
      .Help("how a DPU's tasklets share the work on dense data (docs/pim-backend.md compares them)");
  t.AddChoice("sync-path", &PimBackendOptions::sync_path, PimBackendOptions::SyncPath::kAuto,
              std::vector<std::pair<ParamChoice, PimBackendOptions::SyncPath>>{
                  {{"auto", "what-if DPU links where the profile's links cover a synchronization, else the host", {}},
                   PimBackendOptions::SyncPath::kAuto},
                  {{"host", "every synchronization through the host (today's UPMEM)", {}},
                   PimBackendOptions::SyncPath::kHost},
                  {{"links",
                    "every synchronization over the profile's links (all-reduces, gossip); an error when they do not "
                    "cover it",
                    {}},
                   PimBackendOptions::SyncPath::kLinks}})
      .Noun("path")
      .Effect(ParamEffect::kModeledTime)
      .AppliesWhen("backend", {"pim"})
      .Group(group)
      .Help("how DPUs synchronize on a profile with what-if DPU links (docs/pim-emulator.md 'What-if "
            "interconnects'): the sums of MA-SGD, GA-SGD and ADMM by all-reduce (flat ring or hierarchical), D-PSGD's "
            "gossip DPU to DPU");
  t.AddChoice(
       "host-time", &PimBackendOptions::measured_host, false,
       std::vector<std::pair<ParamChoice, bool>>{
           {{"modeled", "the profile's host model (host_* fields): the same on every machine", {}}, false},
           {{"measured", "this machine's real reduction time (varies with the machine and its load)", {}}, true}})
      .Noun("host time")
      .Effect(ParamEffect::kModeledTime)
      .AppliesWhen("backend", {"pim"})
      .Group(group)
      .Help("how the host's reduction at each synchronization is timed in the modeled times");
  t.AddChoice("sync-format", &PimBackendOptions::sync_format, PimBackendOptions::SyncFormat::kDense,
              std::vector<std::pair<ParamChoice, PimBackendOptions::SyncFormat>>{
                  {{"dense", "every DPU sends its whole vector (PIM-Opt's)", {}},
                   PimBackendOptions::SyncFormat::kDense},
                  {{"auto",
                    "a DPU sends the coordinates its rows touched as (index, value) pairs when that is smaller: "
                    "GA-SGD's gradients, MA-SGD's model deltas with --reg 0 (the same model)",
                    {}},
                   PimBackendOptions::SyncFormat::kAuto},
                  {{"int16",
                    "MA-SGD: every DPU sends its model delta quantized to 16 bits with error feedback (lossy)", {}},
                   PimBackendOptions::SyncFormat::kInt16},
                  {{"int8", "MA-SGD: ... to 8 bits with error feedback (lossy)", {}},
                   PimBackendOptions::SyncFormat::kInt8}})
      .Noun("format")
      .Effect(ParamEffect::kResult)
      .AppliesWhen("backend", {"pim"})
      .Group(group)
      .Help("how DPUs send their vectors up to the host at a synchronization (docs/pim-backend.md 'Compacted "
            "synchronization', 'Quantized model deltas')");
  t.AddChoice("transfers", &PimBackendOptions::async_transfers, false,
              std::vector<std::pair<ParamChoice, bool>>{
                  {{"sync", "each pull ends before the host's reduction starts (PIM-Opt's host)", {}}, false},
                  {{"async",
                    "the host pulls in chunks of coordinates with asynchronous transfers and reduces each chunk while "
                    "the next is on its way",
                    {}},
                   true}})
      .Noun("transfers")
      .Effect(ParamEffect::kModeledTime)
      .AppliesWhen("backend", {"pim"})
      .Group(group)
      .Help("how the modeled host overlaps a synchronization's pull with its reduction (docs/pim-emulator.md "
            "'Asynchronous transfers')");
  t.AddChoice("scheduler", &PimBackendOptions::scheduler, pim::Scheduler::kBatched,
              std::vector<std::pair<ParamChoice, pim::Scheduler>>{
                  {{"batched",
                    "a tasklet runs on past its DMAs and unlocks; DPUs that do the same events share their clock's "
                    "work",
                    {}},
                   pim::Scheduler::kBatched},
                  {{"reference", "a tasklet stops at every event for the clock (slower)", {}},
                   pim::Scheduler::kReference}})
      .Noun("scheduler")
      .Effect(ParamEffect::kNone)
      .AppliesWhen("backend", {"pim"})
      .Group(group)
      .Help("how the emulator runs the DPUs' tasklets: the same model and modeled times either way "
            "(docs/pim-emulator.md 'The batched scheduler')");
  return t;
}

}  // namespace

const ParamTable<PimBackendOptions>& PimParams() {
  static const ParamTable<PimBackendOptions> table = MakePimParams();
  return table;
}

PimBackendOptions::PimBackendOptions() { PimParams().ApplyDefaults(*this); }

pim::HardwareProfile PimBackendOptions::ResolveProfile() const {
  const pim::HardwareProfile profile = pim::MakeProfile(this->profile, profile_overrides);
  if (tasklets == 0 || tasklets > profile.max_tasklets) {
    throw ConfigError("--tasklets", StrCat("must be in 1..", profile.max_tasklets, " (profile '", profile.name, "')"));
  }
  pim::CheckTaskletsFit(pimbackend::MakeLinearKernel()->Spec(), profile, tasklets,
                        StrCat("the linear kernel's WRAM buffers (", pimbackend::kHeapBytesPerTasklet,
                               " bytes per tasklet, and its stack)"));
  return profile;
}

PimBackend::PimBackend(ThreadPool& pool, PimBackendOptions options) : pool_(pool), options_(std::move(options)) {}
PimBackend::~PimBackend() = default;

double PimBackend::HostSecondsSince(Clock::time_point t0, double comm_s0) const {
  return Since(t0) - (comm_->stats().seconds - comm_s0);
}

template <typename T>
std::vector<int64_t> PimBackend::SumOverAllDpus(size_t total, const std::vector<std::vector<T>>& vectors,
                                                const std::vector<std::vector<int32_t>>* more) {
  std::vector<int64_t> sums(total, 0);
  // Each task owns a block of coordinates and streams every DPU's slice of it (contiguous, vectorizable): the loop
  // the modeled host describes (pim/host_model.h). Integer sums: exact in any order.
  pool_.ParallelFor((total + kReduceBlock - 1) / kReduceBlock, [&](size_t b) {
    const size_t begin = b * kReduceBlock, end = std::min(total, (b + 1) * kReduceBlock);
    int64_t* out = sums.data();
    for (uint32_t k = 0; k < num_dpus_; ++k) {
      const T* in = vectors[k].data();
      for (size_t j = begin; j < end; ++j) out[j] += in[j];
    }
    if (more) {
      for (uint32_t k = 0; k < num_dpus_; ++k) {
        const int32_t* in = (*more)[k].data();
        for (size_t j = begin; j < end; ++j) out[j] += in[j];
      }
    }
  });
  comm_->AllreduceSum(sums);
  return sums;
}

void PimBackend::Setup(const Dataset& train, const TrainConfig& config, const Partition& part, Communicator& comm) {
  PIMOPT_CHECK(part.local_rows == train.num_rows() && part.total_workers == config.workers,
               "the training rows do not match the partition");
  profile_ = options_.ResolveProfile();
  if (part.local_workers > static_cast<int>(profile_.num_dpus)) {
    throw ConfigError("--dpus", StrCat(part.local_workers, " DPUs requested", part.distributed() ? " per process" : "",
                                       "; profile '", profile_.name, "' has ", profile_.num_dpus));
  }
  data_ = &train;
  train_rows_ = train.num_rows();
  config_ = config;
  features_ = static_cast<uint32_t>(train.num_features());
  part_ = part;
  comm_ = &comm;
  num_dpus_ = static_cast<uint32_t>(part.local_workers);
  const auto shards = LocalShards(part);
  shard_begin_.clear();
  shard_rows_.clear();
  uint32_t max_rows = 0;
  uint64_t max_nonzeros = 0;
  for (const Shard& s : shards) {
    shard_begin_.push_back(s.begin);
    shard_rows_.push_back(s.size());
    max_rows = std::max(max_rows, s.size());
    if (train.is_sparse()) {
      max_nonzeros = std::max(max_nonzeros, train.csr().row_ptr[s.end] - train.csr().row_ptr[s.begin]);
    }
  }
  if (train.is_sparse()) max_nonzeros = std::max<uint64_t>(max_nonzeros, 1);
  const uint64_t batch = config.batch;
  // Row lists: GA/MB-SGD send one step (at most min(batch, rows) rows), local SGD sends up to an epoch of steps
  // (ceil(rows / batch)) or H steps, each `slots` entries (the batch rounded up to even for 8-byte transfers).
  const uint64_t slots = (batch + 1) / 2 * 2;
  const uint64_t epoch_steps = (max_rows + batch - 1) / batch;
  max_list_entries_ = std::max({slots, epoch_steps * slots, uint64_t(config.local_steps) * slots}) + 2;
  if (options_.async_transfers && options_.measured_host) {
    throw ConfigError("--transfers", "async overlaps the modeled host's reduction with the pulls; it needs "
                                     "--host-time modeled (this machine's measured reduction cannot be split in chunks)");
  }
  if (QuantizedBits() > 0 && config.algorithm != "ma") {
    throw ConfigError("--sync-format", StrCat("int16 and int8 quantize MA-SGD's model deltas (--algo ma), not ",
                                              config.algorithm, "'s synchronizations; use dense or auto"));
  }
  const bool artifact = options_.artifact_kernel;
  layout_ = pimbackend::MakeLinearLayout(features_, max_rows, max_list_entries_, max_nonzeros, artifact);
  if (layout_.end > profile_.mram_bytes) {
    throw ConfigError(
        "--dpus", StrCat("each DPU would need ", layout_.end, " bytes (", ByteSizeText(layout_.end),
                         ") of MRAM for ", max_rows, " rows of ", layout_.n_pad, " features (", profile_.mram_bytes,
                         " bytes available): use more DPUs"));
  }
  CheckMemoryNeed(static_cast<uint64_t>(num_dpus_) * layout_.end,
                  StrCat("the emulated MRAM (", num_dpus_, " DPUs x ", layout_.end, " bytes for ", max_rows,
                         " rows of ", layout_.n_pad, " features)"),
                  "--dpus");
  system_ = std::make_unique<pim::PimSystem>(profile_, options_.host_threads);
  dpus_ = std::make_unique<pim::DpuSet>(system_->Allocate(num_dpus_));
  dpus_->SetScheduler(options_.scheduler);
  dpus_->Load(pimbackend::MakeLinearKernel(), options_.tasklets);

  // Quantize and push every shard once (one parallel push: the same length for every DPU, short shards padded).
  const uint64_t data_bytes = layout_.w_offset;
  std::vector<std::vector<int8_t>> buffers(num_dpus_, std::vector<int8_t>(data_bytes, 0));
  std::vector<fixed::Saturation> sat(num_dpus_);
  pool_.ParallelFor(num_dpus_, [&](size_t k) {
    int8_t* buffer = buffers[k].data();
    if (train.is_sparse()) {
      const CsrMatrix& m = train.csr();
      const uint64_t first = m.row_ptr[shard_begin_[k]];
      auto* row_ptr = reinterpret_cast<uint32_t*>(buffer + layout_.x_offset);
      auto* cols = reinterpret_cast<uint32_t*>(buffer + layout_.col_offset);
      int8_t* vals = buffer + layout_.val_offset;
      for (uint32_t r = 0; r <= shard_rows_[k]; ++r) {
        row_ptr[r] = static_cast<uint32_t>(m.row_ptr[shard_begin_[k] + r] - first);
      }
      for (uint64_t e = first; e < m.row_ptr[shard_begin_[k] + shard_rows_[k]]; ++e) {
        cols[e - first] = m.col[e];
        vals[e - first] = fixed::QuantizeFeature(m.val[e], sat[k]);
      }
    } else {
      const float* values = train.dense_values().data();
      for (uint32_t r = 0; r < shard_rows_[k]; ++r) {
        const uint64_t row = shard_begin_[k] + r;
        if (artifact) {  // PIM-Opt's kernel: int32 Q0.31
          auto* out = reinterpret_cast<int32_t*>(buffer + layout_.x_offset) + uint64_t{r} * layout_.n_pad;
          for (uint32_t j = 0; j < features_; ++j) {
            out[j] = pimbackend::QuantizeFeatureArtifact(values[row * features_ + j], sat[k]);
          }
          continue;
        }
        int8_t* out = buffer + layout_.x_offset + uint64_t{r} * layout_.n_pad;
        for (uint32_t j = 0; j < features_; ++j) out[j] = fixed::QuantizeFeature(values[row * features_ + j], sat[k]);
      }
    }
    for (uint32_t r = 0; r < shard_rows_[k]; ++r) {
      buffer[layout_.y_offset + r] = train.labels()[shard_begin_[k] + r] > 0 ? 1 : -1;
    }
  });
  quantization_saturations_ = 0;
  for (const auto& s : sat) quantization_saturations_ += static_cast<double>(s.events);
  ledger_ = {};
  round_pulls_.clear();
  for (uint32_t k = 0; k < num_dpus_; ++k) dpus_->PrepareXfer(k, buffers[k].data(), data_bytes);
  Push(Activity::kSetup, TransferKind::kData, pim::kMramHeapSymbol, 0, data_bytes);
  if (!artifact) {
    Broadcast(Activity::kSetup, TransferKind::kData, layout_.sigmoid_offset, fixed::SigmoidTable().data(),
              4 * fixed::kSigmoidEntries);
  } else if (config.objective.loss == LossKind::kLogistic) {  // PIM-Opt broadcasts its exp table (LR only)
    Broadcast(Activity::kSetup, TransferKind::kData, layout_.sigmoid_offset, pimbackend::ArtifactExpTable().data(),
              4 * uint64_t{pimbackend::kArtifactExpTableEntries});
  }

  global_.assign(layout_.n_pad + 1, 0);
  local_.assign(num_dpus_, std::vector<int32_t>(layout_.n_pad + 1, 0));
  dual_.assign(config.traits().keeps_duals ? num_dpus_ : 0, std::vector<int32_t>(layout_.n_pad + 1, 0));
  delta_error_.assign(QuantizedBits() > 0 ? num_dpus_ : 0, std::vector<int32_t>(layout_.n_pad + 1, 0));
  saturation_ = {};
}

LinearKernelArgs PimBackend::BaseArgs() const {
  LinearKernelArgs a;
  a.loss = pimbackend::ToKernelLoss(config_.objective.loss);
  a.n_pad = layout_.n_pad;
  a.fit_bias = config_.objective.fit_bias ? 1 : 0;
  fixed::Saturation ignored;
  a.positive_weight_q24 = fixed::ToModel(config_.objective.positive_weight, ignored);
  a.negative_weight_q24 = fixed::ToModel(config_.objective.negative_weight, ignored);
  a.x_offset = layout_.x_offset;
  a.y_offset = layout_.y_offset;
  a.w_offset = layout_.w_offset;
  a.v_offset = layout_.v_offset;
  a.g_offset = layout_.g_offset;
  a.list_offset = layout_.list_offset;
  a.sigmoid_offset = layout_.sigmoid_offset;
  a.sparse = layout_.sparse ? 1 : 0;
  a.artifact = options_.artifact_kernel ? 1 : 0;
  a.sigmoid_float = options_.sigmoid_float || options_.artifact_kernel ? 1 : 0;
  a.feature_split = (options_.feature_split || options_.artifact_kernel) && !layout_.sparse ? 1 : 0;
  a.col_offset = layout_.col_offset;
  a.val_offset = layout_.val_offset;
  return a;
}

void PimBackend::PushArgs(const std::vector<LinearKernelArgs>& args) {
  for (uint32_t k = 0; k < num_dpus_; ++k) {
    dpus_->PrepareXfer(k, const_cast<LinearKernelArgs*>(&args[k]), sizeof(LinearKernelArgs));
  }
  Push(Activity::kTraining, TransferKind::kPushArgs, pimbackend::kArgsSymbol, 0, sizeof(LinearKernelArgs));
}

void PimBackend::PushRowLists(const std::vector<std::vector<uint32_t>>& lists, uint32_t entries) {
  const uint64_t bytes = (uint64_t{entries} + 1) / 2 * 2 * 4;
  PIMOPT_CHECK(bytes / 4 <= max_list_entries_ + 1, "row list larger than its MRAM region");
  for (uint32_t k = 0; k < num_dpus_; ++k) {
    PIMOPT_CHECK(lists[k].size() * 4 >= bytes);
    dpus_->PrepareXfer(k, const_cast<uint32_t*>(lists[k].data()), lists[k].size() * 4);
  }
  Push(Activity::kTraining, TransferKind::kPushRows, pim::kMramHeapSymbol, layout_.list_offset, bytes);
}

void PimBackend::BroadcastModel(const std::vector<int32_t>& model) {
  std::vector<int32_t> padded(layout_.n_pad + 8, 0);
  std::copy(model.begin(), model.end(), padded.begin());
  if (global_on_dpus_ && &model == &global_) {
    // After an all-reduce over links every DPU holds the model: this push only carries it in the emulator.
    global_on_dpus_ = false;
    Broadcast(Activity::kLinkExchange, TransferKind::kBroadcastModel, layout_.w_offset, padded.data(),
              layout_.model_bytes());
    return;
  }
  if (options_.artifact_kernel) {  // PIM-Opt pushes the model to every DPU with a parallel push, not a broadcast
    for (uint32_t k = 0; k < num_dpus_; ++k) dpus_->PrepareXfer(k, padded.data(), layout_.model_bytes());
    Push(Activity::kTraining, TransferKind::kPushModels, pim::kMramHeapSymbol, layout_.w_offset, layout_.model_bytes());
    return;
  }
  Broadcast(Activity::kTraining, TransferKind::kBroadcastModel, layout_.w_offset, padded.data(), layout_.model_bytes());
}

template <typename T>
std::vector<std::vector<T>>& PimBackend::Staging(std::vector<std::vector<T>>& buffers) {
  if (buffers.size() != num_dpus_ || (!buffers.empty() && buffers[0].size() != layout_.n_pad + 8)) {
    buffers.assign(num_dpus_, std::vector<T>(layout_.n_pad + 8, 0));
  }
  return buffers;
}

void PimBackend::PushModelVectors(TransferKind kind, uint64_t offset,
                                  const std::function<void(uint32_t dpu, int32_t* vector)>& fill, Activity activity) {
  std::vector<std::vector<int32_t>>& vectors = Staging(staged_pushes_);
  for (uint32_t k = 0; k < num_dpus_; ++k) {
    std::fill(vectors[k].begin() + layout_.n_pad + 1, vectors[k].end(), 0);  // the padding after the bias
    fill(k, vectors[k].data());
    dpus_->PrepareXfer(k, vectors[k].data(), layout_.model_bytes());
  }
  Push(activity, kind, pim::kMramHeapSymbol, offset, layout_.model_bytes());
}

void PimBackend::PullModels(Activity activity) {
  std::vector<std::vector<int32_t>>& buffers = Staging(staged_models_);
  for (uint32_t k = 0; k < num_dpus_; ++k) dpus_->PrepareXfer(k, buffers[k].data(), layout_.model_bytes());
  Pull(activity, TransferKind::kPullModels, pim::kMramHeapSymbol, layout_.w_offset, layout_.model_bytes());
  for (uint32_t k = 0; k < num_dpus_; ++k) std::copy_n(buffers[k].begin(), layout_.n_pad + 1, local_[k].begin());
}

void PimBackend::Launch() {
  const pim::LaunchStats s = dpus_->Launch();
  round_pulls_.clear();
  ++ledger_.launches;
  const double f = profile_.dpu_frequency_hz;
  ledger_.kernel_s += s.kernel_s;
  ledger_.launch_s += s.overhead_s;
  ledger_.compute_s += s.slowest.issue / f;
  ledger_.dma_s += s.slowest.dma / f;
  ledger_.sync_s += s.slowest.sync / f;
  ledger_.dpu_energy_j += s.energy_j;
  ledger_.emulation_wall_s += s.host_wall_s;
  ledger_.mram_wram_bytes += s.mram_read_bytes + s.mram_write_bytes;
}

void PimBackend::GradientStep(std::span<const std::span<const uint32_t>> worker_rows, uint64_t batch_rows, double lr) {
  CheckBeforeStep();
  PIMOPT_CHECK(worker_rows.size() == num_dpus_ && batch_rows > 0);
  uint32_t slots = 2;
  for (auto rows : worker_rows) slots = std::max<uint32_t>(slots, static_cast<uint32_t>(rows.size()));
  slots = (slots + 1) / 2 * 2;
  std::vector<std::vector<uint32_t>> lists(num_dpus_, std::vector<uint32_t>(slots, kNoRow));
  std::vector<LinearKernelArgs> args(num_dpus_, BaseArgs());
  for (uint32_t k = 0; k < num_dpus_; ++k) {
    for (size_t i = 0; i < worker_rows[k].size(); ++i) lists[k][i] = LocalRow(k, worker_rows[k][i]);
    args[k].mode = pimbackend::KernelMode::kGradient;
    args[k].steps = 1;
    args[k].slots_per_step = slots;
  }
  BroadcastModel(global_);
  PushRowLists(lists, slots);
  PushArgs(args);
  Launch();
  std::vector<std::vector<int64_t>>& grads = Staging(staged_gradients_);
  const bool narrow = options_.artifact_kernel && !layout_.sparse;  // PIM-Opt: int32 dense gradients (Q.24)
  // Over links: a ring all-reduce of the gradients as 64-bit partial sums, after which every DPU applies the same
  // step to its copy of the model; the host's pull, sum and next broadcast only carry it in the emulator.
  const std::optional<pim::LinkExchangeTime> linked =
      LinkPath(pim::ModelAllReduce(profile_, part_.total_workers, 2 * layout_.model_bytes()),
               "the gradient sum of GA-SGD or MB-SGD (an all-reduce)");
  // --sync-format auto: the gradient's touched coordinates as (index, value) pairs when smaller (not with PIM-Opt's
  // narrowed dense gradients, nor over links).
  const bool compact = options_.sync_format == PimBackendOptions::SyncFormat::kAuto;
  const uint64_t pairs = compact && !narrow && !linked ? MostTouchedPairs(worker_rows) : 0;
  const bool compacted = pairs > 0 && CompactedBytes(pairs) < layout_.gradient_bytes();
  // The emulator's pull; the machine's, when compacted, is recorded after it.
  const Activity activity = linked ? Activity::kLinkExchange
                            : compacted ? Activity::kEncodedCarrier
                                        : Activity::kTraining;
  if (narrow) {
    std::vector<std::vector<int32_t>>& narrowed = Staging(staged_narrow_gradients_);
    for (uint32_t k = 0; k < num_dpus_; ++k) dpus_->PrepareXfer(k, narrowed[k].data(), layout_.model_bytes());
    Pull(activity, TransferKind::kPullGradients, pim::kMramHeapSymbol, layout_.v_offset,
         layout_.model_bytes());
    pool_.ParallelFor(num_dpus_, [&](size_t k) {
      for (size_t j = 0; j < narrowed[k].size(); ++j) grads[k][j] = int64_t{narrowed[k][j]} << fixed::kFeatureFracBits;
    });
  } else {
    for (uint32_t k = 0; k < num_dpus_; ++k) dpus_->PrepareXfer(k, grads[k].data(), layout_.gradient_bytes());
    Pull(activity, TransferKind::kPullGradients, pim::kMramHeapSymbol, layout_.g_offset,
         layout_.gradient_bytes());
  }
  if (compacted) RecordEncodedPull(TransferKind::kPullGradients, CompactedBytes(pairs),
                                    pim::CompactionCycles(profile_, pairs, CompactedBytes(pairs)));
  // Host: exact 64-bit sums over the DPUs (and over processes), then the fixed-point step.
  const auto t0 = Clock::now();
  const double comm_s0 = comm_->stats().seconds;
  const uint64_t scale = fixed::ToScale(lr / static_cast<double>(batch_rows), "--lr");
  const uint64_t decay = fixed::ToScale(lr * config_.objective.l2, "--reg");
  const size_t total = layout_.n_pad + 1;
  std::vector<fixed::Saturation> sat((total + kReduceBlock - 1) / kReduceBlock);
  const std::vector<int64_t> sums = SumOverAllDpus(total, grads);
  pool_.ParallelFor(sat.size(), [&](size_t b) {
    for (size_t j = b * kReduceBlock; j < std::min(total, (b + 1) * kReduceBlock); ++j) {
      const int64_t g = sums[j];
      const int64_t decay_base = j < layout_.n_pad ? global_[j] : 0;  // no L2 on the bias
      global_[j] = fixed::SaturateModel(fixed::SgdUpdate(global_[j], g, scale, decay_base, decay), sat[b]);
    }
  });
  for (const auto& s : sat) saturation_.events += s.events;
  if (!config_.objective.fit_bias) global_[layout_.n_pad] = 0;
  if (linked) {
    RecordLinkWork(*linked, {std::nullopt, 2 * layout_.model_bytes()});
    global_on_dpus_ = true;
    return;
  }
  if (compacted) {
    // The pairs summed into a zeroed vector (index, int64 value: 12 bytes read per pair, the sum read and written),
    // then the step over every coordinate (read the sum and the model, write the model, zero the sum).
    RecordHostWork({.vectors_per_dpu = 1,
                    .bytes_per_element = 12,
                    .elements = pairs,
                    .update_bytes_per_element = 24,
                    .model_elements = total},
                   t0, comm_s0);
    return;
  }
  // int64 gradients summed; per coordinate: read the sum and the model, write the model and zero the sum.
  RecordHostWork(
      {.vectors_per_dpu = 1, .bytes_per_element = narrow ? 4u : 8u, .elements = total, .update_bytes_per_element = 24},
      t0, comm_s0);
}

void PimBackend::LocalSgd(const LocalSgdRequest& req) {
  CheckBeforeStep();
  PIMOPT_CHECK(req.plan && req.plan->num_workers() == static_cast<int>(num_dpus_));
  const uint32_t slots = static_cast<uint32_t>((config_.batch + 1) / 2 * 2);
  const uint64_t entries = req.num_steps * slots;
  if (entries > max_list_entries_) {
    throw InternalError(StrCat("row list of ", entries, " entries exceeds the MRAM region of ", max_list_entries_));
  }
  std::vector<std::vector<uint32_t>> lists(num_dpus_, std::vector<uint32_t>(entries + 2, kNoRow));
  std::vector<LinearKernelArgs> args(num_dpus_, BaseArgs());
  for (uint32_t k = 0; k < num_dpus_; ++k) {
    for (uint64_t s = 0; s < req.num_steps; ++s) {
      const auto rows = req.plan->LocalBatch(static_cast<int>(k), req.first_step + s);
      for (size_t i = 0; i < rows.size(); ++i) lists[k][s * slots + i] = LocalRow(k, rows[i]);
    }
    args[k].mode = req.proximal ? pimbackend::KernelMode::kProximalSgd : pimbackend::KernelMode::kLocalSgd;
    args[k].steps = static_cast<uint32_t>(req.num_steps);
    args[k].slots_per_step = slots;
    const double weight =
        req.proximal ? static_cast<double>(part_.total_workers) * shard_rows_[k] / part_.total_rows : 1.0;
    args[k].lr_weight_q32 = fixed::ToScale(req.lr * weight, "--lr");
    args[k].decay_q32 = fixed::ToScale(req.lr * (req.proximal ? req.rho : config_.objective.l2), "--lr");
    if (layout_.sparse && !options_.artifact_kernel && !req.proximal && args[k].decay_q32 == 0) {
      // Without decay only the touched coordinates move: the kernel updates those instead of sweeping the model
      // where that is cheaper (the same model). Measured on the pim-opt profile, a sweep costs about 290 modeled
      // cycles per coordinate and the sparse update about as much per non-zero (the ownership scan of every
      // tasklet, four 8-byte DMAs and the step's multiply), so the sparse update wins below one non-zero per
      // coordinate in the step with the most.
      uint64_t most = 0;
      const CsrMatrix& m = data_->csr();
      for (uint64_t s = 0; s < req.num_steps; ++s) {
        uint64_t nonzeros = 0;
        for (uint32_t r : req.plan->LocalBatch(static_cast<int>(k), req.first_step + s)) {
          nonzeros += m.row_ptr[r + 1] - m.row_ptr[r];
        }
        most = std::max(most, nonzeros);
      }
      args[k].sparse_update = most * kSparseUpdateRatio < layout_.n_pad ? 1 : 0;
    }
  }
  if (options_.sync_format == PimBackendOptions::SyncFormat::kAuto && req.start_from_global && !req.proximal &&
      !(config_.objective.l2 > 0)) {
    // MA-SGD with --reg 0: a DPU's model moves only where its rows have non-zeros (and the bias) until the average.
    std::vector<std::vector<uint32_t>> rows_of(num_dpus_);
    for (uint32_t k = 0; k < num_dpus_; ++k) {
      for (uint64_t st = 0; st < req.num_steps; ++st) {
        const auto rows = req.plan->LocalBatch(static_cast<int>(k), req.first_step + st);
        for (uint32_t r : rows) rows_of[k].push_back(r);
      }
    }
    std::vector<std::span<const uint32_t>> spans(rows_of.begin(), rows_of.end());
    model_delta_pairs_ = MostTouchedPairs(spans);
  } else {
    model_delta_pairs_ = 0;
  }
  if (req.start_from_global) {
    BroadcastModel(global_);
  } else if (req.proximal && options_.artifact_kernel) {
    // PIM-Opt's ADMM pushes every DPU its own x_k back each round (K distinct buffers; the DPU already holds it).
    PushModelVectors(TransferKind::kPushModels, layout_.w_offset,
                     [&](uint32_t k, int32_t* model) { std::copy(local_[k].begin(), local_[k].end(), model); });
  }
  if (req.proximal) {
    // After a consensus over links every DPU computed its own target: this push only carries it in the emulator.
    PushModelVectors(
        TransferKind::kPushTargets, layout_.v_offset,
        [&](uint32_t k, int32_t* target) {
          for (size_t j = 0; j <= layout_.n_pad; ++j) {
            target[j] = fixed::SaturateModel(int64_t{global_[j]} - dual_[k][j], saturation_);  // v_k = z - u_k
          }
        },
        targets_on_dpus_ ? Activity::kLinkExchange : Activity::kTraining);
  }
  PushRowLists(lists, static_cast<uint32_t>(entries));
  PushArgs(args);
  Launch();
}

void PimBackend::MixLocalModels(const Topology& topology) {
  // Today's hardware has no DPU-to-DPU path: the host pulls every x_k, mixes, and pushes each DPU its new x_k.
  const uint32_t all_dpus = static_cast<uint32_t>(part_.total_workers);
  PIMOPT_CHECK(topology.workers() == all_dpus, "MixLocalModels: the run's DPUs");
  // With links covering every edge of the topology the models move DPU to DPU: modeled by the link model, the
  // emulator's pull and push (which carry the bytes) not counted as the machine's transfers.
  const std::optional<pim::LinkExchangeTime> linked =
      LinkPath(pim::ModelNeighbourExchange(profile_, all_dpus, topology.EdgeList(), layout_.model_bytes()),
               "the gossip's topology");
  const Activity activity = linked ? Activity::kLinkExchange : Activity::kTraining;
  PullModels(activity);
  const auto t0 = Clock::now();
  const double comm_s0 = comm_->stats().seconds;
  const size_t total = layout_.n_pad + 1;
  // Every DPU's model in global order: this process's, or (under MPI) every process's gathered.
  std::vector<int32_t> gathered;
  if (comm_->size() > 1) {
    std::vector<int32_t> mine(size_t{num_dpus_} * total);
    for (uint32_t k = 0; k < num_dpus_; ++k) std::copy(local_[k].begin(), local_[k].end(), mine.begin() + k * total);
    const std::vector<std::byte> all = comm_->AllGather(std::as_bytes(std::span<const int32_t>(mine)));
    PIMOPT_CHECK(all.size() == sizeof(int32_t) * total * all_dpus);
    gathered.resize(total * all_dpus);
    std::memcpy(gathered.data(), all.data(), all.size());
  }
  auto model_of = [&](uint32_t global) -> const int32_t* {
    return comm_->size() == 1 ? local_[global].data() : gathered.data() + size_t{global} * total;
  };
  const size_t blocks = (total + kReduceBlock - 1) / kReduceBlock;
  std::vector<std::vector<int32_t>> mixed(num_dpus_, std::vector<int32_t>(total));
  std::vector<fixed::Saturation> sat(blocks);
  pool_.ParallelFor(blocks, [&](size_t b) {
    const size_t begin = b * kReduceBlock, end = std::min(total, (b + 1) * kReduceBlock);
    for (uint32_t k = 0; k < num_dpus_; ++k) {
      const MixingRow& row = topology.row(static_cast<uint32_t>(part_.first_worker) + k);
      for (size_t j = begin; j < end; ++j) {
        double s = 0;
        for (size_t e = 0; e < row.neighbours.size(); ++e) s += row.weights[e] * model_of(row.neighbours[e])[j];
        mixed[k][j] = fixed::SaturateModel(static_cast<int64_t>(std::llround(s)), sat[b]);
      }
    }
  });
  for (const fixed::Saturation& s : sat) saturation_.events += s.events;
  local_.swap(mixed);
  if (linked) {
    // The DPUs mix on their own: no host work; the link exchange's modeled time and bytes.
    RecordLinkWork(*linked, {topology.kind(), layout_.model_bytes()});
  } else {
    // Every DPU's neighbours' models read, its new model written.
    RecordHostWork({.vectors_per_dpu = topology.max_degree() + 1, .bytes_per_element = 4, .elements = total,
                    .update_bytes_per_element = 8},
                   t0, comm_s0);
  }
  PushModelVectors(TransferKind::kPushModels, layout_.w_offset,
                   [&](uint32_t k, int32_t* model) { std::copy(local_[k].begin(), local_[k].end(), model); }, activity);
}

std::optional<pim::LinkExchangeTime> PimBackend::LinkPath(const std::optional<pim::LinkExchangeTime>& covered,
                                                          const char* what) const {
  if (options_.sync_path == PimBackendOptions::SyncPath::kHost) return std::nullopt;
  if (!covered && options_.sync_path == PimBackendOptions::SyncPath::kLinks && part_.total_workers == 1) {
    throw ConfigError("--sync-path", StrCat("links: ", what, " over one DPU is no exchange between DPUs (it goes "
                                            "through the host on every profile); use --sync-path host or auto, or "
                                            "more workers"));
  }
  if (!covered && options_.sync_path == PimBackendOptions::SyncPath::kLinks) {
    const std::string scope = pim::ProfileFields().GetText(profile_, "link_scope");
    throw ConfigError("--profile", StrCat("profile '", profile_.name, "' (link_scope ", scope, ") has no DPU links for ",
                                          what, " over ", part_.total_workers, " DPUs; use --sync-path host or auto, "
                                          "or a profile with wider links (links-rank, links-system)"));
  }
  return covered;
}

void PimBackend::RecordLinkWork(const pim::LinkExchangeTime& time, const Ledger::LinkWork& work, bool sync) {
  round_pulls_.clear();
  ledger_.link_s += time.seconds;
  // This process's share of the bytes (the exchange is over all DPUs of the run).
  ledger_.link_bytes += time.link_bytes * num_dpus_ / static_cast<uint64_t>(part_.total_workers);
  ++ledger_.link_work[work];
  if (sync) ++ledger_.syncs;
}

void PimBackend::AverageLocalModels() {
  // Over links: an all-reduce of the DPUs' models as 64-bit partial sums (int32 models would overflow; quantized
  // deltas, --sync-format int16/int8, as int32 ones), after which every DPU holds the average; the host's pull, sum
  // and later push only carry it in the emulator.
  const int bits = QuantizedBits();
  const uint64_t allreduce_bytes = bits > 0 ? layout_.model_bytes() : 2 * layout_.model_bytes();
  const std::optional<pim::LinkExchangeTime> linked =
      LinkPath(pim::ModelAllReduce(profile_, part_.total_workers, allreduce_bytes), "model averaging (an all-reduce)");
  const uint64_t pairs = model_delta_pairs_;
  model_delta_pairs_ = 0;
  // --sync-format auto: each DPU sends x_k - global at the coordinates it touched; the host adds them to K global
  // (exact: the same sums as the whole models').
  const bool compacted = !linked && bits == 0 && pairs > 0 && CompactedBytes(pairs) < layout_.model_bytes();
  PullModels(linked ? Activity::kLinkExchange
             : bits > 0 || compacted ? Activity::kEncodedCarrier
                                     : Activity::kTraining);
  if (bits > 0) {
    const double cycles = QuantizeModelDeltas(bits);
    if (linked) {
      RecordEncoding(cycles);
    } else {
      RecordEncodedPull(TransferKind::kPullModels, QuantizedBytes(bits), cycles);
    }
  } else if (compacted) {
    RecordEncodedPull(TransferKind::kPullModels, CompactedBytes(pairs),
                      pim::CompactionCycles(profile_, pairs, CompactedBytes(pairs)));
  }
  const auto t0 = Clock::now();
  const double comm_s0 = comm_->stats().seconds;
  const size_t total = layout_.n_pad + 1;
  const size_t blocks = (total + kReduceBlock - 1) / kReduceBlock;
  const std::vector<int64_t> sums = SumOverAllDpus(total, local_);
  const DivideTowardZero mean(part_.total_workers);
  pool_.ParallelFor(blocks, [&](size_t b) {
    for (size_t j = b * kReduceBlock; j < std::min(total, (b + 1) * kReduceBlock); ++j) {
      global_[j] = static_cast<int32_t>(mean(sums[j]));
    }
  });
  if (linked) {
    RecordLinkWork(*linked, {std::nullopt, allreduce_bytes});
    global_on_dpus_ = true;
    return;
  }
  if (bits > 0) {
    // K quantized vectors summed (bits / 8 bytes each per coordinate); per coordinate: read the sum, write the model.
    RecordHostWork({.vectors_per_dpu = 1,
                    .bytes_per_element = static_cast<uint32_t>(std::max(1, bits / 8)),
                    .elements = total,
                    .update_bytes_per_element = 20},
                   t0, comm_s0);
  } else if (compacted) {
    // The pairs added into K global at the touched coordinates (8 bytes read per pair, the sum read and written),
    // then the new model at those coordinates (each DPU's touched set at most: `pairs` per DPU bounds the union).
    RecordHostWork({.vectors_per_dpu = 1, .bytes_per_element = 8, .elements = pairs, .update_bytes_per_element = 20},
                   t0, comm_s0);
  } else {
    // int32 models summed; per coordinate: read the sum, write the model, zero the sum.
    RecordHostWork({.vectors_per_dpu = 1, .bytes_per_element = 4, .elements = total, .update_bytes_per_element = 20},
                   t0, comm_s0);
  }
}

AdmmResiduals PimBackend::AdmmConsensus(double rho) {
  // Over links: a ring all-reduce of x_k + u_k as 64-bit partial sums and one of the residuals' three squared norms;
  // every DPU then computes z, its u_k and its next target v_k = z - u_k itself (the host's pull and push of the
  // targets only carry them in the emulator).
  const std::optional<pim::LinkExchangeTime> linked =
      LinkPath(pim::ModelAllReduce(profile_, part_.total_workers, 2 * layout_.model_bytes()),
               "ADMM's consensus (an all-reduce)");
  targets_on_dpus_ = linked.has_value();
  PullModels(linked ? Activity::kLinkExchange : Activity::kTraining);
  const auto t0 = Clock::now();
  const double comm_s0 = comm_->stats().seconds;
  const Objective& obj = config_.objective;
  fixed::Saturation ignored;
  const int64_t threshold = fixed::ToModel(obj.l1 / rho, ignored);
  const uint64_t shrink = fixed::ToScale(rho / (rho + obj.l2), "--rho");
  const int64_t k_count = part_.total_workers;
  const DivideTowardZero mean(k_count);
  const size_t total = layout_.n_pad + 1;
  const size_t blocks = (total + kReduceBlock - 1) / kReduceBlock;
  std::vector<double> primal_parts(blocks, 0.0), dual_parts(blocks, 0.0), x_parts(blocks, 0.0), z_parts(blocks, 0.0),
      u_parts(blocks, 0.0);
  std::vector<fixed::Saturation> sat(blocks);
  const std::vector<int64_t> sums = SumOverAllDpus(total, local_, &dual_);  // sum_k x_k + sum_k u_k (exact)
  pool_.ParallelFor(blocks, [&](size_t blk) {
    const size_t begin = blk * kReduceBlock, end = std::min(total, (blk + 1) * kReduceBlock);
    std::vector<int32_t> z_block(end - begin);
    double dual = 0, z_squares = 0;  // locals: z_parts' neighbours are other threads' blocks (one cache line)
    for (size_t j = begin; j < end; ++j) {
      const int64_t a = mean(sums[j]);
      int64_t z = a;
      if (j < layout_.n_pad) {
        const int64_t magnitude = std::max<int64_t>(0, (a < 0 ? -a : a) - threshold);
        z = fixed::MulScale(a < 0 ? -magnitude : magnitude, shrink);
      }
      const int32_t z32 = fixed::SaturateModel(z, sat[blk]);
      const double dz = fixed::FromModel(int64_t{z32} - global_[j]);
      dual += dz * dz;
      z_squares += fixed::FromModel(z32) * fixed::FromModel(z32);
      z_block[j - begin] = z32;
      global_[j] = z32;
    }
    z_parts[blk] = z_squares;
    // Each DPU's block of x_k and u_k streamed once: r = x_k - z, u_k += r; the primal residual in units of the
    // model's last bit, scaled once at the end.
    double primal = 0, x_squares = 0, u_squares = 0;
    for (uint32_t k = 0; k < num_dpus_; ++k) {
      const int32_t* x = local_[k].data() + begin;
      int32_t* u = dual_[k].data() + begin;
      double squares = 0;
      for (size_t i = 0; i < z_block.size(); ++i) {
        const int64_t r = int64_t{x[i]} - z_block[i];
        squares += static_cast<double>(r) * static_cast<double>(r);
        u[i] = fixed::SaturateModel(u[i] + r, sat[blk]);
        x_squares += static_cast<double>(x[i]) * x[i];
        u_squares += static_cast<double>(u[i]) * u[i];
      }
      primal += squares;
    }
    const double unit_sq = fixed::FromModel(1) * fixed::FromModel(1);
    primal_parts[blk] = primal * unit_sq;
    x_parts[blk] = x_squares * unit_sq;
    u_parts[blk] = u_squares * unit_sq;
    dual_parts[blk] = dual;
  });
  double primal = 0, dual = 0, x_sq = 0, z_sq = 0, u_sq = 0;  // block order: deterministic
  for (size_t blk = 0; blk < blocks; ++blk) {
    primal += primal_parts[blk];
    dual += dual_parts[blk];
    x_sq += x_parts[blk];
    z_sq += z_parts[blk];
    u_sq += u_parts[blk];
    saturation_.events += sat[blk].events;
  }
  primal = comm_->SumInRankOrder(primal);  // this process's DPUs' share, summed over processes
  x_sq = comm_->SumInRankOrder(x_sq);
  u_sq = comm_->SumInRankOrder(u_sq);
  if (linked) {
    RecordLinkWork(*linked, {std::nullopt, 2 * layout_.model_bytes()});
    // The residuals' three squared norms (doubles), summed the same way.
    const std::optional<pim::LinkExchangeTime> norms =
        pim::ModelAllReduce(profile_, part_.total_workers, kResidualNormBytes);
    PIMOPT_CHECK(norms.has_value());
    RecordLinkWork(*norms, {std::nullopt, kResidualNormBytes}, /*sync=*/false);
  } else {
    // x_k and u_k summed; then every u_k updated from x_k (read both, write u_k: 12 bytes) besides z.
    RecordHostWork({.vectors_per_dpu = 2,
                    .bytes_per_element = 4,
                    .elements = total,
                    .updates_per_dpu = 1,
                    .update_bytes_per_element = 12},
                   t0, comm_s0);
  }
  return {.primal = std::sqrt(primal),
          .dual = rho * std::sqrt(static_cast<double>(k_count)) * std::sqrt(dual),
          .rho = rho,
          .next_rho = rho,
          .x_norm = std::sqrt(x_sq),
          .z_norm = std::sqrt(static_cast<double>(k_count) * z_sq),
          .u_norm = std::sqrt(u_sq)};
}

void PimBackend::ScaleDuals(double factor) {
  // The duals live on the host (a DPU receives v_k = z - u_k), or on the DPUs after a consensus over links; rounded
  // to nearest, saturated like every update.
  const auto t0 = Clock::now();
  const double comm_s0 = comm_->stats().seconds;
  const size_t total = layout_.n_pad + 1;
  const size_t blocks = (total + kReduceBlock - 1) / kReduceBlock;
  std::vector<fixed::Saturation> sat(blocks);
  pool_.ParallelFor(blocks, [&](size_t blk) {
    const size_t begin = blk * kReduceBlock, end = std::min(total, (blk + 1) * kReduceBlock);
    for (uint32_t k = 0; k < num_dpus_; ++k) {
      int32_t* u = dual_[k].data();
      for (size_t j = begin; j < end; ++j) {
        u[j] = fixed::SaturateModel(static_cast<int64_t>(std::llround(u[j] * factor)), sat[blk]);
      }
    }
  });
  for (const fixed::Saturation& s : sat) saturation_.events += s.events;
  // After a consensus over links every DPU holds and scales its own u_k (like its update, not charged).
  if (targets_on_dpus_) return;
  // Host work without a synchronization: every u_k read and written once (8 bytes per element).
  const Ledger::HostWork work{.vectors_per_dpu = 0,
                              .bytes_per_element = 4,
                              .elements = total,
                              .updates_per_dpu = 1,
                              .update_bytes_per_element = 8};
  ledger_.host_reduction_s += HostSecondsSince(t0, comm_s0);
  ledger_.modeled_host_reduction_s += ModelHostSeconds(work, part_.total_workers);
}

LinearModel PimBackend::ExportModel() const {
  LinearModel m;
  ExportModelInto(m);
  return m;
}

void PimBackend::ExportModelInto(LinearModel& m) const {
  m.loss = config_.objective.loss;
  m.fit_bias = config_.objective.fit_bias;
  m.weights.resize(features_);
  for (uint32_t j = 0; j < features_; ++j) {
    m.weights[j] = static_cast<float>(fixed::FromModel(global_[j]));  // z = sum (q/2^7) (w/2^24): w is the weight
  }
  m.bias = static_cast<float>(fixed::FromModel(global_[layout_.n_pad]));
  if (data_) {
    m.positive_label_value = data_->positive_label_value;
    m.negative_label_value = data_->negative_label_value;
  }
}

std::map<std::string, double> PimBackend::PhaseSeconds() const {
  const Ledger& l = ledger_;
  const double to_dpu_s = l.to_dpu[static_cast<size_t>(Activity::kTraining)].modeled_s;
  const double from_dpu_s = l.from_dpu[static_cast<size_t>(Activity::kTraining)].modeled_s;
  // The modeled machine's host: the profile's model, or (--host-time measured) this machine's measured seconds.
  const double host_s = options_.measured_host ? l.host_reduction_s : l.modeled_host_reduction_s;
  const double whole = num_dpus_ > 0 ? static_cast<double>(part_.total_workers) / num_dpus_ : 1.0;
  const double training_bytes = static_cast<double>(l.to_dpu[static_cast<size_t>(Activity::kTraining)].bytes +
                                                    l.from_dpu[static_cast<size_t>(Activity::kTraining)].bytes);
  pim::EnergyJoules energy;
  energy.dpu_j = l.dpu_energy_j * whole;
  energy.transfer_j = pim::TransferEnergyJoules(profile_, static_cast<uint32_t>(part_.total_workers),
                                                training_bytes * whole, to_dpu_s + from_dpu_s);
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
          // --transfers async: the pulls and the host's reductions that overlapped (subtracted from the total).
          {"modeled_overlap_saved", l.overlap_saved_s},
          {"modeled_total", to_dpu_s + l.kernel_s + l.launch_s + from_dpu_s + host_s + l.link_s - l.overlap_saved_s},
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
  t.to_workers_bytes = ledger_.to_dpu[static_cast<size_t>(Activity::kTraining)].bytes;
  t.from_workers_bytes = ledger_.from_dpu[static_cast<size_t>(Activity::kTraining)].bytes;
  t.syncs = ledger_.syncs;
  return t;
}

std::map<std::string, double> PimBackend::Counters() {
  const auto setup = ledger_.to_dpu[static_cast<size_t>(Activity::kSetup)];
  std::map<std::string, double> c{{"dpus", num_dpus_},
                                  {"tasklets", options_.tasklets},
                                  {"dpu_frequency_hz", profile_.dpu_frequency_hz},
                                  {"mram_wram_bytes", static_cast<double>(ledger_.mram_wram_bytes)},
                                  {"host_saturations", static_cast<double>(saturation_.events)},
                                  {"quantization_saturations", quantization_saturations_},
                                  {"setup_to_dpu_bytes", static_cast<double>(setup.bytes)},
                                  {"modeled_setup_to_dpu_s", setup.modeled_s},
                                  {"dpu_to_dpu_bytes", static_cast<double>(ledger_.link_bytes)},
                                  {"modeled_dpu_encoding_s", ledger_.encoding_s}};
  if (dpus_) {
    // Each tasklet's saturation counter accumulates over launches in WRAM; reading them is a diagnostic transfer.
    uint64_t total = 0;
    for (uint32_t k = 0; k < num_dpus_; ++k) {
      uint64_t counters[pimbackend::kMaxTasklets] = {};
      const double s = dpus_->CopyFrom(k, pimbackend::kSaturationsSymbol, 0, counters, sizeof(counters));
      Record(Activity::kDiagnostics, false, TransferKind::kCounters, s, sizeof(counters));
      for (uint64_t v : counters) total += v;
    }
    c["dpu_saturations"] = static_cast<double>(total);
  }
  const auto checkpoint_to = ledger_.to_dpu[static_cast<size_t>(Activity::kCheckpoint)];
  const auto checkpoint_from = ledger_.from_dpu[static_cast<size_t>(Activity::kCheckpoint)];
  c["checkpoint_transfer_bytes"] = static_cast<double>(checkpoint_to.bytes + checkpoint_from.bytes);
  return c;
}

BackendState PimBackend::SaveState() {
  // The host's model, every DPU's local model (pulled now), every ADMM dual.
  std::vector<std::vector<int32_t>> buffers(num_dpus_, std::vector<int32_t>(layout_.n_pad + 8));
  for (uint32_t k = 0; k < num_dpus_; ++k) dpus_->PrepareXfer(k, buffers[k].data(), layout_.model_bytes());
  Pull(Activity::kCheckpoint, TransferKind::kPullModels, pim::kMramHeapSymbol, layout_.w_offset, layout_.model_bytes());
  auto words = [](const int32_t* begin, size_t n) { return std::vector<uint32_t>(begin, begin + n); };
  BackendState state;
  state.shared.push_back(words(global_.data(), global_.size()));
  for (uint32_t k = 0; k < num_dpus_; ++k) {
    auto& vectors = state.per_worker.emplace_back();
    vectors.push_back(words(buffers[k].data(), layout_.n_pad + 1));
    if (!dual_.empty()) vectors.push_back(words(dual_[k].data(), dual_[k].size()));
    if (!delta_error_.empty()) vectors.push_back(words(delta_error_[k].data(), delta_error_[k].size()));
  }
  return state;
}

void PimBackend::RestoreState(const BackendState& state) {
  const size_t per_worker = 1 + (dual_.empty() ? 0 : 1) + (delta_error_.empty() ? 0 : 1);
  bool fits = state.shared.size() == 1 && state.per_worker.size() == num_dpus_;
  for (const auto& vectors : state.per_worker) fits = fits && vectors.size() == per_worker;
  if (!fits) throw InputError("checkpoint: it holds the state of a different number of DPUs or algorithm");
  auto check = [&](const std::vector<uint32_t>& v) {
    if (v.size() != layout_.n_pad + 1) throw InputError("checkpoint: a model of the wrong size");
  };
  check(state.shared[0]);
  for (const auto& vectors : state.per_worker) {
    for (const auto& v : vectors) check(v);
  }
  global_.assign(state.shared[0].begin(), state.shared[0].end());
  std::vector<std::vector<int32_t>> buffers(num_dpus_, std::vector<int32_t>(layout_.n_pad + 8, 0));
  for (uint32_t k = 0; k < num_dpus_; ++k) {
    const auto& v = state.per_worker[k][0];
    std::copy(v.begin(), v.end(), buffers[k].begin());
    std::copy(v.begin(), v.end(), local_[k].begin());
    dpus_->PrepareXfer(k, buffers[k].data(), layout_.model_bytes());
    if (!dual_.empty()) dual_[k].assign(state.per_worker[k][1].begin(), state.per_worker[k][1].end());
    if (!delta_error_.empty()) {
      delta_error_[k].assign(state.per_worker[k].back().begin(), state.per_worker[k].back().end());
    }
  }
  Push(Activity::kCheckpoint, TransferKind::kData, pim::kMramHeapSymbol, layout_.w_offset, layout_.model_bytes());
}

void PimBackend::Record(Activity activity, bool to_dpu, TransferKind kind, double seconds, uint64_t bytes_per_dpu) {
  Ledger::Transfers& t = (to_dpu ? ledger_.to_dpu : ledger_.from_dpu)[static_cast<size_t>(activity)];
  t.modeled_s += seconds;
  t.bytes += uint64_t{num_dpus_} * bytes_per_dpu;
  ++t.count;
  if (activity == Activity::kTraining) {
    ++ledger_.training_transfers[{kind, bytes_per_dpu}];
    if (!to_dpu) round_pulls_.push_back({bytes_per_dpu});
  }
}

void PimBackend::Push(Activity activity, TransferKind kind, std::string_view symbol, uint64_t offset,
                      uint64_t bytes_per_dpu) {
  const double s = dpus_->PushXfer(pim::XferDirection::kToDpu, symbol, offset, bytes_per_dpu);
  Record(activity, true, kind, s, bytes_per_dpu);
}

void PimBackend::Pull(Activity activity, TransferKind kind, std::string_view symbol, uint64_t offset,
                      uint64_t bytes_per_dpu) {
  const double s = dpus_->PushXfer(pim::XferDirection::kFromDpu, symbol, offset, bytes_per_dpu);
  Record(activity, false, kind, s, bytes_per_dpu);
}

void PimBackend::Broadcast(Activity activity, TransferKind kind, uint64_t offset, const void* source, uint64_t bytes) {
  const double s = dpus_->BroadcastTo(pim::kMramHeapSymbol, offset, source, bytes);
  Record(activity, true, kind, s, bytes);
}

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
  ledger_.modeled_host_reduction_s += ModelHostSeconds(work, part_.total_workers);
  ++ledger_.host_work[work];
  ++ledger_.syncs;
  if (options_.async_transfers && !round_pulls_.empty()) {
    // The pulls since the last launch and this reduction, pipelined in chunks (this process's DPUs' pulls, as the
    // ledger's transfers; the host's reduction over all DPUs, as its modeled time).
    ledger_.overlap_saved_s +=
        pim::ModelPipelinedReduction(profile_, num_dpus_, round_pulls_, HostReduction(work, part_.total_workers))
            .saved_s();
    ++ledger_.reductions[{round_pulls_, work}];
  }
  round_pulls_.clear();
}

void PimBackend::RecordEncoding(double cycles) {
  round_pulls_.clear();  // the DPUs' work before the pulls: a stage of its own
  const double seconds = cycles / profile_.dpu_frequency_hz;
  ledger_.kernel_s += seconds;
  ledger_.dma_s += seconds;
  ledger_.encoding_s += seconds;
}

int PimBackend::QuantizedBits() const {
  switch (options_.sync_format) {
    case PimBackendOptions::SyncFormat::kInt16:
      return 16;
    case PimBackendOptions::SyncFormat::kInt8:
      return 8;
    default:
      return 0;
  }
}

double PimBackend::QuantizeModelDeltas(int bits) {
  // Per DPU: d = x_k - global + e_k (exact integers); a power-of-two step 2^s, the smallest with every |d_j| / 2^s
  // rounded within q_max = 2^(bits - 1) - 1; q_j = round(d_j / 2^s) (half away from zero); the host receives
  // global + q_j 2^s and the DPU keeps e_k = d - q 2^s (error feedback: Seide et al. 2014, Karimireddy et al. 2019,
  // [ErrorFeedback] in docs/sources.md). Integer throughout: the same bits on any thread count and rank split.
  const size_t total = layout_.n_pad + 1;
  const int64_t q_max = (int64_t{1} << (bits - 1)) - 1;
  std::vector<fixed::Saturation> sat(num_dpus_);
  pool_.ParallelFor(num_dpus_, [&](size_t k) {
    std::vector<int64_t> d(total);
    int64_t most = 0;
    for (size_t j = 0; j < total; ++j) {
      d[j] = int64_t{local_[k][j]} - global_[j] + delta_error_[k][j];
      most = std::max(most, d[j] < 0 ? -d[j] : d[j]);
    }
    auto round_shift = [](int64_t v, int shift) {
      if (shift == 0) return v;
      const int64_t half = int64_t{1} << (shift - 1);
      return v >= 0 ? (v + half) >> shift : -((-v + half) >> shift);
    };
    int shift = 0;
    while (round_shift(most, shift) > q_max) ++shift;
    for (size_t j = 0; j < total; ++j) {
      const int64_t q = std::clamp(round_shift(d[j], shift), -q_max, q_max);
      const int64_t sent = q * (int64_t{1} << shift);
      delta_error_[k][j] = fixed::SaturateModel(d[j] - sent, sat[k]);
      local_[k][j] = fixed::SaturateModel(int64_t{global_[j]} + sent, sat[k]);
    }
  });
  for (const fixed::Saturation& x : sat) saturation_.events += x.events;
  return pim::QuantizationCycles(profile_, total, bits);  // the DPUs' encoding (pim/encoding_cost.h)
}

uint64_t PimBackend::QuantizedBytes(int bits) const {
  const uint64_t total = layout_.n_pad + 1;
  return (total * static_cast<uint64_t>(bits) / 8 + 7) / 8 * 8 + 8;
}

uint64_t PimBackend::MostTouchedPairs(std::span<const std::span<const uint32_t>> worker_rows) const {
  // Distinct columns of each DPU's rows, plus the bias; the most over all DPUs of the run (a parallel transfer
  // moves the same size from every DPU). Dense data: every coordinate.
  if (!data_->is_sparse()) return layout_.n_pad + 1;
  std::vector<uint64_t> counts(num_dpus_, 0);
  const CsrMatrix& m = data_->csr();
  pool_.ParallelFor(num_dpus_, [&](size_t k) {
    std::vector<uint32_t> cols;
    for (uint32_t row : worker_rows[k]) {  // this process's row numbers (as the row lists take them)
      cols.insert(cols.end(), m.col.begin() + m.row_ptr[row], m.col.begin() + m.row_ptr[row + 1]);
    }
    std::sort(cols.begin(), cols.end());
    counts[k] = static_cast<uint64_t>(std::unique(cols.begin(), cols.end()) - cols.begin()) + 1;
  });
  float most[1] = {static_cast<float>(counts.empty() ? 0 : *std::max_element(counts.begin(), counts.end()))};
  comm_->AllreduceMax(most);
  // Beyond float's exact integers the compaction is not considered.
  return most[0] < 16777216.0f ? static_cast<uint64_t>(most[0]) : 0;
}

void PimBackend::RecordEncodedPull(TransferKind kind, uint64_t bytes_per_dpu, double encoding_cycles) {
  RecordEncoding(encoding_cycles);
  Record(Activity::kTraining, false, kind,
         pim::ModelParallelTransferSeconds(profile_, pim::XferDirection::kFromDpu, num_dpus_, bytes_per_dpu),
         bytes_per_dpu);
}

PimProjection PimBackend::Project(uint32_t target_dpus, uint64_t target_rows_per_dpu, int epochs) const {
  PIMOPT_CHECK(dpus_ && epochs > 0);
  PimProjection p;
  p.dpus = target_dpus;
  p.rows_per_dpu = target_rows_per_dpu;
  // The rows this run trained on, kept at setup: the dataset itself may be gone (a pilot on a temporary subset).
  const double run_rows = static_cast<double>(train_rows_) / num_dpus_;
  // Per-DPU work grows with the rows each DPU holds (weak scaling): every kernel's time.
  const double row_factor = static_cast<double>(target_rows_per_dpu) / run_rows;
  // Synchronizations per epoch grow with the rows per DPU: MA-SGD and the one-DPU algorithms take steps over a
  // DPU's rows; GA-SGD keeps the rows per DPU per step (B/K) of this run, i.e. its global batch grows with the DPU
  // count (PIM-Opt's weak scaling: 262,144 / 2,048 = 128 rows per DPU per step); ADMM synchronizes once per epoch.
  double sync_factor = row_factor;
  if (config_.traits().syncs == SyncScaling::kOncePerEpoch) sync_factor = 1;
  const double per_epoch = 1.0 / epochs;
  p.kernel_s = ledger_.kernel_s * per_epoch * row_factor;
  p.mram_wram_bytes = static_cast<double>(ledger_.mram_wram_bytes) * per_epoch * row_factor * target_dpus / num_dpus_;
  p.launch_overhead_s = static_cast<double>(ledger_.launches) * per_epoch * sync_factor *
                        pim::ModelLaunchOverheadSeconds(profile_, target_dpus);
  for (const auto& [key, count] : ledger_.training_transfers) {
    const auto [kind, bytes] = key;
    // Row lists grow with the rows per step (local SGD launches cover an epoch of the DPU's rows).
    const uint64_t projected_bytes = kind == TransferKind::kPushRows
                                         ? static_cast<uint64_t>(bytes * std::max(1.0, row_factor / sync_factor))
                                         : bytes;
    const double n = static_cast<double>(count) * per_epoch * sync_factor;
    if (kind == TransferKind::kBroadcastModel) {
      p.cpu_to_dpu_s += n * pim::ModelBroadcastSeconds(profile_, target_dpus, projected_bytes);
      p.cpu_to_dpu_bytes += n * target_dpus * projected_bytes;
    } else if (kind == TransferKind::kPullModels || kind == TransferKind::kPullGradients) {
      p.dpu_to_cpu_s +=
          n * pim::ModelParallelTransferSeconds(profile_, pim::XferDirection::kFromDpu, target_dpus, projected_bytes);
      p.dpu_to_cpu_bytes += n * target_dpus * projected_bytes;
    } else {
      p.cpu_to_dpu_s +=
          n * pim::ModelParallelTransferSeconds(profile_, pim::XferDirection::kToDpu, target_dpus, projected_bytes);
      p.cpu_to_dpu_bytes += n * target_dpus * projected_bytes;
    }
  }
  if (options_.measured_host) {
    // Measured on this host: linear in the number of DPU vectors reduced.
    p.host_reduction_s = ledger_.host_reduction_s * per_epoch * sync_factor * target_dpus / num_dpus_;
  } else {
    for (const auto& [work, count] : ledger_.host_work) {
      p.host_reduction_s += static_cast<double>(count) * per_epoch * sync_factor * ModelHostSeconds(work, target_dpus);
    }
  }
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
  // --transfers async: each pipelined reduction re-modeled at the target DPU count.
  for (const auto& [key, count] : ledger_.reductions) {
    const auto& [pulls, work] = key;
    const double n = static_cast<double>(count) * per_epoch * sync_factor;
    p.overlap_saved_s +=
        n * pim::ModelPipelinedReduction(profile_, target_dpus, pulls, HostReduction(work, target_dpus)).saved_s();
  }
  p.epoch_s = p.kernel_s + p.launch_overhead_s + p.cpu_to_dpu_s + p.dpu_to_cpu_s + p.host_reduction_s + p.link_s -
              p.overlap_saved_s;
  // Energy per epoch at the target: every DPU busy as this run's were, for its rows (weak scaling), the projected
  // transfers, reductions, launches and link exchanges.
  p.energy.dpu_j = ledger_.dpu_energy_j * per_epoch * row_factor * target_dpus / num_dpus_;
  p.energy.transfer_j = pim::TransferEnergyJoules(profile_, target_dpus, p.cpu_to_dpu_bytes + p.dpu_to_cpu_bytes,
                                                  p.cpu_to_dpu_s + p.dpu_to_cpu_s);
  p.energy.host_j = pim::HostEnergyJoules(profile_, p.host_reduction_s, p.launch_overhead_s);
  p.energy.link_j = pim::LinkEnergyJoules(profile_, p.link_bytes);
  if (!p.note.empty()) {
    // The synchronizations were not timed: every figure they are part of is missing, not a partial sum. What stays
    // is what the DPUs do on their own rows (the kernel, its DMA bytes, the DPUs' energy).
    const double missing = std::numeric_limits<double>::quiet_NaN();
    for (double* figure : {&p.epoch_s, &p.cpu_to_dpu_s, &p.launch_overhead_s, &p.dpu_to_cpu_s, &p.host_reduction_s,
                           &p.cpu_to_dpu_bytes, &p.dpu_to_cpu_bytes, &p.link_s, &p.link_bytes, &p.overlap_saved_s,
                           &p.energy.transfer_j, &p.energy.host_j, &p.energy.link_j}) {
      *figure = missing;
    }
  }
  return p;
}

}  // namespace pimopt
