// P ranks as threads of one process: the collectives of Communicator without mpirun, so that the collective logic
// (partitioned training, ordered folds, gathers, checkpoints) has unit tests (XGBoost tests its collectives the
// same way, with an in-memory communicator).
//
// Every collective is a rendezvous of all P ranks on a shared hub. OrderedSum folds in rank order: rank r waits
// until ranks 0..r-1 have folded their contributions into the shared accumulator, folds its own in chunks of
// kChunkFloats (as the MPI chain does), and every rank copies the result. Integer sums, minima, maxima and the
// rank-order double sum read every rank's posted values in rank order, so results are exactly those of the MPI
// communicator. A rank that throws aborts the group: ranks waiting in a collective throw GroupAborted, and Run
// rethrows the first rank's original error.
//
// Bytes counted (CommStats::sent_bytes) are those a rank contributes to each collective (its vector, or its part of
// a gather; the broadcast root its buffer; OrderedSum the accumulator it passes on and, for the last rank, the
// result): a transport-independent measure, like the MPI communicator's.
#pragma once

#include <functional>
#include <memory>

#include "pimopt/collectives/communicator.h"
#include "pimopt/core/error.h"

namespace pimopt {

// Thrown in the other ranks of an InProcessGroup when one rank failed.
class GroupAborted : public Error {
 public:
  using Error::Error;
};

class InProcessGroup {
 public:
  static constexpr size_t kChunkFloats = 1024;
  explicit InProcessGroup(int ranks);
  ~InProcessGroup();
  InProcessGroup(const InProcessGroup&) = delete;
  InProcessGroup& operator=(const InProcessGroup&) = delete;

  int size() const;
  // Runs body(comm) on one thread per rank and waits for all of them; rethrows the first error a rank raised
  // itself (not a GroupAborted that it caused in the others).
  void Run(const std::function<void(Communicator& comm)>& body);

 private:
  struct Hub;
  class RankCommunicator;
  std::unique_ptr<Hub> hub_;
};

}  // namespace pimopt
