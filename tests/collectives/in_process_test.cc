// The in-process communicator: P ranks as threads must behave as the MPI collectives do (ordered folds in rank
// order, exact reductions, broadcast, gather) and a failing rank must end the group instead of hanging it.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <numeric>

#include "pimopt/collectives/in_process_communicator.h"

namespace pimopt {
namespace {

class InProcess : public ::testing::TestWithParam<int> {};

TEST_P(InProcess, AllreduceOfOneIsTheGroupSize) {
  InProcessGroup group(GetParam());
  std::atomic<int> checked{0};
  group.Run([&](Communicator& comm) {
    int64_t v[2] = {1, comm.rank()};
    comm.AllreduceSum(v);
    EXPECT_EQ(v[0], comm.size());
    EXPECT_EQ(v[1], comm.size() * (comm.size() - 1) / 2);
    EXPECT_EQ(comm.SumU64(3), 3u * comm.size());
    ++checked;
  });
  EXPECT_EQ(checked, GetParam());
}

TEST_P(InProcess, OrderedSumFoldsInRankOrderInEveryChunk) {
  // Folding "acc = acc * 10 + (rank + 1)" is not commutative: the result spells the order of the folds.
  const int ranks = GetParam();
  const size_t n = 3 * InProcessGroup::kChunkFloats + 5;  // several chunks, the last one short
  float expected = 0;
  for (int r = 0; r < ranks; ++r) expected = expected * 10 + static_cast<float>(r + 1);
  InProcessGroup group(ranks);
  for (int round = 0; round < 3; ++round) {  // the hub is reused between collectives
    group.Run([&](Communicator& comm) {
      std::vector<float> acc(n, 0.0f);
      std::vector<size_t> seen;
      comm.OrderedSum(acc, [&](std::span<float> chunk, size_t offset) {
        seen.push_back(offset);
        for (float& v : chunk) v = v * 10 + static_cast<float>(comm.rank() + 1);
      });
      for (float v : acc) ASSERT_EQ(v, expected);
      std::vector<size_t> offsets;
      for (size_t at = 0; at < n; at += InProcessGroup::kChunkFloats) offsets.push_back(at);
      EXPECT_EQ(seen, offsets);
    });
  }
}

TEST_P(InProcess, MinMaxRankOrderSumBroadcastGatherBarrier) {
  InProcessGroup group(GetParam());
  group.Run([&](Communicator& comm) {
    const int p = comm.size(), r = comm.rank();
    std::vector<float> lo{static_cast<float>(r), -static_cast<float>(r)}, hi = lo;
    comm.AllreduceMin(lo);
    comm.AllreduceMax(hi);
    EXPECT_EQ(lo, (std::vector<float>{0.0f, -static_cast<float>(p - 1)}));
    EXPECT_EQ(hi, (std::vector<float>{static_cast<float>(p - 1), 0.0f}));
    // 1e16 + 1 + 1 ... loses the ones in this order; the sum must be taken in rank order on every rank.
    double expected = 0;
    for (int k = 0; k < p; ++k) expected += k == 0 ? 1e16 : 1.0;
    EXPECT_EQ(comm.SumInRankOrder(r == 0 ? 1e16 : 1.0), expected);
    std::string text = r == p - 1 ? "from the last rank" : "";
    comm.BroadcastString(text, p - 1);
    EXPECT_EQ(text, "from the last rank");
    const std::string mine(static_cast<size_t>(r + 1), static_cast<char>('a' + r));
    const auto all = comm.Gather(std::as_bytes(std::span<const char>(mine)), 0);
    if (r == 0) {
      std::string joined;
      for (int k = 0; k < p; ++k) joined += std::string(static_cast<size_t>(k + 1), static_cast<char>('a' + k));
      EXPECT_EQ(std::string(reinterpret_cast<const char*>(all.data()), all.size()), joined);
    } else {
      EXPECT_TRUE(all.empty());
      EXPECT_EQ(comm.stats().sent_bytes > 0, true);
    }
    comm.Barrier();
    EXPECT_GT(comm.stats().calls, 0u);
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, InProcess, ::testing::Values(1, 2, 3, 5));

TEST(InProcessGroup, AFailingRankEndsTheGroupWithItsOwnError) {
  InProcessGroup group(3);
  try {
    group.Run([&](Communicator& comm) {
      if (comm.rank() == 1) throw InputError("rank 1 cannot read its data");
      comm.Barrier();  // ranks 0 and 2 would wait here forever without the abort
      comm.Barrier();
    });
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "rank 1 cannot read its data");
  }
  // The group works again afterwards.
  group.Run([](Communicator& comm) { EXPECT_EQ(comm.SumU64(1), 3u); });
}

}  // namespace
}  // namespace pimopt
