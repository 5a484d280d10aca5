// Which rows each worker visits, in which batches. Two plans, both pure functions of (seed, epoch, sizes), never
// of thread count:
//
// GlobalBatchPlan (SGD, MB-SGD, GA-SGD): epoch e visits all N rows in the order of permutation pi_e (seeded by
//   (seed, e); identity without shuffling). Batch t is pi_e[tB, (t+1)B) (the last batch may be shorter). In GA-SGD
//   worker k computes on the rows of the batch that lie in its shard (MakeShards), so the K workers together
//   compute exactly MB-SGD's batch gradient: GA-SGD with K workers and batch B is MB-SGD with batch B, and no row
//   ever moves between workers.
//
// ShardPlan (MA-SGD, ADMM): worker k owns the fixed contiguous shard [kN/K, (k+1)N/K) of the training rows (MakeShards) (its
//   local function f_k never changes, as consensus ADMM requires). In pass p (an epoch, or a local epoch of ADMM)
//   it visits its shard in the order of a permutation seeded by (seed, p, k), in local batches of b rows; its
//   local step s uses local batch (s mod batches_k) so workers with one row less wrap around.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "pimopt/collectives/partition.h"

namespace pimopt {

class GlobalBatchPlan {
 public:
  GlobalBatchPlan(uint64_t num_rows, uint64_t batch, uint64_t seed, int epoch, bool shuffle);
  uint64_t num_batches() const { return (order_.size() + batch_ - 1) / batch_; }
  std::span<const uint32_t> Batch(uint64_t t) const;

 private:
  uint64_t batch_;
  std::vector<uint32_t> order_;
};

class ShardPlan {
 public:
  // `shards` may be a process's part of the workers (rebased to its rows); `first_worker` is the global index of
  // shards[0]'s worker, which seeds its visiting order, so a part's plan equals the whole plan's workers.
  ShardPlan(std::vector<Shard> shards, uint64_t local_batch, uint64_t seed, uint64_t pass, bool shuffle,
            int first_worker = 0);
  int num_workers() const { return static_cast<int>(shards_.size()); }
  uint64_t batches(int k) const { return (shards_[k].size() + batch_ - 1) / batch_; }
  uint64_t max_batches() const;
  // Rows of worker k's local step s (wrapping around its batches).
  std::span<const uint32_t> LocalBatch(int k, uint64_t step) const;
  // Calls fn(rows) with the rows of worker k's local steps first_step .. first_step + num_steps - 1 in visiting
  // order, as one span per pass through its order: the rows LocalBatch gives step by step, without a division per
  // step.
  template <typename Fn>
  void ForEachRowSpan(int k, uint64_t first_step, uint64_t num_steps, Fn&& fn) const {
    const uint64_t end_step = first_step + num_steps;
    for (uint64_t s = first_step; s < end_step;) {
      uint64_t steps = 0;
      fn(RowsOfStepsInOnePass(k, s, end_step - s, &steps));
      s += steps;
    }
  }
  const std::vector<Shard>& shards() const { return shards_; }

 private:
  // The rows of steps first_step .. of worker k up to num_steps of them or the end of its order, whichever comes
  // first; *steps says how many steps they are (at least 1).
  std::span<const uint32_t> RowsOfStepsInOnePass(int k, uint64_t first_step, uint64_t num_steps,
                                                 uint64_t* steps) const;

  std::vector<Shard> shards_;
  uint64_t batch_;
  std::vector<std::vector<uint32_t>> orders_;  // global row ids per worker, in visiting order
};

}  // namespace pimopt
