// One coordinate step of dual coordinate ascent for the linear classifiers (loss.h), the local solver of CoCoA
// (algorithms/backend.h, LocalSolver::kDualCoordinateAscent).
//
// With the loss phi(m) of a margin m and its dual psi(beta) = -phi*(-beta) on beta in [0, 1]
//   hinge:    phi(m) = max(0, 1 - m),      psi(beta) = beta,
//   logistic: phi(m) = log(1 + e^-m),      psi(beta) = -beta log beta - (1 - beta) log(1 - beta),
// a row's step maximizes the dual along its coordinate, with the model's margin m at the current dual beta and the
// curvature q of the quadratic part (q = sigma c ||a||^2 / (lambda N) in CoCoA+):
//   beta' = argmax_{b in [0, 1]}  psi(b) - (b - beta) m - (q / 2) (b - beta)^2.
// Hinge: b = clip(beta + (1 - m) / q, 0, 1) (Shalev-Shwartz & Zhang 2013, [SDCA] in docs/sources.md; Hsieh et al.
// 2008, LIBLINEAR's dual CD). Logistic: the root of g(b) = log((1 - b) / b) - m - q (b - beta), which is decreasing
// and lies between beta and the q = 0 solution 1 / (1 + e^m): a Newton iteration kept inside that bracket (a
// bisection step when Newton would leave it), as LIBLINEAR's dual logistic solver does (Yu, Huang & Lin 2011).
#pragma once

#include <algorithm>

#include "pimopt/model/loss.h"

namespace pimopt {

// The step's new dual beta' (see above), for beta in [0, 1], a finite margin m and q >= 0 (q = 0: the row has no
// values and no bias; beta' maximizes psi(b) - b m alone). Deterministic: a pure function of its arguments.
double DualCoordinateStep(LossKind loss, double beta, double margin, double q);
// The hinge loss's step in closed form (what DualCoordinateStep returns for LossKind::kHinge), inline for the
// passes' inner loops.
inline double HingeDualStep(double beta, double margin, double q) {
  if (!(q > 0)) return margin < 1 ? 1.0 : 0.0;
  return std::clamp(beta + (1 - margin) / q, 0.0, 1.0);
}

// The most Newton iterations of the logistic step (each halves the bracket at worst); it ends earlier once a step
// moves beta by less than kDualNewtonTolerance.
inline constexpr int kDualNewtonIterations = 60;
inline constexpr double kDualNewtonTolerance = 1e-12;

}  // namespace pimopt
