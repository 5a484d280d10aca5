// pimopt's Communicator over MPI_COMM_WORLD (OpenMPI). It is not a backend: under mpirun each rank runs the cpu or
// pim backend on its workers and its rows, and the backends reduce through this communicator (see communicator.h
// for the determinism argument).
//
// Collectives and their cost (bytes counted are those this rank sends; `seconds` is the wall time inside the
// calls, so it includes waiting for slower ranks):
// - OrderedSum of n floats: a pipelined chain 0 -> 1 -> ... -> P-1 (each rank continues the fold on chunks of
//   c = clamp(n/P, 1024, 65536) floats as they arrive) and a pipelined chain back P-1 -> ... -> 0 with the
//   result. Every rank sends at most 2 * 4n bytes; time ~ 2 (P - 1 + n/c) (alpha + 4c beta) + the fold.
// - AllreduceSum (int64), AllreduceMin/Max (float): MPI_Allreduce; counted as the ring algorithm's
//   2 (P-1)/P * size bytes per rank (OpenMPI picks its own algorithm; that is the bandwidth lower bound).
// - Broadcast: MPI_Bcast, counted as size bytes per rank but the last of a chain ((P-1)/P * size on average).
// - Gather: MPI_Gatherv to the root; each non-root sends its part (exact).
// A rank that dies (signal, abort) ends the job: OpenMPI's default error handler is fatal and mpirun kills the
// other ranks and names the dead one; the CLI turns an exception on any rank into MPI_Abort with its message.
#pragma once

#include "pimopt/collectives/communicator.h"

namespace pimopt {

// Owns MPI_Init / MPI_Finalize for the process (one per process; MPI cannot be initialized twice).
class MpiSession {
 public:
  MpiSession(int* argc, char*** argv);
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
  // Ends every rank of the job with `code` (after this rank printed its message).
  [[noreturn]] static void Abort(int code);
};

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator();  // MPI_COMM_WORLD; MPI must be initialized
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void OrderedSum(std::span<float> acc, const FoldFn& fold_local) override;
  void AllreduceSum(std::span<int64_t> values) override;
  void AllreduceMin(std::span<float> values) override;
  void AllreduceMax(std::span<float> values) override;
  double SumInRankOrder(double local) override;
  void Broadcast(std::span<std::byte> bytes, int root) override;
  std::vector<std::byte> Gather(std::span<const std::byte> local, int root) override;
  void Barrier() override;
  CommStats stats() const override { return stats_; }

 private:
  void CountAllreduce(uint64_t bytes);
  int rank_ = 0;
  int size_ = 1;
  CommStats stats_;
};

}  // namespace pimopt
