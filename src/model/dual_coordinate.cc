#include "pimopt/model/dual_coordinate.h"

#include <algorithm>
#include <cmath>

namespace pimopt {

namespace {

// 1 / (1 + e^m) without overflow: the logistic loss's dual at q = 0.
double LogisticDualOfMargin(double margin) {
  if (margin > 0) {
    const double e = std::exp(-margin);
    return e / (1 + e);
  }
  return 1 / (1 + std::exp(margin));
}

}  // namespace

double DualCoordinateStep(LossKind loss, double beta, double margin, double q) {
  if (loss == LossKind::kHinge) return HingeDualStep(beta, margin, q);
  const double free = LogisticDualOfMargin(margin);
  if (!(q > 0)) return free;
  double lo = std::min(beta, free), hi = std::max(beta, free);
  if (!(hi > lo)) return lo;
  // g(b) = log((1 - b) / b) - m - q (b - beta): positive left of the root, negative right of it.
  auto g = [&](double b) { return std::log((1 - b) / b) - margin - q * (b - beta); };
  double b = 0.5 * (lo + hi);
  for (int it = 0; it < kDualNewtonIterations; ++it) {
    const double value = g(b);
    if (value == 0) return b;
    if (value > 0) {
      lo = b;
    } else {
      hi = b;
    }
    const double slope = -1 / (b * (1 - b)) - q;
    double next = b - value / slope;
    if (!(next > lo && next < hi)) next = 0.5 * (lo + hi);  // Newton would leave the bracket: bisect
    const double moved = std::fabs(next - b);
    b = next;
    if (moved < kDualNewtonTolerance || !(hi > lo)) break;
  }
  return b;
}

}  // namespace pimopt
