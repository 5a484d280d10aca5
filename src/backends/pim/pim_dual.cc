// The PIM backend's dual coordinate ascent (LocalSolver::kDualCoordinateAscent, CoCoA's local solver): the rows'
// duals live in MRAM beside the rows (int32 Q.24, zero on a fresh DPU), the rows' step parameters are pushed once
// for the run's sigma', and each pass is one launch of the linear kernel's dual ascent mode (linear_kernel.h).
#include <algorithm>

#include "pimopt/backends/pim/pim_backend.h"
#include "pimopt/core/error.h"
#include "pimopt/core/thread_pool.h"

namespace pimopt {

using pimbackend::LinearKernelArgs;

uint32_t PimBackend::Shards::MaxRows() const { return *std::max_element(rows.begin(), rows.end()); }

uint64_t PimBackend::DualBytes() const { return (uint64_t{shards_.MaxRows()} * 4 + 7) / 8 * 8; }

void PimBackend::PushDualRowParams(double sigma) {
  // Each row's squared norm as the DPU sees it (Setup took it from the quantized values), its cost, sigma' / (lambda N).
  const Dataset& data = *run_.data;
  const Objective& obj = run_.config.objective;
  const double lambda_n = obj.l2 * static_cast<double>(run_.part.total_rows);
  const uint32_t max_rows = shards_.MaxRows();
  std::vector<std::vector<pimbackend::DualRowParams>> params(shards_.dpus,
                                                             std::vector<pimbackend::DualRowParams>(max_rows));
  std::vector<std::string> errors(shards_.dpus);
  pool_.ParallelFor(shards_.dpus, [&](size_t k) {
    try {
      for (uint32_t i = 0; i < shards_.rows[k]; ++i) {
        const uint64_t row = shards_.begin[k] + i;
        const double cost = static_cast<double>(data.weight(row)) * obj.ClassWeight(data.labels()[row]);
        params[k][i] = pimbackend::MakeDualRowParams(dual_.row_norms[k][i], cost, sigma, lambda_n);
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
  for (uint32_t k = 0; k < shards_.dpus; ++k) {
    machine_->PrepareXfer(k, params[k].data(), params[k].size() * sizeof(pimbackend::DualRowParams));
  }
  Push(Activity::kSetup, TransferKind::kDuals, pim::kMramHeapSymbol, dual_.row_params_offset,
       uint64_t{max_rows} * sizeof(pimbackend::DualRowParams));
  dual_.sigma = sigma;
}

void PimBackend::DualAscent(const LocalSolveRequest& req) {
  PIMOPT_CHECK(dual_.duals_offset > 0, "dual steps need row duals (AlgorithmTraits)");
  if (req.sigma != dual_.sigma) PushDualRowParams(req.sigma);
  constexpr uint32_t kSlots = 2;  // one row per step (the batch is 1), the list's entries in 8-byte pairs
  const std::vector<std::vector<uint32_t>> lists = StepRowLists(req, kSlots);
  const uint64_t entries = req.num_steps * kSlots;
  std::vector<LinearKernelArgs> args(shards_.dpus, BaseArgs());
  for (uint32_t k = 0; k < shards_.dpus; ++k) {
    args[k].mode = pimbackend::KernelMode::kDualAscent;
    args[k].steps = static_cast<uint32_t>(req.num_steps);
    args[k].slots_per_step = kSlots;
    args[k].dual_offset = dual_.duals_offset;
    args[k].row_params_offset = dual_.row_params_offset;
  }
  if (req.start_from_global) BroadcastModel(models_.global);
  PushRowLists(lists, static_cast<uint32_t>(entries));
  PushArgs(args);
  Launch();
}

std::vector<std::vector<int32_t>> PimBackend::PullDuals(Activity activity) {
  std::vector<std::vector<int32_t>> duals(shards_.dpus, std::vector<int32_t>(DualBytes() / 4));
  for (uint32_t k = 0; k < shards_.dpus; ++k) machine_->PrepareXfer(k, duals[k].data(), DualBytes());
  Pull(activity, TransferKind::kDuals, pim::kMramHeapSymbol, dual_.duals_offset, DualBytes());
  for (uint32_t k = 0; k < shards_.dpus; ++k) duals[k].resize(shards_.rows[k]);
  return duals;
}

void PimBackend::PushDuals(Activity activity, const std::vector<std::vector<int32_t>>& duals) {
  std::vector<std::vector<int32_t>> padded(shards_.dpus, std::vector<int32_t>(DualBytes() / 4, 0));
  for (uint32_t k = 0; k < shards_.dpus; ++k) {
    PIMOPT_CHECK(duals[k].size() == shards_.rows[k], "a DPU's duals of the wrong count");
    std::copy(duals[k].begin(), duals[k].end(), padded[k].begin());
    machine_->PrepareXfer(k, padded[k].data(), DualBytes());
  }
  Push(activity, TransferKind::kDuals, pim::kMramHeapSymbol, dual_.duals_offset, DualBytes());
}

std::vector<float> PimBackend::RowDuals() {
  if (dual_.duals_offset == 0) return {};
  const std::vector<std::vector<int32_t>> duals = PullDuals(Activity::kDiagnostics);
  std::vector<float> out(run_.train_rows);
  for (uint32_t k = 0; k < shards_.dpus; ++k) {
    for (uint32_t i = 0; i < shards_.rows[k]; ++i) {
      out[shards_.begin[k] + i] = static_cast<float>(fixed::FromModel(duals[k][i]));
    }
  }
  return out;
}

}  // namespace pimopt
