// Losses of a linear classifier on a score z = w.x + b and a label y in {-1, +1}.
//   logistic: l(z, y) = log(1 + exp(-y z)),        dl/dz = -y / (1 + exp(y z))
//   hinge:    l(z, y) = max(0, 1 - y z),           dl/dz = -y if y z < 1 else 0 (a subgradient)
// The training objective (what every algorithm minimizes) is
//   F(w, b) = (1/N) sum_i c_i l(w.x_i + b, y_i) + (l2/2) ||w||^2 + l1 ||w||_1
// with c_i = sample weight x class weight (positive_weight for y=+1, negative_weight for y=-1). The bias b is not
// regularized, except by the dual method (CoCoA), which solves F_b(w, b) = F(w, b) + (l2/2) b^2 as LIBLINEAR does
// (the bias as a feature of constant value 1; Objective::regularize_bias). l1 > 0 is only available through ADMM's
// consensus step.
#pragma once

#include <cmath>
#include <string>

namespace pimopt {

enum class LossKind { kLogistic, kHinge };

// Accepts "lr"/"logistic" and "svm"/"hinge"; throws ConfigError naming `parameter` otherwise.
LossKind ParseLossKind(const std::string& text, const char* parameter = "--model");
const char* LossName(LossKind kind);   // "logistic" / "hinge"
const char* ModelName(LossKind kind);  // "lr" / "svm"

inline double LossValue(LossKind kind, double z, double y) {
  const double m = y * z;
  if (kind == LossKind::kLogistic) return m > 0 ? std::log1p(std::exp(-m)) : -m + std::log1p(std::exp(m));
  return m < 1 ? 1 - m : 0;
}

inline float LossDerivative(LossKind kind, float z, float y) {
  if (kind == LossKind::kLogistic) return -y / (1.0f + std::exp(y * z));
  return y * z < 1.0f ? -y : 0.0f;
}

struct Objective {
  LossKind loss = LossKind::kLogistic;
  double l2 = 0.0;
  double l1 = 0.0;
  double positive_weight = 1.0;
  double negative_weight = 1.0;
  bool fit_bias = true;
  // The objective solved is F_b = F + (l2/2) b^2 (set from the algorithm's traits, AlgorithmTraits::regularizes_bias).
  bool regularize_bias = false;

  float ClassWeight(float y) const { return static_cast<float>(y > 0 ? positive_weight : negative_weight); }
  bool operator==(const Objective&) const = default;
};

}  // namespace pimopt
