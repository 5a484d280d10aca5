#include "pimopt/algorithms/schedule.h"

#include <gtest/gtest.h>

#include <limits>
#include <set>
#include <tuple>

#include "pimopt/collectives/communicator.h"
#include "pimopt/core/error.h"

namespace pimopt {
namespace {

TEST(Partition, RanksTakeContiguousWorkersAndTheirRows) {
  for (int ranks : {1, 2, 3, 4}) {
    for (int workers : {4, 6, 7}) {
      const auto shards = MakeShards(1001, workers);
      int next_worker = 0;
      uint64_t next_row = 0;
      for (int r = 0; r < ranks; ++r) {
        const Partition p = Partition::ForRank(1001, workers, r, ranks);
        EXPECT_EQ(p.first_worker, next_worker);
        EXPECT_EQ(p.first_row, next_row);
        EXPECT_GE(p.local_workers, workers / ranks);
        EXPECT_LE(p.local_workers, (workers + ranks - 1) / ranks);
        const auto local = LocalShards(p);
        ASSERT_EQ(local.size(), static_cast<size_t>(p.local_workers));
        for (int k = 0; k < p.local_workers; ++k) {  // the global shards, rebased to the rank's rows
          EXPECT_EQ(local[k].begin + p.first_row, shards[p.first_worker + k].begin);
          EXPECT_EQ(local[k].end + p.first_row, shards[p.first_worker + k].end);
        }
        EXPECT_EQ(local.back().end, p.local_rows);
        next_worker += p.local_workers;
        next_row += p.local_rows;
      }
      EXPECT_EQ(next_worker, workers);
      EXPECT_EQ(next_row, 1001u);
    }
  }
  EXPECT_THROW(Partition::ForRank(100, 2, 0, 3), ConfigError);  // fewer workers than ranks
}

TEST(Partition, EvaluationSlicesCoverTheRowsInOrder) {
  uint64_t next = 0;
  for (int r = 0; r < 3; ++r) {
    const RowRange range = EvaluationSlice(10, r, 3);
    EXPECT_EQ(range.begin, next);
    next = range.end;
  }
  EXPECT_EQ(next, 10u);
}

TEST(ShardPlan, APartsPlanEqualsTheWholePlansWorkers) {
  const auto all = MakeShards(503, 5);
  const ShardPlan whole(all, 7, 11, 3, true);
  const Partition p = Partition::ForRank(503, 5, 1, 2);  // workers 2..4
  const ShardPlan part(LocalShards(p), 7, 11, 3, true, p.first_worker);
  ASSERT_EQ(part.num_workers(), 3);
  for (int k = 0; k < 3; ++k) {
    for (uint64_t step = 0; step < 12; ++step) {
      const auto a = whole.LocalBatch(p.first_worker + k, step);
      const auto b = part.LocalBatch(k, step);
      ASSERT_EQ(a.size(), b.size());
      for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i], b[i] + p.first_row);
    }
  }
  EXPECT_EQ(MaxShardBatches(503, 5, 7), whole.max_batches());
}

TEST(GlobalBatchPlan, VisitsEveryRowOnceInBatchesOfB) {
  const GlobalBatchPlan plan(1003, 64, 9, 2, true);
  EXPECT_EQ(plan.num_batches(), 16u);
  std::set<uint32_t> seen;
  for (uint64_t t = 0; t < plan.num_batches(); ++t) {
    EXPECT_EQ(plan.Batch(t).size(), t + 1 < plan.num_batches() ? 64u : 1003u - 15 * 64);
    seen.insert(plan.Batch(t).begin(), plan.Batch(t).end());
  }
  EXPECT_EQ(seen.size(), 1003u);
}

TEST(Shards, ShardOfFindsTheOwner) {
  const auto shards = MakeShards(1003, 7);
  for (uint32_t row = 0; row < 1003; ++row) {
    const int k = ShardOf(shards, row);
    EXPECT_GE(row, shards[k].begin);
    EXPECT_LT(row, shards[k].end);
  }
}

TEST(GlobalBatchPlan, EpochsReshuffleUnlessDisabled) {
  const GlobalBatchPlan e0(100, 100, 1, 0, true), e1(100, 100, 1, 1, true), off(100, 100, 1, 1, false);
  EXPECT_FALSE(std::equal(e0.Batch(0).begin(), e0.Batch(0).end(), e1.Batch(0).begin()));
  for (uint32_t i = 0; i < 100; ++i) EXPECT_EQ(off.Batch(0)[i], i);
}

TEST(Shards, BalancedContiguousAndComplete) {
  for (uint64_t rows : {10u, 1001u, 4096u}) {
    for (int k : {1, 3, 7, 10}) {
      const auto shards = MakeShards(rows, k);
      ASSERT_EQ(shards.size(), static_cast<size_t>(k));
      EXPECT_EQ(shards.front().begin, 0u);
      EXPECT_EQ(shards.back().end, rows);
      for (int i = 0; i < k; ++i) {
        if (i) {
          EXPECT_EQ(shards[i].begin, shards[i - 1].end);
        }
        EXPECT_GE(shards[i].size(), rows / k);
        EXPECT_LE(shards[i].size(), rows / k + 1);
      }
    }
  }
}

// Each rank's shards are the whole list's, cut: computed from the boundaries, never from a list of every worker's
// (2^31 - 1 workers were a 16 GiB list before the "more workers than rows" check could refuse them).
TEST(ShardPlan, RanksCutTheWholeListAndHugeWorkerCountsAreRefusedFirst) {
  for (const auto& [rows, workers, ranks] : {std::tuple{503, 5, 2}, {1000, 7, 3}, {64, 64, 4}, {10, 3, 3}}) {
    const auto all = MakeShards(rows, workers);
    for (int rank = 0; rank < ranks; ++rank) {
      const Partition p = Partition::ForRank(rows, workers, rank, ranks);
      const auto local = LocalShards(p);
      ASSERT_EQ(local.size(), static_cast<size_t>(p.local_workers));
      EXPECT_EQ(p.first_row, all[p.first_worker].begin);
      EXPECT_EQ(p.first_row + p.local_rows, all[p.first_worker + p.local_workers - 1].end);
      for (int k = 0; k < p.local_workers; ++k) {
        EXPECT_EQ(local[k].begin + p.first_row, all[p.first_worker + k].begin);
        EXPECT_EQ(local[k].end + p.first_row, all[p.first_worker + k].end);
      }
    }
  }
  try {
    Partition::ForRank(100, std::numeric_limits<int>::max(), 0, 1);
    ADD_FAILURE() << "2^31 - 1 workers over 100 rows were accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("--workers: 2147483647 workers for only 100 training rows"),
              std::string::npos) << e.what();
  }
}

TEST(ShardPlan, WorkersStayInTheirShardAndWrapAround) {
  const ShardPlan plan(MakeShards(103, 4), 5, 1, 0, true);
  for (int k = 0; k < 4; ++k) {
    const Shard s = plan.shards()[k];
    std::set<uint32_t> seen;
    for (uint64_t step = 0; step < plan.batches(k); ++step) {
      for (uint32_t r : plan.LocalBatch(k, step)) {
        EXPECT_GE(r, s.begin);
        EXPECT_LT(r, s.end);
        seen.insert(r);
      }
    }
    EXPECT_EQ(seen.size(), s.size());
    const auto first = plan.LocalBatch(k, 0), wrapped = plan.LocalBatch(k, plan.batches(k));
    EXPECT_TRUE(std::equal(first.begin(), first.end(), wrapped.begin()));
  }
}

}  // namespace
}  // namespace pimopt
