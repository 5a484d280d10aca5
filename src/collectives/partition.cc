#include "pimopt/collectives/partition.h"

#include <algorithm>

#include "pimopt/core/error.h"

namespace pimopt {

std::vector<Shard> MakeShards(uint64_t num_rows, int num_workers) {
  std::vector<Shard> shards(num_workers);
  for (int k = 0; k < num_workers; ++k) {
    shards[k].begin = static_cast<uint32_t>(num_rows * k / num_workers);
    shards[k].end = static_cast<uint32_t>(num_rows * (k + 1) / num_workers);
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

}  // namespace pimopt
