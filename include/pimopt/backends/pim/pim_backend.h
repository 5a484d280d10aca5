// The PIM backend: every worker is a DPU of the emulated UPMEM system (include/pimopt/pim), the host is the
// parameter server. Data is quantized (fixed_point.h) and pushed once, one contiguous shard per DPU; each step
// pushes the model (broadcast) and the row numbers of the step, launches the linear kernel (linear_kernel.h), and
// pulls gradients or models; the host reduces with 64-bit integer sums and keeps the workers' offsets o_k.
//
// Every phase is timed twice: modeled seconds of the PIM machine (CPU->DPU, DPU kernel split into compute / DMA /
// sync, DPU->CPU) and the real host time of the emulation and of the host reduction. Fixed-point saturation events
// are counted and reported.
//
// One file per job (src/backends/pim/): pim_options.cc (parameters, registration), pim_layout.cc (Setup: profile,
// DPUs, MRAM layout, quantized upload), pim_backend.cc (the verbs and their transfers), pim_sync_encoding.cc
// (--sync-format), pim_ledger.cc (what is accounted and the figures read from it), pim_checkpoint.cc (export,
// checkpoint state), pim_projection.cc (EpochProjector).
#pragma once

#include <array>
#include <chrono>
#include <map>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "pimopt/algorithms/backend.h"
#include "pimopt/backends/projection.h"
#include "pimopt/core/params.h"
#include "pimopt/backends/pim/linear_kernel.h"
#include "pimopt/fixed/fixed_point.h"
#include "pimopt/pim/collectives.h"
#include "pimopt/pim/energy.h"
#include "pimopt/pim/interconnect.h"
#include "pimopt/pim/pipelined_reduction.h"
#include "pimopt/pim/machine.h"
#include "pimopt/pim/native_program.h"
#include "pimopt/pim/system.h"

namespace pimopt {

class ThreadPool;

// The PIM backend's parameters, declared in PimParams() (the constructor applies their defaults).
struct PimBackendOptions {
  PimBackendOptions();
  std::string profile;
  std::string profile_overrides;  // "field=value,..." (pim::ApplyOverrides)
  uint32_t tasklets;
  bool sigmoid_float;  // LR: PIM-Opt's software-float sigmoid instead of the fixed-point table
  bool feature_split;  // dense data: PIM-Opt's tasklet split (features of each sample, 2 barriers/sample)
  bool measured_host;  // host reduction time: the seconds measured on the computer pimopt runs on, not the profile's
  bool artifact_kernel;  // PIM-Opt's kernel and transfers (--kernel pim-opt): implies the feature split and the
                         // software-float sigmoid
  // How synchronizations travel: kAuto uses what-if DPU links where the profile's links cover them (model averaging
  // by ring all-reduce, D-PSGD's gossip), kHost always the host, kLinks requires the links (ConfigError naming
  // --profile when they do not cover the run), kSoftware PID-Comm's software collectives on today's hardware
  // (pim/collectives.h): the same models, another time.
  enum class SyncPath { kAuto, kHost, kLinks, kSoftware };
  SyncPath sync_path;
  // --sync-format: kAuto: DPUs send the coordinates they touched as (index, value) pairs when smaller than the
  // dense vector (GA-SGD's gradients; MA-SGD's model deltas with no L2): modeled time and bytes only; kInt16, kInt8:
  // MA-SGD's model deltas quantized with error feedback (a different model: lossy).
  enum class SyncFormat { kDense, kAuto, kInt16, kInt8 };
  SyncFormat sync_format;
  // --transfers async: the host pulls a synchronization's vectors in chunks and reduces each chunk while the next
  // is on its way (modeled time only; pim/pipelined_reduction.h).
  bool async_transfers;
  pim::Scheduler scheduler;  // how the emulator runs the tasklets (never the results or the modeled times)
  // What runs on the DPUs: the linear kernel as a DPU program in C (pimopt_linear.c, charged by the DPU toolchain's
  // cost pass) or its port over the operand types; the same models either way.
  pim::KernelSource kernels;
  int host_threads = 0;  // not a parameter of its own: the run's host threads
  // Not a parameter: the PIM machine the backend runs on (machine.h); unset: the emulator
  // (pim::AllocateEmulatedMachine). A hardware machine, or a test's wrapper, plugs in here.
  std::function<std::unique_ptr<pim::PimMachine>(const pim::HardwareProfile& profile, uint32_t dpus,
                                                 const pim::EmulatedMachineOptions& options)>
      machine;

  // The hardware profile with its overrides; checks that the tasklets fit the profile and the linear kernel's
  // WRAM. Throws ConfigError naming --profile, --profile-set or --tasklets. Needs no data.
  pim::HardwareProfile ResolveProfile() const;
};
inline constexpr const char* kPimParamGroup = "PIM backend";
// The PIM backend's parameters: tasklets, profile, profile-set, kernel, sigmoid, tasklet-split, host-time (each only
// with --backend pim).
const ParamTable<PimBackendOptions>& PimParams();

class PimBackend final : public IBackend, public EpochProjector {
 public:
  PimBackend(ThreadPool& pool, PimBackendOptions options);
  ~PimBackend() override;

  std::string name() const override { return "pim"; }
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
  std::map<std::string, double> PhaseSeconds() const override;
  TrafficCounters Traffic() const override;
  std::map<std::string, double> Counters() override;  // reads the DPUs' saturation counters (diagnostics)
  std::string PrecisionLimits() override;              // the kernel's formats and the saturations (Counters)
  // The rows' duals, read from the DPUs' MRAM (a diagnostic transfer, not training time).
  std::vector<float> RowDuals() override;
  BackendState SaveState() override;  // pulls the local models from the DPUs (not counted in the phase times)
  void RestoreState(const BackendState& state) override;
  const EpochProjector* projector() const override { return this; }
  // Per-epoch modeled time of this run (`epochs` epochs done) projected to `target_dpus` x `target_rows_per_dpu`
  // (projection.h).
  EpochProjection Project(uint32_t target_dpus, uint64_t target_rows_per_dpu, int epochs) const override;

  // What a transfer served. Only training transfers are host <-> worker traffic; the others are reported apart.
  // kLinkExchange: transfers that carry, functionally, what a what-if DPU <-> DPU link or a software collective
  // moves on the modeled machine; their host time is not the machine's (Ledger::link_s or collective_s is).
  enum class Activity { kSetup, kTraining, kCheckpoint, kDiagnostics, kLinkExchange };
  static constexpr size_t kNumActivities = 5;
  enum class TransferKind { kData, kPushArgs, kPushRows, kBroadcastModel, kPushModels, kPushTargets, kPullModels, kPullGradients,
                            kCounters, kDuals };
  // A transfer's tag in the machine's log (pim/machine_log.h): what it served and what it moved.
  static uint32_t LogTag(Activity activity, TransferKind kind) {
    return static_cast<uint32_t>(activity) << 8 | static_cast<uint32_t>(kind);
  }
  static Activity LoggedActivity(uint32_t tag) { return static_cast<Activity>(tag >> 8); }
  static TransferKind LoggedKind(uint32_t tag) { return static_cast<TransferKind>(tag & 0xFF); }
  // Every transfer this process's DPUs made, as the machine logged it (the projections re-time its training ones).
  const pim::MachineLog& machine_log() const { return machine_->log(); }
  // Everything this backend accounts, in one place: each transfer, launch and host reduction is recorded once, when
  // it happens, under what it served; reports read these totals (never differences of the emulator's counters).
  struct Ledger {
    struct Transfers {
      double modeled_s = 0;
      uint64_t bytes = 0;  // over this process's DPUs
      uint64_t count = 0;
    };
    std::array<Transfers, kNumActivities> to_dpu, from_dpu;
    // Training: modeled seconds of the PIM machine and real host seconds (the transfers themselves, for
    // projections, are in the machine's log).
    double kernel_s = 0, compute_s = 0, dma_s = 0, sync_s = 0, launch_s = 0;
    double dpu_energy_j = 0;  // this process's DPUs' busy time at their active power
    double emulation_wall_s = 0;
    double host_reduction_s = 0;          // measured on the computer pimopt runs on (this process's share)
    double modeled_host_reduction_s = 0;  // the profile's host model, over all DPUs
    double link_s = 0;  // modeled DPU <-> DPU exchanges over what-if links
    // --sync-path software: the software collectives' modeled seconds (relocation kernels, direct transfers, host
    // threads), of them the transfers', and this process's share of their bytes over the channels.
    double collective_s = 0, collective_bus_s = 0;
    double collective_dpu_busy_s = 0;  // the relocation kernels, summed over this process's DPUs
    uint64_t collective_to_dpu_bytes = 0, collective_from_dpu_bytes = 0;
    double encoding_s = 0;  // of kernel_s: the DPUs' compaction or quantization before a pull (--sync-format)
    uint64_t link_bytes = 0;
    uint64_t launches = 0, syncs = 0;
    uint64_t mram_wram_bytes = 0;  // training launches' DMA, both directions, over this process's DPUs
    uint64_t measured_times = 0;   // transfers and launches whose time the machine measured (0 on the emulator)
    // What each synchronization asked of the host, per DPU of the whole run, and how often (for projections).
    struct HostWork {
      uint32_t vectors_per_dpu = 1;   // vectors summed per DPU (a consensus: x_k and o_k)
      uint32_t bytes_per_element = 4;
      uint64_t elements = 0;          // coordinates
      uint32_t updates_per_dpu = 0;   // per-DPU updates of every coordinate after the sums (a consensus: o_k)
      uint32_t update_bytes_per_element = 12;
      uint64_t model_elements = 0;    // coordinates of the final model update when not `elements` (compacted sums)
      auto operator<=>(const HostWork&) const = default;
    };
    std::map<HostWork, uint64_t> host_work;
    // What each exchange over what-if links was, and how often (for projections): a ring all-reduce (topology
    // nullopt) or a gossip step over a topology of the run's kind, of `bytes` per DPU.
    struct LinkWork {
      std::optional<TopologyKind> topology;
      uint64_t bytes = 0;
      auto operator<=>(const LinkWork&) const = default;
    };
    std::map<LinkWork, uint64_t> link_work;
    // Each software collective (over all DPUs of the run), and how often (for projections).
    struct CollectiveWork {
      pim::Collective collective = pim::Collective::kAllReduce;
      uint64_t bytes = 0;  // per DPU
      uint32_t element_bytes = 4;
      auto operator<=>(const CollectiveWork&) const = default;
    };
    std::map<CollectiveWork, uint64_t> collective_work;
    // --transfers async: the seconds the pipelined reductions saved, and each reduction's pulls and host work, and
    // how often (for projections).
    double overlap_saved_s = 0;
    std::map<std::pair<std::vector<pim::PullShape>, HostWork>, uint64_t> reductions;
    // The training pulls since the last launch (the pulls a reduction that follows them could overlap).
    std::vector<pim::PullShape> round_pulls;
  };
  const Ledger& ledger() const { return ledger_; }

 private:
  // The transfer verbs of the machine, recorded in the ledger (pushes and pulls use the prepared buffers).
  // `encoded_bytes` (not 0): the machine pulls the vectors encoded in that many bytes per DPU (PullEncoded).
  void Push(Activity activity, TransferKind kind, std::string_view symbol, uint64_t offset, uint64_t bytes_per_dpu);
  void Pull(Activity activity, TransferKind kind, std::string_view symbol, uint64_t offset, uint64_t bytes_per_dpu,
            uint64_t encoded_bytes = 0);
  void Broadcast(Activity activity, TransferKind kind, uint64_t offset, const void* source, uint64_t bytes);
  void Record(Activity activity, bool to_dpu, const pim::MachineTime& time, uint64_t bytes_per_dpu);
  void PushRowLists(const std::vector<std::vector<uint32_t>>& per_dpu_lists, uint32_t slots);
  void PushArgs(const std::vector<pimbackend::LinearKernelArgs>& args);
  void BroadcastModel(const std::vector<int32_t>& model);
  // Pushes one model-sized vector per DPU (n_pad + 8 int32, zero-padded, filled by `fill`) to MRAM at `offset`.
  void PushModelVectors(TransferKind kind, uint64_t offset,
                        const std::function<void(uint32_t dpu, int32_t* vector)>& fill,
                        Activity activity = Activity::kTraining);
  void PullModels(Activity activity = Activity::kTraining, uint64_t encoded_bytes = 0);
  // How a synchronization travels (--sync-path and the profile's what-if links): through the host (the DPUs' vectors
  // pulled, reduced and pushed back), over DPU links (`link`: their modeled exchange), or by software collectives
  // (over more than one DPU). Off the host the emulator still moves the bytes through the host, under
  // Activity::kLinkExchange: they are not the machine's transfers.
  struct SyncRoute {
    enum class Path { kHost, kLinks, kSoftware } path = Path::kHost;
    std::optional<pim::LinkExchangeTime> link;
    bool host() const { return path == Path::kHost; }
    Activity activity() const { return host() ? Activity::kTraining : Activity::kLinkExchange; }
  };
  // The route of an exchange whose link time is `covered` (nullopt: the profile's links do not cover it); with
  // --sync-path links and no cover, a ConfigError naming --profile (or --sync-path for one DPU), `what` naming it.
  SyncRoute Route(const std::optional<pim::LinkExchangeTime>& covered, const char* what) const;
  // What one synchronization is on each route, for the ledger (and the projections).
  struct SyncWork {
    Ledger::LinkWork link;
    Ledger::CollectiveWork collective;
    Ledger::HostWork host;
  };
  // The synchronization in the ledger by its route: the link exchange, the software collective, or the host's work
  // since `t0` (measured, and modeled for all DPUs of the run).
  void RecordSync(const SyncRoute& route, const SyncWork& work, std::chrono::steady_clock::time_point t0,
                  double comm_s0);
  // One exchange over what-if links in the ledger (time, this process's share of the bytes, the work for
  // projections); `sync`: it is a synchronization of the algorithm (counted in syncs).
  void RecordLinkWork(const pim::LinkExchangeTime& time, const Ledger::LinkWork& work, bool sync = true);
  // One software collective over all DPUs of the run in the ledger (`bytes` per DPU, rounded up to 8).
  void RecordCollective(const Ledger::CollectiveWork& work, bool sync = true);
  static constexpr uint64_t kConsensusNormBytes = 3 * sizeof(double);  // sums of ||x - z||^2, ||x||^2, ||o||^2
  void Launch();
  pimbackend::LinearKernelArgs BaseArgs() const;
  // Exact int64 sums over this process's DPUs and then over all processes of the first `total` coordinates of
  // vectors[k] (plus more[k], if given).
  template <typename T>
  std::vector<int64_t> SumOverAllDpus(size_t total, const std::vector<std::vector<T>>& vectors,
                                      const std::vector<std::vector<int32_t>>* more = nullptr);
  // Host reduction time since `t0` without the MPI time spent in it (reported by the coordinator).
  double HostSecondsSince(std::chrono::steady_clock::time_point t0, double comm_s0) const;
  // Records one synchronization's host work: measured seconds since `t0`, modeled seconds for all DPUs of the run.
  void RecordHostWork(const Ledger::HostWork& work, std::chrono::steady_clock::time_point t0, double comm_s0);
  // --sync-format auto: the most (index, value) pairs any DPU of the run sends for these rows (its distinct columns
  // and the bias); 0 when not countable. The pairs' bytes: 8 each (a 4-byte index, the value padded) and a count.
  uint64_t MostTouchedPairs(std::span<const std::span<const uint32_t>> worker_rows) const;
  static uint64_t CompactedBytes(uint64_t pairs) { return 8 * pairs + 8; }
  // The DPUs' encoding of the vectors an encoded pull then moves (compaction, quantization): `cycles` of kernel time.
  void RecordEncoding(double cycles);
  double ModelHostSeconds(const Ledger::HostWork& work, uint32_t dpus) const;
  static pim::HostReductionWork HostReduction(const Ledger::HostWork& work, uint32_t dpus);
  void PushDualRowParams(double sigma);
  void DualAscent(const LocalSolveRequest& request);
  // Each DPU's row list for the request's steps, `slots` entries per step (kNoRow after a step's rows).
  std::vector<std::vector<uint32_t>> StepRowLists(const LocalSolveRequest& request, uint32_t slots) const;
  uint64_t DualBytes() const;  // the duals region's bytes per DPU (the longest shard's, 8-aligned)
  // This process's DPUs' duals (Q.24), each DPU's shard in order, pulled or pushed under `activity`.
  std::vector<std::vector<int32_t>> PullDuals(Activity activity);
  void PushDuals(Activity activity, const std::vector<std::vector<int32_t>>& duals);
  int QuantizedBits() const;  // 16, 8, or 0 (no quantization)
  // MA-SGD's averaging with quantized deltas: replaces each pulled x_k by global + Q(x_k - global + e_k) and keeps
  // the new error.
  void QuantizeModelDeltas(int bits);
  double QuantizationCycles(int bits) const;  // the DPUs' encoding of their deltas
  uint64_t QuantizedBytes(int bits) const;  // a quantized vector and its step, per DPU

  // ---- State, by what it is.
  ThreadPool& pool_;
  PimBackendOptions options_;
  pim::HardwareProfile profile_;
  // The DPUs, reached only through the machine seam (pim/machine.h): the emulator here.
  std::unique_ptr<pim::PimMachine> machine_;
  // The run Setup was given.
  struct Run {
    const Dataset* data = nullptr;  // during training only (the caller's)
    uint64_t train_rows = 0;        // data's rows, for what is asked after training (Project)
    TrainConfig config;
    Partition part;
    Communicator* comm = &SingleProcess();
  } run_;
  // Which rows each of this process's DPUs holds: one contiguous shard each.
  struct Shards {
    uint32_t dpus = 0;  // this process's DPUs (Partition::local_workers); each process emulates its own
    uint32_t features = 0;
    std::vector<uint32_t> begin, rows;  // per DPU: its first row in the process's training set, its row count
    uint32_t LocalRow(uint32_t dpu, uint32_t global_row) const { return global_row - begin[dpu]; }
    uint32_t MaxRows() const;
  } shards_;
  // Where the kernel's regions lie in every DPU's MRAM (the same on each).
  pimbackend::LinearLayout layout_;
  // Dual ascent (AlgorithmTraits::row_duals): the MRAM regions of the duals (int32 Q.24 per row) and of the rows'
  // step parameters (DualRowParams), after the linear layout; the sigma' the parameters were pushed for (0: not
  // yet); per DPU, each row's QuantizedSquaredNorm (set up with the rows).
  struct DualRegions {
    uint64_t duals_offset = 0, row_params_offset = 0;
    double sigma = 0;
    std::vector<std::vector<double>> row_norms;
  } dual_;
  // The host's copies of the models (Q8.24, n_pad + 1 coordinates, the bias last) and what narrowing them saturated.
  struct HostModels {
    std::vector<int32_t> global;               // the host's model (a consensus: z)
    std::vector<std::vector<int32_t>> local;   // x_k as last pulled
    std::vector<std::vector<int32_t>> offset;  // o_k (with AlgorithmTraits::worker_offsets)
    // --sync-format int16 / int8 (MA-SGD): each DPU's quantization error, fed back into its next delta (Q8.24).
    std::vector<std::vector<int32_t>> delta_error;
    fixed::Saturation saturation;  // host-side narrowing
    double quantization_saturations = 0;
  } models_;
  // Host staging buffers of the transfers, one per DPU of n_pad + 8 elements, kept across steps: made per step
  // they cost a page fault per 4 KB each time (64 DPUs x 8 MB of gradients per GA-SGD step on 2^20 features).
  struct Staging {
    std::vector<std::vector<int64_t>> gradients;
    std::vector<std::vector<int32_t>> narrow_gradients, models, pushes;
    // `buffers`, made (zeroed) for `dpus` DPUs of `elements` elements unless they already are.
    template <typename T>
    static std::vector<std::vector<T>>& Sized(std::vector<std::vector<T>>& buffers, uint32_t dpus, size_t elements) {
      if (buffers.size() != dpus || (!buffers.empty() && buffers[0].size() != elements)) {
        buffers.assign(dpus, std::vector<T>(elements, 0));
      }
      return buffers;
    }
  } staging_;
  template <typename T>
  std::vector<std::vector<T>>& Staged(std::vector<std::vector<T>>& buffers) {
    return Staging::Sized(buffers, shards_.dpus, layout_.n_pad + 8);
  }
  // What the DPUs hold beyond their shards, from one verb to the next.
  struct Held {
    // An all-reduce off the host (links, software collectives) left every DPU the global model: the next push of it
    // is the emulator's, not the machine's.
    bool global_model = false;
    bool targets = false;            // the last consensus ran off the host: every DPU computed its center z - o_k
    uint64_t model_delta_pairs = 0;  // MA-SGD with --sync-format auto: the pairs of the last local steps (0: dense)
  } held_;
  Ledger ledger_;
};

}  // namespace pimopt
