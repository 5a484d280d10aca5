// The PIM backend's model export (Q8.24 to float) and its checkpoint state (the host's model, the DPUs' local
// models, the duals and the quantization errors as 32-bit words).
#include "pimopt/backends/pim/pim_backend.h"

#include <algorithm>

#include "pimopt/core/error.h"

namespace pimopt {

LinearModel PimBackend::ExportModel() const {
  LinearModel m;
  ExportModelInto(m);
  return m;
}

void PimBackend::ExportModelInto(LinearModel& m) const {
  m.loss = run_.config.objective.loss;
  m.fit_bias = run_.config.objective.fit_bias;
  m.weights.resize(shards_.features);
  for (uint32_t j = 0; j < shards_.features; ++j) {
    m.weights[j] =
        static_cast<float>(fixed::FromModel(models_.global[j]));  // z = sum (q/2^7) (w/2^24): w is the weight
  }
  m.bias = static_cast<float>(fixed::FromModel(models_.global[layout_.n_pad]));
  if (run_.data) {
    m.positive_label_value = run_.data->positive_label_value;
    m.negative_label_value = run_.data->negative_label_value;
  }
}

BackendState PimBackend::SaveState() {
  // The host's model, every DPU's local model (pulled now), every worker offset.
  std::vector<std::vector<int32_t>> buffers(shards_.dpus, std::vector<int32_t>(layout_.n_pad + 8));
  for (uint32_t k = 0; k < shards_.dpus; ++k) machine_->PrepareXfer(k, buffers[k].data(), layout_.model_bytes());
  Pull(Activity::kCheckpoint, TransferKind::kPullModels, pim::kMramHeapSymbol, layout_.w_offset, layout_.model_bytes());
  auto words = [](const int32_t* begin, size_t n) { return std::vector<uint32_t>(begin, begin + n); };
  BackendState state;
  state.shared.push_back(words(models_.global.data(), models_.global.size()));
  for (uint32_t k = 0; k < shards_.dpus; ++k) {
    auto& vectors = state.per_worker.emplace_back();
    vectors.push_back(words(buffers[k].data(), layout_.n_pad + 1));
    if (!models_.offset.empty()) vectors.push_back(words(models_.offset[k].data(), models_.offset[k].size()));
    if (!models_.delta_error.empty())
      vectors.push_back(words(models_.delta_error[k].data(), models_.delta_error[k].size()));
  }
  if (dual_.duals_offset > 0) {  // the rows' duals, from MRAM
    const std::vector<std::vector<int32_t>> duals = PullDuals(Activity::kCheckpoint);
    for (uint32_t k = 0; k < shards_.dpus; ++k) state.per_worker[k].push_back(words(duals[k].data(), duals[k].size()));
  }
  return state;
}

void PimBackend::RestoreState(const BackendState& state) {
  const size_t per_worker =
      1 + (models_.offset.empty() ? 0 : 1) + (models_.delta_error.empty() ? 0 : 1) + (dual_.duals_offset > 0 ? 1 : 0);
  bool fits = state.shared.size() == 1 && state.per_worker.size() == shards_.dpus;
  for (const auto& vectors : state.per_worker) fits = fits && vectors.size() == per_worker;
  if (!fits) throw InputError("checkpoint: it holds the state of a different number of DPUs or algorithm");
  auto check = [&](const std::vector<uint32_t>& v) {
    if (v.size() != layout_.n_pad + 1) throw InputError("checkpoint: a model of the wrong size");
  };
  check(state.shared[0]);
  for (uint32_t k = 0; k < shards_.dpus; ++k) {
    const auto& vectors = state.per_worker[k];
    for (size_t i = 0; i < per_worker - (dual_.duals_offset > 0 ? 1 : 0); ++i) check(vectors[i]);
    if (dual_.duals_offset > 0) {
      if (vectors.back().size() != shards_.rows[k]) throw InputError("checkpoint: a DPU's duals of the wrong count");
      for (uint32_t v : vectors.back()) {
        if (static_cast<int32_t>(v) < 0 || static_cast<int32_t>(v) > (1 << fixed::kModelFracBits)) {
          throw InputError("checkpoint: a row's dual is outside [0, 1]");
        }
      }
    }
  }
  models_.global.assign(state.shared[0].begin(), state.shared[0].end());
  std::vector<std::vector<int32_t>> buffers(shards_.dpus, std::vector<int32_t>(layout_.n_pad + 8, 0));
  for (uint32_t k = 0; k < shards_.dpus; ++k) {
    const auto& v = state.per_worker[k][0];
    std::copy(v.begin(), v.end(), buffers[k].begin());
    std::copy(v.begin(), v.end(), models_.local[k].begin());
    machine_->PrepareXfer(k, buffers[k].data(), layout_.model_bytes());
    if (!models_.offset.empty()) models_.offset[k].assign(state.per_worker[k][1].begin(), state.per_worker[k][1].end());
    if (!models_.delta_error.empty()) {
      models_.delta_error[k].assign(state.per_worker[k][per_worker - 1].begin(),
                                    state.per_worker[k][per_worker - 1].end());
    }
  }
  Push(Activity::kCheckpoint, TransferKind::kData, pim::kMramHeapSymbol, layout_.w_offset, layout_.model_bytes());
  if (dual_.duals_offset > 0) {
    std::vector<std::vector<int32_t>> duals(shards_.dpus);
    for (uint32_t k = 0; k < shards_.dpus; ++k) {
      duals[k].assign(state.per_worker[k].back().begin(), state.per_worker[k].back().end());
    }
    PushDuals(Activity::kCheckpoint, duals);
  }
}

}  // namespace pimopt
