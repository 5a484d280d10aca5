#include "pimopt/collectives/partition.h"

#include <algorithm>

#include "pimopt/core/error.h"

namespace pimopt {

namespace {
// Worker k's first row (MakeShards' boundaries, computed without the list).
uint64_t ShardBegin(uint64_t num_rows, int num_workers, int64_t k) {
  return num_rows * static_cast<uint64_t>(k) / static_cast<uint64_t>(num_workers);
}
}  // namespace

std::vector<Shard> MakeShards(uint64_t num_rows, int num_workers) {
  std::vector<Shard> shards(num_workers);
  for (int k = 0; k < num_workers; ++k) {
    shards[k].begin = static_cast<uint32_t>(ShardBegin(num_rows, num_workers, k));
    shards[k].end = static_cast<uint32_t>(ShardBegin(num_rows, num_workers, k + 1));
  }
  return shards;
}

uint64_t MaxShardBatches(uint64_t num_rows, int num_workers, uint64_t local_batch) {
  const uint64_t largest = (num_rows + num_workers - 1) / num_workers;  // MakeShards' sizes differ by at most 1
  return (largest + local_batch - 1) / local_batch;
}

int ShardOf(const std::vector<Shard>& shards, uint32_t row) {
  const auto it =
      std::upper_bound(shards.begin(), shards.end(), row, [](uint32_t r, const Shard& s) { return r < s.end; });
  PIMOPT_CHECK(it != shards.end() && row >= it->begin, "row outside every shard");
  return static_cast<int>(it - shards.begin());
}

void Partition::CheckWorkersPerRank(int total_workers, int ranks) {
  if (total_workers < ranks) {
    throw ConfigError("--workers", StrCat(total_workers, " workers cannot be spread over ", ranks,
                                          " processes: give at least one worker per MPI rank"));
  }
}

Partition Partition::ForRank(uint64_t total_rows, int total_workers, int rank, int ranks) {
  PIMOPT_CHECK(ranks >= 1 && rank >= 0 && rank < ranks);
  CheckWorkersPerRank(total_workers, ranks);
  // Before anything is sized by the worker count (a list of 2^31 shards is 16 GiB).
  if (static_cast<uint64_t>(total_workers) > total_rows) {
    throw ConfigError("--workers", StrCat(total_workers, " workers for only ", total_rows, " training rows"));
  }
  Partition p;
  p.total_rows = total_rows;
  p.total_workers = total_workers;
  p.rank = rank;
  p.ranks = ranks;
  p.first_worker = static_cast<int>(static_cast<int64_t>(total_workers) * rank / ranks);
  const int end_worker = static_cast<int>(static_cast<int64_t>(total_workers) * (rank + 1) / ranks);
  p.local_workers = end_worker - p.first_worker;
  p.first_row = ShardBegin(total_rows, total_workers, p.first_worker);
  p.local_rows = ShardBegin(total_rows, total_workers, end_worker) - p.first_row;
  return p;
}

std::vector<Shard> LocalShards(const Partition& part) {
  std::vector<Shard> local(part.local_workers);
  for (int k = 0; k < part.local_workers; ++k) {
    const int64_t worker = int64_t{part.first_worker} + k;
    local[k].begin = static_cast<uint32_t>(ShardBegin(part.total_rows, part.total_workers, worker) - part.first_row);
    local[k].end = static_cast<uint32_t>(ShardBegin(part.total_rows, part.total_workers, worker + 1) - part.first_row);
  }
  return local;
}

RowRange EvaluationSlice(uint64_t total_rows, int rank, int ranks) {
  PIMOPT_CHECK(ranks >= 1 && rank >= 0 && rank < ranks);
  return {total_rows * rank / ranks, total_rows * (rank + 1) / ranks};
}

}  // namespace pimopt
