// The what-if link model: which DPUs a scope links, and exchanges timed by their busiest port.
#include "pimopt/pim/interconnect.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "pimopt/core/error.h"

namespace pimopt::pim {
namespace {

HardwareProfile WithLinks(LinkScope scope) {
  HardwareProfile p = MakeProfile("pim-opt");
  p.link_scope = scope;
  p.link_bytes_per_s = 1e9;
  p.link_latency_s = 1e-6;
  p.inter_rank_link_bytes_per_s = 10e9;
  p.inter_rank_link_latency_s = 2e-6;
  return p;
}

TEST(Interconnect, ScopesLinkChipsRanksOrEverything) {
  EXPECT_FALSE(Linked(MakeProfile("pim-opt"), 0, 1));  // today's hardware: no link at all
  const HardwareProfile chip = WithLinks(LinkScope::kChip), rank = WithLinks(LinkScope::kRank),
                        all = WithLinks(LinkScope::kSystem);
  EXPECT_TRUE(Linked(chip, 0, 7));
  EXPECT_FALSE(Linked(chip, 7, 8));  // the next chip
  EXPECT_TRUE(Linked(rank, 7, 8));
  EXPECT_FALSE(Linked(rank, 63, 64));  // the next rank
  EXPECT_TRUE(Linked(all, 63, 64));
  EXPECT_EQ(MakeProfile("links-rank").link_scope, LinkScope::kRank);
}

TEST(Interconnect, AnExchangeTakesAsLongAsItsBusiestPort) {
  const HardwareProfile p = WithLinks(LinkScope::kRank);
  const uint64_t bytes = 1'000'000;  // 1 ms on a 1 GB/s port, plus 1 us latency
  // A ring of 8: every DPU sends two messages and receives two.
  std::vector<std::pair<uint32_t, uint32_t>> ring;
  for (uint32_t k = 0; k < 8; ++k) ring.emplace_back(k, (k + 1) % 8);
  const auto t_ring = ModelNeighbourExchange(p, 8, ring, bytes);
  ASSERT_TRUE(t_ring.has_value());
  EXPECT_NEAR(t_ring->seconds, 2 * (1e-6 + 1e-3), 1e-12);
  EXPECT_EQ(t_ring->link_bytes, 16 * bytes);
  // A star around DPU 0 with 7 leaves: DPU 0's port serializes 7 messages each way (not bytes / total bandwidth).
  std::vector<std::pair<uint32_t, uint32_t>> star;
  for (uint32_t k = 1; k < 8; ++k) star.emplace_back(0, k);
  EXPECT_NEAR(ModelNeighbourExchange(p, 8, star, bytes)->seconds, 7 * (1e-6 + 1e-3), 1e-12);
  // An edge no link joins: refused, the caller routes through the host.
  EXPECT_FALSE(ModelNeighbourExchange(p, 128, std::vector<std::pair<uint32_t, uint32_t>>{{0, 64}}, bytes));
  EXPECT_FALSE(ModelNeighbourExchange(MakeProfile("pim-opt"), 8, ring, bytes));
}

TEST(Interconnect, CrossRankMessagesShareTheirRanksPort) {
  const HardwareProfile p = WithLinks(LinkScope::kSystem);
  const uint64_t bytes = 1'000'000;
  // 64 DPUs of rank 0 each talk to the same-numbered DPU of rank 1: 64 messages each way on each rank's port.
  std::vector<std::pair<uint32_t, uint32_t>> pairs;
  for (uint32_t k = 0; k < 64; ++k) pairs.emplace_back(k, 64 + k);
  const auto t = ModelNeighbourExchange(p, 128, pairs, bytes);
  ASSERT_TRUE(t.has_value());
  EXPECT_NEAR(t->seconds, 64 * (2e-6 + 1e-4), 1e-12);  // the rank port (10 GB/s) is the bottleneck, not a DPU's
  EXPECT_EQ(t->cross_rank_bytes, 128 * bytes);
}

TEST(Interconnect, RingAllReduceNeedsALinkBetweenEveryConsecutivePair) {
  const uint64_t bytes = 1'024'000;
  // 8 DPUs of a chip: 14 steps of bytes / 8 each over a DPU port.
  const auto chip = ModelRingAllReduce(WithLinks(LinkScope::kChip), 8, bytes);
  ASSERT_TRUE(chip.has_value());
  EXPECT_NEAR(chip->seconds, 14 * (1e-6 + 128'000 / 1e9), 1e-12);
  EXPECT_EQ(chip->cross_rank_bytes, 0u);
  // 16 DPUs span two chips: chip links do not close the ring, rank links do.
  EXPECT_FALSE(ModelRingAllReduce(WithLinks(LinkScope::kChip), 16, bytes));
  EXPECT_TRUE(ModelRingAllReduce(WithLinks(LinkScope::kRank), 16, bytes));
  // Across ranks the slower of a DPU port and a rank port sets each step.
  const auto two_ranks = ModelRingAllReduce(WithLinks(LinkScope::kSystem), 128, bytes);
  ASSERT_TRUE(two_ranks.has_value());
  EXPECT_NEAR(two_ranks->seconds, 254 * std::max(1e-6 + 8'000 / 1e9, 2e-6 + 8'000 / 10e9), 1e-12);
  EXPECT_GT(two_ranks->cross_rank_bytes, 0u);
  EXPECT_FALSE(ModelRingAllReduce(WithLinks(LinkScope::kRank), 128, bytes));
}

// Today's hardware has no links: every collective is refused. Nor is there a collective over one DPU on any profile:
// its "all-reduce" would be free and hide MB-SGD's gradient pull through the host.
TEST(Interconnect, NoCollectiveWithoutLinksNorOverOneDpu) {
  for (const HardwareProfile& p : {MakeProfile("pim-opt"), WithLinks(LinkScope::kChip), WithLinks(LinkScope::kRank),
                                   WithLinks(LinkScope::kSystem)}) {
    SCOPED_TRACE(p.name + " " + ProfileFields().GetText(p, "link_scope"));
    EXPECT_FALSE(ModelAllReduce(p, 1, 4096));
    EXPECT_FALSE(ModelRingAllReduce(p, 1, 4096));
    EXPECT_FALSE(ModelRingReduceScatter(p, 1, 4096));
    EXPECT_FALSE(ModelRingAllGather(p, 1, 4096));
    EXPECT_FALSE(ModelHierarchicalAllReduce(p, 1, 4096));
    EXPECT_FALSE(ModelNeighbourExchange(p, 1, {}, 4096));
  }
  const HardwareProfile today = MakeProfile("pim-opt");
  EXPECT_FALSE(ModelAllReduce(today, 8, 4096));
  EXPECT_TRUE(ModelAllReduce(WithLinks(LinkScope::kChip), 8, 4096));
}

TEST(Interconnect, ReduceScatterAndAllGatherAreTheAllReducesHalves) {
  const HardwareProfile p = WithLinks(LinkScope::kRank);
  const uint64_t bytes = 640'000;
  const auto rs = ModelRingReduceScatter(p, 64, bytes), ag = ModelRingAllGather(p, 64, bytes),
             ar = ModelRingAllReduce(p, 64, bytes);
  ASSERT_TRUE(rs && ag && ar);
  EXPECT_NEAR(rs->seconds, 63 * (1e-6 + 10'000 / 1e9), 1e-12);
  EXPECT_NEAR(rs->seconds + ag->seconds, ar->seconds, 1e-15);
  EXPECT_EQ(rs->link_bytes + ag->link_bytes, ar->link_bytes);
  EXPECT_FALSE(ModelRingReduceScatter(p, 128, bytes));  // rank links do not close a two-rank ring
}

// At 2,048 DPUs the flat ring's 4,094 latency-bound steps lose to the hierarchy's 4 x 63 in-rank messages and the
// leaders' 2 x 31 cross-rank steps; ModelAllReduce takes the faster.
TEST(Interconnect, HierarchicalAllReduceWithinRanksThenAcrossThem) {
  const HardwareProfile p = WithLinks(LinkScope::kSystem);
  const uint64_t bytes = 32'768;  // a 4,096-feature model as 64-bit partial sums
  const auto flat = ModelRingAllReduce(p, 2048, bytes), tree = ModelHierarchicalAllReduce(p, 2048, bytes);
  ASSERT_TRUE(flat && tree);
  const double in_rank = 1e-6 + 512.0 / 1e9, cross = std::max(1e-6 + 1024.0 / 1e9, 2e-6 + 1024.0 / 10e9);
  EXPECT_NEAR(tree->seconds, 4 * 63 * in_rank + 2 * 31 * cross, 1e-12);
  EXPECT_LT(tree->seconds, flat->seconds / 10);
  EXPECT_EQ(ModelAllReduce(p, 2048, bytes)->seconds, tree->seconds);
  // Within one rank there is no hierarchy; with rank links only, no cross-rank ring.
  EXPECT_FALSE(ModelHierarchicalAllReduce(p, 64, bytes));
  EXPECT_EQ(ModelAllReduce(p, 64, bytes)->seconds, ModelRingAllReduce(p, 64, bytes)->seconds);
  EXPECT_FALSE(ModelHierarchicalAllReduce(WithLinks(LinkScope::kRank), 2048, bytes));
  EXPECT_FALSE(ModelAllReduce(WithLinks(LinkScope::kRank), 2048, bytes));
  EXPECT_FALSE(ModelHierarchicalAllReduce(p, 2048 + 8, bytes));  // a partial rank
}

TEST(Interconnect, ProfileFieldsAreValidatedAndSettable) {
  HardwareProfile p = MakeProfile("pim-opt");
  ApplyOverrides(p, "link_scope=system,link_bytes_per_s=2e9");
  EXPECT_EQ(p.link_scope, LinkScope::kSystem);
  EXPECT_EQ(p.link_bytes_per_s, 2e9);
  EXPECT_THROW(ApplyOverrides(p, "link_scope=mesh"), ConfigError);
  EXPECT_THROW(ApplyOverrides(p, "link_bytes_per_s=0"), ConfigError);
  // The host-bandwidth what-ifs scale every rate of the transfer model.
  EXPECT_EQ(MakeProfile("host-x4").rank_to_dpu_bytes_per_s, 4 * MakeProfile("pim-opt").rank_to_dpu_bytes_per_s);
}

}  // namespace
}  // namespace pimopt::pim
