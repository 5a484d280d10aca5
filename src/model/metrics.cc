#include "pimopt/model/metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "pimopt/core/error.h"
#include "pimopt/core/thread_pool.h"

namespace pimopt {

std::vector<float> ComputeScores(const LinearModel& model, const Dataset& data, ThreadPool* pool) {
  std::vector<float> scores(data.num_rows());
  constexpr size_t kRowsPerTask = 2048;
  const size_t tasks = (data.num_rows() + kRowsPerTask - 1) / kRowsPerTask;
  auto run = [&](size_t t) {
    const size_t begin = t * kRowsPerTask, end = std::min(data.num_rows(), begin + kRowsPerTask);
    VisitRows(data, [&](auto rows) {
      for (size_t i = begin; i < end; ++i) {
        scores[i] = rows.Dot(i, model.weights.data(), model.weights.size()) + model.bias;
      }
    });
  };
  if (pool) {
    pool->ParallelFor(tasks, run);
  } else {
    for (size_t t = 0; t < tasks; ++t) run(t);
  }
  return scores;
}

double RocAuc(std::span<const float> scores, std::span<const float> labels) {
  // A total order in which NaN scores rank lowest, as one tie group (plain < is no strict weak order with NaN, and
  // NaN == NaN is false: the grouping below would never advance).
  auto less = [](float a, float b) { return std::isnan(a) ? !std::isnan(b) : !std::isnan(b) && a < b; };
  auto same = [](float a, float b) { return a == b || (std::isnan(a) && std::isnan(b)); };
  std::vector<uint32_t> order(scores.size());
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return less(scores[a], scores[b]); });
  double negatives_below = 0, pairs = 0;
  double positives = 0, negatives = 0;
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    double group_pos = 0, group_neg = 0;
    while (j < order.size() && same(scores[order[j]], scores[order[i]])) {
      (labels[order[j]] > 0 ? group_pos : group_neg) += 1;
      ++j;
    }
    pairs += group_pos * negatives_below + 0.5 * group_pos * group_neg;
    negatives_below += group_neg;
    positives += group_pos;
    negatives += group_neg;
    i = j;
  }
  if (positives == 0 || negatives == 0) return std::numeric_limits<double>::quiet_NaN();
  return pairs / (positives * negatives);
}

Metrics Evaluate(const LinearModel& model, const Dataset& data, const Objective& objective, ThreadPool* pool) {
  if (data.num_rows() == 0) return {};
  const std::vector<float> scores = ComputeScores(model, data, pool);
  return MetricsOfScores(scores, data.labels(), data.weights(), model, objective);
}

Metrics MetricsOfScores(std::span<const float> scores, std::span<const float> labels, std::span<const float> weights,
                        const LinearModel& model, const Objective& objective) {
  PIMOPT_CHECK(scores.size() == labels.size() && (weights.empty() || weights.size() == labels.size()));
  Metrics m;
  m.rows = scores.size();
  if (m.rows == 0) return m;
  double correct = 0, log_loss = 0, hinge = 0, weighted = 0;
  const LossKind own = model.loss;
  for (size_t i = 0; i < m.rows; ++i) {
    const double z = scores[i], y = labels[i];
    correct += ((z > 0) == (y > 0)) ? 1 : 0;
    const double ll = LossValue(LossKind::kLogistic, z, y);
    const double hl = LossValue(LossKind::kHinge, z, y);
    log_loss += ll;
    hinge += hl;
    const double w = weights.empty() ? 1.0 : weights[i];
    weighted += w * objective.ClassWeight(labels[i]) * (own == LossKind::kLogistic ? ll : hl);
  }
  const double n = static_cast<double>(m.rows);
  m.accuracy = correct / n;
  m.log_loss = log_loss / n;
  m.hinge_loss = hinge / n;
  m.auc = RocAuc(scores, labels);
  double sq = 0, abs_sum = 0;
  for (float w : model.weights) {
    sq += static_cast<double>(w) * w;
    abs_sum += std::fabs(w);
  }
  m.objective = weighted / n + 0.5 * objective.l2 * sq + objective.l1 * abs_sum;
  if (objective.regularize_bias) {
    m.bias_penalty = 0.5 * objective.l2 * static_cast<double>(model.bias) * model.bias;
    m.objective += m.bias_penalty;
  }
  return m;
}

}  // namespace pimopt
