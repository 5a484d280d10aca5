// The collectives the processes of one training run use (how the run is split: partition.h).
//
// Implementations: LocalCommunicator (one process, below), InProcessGroup (P ranks as threads of one process, for
// tests: in_process_communicator.h) and MpiCommunicator (MPI ranks: mpi_communicator.h).
//
// Determinism across process counts: every reduction the backends make is either exact (integer sums) or an
// ordered left fold over workers in global worker order (OrderedSum), so P ranks x K workers give, bit for bit,
// the model of one process with P*K workers. OrderedSum is a pipelined chain: rank 0 folds its workers into the
// accumulator and passes it on in chunks, each rank continues the fold, and the last rank broadcasts the result.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "pimopt/collectives/partition.h"

namespace pimopt {

// Time and bytes of this process's collectives (wall clock of the calls; bytes this process sent and received).
struct CommStats {
  double seconds = 0;
  uint64_t sent_bytes = 0;
  uint64_t received_bytes = 0;
  uint64_t calls = 0;
};

// For Communicator implementations: counts one collective call and adds its wall time to `stats` when it ends.
class CollectiveTimer {
 public:
  explicit CollectiveTimer(CommStats& stats) : stats_(stats), start_(std::chrono::steady_clock::now()) {}
  ~CollectiveTimer() {
    stats_.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    ++stats_.calls;
  }
  CollectiveTimer(const CollectiveTimer&) = delete;
  CollectiveTimer& operator=(const CollectiveTimer&) = delete;

 private:
  CommStats& stats_;
  std::chrono::steady_clock::time_point start_;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;

  // Continues a left fold over all ranks in rank order: `fold_local(chunk, offset)` adds this rank's
  // contributions, in its worker order, to acc[offset, offset + chunk.size()) (elementwise, so chunks are
  // independent). The caller zero-fills acc on every rank; afterwards every rank holds the final acc.
  using FoldFn = std::function<void(std::span<float> chunk, size_t offset)>;
  virtual void OrderedSum(std::span<float> acc, const FoldFn& fold_local) = 0;
  // Elementwise sums (exact: integers).
  virtual void AllreduceSum(std::span<int64_t> values) = 0;
  // Elementwise min / max of floats (exact).
  virtual void AllreduceMin(std::span<float> values) = 0;
  virtual void AllreduceMax(std::span<float> values) = 0;
  // The sum of one double per rank, added in rank order (the same value on every rank).
  virtual double SumInRankOrder(double local) = 0;
  // Copies root's bytes to every rank; `bytes` must have the same size everywhere.
  virtual void Broadcast(std::span<std::byte> bytes, int root) = 0;
  // Root receives every rank's bytes concatenated in rank order (the sizes may differ); others get {}.
  virtual std::vector<std::byte> Gather(std::span<const std::byte> local, int root) = 0;
  virtual void Barrier() = 0;

  virtual CommStats stats() const = 0;

  // Helpers on top of the verbs.
  void BroadcastString(std::string& text, int root);
  template <typename T>
  void BroadcastValue(T& value, int root) {
    Broadcast(std::as_writable_bytes(std::span<T>(&value, 1)), root);
  }
  uint64_t SumU64(uint64_t local);
  // Every rank's `local` bytes, concatenated in rank order, on every rank.
  std::vector<std::byte> AllGather(std::span<const std::byte> local);
  // Runs `work` on `root` only; when it throws a pimopt Error every rank throws: the root its own exception, the
  // others an InputError with the same message. Collective: every rank calls it.
  void RunOnRoot(const std::function<void()>& work, int root = 0);
};

// The communicator of a single process (P = 1): every collective is a local no-op or copy.
class LocalCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void OrderedSum(std::span<float> acc, const FoldFn& fold_local) override { fold_local(acc, 0); }
  void AllreduceSum(std::span<int64_t>) override {}
  void AllreduceMin(std::span<float>) override {}
  void AllreduceMax(std::span<float>) override {}
  double SumInRankOrder(double local) override { return local; }
  void Broadcast(std::span<std::byte>, int) override {}
  std::vector<std::byte> Gather(std::span<const std::byte> local, int) override { return {local.begin(), local.end()}; }
  void Barrier() override {}
  CommStats stats() const override { return {}; }
};

// A process-wide LocalCommunicator for single-process callers.
Communicator& SingleProcess();

}  // namespace pimopt
