#include "pimopt/model/metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

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

namespace metrics {  // named: the model library's files share unity batches

// A score's rank key: the order of the scores as 32-bit integers, NaN lowest as one value and -0 the same as +0, so
// that equal keys are exactly the tie groups of a comparison sort (a == b, or both NaN).
uint32_t RankKey(float score) {
  if (std::isnan(score)) return 0;
  if (score == 0.0f) score = 0.0f;  // -0 ties +0
  uint32_t bits;
  std::memcpy(&bits, &score, sizeof bits);
  // Negative floats order by their bits reversed, positive ones after them; no non-NaN float maps to 0.
  return (bits & 0x80000000u) != 0 ? ~bits : bits | 0x80000000u;
}

}  // namespace metrics

double RocAuc(std::span<const float> scores, std::span<const float> labels) {
  PIMOPT_CHECK(scores.size() == labels.size());
  // Each row as (rank key << 1 | positive), sorted by a least-significant-digit radix sort over its 33 bits (three
  // passes of 11): the metric is computed every epoch on the training rows, where a comparison sort through an
  // index was a sixth of a CoCoA run. The tie groups and their order are those of the comparison sort, and the sums
  // below are taken group after group in the same order: the same AUC, bit for bit.
  const size_t n = scores.size();
  std::vector<uint64_t> keys(n), spare(n);
  for (size_t i = 0; i < n; ++i) {
    keys[i] = (uint64_t{metrics::RankKey(scores[i])} << 1) | (labels[i] > 0 ? 1u : 0u);
  }
  constexpr int kDigitBits = 11;
  constexpr size_t kBuckets = size_t{1} << kDigitBits;
  // Below a few thousand rows the radix passes' bucket counts cost more than a comparison sort of the same keys
  // (which orders them the same way).
  constexpr size_t kRadixFromRows = 8192;
  if (n < kRadixFromRows) std::sort(keys.begin(), keys.end());
  for (int shift = 0; n >= kRadixFromRows && shift < 33; shift += kDigitBits) {
    std::vector<size_t> start(kBuckets + 1, 0);
    for (uint64_t k : keys) ++start[((k >> shift) & (kBuckets - 1)) + 1];
    for (size_t b = 0; b < kBuckets; ++b) start[b + 1] += start[b];
    for (uint64_t k : keys) spare[start[(k >> shift) & (kBuckets - 1)]++] = k;
    keys.swap(spare);
  }
  double negatives_below = 0, pairs = 0;
  double positives = 0, negatives = 0;
  for (size_t i = 0; i < n;) {
    size_t j = i;
    double group_pos = 0, group_neg = 0;
    while (j < n && (keys[j] >> 1) == (keys[i] >> 1)) {
      ((keys[j] & 1) != 0 ? group_pos : group_neg) += 1;
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

Metrics Evaluate(const LinearModel& model, const Dataset& data, const Objective& objective, ThreadPool* pool,
                 MetricsScope scope) {
  if (data.num_rows() == 0) return {};
  const std::vector<float> scores = ComputeScores(model, data, pool);
  return MetricsOfScores(scores, data.labels(), data.weights(), model, objective, pool, scope);
}

Metrics MetricsOfScores(std::span<const float> scores, std::span<const float> labels, std::span<const float> weights,
                        const LinearModel& model, const Objective& objective, ThreadPool* pool,
                        MetricsScope scope) {
  PIMOPT_CHECK(scores.size() == labels.size() && (weights.empty() || weights.size() == labels.size()));
  Metrics m;
  m.rows = scores.size();
  if (m.rows == 0) return m;
  const LossKind own = model.loss;
  const bool all = scope == MetricsScope::kAll;
  // The objective alone (an evaluation that only decides when to stop): neither the AUC's sort nor the other loss.
  const bool need_logistic = all || own == LossKind::kLogistic;
  // The rows' logistic losses (an exp and a log each: most of this function's time on one thread) are computed on
  // the pool's threads beside the AUC's sort, and summed below in row order: the same bits on any thread count.
  std::vector<double> logistic(need_logistic ? m.rows : 0);
  auto logistic_of = [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) logistic[i] = LossValue(LossKind::kLogistic, scores[i], labels[i]);
  };
  constexpr size_t kRowsPerTask = 16384;
  const size_t loss_tasks = (m.rows + kRowsPerTask - 1) / kRowsPerTask;
  const size_t tasks = (need_logistic ? loss_tasks : 0) + (all ? 1 : 0);  // the AUC's sort last
  auto task = [&](size_t t) {
    if (t == tasks - 1 && all) {
      m.auc = RocAuc(scores, labels);
    } else {
      logistic_of(t * kRowsPerTask, std::min(m.rows, (t + 1) * kRowsPerTask));
    }
  };
  if (pool && tasks > 1) {
    pool->ParallelFor(tasks, task);
  } else {
    for (size_t t = 0; t < tasks; ++t) task(t);
  }
  // One pass in row order for every scope: the objective's terms, and so its bits, do not depend on it; the
  // objective alone skips the other loss and the accuracy, which it leaves NaN.
  const bool own_logistic = own == LossKind::kLogistic;
  const bool need_hinge = all || !own_logistic;
  double correct = 0, log_loss = 0, hinge = 0, weighted = 0;
  for (size_t i = 0; i < m.rows; ++i) {
    const double z = scores[i], y = labels[i];
    if (all) correct += ((z > 0) == (y > 0)) ? 1 : 0;
    const double ll = need_logistic ? logistic[i] : 0.0;
    const double hl = need_hinge ? LossValue(LossKind::kHinge, z, y) : 0.0;
    log_loss += ll;
    hinge += hl;
    const double w = weights.empty() ? 1.0 : weights[i];
    weighted += w * objective.ClassWeight(labels[i]) * (own_logistic ? ll : hl);
  }
  const double n = static_cast<double>(m.rows);
  m.accuracy = all ? correct / n : NAN;
  m.log_loss = need_logistic ? log_loss / n : NAN;
  m.hinge_loss = need_hinge ? hinge / n : NAN;
  if (!all) m.auc = NAN;
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
