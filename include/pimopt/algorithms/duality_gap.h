// A certificate of how far a model is from the optimum of the training objective: the duality gap.
//
//   P(w, b) = (1/N) sum_i c_i phi(y_i (w.x_i + b)) + g(w),   g(w) = (l2/2)||w||^2 + l1 ||w||_1,
// with phi the logistic loss log(1 + e^-m) or the hinge loss max(0, 1 - m), has the Fenchel dual
//   D(beta) = (1/N) sum_i c_i psi(beta_i) - g*(v),   v = (1/N) sum_i c_i beta_i y_i x_i,   beta_i in [0, 1],
//   subject to sum_i c_i beta_i y_i = 0 (the unregularized bias; absent without a bias),
// where psi(beta) = -beta log beta - (1 - beta) log(1 - beta) (logistic) or beta (hinge) and
// g*(v) = sum_j max(|v_j| - l1, 0)^2 / (2 l2). Weak duality: D(beta) <= P* <= P(w, b) for every feasible beta, so
// gap = P(w, b) - D(beta) bounds the suboptimality P(w, b) - P* from above.
//
// beta is built from the model's own margins m_i, as the optimality conditions pair them: beta_i = -phi'(m_i),
// i.e. 1 / (1 + e^m) (logistic) or [m_i < 1] (hinge), then the class with the larger sum_i c_i beta_i is scaled
// down to meet the bias constraint (scaling keeps beta in [0, 1]). At the logistic loss's optimum this beta is the
// dual optimum and the gap is 0; for the hinge loss the rows exactly on the margin take a fractional beta at the
// optimum, so the gap of an SGD iterate stays a little above 0 (docs/algorithms.md, "When a run stops").
// This is the certificate of dual coordinate ascent solvers (Shalev-Shwartz & Zhang 2013, [SDCA] in
// docs/sources.md; LIBLINEAR's dual solvers stop on the related projected-gradient violation).
//
// Deterministic across threads and MPI rank splits: every sum is taken in 64-bit integers (fixed point with an
// exponent chosen from the data's extremes), which add exactly in any order.
#pragma once

#include <limits>
#include <span>
#include <vector>

#include "pimopt/collectives/communicator.h"
#include "pimopt/collectives/partition.h"
#include "pimopt/data/dataset.h"
#include "pimopt/model/linear_model.h"
#include "pimopt/model/loss.h"

namespace pimopt {

class ThreadPool;

struct DualityGap {
  bool available = false;  // false without L2 regularization (g* is then not finite): no certificate
  double primal = std::numeric_limits<double>::quiet_NaN();  // P(w, b)
  double dual = std::numeric_limits<double>::quiet_NaN();    // D(beta) <= P*
  double gap() const { return primal - dual; }
  // gap / |P|: a bound on (P - P*) / P.
  double relative() const;
};

// What fixes the certificate's integer scales: the largest row cost c_i, each feature's largest |x| (and the
// bias's 1 with a regularized bias) over all processes' rows, and N. A run computes them once (a pass over the
// values) and passes them to every gap. Collective.
// Each coordinate of v has its own scale: with one scale for all, fixed by the largest |x| of any feature, a
// feature of 1e12 beside features of 1 truncated the others' coordinates of v to zero, which made the dual too high
// and the certified gap too small (negative, even) on unscaled data.
struct DualityGapScales {
  double total_rows = 0;
  double max_cost = 0;
  std::vector<float> max_abs_x;  // per coordinate of v: the features, then the bias's 1 with a regularized bias
};
DualityGapScales ComputeDualityGapScales(const Dataset& local, const Objective& objective, Communicator& comm);

// The gap of `model` on the training rows, whose objective P(w, b) = `primal` the caller has evaluated (over all
// rows, in row order); `local` holds this process's rows (all of them in one process). Collective: every rank
// calls it and gets the same result.
// `pieces` are the local rows of the workers' shards (LocalShards; empty: all local rows as one piece): dense rows
// are summed in double within fixed chunks of a piece and each chunk's sums rounded to integers, so the result is
// the same however the pieces are split over processes and threads.
// `row_duals`: the dual variables beta_i in [0, 1] of a dual solver (one per local row, in row order; CoCoA's), used
// instead of the duals built from the margins. With Objective::regularize_bias the objective is F_b = P + (l2/2) b^2,
// whose dual has v's bias coordinate (1/N) sum_i c_i beta_i y_i in g* and no constraint.
DualityGap ComputeDualityGap(const LinearModel& model, const Dataset& local, const Objective& objective, double primal,
                             ThreadPool* pool, Communicator& comm, std::span<const Shard> pieces = {},
                             std::span<const float> row_duals = {}, const DualityGapScales* scales = nullptr);

}  // namespace pimopt
