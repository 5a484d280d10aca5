// How one training run's rows and workers are split: over workers (shards) and over processes (Partition).
//
// A run has W workers over N training rows; worker k owns the contiguous, balanced shard MakeShards(N, W)[k]. With
// P processes (MPI ranks), rank r runs the workers [W r / P, W (r+1) / P) and holds exactly their rows, a
// contiguous slice of the training set (Partition). A single process is the case P = 1.
#pragma once

#include <cstdint>
#include <vector>

namespace pimopt {

struct Shard {
  uint32_t begin = 0;
  uint32_t end = 0;
  uint32_t size() const { return end - begin; }
};

// Balanced contiguous shards of [0, num_rows).
std::vector<Shard> MakeShards(uint64_t num_rows, int num_workers);
// The most local batches of any of the balanced shards (the number of local steps in one pass).
uint64_t MaxShardBatches(uint64_t num_rows, int num_workers, uint64_t local_batch);
// The index of the shard holding `row` (binary search over MakeShards' output).
int ShardOf(const std::vector<Shard>& shards, uint32_t row);

// The part of the run that this process holds.
struct Partition {
  uint64_t total_rows = 0;  // N, the whole training set
  int total_workers = 1;    // W
  int rank = 0;
  int ranks = 1;
  int first_worker = 0;  // global index of this process's worker 0
  int local_workers = 1;
  uint64_t first_row = 0;  // global index of this process's row 0
  uint64_t local_rows = 0;

  // ConfigError naming --workers when a rank would get no worker, or the rows fewer than the workers (checked before
  // anything is sized by the worker count).
  static Partition ForRank(uint64_t total_rows, int total_workers, int rank, int ranks);
  static void CheckWorkersPerRank(int total_workers, int ranks);  // at least one worker per rank
  static Partition Whole(uint64_t total_rows, int total_workers) { return ForRank(total_rows, total_workers, 0, 1); }
  bool distributed() const { return ranks > 1; }
};

// The shards of this process's workers, rebased to its local rows.
std::vector<Shard> LocalShards(const Partition& part);

// The rows [begin, end) of an evaluation set of `total_rows` rows that rank `rank` of `ranks` holds (balanced
// contiguous slices, in rank order).
struct RowRange {
  uint64_t begin = 0;
  uint64_t end = 0;
};
RowRange EvaluationSlice(uint64_t total_rows, int rank, int ranks);

}  // namespace pimopt
