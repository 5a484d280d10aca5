#include "pimopt/algorithms/duality_gap.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "pimopt/core/error.h"
#include "pimopt/core/thread_pool.h"
#include "pimopt/model/metrics.h"

namespace pimopt {

double DualityGap::relative() const {
  return available ? gap() / std::max(std::fabs(primal), 1e-300) : std::numeric_limits<double>::quiet_NaN();
}

namespace {

// -phi'(m): the dual variable a margin m asks for.
double BetaOfMargin(LossKind loss, double margin) {
  if (loss == LossKind::kLogistic) return 1.0 / (1.0 + std::exp(margin));
  return margin < 1 ? 1.0 : 0.0;
}

// psi(beta) = -phi*(-beta) (see the header).
double Psi(LossKind loss, double beta) {
  if (loss == LossKind::kHinge) return beta;
  auto xlogx = [](double x) { return x > 0 ? x * std::log(x) : 0.0; };
  return -xlogx(beta) - xlogx(1 - beta);
}

// Exponent e such that `terms` integers of magnitude at most `bound` * 2^e sum within 2^(bits - 1).
int FixedExponent(double bound, double terms, int bits = 62) {
  if (!(bound > 0)) return 0;
  return bits - 1 - static_cast<int>(std::ceil(std::log2(std::max(terms, 1.0)))) -
         static_cast<int>(std::ceil(std::log2(bound)));
}

// x 2^e: a multiplication by a power of two where 2^e is a normal double, which rounds as std::ldexp does (both are
// exact, or one rounding of the exact product), without a call per row.
class PowerOfTwo {
 public:
  explicit PowerOfTwo(int exponent)
      : exponent_(exponent), factor_(exponent >= -1022 && exponent <= 1023 ? std::ldexp(1.0, exponent) : 0.0) {}
  double operator()(double x) const { return factor_ != 0 ? x * factor_ : std::ldexp(x, exponent_); }

 private:
  int exponent_;
  double factor_;
};

// Runs fn(begin, end, sums) over ranges of kRowsPerTask rows on the pool (inline without one), each adding into its
// own integer vector of `width`, and returns their sum: integers, the same however the ranges are grouped.
constexpr size_t kRowsPerTask = 16384;
template <typename Fn>
std::vector<int64_t> SumOverRows(size_t rows, size_t width, ThreadPool* pool, Fn&& fn) {
  const size_t tasks = (rows + kRowsPerTask - 1) / kRowsPerTask;
  std::vector<std::vector<int64_t>> partial(tasks, std::vector<int64_t>(width, 0));
  auto run = [&](size_t t) { fn(t * kRowsPerTask, std::min(rows, (t + 1) * kRowsPerTask), partial[t]); };
  if (pool && tasks > 1) {
    pool->ParallelFor(tasks, run);
  } else {
    for (size_t t = 0; t < tasks; ++t) run(t);
  }
  std::vector<int64_t> sum(width, 0);
  for (const std::vector<int64_t>& p : partial) {
    for (size_t j = 0; j < width; ++j) sum[j] += p[j];
  }
  return sum;
}

constexpr uint32_t kRowChunk = 1024;
constexpr uint32_t kPrefetchRows = 4;  // how far ahead a sparse row's accumulators are asked for

}  // namespace

DualityGapScales ComputeDualityGapScales(const Dataset& local, const Objective& objective, Communicator& comm) {
  const size_t rows = local.num_rows(), features = local.num_features();
  // The largest cost and each coordinate's largest |x|, the same on every rank, and N.
  const bool bias_in_v = objective.fit_bias && objective.regularize_bias;
  std::vector<float> extremes(1 + features + (bias_in_v ? 1 : 0), 0.0f);
  for (size_t i = 0; i < rows; ++i) {
    const float cost = local.weight(i) * objective.ClassWeight(local.labels()[i]);
    extremes[0] = std::max(extremes[0], cost);
  }
  float* max_abs = extremes.data() + 1;
  if (local.is_sparse()) {
    const CsrMatrix& m = local.csr();
    for (size_t k = 0; k < m.col.size(); ++k) max_abs[m.col[k]] = std::max(max_abs[m.col[k]], std::fabs(m.val[k]));
  } else {
    for (size_t i = 0; i < rows; ++i) {
      const float* x = local.dense_row(i);
      for (size_t j = 0; j < features; ++j) max_abs[j] = std::max(max_abs[j], std::fabs(x[j]));
    }
  }
  if (bias_in_v) max_abs[features] = 1.0f;
  comm.AllreduceMax(extremes);
  DualityGapScales scales;
  scales.total_rows = static_cast<double>(comm.SumU64(rows));
  scales.max_cost = extremes[0];
  scales.max_abs_x.assign(extremes.begin() + 1, extremes.end());
  return scales;
}

DualityGap ComputeDualityGap(const LinearModel& model, const Dataset& local, const Objective& objective, double primal,
                             ThreadPool* pool, Communicator& comm, std::span<const Shard> pieces,
                             std::span<const float> row_duals, const DualityGapScales* given_scales) {
  DualityGap result;
  if (!(objective.l2 > 0) || !std::isfinite(primal)) return result;
  const size_t rows = local.num_rows(), features = local.num_features();
  PIMOPT_CHECK(row_duals.empty() || row_duals.size() == rows, "ComputeDualityGap: one dual per local row");
  // With a regularized bias (F_b), the bias is a feature of constant 1: v gains its coordinate, g* its square, and
  // the dual has no constraint.
  const bool bias_in_v = objective.fit_bias && objective.regularize_bias;
  const size_t width_v = features + (bias_in_v ? 1 : 0);
  // The margins, for the duals built from them (a dual solver's own need none).
  const std::vector<float> scores = row_duals.empty() ? ComputeScores(model, local, pool) : std::vector<float>();
  auto cost = [&](size_t i) { return static_cast<double>(local.weight(i)) * objective.ClassWeight(local.labels()[i]); };

  const DualityGapScales computed = given_scales ? DualityGapScales() : ComputeDualityGapScales(local, objective, comm);
  const DualityGapScales& scales = given_scales ? *given_scales : computed;
  const double total_rows = scales.total_rows, max_cost = scales.max_cost;
  PIMOPT_CHECK(scales.max_abs_x.size() == width_v, "ComputeDualityGap: the scales are another dataset's");
  if (!(max_cost > 0) || !std::isfinite(max_cost)) return result;
  for (float x : scales.max_abs_x) {
    if (!std::isfinite(x)) return result;
  }

  // Candidate duals, each from the margins: beta = -phi'(m) for both losses; for the hinge loss also two smoothed
  // versions, beta = clip(1/2 + (1 - m) / (2 delta), 0, 1), whose fractional values near the margin are what the
  // dual optimum gives the rows on it. Each candidate is scaled to meet the bias constraint.
  // Given the solver's own duals (row_duals), those are the one candidate.
  std::vector<double> widths = {0.0};
  if (objective.loss == LossKind::kHinge && row_duals.empty()) widths = {0.0, 0.3};
  const size_t candidates = widths.size();
  auto beta_of = [&](size_t cand, double margin) {
    if (widths[cand] == 0) return BetaOfMargin(objective.loss, margin);
    return std::clamp(0.5 + (1 - margin) / (2 * widths[cand]), 0.0, 1.0);
  };
  const int scalar_exp = FixedExponent(max_cost, total_rows);
  const PowerOfTwo to_scalar_units(scalar_exp);
  std::vector<double> betas(rows * candidates);  // before the bias constraint's scaling
  // Per candidate, the positive rows' and the negative rows' sums (rows on the pool's threads: an exp each for the
  // logistic loss's duals).
  std::vector<int64_t> class_sums =
      SumOverRows(rows, 2 * candidates, pool, [&](size_t begin, size_t end, std::vector<int64_t>& sums) {
        for (size_t i = begin; i < end; ++i) {
          const bool positive = local.labels()[i] > 0;
          const double margin = row_duals.empty() ? (positive ? 1.0 : -1.0) * scores[i] : 0.0;
          for (size_t c = 0; c < candidates; ++c) {
            double& beta = betas[i * candidates + c];
            beta = row_duals.empty() ? beta_of(c, margin) : std::clamp(static_cast<double>(row_duals[i]), 0.0, 1.0);
            sums[2 * c + (positive ? 0 : 1)] += static_cast<int64_t>(to_scalar_units(cost(i) * beta));
          }
        }
      });
  comm.AllreduceSum(class_sums);
  std::vector<double> scale(2 * candidates, 1.0);
  if (objective.fit_bias && !bias_in_v) {
    for (size_t c = 0; c < candidates; ++c) {
      const double pos = static_cast<double>(class_sums[2 * c]), neg = static_cast<double>(class_sums[2 * c + 1]);
      if (pos > neg) scale[2 * c] = pos > 0 ? neg / pos : 0;
      if (neg > pos) scale[2 * c + 1] = neg > 0 ? pos / neg : 0;
    }
  }
  // Per candidate: (1/N) sum_i c_i psi(beta_i) with the scaled beta, and v = (1/N) sum_i c_i beta_i y_i x_i as
  // integer sums (the same for any grouping of the rows), each coordinate j of v in units of its own, 2^-v_exp[j],
  // fixed by its largest |x_j|:
  // - sparse: each product c_i beta_i y_i x_ij in double, rounded once to the unit (N products within 2^61);
  // - dense: double sums over chunks of kRowChunk rows, each chunk's sum rounded once (N chunk sums within 2^61).
  // The roundings' total is bounded per coordinate (v_error below), and the conjugate takes |v_j| + v_error_j: the
  // dual stays a lower bound whatever the features' ranges.
  const bool dense = !local.is_sparse();
  std::vector<int> v_exp(width_v);
  std::vector<PowerOfTwo> to_v_units;
  to_v_units.reserve(width_v);
  for (size_t j = 0; j < width_v; ++j) {
    const double max_x = std::max(static_cast<double>(scales.max_abs_x[j]), 1e-30);
    v_exp[j] = FixedExponent((dense ? kRowChunk : 1) * max_cost * max_x, total_rows);
    to_v_units.emplace_back(v_exp[j]);
  }
  std::vector<double>& q = betas;  // now c_i beta_i y_i with the scaled beta
  const std::vector<int64_t> psi_sums =  // two logs a row for the logistic loss
      SumOverRows(rows, candidates, pool, [&](size_t begin, size_t end, std::vector<int64_t>& sums) {
        for (size_t i = begin; i < end; ++i) {
          const bool positive = local.labels()[i] > 0;
          for (size_t c = 0; c < candidates; ++c) {
            const double beta = betas[i * candidates + c] * scale[2 * c + (positive ? 0 : 1)];
            sums[c] += static_cast<int64_t>(to_scalar_units(cost(i) * Psi(objective.loss, beta)));
            q[i * candidates + c] = cost(i) * beta * (positive ? 1.0 : -1.0);
          }
        }
      });
  // The chunks: fixed pieces of kRowChunk rows of each shard (shards never straddle processes).
  const Shard whole{0, static_cast<uint32_t>(rows)};
  if (pieces.empty()) pieces = std::span<const Shard>(&whole, 1);
  std::vector<Shard> chunks;
  for (const Shard& piece : pieces) {
    for (uint32_t b = piece.begin; b < piece.end; b += kRowChunk)
      chunks.push_back({b, std::min(piece.end, b + static_cast<uint32_t>(kRowChunk))});
  }
  // One accumulator per thread of the phase (integer sums: the grouping of chunks does not change the result).
  const size_t width = width_v * candidates;
  const size_t slots = std::max<size_t>(1, pool ? static_cast<size_t>(pool->ThreadsOfPhase(chunks.size())) : 1);
  std::vector<std::vector<int64_t>> partial(slots), partial_abs(slots);
  // Dense: the rounding errors of a chunk's double sums, bounded by gamma times its sum of |products| (Higham,
  // Accuracy and Stability of Numerical Algorithms, 2002, eq. 3.5: recursive summation of n products).
  constexpr double kUnitRoundoff = 0x1.0p-53;
  const double gamma = (kRowChunk + 2) * kUnitRoundoff / (1 - (kRowChunk + 2) * kUnitRoundoff);
  auto accumulate = [&](size_t slot) {
    std::vector<int64_t>& acc = partial[slot];
    acc.assign(width, 0);
    std::vector<int64_t>& acc_abs = partial_abs[slot];
    acc_abs.assign(dense ? width : 0, 0);
    std::vector<double> chunk_sum(dense ? width : 0), chunk_abs(dense ? width : 0);
    for (size_t t = slot; t < chunks.size(); t += slots) {
      if (dense) {
        std::fill(chunk_sum.begin(), chunk_sum.end(), 0.0);
        std::fill(chunk_abs.begin(), chunk_abs.end(), 0.0);
      }
      for (uint32_t i = chunks[t].begin; i < chunks[t].end; ++i) {
        const double* qi = q.data() + size_t{i} * candidates;
        if (dense) {
          const float* x = local.dense_row(i);
          for (size_t c = 0; c < candidates; ++c) {
            if (qi[c] == 0) continue;
            double* out = chunk_sum.data() + c * width_v;
            double* out_abs = chunk_abs.data() + c * width_v;
            for (size_t j = 0; j < features; ++j) {
              const double product = qi[c] * x[j];
              out[j] += product;
              out_abs[j] += std::fabs(product);
            }
            if (bias_in_v) {
              out[features] += qi[c];
              out_abs[features] += std::fabs(qi[c]);
            }
          }
        } else {
          const CsrMatrix& m = local.csr();
          // A row whose every candidate dual is 0 (most rows, at the hinge loss's optimum) adds nothing.
          bool contributes = false;
          for (size_t c = 0; c < candidates; ++c) contributes |= qi[c] != 0;
          if (!contributes) continue;
          // The first candidate's accumulators of a row a few rows ahead, for its columns' random writes.
          if (const uint32_t ahead = i + kPrefetchRows; ahead < chunks[t].end) {
            for (uint64_t k = m.row_ptr[ahead]; k < m.row_ptr[ahead + 1]; ++k) __builtin_prefetch(&acc[m.col[k]], 1);
          }
          for (uint64_t k = m.row_ptr[i]; k < m.row_ptr[i + 1]; ++k) {
            const uint32_t j = m.col[k];
            for (size_t c = 0; c < candidates; ++c) {
              acc[c * width_v + j] += static_cast<int64_t>(to_v_units[j](qi[c] * m.val[k]));
            }
          }
          if (bias_in_v) {
            for (size_t c = 0; c < candidates; ++c) {
              acc[c * width_v + features] += static_cast<int64_t>(to_v_units[features](qi[c]));
            }
          }
        }
      }
      if (dense) {
        for (size_t j = 0; j < width; ++j) {
          acc[j] += static_cast<int64_t>(to_v_units[j % width_v](chunk_sum[j]));
          // Rounded up, with the abs sum's own rounding: at least the chunk's sum of |products| in units.
          acc_abs[j] += static_cast<int64_t>(to_v_units[j % width_v](chunk_abs[j] * (1 + gamma))) + 1;
        }
      }
    }
  };
  if (pool && slots > 1) {
    pool->ParallelFor(slots, accumulate);
  } else {
    accumulate(0);
  }
  std::vector<int64_t> sums = std::move(partial[0]);
  for (size_t slot = 1; slot < slots; ++slot) {
    for (size_t j = 0; j < sums.size(); ++j) sums[j] += partial[slot][j];
  }
  sums.insert(sums.end(), psi_sums.begin(), psi_sums.end());
  const size_t abs_at = sums.size();  // dense: the chunks' sums of |products|, then the chunks' count
  if (dense) {
    sums.insert(sums.end(), partial_abs[0].begin(), partial_abs[0].end());
    for (size_t slot = 1; slot < slots; ++slot) {
      for (size_t j = 0; j < width; ++j) sums[abs_at + j] += partial_abs[slot][j];
    }
    sums.push_back(static_cast<int64_t>(chunks.size()));
  }
  comm.AllreduceSum(sums);
  // What the roundings may have moved each coordinate of v, at most, per candidate (a mix's: the mix of its two
  // candidates'), so that the conjugate taken at |v_j| + v_error_j keeps the dual a lower bound:
  // - dense: each chunk's sum rounded to a unit (less than one) and its double sum (gamma times its |products|);
  // - sparse: each product rounded to a unit (less than one) after its double rounding (a product is within
  //   2^61 / N units, so within 2^8 / N units); at most N products a coordinate.
  std::vector<double> v_error(width);
  for (size_t j = 0; j < width; ++j) {
    const double unit = std::ldexp(1.0, -v_exp[j % width_v]);
    v_error[j] = dense ? (static_cast<double>(sums.back()) + gamma * static_cast<double>(sums[abs_at + j])) * unit
                       : total_rows * (1 + std::ldexp(1.0, 61 - 53) / total_rows) * unit;
    v_error[j] /= total_rows;
  }
  // D at each candidate and, for the hinge loss (psi linear, so the psi-sum of a mix is the mix of the sums), at
  // mixes (1 - t) beta_a + t beta_b of two candidates: every one is feasible, so the best is still a lower bound.
  std::vector<double> v_unit(width_v);
  for (size_t j = 0; j < width_v; ++j) v_unit[j] = std::ldexp(1.0, -v_exp[j]) / total_rows;
  auto dual_at = [&](size_t a, size_t b, double t) {
    double conjugate = 0;  // g*(v) = sum_j max(|v_j| - l1, 0)^2 / (2 l2)
    for (size_t j = 0; j < width_v; ++j) {
      const double v =
          ((1 - t) * static_cast<double>(sums[a * width_v + j]) + t * static_cast<double>(sums[b * width_v + j])) *
          v_unit[j];
      const double error = (1 - t) * v_error[a * width_v + j] + t * v_error[b * width_v + j];
      const double shrunk = std::max(std::fabs(v) + error - (j < features ? objective.l1 : 0.0), 0.0);
      conjugate += shrunk * shrunk;
    }
    const double psi = (1 - t) * static_cast<double>(sums[width + a]) + t * static_cast<double>(sums[width + b]);
    return std::ldexp(psi, -scalar_exp) / total_rows - conjugate / (2 * objective.l2);
  };
  double best = dual_at(0, 0, 0);
  for (size_t a = 0; a < candidates; ++a) {
    for (size_t b = a + 1; b < candidates; ++b) {
      for (int step = 0; step <= 10; ++step) best = std::max(best, dual_at(a, b, step / 10.0));
    }
  }
  // A certificate is only ever computed from finite numbers (a non-finite primal or dual certifies nothing).
  result.available = std::isfinite(primal) && std::isfinite(best);
  result.primal = primal;
  result.dual = best;
  return result;
}

}  // namespace pimopt
