#include "pimopt/collectives/mpi_communicator.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>

#include "pimopt/core/error.h"

namespace pimopt {
namespace {

// The ordered chain's message size: about n / P floats (so the pipeline has about P chunks in flight and its fill
// time (P - 1) * chunk / B stays near one vector's transfer time), between 4 KiB (per-message latency) and 256 KiB.
constexpr size_t kMinChainChunkFloats = 1024;
constexpr size_t kMaxChainChunkFloats = 64 * 1024;
constexpr uint64_t kMaxMessageBytes = uint64_t{1} << 30;  // MPI counts are int: split larger messages
constexpr int kForwardTag = 11, kBackwardTag = 12;

void Check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) {
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    MPI_Error_string(rc, text, &length);
    throw InternalError(StrCat("MPI ", what, " failed: ", std::string(text, length)));
  }
}

}  // namespace

MpiSession::MpiSession(int* argc, char*** argv) { Check(MPI_Init(argc, argv), "MPI_Init"); }

MpiSession::~MpiSession() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

void MpiSession::Abort(int code) {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);  // MPI_Abort does not return; this keeps [[noreturn]] honest
}

MpiCommunicator::MpiCommunicator() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  PIMOPT_CHECK(initialized, "MPI is not initialized");
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

void MpiCommunicator::CountAllreduce(uint64_t bytes) {
  stats_.sent_bytes += 2 * bytes * static_cast<uint64_t>(size_ - 1) / static_cast<uint64_t>(size_);
  stats_.received_bytes += 2 * bytes * static_cast<uint64_t>(size_ - 1) / static_cast<uint64_t>(size_);
}

void MpiCommunicator::OrderedSum(std::span<float> acc, const FoldFn& fold_local) {
  CollectiveTimer timer(stats_);
  const size_t n = acc.size();
  const size_t chunk_floats =
      std::clamp<size_t>(n / static_cast<size_t>(size_), kMinChainChunkFloats, kMaxChainChunkFloats);
  const size_t chunks = std::max<size_t>(1, (n + chunk_floats - 1) / chunk_floats);
  auto chunk = [&](size_t c) {
    const size_t begin = c * chunk_floats;
    return acc.subspan(begin, std::min(n, begin + chunk_floats) - begin);
  };
  // One pipelined pass along the chain: receive chunk c from `from` (the receive of c + 1 is posted before c is
  // used), optionally fold into it, pass it on to `to`. A neighbour outside [0, size) means none.
  auto pass = [&](int from, int to, int tag, bool fold) {
    const bool receives = from >= 0 && from < size_, sends_on = to >= 0 && to < size_;
    std::vector<MPI_Request> sends;
    MPI_Request pending = MPI_REQUEST_NULL;
    auto post_receive = [&](size_t c) {
      const auto part = chunk(c);
      Check(MPI_Irecv(part.data(), static_cast<int>(part.size()), MPI_FLOAT, from, tag, MPI_COMM_WORLD, &pending),
            "MPI_Irecv");
    };
    if (receives) post_receive(0);
    for (size_t c = 0; c < chunks; ++c) {
      if (receives) {
        Check(MPI_Wait(&pending, MPI_STATUS_IGNORE), "MPI_Wait");
        stats_.received_bytes += 4 * chunk(c).size();
        if (c + 1 < chunks) post_receive(c + 1);
      }
      if (fold) fold_local(chunk(c), c * chunk_floats);
      if (sends_on) {
        const auto part = chunk(c);
        sends.emplace_back();
        Check(MPI_Isend(part.data(), static_cast<int>(part.size()), MPI_FLOAT, to, tag, MPI_COMM_WORLD, &sends.back()),
              "MPI_Isend");
        stats_.sent_bytes += 4 * part.size();
      }
    }
    Check(MPI_Waitall(static_cast<int>(sends.size()), sends.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
  };
  // Forward: each rank continues the fold of the ranks before it. Backward: the last rank's result goes down to 0.
  pass(rank_ - 1, rank_ + 1, kForwardTag, /*fold=*/true);
  if (size_ > 1) pass(rank_ + 1, rank_ - 1, kBackwardTag, /*fold=*/false);
}

void MpiCommunicator::AllreduceSum(std::span<int64_t> values) {
  CollectiveTimer timer(stats_);
  for (size_t at = 0; at < values.size(); at += kMaxMessageBytes / 8) {
    const size_t count = std::min(values.size() - at, static_cast<size_t>(kMaxMessageBytes / 8));
    Check(
        MPI_Allreduce(MPI_IN_PLACE, values.data() + at, static_cast<int>(count), MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD),
        "MPI_Allreduce");
  }
  CountAllreduce(8 * values.size());
}

void MpiCommunicator::AllreduceMin(std::span<float> values) {
  CollectiveTimer timer(stats_);
  Check(MPI_Allreduce(MPI_IN_PLACE, values.data(), static_cast<int>(values.size()), MPI_FLOAT, MPI_MIN, MPI_COMM_WORLD),
        "MPI_Allreduce");
  CountAllreduce(4 * values.size());
}

void MpiCommunicator::AllreduceMax(std::span<float> values) {
  CollectiveTimer timer(stats_);
  Check(MPI_Allreduce(MPI_IN_PLACE, values.data(), static_cast<int>(values.size()), MPI_FLOAT, MPI_MAX, MPI_COMM_WORLD),
        "MPI_Allreduce");
  CountAllreduce(4 * values.size());
}

double MpiCommunicator::SumInRankOrder(double local) {
  CollectiveTimer timer(stats_);
  std::vector<double> all(size_);
  Check(MPI_Allgather(&local, 1, MPI_DOUBLE, all.data(), 1, MPI_DOUBLE, MPI_COMM_WORLD), "MPI_Allgather");
  stats_.sent_bytes += 8 * static_cast<uint64_t>(size_ - 1);
  stats_.received_bytes += 8 * static_cast<uint64_t>(size_ - 1);
  double sum = 0;
  for (double v : all) sum += v;
  return sum;
}

void MpiCommunicator::Broadcast(std::span<std::byte> bytes, int root) {
  CollectiveTimer timer(stats_);
  for (size_t at = 0; at < bytes.size(); at += kMaxMessageBytes) {
    const size_t count = std::min<size_t>(bytes.size() - at, kMaxMessageBytes);
    Check(MPI_Bcast(bytes.data() + at, static_cast<int>(count), MPI_BYTE, root, MPI_COMM_WORLD), "MPI_Bcast");
  }
  if (rank_ != (root + size_ - 1) % size_) stats_.sent_bytes += bytes.size();
  if (rank_ != root) stats_.received_bytes += bytes.size();
}

std::vector<std::byte> MpiCommunicator::Gather(std::span<const std::byte> local, int root) {
  CollectiveTimer timer(stats_);
  if (local.size() > kMaxMessageBytes) {
    throw InternalError(StrCat("MPI gather of ", local.size(), " bytes from one rank exceeds the 1 GiB message limit"));
  }
  int mine = static_cast<int>(local.size());
  std::vector<int> counts(rank_ == root ? size_ : 0), offsets(rank_ == root ? size_ : 0);
  Check(MPI_Gather(&mine, 1, MPI_INT, counts.data(), 1, MPI_INT, root, MPI_COMM_WORLD), "MPI_Gather");
  std::vector<std::byte> all;
  if (rank_ == root) {
    uint64_t total = 0;
    for (int r = 0; r < size_; ++r) {
      if (total > static_cast<uint64_t>(INT32_MAX)) throw InternalError("MPI gather exceeds 2 GiB at the root");
      offsets[r] = static_cast<int>(total);
      total += static_cast<uint64_t>(counts[r]);
    }
    all.resize(total);
    stats_.received_bytes += total - local.size();
  } else {
    stats_.sent_bytes += local.size();
  }
  Check(MPI_Gatherv(local.data(), mine, MPI_BYTE, all.data(), counts.data(), offsets.data(), MPI_BYTE, root,
                    MPI_COMM_WORLD),
        "MPI_Gatherv");
  return all;
}

void MpiCommunicator::Barrier() {
  CollectiveTimer timer(stats_);
  Check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
}

}  // namespace pimopt
