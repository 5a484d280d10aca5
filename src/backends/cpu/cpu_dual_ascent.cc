// The CPU backend's dual coordinate ascent (LocalSolver::kDualCoordinateAscent, algorithms/backend.h): each worker
// visits its step rows one after another, moves the row's dual to the maximizer of its local subproblem
// (model/dual_coordinate.h) and adds the change to its local model. Per worker the work is sequential, so the bits
// do not depend on the thread count.
//
// Shrinking (LocalSolveRequest::shrink, the hinge loss), as LIBLINEAR's dual coordinate descent does it (Hsieh et
// al. 2008, section 3.2; [DCD-Shrinking] in docs/sources.md): with G = y z - 1 the gradient of a row's dual in
// LIBLINEAR's minimized form, a row whose dual is 0 with G above the largest projected gradient of the worker's
// previous pass, or 1 with G below the smallest, would not move and is skipped from then on. When the projected
// gradients of a pass's remaining rows span at most kShrinkTolerance, every row of the worker is visited again
// (LIBLINEAR stops there; here the certificate over all rows decides when to stop). The state is the worker's own,
// so the bits still do not depend on the thread count, and it is checkpointed.
#include <algorithm>
#include <cmath>
#include <limits>

#include "pimopt/algorithms/algorithm.h"
#include "pimopt/backends/cpu/cpu_backend.h"
#include "pimopt/core/error.h"
#include "pimopt/core/file_util.h"
#include "pimopt/model/dual_coordinate.h"

namespace pimopt {
namespace cpu_dual_ascent {  // named: the backend's files share unity batches
constexpr double kUnboundedAbove = std::numeric_limits<double>::infinity();
constexpr double kUnboundedBelow = -std::numeric_limits<double>::infinity();
// The projected gradients' span below which every row is visited again: LIBLINEAR's default stopping tolerance of
// its dual solvers (liblinear-train -e 0.1 for -s 3).
constexpr double kShrinkTolerance = 0.1;
}  // namespace cpu_dual_ascent
using cpu_dual_ascent::kShrinkTolerance;
using cpu_dual_ascent::kUnboundedAbove;
using cpu_dual_ascent::kUnboundedBelow;

void CpuBackend::SetupRowDuals() {
  row_duals_.clear();
  row_sq_norms_.clear();
  if (!config_.traits().row_duals) return;
  const Dataset& data = *data_;
  const size_t rows = data.num_rows();
  CheckMemoryNeed(rows * (sizeof(float) + sizeof(double)),
                  StrCat("the rows' duals (", rows, " rows: a float and a squared norm each)"), "--algo");
  row_duals_.assign(rows, 0.0f);
  row_shrunk_.assign(rows, 0);
  shrink_bounds_.assign(workers_, {kUnboundedAbove, kUnboundedBelow});
  dual_row_visits_.assign(workers_, 0);
  dual_rows_skipped_.assign(workers_, 0);
  dual_unshrinks_.assign(workers_, 0);
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
  const bool shrink = req.shrink && obj.loss == LossKind::kHinge;
  ShrinkBounds& bounds = shrink_bounds_[k];
  double pg_max = kUnboundedBelow, pg_min = kUnboundedAbove;  // this pass's projected gradients
  uint64_t visits = 0, skipped = 0;
  VisitRows(data, [&](const auto& access) {
    for (uint64_t s = req.first_step; s < req.first_step + req.num_steps; ++s) {
      for (const uint32_t r : req.plan->LocalBatch(k, s)) {
        if (shrink && row_shrunk_[r] != 0) {
          ++skipped;
          continue;
        }
        const float y = data.labels()[r];
        const double cost = static_cast<double>(data.weight(r)) * obj.ClassWeight(y);
        if (!(cost > 0)) continue;  // a row of weight 0 is not in the objective
        const float z = access.Dot(r, x, n_) + x[n_];
        const double margin = static_cast<double>(y) * z;
        const float before = row_duals_[r];
        ++visits;
        if (shrink) {
          const double g = margin - 1.0;
          const bool at_lower = before == 0.0f, at_upper = before == 1.0f;
          if ((at_lower && g > bounds.max_old) || (at_upper && g < bounds.min_old)) {
            row_shrunk_[r] = 1;  // it would stay at its bound now, and is skipped from the next pass on
            continue;
          }
          const double pg = at_lower ? std::min(g, 0.0) : at_upper ? std::max(g, 0.0) : g;
          pg_max = std::max(pg_max, pg);
          pg_min = std::min(pg_min, pg);
        }
        const double q = sigma * cost * row_sq_norms_[r] * inv_lambda_n;
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
  dual_row_visits_[k] += visits;
  dual_rows_skipped_[k] += skipped;
  if (!shrink) return;
  if (pg_max - pg_min <= kShrinkTolerance) {
    // The rows still visited are near their optimum (or none is left): visit every row of the worker again.
    ForgetShrinking(k);
    ++dual_unshrinks_[k];
  } else {
    bounds = {pg_max > 0 ? pg_max : kUnboundedAbove, pg_min < 0 ? pg_min : kUnboundedBelow};
  }
}

void CpuBackend::ForgetShrinking(int k) {
  std::fill(row_shrunk_.begin() + shards_[k].begin, row_shrunk_.begin() + shards_[k].end, uint8_t{0});
  shrink_bounds_[k] = {kUnboundedAbove, kUnboundedBelow};
}

std::map<std::string, double> CpuBackend::Counters() {
  if (row_duals_.empty()) return {};
  uint64_t visits = 0, skipped = 0, unshrinks = 0;
  for (int k = 0; k < workers_; ++k) {
    visits += dual_row_visits_[k];
    skipped += dual_rows_skipped_[k];
    unshrinks += dual_unshrinks_[k];
  }
  return {{"dual_row_visits", static_cast<double>(visits)},
          {"dual_rows_skipped", static_cast<double>(skipped)},
          {"dual_unshrinks", static_cast<double>(unshrinks)}};
}

}  // namespace pimopt
