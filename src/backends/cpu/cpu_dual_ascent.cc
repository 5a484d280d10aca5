// The CPU backend's dual coordinate ascent (LocalSolver::kDualCoordinateAscent, algorithms/backend.h): each worker
// visits its step rows one after another, moves the row's dual to the maximizer of its local subproblem
// (model/dual_coordinate.h) and adds the change to its local model. Per worker the work is sequential, so the bits
// do not depend on the thread count.
#include <cmath>

#include "pimopt/algorithms/algorithm.h"
#include "pimopt/backends/cpu/cpu_backend.h"
#include "pimopt/core/error.h"
#include "pimopt/core/file_util.h"
#include "pimopt/model/dual_coordinate.h"

namespace pimopt {

void CpuBackend::SetupRowDuals() {
  row_duals_.clear();
  row_sq_norms_.clear();
  if (!config_.traits().row_duals) return;
  const Dataset& data = *data_;
  const size_t rows = data.num_rows();
  CheckMemoryNeed(rows * (sizeof(float) + sizeof(double)),
                  StrCat("the rows' duals (", rows, " rows: a float and a squared norm each)"), "--algo");
  row_duals_.assign(rows, 0.0f);
  row_sq_norms_.resize(rows);
  const double bias = config_.objective.fit_bias ? 1.0 : 0.0;
  VisitRows(data, [&](const auto& access) {
    for (size_t r = 0; r < rows; ++r) {
      double sq = bias;
      if constexpr (std::is_same_v<std::decay_t<decltype(access)>, SparseRows>) {
        for (uint64_t e = access.row_ptr[r]; e < access.row_ptr[r + 1]; ++e) {
          sq += static_cast<double>(access.val[e]) * access.val[e];
        }
      } else {
        const float* x = access.values + r * access.num_features;
        for (size_t j = 0; j < access.num_features; ++j) sq += static_cast<double>(x[j]) * x[j];
      }
      row_sq_norms_[r] = sq;
    }
  });
}

void CpuBackend::RunLocalDual(int k, const LocalSolveRequest& req) {
  const Dataset& data = *data_;
  const Objective& obj = config_.objective;
  float* x = local_[k].data();
  // 1 / (lambda N): a dual's change times c_i y_i a_i / (lambda N) is w(beta)'s change.
  const double inv_lambda_n = 1.0 / (obj.l2 * static_cast<double>(part_.total_rows));
  const double sigma = req.sigma;
  VisitRows(data, [&](const auto& access) {
    for (uint64_t s = req.first_step; s < req.first_step + req.num_steps; ++s) {
      for (const uint32_t r : req.plan->LocalBatch(k, s)) {
        const float y = data.labels()[r];
        const double cost = static_cast<double>(data.weight(r)) * obj.ClassWeight(y);
        if (!(cost > 0)) continue;  // a row of weight 0 is not in the objective
        const float z = access.Dot(r, x, n_) + x[n_];
        const double margin = static_cast<double>(y) * z;
        const double q = sigma * cost * row_sq_norms_[r] * inv_lambda_n;
        const float before = row_duals_[r];
        const float after = static_cast<float>(DualCoordinateStep(obj.loss, before, margin, q));
        if (after == before) continue;
        row_duals_[r] = after;
        // The stored change, so the duals and the model move together.
        const float coef = static_cast<float>(sigma * (static_cast<double>(after) - before) * cost * y * inv_lambda_n);
        access.Axpy(r, coef, x, n_);
        if (obj.fit_bias) x[n_] += coef;
      }
    }
  });
}

}  // namespace pimopt
