// The PIM backend's dual coordinate ascent (LocalSolver::kDualCoordinateAscent, CoCoA's local solver): the rows'
// duals live in MRAM beside the rows (int32 Q.24, zero on a fresh DPU), the rows' step parameters are pushed once
// for the run's sigma', and each pass is one launch of the linear kernel's dual ascent mode (linear_kernel.h).
#include <algorithm>

#include "pimopt/backends/pim/pim_backend.h"
#include "pimopt/core/error.h"
#include "pimopt/core/thread_pool.h"

namespace pimopt {

using pimbackend::LinearKernelArgs;

uint32_t PimBackend::MaxShardRows() const { return *std::max_element(shard_rows_.begin(), shard_rows_.end()); }

uint64_t PimBackend::DualBytes() const { return (uint64_t{MaxShardRows()} * 4 + 7) / 8 * 8; }

void PimBackend::PushDualRowParams(double sigma) {
  // Each row's squared norm as the DPU sees it (Setup took it from the quantized values), its cost, sigma' / (lambda N).
  const Dataset& data = *data_;
  const Objective& obj = config_.objective;
  const double lambda_n = obj.l2 * static_cast<double>(part_.total_rows);
  const uint32_t max_rows = MaxShardRows();
  std::vector<std::vector<pimbackend::DualRowParams>> params(num_dpus_,
                                                             std::vector<pimbackend::DualRowParams>(max_rows));
  std::vector<std::string> errors(num_dpus_);
  pool_.ParallelFor(num_dpus_, [&](size_t k) {
    try {
      for (uint32_t i = 0; i < shard_rows_[k]; ++i) {
        const uint64_t row = shard_begin_[k] + i;
        const double cost = static_cast<double>(data.weight(row)) * obj.ClassWeight(data.labels()[row]);
        params[k][i] = pimbackend::MakeDualRowParams(dual_row_norms_[k][i], cost, sigma, lambda_n);
      }
    } catch (const ConfigError& e) {
      errors[k] = e.what();
    }
  });
  for (const std::string& e : errors) {
    if (!e.empty()) {
      // The step's scale is sigma' c_i / (lambda N): a row's cost c_i (its class weight times its sample weight) and
      // the L2 strength both set it.
      throw ConfigError("--class-weights",
                        StrCat("a row's dual step (sigma' x cost / (lambda N)) does not fit the kernel's fixed point: ", e,
                               "; lower --class-weights (or the sample weights) or raise --reg, or use --backend cpu"));
    }
  }
  for (uint32_t k = 0; k < num_dpus_; ++k) {
    machine_->PrepareXfer(k, params[k].data(), params[k].size() * sizeof(pimbackend::DualRowParams));
  }
  Push(Activity::kSetup, TransferKind::kDuals, pim::kMramHeapSymbol, row_param_offset_,
       uint64_t{max_rows} * sizeof(pimbackend::DualRowParams));
  dual_sigma_ = sigma;
}

void PimBackend::DualAscent(const LocalSolveRequest& req) {
  PIMOPT_CHECK(dual_offset_ > 0, "dual steps need row duals (AlgorithmTraits)");
  if (req.sigma != dual_sigma_) PushDualRowParams(req.sigma);
  constexpr uint32_t kSlots = 2;  // one row per step (the batch is 1), the list's entries in 8-byte pairs
  const std::vector<std::vector<uint32_t>> lists = StepRowLists(req, kSlots);
  const uint64_t entries = req.num_steps * kSlots;
  std::vector<LinearKernelArgs> args(num_dpus_, BaseArgs());
  for (uint32_t k = 0; k < num_dpus_; ++k) {
    args[k].mode = pimbackend::KernelMode::kDualAscent;
    args[k].steps = static_cast<uint32_t>(req.num_steps);
    args[k].slots_per_step = kSlots;
    args[k].dual_offset = dual_offset_;
    args[k].row_params_offset = row_param_offset_;
  }
  if (req.start_from_global) BroadcastModel(global_);
  PushRowLists(lists, static_cast<uint32_t>(entries));
  PushArgs(args);
  Launch();
}

std::vector<std::vector<int32_t>> PimBackend::PullDuals(Activity activity) {
  std::vector<std::vector<int32_t>> duals(num_dpus_, std::vector<int32_t>(DualBytes() / 4));
  for (uint32_t k = 0; k < num_dpus_; ++k) machine_->PrepareXfer(k, duals[k].data(), DualBytes());
  Pull(activity, TransferKind::kDuals, pim::kMramHeapSymbol, dual_offset_, DualBytes());
  for (uint32_t k = 0; k < num_dpus_; ++k) duals[k].resize(shard_rows_[k]);
  return duals;
}

void PimBackend::PushDuals(Activity activity, const std::vector<std::vector<int32_t>>& duals) {
  std::vector<std::vector<int32_t>> padded(num_dpus_, std::vector<int32_t>(DualBytes() / 4, 0));
  for (uint32_t k = 0; k < num_dpus_; ++k) {
    PIMOPT_CHECK(duals[k].size() == shard_rows_[k], "a DPU's duals of the wrong count");
    std::copy(duals[k].begin(), duals[k].end(), padded[k].begin());
    machine_->PrepareXfer(k, padded[k].data(), DualBytes());
  }
  Push(activity, TransferKind::kDuals, pim::kMramHeapSymbol, dual_offset_, DualBytes());
}

std::vector<float> PimBackend::RowDuals() {
  if (dual_offset_ == 0) return {};
  const std::vector<std::vector<int32_t>> duals = PullDuals(Activity::kDiagnostics);
  std::vector<float> out(train_rows_);
  for (uint32_t k = 0; k < num_dpus_; ++k) {
    for (uint32_t i = 0; i < shard_rows_[k]; ++i) {
      out[shard_begin_[k] + i] = static_cast<float>(fixed::FromModel(duals[k][i]));
    }
  }
  return out;
}

}  // namespace pimopt
