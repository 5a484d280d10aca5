#include "pimopt/algorithms/schedule.h"

#include <gtest/gtest.h>

#include <set>

namespace pimopt {
namespace {

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
