// The seam between an algorithm's coordinator (written once, in algorithms/) and a backend (cpu, and later pim
// and mpi) that owns the workers, the model representation (float, fixed point, ...) and the reductions.
//
// Contract:
// - Every backend holds a global model (the host's / parameter server's copy) and, per worker k, a local model
//   x_k and, when the algorithm's traits ask for it (AlgorithmTraits::worker_offsets), an offset vector o_k of the
//   model's size. All start at zero in Setup(). The backend knows no algorithm: it offers primitives (local passes
//   with a named local solver, combinations of the workers' vectors, host rules the algorithm writes) and reads
//   what it must allocate from the traits.
// - Each verb is one phase of a distributed algorithm; a backend may run its workers on threads, DPUs or ranks,
//   but the result must not depend on how many threads run them: per-worker work is sequential, and
//   reductions combine workers in worker order.
// - Under MPI a backend holds only its process's workers (Partition) and their rows; its reductions go through
//   the Communicator, either exactly (integers) or as an ordered fold in global worker order, so the result does
//   not depend on how many processes share the workers either.
// - Verbs are called from one thread (the coordinator's).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "pimopt/collectives/communicator.h"
#include "pimopt/core/error.h"
#include "pimopt/algorithms/schedule.h"
#include "pimopt/algorithms/topology.h"
#include "pimopt/algorithms/train_config.h"
#include "pimopt/data/dataset.h"
#include "pimopt/model/linear_model.h"

namespace pimopt {

class EpochProjector;

// The local solver of a LocalSolve pass.
enum class LocalSolver {
  kSgd,          // mini-batch SGD on the worker's loss with the L2 decay
  kProximalSgd,  // mini-batch SGD on the worker's share of the loss plus a proximal term towards its center
  kDualCoordinateAscent,  // dual coordinate ascent on the worker's rows' duals (CoCoA+'s local subproblem)
};

// One call of LocalSolve: worker k runs local mini-batch steps [first_step, first_step + num_steps) of `plan`.
// A step on batch beta with learning rate lr:
//   g = weight_k * (1/|beta|) sum_{i in beta} c_i l'(x.a_i + b, y_i) a_i
//   kSgd:          x <- x - lr (g + l2 x),          b <- b - lr g_b
//   kProximalSgd:  x <- x - lr (g + prox (x - c_k)), b <- b - lr (g_b + prox (b - c_kb)),  c_k = global - o_k
// weight_k = 1 for kSgd and K |shard_k| / N for kProximalSgd (the worker's share of the loss, so sum_k f_k = K *
// mean loss); o_k is the worker's offset vector (zero unless a host rule wrote it).
//
// kDualCoordinateAscent (needs AlgorithmTraits::row_duals) visits the step's rows one after another; the lr is
// unused. Each row i (a_i with the bias's constant 1 when the bias is fitted, c_i its cost, N the rows over all
// workers, lambda = l2) moves its dual beta_i in [0, 1] to the maximizer of the local subproblem along it,
//   beta_i' = argmax_b  psi(b) - (b - beta_i) m_i - (q_i / 2) (b - beta_i)^2,
//   m_i = y_i x.a_i (the margin at the worker's model x),  q_i = sigma c_i ||a_i||^2 / (lambda N),
// with psi(b) = b (hinge: b = clip(beta_i + (1 - m_i) / q_i, 0, 1)) or the binary entropy (logistic: a 1-D Newton
// solve, model/dual_coordinate.h), then x <- x + sigma (beta_i' - beta_i) c_i y_i a_i / (lambda N). Started from the
// global model w, x = w + sigma dw_k after the pass, where dw_k is the worker's change of
// w(beta) = (1/(lambda N)) sum_i c_i beta_i y_i a_i (CoCoA+ with adding, Ma et al. 2015, sigma' = `sigma`).
struct LocalSolveRequest {
  const ShardPlan* plan = nullptr;
  uint64_t first_step = 0;
  uint64_t num_steps = 0;
  double lr = 0;
  bool start_from_global = false;  // x_k <- global model first (a push); otherwise x_k goes on from where it was
  LocalSolver solver = LocalSolver::kSgd;
  double prox = 0;  // the proximal weight of kProximalSgd
  double sigma = 1;  // the subproblem's scaling sigma' of kDualCoordinateAscent (CoCoA+: the number of workers)
  // kDualCoordinateAscent with the hinge loss: skip the rows whose duals sit at a bound they would not leave
  // (LIBLINEAR's shrinking; a backend that does not shrink visits every row, which is the same method, slower).
  bool shrink = false;
  // kDualCoordinateAscent with one worker (sigma 1): the pass in rounds of `lanes` lanes, each lane's rows stepped
  // from the round's model, the lanes' changes combined by an exact line search on the dual (the CPU backend, dense
  // rows; 1: the sequential pass).
  int lanes = 1;
};

// A host rule: how the host turns the workers' combined vectors into the next global model, coordinate by
// coordinate, in each number format a backend computes in. The algorithm writes it once (in its own file, for both
// formats); the backend sums exactly and applies it. `bias` is true for the bias coordinate (the last), false for
// weights.
class ConsensusRule {
 public:
  virtual ~ConsensusRule() = default;
  // Float backends: z[i] = rule(mean[i]) for a run of coordinates.
  virtual void Apply(std::span<const float> mean, std::span<float> z, bool bias) const = 0;
  // Fixed-point backends, in the model's Q8.24 units (64-bit, before the backend saturates to 32 bits).
  virtual void Apply(std::span<const int64_t> mean, std::span<int64_t> z, bool bias) const = 0;
};

// What a consensus step measured, summed over all workers (and processes): sum_k ||x_k - z||^2 (with the new z),
// sum_k ||x_k||^2, ||z||^2, ||z - z_old||^2 and sum_k ||o_k||^2 after the update.
struct ConsensusNorms {
  double local_minus_global_sq = 0;
  double local_sq = 0;
  double global_sq = 0;
  double global_change_sq = 0;
  double offset_sq = 0;
};

// Host <-> worker traffic, counted as the bytes a distributed implementation must move (model vectors of 4-byte
// values, bias included), so backends can be compared.
struct TrafficCounters {
  uint64_t to_workers_bytes = 0;
  uint64_t from_workers_bytes = 0;
  uint64_t syncs = 0;
  uint64_t mpi_bytes = 0;  // bytes sent over MPI by all ranks (filled by the coordinator; 0 for one process)
};

// A backend's training state (models, offsets) as opaque 32-bit words, for checkpoints. Restoring it after Setup
// with the same data and configuration continues training exactly where SaveState left it. `shared` holds what
// every process has (the global model); `per_worker[k]` worker k's vectors (its local model, offset), for this
// process's workers in order; under MPI the checkpoint gathers them into global worker order.
struct BackendState {
  std::vector<std::vector<uint32_t>> shared;
  std::vector<std::vector<std::vector<uint32_t>>> per_worker;
};

// What IBackend::PrimalDerivativesAtGlobal sums.
struct PrimalDerivatives {
  double loss_sum = 0;                     // sum_i c_i phi(m_i)
  std::vector<double> gradient;            // sum_i c_i phi'(m_i) y_i a_i, n + 1 values (the bias's last)
  std::vector<double> curvature_diagonal;  // sum_i c_i phi''(m_i) a_ij^2, n + 1 values
};

class IBackend {
 public:
  virtual ~IBackend() = default;
  virtual std::string name() const = 0;

  // Binds this process's rows of the training set (`local_train`, which must outlive the backend's use: the rows
  // of part.local_workers' shards), its part of the run and the communicator (which must outlive the backend);
  // zeroes all models.
  virtual void Setup(const Dataset& local_train, const TrainConfig& config, const Partition& part,
                     Communicator& comm) = 0;
  // A single process holding the whole training set.
  void Setup(const Dataset& train, const TrainConfig& config) {
    Setup(train, config, Partition::Whole(train.num_rows(), config.workers), SingleProcess());
  }

  // GA-SGD / MB-SGD step: worker k computes the loss-gradient sum over worker_rows[k] (local row indices, one
  // list per local worker) at the global model; the backend sums them in global worker order and updates:
  //   w <- w - lr (G / n_batch + l2 w),  b <- b - lr G_b / n_batch,   n_batch = batch_rows (over all workers).
  virtual void GradientStep(std::span<const std::span<const uint32_t>> worker_rows, uint64_t batch_rows, double lr) = 0;

  // Local SGD on every worker (see LocalSolveRequest).
  virtual void LocalSolve(const LocalSolveRequest& request) = 0;

  // global <- (1/K) sum_k x_k (model averaging; with K = 1 a copy).
  virtual void AverageLocalModels() = 0;

  // One gossip step over `topology` (topology.h): x_k <- sum_j W_kj x_j for every worker, summed in ascending j;
  // the global model is unchanged. Under MPI the backend gathers the other processes' workers' models it needs.
  virtual void MixLocalModels(const Topology& topology) = 0;

  // A consensus step over local models and offsets: a = (1/K) sum_k (x_k + o_k) (exact sums);
  //   z = rule(a) coordinate by coordinate; o_k <- o_k + x_k - z for every worker; the global model becomes z.
  virtual ConsensusNorms Consensus(const ConsensusRule& rule) = 0;

  // o_k <- factor * o_k for every worker (rounded as the backend's number format rounds).
  virtual void ScaleOffsets(double factor) = 0;

  // The global model as floats (for evaluation and saving).
  virtual LinearModel ExportModel() const = 0;
  // The same model into `into`, reusing its storage: the coordinator exports once per epoch, and a fresh vector of
  // a large model (2^28 features: 1 GiB) costs its page faults every time. The default copies ExportModel().
  virtual void ExportModelInto(LinearModel& into) const { into = ExportModel(); }

  // Seconds spent per phase since Setup (host wall clock), e.g. "worker_compute", "reduce", "host_update".
  virtual std::map<std::string, double> PhaseSeconds() const = 0;
  virtual TrafficCounters Traffic() const = 0;
  // Capabilities a backend may offer, asked of it (nullptr: not offered). projector(): its epochs projected to
  // other machine sizes (backends/projection.h).
  virtual const EpochProjector* projector() const { return nullptr; }
  // Backend-specific measurements for the report (e.g. modeled energy, fixed-point saturation events). May read
  // diagnostics from the workers; that is never counted as training traffic or time.
  virtual std::map<std::string, double> Counters() { return {}; }
  // Why this backend's arithmetic may keep a certificate from falling below some gap (a fixed-point format's
  // resolution and range, with what it measured, e.g. saturation events); "" when its arithmetic is float. Asked
  // when a run's certificate stalls, to say why. May read diagnostics, as Counters().
  virtual std::string PrecisionLimits() { return ""; }
  // One worker's LocalSolve and the sync after it run on the calling thread, and Counters, RowDuals, PrecisionLimits,
  // Traffic and ExportModelInto read nothing another thread's evaluation writes: with one sequential worker
  // (Algorithm::SequentialEpochs), Train evaluates an epoch on a second thread while this backend trains the next.
  virtual bool RunsAWorkerOnOneThread() const { return false; }

  // The duals beta_i of this process's rows, in local row order (with AlgorithmTraits::row_duals; else empty), for
  // the duality-gap certificate. A diagnostic read, never counted as training traffic or time.
  virtual std::vector<float> RowDuals() { return {}; }

  // Full-batch second-order verbs (AlgorithmTraits::second_order; backends with BackendTraits::second_order), for a
  // primal Newton method. Each is a sum over all of this process's rows i at the global model w (the bias as the
  // last coordinate, a_i = (x_i, 1) with a fitted bias, else (x_i, 0)), with c_i the row's cost (its weight times
  // its class weight), m_i = y_i w.a_i its margin and phi the logistic loss. The backend sums each over a fixed
  // partition of the rows, in a fixed order, so the bits do not depend on the thread count.
  //
  // At w: sum_i c_i phi(m_i), the gradient sum_i c_i phi'(m_i) y_i a_i and the curvature's diagonal
  // sum_i c_i phi''(m_i) a_ij^2 (n + 1 values each); the rows' margins and curvatures c_i phi''(m_i) are kept for
  // the verbs below until the model moves.
  virtual PrimalDerivatives PrimalDerivativesAtGlobal() { throw NoSecondOrderVerbs(); }
  // out = sum_i c_i phi''(m_i) (a_i.v) a_i, the loss's Hessian at the kept margins times v.
  virtual void CurvatureTimes(std::span<const double> v, std::span<double> out) {
    (void)v;
    (void)out;
    throw NoSecondOrderVerbs();
  }
  // Keeps each row's y_i a_i.s for LossSumAlong; returns nothing.
  virtual void SetPrimalDirection(std::span<const double> s) {
    (void)s;
    throw NoSecondOrderVerbs();
  }
  // sum_i c_i phi(m_i + step y_i a_i.s), the loss at w + step s (by the kept margins, not the rounded model).
  virtual double LossSumAlong(double step) {
    (void)step;
    throw NoSecondOrderVerbs();
  }
  // w <- w + step s, rounded to the backend's model format.
  virtual void StepGlobalModel(double step, std::span<const double> s) {
    (void)step;
    (void)s;
    throw NoSecondOrderVerbs();
  }

  // Checkpointing (after Setup): the state that the next verbs depend on.
  virtual BackendState SaveState() = 0;
  virtual void RestoreState(const BackendState& state) = 0;
  // After RestoreState of a state trained with row duals under the L2 strength `from_l2` (the same objective
  // otherwise, the same rows): moves it to this run's L2 so that w = w(beta) still holds and every dual stays in
  // its bounds (a warm start along a regularization path, BackendTraits::rescales_row_duals).
  virtual void MoveRowDualsToL2(double from_l2) {
    (void)from_l2;
    throw ConfigError("--algo", StrCat("the ", name(), " backend cannot move row duals to another L2 strength"));
  }

  // A front end's check between steps (the Python package's Ctrl-C): every backend calls CheckBeforeStep() at the
  // start of each GradientStep and LocalSolve. The check may throw, which abandons the run like any error.
  void SetStepCheck(std::function<void()> check) { step_check_ = std::move(check); }

 protected:
  void CheckBeforeStep() const {
    if (step_check_) step_check_();
  }

 private:
  ConfigError NoSecondOrderVerbs() const {
    return ConfigError("--algo", StrCat("the ", name(), " backend has no second-order (Newton) verbs"));
  }
  std::function<void()> step_check_;
};

}  // namespace pimopt
