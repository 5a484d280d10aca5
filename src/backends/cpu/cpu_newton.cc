// The CPU backend's second-order verbs (IBackend::PrimalDerivativesAtGlobal and the verbs after it; the algorithm
// is algorithms/newton.cc): full passes over the rows, split into a fixed number of row blocks that depends on the
// data's shape only. Each block sums into its own vector (doubles, rows in order) and the blocks are added in block
// order, so the bits are the same for any thread count. A pass reads every row once: the Hessian-vector product
// takes each row's dot product and its update together, and is memory-bound on dense data as big as fashion-mnist's.
// Sparse rows instead take a per-row pass (margins, a_i.v) and then sum each column over a column-major copy of the
// rows, made once, in row order: gathers only (a scatter into a 2^20-feature vector misses the caches per non-zero),
// the columns split over the threads, each column's sum the same whatever thread takes it.
#include <algorithm>
#include <cmath>

#include "pimopt/backends/cpu/cpu_backend.h"
#include "pimopt/core/error.h"
#include "pimopt/core/huge_pages.h"
#include "pimopt/core/thread_pool.h"
#include "pimopt/model/loss.h"

namespace pimopt {
namespace cpu_newton {  // named: the backend's files share unity batches
// Rows per block at least, and at most this many blocks: enough blocks for a many-core machine's threads, few
// enough that their partial sums stay small beside the data.
constexpr size_t kMinRowsPerBlock = 2048;
constexpr size_t kMaxBlocks = 64;
// Dense rows: the blocks' partial sums (two vectors of n + 1 doubles each) stay within this many bytes (2^20
// features would get 4 blocks; sparse rows sum by columns and keep no partial vectors).
constexpr double kMaxPartialSumBytes = 64.0 * (1 << 20);
// Cost per multiply-add of a dense pass (the dense loops' rate, as cpu_backend.cc's estimate).
constexpr double kNsPerMultiplyAdd = 0.19;

// The logistic loss's curvature phi''(m) = sigma(m) sigma(-m), from exp(-|m|).
double LogisticCurvature(double margin) {
  const double e = std::exp(-std::fabs(margin));
  return e / ((1 + e) * (1 + e));
}

// The values a pass over the rows reads: the non-zeros, or rows x features.
double ValuesOf(const Dataset& data) {
  return data.is_sparse() ? static_cast<double>(data.csr().val.size())
                          : static_cast<double>(data.num_rows()) * static_cast<double>(data.num_features());
}
}  // namespace cpu_newton

size_t CpuBackend::NewtonBlocks() const {
  using namespace cpu_newton;
  const size_t rows = data_->num_rows();
  const size_t by_rows = std::max<size_t>(1, rows / kMinRowsPerBlock);
  if (data_->is_sparse()) return std::min(by_rows, kMaxBlocks);  // the columns' sums come from the transpose
  const size_t by_memory =
      std::max<size_t>(1, static_cast<size_t>(kMaxPartialSumBytes / (2.0 * sizeof(double) * static_cast<double>(n_ + 1))));
  return std::min({by_rows, kMaxBlocks, by_memory});
}

void CpuBackend::SumNewtonBlocks(size_t offset, std::span<double> out) {
  const size_t blocks = newton_sums_.size();
  constexpr size_t kColumns = 4096;
  const size_t tasks = (out.size() + kColumns - 1) / kColumns;
  pool_.ParallelForWork(tasks, static_cast<double>(out.size() * blocks) * cpu_newton::kNsPerMultiplyAdd, [&](size_t t) {
    const size_t begin = t * kColumns, end = std::min(out.size(), begin + kColumns);
    for (size_t j = begin; j < end; ++j) out[j] = 0;
    for (size_t b = 0; b < blocks; ++b) {
      const double* partial = newton_sums_[b].data() + offset;
      for (size_t j = begin; j < end; ++j) out[j] += partial[j];
    }
  });
}

void CpuBackend::TransposeSparseRows() {
  const CsrMatrix& m = data_->csr();
  const size_t rows = data_->num_rows(), entries = m.col.size();
  // Rows whose values are all 1 (rows_are_ones_) need no copy of the values: a column's sum is its rows' sum.
  const bool values = !rows_are_ones_;
  CheckMemoryNeed(entries * (sizeof(uint32_t) + (values ? sizeof(float) : 0)) + (n_ + 1) * sizeof(uint64_t),
                  StrCat("Newton's column-major copy of the sparse rows (", entries, " non-zeros)"), "--algo");
  csc_ptr_ = ZeroedVector<uint64_t>(n_ + 1);
  for (uint32_t c : m.col) ++csc_ptr_[c + 1];
  for (size_t j = 0; j < n_; ++j) csc_ptr_[j + 1] += csc_ptr_[j];
  csc_row_ = ZeroedVector<uint32_t>(entries);
  csc_val_ = ZeroedVector<float>(values ? entries : 0);
  std::vector<uint64_t> next(csc_ptr_.begin(), csc_ptr_.end() - 1);
  for (size_t r = 0; r < rows; ++r) {  // rows in order: each column's rows ascend
    for (uint64_t e = m.row_ptr[r]; e < m.row_ptr[r + 1]; ++e) {
      const uint64_t at = next[m.col[e]]++;
      csc_row_[at] = static_cast<uint32_t>(r);
      if (values) csc_val_[at] = m.val[e];
    }
  }
}

void CpuBackend::SumSparseColumns(const std::vector<double>& per_row, bool squared, std::span<double> out) {
  constexpr size_t kColumns = 4096;
  const size_t tasks = (n_ + kColumns - 1) / kColumns;
  const double values = static_cast<double>(csc_row_.size());
  const bool ones = csc_val_.empty();  // rows_are_ones_: x = 1, and per_row[r] * 1 is per_row[r], bit for bit
  pool_.ParallelForWork(tasks, 2.0 * values * cpu_newton::kNsPerMultiplyAdd, [&](size_t t) {
    const size_t end = std::min(n_, (t + 1) * kColumns);
    for (size_t j = t * kColumns; j < end; ++j) {
      double sum = 0;
      if (ones) {
        for (uint64_t e = csc_ptr_[j]; e < csc_ptr_[j + 1]; ++e) sum += per_row[csc_row_[e]];
      } else {
        for (uint64_t e = csc_ptr_[j]; e < csc_ptr_[j + 1]; ++e) {
          const double x = csc_val_[e];
          sum += per_row[csc_row_[e]] * (squared ? x * x : x);
        }
      }
      out[j] = sum;
    }
  });
}

double CpuBackend::SumRowsByBlocks(const std::vector<double>& per_row) {
  const size_t rows = per_row.size(), blocks = newton_block_losses_.size();
  std::vector<double> partial(blocks, 0.0);
  pool_.ParallelForWork(blocks, static_cast<double>(rows) * cpu_newton::kNsPerMultiplyAdd, [&](size_t b) {
    double sum = 0;
    for (size_t r = rows * b / blocks; r < rows * (b + 1) / blocks; ++r) sum += per_row[r];
    partial[b] = sum;
  });
  double sum = 0;
  for (double p : partial) sum += p;
  return sum;
}

PrimalDerivatives CpuBackend::PrimalDerivativesAtGlobal() {
  CheckBeforeStep();
  const auto t0 = StartPhase();
  PIMOPT_CHECK(config_.objective.loss == LossKind::kLogistic, "second-order verbs need the logistic loss");
  FoldGlobalScale();
  const Dataset& data = *data_;
  const Objective& obj = config_.objective;
  const size_t rows = data.num_rows(), width = n_ + 1;
  const size_t blocks = NewtonBlocks();
  if (newton_margins_.size() != rows) {
    const size_t per_row = data.is_sparse() ? 4 : 3, partial_vectors = data.is_sparse() ? 0 : 2 * blocks;
    CheckMemoryNeed(rows * per_row * sizeof(double) + partial_vectors * width * sizeof(double),
                    StrCat("Newton's per-row margins, curvatures and directions (", rows, " rows) and its ", blocks,
                           " blocks' partial sums"),
                    "--algo");
    newton_margins_.assign(rows, 0.0);
    newton_curvatures_.assign(rows, 0.0);
    newton_direction_.assign(rows, 0.0);
    if (data.is_sparse()) {
      newton_row_terms_.assign(rows, 0.0);
      TransposeSparseRows();
    }
  }
  const bool sparse = data.is_sparse();
  newton_sums_.resize(sparse ? 0 : blocks);
  newton_block_losses_.assign(blocks, 0.0);
  const float* w = global_.data();
  const float bias = obj.fit_bias ? global_[n_] : 0.0f;
  VisitTrainingRows([&](const auto& access) {
    pool_.ParallelForWork(
        blocks, 3.0 * cpu_newton::ValuesOf(data) * cpu_newton::kNsPerMultiplyAdd, [&](size_t b) {
          double* grad = nullptr;
          double* diag = nullptr;
          if (!sparse) {
            std::vector<double>& sums = newton_sums_[b];
            sums.assign(2 * width, 0.0);
            grad = sums.data();
            diag = sums.data() + width;
          }
          double loss = 0;
          for (size_t r = rows * b / blocks; r < rows * (b + 1) / blocks; ++r) {
            const float y = data.labels()[r];
            const double cost = RowCost(r);
            const double margin = static_cast<double>(y) * (access.Dot(r, w, n_) + bias);
            newton_margins_[r] = margin;
            if (!(cost > 0)) {
              newton_curvatures_[r] = 0;
              if (sparse) newton_row_terms_[r] = 0;
              continue;
            }
            loss += cost * LossValue(LossKind::kLogistic, margin, 1.0);
            const double slope = -cost * y / (1.0 + std::exp(margin));  // c_i phi'(m_i) y_i
            const double curvature = cost * cpu_newton::LogisticCurvature(margin);
            newton_curvatures_[r] = curvature;
            if constexpr (std::is_same_v<std::decay_t<decltype(access)>, SparseRows>) {
              newton_row_terms_[r] = slope;  // the columns' sums come after, from the transpose
              continue;
            } else {
              const float* x = access.values + r * access.num_features;
#pragma omp simd
              for (size_t j = 0; j < n_; ++j) {
                const double v = x[j];
                grad[j] += slope * v;
                diag[j] += curvature * v * v;
              }
            }
            if (obj.fit_bias) {
              grad[n_] += slope;
              diag[n_] += curvature;
            }
          }
          newton_block_losses_[b] = loss;
        });
  });
  PrimalDerivatives out;
  out.gradient.resize(width);
  out.curvature_diagonal.resize(width);
  if (sparse) {
    SumSparseColumns(newton_row_terms_, false, out.gradient);
    SumSparseColumns(newton_curvatures_, true, out.curvature_diagonal);
    out.gradient[n_] = obj.fit_bias ? SumRowsByBlocks(newton_row_terms_) : 0.0;
    out.curvature_diagonal[n_] = obj.fit_bias ? SumRowsByBlocks(newton_curvatures_) : 0.0;
  } else {
    SumNewtonBlocks(0, out.gradient);
    SumNewtonBlocks(width, out.curvature_diagonal);
  }
  for (double l : newton_block_losses_) out.loss_sum += l;
  AddPhase("worker_compute", t0);
  return out;
}

void CpuBackend::CurvatureTimes(std::span<const double> v, std::span<double> out) {
  CheckBeforeStep();
  const auto t0 = StartPhase();
  const size_t rows = data_->num_rows(), width = n_ + 1;
  PIMOPT_CHECK(v.size() == width && out.size() == width && newton_curvatures_.size() == rows,
               "CurvatureTimes needs PrimalDerivativesAtGlobal first and vectors of n + 1 values");
  const bool fit_bias = config_.objective.fit_bias;
  // The dot products in float, as the model's: v rounded once.
  std::vector<float> vf(v.begin(), v.end());
  const float v_bias = fit_bias ? vf[n_] : 0.0f;
  if (data_->is_sparse()) {
    // u_i = c_i phi''(m_i) a_i.v by rows, then out = sum_i u_i a_i by columns from the transpose: gathers only.
    const SparseRows access{data_->csr().row_ptr.data(), data_->csr().col.data(), data_->csr().val.data(),
                            rows_are_ones_};
    const size_t blocks = newton_block_losses_.size();
    pool_.ParallelForWork(blocks, cpu_newton::ValuesOf(*data_) * cpu_newton::kNsPerMultiplyAdd, [&](size_t b) {
      for (size_t r = rows * b / blocks; r < rows * (b + 1) / blocks; ++r) {
        const double curvature = newton_curvatures_[r];
        newton_row_terms_[r] =
            curvature == 0 ? 0.0 : curvature * (static_cast<double>(access.Dot(r, vf.data(), n_)) + v_bias);
      }
    });
    SumSparseColumns(newton_row_terms_, false, out);
    out[n_] = fit_bias ? SumRowsByBlocks(newton_row_terms_) : 0.0;
    AddPhase("worker_compute", t0);
    return;
  }
  const size_t blocks = newton_sums_.size();
  VisitTrainingRows([&](const auto& access) {
    pool_.ParallelForWork(
        blocks, 2.0 * cpu_newton::ValuesOf(*data_) * cpu_newton::kNsPerMultiplyAdd, [&](size_t b) {
          double* sums = newton_sums_[b].data();
          std::fill(sums, sums + width, 0.0);
          for (size_t r = rows * b / blocks; r < rows * (b + 1) / blocks; ++r) {
            const double curvature = newton_curvatures_[r];
            if (curvature == 0) continue;
            const double q = curvature * (static_cast<double>(access.Dot(r, vf.data(), n_)) + v_bias);
            if constexpr (std::is_same_v<std::decay_t<decltype(access)>, SparseRows>) {
              for (uint64_t e = access.row_ptr[r]; e < access.row_ptr[r + 1]; ++e) {
                sums[access.col[e]] += q * access.val[e];
              }
            } else {
              const float* x = access.values + r * access.num_features;
#pragma omp simd
              for (size_t j = 0; j < n_; ++j) sums[j] += q * static_cast<double>(x[j]);
            }
            if (fit_bias) sums[n_] += q;
          }
        });
  });
  SumNewtonBlocks(0, out);
  AddPhase("worker_compute", t0);
}

void CpuBackend::SetPrimalDirection(std::span<const double> s) {
  CheckBeforeStep();
  const auto t0 = StartPhase();
  const size_t rows = data_->num_rows();
  PIMOPT_CHECK(s.size() == n_ + 1 && newton_margins_.size() == rows, "SetPrimalDirection: n + 1 values, after PrimalDerivativesAtGlobal");
  std::vector<float> sf(s.begin(), s.end());
  const float s_bias = config_.objective.fit_bias ? sf[n_] : 0.0f;
  const size_t blocks = newton_block_losses_.size();
  VisitTrainingRows([&](const auto& access) {
    pool_.ParallelForWork(blocks, cpu_newton::ValuesOf(*data_) * cpu_newton::kNsPerMultiplyAdd,
                          [&](size_t b) {
                            for (size_t r = rows * b / blocks; r < rows * (b + 1) / blocks; ++r) {
                              newton_direction_[r] = static_cast<double>(data_->labels()[r]) *
                                                     (static_cast<double>(access.Dot(r, sf.data(), n_)) + s_bias);
                            }
                          });
  });
  AddPhase("worker_compute", t0);
}

double CpuBackend::LossSumAlong(double step) {
  const auto t0 = StartPhase();
  const size_t rows = data_->num_rows();
  const size_t blocks = newton_block_losses_.size();
  pool_.ParallelForWork(blocks, 20.0 * static_cast<double>(rows), [&](size_t b) {
    double loss = 0;
    for (size_t r = rows * b / blocks; r < rows * (b + 1) / blocks; ++r) {
      const double cost = RowCost(r);
      if (!(cost > 0)) continue;
      loss += cost * LossValue(LossKind::kLogistic, newton_margins_[r] + step * newton_direction_[r], 1.0);
    }
    newton_block_losses_[b] = loss;
  });
  double sum = 0;
  for (double l : newton_block_losses_) sum += l;
  AddPhase("host_update", t0);
  return sum;
}

void CpuBackend::StepGlobalModel(double step, std::span<const double> s) {
  local_matches_global_ = false;
  const auto t0 = StartPhase();
  PIMOPT_CHECK(s.size() == n_ + 1, "StepGlobalModel: n + 1 values");
  FoldGlobalScale();
  for (size_t j = 0; j < n_; ++j) global_[j] = static_cast<float>(global_[j] + step * s[j]);
  if (config_.objective.fit_bias) global_[n_] = static_cast<float>(global_[n_] + step * s[n_]);
  AddPhase("host_update", t0);
}

}  // namespace pimopt
