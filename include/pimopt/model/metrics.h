// Evaluation of a linear model on a dataset. Deterministic: scores are per row, sums are taken in row order.
#pragma once

#include <span>
#include <vector>

#include "pimopt/data/dataset.h"
#include "pimopt/model/linear_model.h"

namespace pimopt {

class ThreadPool;

struct Metrics {
  size_t rows = 0;
  double accuracy = 0;    // fraction of rows with sign(score) == label (score > 0 means positive)
  double auc = 0;         // exact ROC-AUC with ties counted as 1/2; NaN when only one class is present
  double log_loss = 0;    // mean log(1 + exp(-y z)), unweighted
  double hinge_loss = 0;  // mean max(0, 1 - y z), unweighted
  double objective = 0;   // the training objective F(w, b) (weighted loss + regularization), see loss.h; F_b with
                          // Objective::regularize_bias
  double bias_penalty = 0;  // (l2/2) b^2, included in `objective` with Objective::regularize_bias (else 0)
};

// What an evaluation computes: every metric, or the training objective alone (and the model's own loss, which it
// sums): the others are NaN. The objective has the same bits either way.
enum class MetricsScope { kAll, kObjective };

std::vector<float> ComputeScores(const LinearModel& model, const Dataset& data, ThreadPool* pool = nullptr);
// Exact ROC-AUC: the probability that a random positive scores above a random negative, ties counting 1/2.
double RocAuc(std::span<const float> scores, std::span<const float> labels);
Metrics Evaluate(const LinearModel& model, const Dataset& data, const Objective& objective, ThreadPool* pool = nullptr,
                 MetricsScope scope = MetricsScope::kAll);
// The metrics of `scores` (the model's scores of rows with `labels` and sample `weights`, empty = all 1); the same
// bits with a pool of any size or none.
Metrics MetricsOfScores(std::span<const float> scores, std::span<const float> labels, std::span<const float> weights,
                        const LinearModel& model, const Objective& objective, ThreadPool* pool = nullptr,
                        MetricsScope scope = MetricsScope::kAll);

}  // namespace pimopt
