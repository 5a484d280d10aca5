#include "pimopt/backends/cpu/cpu_backend.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#include "pimopt/algorithms/algorithm.h"
#include "pimopt/backends/registry.h"
#include "pimopt/collectives/worker_vectors.h"
#include "pimopt/core/error.h"
#include "pimopt/core/file_util.h"
#include "pimopt/core/thread_pool.h"

namespace pimopt {
namespace {

constexpr size_t kFeatureBlock = 4096;   // coordinates per task in reductions and updates
constexpr size_t kRowChunk = 32;         // fewest rows per gradient task
constexpr size_t kChunksPerWorker = 16;  // most gradient tasks per worker and step (bounds partial sums)
// A dense step split by columns: rows per derivative task, and columns per gradient-and-update task (their sums stay
// in L1: two arrays of this many floats).
constexpr size_t kDerivativeRows = 4;
constexpr size_t kColumnBlock = 256;
// What the pool's cost model weighs against a phase's fork-join cost (ThreadPool::ThreadsFor): the single-thread
// time of one multiply-add of the dense loops (DenseRows::Dot, Axpy) on rows streamed from memory. Measured on this
// project's 2-core machine: MB-SGD at batch 64 on 50,000 x 4,096 dense rows, one thread, 99 us per step of
// 2 x 262,144 multiply-adds (docs/cpu-backend.md).
constexpr double kDenseNsPerMultiplyAdd = 0.19;
constexpr float kMinScale = 1e-5f;  // sparse local SGD: fold the scale back into y below this
// The single-thread time of a one-worker sparse step's two phases per non-zero of its batch, for the pool's cost
// model: the rows' derivatives (a gather from the model each) and the scatter-add of the terms with the update of
// the touched coordinates (random writes each). Measured on this project's 2-core machine: MB-SGD at batch 256 on
// the Criteo-shaped set (`pimopt gen sparse --rows 300000`, 11.7 M non-zeros an epoch), one thread, 0.100-0.110 s
// and 0.165-0.180 s an epoch (docs/cpu-backend.md "How each step is split").
constexpr double kSparseNsPerDerivativeNonzero = 9.0;
constexpr double kSparseNsPerScatterNonzero = 14.5;
}  // namespace

CpuBackend::CpuBackend(ThreadPool& pool) : pool_(pool) {}

void CpuBackend::AddPhase(const char* phase, const PhaseStart& since) {
  const double comm_s = comm_->stats().seconds - since.comm_s;
  phase_seconds_[phase] += std::chrono::duration<double>(Clock::now() - since.time).count() - comm_s;
}

void CpuBackend::CountSync(bool push, bool pull) {
  // A run of one worker has no host <-> worker exchange. Under MPI every process counts its own workers' vectors
  // (the coordinator sums them over processes), and every process counts the synchronization.
  if (part_.total_workers <= 1) return;
  const uint64_t vector_bytes = static_cast<uint64_t>(workers_) * (n_ + 1) * sizeof(float);
  if (push) traffic_.to_workers_bytes += vector_bytes;
  if (pull) {
    traffic_.from_workers_bytes += vector_bytes;
    ++traffic_.syncs;
  }
}

template <typename Fn>
void CpuBackend::ForFeatureBlocks(Fn&& fn, size_t begin, size_t end) {
  end = std::min(end, n_ + 1);
  const size_t total = end - begin;
  const size_t blocks = (total + kFeatureBlock - 1) / kFeatureBlock;
  auto task = [&](size_t b) { fn(begin + b * kFeatureBlock, std::min(end, begin + (b + 1) * kFeatureBlock)); };
  pool_.ParallelForWork(blocks, static_cast<double>(total) * std::max(1, workers_) * kDenseNsPerMultiplyAdd, task);
}

void CpuBackend::FoldInto(std::span<float> chunk, size_t offset, const std::vector<std::vector<float>>& vectors,
                          size_t count, size_t shift) {
  const size_t m = n_ + 1;
  const size_t lo = std::max(offset, shift), hi = std::min(offset + chunk.size(), shift + m);
  if (lo >= hi) return;
  // Vector by vector over each block (the block's sums stay in cache): each coordinate still adds the vectors in
  // worker order to its running sum, the bits of a loop over the workers per coordinate, in vector instructions
  // rather than one load through each worker's vector per term.
  ForFeatureBlocks(
      [&](size_t begin, size_t end) {
        float* out = chunk.data() + begin + shift - offset;
        const size_t len = end - begin;
        for (size_t k = 0; k < count; ++k) {
          const float* in = vectors[k].data() + begin;
#pragma omp simd
          for (size_t i = 0; i < len; ++i) out[i] += in[i];
        }
      },
      lo - shift, hi - shift);
}

void CpuBackend::Setup(const Dataset& train, const TrainConfig& config, const Partition& part, Communicator& comm) {
  local_matches_global_ = false;
  PIMOPT_CHECK(part.local_rows == train.num_rows() && part.total_workers == config.workers,
               "the training rows do not match the partition");
  newton_margins_.clear();  // Newton's per-row vectors and column-major copy are made anew for these rows
  data_ = &train;
  config_ = config;
  part_ = part;
  comm_ = &comm;
  n_ = train.num_features();
  workers_ = part.local_workers;
  const bool duals = config.traits().worker_offsets;
  // global, reduced (x2 with offsets) and per worker: local, scratch (and offset, shift), n + 1 floats each.
  const uint64_t vectors = (duals ? 3 : 2) + static_cast<uint64_t>(workers_) * (duals ? 4 : 2);
  CheckMemoryNeed(vectors * (n_ + 1) * sizeof(float),
                  StrCat("the training state (", vectors, " vectors of ", n_ + 1, " floats: ", workers_,
                         " workers over ", n_, " features)"),
                  "--workers");
  reduced_.assign(duals ? 2 * (n_ + 1) : n_ + 1, 0.0f);
  global_.assign(n_ + 1, 0.0f);
  local_.assign(workers_, std::vector<float>(n_ + 1, 0.0f));
  offset_.assign(duals ? workers_ : 0, std::vector<float>(n_ + 1, 0.0f));
  shift_.assign(duals ? workers_ : 0, std::vector<float>(n_ + 1, 0.0f));
  scratch_.assign(workers_, std::vector<float>(n_ + 1, 0.0f));
  scratch_zero_ = true;
  global_scale_ = 1.0f;
  touched_.assign(data_->is_sparse() ? workers_ : 0, {});
  rows_are_ones_ = data_->is_sparse() && HasOnlyOnes(data_->csr());

  derivs_.assign(workers_, {});
  shard_sizes_.clear();
  shards_ = LocalShards(part);
  for (const Shard& s : shards_) shard_sizes_.push_back(s.size());
  SetupRowDuals();
  phase_seconds_.clear();
  traffic_ = {};
}

void CpuBackend::GradientStep(std::span<const std::span<const uint32_t>> worker_rows, uint64_t batch_rows, double lr) {
  local_matches_global_ = false;
  CheckBeforeStep();
  const auto t0 = StartPhase();
  const int k_count = static_cast<int>(worker_rows.size());
  PIMOPT_CHECK(k_count >= 1 && k_count <= workers_);
  const Dataset& data = *data_;
  const Objective& obj = config_.objective;
  uint64_t local_rows = 0;
  for (auto rows : worker_rows) local_rows += rows.size();
  PIMOPT_CHECK(batch_rows > 0 && local_rows <= batch_rows);

  if (data.is_sparse()) {
    SparseGradientStep(worker_rows, batch_rows, lr, t0);
    return;
  }
  // Dense: the arithmetic is fixed by the batch. Each worker's rows fall into chunks (at most kChunksPerWorker, at
  // least kRowChunk rows each: a function of the batch, not of the thread count); each chunk's partial gradient
  // sums its rows' d * x in row order, and the partials are added in (worker, chunk) order. Split by rows, each task
  // takes a chunk and, for every row, computes its derivative and adds d * x while the row is in L1. A batch with
  // fewer chunks than the threads that would pay for themselves (batch 64: two) is split by columns instead, with
  // the same sums (DenseStepByColumns).
  chunks_.clear();
  for (int k = 0; k < k_count; ++k) {
    const size_t rows = worker_rows[k].size();
    const size_t chunk = std::max(kRowChunk, (rows + kChunksPerWorker - 1) / kChunksPerWorker);
    for (size_t c = 0; c < rows; c += chunk) chunks_.push_back({k, c, std::min(rows, c + chunk)});
  }
  const double step_ns = 2.0 * static_cast<double>(local_rows) * static_cast<double>(n_) * kDenseNsPerMultiplyAdd;
  const int row_threads = pool_.ThreadsFor(step_ns, chunks_.size());
  if (comm_->size() == 1 && dense_split_ != DenseStepSplit::kByRows) {
    const size_t column_tasks = (n_ + kColumnBlock - 1) / kColumnBlock;
    int column_threads = pool_.ThreadsFor(step_ns / 2, column_tasks);
    const PhaseCost& cost = pool_.phase_cost();
    const bool faster = 2 * cost.PhaseNs(step_ns / 2, column_threads) < cost.PhaseNs(step_ns, row_threads);
    if (dense_split_ == DenseStepSplit::kByColumns) column_threads = pool_.UsableThreads();
    if (dense_split_ == DenseStepSplit::kByColumns || faster) {
      DenseStepByColumns(worker_rows, batch_rows, lr, t0, column_threads);
      return;
    }
  }
  if (partials_.size() < chunks_.size()) partials_.resize(chunks_.size());
  const DenseRows access{data.dense_values().data(), n_};
  auto chunk_task = [&](size_t t) {
    const RowChunk& c = chunks_[t];
    std::vector<float>& g = partials_[t];
    g.assign(n_ + 1, 0.0f);
    double bias = 0;
    for (size_t i = c.begin; i < c.end; ++i) {
      const uint32_t r = worker_rows[c.worker][i];
      if (i + 1 < c.end) access.Prefetch(worker_rows[c.worker][i + 1]);
      const float d = DenseRowDerivative(access, r);
      if (d != 0.0f) access.Axpy(r, d, g.data(), n_);
      bias += d;
    }
    g[n_] = static_cast<float>(bias);
  };
  pool_.ParallelFor(chunks_.size(), chunk_task, row_threads);
  const size_t num_partials = chunks_.size();
  AddPhase("worker_compute", t0);
  const auto t1 = StartPhase();

  // Host: add the partial sums in global (worker, chunk) order, then step.
  std::span<float> g(reduced_.data(), n_ + 1);
  std::fill(g.begin(), g.end(), 0.0f);
  comm_->OrderedSum(g,
                    [&](std::span<float> chunk, size_t offset) { FoldInto(chunk, offset, partials_, num_partials, 0); });
  const float scale = static_cast<float>(lr / static_cast<double>(batch_rows));
  const float decay = static_cast<float>(1.0 - lr * obj.l2);
  ForFeatureBlocks([&](size_t begin, size_t end) {
    float* gw = global_.data();
    const float* gj = g.data();
    const size_t weights_end = std::min(end, n_);
#pragma omp simd
    for (size_t j = begin; j < weights_end; ++j) gw[j] = decay * gw[j] - scale * gj[j];
    if (end > n_) gw[n_] = gw[n_] - scale * gj[n_];  // the bias: not decayed
  });
  if (!obj.fit_bias) global_[n_] = 0.0f;
  CountSync(true, true);
  AddPhase("reduce_and_update", t1);
}

float CpuBackend::DenseRowDerivative(const DenseRows& access, uint32_t row) const {
  const Dataset& data = *data_;
  const Objective& obj = config_.objective;
  const float* w = global_.data();
  const float y = data.labels()[row];
  const float z = access.Dot(row, w, n_) + w[n_];
  return data.weight(row) * obj.ClassWeight(y) * LossDerivative(obj.loss, z, y);
}

void CpuBackend::DenseStepByColumns(std::span<const std::span<const uint32_t>> worker_rows, uint64_t batch_rows,
                                    double lr, const PhaseStart& t0, int threads) {
  // The sums of the split by rows, in the same order, in two phases whose tasks do not depend on the thread count:
  // (1) each row's derivative, kDerivativeRows rows per task; (2) per range of kColumnBlock columns, each chunk's
  // partial sum of d * x over its rows in row order (rows with d = 0 skipped, as Axpy is), the partials added in
  // chunk order from 0, and the host's update of those columns. Coordinate by coordinate this is the split by rows'
  // arithmetic, so the model's bits do not depend on which split ran.
  const Dataset& data = *data_;
  const Objective& obj = config_.objective;
  const DenseRows access{data.dense_values().data(), n_};
  float* w = global_.data();
  flat_rows_.clear();
  std::vector<size_t> worker_start(worker_rows.size());
  for (size_t k = 0; k < worker_rows.size(); ++k) {
    worker_start[k] = flat_rows_.size();
    flat_rows_.insert(flat_rows_.end(), worker_rows[k].begin(), worker_rows[k].end());
  }
  const size_t total = flat_rows_.size();
  chunk_derivatives_.resize(total);
  auto derivative_task = [&](size_t t) {
    const size_t end = std::min(total, (t + 1) * kDerivativeRows);
    for (size_t p = t * kDerivativeRows; p < end; ++p) {
      if (p + 1 < end) access.Prefetch(flat_rows_[p + 1]);
      chunk_derivatives_[p] = DenseRowDerivative(access, flat_rows_[p]);
    }
  };
  pool_.ParallelFor((total + kDerivativeRows - 1) / kDerivativeRows, derivative_task, threads);
  // The bias coordinate: each chunk's derivatives summed in double, as a partial's last entry is.
  float bias_grad = 0.0f;
  for (const RowChunk& c : chunks_) {
    double bias = 0;
    for (size_t i = c.begin; i < c.end; ++i) bias += chunk_derivatives_[worker_start[c.worker] + i];
    bias_grad += static_cast<float>(bias);
  }
  const float scale = static_cast<float>(lr / static_cast<double>(batch_rows));
  const float decay = static_cast<float>(1.0 - lr * obj.l2);
  const float* values = data.dense_values().data();
  auto column_task = [&](size_t t) {
    const size_t lo = t * kColumnBlock, m = std::min(n_, lo + kColumnBlock) - lo;
    float sum[kColumnBlock], part[kColumnBlock];
    std::fill(sum, sum + m, 0.0f);
    for (const RowChunk& c : chunks_) {
      std::fill(part, part + m, 0.0f);
      for (size_t i = c.begin; i < c.end; ++i) {
        const size_t p = worker_start[c.worker] + i;
        const float d = chunk_derivatives_[p];
        if (d == 0.0f) continue;
        const float* x = values + size_t{flat_rows_[p]} * n_ + lo;
#pragma omp simd
        for (size_t j = 0; j < m; ++j) part[j] += d * x[j];
      }
#pragma omp simd
      for (size_t j = 0; j < m; ++j) sum[j] += part[j];
    }
#pragma omp simd
    for (size_t j = 0; j < m; ++j) w[lo + j] = decay * w[lo + j] - scale * sum[j];
  };
  pool_.ParallelFor((n_ + kColumnBlock - 1) / kColumnBlock, column_task, threads);
  w[n_] = w[n_] - scale * bias_grad;
  if (!obj.fit_bias) w[n_] = 0.0f;
  CountSync(true, true);
  AddPhase("worker_compute", t0);  // the gradient's two passes; the update rides in the second
  phase_seconds_["reduce_and_update"] += 0.0;
}

void CpuBackend::SparseGradientStep(std::span<const std::span<const uint32_t>> worker_rows, uint64_t batch_rows,
                                    double lr, const PhaseStart& t0) {
  // The weights are w = s v (global_scale_, global_[0..n)), the bias global_[n] as it is: the L2 decay of a step
  // multiplies s, and only the coordinates the batch touches change. Per step:
  //   s' = s (1 - lr l2),   v_j <- v_j - (lr / B) g_j / s'   for the j with g_j != 0,
  // so s' v' = (1 - lr l2) w - (lr / B) g, the dense formula up to rounding. The rule is the same whether the
  // touched coordinates come from the batch (one process) or from scanning the reduced gradient (MPI), so every
  // split into ranks gives the same bits.
  const Dataset& data = *data_;
  const Objective& obj = config_.objective;
  const int k_count = static_cast<int>(worker_rows.size());
  const SparseRows access{data.csr().row_ptr.data(), data.csr().col.data(), data.csr().val.data()};
  const float s = global_scale_;
  const float* v = global_.data();
  uint64_t batch_nonzeros = 0;
  for (auto rows : worker_rows) {
    for (uint32_t r : rows) batch_nonzeros += access.row_ptr[r + 1] - access.row_ptr[r];
  }
  if (!scratch_zero_) {
    for (auto& g : scratch_) std::fill(g.begin(), g.end(), 0.0f);
    scratch_zero_ = true;
  }
  if (k_count == 1 && comm_->size() == 1) {
    SparseOneWorkerStep(worker_rows[0], batch_rows, batch_nonzeros, lr, t0);
    return;
  }
  // Workers: scatter-add d * x into the worker's accumulator (zero outside what it touches), noting the columns.
  auto worker_task = [&](size_t k) {
    float* g = scratch_[k].data();
    std::vector<uint32_t>& cols = touched_[k];
    cols.clear();
    double bias = 0;
    for (uint32_t r : worker_rows[k]) {
      const float y = data.labels()[r];
      const float z = s * access.Dot(r, v, n_) + v[n_];
      const float d = data.weight(r) * obj.ClassWeight(y) * LossDerivative(obj.loss, z, y);
      if (d != 0.0f) {
        for (uint64_t e = access.row_ptr[r]; e < access.row_ptr[r + 1]; ++e) {
          const uint32_t j = access.col[e];
          if (j >= n_) continue;
          g[j] += d * access.val[e];
          cols.push_back(j);
        }
      }
      bias += d;
    }
    g[n_] = static_cast<float>(bias);
  };
  // Each worker's derivatives and scatter-add, on the threads the cost model gives their work.
  pool_.ParallelForWork(
      k_count, static_cast<double>(batch_nonzeros) * (kSparseNsPerDerivativeNonzero + kSparseNsPerScatterNonzero),
      worker_task);
  AddPhase("worker_compute", t0);
  const auto t1 = StartPhase();
  const float scale = static_cast<float>(lr / static_cast<double>(batch_rows));
  const float s_next = s * static_cast<float>(1.0 - lr * obj.l2);
  const float step = scale / s_next;
  float* w = global_.data();
  auto update = [&](size_t j, float g_j) {
    if (g_j != 0.0f) w[j] -= step * g_j;
  };
  float bias_grad = 0.0f;
  if (comm_->size() == 1) {
    // Each touched coordinate: the workers' entries summed in worker order, then the update. The sums start at 0
    // and take each worker's entries in worker order, once (an entry is zeroed as it is taken, so a column the worker
    // noted again adds 0); a worker that did not touch a column would add its +0, which changes no sum (but the sign
    // of a zero, and a zero sum is no update): the bits of summing every worker's entry, with one random access per
    // noted column instead of two per worker. The update zeroes the sum, so a column noted again is skipped.
    if (sparse_sums_.size() != n_ + 1) sparse_sums_.assign(n_ + 1, 0.0f);
    float* sums = sparse_sums_.data();
    for (int k = 0; k < k_count; ++k) {
      float* g = scratch_[k].data();
      for (uint32_t j : touched_[k]) {
        sums[j] += g[j];
        g[j] = 0.0f;
      }
    }
    for (int k = 0; k < k_count; ++k) {
      for (uint32_t j : touched_[k]) {
        update(j, sums[j]);
        sums[j] = 0.0f;
      }
    }
    for (int k = 0; k < k_count; ++k) bias_grad += scratch_[k][n_];
  } else {
    std::span<float> g(reduced_.data(), n_ + 1);
    std::fill(g.begin(), g.end(), 0.0f);
    comm_->OrderedSum(g,
                      [&](std::span<float> chunk, size_t offset) { FoldInto(chunk, offset, scratch_, k_count, 0); });
    for (size_t j = 0; j < n_; ++j) update(j, g[j]);
    bias_grad = g[n_];
    for (int k = 0; k < k_count; ++k) {
      for (uint32_t j : touched_[k]) scratch_[k][j] = 0.0f;
    }
  }
  w[n_] -= scale * bias_grad;
  if (!obj.fit_bias) w[n_] = 0.0f;
  global_scale_ = s_next;
  if (global_scale_ < kMinScale) FoldGlobalScale();
  for (int k = 0; k < k_count; ++k) scratch_[k][n_] = 0.0f;  // the accumulators are zero again
  CountSync(true, true);
  AddPhase("reduce_and_update", t1);
}

void CpuBackend::SparseOneWorkerStep(std::span<const uint32_t> rows, uint64_t batch_rows, uint64_t batch_nonzeros,
                                     double lr, const PhaseStart& t0) {
  // The same arithmetic as SparseGradientStep with one worker, in two parallel phases whose results do not depend
  // on how they are split: (1) each row's derivative d_r, in fixed chunks of rows; (2) per range of columns, the
  // scatter-add g_j += d_r x_rj over the batch's rows in row order, so each coordinate sums its terms in the order
  // one thread would, then the update of the range's touched coordinates. Each phase runs on the threads the pool's
  // cost model gives its work. With more than one range, phase (1) also files each chunk's terms d_r x_rj by range
  // (in row order), so that a range's task reads its own terms only instead of every non-zero of the batch.
  const Dataset& data = *data_;
  const Objective& obj = config_.objective;
  const SparseRows access{data.csr().row_ptr.data(), data.csr().col.data(), data.csr().val.data()};
  const float s = global_scale_;
  float* w = global_.data();
  float* g = scratch_[0].data();
  const double nonzeros = static_cast<double>(batch_nonzeros);
  const size_t chunks = (rows.size() + kRowChunk - 1) / kRowChunk;
  const int derivative_threads = pool_.ThreadsFor(nonzeros * kSparseNsPerDerivativeNonzero, chunks);
  const int scatter_threads =
      forced_scatter_tasks_ > 0
          ? forced_scatter_tasks_
          : pool_.ThreadsFor(nonzeros * kSparseNsPerScatterNonzero, static_cast<size_t>(pool_.UsableThreads()));
  // The column ranges: blocks of 2^shift columns, as few as make at most that many blocks (a shift per term, not a
  // division; any split of the columns gives the same bits).
  int shift = 0;
  while (scatter_threads > 1 && n_ > 0 && ((n_ - 1) >> shift) + 1 > static_cast<size_t>(scatter_threads)) ++shift;
  const size_t ranges = scatter_threads > 1 && n_ > 0 ? ((n_ - 1) >> shift) + 1 : 1;
  row_derivatives_.resize(rows.size());
  if (ranges > 1 && range_terms_.size() < chunks * ranges) range_terms_.resize(chunks * ranges);
  auto range_of = [&](uint32_t j) { return static_cast<size_t>(uint64_t{j} >> shift); };
  // fn(j, d_r x_rj) for the weights' non-zeros of batch rows begin .. end - 1 whose derivative is not 0, in order.
  auto for_each_term = [&](size_t begin, size_t end, auto&& fn) {
    for (size_t i = begin; i < end; ++i) {
      const float d = row_derivatives_[i];
      if (d == 0.0f) continue;
      const uint32_t r = rows[i];
      for (uint64_t e = access.row_ptr[r]; e < access.row_ptr[r + 1]; ++e) {
        const uint32_t j = access.col[e];
        if (j < n_) fn(j, d * access.val[e]);
      }
    }
  };
  auto derivative_task = [&](size_t c) {
    const size_t end = std::min(rows.size(), (c + 1) * kRowChunk);
    for (size_t i = c * kRowChunk; i < end; ++i) {
      const uint32_t r = rows[i];
      const float y = data.labels()[r];
      const float z = s * access.Dot(r, w, n_) + w[n_];
      row_derivatives_[i] = data.weight(r) * obj.ClassWeight(y) * LossDerivative(obj.loss, z, y);
    }
    if (ranges <= 1) return;
    for (size_t part = 0; part < ranges; ++part) range_terms_[c * ranges + part].clear();
    for_each_term(c * kRowChunk, end, [&](uint32_t j, float term) {
      range_terms_[c * ranges + range_of(j)].push_back({j, term});
    });
  };
  pool_.ParallelFor(chunks, derivative_task, derivative_threads);
  double bias = 0;
  for (float d : row_derivatives_) bias += d;
  AddPhase("worker_compute", t0);
  const auto t1 = StartPhase();
  const float scale = static_cast<float>(lr / static_cast<double>(batch_rows));
  const float s_next = s * static_cast<float>(1.0 - lr * obj.l2);
  const float step = scale / s_next;
  if (range_touched_.size() < ranges) range_touched_.resize(ranges);
  auto update_noted = [&](std::vector<uint32_t>& cols) {
    // A column noted twice sums to 0 after its first update and is skipped: one update per coordinate.
    for (uint32_t j : cols) {
      if (g[j] != 0.0f) w[j] -= step * g[j];
      g[j] = 0.0f;
    }
  };
  if (ranges <= 1) {
    std::vector<uint32_t>& cols = range_touched_[0];
    cols.clear();
    for_each_term(0, rows.size(), [&](uint32_t j, float term) {
      g[j] += term;
      cols.push_back(j);
    });
    update_noted(cols);
  } else {
    pool_.ParallelFor(ranges, [&](size_t part) {
      std::vector<uint32_t>& cols = range_touched_[part];
      cols.clear();
      for (size_t c = 0; c < chunks; ++c) {
        for (const ColumnTerm& term : range_terms_[c * ranges + part]) {
          g[term.column] += term.value;
          cols.push_back(term.column);
        }
      }
      update_noted(cols);
    });
  }
  w[n_] -= scale * static_cast<float>(bias);
  if (!obj.fit_bias) w[n_] = 0.0f;
  global_scale_ = s_next;
  if (global_scale_ < kMinScale) FoldGlobalScale();
  CountSync(true, true);
  AddPhase("reduce_and_update", t1);
}

void CpuBackend::FoldGlobalScale() {
  if (global_scale_ == 1.0f) return;
  local_matches_global_ = false;
  const float s = global_scale_;
  ForFeatureBlocks([&](size_t begin, size_t end) {
    for (size_t j = begin; j < std::min(end, n_); ++j) global_[j] *= s;
  });
  global_scale_ = 1.0f;
}

void CpuBackend::RunLocalDense(int k, const LocalSolveRequest& req) {
  const Dataset& data = *data_;
  const Objective& obj = config_.objective;
  float* x = local_[k].data();
  float* g = scratch_[k].data();
  const bool proximal = req.solver == LocalSolver::kProximalSgd;
  const float* shift = proximal ? shift_[k].data() : nullptr;
  const double decay = proximal ? req.prox : obj.l2;
  const double weight =
      proximal ? static_cast<double>(part_.total_workers) * shard_sizes_[k] / part_.total_rows : 1.0;
  const float lr = static_cast<float>(req.lr);
  const float keep = static_cast<float>(1.0 - req.lr * decay);
  const DenseRows access{data.dense_values().data(), n_};
  const uint64_t end_step = req.first_step + req.num_steps;
  for (uint64_t s = req.first_step; s < end_step; ++s) {
    const auto rows = req.plan->LocalBatch(k, s);
    const float inv = static_cast<float>(weight / static_cast<double>(rows.size()));
    std::fill(g, g + n_, 0.0f);
    float bias_grad = 0;
    for (size_t i = 0; i < rows.size(); ++i) {
      const uint32_t r = rows[i];
      // The next row (of this batch, else the next step's first) is fetched while this one computes.
      if (i + 1 < rows.size()) {
        access.Prefetch(rows[i + 1]);
      } else if (s + 1 < end_step) {
        const auto next = req.plan->LocalBatch(k, s + 1);
        if (!next.empty()) access.Prefetch(next[0]);
      }
      const float y = data.labels()[r];
      const float z = access.Dot(r, x, n_) + x[n_];
      const float d = inv * data.weight(r) * obj.ClassWeight(y) * LossDerivative(obj.loss, z, y);
      if (d != 0.0f) access.Axpy(r, d, g, n_);
      bias_grad += d;
    }
    if (shift) {
      const float lr_decay = static_cast<float>(req.lr * decay);
#pragma omp simd
      for (size_t j = 0; j < n_; ++j) x[j] = keep * x[j] + lr_decay * shift[j] - lr * g[j];
      x[n_] = keep * x[n_] + lr_decay * shift[n_] - lr * bias_grad;
    } else {
#pragma omp simd
      for (size_t j = 0; j < n_; ++j) x[j] = keep * x[j] - lr * g[j];
      x[n_] -= lr * bias_grad;
    }
    if (!obj.fit_bias) x[n_] = 0.0f;
  }
}

void CpuBackend::RunLocalSparse(int k, const LocalSolveRequest& req, const float* start) {
  const Dataset& data = *data_;
  const Objective& obj = config_.objective;
  float* x = local_[k].data();
  float* y = scratch_[k].data();  // x = shift + s * y on the weights; the bias x[n_] is kept directly
  const bool proximal = req.solver == LocalSolver::kProximalSgd;
  const float* shift = proximal ? shift_[k].data() : nullptr;
  const double decay = proximal ? req.prox : obj.l2;
  const double weight =
      proximal ? static_cast<double>(part_.total_workers) * shard_sizes_[k] / part_.total_rows : 1.0;
  const float lr = static_cast<float>(req.lr);
  const float keep = static_cast<float>(1.0 - req.lr * decay);
  const SparseRows access{data.csr().row_ptr.data(), data.csr().col.data(), data.csr().val.data()};
  for (size_t j = 0; j < n_; ++j) y[j] = shift ? start[j] - shift[j] : start[j];
  float s = 1.0f;
  std::vector<float>& d = derivs_[k];
  for (uint64_t step = req.first_step; step < req.first_step + req.num_steps; ++step) {
    const auto rows = req.plan->LocalBatch(k, step);
    const float inv = static_cast<float>(weight / static_cast<double>(rows.size()));
    d.resize(rows.size());
    float bias_grad = 0;
    for (size_t i = 0; i < rows.size(); ++i) {
      const uint32_t r = rows[i];
      const float label = data.labels()[r];
      float z = s * access.Dot(r, y, n_) + x[n_];
      if (shift) z += access.Dot(r, shift, n_);
      d[i] = inv * data.weight(r) * obj.ClassWeight(label) * LossDerivative(obj.loss, z, label);
      bias_grad += d[i];
    }
    s *= keep;
    const float step_scale = -lr / s;
    for (size_t i = 0; i < rows.size(); ++i) {
      if (d[i] != 0.0f) access.Axpy(rows[i], step_scale * d[i], y, n_);
    }
    x[n_] =
        shift ? keep * x[n_] + static_cast<float>(req.lr * decay) * shift[n_] - lr * bias_grad : x[n_] - lr * bias_grad;
    if (!obj.fit_bias) x[n_] = 0.0f;
    if (s < kMinScale) {
      for (size_t j = 0; j < n_; ++j) y[j] *= s;
      s = 1.0f;
    }
  }
  for (size_t j = 0; j < n_; ++j) x[j] = (shift ? shift[j] : 0.0f) + s * y[j];
}

void CpuBackend::LocalSolve(const LocalSolveRequest& req) {
  CheckBeforeStep();
  const auto t0 = StartPhase();
  PIMOPT_CHECK(req.plan && req.plan->num_workers() == workers_);
  const bool proximal = req.solver == LocalSolver::kProximalSgd;
  PIMOPT_CHECK(!proximal || !offset_.empty(), "proximal steps need worker offsets (AlgorithmTraits)");
  const bool dual = req.solver == LocalSolver::kDualCoordinateAscent;
  PIMOPT_CHECK(!dual || !row_duals_.empty() || data_->num_rows() == 0, "dual steps need row duals (AlgorithmTraits)");
  FoldGlobalScale();
  if (data_->is_sparse() && !dual) scratch_zero_ = false;  // the local SGD steps keep the scaled models y there
  // The sparse local SGD steps set their scaled model up from the starting model and write every weight back at
  // the end: from the global model they read it in place and take only its bias (a copy of the weights less).
  const bool sparse_sgd = data_->is_sparse() && !dual;
  const bool copy_global = req.start_from_global && !local_matches_global_;
  auto worker = [&](size_t k) {
    if (copy_global && sparse_sgd) {
      local_[k][n_] = global_[n_];
    } else if (copy_global) {
      std::copy(global_.begin(), global_.end(), local_[k].begin());
    }
    if (proximal) {
      for (size_t j = 0; j <= n_; ++j) shift_[k][j] = global_[j] - offset_[k][j];  // the center global - o_k
    }
    if (dual) {
      RunLocalDual(static_cast<int>(k), req);
    } else if (data_->is_sparse()) {
      RunLocalSparse(static_cast<int>(k), req, copy_global ? global_.data() : local_[k].data());
    } else {
      RunLocalDense(static_cast<int>(k), req);
    }
  };
  // The phase's work, for the number of threads that pays: every local step's rows, each a dot product and an
  // update over the row's values (a sparse row's non-zeros taken at the dense loops' rate: fewer threads, never
  // more, where random access makes the work dearer), and per worker the passes over its model vectors (the copy
  // of the global model, the proximal shift, and on sparse data the scaled model's setup and fold-back).
  uint64_t rows = 0;
  for (int k = 0; k < workers_; ++k) {
    req.plan->ForEachRowSpan(k, req.first_step, req.num_steps,
                             [&](std::span<const uint32_t> span) { rows += span.size(); });
  }
  const double values_per_row =
      data_->is_sparse() ? static_cast<double>(data_->csr().val.size()) / std::max<uint64_t>(1, data_->num_rows())
                         : static_cast<double>(n_);
  const double vector_passes = (copy_global && !sparse_sgd ? 1 : 0) + (proximal ? 1 : 0) + (sparse_sgd ? 2 : 0);
  const double work_ns = (2.0 * static_cast<double>(rows) * values_per_row +
                          vector_passes * static_cast<double>(workers_) * static_cast<double>(n_ + 1)) *
                         kDenseNsPerMultiplyAdd;
  pool_.ParallelForWork(workers_, work_ns, worker);
  local_matches_global_ = false;
  CountSync(req.start_from_global || proximal, false);
  AddPhase("worker_compute", t0);
}

void CpuBackend::MixLocalModels(const Topology& topology) {
  local_matches_global_ = false;
  const auto t0 = StartPhase();
  PIMOPT_CHECK(topology.workers() == static_cast<uint32_t>(part_.total_workers), "MixLocalModels: the run's workers");
  // Every worker's model, in global worker order: this process's own, or (under MPI) all processes' gathered.
  const size_t width = n_ + 1;
  const AllWorkerVectors<float> model_of(*comm_, local_, width, part_.first_worker,
                                         static_cast<uint32_t>(part_.total_workers));
  if (mixed_.size() != local_.size()) mixed_.assign(local_.size(), std::vector<float>(width));
  uint64_t messages = 0;
  for (int k = 0; k < workers_; ++k) {
    messages += topology.row(static_cast<uint32_t>(part_.first_worker + k)).neighbours.size() - 1;
  }
  // Per block of coordinates and worker: its neighbours' models added one after another into the block's double
  // sums (each coordinate adds its neighbours' weighted values in the row's order, from 0: the bits of a loop over
  // the neighbours per coordinate, in vector instructions), then rounded once to float.
  ForFeatureBlocks([&](size_t begin, size_t end) {
    double sums[kFeatureBlock];
    const size_t len = end - begin;
    for (int k = 0; k < workers_; ++k) {
      const MixingRow& row = topology.row(static_cast<uint32_t>(part_.first_worker + k));
      std::fill(sums, sums + len, 0.0);
      for (size_t e = 0; e < row.neighbours.size(); ++e) {
        const double weight = row.weights[e];
        const float* in = model_of(row.neighbours[e]) + begin;
#pragma omp simd
        for (size_t i = 0; i < len; ++i) sums[i] += weight * in[i];
      }
      float* out = mixed_[k].data() + begin;
      for (size_t i = 0; i < len; ++i) out[i] = static_cast<float>(sums[i]);
    }
  });
  local_.swap(mixed_);
  // Each worker sends its model to each neighbour (summed over processes: two models per link).
  traffic_.to_workers_bytes += messages * 4 * width;
  ++traffic_.syncs;
  AddPhase("reduce", t0);
}

void CpuBackend::AverageLocalModels() {
  const auto t0 = StartPhase();
  global_scale_ = 1.0f;  // global_ is replaced
  const float inv = 1.0f / static_cast<float>(part_.total_workers);
  if (workers_ == 1 && comm_->size() == 1) {
    // One worker in one process: the ordered sum below would be (0 + x) / 1 (its zero start turns -0 into +0);
    // computed in one pass and written to both models, the next LocalSolve from the global model needs no copy (a
    // CoCoA epoch on 2^20 features otherwise streams both 4 MB models five times).
    float* x = local_[0].data();
    ForFeatureBlocks([&](size_t begin, size_t end) {
      for (size_t j = begin; j < end; ++j) {
        const float mean = (0.0f + x[j]) * inv;
        global_[j] = mean;
        x[j] = mean;
      }
    });
    local_matches_global_ = true;
    CountSync(false, true);
    AddPhase("reduce", t0);
    return;
  }
  local_matches_global_ = false;
  std::span<float> sum(reduced_.data(), n_ + 1);
  std::fill(sum.begin(), sum.end(), 0.0f);
  comm_->OrderedSum(sum, [&](std::span<float> chunk, size_t offset) { FoldInto(chunk, offset, local_, workers_, 0); });
  ForFeatureBlocks([&](size_t begin, size_t end) {
    for (size_t j = begin; j < end; ++j) global_[j] = sum[j] * inv;
  });
  CountSync(false, true);
  AddPhase("reduce", t0);
}

ConsensusNorms CpuBackend::Consensus(const ConsensusRule& rule) {
  local_matches_global_ = false;
  const auto t0 = StartPhase();
  PIMOPT_CHECK(!offset_.empty(), "Consensus needs worker offsets (AlgorithmTraits)");
  FoldGlobalScale();
  const float inv = 1.0f / static_cast<float>(part_.total_workers);
  // One ordered fold of [sum_k x_k | sum_k o_k].
  const size_t m = n_ + 1;
  std::fill(reduced_.begin(), reduced_.end(), 0.0f);
  comm_->OrderedSum(reduced_, [&](std::span<float> chunk, size_t offset) {
    FoldInto(chunk, offset, local_, workers_, 0);
    FoldInto(chunk, offset, offset_, workers_, m);
  });
  const size_t blocks = (m + kFeatureBlock - 1) / kFeatureBlock;
  std::vector<double> primal(blocks, 0.0), change(blocks, 0.0), x_sq(blocks, 0.0), z_sq(blocks, 0.0),
      o_sq(blocks, 0.0);
  ForFeatureBlocks([&](size_t begin, size_t end) {
    const size_t b = begin / kFeatureBlock;
    // The block's means, then the rule's z for them (weights, and the bias in the last block).
    std::array<float, kFeatureBlock> mean, z;
    for (size_t j = begin; j < end; ++j) mean[j - begin] = (reduced_[j] + reduced_[m + j]) * inv;
    const size_t weights_end = std::min(end, n_);
    if (weights_end > begin) {
      rule.Apply(std::span<const float>(mean.data(), weights_end - begin), std::span<float>(z.data(), weights_end - begin),
                 false);
    }
    if (end > n_) rule.Apply(std::span<const float>(&mean[n_ - begin], 1), std::span<float>(&z[n_ - begin], 1), true);
    // The block's sums in locals, stored once at the end: the arrays' neighbouring entries belong to blocks that
    // other threads sum at the same time, and stores into one cache line from two cores made this loop 3x slower on
    // 2 threads than on 1 (sparse ADMM, 16 workers, 2^20 features).
    double primal_b = 0, change_b = 0, x_sq_b = 0, z_sq_b = 0, o_sq_b = 0;
    for (size_t j = begin; j < end; ++j) {
      const float zj = z[j - begin];
      const double dz = static_cast<double>(zj) - global_[j];
      change_b += dz * dz;
      z_sq_b += static_cast<double>(zj) * zj;
      for (int k = 0; k < workers_; ++k) {
        const float r = local_[k][j] - zj;
        primal_b += static_cast<double>(r) * r;
        offset_[k][j] += r;
        x_sq_b += static_cast<double>(local_[k][j]) * local_[k][j];
        o_sq_b += static_cast<double>(offset_[k][j]) * offset_[k][j];
      }
      global_[j] = zj;
    }
    primal[b] = primal_b;
    change[b] = change_b;
    x_sq[b] = x_sq_b;
    z_sq[b] = z_sq_b;
    o_sq[b] = o_sq_b;
  });
  double p = 0, d = 0, xs = 0, zs = 0, os = 0;
  for (size_t b = 0; b < blocks; ++b) {
    p += primal[b];
    d += change[b];
    xs += x_sq[b];
    zs += z_sq[b];
    os += o_sq[b];
  }
  ConsensusNorms norms;
  norms.local_minus_global_sq = comm_->SumInRankOrder(p);  // this process's workers' share, summed over processes
  norms.local_sq = comm_->SumInRankOrder(xs);
  norms.offset_sq = comm_->SumInRankOrder(os);
  norms.global_sq = zs;  // every process holds the whole global model
  norms.global_change_sq = d;
  CountSync(false, true);
  AddPhase("reduce_and_update", t0);
  return norms;
}

void CpuBackend::ScaleOffsets(double factor) {
  local_matches_global_ = false;
  const auto t0 = StartPhase();
  PIMOPT_CHECK(!offset_.empty(), "ScaleOffsets needs worker offsets (AlgorithmTraits)");
  const float f = static_cast<float>(factor);
  ForFeatureBlocks([&](size_t begin, size_t end) {
    for (int k = 0; k < workers_; ++k) {
      for (size_t j = begin; j < end; ++j) offset_[k][j] *= f;
    }
  });
  AddPhase("reduce_and_update", t0);
}

namespace {
std::vector<uint32_t> Words(const std::vector<float>& v) {
  std::vector<uint32_t> w(v.size());
  std::memcpy(w.data(), v.data(), 4 * v.size());
  return w;
}
void FromWords(const std::vector<uint32_t>& w, std::vector<float>& v) {
  PIMOPT_CHECK(w.size() == v.size(), "checkpoint vector of the wrong size");
  std::memcpy(v.data(), w.data(), 4 * v.size());
}
// A worker's shrinking state as words: its two bounds (doubles, two words each), then a word per row of its shard.
void AppendDoubleWords(double d, std::vector<uint32_t>& w) {
  uint32_t halves[2];
  std::memcpy(halves, &d, sizeof d);
  w.insert(w.end(), halves, halves + 2);
}
double DoubleFromWords(const uint32_t* w) {
  double d;
  std::memcpy(&d, w, sizeof d);
  return d;
}
}  // namespace

BackendState CpuBackend::SaveState() {
  // The global model (its weights times the lazy scale of sparse gradient steps, the scale's bits second: folding
  // it here would change the run that checkpoints); per worker its local model, then its offset.
  BackendState state;
  state.shared.push_back(Words(global_));
  state.shared.push_back(Words(std::vector<float>{global_scale_}));
  for (int k = 0; k < workers_; ++k) {
    auto& vectors = state.per_worker.emplace_back();
    vectors.push_back(Words(local_[k]));
    if (!offset_.empty()) vectors.push_back(Words(offset_[k]));
    if (!row_duals_.empty()) {
      vectors.push_back(Words(std::vector<float>(row_duals_.begin() + shards_[k].begin,
                                                 row_duals_.begin() + shards_[k].end)));
      std::vector<uint32_t>& shrinking = vectors.emplace_back();
      AppendDoubleWords(shrink_bounds_[k].max_old, shrinking);
      AppendDoubleWords(shrink_bounds_[k].min_old, shrinking);
      shrinking.insert(shrinking.end(), row_shrunk_.begin() + shards_[k].begin, row_shrunk_.begin() + shards_[k].end);
    }
  }
  return state;
}

void CpuBackend::RestoreState(const BackendState& state) {
  local_matches_global_ = false;
  // With row duals: the duals, then the shrinking state (checkpoints written before shrinking existed lack it: no
  // row shrunk, LIBLINEAR's initial bounds).
  const size_t per_worker = 1 + (offset_.empty() ? 0 : 1) + (row_duals_.empty() ? 0 : 2);
  // Checkpoints written before the lazy scale existed hold the global model alone (scale 1).
  bool fits = (state.shared.size() == 1 || (state.shared.size() == 2 && state.shared[1].size() == 1)) &&
              state.per_worker.size() == local_.size();
  const bool with_shrinking = !state.per_worker.empty() && state.per_worker[0].size() == per_worker;
  for (const auto& v : state.per_worker) {
    fits = fits && (v.size() == per_worker || (!row_duals_.empty() && !with_shrinking && v.size() == per_worker - 1));
  }
  if (!fits) throw InputError("checkpoint: it holds the state of a different number of workers or algorithm");
  FromWords(state.shared[0], global_);
  global_scale_ = 1.0f;
  if (state.shared.size() == 2) {
    std::vector<float> scale(1);
    FromWords(state.shared[1], scale);
    if (!(scale[0] > 0.0f && scale[0] <= 1.0f)) throw InputError("checkpoint: the model's scale is out of range");
    global_scale_ = scale[0];
  }
  for (int k = 0; k < workers_; ++k) {
    FromWords(state.per_worker[k][0], local_[k]);
    if (!offset_.empty()) FromWords(state.per_worker[k][1], offset_[k]);
    if (!row_duals_.empty()) {
      const size_t at = 1 + (offset_.empty() ? 0 : 1);
      std::vector<float> duals(shards_[k].size());
      if (state.per_worker[k][at].size() != duals.size()) {
        throw InputError("checkpoint: it holds the duals of a different number of rows");
      }
      FromWords(state.per_worker[k][at], duals);
      for (float b : duals) {
        if (!(b >= 0.0f && b <= 1.0f)) throw InputError("checkpoint: a row's dual is outside [0, 1]");
      }
      std::copy(duals.begin(), duals.end(), row_duals_.begin() + shards_[k].begin);
      ForgetShrinking(k);
      if (with_shrinking) {
        const std::vector<uint32_t>& w = state.per_worker[k][at + 1];
        if (w.size() != 4 + duals.size()) throw InputError("checkpoint: its shrinking state does not fit the rows");
        const double max_old = DoubleFromWords(w.data()), min_old = DoubleFromWords(w.data() + 2);
        if (!(max_old > 0) || !(min_old < 0)) throw InputError("checkpoint: its shrinking bounds are out of range");
        shrink_bounds_[k] = {max_old, min_old};
        for (size_t i = 0; i < duals.size(); ++i) {
          if (w[4 + i] > 1) throw InputError("checkpoint: a row's shrinking flag is neither 0 nor 1");
          row_shrunk_[shards_[k].begin + i] = static_cast<uint8_t>(w[4 + i]);
        }
      }
    }
  }
}

LinearModel CpuBackend::ExportModel() const {
  LinearModel m;
  ExportModelInto(m);
  return m;
}

void CpuBackend::ExportModelInto(LinearModel& m) const {
  m.loss = config_.objective.loss;
  m.fit_bias = config_.objective.fit_bias;
  m.weights.assign(global_.begin(), global_.begin() + static_cast<std::ptrdiff_t>(n_));
  if (global_scale_ != 1.0f) {
    for (float& w : m.weights) w *= global_scale_;  // as FoldGlobalScale would
  }
  m.bias = global_[n_];
  if (data_) {
    m.positive_label_value = data_->positive_label_value;
    m.negative_label_value = data_->negative_label_value;
  }
}

namespace {

// No options of its own: its workers are the host's threads (--threads, a run parameter).
BackendRegistration CpuRegistration() {
  BackendRegistration r;
  r.traits.name = "cpu";
  r.traits.help = "K workers on a thread pool, float32";
  r.traits.listing_order = 10;
  r.traits.param_group = "Run";
  r.traits.keeps_row_duals = true;
  r.traits.rescales_row_duals = true;
  r.traits.second_order = true;
  r.traits.runs_a_worker_on_one_thread = true;
  r.default_options = [] { return std::any(); };
  r.resolve = [](std::any&, int) {};
  r.make = [](ThreadPool& pool, const std::any&) -> std::unique_ptr<IBackend> {
    return std::make_unique<CpuBackend>(pool);
  };
  return r;
}

[[maybe_unused]] const bool registered = RegisterBackend(CpuRegistration());

}  // namespace

}  // namespace pimopt
