#include "pimopt/algorithms/communicator.h"

#include "pimopt/algorithms/schedule.h"
#include "pimopt/core/error.h"

namespace pimopt {

Partition Partition::ForRank(uint64_t total_rows, int total_workers, int rank, int ranks) {
  PIMOPT_CHECK(ranks >= 1 && rank >= 0 && rank < ranks);
  if (total_workers < ranks) {
    throw ConfigError("--workers", StrCat(total_workers, " workers cannot be spread over ", ranks,
                                          " processes: give at least one worker per MPI rank"));
  }
  Partition p;
  p.total_rows = total_rows;
  p.total_workers = total_workers;
  p.rank = rank;
  p.ranks = ranks;
  p.first_worker = static_cast<int>(static_cast<int64_t>(total_workers) * rank / ranks);
  const int end_worker = static_cast<int>(static_cast<int64_t>(total_workers) * (rank + 1) / ranks);
  p.local_workers = end_worker - p.first_worker;
  const std::vector<Shard> shards = MakeShards(total_rows, total_workers);
  p.first_row = shards[p.first_worker].begin;
  p.local_rows = shards[end_worker - 1].end - p.first_row;
  return p;
}

std::vector<Shard> LocalShards(const Partition& part) {
  std::vector<Shard> all = MakeShards(part.total_rows, part.total_workers);
  std::vector<Shard> local(all.begin() + part.first_worker, all.begin() + part.first_worker + part.local_workers);
  for (Shard& s : local) {
    s.begin -= static_cast<uint32_t>(part.first_row);
    s.end -= static_cast<uint32_t>(part.first_row);
  }
  return local;
}

RowRange EvaluationSlice(uint64_t total_rows, int rank, int ranks) {
  PIMOPT_CHECK(ranks >= 1 && rank >= 0 && rank < ranks);
  return {total_rows * rank / ranks, total_rows * (rank + 1) / ranks};
}

void Communicator::BroadcastString(std::string& text, int root) {
  uint64_t n = text.size();
  BroadcastValue(n, root);
  text.resize(n);
  Broadcast(std::as_writable_bytes(std::span<char>(text.data(), text.size())), root);
}

uint64_t Communicator::SumU64(uint64_t local) {
  int64_t v = static_cast<int64_t>(local);
  AllreduceSum(std::span<int64_t>(&v, 1));
  return static_cast<uint64_t>(v);
}

Communicator& SingleProcess() {
  static LocalCommunicator local;
  return local;
}

}  // namespace pimopt
