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
// Rows per lane in a round of LocalSolveRequest::lanes: enough work per phase to cover its fork and join (a dense
// row of fashion-mnist is about 0.3 us of steps), few enough that the lanes' steps rarely overlap.
constexpr size_t kLaneRows = 256;
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
  unshrunk_rows_.assign(workers_, {});
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

template <typename Access>
CpuBackend::DualRowStep CpuBackend::StepRowDual(const Access& access, uint32_t r, const float* x,
                                                const DualPass& pass, DualPassTally& tally) {
  const float before = row_duals_[r];
  const DualRowStep unmoved{before, before, 0.0f};
  if (pass.shrink && row_shrunk_[r] != 0) {
    ++tally.skipped;
    return unmoved;
  }
  const double cost = RowCost(r);
  if (!(cost > 0)) return unmoved;  // a row of weight 0 is not in the objective
  const float y = data_->labels()[r];
  const float z = access.Dot(r, x, n_) + x[n_];
  const double margin = static_cast<double>(y) * z;
  ++tally.visits;
  if (pass.shrink) {
    const double g = margin - 1.0;
    const bool at_lower = before == 0.0f, at_upper = before == 1.0f;
    if ((at_lower && g > pass.bounds->max_old) || (at_upper && g < pass.bounds->min_old)) {
      row_shrunk_[r] = 1;  // it would stay at its bound now, and is skipped from the next pass on
      return unmoved;
    }
    const double pg = at_lower ? std::min(g, 0.0) : at_upper ? std::max(g, 0.0) : g;
    tally.pg_max = std::max(tally.pg_max, pg);
    tally.pg_min = std::min(tally.pg_min, pg);
  }
  const double q = pass.sigma * cost * row_sq_norms_[r] * pass.inv_lambda_n;
  const LossKind loss = config_.objective.loss;
  const float after = static_cast<float>(loss == LossKind::kHinge ? HingeDualStep(before, margin, q)
                                                                  : DualCoordinateStep(loss, before, margin, q));
  if (after == before) return unmoved;
  // The stored change, so the duals and the model move together.
  const float coef =
      static_cast<float>(pass.sigma * (static_cast<double>(after) - before) * cost * y * pass.inv_lambda_n);
  return {before, after, coef};
}

// Dense rows in the pass's order jump through memory (a shuffled order, shrunk rows left out), which the hardware
// prefetcher does not follow: the row about 32 KB ahead (10 of fashion-mnist's 3 KB rows; 2 to 16 rows) is asked
// for while this one is stepped. On fashion-mnist's SVM (one thread, training to the certified 1%) no prefetch
// took 5.1-7.1 s, one row ahead 4.9-6.4 s, 4 rows 3.3-4.3 s, 8 rows 3.5-3.6 s, 16 rows 3.0-3.5 s (2026-12-07).
namespace cpu_dual_ascent {
size_t DenseRowsAhead(size_t features) { return std::clamp<size_t>(32768 / (4 * features + 4), 2, 16); }
}  // namespace cpu_dual_ascent

void CpuBackend::RunLocalDual(int k, const LocalSolveRequest& req) {
  if (req.lanes > 1) {
    RunLocalDualLanes(k, req);
    return;
  }
  const Objective& obj = config_.objective;
  float* x = local_[k].data();
  // 1 / (lambda N): a dual's change times c_i y_i a_i / (lambda N) is w(beta)'s change.
  const DualPass pass{req.sigma, 1.0 / (obj.l2 * static_cast<double>(part_.total_rows)),
                      req.shrink && obj.loss == LossKind::kHinge, &shrink_bounds_[k]};
  DualPassTally tally;
  // A row shrunk in this pass stays so until the pass ends.
  auto skipped = [&](uint32_t row) { return pass.shrink && row_shrunk_[row] != 0; };
  // Rows shrunk before the pass stay so through it (only EndDualPass visits them again): the pass steps through the
  // others, in the same order, so that a skipped row costs a flag in one sequential sweep instead of a turn of the
  // loop and its prefetches (late in a Criteo-shaped SVM run 8 rows of 10 are skipped); the same steps, the same
  // bits. A row the pass shrinks is still skipped at a second visit (a shard one row short wraps around).
  std::vector<uint32_t>& unshrunk = unshrunk_rows_[k];
  const size_t dense_rows_ahead = cpu_dual_ascent::DenseRowsAhead(n_);
  auto unshrunk_of = [&](std::span<const uint32_t> rows) {
    if (!pass.shrink) return rows;
    unshrunk.resize(rows.size());
    size_t kept = 0;
    for (const uint32_t r : rows) {
      unshrunk[kept] = r;
      kept += row_shrunk_[r] == 0;
    }
    tally.skipped += rows.size() - kept;
    return std::span<const uint32_t>(unshrunk.data(), kept);
  };
  VisitTrainingRows([&](const auto& access) {
    req.plan->ForEachRowSpan(k, req.first_step, req.num_steps, [&](std::span<const uint32_t> all_rows) {
      const std::span<const uint32_t> rows = unshrunk_of(all_rows);
      for (size_t i = 0; i < rows.size(); ++i) {
        const uint32_t r = rows[i];
        if constexpr (std::is_same_v<std::decay_t<decltype(access)>, SparseRows>) {
          // Random rows of random columns: SparseRows' three prefetch stages, the row's own flag with its extent and
          // its dual, norm and label with its non-zeros; nothing but the flag for a row that will be skipped.
          if (i + SparseRows::kExtentAhead < rows.size()) {
            const uint32_t ahead = rows[i + SparseRows::kExtentAhead];
            __builtin_prefetch(&row_shrunk_[ahead]);
            access.PrefetchExtent(ahead);
          }
          if (i + SparseRows::kNonZerosAhead < rows.size() && !skipped(rows[i + SparseRows::kNonZerosAhead])) {
            const uint32_t ahead = rows[i + SparseRows::kNonZerosAhead];
            access.PrefetchNonZeros(ahead);
            __builtin_prefetch(&row_duals_[ahead], 1);
            __builtin_prefetch(&row_sq_norms_[ahead]);
            __builtin_prefetch(&data_->labels()[ahead]);
          }
          if (i + SparseRows::kModelAhead < rows.size()) {
            const uint32_t ahead = rows[i + SparseRows::kModelAhead];
            if (!skipped(ahead)) access.PrefetchModel(ahead, x, n_);
          }
        } else if (i + dense_rows_ahead < rows.size()) {
          access.Prefetch(rows[i + dense_rows_ahead]);
        }
        const DualRowStep step = StepRowDual(access, r, x, pass, tally);
        if (step.after == step.before) continue;
        row_duals_[r] = step.after;
        access.Axpy(r, step.coef, x, n_);
        if (obj.fit_bias) x[n_] += step.coef;
      }
    });
  });
  EndDualPass(k, pass, tally);
}

void CpuBackend::EndDualPass(int k, const DualPass& pass, const DualPassTally& tally) {
  dual_row_visits_[k] += tally.visits;
  dual_rows_skipped_[k] += tally.skipped;
  if (!pass.shrink) return;
  if (tally.pg_max - tally.pg_min <= kShrinkTolerance) {
    // The rows still visited are near their optimum (or none is left): visit every row of the worker again.
    ForgetShrinking(k);
    ++dual_unshrinks_[k];
  } else {
    shrink_bounds_[k] = {tally.pg_max > 0 ? tally.pg_max : kUnboundedAbove,
                         tally.pg_min < 0 ? tally.pg_min : kUnboundedBelow};
  }
}

void CpuBackend::RunLocalDualLanes(int k, const LocalSolveRequest& req) {
  const Dataset& data = *data_;
  if (data.is_sparse()) {
    throw ConfigError("--dual-lanes", "lanes take dense rows (these are sparse): leave --dual-lanes at 1");
  }
  PIMOPT_CHECK(req.sigma == 1 && workers_ == 1, "dual lanes: one worker");
  const Objective& obj = config_.objective;
  const size_t width = n_ + 1, lanes = static_cast<size_t>(req.lanes);
  float* x = local_[k].data();
  const double n_rows = static_cast<double>(part_.total_rows);
  const double lambda = obj.l2;
  const DualPass pass{1.0, 1.0 / (lambda * n_rows), req.shrink && obj.loss == LossKind::kHinge, &shrink_bounds_[k]};
  std::vector<uint32_t> order;
  req.plan->ForEachRowSpan(k, req.first_step, req.num_steps, [&](std::span<const uint32_t> rows) {
    order.insert(order.end(), rows.begin(), rows.end());
  });
  lane_models_.resize(lanes, std::vector<float>(width));
  lane_changes_.resize(lanes);
  std::vector<DualPassTally> tallies(lanes);
  const DenseRows access{data.dense_values().data(), data.num_features()};
  std::vector<double> delta(width);
  const size_t round = lanes * cpu_dual_ascent::kLaneRows;
  for (size_t start = 0; start < order.size(); start += round) {
    const size_t rows_in_round = std::min(round, order.size() - start);
    pool_.ParallelForWork(lanes, 2.0 * static_cast<double>(rows_in_round * width) * 0.19, [&](size_t p) {
      float* lx = lane_models_[p].data();
      std::copy(x, x + width, lx);
      std::vector<LaneChange>& changes = lane_changes_[p];
      changes.clear();
      const size_t begin = std::min(order.size(), start + p * cpu_dual_ascent::kLaneRows);
      const size_t end = std::min(order.size(), begin + cpu_dual_ascent::kLaneRows);
      for (size_t i = begin; i < end; ++i) {
        const uint32_t r = order[i];
        const DualRowStep step = StepRowDual(access, r, lx, pass, tallies[p]);
        if (step.after == step.before) continue;
        changes.push_back({r, step.before, step.after});
        access.Axpy(r, step.coef, lx, n_);
        if (obj.fit_bias) lx[n_] += step.coef;
      }
    });
    // The lanes' changes, in lane order: dw = sum_p (x_p - x), and the dual along gamma,
    // D(beta + gamma dbeta) = D + (1/N) sum_i c_i [psi(beta_i + gamma dbeta_i) - psi(beta_i)] - lambda gamma x.dw
    //                         - (lambda/2) gamma^2 ||dw||^2, maximized over [0, 1] (gamma = 1/lanes is CoCoA's safe
    // averaging, so the line search never does worse).
    double xd = 0, dd = 0;
    for (size_t j = 0; j < width; ++j) {
      double d = 0;
      for (size_t p = 0; p < lanes; ++p) d += static_cast<double>(lane_models_[p][j]) - x[j];
      delta[j] = d;
      xd += static_cast<double>(x[j]) * d;
      dd += d * d;
    }
    // The slope of the duals' part at gamma: (1/N) sum_i c_i dbeta_i psi'(beta_i + gamma dbeta_i).
    auto psi_slope = [&](double gamma, double* curvature) {
      double slope = 0, curve = 0;
      for (size_t p = 0; p < lanes; ++p) {
        for (const LaneChange& c : lane_changes_[p]) {
          const double d = static_cast<double>(c.after) - c.before, cost = RowCost(c.row);
          if (obj.loss == LossKind::kHinge) {
            slope += cost * d;
          } else {
            const double b = std::clamp(c.before + gamma * d, 1e-300, 1 - 1e-16);
            slope += cost * d * std::log((1 - b) / b);
            curve -= cost * d * d / (b * (1 - b));
          }
        }
      }
      if (curvature) *curvature = curve / n_rows - lambda * dd;
      return slope / n_rows - lambda * (xd + gamma * dd);
    };
    double gamma = 1.0;
    if (dd > 0) {
      if (obj.loss == LossKind::kHinge) {
        gamma = std::clamp(psi_slope(0.0, nullptr) / (lambda * dd), 0.0, 1.0);  // the slope is linear in gamma
      } else if (psi_slope(1.0, nullptr) < 0) {
        // Newton's method on the concave function's slope, kept inside a shrinking bracket.
        double lo = 0, hi = 1;
        gamma = 0.5;
        for (int it = 0; it < 30; ++it) {
          double curvature = 0;
          const double slope = psi_slope(gamma, &curvature);
          (slope > 0 ? lo : hi) = gamma;
          double next = curvature < 0 ? gamma - slope / curvature : 0.5 * (lo + hi);
          if (!(next > lo && next < hi)) next = 0.5 * (lo + hi);
          if (std::fabs(next - gamma) < 1e-9) {
            gamma = next;
            break;
          }
          gamma = next;
        }
      }
    }
    for (size_t p = 0; p < lanes; ++p) {
      for (const LaneChange& c : lane_changes_[p]) {
        row_duals_[c.row] = static_cast<float>(c.before + gamma * (static_cast<double>(c.after) - c.before));
      }
    }
    for (size_t j = 0; j < width; ++j) x[j] = static_cast<float>(x[j] + gamma * delta[j]);
  }
  DualPassTally tally;  // the lanes' tallies, in lane order
  for (const DualPassTally& t : tallies) {
    tally.visits += t.visits;
    tally.skipped += t.skipped;
    tally.pg_max = std::max(tally.pg_max, t.pg_max);
    tally.pg_min = std::min(tally.pg_min, t.pg_min);
  }
  EndDualPass(k, pass, tally);
}

void CpuBackend::ForgetShrinking(int k) {
  std::fill(row_shrunk_.begin() + shards_[k].begin, row_shrunk_.begin() + shards_[k].end, uint8_t{0});
  shrink_bounds_[k] = {kUnboundedAbove, kUnboundedBelow};
}

void CpuBackend::MoveRowDualsToL2(double from_l2) {
  local_matches_global_ = false;
  PIMOPT_CHECK(!row_duals_.empty() && from_l2 > 0, "MoveRowDualsToL2: a state with row duals and a positive L2");
  // w(beta) = (1/(l2 N)) sum_i c_i beta_i y_i a_i. Towards a weaker L2 the duals shrink by l2 / from_l2 and w stays
  // (LIBLINEAR's warm start along C keeps its alpha = beta / (l2 N)); towards a stronger one the duals could leave
  // [0, 1], so they stay and w shrinks by from_l2 / l2 instead. Either way w = w(beta) under this run's L2.
  const double ratio = config_.objective.l2 / from_l2;
  if (ratio <= 1.0) {
    for (float& b : row_duals_) b = static_cast<float>(b * ratio);
  } else {
    const float shrink = static_cast<float>(1.0 / ratio);
    for (float& v : global_) v *= shrink;
    for (std::vector<float>& local : local_) {
      for (float& v : local) v *= shrink;
    }
  }
  // The shrinking bounds and flags were judged against the old objective's gradients.
  for (int k = 0; k < workers_; ++k) ForgetShrinking(k);
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
