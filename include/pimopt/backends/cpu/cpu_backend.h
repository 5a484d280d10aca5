// The multi-core CPU backend: K logical workers (data shards) executed on a thread pool, float32 math.
//
// Determinism: work is split into tasks by data (workers, fixed feature blocks, fixed row chunks), never by
// thread count; each feature's sums are taken in row order and workers are combined in worker order. The same
// seed therefore gives the same model with 1 or 64 threads.
//
// Sparse data: local SGD keeps each model as x = shift + s*y (shift = 0, or the proximal center global - o_k) so the L2 / proximal
// decay is one scalar multiply and a step costs O(nnz of the batch), not O(features).
#pragma once

#include <chrono>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "pimopt/algorithms/backend.h"

namespace pimopt {

class ThreadPool;

class CpuBackend final : public IBackend {
 public:
  // How a dense gradient step is split (docs/cpu-backend.md, "How many threads a step uses").
  enum class DenseStepSplit {
    kAuto,      // the split and thread count the pool's cost model makes fastest
    kByRows,    // one task per chunk of rows (each task a partial gradient), then a fold
    kByColumns  // the rows' derivatives in groups of rows, then the gradient and update by ranges of columns
  };
  explicit CpuBackend(ThreadPool& pool);
  // Tests: force a split (both give the same bits; kByColumns applies in one process only).
  void ForceDenseStepSplit(DenseStepSplit split) { dense_split_ = split; }
  // Tests: a one-worker sparse step's scatter-add on this many tasks (at most that many column ranges; 0: the cost
  // model's thread count; every split gives the same bits).
  void ForceSparseScatterTasks(int tasks) { forced_scatter_tasks_ = tasks; }

  std::string name() const override { return "cpu"; }
  using IBackend::Setup;
  void Setup(const Dataset& local_train, const TrainConfig& config, const Partition& part, Communicator& comm) override;
  void GradientStep(std::span<const std::span<const uint32_t>> worker_rows, uint64_t batch_rows, double lr) override;
  void LocalSolve(const LocalSolveRequest& request) override;
  void AverageLocalModels() override;
  ConsensusNorms Consensus(const ConsensusRule& rule) override;
  void ScaleOffsets(double factor) override;
  void MixLocalModels(const Topology& topology) override;
  LinearModel ExportModel() const override;
  void ExportModelInto(LinearModel& into) const override;
  std::map<std::string, double> PhaseSeconds() const override { return phase_seconds_; }
  TrafficCounters Traffic() const override { return traffic_; }
  // With dual coordinate ascent: the row visits of its passes, those that shrinking skipped, and how often the
  // workers visited every row again, since Setup (or the resume).
  std::map<std::string, double> Counters() override;
  std::vector<float> RowDuals() override { return row_duals_; }
  bool RunsAWorkerOnOneThread() const override { return true; }
  // The second-order verbs (cpu_newton.cc).
  PrimalDerivatives PrimalDerivativesAtGlobal() override;
  void CurvatureTimes(std::span<const double> v, std::span<double> out) override;
  void SetPrimalDirection(std::span<const double> s) override;
  double LossSumAlong(double step) override;
  void StepGlobalModel(double step, std::span<const double> s) override;
  BackendState SaveState() override;
  void RestoreState(const BackendState& state) override;
  void MoveRowDualsToL2(double from_l2) override;

 private:
  using Clock = std::chrono::steady_clock;
  // A phase's start: host time and the communicator's seconds so far (phases exclude MPI time, which the
  // coordinator reports as a phase of its own).
  struct PhaseStart {
    Clock::time_point time;
    double comm_s;
  };
  PhaseStart StartPhase() const { return {Clock::now(), comm_->stats().seconds}; }
  void AddPhase(const char* phase, const PhaseStart& since);
  // Runs fn(begin, end) over fixed blocks of the model coordinates [begin, end) (default: all n+1).
  template <typename Fn>
  void ForFeatureBlocks(Fn&& fn, size_t begin = 0, size_t end = SIZE_MAX);
  // One step of an ordered fold (Communicator::OrderedSum): adds vectors[0..count) in order to the chunk
  // [offset, offset + chunk.size()) of an accumulator whose coordinates [shift, shift + n + 1) hold their sum.
  void FoldInto(std::span<float> chunk, size_t offset, const std::vector<std::vector<float>>& vectors, size_t count,
                size_t shift);
  // GradientStep on sparse data: costs what the batch touches (lazy L2 decay), see the definition.
  // SparseGradientStep's one-worker case (MB-SGD) in one process: the batch split over the host threads.
  void SparseOneWorkerStep(std::span<const uint32_t> rows, uint64_t batch_rows, uint64_t batch_nonzeros, double lr,
                           const PhaseStart& t0);
  void SparseGradientStep(std::span<const std::span<const uint32_t>> worker_rows, uint64_t batch_rows, double lr,
                          const PhaseStart& t0);
  // A dense row's weighted loss derivative at the global model (both splits of a dense gradient step use it).
  float DenseRowDerivative(const DenseRows& access, uint32_t row) const;
  // GradientStep on dense data in one process split by columns (DenseStepSplit::kByColumns): the same sums, in the
  // same order, as the split by rows, with as many tasks as the columns allow. Returns at the host's update.
  void DenseStepByColumns(std::span<const std::span<const uint32_t>> worker_rows, uint64_t batch_rows, double lr,
                          const PhaseStart& t0, int threads);
  // Multiplies the lazily kept scale into the weights (global_scale_ becomes 1).
  void FoldGlobalScale();
  void RunLocalDense(int k, const LocalSolveRequest& request);
  // `start`: the weights the steps start from (the global model's, or worker k's own); x_k's bias is set already.
  void RunLocalSparse(int k, const LocalSolveRequest& request, const float* start);
  // LocalSolver::kDualCoordinateAscent on worker k's rows (cpu_dual_ascent.cc).
  void RunLocalDual(int k, const LocalSolveRequest& request);
  // Its lanes (LocalSolveRequest::lanes > 1; one worker, dense rows): rounds of kLaneRows rows per lane, each lane
  // stepping from the round's model, the changes combined by an exact line search on the dual.
  void RunLocalDualLanes(int k, const LocalSolveRequest& request);
  // A row's cost c_i: its weight times its class's weight.
  double RowCost(size_t row) const {
    return static_cast<double>(data_->weight(row)) * config_.objective.ClassWeight(data_->labels()[row]);
  }
  void SetupRowDuals();
  void ForgetShrinking(int k);  // worker k visits every row again, from LIBLINEAR's initial bounds

  void CountSync(bool push, bool pull);
  // The second-order verbs' fixed partition of the rows: block b holds rows [rows b / B, rows (b + 1) / B).
  size_t NewtonBlocks() const;
  // out[j] = sum over blocks b, in order, of newton_sums_[b][offset + j], for j < out.size().
  void SumNewtonBlocks(size_t offset, std::span<double> out);
  // Sparse rows: the column-major copy (csc_*), out[j] = sum over column j's rows, in row order, of per_row[i] x_ij
  // (x_ij^2 when squared) for j < n, and the sum of per_row over the row blocks, in block order.
  void TransposeSparseRows();
  void SumSparseColumns(const std::vector<double>& per_row, bool squared, std::span<double> out);
  double SumRowsByBlocks(const std::vector<double>& per_row);

  ThreadPool& pool_;
  const Dataset* data_ = nullptr;
  TrainConfig config_;
  size_t n_ = 0;     // features; every model vector has n_ + 1 entries, the bias last
  int workers_ = 1;  // this process's workers (Partition::local_workers)
  Partition part_;
  Communicator* comm_ = &SingleProcess();
  std::vector<float> reduced_;               // the ordered sum of a reduction
  std::vector<float> sparse_sums_;  // SparseGradientStep, one process: the touched coordinates' sums (0 elsewhere)
  std::vector<float> global_;                // the host's model (a consensus: z); weights times global_scale_
  float global_scale_ = 1.0f;                // != 1 only between sparse gradient steps
  bool scratch_zero_ = true;                 // scratch_ holds zeros (the sparse gradient accumulators)
  // One worker in one process: AverageLocalModels left local_[0] with global_'s bits, so the next LocalSolve from
  // the global model needs no copy. Every other verb that writes either model clears it.
  bool local_matches_global_ = false;
  // Sparse rows whose every value is 1 (checked at Setup): the backend's row kernels skip reading the values.
  bool rows_are_ones_ = false;
  // VisitRows over the training rows with that knowledge (the same bits either way).
  template <typename Fn>
  decltype(auto) VisitTrainingRows(Fn&& fn) const {
    if (data_->is_sparse()) {
      const CsrMatrix& m = data_->csr();
      return fn(SparseRows{m.row_ptr.data(), m.col.data(), m.val.data(), rows_are_ones_});
    }
    return fn(DenseRows{data_->dense_values().data(), data_->num_features()});
  }
  std::vector<std::vector<uint32_t>> touched_;  // per worker: the columns its last sparse batch touched
  std::vector<float> row_derivatives_;          // SparseOneWorkerStep: d of each batch row
  std::vector<std::vector<uint32_t>> range_touched_;  // SparseOneWorkerStep: per column range, the touched columns
  // SparseOneWorkerStep on more than one column range: per (row chunk, range), the chunk's terms d_r x_rj of the
  // range's columns in row order, (j, the product) each.
  struct ColumnTerm {
    uint32_t column;
    float value;
  };
  std::vector<std::vector<ColumnTerm>> range_terms_;
  std::vector<std::vector<float>> local_;    // x_k
  std::vector<std::vector<float>> mixed_;    // MixLocalModels: the new x_k before they replace local_
  std::vector<std::vector<float>> offset_;   // o_k (with AlgorithmTraits::worker_offsets)
  std::vector<std::vector<float>> scratch_;  // per worker: gradient (dense) or scaled model y (sparse)
  std::vector<std::vector<float>> shift_;    // per worker: global - o_k during a proximal local phase
  std::vector<std::vector<float>> derivs_;   // per worker: per-row derivatives of the current batch
  std::vector<uint64_t> shard_sizes_;
  std::vector<Shard> shards_;              // this process's workers' rows (local row ranges)
  std::vector<float> row_duals_;           // beta_i per local row (AlgorithmTraits::row_duals)
  std::vector<double> row_sq_norms_;       // ||a_i||^2 per local row, the bias's constant 1 included
  // Shrinking (LocalSolveRequest::shrink): per local row whether its pass skips it, and per worker the bounds of the
  // projected gradients its last pass saw (LIBLINEAR's PGmax_old / PGmin_old); both checkpointed.
  std::vector<uint8_t> row_shrunk_;
  // Per worker: a pass's rows not shrunk when it starts, in its visiting order (scratch, kept for its capacity).
  std::vector<std::vector<uint32_t>> unshrunk_rows_;
  struct ShrinkBounds {
    double max_old;
    double min_old;
  };
  std::vector<ShrinkBounds> shrink_bounds_;
  // What a pass of dual steps holds constant: CoCoA+'s subproblem scaling sigma, 1 / (lambda N), and whether it
  // shrinks, by which bounds.
  struct DualPass {
    double sigma;
    double inv_lambda_n;
    bool shrink;
    const ShrinkBounds* bounds;
  };
  // What a pass saw: its projected gradients' extremes (shrinking's next bounds) and its row visits and skips.
  struct DualPassTally {
    double pg_max = -std::numeric_limits<double>::infinity();
    double pg_min = std::numeric_limits<double>::infinity();
    uint64_t visits = 0, skipped = 0;
  };
  // One row's dual step on the model x, with shrinking's check and bookkeeping (a row it shrinks is flagged): the
  // row's dual before and after (equal: the row does not move) and the model's coefficient for the change.
  struct DualRowStep {
    float before, after, coef;
  };
  template <typename Access>
  DualRowStep StepRowDual(const Access& access, uint32_t row, const float* x, const DualPass& pass,
                          DualPassTally& tally);
  // After worker k's pass: its tallies into the counters, then (shrinking) new bounds or every row again.
  void EndDualPass(int k, const DualPass& pass, const DualPassTally& tally);
  std::vector<uint64_t> dual_row_visits_;  // per worker: the rows its dual passes stepped on
  std::vector<uint64_t> dual_rows_skipped_;  // per worker: the rows they skipped as shrunk
  std::vector<uint64_t> dual_unshrinks_;     // per worker: the passes after which it visited every row again
  struct LaneChange {
    uint32_t row;
    float before, after;  // the row's dual before the round and at the lane's step
  };
  std::vector<std::vector<float>> lane_models_;         // per lane: the round's model plus the lane's changes
  std::vector<std::vector<LaneChange>> lane_changes_;  // per lane: its round's changed duals
  struct RowChunk {
    int worker;
    size_t begin, end;  // positions in the worker's row list
  };
  std::vector<RowChunk> chunks_;              // GradientStep tasks (dense data)
  std::vector<std::vector<float>> partials_;  // their partial gradient sums
  std::vector<uint32_t> flat_rows_;           // DenseStepByColumns: the workers' batch rows, worker after worker
  std::vector<float> chunk_derivatives_;      // DenseStepByColumns: each chunk's rows' derivatives, chunk after chunk
  // The second-order verbs: per local row its margin m_i, its curvature c_i phi''(m_i) and y_i a_i.s, kept from
  // PrimalDerivativesAtGlobal and SetPrimalDirection; per row block its partial sums and its loss sum.
  std::vector<double> newton_margins_, newton_curvatures_, newton_direction_;
  std::vector<std::vector<double>> newton_sums_;
  std::vector<double> newton_block_losses_;
  std::vector<double> newton_row_terms_;  // sparse rows: each row's slope or c_i phi''(m_i) a_i.v, for the columns
  std::vector<uint64_t> csc_ptr_;         // sparse rows, column-major: column j's entries [csc_ptr_[j], csc_ptr_[j + 1])
  std::vector<uint32_t> csc_row_;
  std::vector<float> csc_val_;
  DenseStepSplit dense_split_ = DenseStepSplit::kAuto;
  int forced_scatter_tasks_ = 0;
  std::map<std::string, double> phase_seconds_;
  TrafficCounters traffic_;
};

}  // namespace pimopt
