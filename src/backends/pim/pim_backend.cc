#include "pimopt/backends/pim/pim_backend.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstring>

#include "pimopt/algorithms/algorithm.h"
#include "pimopt/collectives/worker_vectors.h"
#include "pimopt/core/error.h"
#include "pimopt/core/file_util.h"
#include "pimopt/core/thread_pool.h"
#include "pimopt/pim/encoding_cost.h"
#include "pimopt/pim/host_model.h"
#include "pimopt/pim/interconnect.h"
#include "pimopt/pim/pipelined_reduction.h"

namespace pimopt {

using pimbackend::kNoRow;
using pimbackend::LinearKernelArgs;

namespace {
using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
constexpr size_t kReduceBlock = 4096;  // coordinates per host-reduction task
// The kernel updates only touched coordinates when a step has fewer non-zeros than the model has coordinates divided
// by this (LocalSolve without decay; docs/pim-backend.md "Sparse local steps").
constexpr uint64_t kSparseUpdateRatio = 1;

// v / divisor rounded toward zero, as C++'s '/': by shifts when the divisor is a power of two (DPU counts usually
// are), which the host's per-coordinate loops would otherwise spend a 64-bit division on.
class DivideTowardZero {
 public:
  explicit DivideTowardZero(int64_t divisor) : divisor_(divisor) {
    if (divisor > 0 && (divisor & (divisor - 1)) == 0) shift_ = std::countr_zero(static_cast<uint64_t>(divisor));
  }
  int64_t operator()(int64_t v) const {
    if (shift_ < 0) return v / divisor_;
    const int64_t bias = (v >> 63) & ((int64_t{1} << shift_) - 1);  // negative: round toward zero
    return (v + bias) >> shift_;
  }

 private:
  int64_t divisor_;
  int shift_ = -1;
};
}  // namespace

PimBackend::PimBackend(ThreadPool& pool, PimBackendOptions options) : pool_(pool), options_(std::move(options)) {}

PimBackend::~PimBackend() = default;

double PimBackend::HostSecondsSince(Clock::time_point t0, double comm_s0) const {
  return Since(t0) - (run_.comm->stats().seconds - comm_s0);
}

template <typename T>
std::vector<int64_t> PimBackend::SumOverAllDpus(size_t total, const std::vector<std::vector<T>>& vectors,
                                                const std::vector<std::vector<int32_t>>* more) {
  std::vector<int64_t> sums(total, 0);
  // Each task owns a block of coordinates and streams every DPU's slice of it (contiguous, vectorizable): the loop
  // the modeled host describes (pim/host_model.h). Integer sums: exact in any order.
  pool_.ParallelFor((total + kReduceBlock - 1) / kReduceBlock, [&](size_t b) {
    const size_t begin = b * kReduceBlock, end = std::min(total, (b + 1) * kReduceBlock);
    int64_t* out = sums.data();
    for (uint32_t k = 0; k < shards_.dpus; ++k) {
      const T* in = vectors[k].data();
      for (size_t j = begin; j < end; ++j) out[j] += in[j];
    }
    if (more) {
      for (uint32_t k = 0; k < shards_.dpus; ++k) {
        const int32_t* in = (*more)[k].data();
        for (size_t j = begin; j < end; ++j) out[j] += in[j];
      }
    }
  });
  run_.comm->AllreduceSum(sums);
  return sums;
}

void PimBackend::PushArgs(const std::vector<LinearKernelArgs>& args) {
  for (uint32_t k = 0; k < shards_.dpus; ++k) {
    machine_->PrepareXfer(k, const_cast<LinearKernelArgs*>(&args[k]), sizeof(LinearKernelArgs));
  }
  Push(Activity::kTraining, TransferKind::kPushArgs, pimbackend::kArgsSymbol, 0, sizeof(LinearKernelArgs));
}

void PimBackend::PushRowLists(const std::vector<std::vector<uint32_t>>& lists, uint32_t entries) {
  const uint64_t bytes = (uint64_t{entries} + 1) / 2 * 2 * 4;
  PIMOPT_CHECK(bytes / 4 <= layout_.max_list_entries + 1, "row list larger than its MRAM region");
  for (uint32_t k = 0; k < shards_.dpus; ++k) {
    PIMOPT_CHECK(lists[k].size() * 4 >= bytes);
    machine_->PrepareXfer(k, const_cast<uint32_t*>(lists[k].data()), lists[k].size() * 4);
  }
  Push(Activity::kTraining, TransferKind::kPushRows, pim::kMramHeapSymbol, layout_.list_offset, bytes);
}

void PimBackend::BroadcastModel(const std::vector<int32_t>& model) {
  std::vector<int32_t> padded(layout_.n_pad + 8, 0);
  std::copy(model.begin(), model.end(), padded.begin());
  if (held_.global_model && &model == &models_.global) {
    // After an all-reduce over links every DPU holds the model: this push only carries it in the emulator.
    held_.global_model = false;
    Broadcast(Activity::kLinkExchange, TransferKind::kBroadcastModel, layout_.w_offset, padded.data(),
              layout_.model_bytes());
    return;
  }
  if (options_.artifact_kernel) {  // PIM-Opt pushes the model to every DPU with a parallel push, not a broadcast
    for (uint32_t k = 0; k < shards_.dpus; ++k) machine_->PrepareXfer(k, padded.data(), layout_.model_bytes());
    Push(Activity::kTraining, TransferKind::kPushModels, pim::kMramHeapSymbol, layout_.w_offset, layout_.model_bytes());
    return;
  }
  Broadcast(Activity::kTraining, TransferKind::kBroadcastModel, layout_.w_offset, padded.data(), layout_.model_bytes());
}

void PimBackend::PushModelVectors(TransferKind kind, uint64_t offset,
                                  const std::function<void(uint32_t dpu, int32_t* vector)>& fill, Activity activity) {
  std::vector<std::vector<int32_t>>& vectors = Staged(staging_.pushes);
  for (uint32_t k = 0; k < shards_.dpus; ++k) {
    std::fill(vectors[k].begin() + layout_.n_pad + 1, vectors[k].end(), 0);  // the padding after the bias
    fill(k, vectors[k].data());
    machine_->PrepareXfer(k, vectors[k].data(), layout_.model_bytes());
  }
  Push(activity, kind, pim::kMramHeapSymbol, offset, layout_.model_bytes());
}

void PimBackend::PullModels(Activity activity, uint64_t encoded_bytes) {
  std::vector<std::vector<int32_t>>& buffers = Staged(staging_.models);
  for (uint32_t k = 0; k < shards_.dpus; ++k) machine_->PrepareXfer(k, buffers[k].data(), layout_.model_bytes());
  Pull(activity, TransferKind::kPullModels, pim::kMramHeapSymbol, layout_.w_offset, layout_.model_bytes(),
       encoded_bytes);
  for (uint32_t k = 0; k < shards_.dpus; ++k)
    std::copy_n(buffers[k].begin(), layout_.n_pad + 1, models_.local[k].begin());
}

void PimBackend::Launch() {
  const pim::MachineLaunch launch = machine_->Launch();
  const pim::LaunchStats& s = launch.stats;
  ledger_.measured_times += launch.measured ? 1 : 0;
  ledger_.round_pulls.clear();
  ++ledger_.launches;
  const double f = profile_.dpu_frequency_hz;
  ledger_.kernel_s += s.kernel_s;
  ledger_.launch_s += s.overhead_s;
  ledger_.compute_s += s.slowest.issue / f;
  ledger_.dma_s += s.slowest.dma / f;
  ledger_.sync_s += s.slowest.sync / f;
  ledger_.dpu_energy_j += s.energy_j;
  ledger_.emulation_wall_s += s.host_wall_s;
  ledger_.mram_wram_bytes += s.mram_read_bytes + s.mram_write_bytes;
}

void PimBackend::GradientStep(std::span<const std::span<const uint32_t>> worker_rows, uint64_t batch_rows, double lr) {
  CheckBeforeStep();
  PIMOPT_CHECK(worker_rows.size() == shards_.dpus && batch_rows > 0);
  uint32_t slots = 2;
  for (auto rows : worker_rows) slots = std::max<uint32_t>(slots, static_cast<uint32_t>(rows.size()));
  slots = (slots + 1) / 2 * 2;
  std::vector<std::vector<uint32_t>> lists(shards_.dpus, std::vector<uint32_t>(slots, kNoRow));
  std::vector<LinearKernelArgs> args(shards_.dpus, BaseArgs());
  for (uint32_t k = 0; k < shards_.dpus; ++k) {
    for (size_t i = 0; i < worker_rows[k].size(); ++i) lists[k][i] = shards_.LocalRow(k, worker_rows[k][i]);
    args[k].mode = pimbackend::KernelMode::kGradient;
    args[k].steps = 1;
    args[k].slots_per_step = slots;
  }
  BroadcastModel(models_.global);
  PushRowLists(lists, slots);
  PushArgs(args);
  Launch();
  std::vector<std::vector<int64_t>>& grads = Staged(staging_.gradients);
  const bool narrow = options_.artifact_kernel && !layout_.sparse;  // PIM-Opt: int32 dense gradients (Q.24)
  // Over links: a ring all-reduce of the gradients as 64-bit partial sums, after which every DPU applies the same
  // step to its copy of the model; the host's pull, sum and next broadcast only carry it in the emulator.
  // --sync-path software: a software all-reduce of the gradients, after which every DPU applies the step as over links.
  const SyncRoute route = Route(pim::ModelAllReduce(profile_, run_.part.total_workers, 2 * layout_.model_bytes()),
                                "the gradient sum of GA-SGD or MB-SGD (an all-reduce)");
  // --sync-format auto: the gradient's touched coordinates as (index, value) pairs when smaller (not with PIM-Opt's
  // narrowed dense gradients, nor off the host).
  const bool compact = options_.sync_format == PimBackendOptions::SyncFormat::kAuto;
  const uint64_t pairs = compact && !narrow && route.host() ? MostTouchedPairs(worker_rows) : 0;
  const bool compacted = pairs > 0 && CompactedBytes(pairs) < layout_.gradient_bytes();
  // Compacted: the DPUs encode, then the machine pulls the pairs (the emulator copies the dense gradients).
  const Activity activity = route.activity();
  const uint64_t encoded_bytes = compacted ? CompactedBytes(pairs) : 0;
  if (compacted) RecordEncoding(pim::CompactionCycles(profile_, pairs, encoded_bytes));
  if (narrow) {
    std::vector<std::vector<int32_t>>& narrowed = Staged(staging_.narrow_gradients);
    for (uint32_t k = 0; k < shards_.dpus; ++k) machine_->PrepareXfer(k, narrowed[k].data(), layout_.model_bytes());
    Pull(activity, TransferKind::kPullGradients, pim::kMramHeapSymbol, layout_.v_offset,
         layout_.model_bytes());
    pool_.ParallelFor(shards_.dpus, [&](size_t k) {
      for (size_t j = 0; j < narrowed[k].size(); ++j) grads[k][j] = int64_t{narrowed[k][j]} << fixed::kFeatureFracBits;
    });
  } else {
    for (uint32_t k = 0; k < shards_.dpus; ++k) machine_->PrepareXfer(k, grads[k].data(), layout_.gradient_bytes());
    Pull(activity, TransferKind::kPullGradients, pim::kMramHeapSymbol, layout_.g_offset,
         layout_.gradient_bytes(), encoded_bytes);
  }
  // Host: exact 64-bit sums over the DPUs (and over processes), then the fixed-point step.
  const auto t0 = Clock::now();
  const double comm_s0 = run_.comm->stats().seconds;
  const uint64_t scale = fixed::ToScale(lr / static_cast<double>(batch_rows), "--lr");
  const uint64_t decay = fixed::ToScale(lr * run_.config.objective.l2, "--reg");
  const size_t total = layout_.n_pad + 1;
  std::vector<fixed::Saturation> sat((total + kReduceBlock - 1) / kReduceBlock);
  const std::vector<int64_t> sums = SumOverAllDpus(total, grads);
  pool_.ParallelFor(sat.size(), [&](size_t b) {
    for (size_t j = b * kReduceBlock; j < std::min(total, (b + 1) * kReduceBlock); ++j) {
      const int64_t g = sums[j];
      const int64_t decay_base = j < layout_.n_pad ? models_.global[j] : 0;  // no L2 on the bias
      models_.global[j] =
          fixed::SaturateModel(fixed::SgdUpdate(models_.global[j], g, scale, decay_base, decay), sat[b]);
    }
  });
  for (const auto& s : sat) models_.saturation.events += s.events;
  if (!run_.config.objective.fit_bias) models_.global[layout_.n_pad] = 0;
  if (!route.host()) held_.global_model = true;  // every DPU holds the new model: the next push of it is the emulator's
  // On the host, compacted: the pairs summed into a zeroed vector (index, int64 value: 12 bytes read per pair, the
  // sum read and written), then the step over every coordinate (read the sum and the model, write the model, zero
  // the sum); dense: int64 gradients summed, and per coordinate the same step.
  const Ledger::HostWork host =
      compacted ? Ledger::HostWork{.vectors_per_dpu = 1,
                                   .bytes_per_element = 12,
                                   .elements = pairs,
                                   .update_bytes_per_element = 24,
                                   .model_elements = total}
                : Ledger::HostWork{.vectors_per_dpu = 1,
                                   .bytes_per_element = narrow ? 4u : 8u,
                                   .elements = total,
                                   .update_bytes_per_element = 24};
  RecordSync(route,
             {.link = {std::nullopt, 2 * layout_.model_bytes()},
              .collective = {pim::Collective::kAllReduce, narrow ? layout_.model_bytes() : layout_.gradient_bytes(),
                             narrow ? 4u : 8u},
              .host = host},
             t0, comm_s0);
}

std::vector<std::vector<uint32_t>> PimBackend::StepRowLists(const LocalSolveRequest& req, uint32_t slots) const {
  PIMOPT_CHECK(req.plan && req.plan->num_workers() == static_cast<int>(shards_.dpus));
  const uint64_t entries = req.num_steps * slots;
  if (entries > layout_.max_list_entries) {
    throw InternalError(
        StrCat("row list of ", entries, " entries exceeds the MRAM region of ", layout_.max_list_entries));
  }
  std::vector<std::vector<uint32_t>> lists(shards_.dpus, std::vector<uint32_t>(entries + 2, kNoRow));
  for (uint32_t k = 0; k < shards_.dpus; ++k) {
    for (uint64_t s = 0; s < req.num_steps; ++s) {
      const auto rows = req.plan->LocalBatch(static_cast<int>(k), req.first_step + s);
      PIMOPT_CHECK(rows.size() <= slots, "a step's rows exceed its slots");
      for (size_t i = 0; i < rows.size(); ++i) lists[k][s * slots + i] = shards_.LocalRow(k, rows[i]);
    }
  }
  return lists;
}

void PimBackend::LocalSolve(const LocalSolveRequest& req) {
  const bool proximal = req.solver == LocalSolver::kProximalSgd;
  PIMOPT_CHECK(!proximal || !models_.offset.empty(), "proximal steps need worker offsets (AlgorithmTraits)");
  CheckBeforeStep();
  if (req.solver == LocalSolver::kDualCoordinateAscent) {
    if (req.lanes > 1) {
      throw ConfigError("--dual-lanes", "the pim backend's DPUs each run their rows in one lane: use --backend cpu");
    }
    DualAscent(req);
    return;
  }
  const uint32_t slots = static_cast<uint32_t>((run_.config.batch + 1) / 2 * 2);
  const std::vector<std::vector<uint32_t>> lists = StepRowLists(req, slots);
  const uint64_t entries = req.num_steps * slots;
  std::vector<LinearKernelArgs> args(shards_.dpus, BaseArgs());
  for (uint32_t k = 0; k < shards_.dpus; ++k) {
    args[k].mode = proximal ? pimbackend::KernelMode::kProximalSgd : pimbackend::KernelMode::kLocalSgd;
    args[k].steps = static_cast<uint32_t>(req.num_steps);
    args[k].slots_per_step = slots;
    const double weight =
        proximal ? static_cast<double>(run_.part.total_workers) * shards_.rows[k] / run_.part.total_rows : 1.0;
    args[k].lr_weight_q32 = fixed::ToScale(req.lr * weight, "--lr");
    args[k].decay_q32 = fixed::ToScale(req.lr * (proximal ? req.prox : run_.config.objective.l2), "--lr");
    if (layout_.sparse && !options_.artifact_kernel && !proximal && args[k].decay_q32 == 0) {
      // Without decay only the touched coordinates move: the kernel updates those instead of sweeping the model
      // where that is cheaper (the same model). Measured on the pim-opt profile, a sweep costs about 290 modeled
      // cycles per coordinate and the sparse update about as much per non-zero (the ownership scan of every
      // tasklet, four 8-byte DMAs and the step's multiply), so the sparse update wins below one non-zero per
      // coordinate in the step with the most.
      uint64_t most = 0;
      const CsrMatrix& m = run_.data->csr();
      for (uint64_t s = 0; s < req.num_steps; ++s) {
        uint64_t nonzeros = 0;
        for (uint32_t r : req.plan->LocalBatch(static_cast<int>(k), req.first_step + s)) {
          nonzeros += m.row_ptr[r + 1] - m.row_ptr[r];
        }
        most = std::max(most, nonzeros);
      }
      args[k].sparse_update = most * kSparseUpdateRatio < layout_.n_pad ? 1 : 0;
    }
  }
  if (options_.sync_format == PimBackendOptions::SyncFormat::kAuto && req.start_from_global && !proximal &&
      !(run_.config.objective.l2 > 0)) {
    // MA-SGD with --reg 0: a DPU's model moves only where its rows have non-zeros (and the bias) until the average.
    std::vector<std::vector<uint32_t>> rows_of(shards_.dpus);
    for (uint32_t k = 0; k < shards_.dpus; ++k) {
      for (uint64_t st = 0; st < req.num_steps; ++st) {
        const auto rows = req.plan->LocalBatch(static_cast<int>(k), req.first_step + st);
        for (uint32_t r : rows) rows_of[k].push_back(r);
      }
    }
    std::vector<std::span<const uint32_t>> spans(rows_of.begin(), rows_of.end());
    held_.model_delta_pairs = MostTouchedPairs(spans);
  } else {
    held_.model_delta_pairs = 0;
  }
  if (req.start_from_global) {
    BroadcastModel(models_.global);
  } else if (proximal && options_.artifact_kernel) {
    // PIM-Opt's proximal rounds (its ADMM) push every DPU its own x_k back each round (K distinct buffers; the DPU
    // already holds it).
    PushModelVectors(TransferKind::kPushModels, layout_.w_offset, [&](uint32_t k, int32_t* model) {
      std::copy(models_.local[k].begin(), models_.local[k].end(), model);
    });
  }
  if (proximal) {
    // After a consensus over links every DPU computed its own target: this push only carries it in the emulator.
    PushModelVectors(
        TransferKind::kPushTargets, layout_.v_offset,
        [&](uint32_t k, int32_t* target) {
          for (size_t j = 0; j <= layout_.n_pad; ++j) {
            target[j] = fixed::SaturateModel(int64_t{models_.global[j]} - models_.offset[k][j],
                                             models_.saturation);  // global - o_k
          }
        },
        held_.targets ? Activity::kLinkExchange : Activity::kTraining);
  }
  PushRowLists(lists, static_cast<uint32_t>(entries));
  PushArgs(args);
  Launch();
}

void PimBackend::MixLocalModels(const Topology& topology) {
  // Today's hardware has no DPU-to-DPU path: the host pulls every x_k, mixes, and pushes each DPU its new x_k.
  const uint32_t all_dpus = static_cast<uint32_t>(run_.part.total_workers);
  PIMOPT_CHECK(topology.workers() == all_dpus, "MixLocalModels: the run's DPUs");
  // With links covering every edge of the topology the models move DPU to DPU: modeled by the link model, the
  // emulator's pull and push (which carry the bytes) not counted as the machine's transfers.
  // --sync-path software: the host reads every model directly, mixes them in registers and writes each DPU its own:
  // the bytes of an all-to-all of the models.
  const SyncRoute route =
      Route(pim::ModelNeighbourExchange(profile_, all_dpus, topology.EdgeList(), layout_.model_bytes()),
            "the gossip's topology");
  const Activity activity = route.activity();
  PullModels(activity);
  const auto t0 = Clock::now();
  const double comm_s0 = run_.comm->stats().seconds;
  const size_t total = layout_.n_pad + 1;
  // Every DPU's model in global order: this process's, or (under MPI) every process's gathered.
  const AllWorkerVectors<int32_t> model_of(*run_.comm, models_.local, total, run_.part.first_worker, all_dpus);
  const size_t blocks = (total + kReduceBlock - 1) / kReduceBlock;
  std::vector<std::vector<int32_t>> mixed(shards_.dpus, std::vector<int32_t>(total));
  std::vector<fixed::Saturation> sat(blocks);
  pool_.ParallelFor(blocks, [&](size_t b) {
    const size_t begin = b * kReduceBlock, end = std::min(total, (b + 1) * kReduceBlock);
    for (uint32_t k = 0; k < shards_.dpus; ++k) {
      const MixingRow& row = topology.row(static_cast<uint32_t>(run_.part.first_worker) + k);
      for (size_t j = begin; j < end; ++j) {
        double s = 0;
        for (size_t e = 0; e < row.neighbours.size(); ++e) s += row.weights[e] * model_of(row.neighbours[e])[j];
        mixed[k][j] = fixed::SaturateModel(static_cast<int64_t>(std::llround(s)), sat[b]);
      }
    }
  });
  for (const fixed::Saturation& s : sat) models_.saturation.events += s.events;
  models_.local.swap(mixed);
  // Over links the DPUs mix on their own (no host work); on the host every DPU's neighbours' models are read and its
  // new model written.
  RecordSync(route,
             {.link = {topology.kind(), layout_.model_bytes()},
              .collective = {pim::Collective::kAllToAll, layout_.model_bytes(), 4},
              .host = {.vectors_per_dpu = topology.max_degree() + 1,
                       .bytes_per_element = 4,
                       .elements = total,
                       .update_bytes_per_element = 8}},
             t0, comm_s0);
  PushModelVectors(
      TransferKind::kPushModels, layout_.w_offset,
      [&](uint32_t k, int32_t* model) { std::copy(models_.local[k].begin(), models_.local[k].end(), model); },
      activity);
}

void PimBackend::AverageLocalModels() {
  // Over links: an all-reduce of the DPUs' models as 64-bit partial sums (int32 models would overflow; quantized
  // deltas, --sync-format int16/int8, as int32 ones), after which every DPU holds the average; the host's pull, sum
  // and later push only carry it in the emulator.
  const int bits = QuantizedBits();
  const uint64_t allreduce_bytes = bits > 0 ? layout_.model_bytes() : 2 * layout_.model_bytes();
  // --sync-path software: a software all-reduce (the host sums the int32 models, or the quantized deltas, in 64-bit
  // lanes of its registers and writes the mean to every DPU).
  const SyncRoute route =
      Route(pim::ModelAllReduce(profile_, run_.part.total_workers, allreduce_bytes), "model averaging (an all-reduce)");
  const uint64_t pairs = held_.model_delta_pairs;
  held_.model_delta_pairs = 0;
  // --sync-format auto: each DPU sends x_k - global at the coordinates it touched; the host adds them to K global
  // (exact: the same sums as the whole models').
  const bool compacted = route.host() && bits == 0 && pairs > 0 && CompactedBytes(pairs) < layout_.model_bytes();
  // Quantized or compacted: the DPUs encode, then the machine pulls the encoding (over links or by software
  // collectives the quantized deltas travel between DPUs; the emulator's dense pull carries them).
  uint64_t encoded_bytes = 0;
  if (bits > 0) {
    RecordEncoding(QuantizationCycles(bits));
    if (route.host()) encoded_bytes = QuantizedBytes(bits);
  } else if (compacted) {
    encoded_bytes = CompactedBytes(pairs);
    RecordEncoding(pim::CompactionCycles(profile_, pairs, encoded_bytes));
  }
  PullModels(route.activity(), encoded_bytes);
  if (bits > 0) QuantizeModelDeltas(bits);
  const auto t0 = Clock::now();
  const double comm_s0 = run_.comm->stats().seconds;
  const size_t total = layout_.n_pad + 1;
  const size_t blocks = (total + kReduceBlock - 1) / kReduceBlock;
  const std::vector<int64_t> sums = SumOverAllDpus(total, models_.local);
  const DivideTowardZero mean(run_.part.total_workers);
  pool_.ParallelFor(blocks, [&](size_t b) {
    for (size_t j = b * kReduceBlock; j < std::min(total, (b + 1) * kReduceBlock); ++j) {
      models_.global[j] = static_cast<int32_t>(mean(sums[j]));
    }
  });
  if (!route.host()) held_.global_model = true;  // every DPU holds the new model: the next push of it is the emulator's
  // On the host: K quantized vectors summed (bits / 8 bytes each per coordinate), per coordinate the sum read and
  // the model written; compacted, the pairs added into K global at the touched coordinates (8 bytes read per pair,
  // the sum read and written), then the new model at those coordinates (each DPU's touched set at most: `pairs` per
  // DPU bounds the union); dense, int32 models summed, per coordinate the sum read, the model written, the sum zeroed.
  const uint32_t quantized_bytes = static_cast<uint32_t>(std::max(1, bits / 8));
  const Ledger::HostWork host =
      bits > 0   ? Ledger::HostWork{.vectors_per_dpu = 1,
                                    .bytes_per_element = quantized_bytes,
                                    .elements = total,
                                    .update_bytes_per_element = 20}
      : compacted ? Ledger::HostWork{.vectors_per_dpu = 1,
                                     .bytes_per_element = 8,
                                     .elements = pairs,
                                     .update_bytes_per_element = 20}
                  : Ledger::HostWork{.vectors_per_dpu = 1,
                                     .bytes_per_element = 4,
                                     .elements = total,
                                     .update_bytes_per_element = 20};
  RecordSync(route,
             {.link = {std::nullopt, allreduce_bytes},
              .collective = {pim::Collective::kAllReduce, bits > 0 ? QuantizedBytes(bits) : layout_.model_bytes(),
                             bits > 0 ? quantized_bytes : 4u},
              .host = host},
             t0, comm_s0);
}

ConsensusNorms PimBackend::Consensus(const ConsensusRule& rule) {
  PIMOPT_CHECK(!models_.offset.empty(), "Consensus needs worker offsets (AlgorithmTraits)");
  // Over links: a ring all-reduce of x_k + o_k as 64-bit partial sums and one of the norms' three squared sums;
  // every DPU then computes z, its o_k and its next center z - o_k itself (the host's pull and push of the centers
  // only carry them in the emulator).
  // --sync-path software: a software all-reduce of x_k and o_k (the host reads both, writes z to every DPU, and each
  // DPU computes its o_k and its next center itself, as over links) and one of the three squared sums.
  const SyncRoute route = Route(pim::ModelAllReduce(profile_, run_.part.total_workers, 2 * layout_.model_bytes()),
                                "a consensus (an all-reduce)");
  held_.targets = !route.host();
  PullModels(route.activity());
  const auto t0 = Clock::now();
  const double comm_s0 = run_.comm->stats().seconds;
  const DivideTowardZero mean(run_.part.total_workers);
  const size_t total = layout_.n_pad + 1, weights = layout_.n_pad;
  const size_t blocks = (total + kReduceBlock - 1) / kReduceBlock;
  std::vector<double> primal_parts(blocks, 0.0), change_parts(blocks, 0.0), x_parts(blocks, 0.0),
      z_parts(blocks, 0.0), o_parts(blocks, 0.0);
  std::vector<fixed::Saturation> sat(blocks);
  const std::vector<int64_t> sums =
      SumOverAllDpus(total, models_.local, &models_.offset);  // sum_k x_k + sum_k o_k (exact)
  pool_.ParallelFor(blocks, [&](size_t blk) {
    const size_t begin = blk * kReduceBlock, end = std::min(total, (blk + 1) * kReduceBlock);
    // The block's means, then the rule's z for them (weights, and the bias in the last block).
    std::vector<int64_t> a(end - begin), z(end - begin);
    for (size_t j = begin; j < end; ++j) a[j - begin] = mean(sums[j]);
    const size_t weights_end = std::min(end, weights);
    if (weights_end > begin) {
      rule.Apply(std::span<const int64_t>(a.data(), weights_end - begin), std::span<int64_t>(z.data(), weights_end - begin),
                 false);
    }
    if (end > weights) {
      rule.Apply(std::span<const int64_t>(&a[weights - begin], 1), std::span<int64_t>(&z[weights - begin], 1), true);
    }
    std::vector<int32_t> z_block(end - begin);
    double change = 0, z_squares = 0;  // locals: z_parts' neighbours are other threads' blocks (one cache line)
    for (size_t j = begin; j < end; ++j) {
      const int32_t z32 = fixed::SaturateModel(z[j - begin], sat[blk]);
      const double dz = fixed::FromModel(int64_t{z32} - models_.global[j]);
      change += dz * dz;
      z_squares += fixed::FromModel(z32) * fixed::FromModel(z32);
      z_block[j - begin] = z32;
      models_.global[j] = z32;
    }
    z_parts[blk] = z_squares;
    // Each DPU's block of x_k and o_k streamed once: r = x_k - z, o_k += r; the squares in units of the model's
    // last bit, scaled once at the end.
    double primal = 0, x_squares = 0, o_squares = 0;
    for (uint32_t k = 0; k < shards_.dpus; ++k) {
      const int32_t* x = models_.local[k].data() + begin;
      int32_t* o = models_.offset[k].data() + begin;
      double squares = 0;
      for (size_t i = 0; i < z_block.size(); ++i) {
        const int64_t r = int64_t{x[i]} - z_block[i];
        squares += static_cast<double>(r) * static_cast<double>(r);
        o[i] = fixed::SaturateModel(o[i] + r, sat[blk]);
        x_squares += static_cast<double>(x[i]) * x[i];
        o_squares += static_cast<double>(o[i]) * o[i];
      }
      primal += squares;
    }
    const double unit_sq = fixed::FromModel(1) * fixed::FromModel(1);
    primal_parts[blk] = primal * unit_sq;
    x_parts[blk] = x_squares * unit_sq;
    o_parts[blk] = o_squares * unit_sq;
    change_parts[blk] = change;
  });
  double primal = 0, change = 0, x_sq = 0, z_sq = 0, o_sq = 0;  // block order: deterministic
  for (size_t blk = 0; blk < blocks; ++blk) {
    primal += primal_parts[blk];
    change += change_parts[blk];
    x_sq += x_parts[blk];
    z_sq += z_parts[blk];
    o_sq += o_parts[blk];
    models_.saturation.events += sat[blk].events;
  }
  // On the host x_k and o_k are summed, then every o_k updated from x_k (read both, write o_k: 12 bytes) besides z.
  RecordSync(route,
             {.link = {std::nullopt, 2 * layout_.model_bytes()},
              .collective = {pim::Collective::kAllReduce, 2 * layout_.model_bytes(), 4},
              .host = {.vectors_per_dpu = 2,
                       .bytes_per_element = 4,
                       .elements = total,
                       .updates_per_dpu = 1,
                       .update_bytes_per_element = 12}},
             t0, comm_s0);
  // Off the host the three squared sums over workers (doubles) travel the same way, as part of this synchronization.
  if (route.path == SyncRoute::Path::kLinks) {
    const std::optional<pim::LinkExchangeTime> norms =
        pim::ModelAllReduce(profile_, run_.part.total_workers, kConsensusNormBytes);
    PIMOPT_CHECK(norms.has_value());
    RecordLinkWork(*norms, {std::nullopt, kConsensusNormBytes}, /*sync=*/false);
  } else if (route.path == SyncRoute::Path::kSoftware) {
    RecordCollective({pim::Collective::kAllReduce, kConsensusNormBytes, 8}, /*sync=*/false);
  }
  // This process's DPUs' shares, summed over processes; every process holds the whole global model.
  return {.local_minus_global_sq = run_.comm->SumInRankOrder(primal),
          .local_sq = run_.comm->SumInRankOrder(x_sq),
          .global_sq = z_sq,
          .global_change_sq = change,
          .offset_sq = run_.comm->SumInRankOrder(o_sq)};
}

void PimBackend::ScaleOffsets(double factor) {
  // The offsets live on the host (a DPU receives its center global - o_k), or on the DPUs after a consensus over
  // links; rounded to nearest, saturated like every update.
  const auto t0 = Clock::now();
  const double comm_s0 = run_.comm->stats().seconds;
  const size_t total = layout_.n_pad + 1;
  const size_t blocks = (total + kReduceBlock - 1) / kReduceBlock;
  std::vector<fixed::Saturation> sat(blocks);
  pool_.ParallelFor(blocks, [&](size_t blk) {
    const size_t begin = blk * kReduceBlock, end = std::min(total, (blk + 1) * kReduceBlock);
    for (uint32_t k = 0; k < shards_.dpus; ++k) {
      int32_t* o = models_.offset[k].data();
      for (size_t j = begin; j < end; ++j) {
        o[j] = fixed::SaturateModel(static_cast<int64_t>(std::llround(o[j] * factor)), sat[blk]);
      }
    }
  });
  for (const fixed::Saturation& s : sat) models_.saturation.events += s.events;
  // After a consensus over links every DPU holds and scales its own o_k (like its update, not charged).
  if (held_.targets) return;
  // Host work without a synchronization: every o_k read and written once (8 bytes per element).
  const Ledger::HostWork work{.vectors_per_dpu = 0,
                              .bytes_per_element = 4,
                              .elements = total,
                              .updates_per_dpu = 1,
                              .update_bytes_per_element = 8};
  ledger_.host_reduction_s += HostSecondsSince(t0, comm_s0);
  ledger_.modeled_host_reduction_s += ModelHostSeconds(work, run_.part.total_workers);
}

}  // namespace pimopt
