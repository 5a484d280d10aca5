// The PIM backend's setup: the hardware profile and the DPUs, the data layout in MRAM (linear_kernel.h), the
// shards' quantized upload, the kernel's base arguments.
#include "pimopt/backends/pim/pim_backend.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "pimopt/algorithms/algorithm.h"
#include "pimopt/core/error.h"
#include "pimopt/core/file_util.h"
#include "pimopt/core/thread_pool.h"

namespace pimopt {

using pimbackend::LinearKernelArgs;

void PimBackend::Setup(const Dataset& train, const TrainConfig& config, const Partition& part, Communicator& comm) {
  PIMOPT_CHECK(part.local_rows == train.num_rows() && part.total_workers == config.workers,
               "the training rows do not match the partition");
  profile_ = options_.ResolveProfile();
  if (part.local_workers > static_cast<int>(profile_.num_dpus)) {
    throw ConfigError("--dpus", StrCat(part.local_workers, " DPUs requested", part.distributed() ? " per process" : "",
                                       "; profile '", profile_.name, "' has ", profile_.num_dpus));
  }
  run_.data = &train;
  run_.train_rows = train.num_rows();
  run_.config = config;
  shards_.features = static_cast<uint32_t>(train.num_features());
  run_.part = part;
  run_.comm = &comm;
  shards_.dpus = static_cast<uint32_t>(part.local_workers);
  const auto shards = LocalShards(part);
  shards_.begin.clear();
  shards_.rows.clear();
  uint32_t max_rows = 0;
  uint64_t max_nonzeros = 0;
  for (const Shard& s : shards) {
    shards_.begin.push_back(s.begin);
    shards_.rows.push_back(s.size());
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
  const uint64_t max_list_entries = std::max({slots, epoch_steps * slots, uint64_t(config.local_steps) * slots}) + 2;
  if (options_.async_transfers && options_.measured_host) {
    throw ConfigError("--transfers", "async overlaps the modeled host's reduction with the pulls; it needs "
                                     "--host-time modeled (this machine's measured reduction cannot be split in chunks)");
  }
  if (QuantizedBits() > 0 && !config.traits().averages_deltas_from_global) {
    throw ConfigError("--sync-format", StrCat("int16 and int8 quantize the deltas of local models averaged after "
                                              "starting from the global model (--algo ",
                                              AlgorithmNamesWith([](const AlgorithmTraits& t) {
                                                return t.averages_deltas_from_global;
                                              }),
                                              "), not ", config.algorithm, "'s synchronizations; use dense or auto"));
  }
  const bool artifact = options_.artifact_kernel;
  layout_ = pimbackend::MakeLinearLayout(shards_.features, max_rows, max_list_entries, max_nonzeros, artifact);
  dual_.duals_offset = dual_.row_params_offset = 0;
  dual_.sigma = 0;
  if (config.traits().row_duals) {
    if (artifact) throw ConfigError("--kernel", StrCat(config.algorithm, " runs on pimopt's kernel (--kernel pimopt)"));
    dual_.duals_offset = layout_.end;  // the duals start at zero: a fresh DPU's MRAM is zero
    dual_.row_params_offset = dual_.duals_offset + (uint64_t{max_rows} * 4 + 7) / 8 * 8;
    layout_.end = dual_.row_params_offset + uint64_t{max_rows} * sizeof(pimbackend::DualRowParams);
  }
  if (layout_.end > profile_.mram_bytes) {
    throw ConfigError(
        "--dpus", StrCat("each DPU would need ", layout_.end, " bytes (", ByteSizeText(layout_.end),
                         ") of MRAM for ", max_rows, " rows of ", layout_.n_pad, " features (", profile_.mram_bytes,
                         " bytes available): use more DPUs"));
  }
  CheckMemoryNeed(static_cast<uint64_t>(shards_.dpus) * layout_.end,
                  StrCat("the emulated MRAM (", shards_.dpus, " DPUs x ", layout_.end, " bytes for ", max_rows,
                         " rows of ", layout_.n_pad, " features)"),
                  "--dpus");
  const pim::EmulatedMachineOptions how{options_.host_threads, options_.scheduler};
  machine_ = options_.machine ? options_.machine(profile_, shards_.dpus, how)
                              : pim::AllocateEmulatedMachine(profile_, shards_.dpus, how);
  PIMOPT_CHECK(machine_ && machine_->size() == shards_.dpus, "the PIM machine does not hold ", shards_.dpus, " DPUs");
  machine_->Load(options_.kernels == pim::KernelSource::kProgram ? pimbackend::LinearProgramPath(options_.tasklets)
                                                                 : std::string(pimbackend::kLinearKernelName),
                 options_.tasklets);

  // Quantize and push every shard once (one parallel push: the same length for every DPU, short shards padded).
  const uint64_t data_bytes = layout_.w_offset;
  std::vector<std::vector<int8_t>> buffers(shards_.dpus, std::vector<int8_t>(data_bytes, 0));
  std::vector<fixed::Saturation> sat(shards_.dpus);
  // Dual ascent: each row's squared norm as the DPU sees it (its quantized values), for its step parameters.
  const bool row_norms = config.traits().row_duals;
  dual_.row_norms.assign(row_norms ? shards_.dpus : 0, {});
  pool_.ParallelFor(shards_.dpus, [&](size_t k) {
    int8_t* buffer = buffers[k].data();
    if (row_norms) dual_.row_norms[k].resize(shards_.rows[k]);
    if (train.is_sparse()) {
      const CsrMatrix& m = train.csr();
      const uint64_t first = m.row_ptr[shards_.begin[k]];
      auto* row_ptr = reinterpret_cast<uint32_t*>(buffer + layout_.x_offset);
      auto* cols = reinterpret_cast<uint32_t*>(buffer + layout_.col_offset);
      int8_t* vals = buffer + layout_.val_offset;
      for (uint32_t r = 0; r <= shards_.rows[k]; ++r) {
        row_ptr[r] = static_cast<uint32_t>(m.row_ptr[shards_.begin[k] + r] - first);
      }
      for (uint64_t e = first; e < m.row_ptr[shards_.begin[k] + shards_.rows[k]]; ++e) {
        cols[e - first] = m.col[e];
        vals[e - first] = fixed::QuantizeFeature(m.val[e], sat[k]);
      }
      for (uint32_t r = 0; r < shards_.rows[k] && row_norms; ++r) {
        dual_.row_norms[k][r] = pimbackend::QuantizedSquaredNorm(
            std::span<const int8_t>(vals + row_ptr[r], row_ptr[r + 1] - row_ptr[r]), config.objective.fit_bias);
      }
    } else {
      const float* values = train.dense_values().data();
      for (uint32_t r = 0; r < shards_.rows[k]; ++r) {
        const uint64_t row = shards_.begin[k] + r;
        if (artifact) {  // PIM-Opt's kernel: int32 Q0.31
          auto* out = reinterpret_cast<int32_t*>(buffer + layout_.x_offset) + uint64_t{r} * layout_.n_pad;
          for (uint32_t j = 0; j < shards_.features; ++j) {
            out[j] = pimbackend::QuantizeFeatureArtifact(values[row * shards_.features + j], sat[k]);
          }
          continue;
        }
        int8_t* out = buffer + layout_.x_offset + uint64_t{r} * layout_.n_pad;
        for (uint32_t j = 0; j < shards_.features; ++j)
          out[j] = fixed::QuantizeFeature(values[row * shards_.features + j], sat[k]);
        if (row_norms) {
          dual_.row_norms[k][r] = pimbackend::QuantizedSquaredNorm(std::span<const int8_t>(out, shards_.features),
                                                                   config.objective.fit_bias);
        }
      }
    }
    for (uint32_t r = 0; r < shards_.rows[k]; ++r) {
      buffer[layout_.y_offset + r] = train.labels()[shards_.begin[k] + r] > 0 ? 1 : -1;
    }
  });
  models_.quantization_saturations = 0;
  for (const auto& s : sat) models_.quantization_saturations += static_cast<double>(s.events);
  ledger_ = {};
  for (uint32_t k = 0; k < shards_.dpus; ++k) machine_->PrepareXfer(k, buffers[k].data(), data_bytes);
  Push(Activity::kSetup, TransferKind::kData, pim::kMramHeapSymbol, 0, data_bytes);
  if (!artifact) {
    Broadcast(Activity::kSetup, TransferKind::kData, layout_.sigmoid_offset, fixed::SigmoidTable().data(),
              4 * fixed::kSigmoidEntries);
  } else if (config.objective.loss == LossKind::kLogistic) {  // PIM-Opt broadcasts its exp table (LR only)
    Broadcast(Activity::kSetup, TransferKind::kData, layout_.sigmoid_offset, pimbackend::ArtifactExpTable().data(),
              4 * uint64_t{pimbackend::kArtifactExpTableEntries});
  }

  models_.global.assign(layout_.n_pad + 1, 0);
  models_.local.assign(shards_.dpus, std::vector<int32_t>(layout_.n_pad + 1, 0));
  models_.offset.assign(config.traits().worker_offsets ? shards_.dpus : 0, std::vector<int32_t>(layout_.n_pad + 1, 0));
  models_.delta_error.assign(QuantizedBits() > 0 ? shards_.dpus : 0, std::vector<int32_t>(layout_.n_pad + 1, 0));
  models_.saturation = {};
}

LinearKernelArgs PimBackend::BaseArgs() const {
  LinearKernelArgs a;
  a.loss = pimbackend::ToKernelLoss(run_.config.objective.loss);
  a.n_pad = layout_.n_pad;
  a.fit_bias = run_.config.objective.fit_bias ? 1 : 0;
  fixed::Saturation ignored;
  a.positive_weight_q24 = fixed::ToModel(run_.config.objective.positive_weight, ignored);
  a.negative_weight_q24 = fixed::ToModel(run_.config.objective.negative_weight, ignored);
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

}  // namespace pimopt
