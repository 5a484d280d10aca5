// Collectives on today's hardware: the SDK's host route built from the validated transfer and host models, PID-Comm's
// software route from the direct rates, the channels and the emulator's relocation kernel.
#include "pimopt/pim/collectives.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "pimopt/core/error.h"
#include "pimopt/pim/energy.h"
#include "pimopt/pim/host_model.h"
#include "pimopt/pim/system.h"
#include "pimopt/pim/timing.h"

namespace pimopt::pim {
namespace {

constexpr Collective kAll[] = {Collective::kAllReduce, Collective::kReduceScatter, Collective::kAllGather,
                               Collective::kAllToAll, Collective::kBroadcast};

TEST(Collectives, TheHostRouteIsTheSdksPullTheHostsReductionAndABroadcast) {
  const HardwareProfile p = MakeProfile("pim-opt");
  const uint32_t n = 256;
  const uint64_t s = 1 << 20;
  const CollectiveCost c = ModelCollective(p, Collective::kAllReduce, CollectiveRoute::kHost, n, s, 4);
  const double pull = ModelParallelTransferSeconds(p, XferDirection::kFromDpu, n, s);
  const double broadcast = ModelBroadcastSeconds(p, n, s);
  const double host = ModelHostReductionSeconds(
      p, {.vectors = n, .elements = s / 4, .bytes_per_element = 4, .update_elements = s / 4,
          .update_bytes_per_element = 8});
  EXPECT_DOUBLE_EQ(c.bus_s, pull + broadcast);
  EXPECT_DOUBLE_EQ(c.host_s, host);
  EXPECT_DOUBLE_EQ(c.seconds, pull + broadcast + host);
  EXPECT_EQ(c.dpu_s, 0.0);
  EXPECT_EQ(c.from_dpu_bytes, n * s);
  EXPECT_EQ(c.to_dpu_bytes, n * s);
}

TEST(Collectives, BothRoutesMoveTheSameBytesOverTheChannels) {
  const HardwareProfile p = MakeProfile("pim-opt");
  for (const Collective c : kAll) {
    for (const uint32_t n : {1u, 8u, 64u, 1024u}) {
      const CollectiveCost host = ModelCollective(p, c, CollectiveRoute::kHost, n, 65536, 4);
      const CollectiveCost software = ModelCollective(p, c, CollectiveRoute::kSoftware, n, 65536, 4);
      EXPECT_EQ(host.from_dpu_bytes, software.from_dpu_bytes) << CollectiveName(c) << " " << n;
      EXPECT_EQ(host.to_dpu_bytes, software.to_dpu_bytes) << CollectiveName(c) << " " << n;
    }
  }
  // Reduce-scatter returns each DPU its share, all-gather starts from it.
  const CollectiveCost rs = ModelCollective(p, Collective::kReduceScatter, CollectiveRoute::kSoftware, 64, 65536, 4);
  EXPECT_EQ(rs.from_dpu_bytes, 64u * 65536);
  EXPECT_EQ(rs.to_dpu_bytes, 65536u);
  const CollectiveCost ag = ModelCollective(p, Collective::kAllGather, CollectiveRoute::kSoftware, 64, 65536, 4);
  EXPECT_EQ(ag.from_dpu_bytes, 65536u);
  EXPECT_EQ(ag.to_dpu_bytes, 64u * 65536);
}

TEST(Collectives, TheSoftwareRouteSavesTheHostsDramPassesOnLargeVectorsAndPaysItsKernelsOnSmallOnes) {
  const HardwareProfile p = MakeProfile("pim-opt");
  for (const Collective c : {Collective::kAllReduce, Collective::kReduceScatter, Collective::kAllToAll}) {
    const CollectiveCost host = ModelCollective(p, c, CollectiveRoute::kHost, 1024, 1 << 20, 4);
    const CollectiveCost software = ModelCollective(p, c, CollectiveRoute::kSoftware, 1024, 1 << 20, 4);
    EXPECT_LT(2 * software.seconds, host.seconds) << CollectiveName(c);
    EXPECT_GT(software.dpu_s, 0.0) << CollectiveName(c);  // the relocation kernels
  }
  // 8 bytes per DPU: the two relocation launches and the threads' start outweigh what the route saves.
  const CollectiveCost host = ModelCollective(p, Collective::kAllReduce, CollectiveRoute::kHost, 64, 8, 4);
  const CollectiveCost software = ModelCollective(p, Collective::kAllReduce, CollectiveRoute::kSoftware, 64, 8, 4);
  EXPECT_GT(software.seconds, host.seconds);
  // The broadcast is the SDK's on both routes.
  EXPECT_DOUBLE_EQ(ModelCollective(p, Collective::kBroadcast, CollectiveRoute::kSoftware, 512, 4096).seconds,
                   ModelCollective(p, Collective::kBroadcast, CollectiveRoute::kHost, 512, 4096).seconds);
}

TEST(Collectives, TheChannelsBoundTheDirectRoute) {
  HardwareProfile p = MakeProfile("pim-opt");
  const double base = ModelCollective(p, Collective::kAllToAll, CollectiveRoute::kSoftware, 1024, 1 << 20).bus_s;
  p.pim_channel_bytes_per_s /= 4;  // now the channels, not the ranks, are the bottleneck
  const double slow = ModelCollective(p, Collective::kAllToAll, CollectiveRoute::kSoftware, 1024, 1 << 20).bus_s;
  EXPECT_GT(slow, 2 * base);
  p.dpus_per_channel = 64;  // a channel per rank: four times the channels
  const double wide = ModelCollective(p, Collective::kAllToAll, CollectiveRoute::kSoftware, 1024, 1 << 20).bus_s;
  EXPECT_LT(wide, slow / 2);
}

TEST(Collectives, TheRelocationKernelMovesEveryBlockToItsRotatedPlace) {
  PimSystem system(MakeProfile("pim-opt"), 1);
  DpuSet set = system.Allocate(3);
  set.Load(MakeRelocationKernel());
  const uint64_t bytes = 5 * kRelocationBlockBytes + 512;  // 6 blocks, the last one short
  std::vector<std::vector<uint8_t>> in(3, std::vector<uint8_t>(bytes));
  for (uint32_t d = 0; d < 3; ++d) {
    for (uint64_t i = 0; i < bytes; ++i) in[d][i] = static_cast<uint8_t>(d * 31 + i * 7 + i / kRelocationBlockBytes);
    set.PrepareXfer(d, in[d].data(), bytes);
  }
  set.PushXfer(XferDirection::kToDpu, kMramHeapSymbol, 0, bytes);
  set.BroadcastTo("bytes", 0, &bytes, sizeof(bytes));
  set.Launch();
  const uint64_t blocks = 6;
  for (uint32_t d = 0; d < 3; ++d) {
    std::vector<uint8_t> out(blocks * kRelocationBlockBytes);
    set.CopyFrom(d, kMramHeapSymbol, bytes, out.data(), out.size());
    for (uint64_t b = 0; b < blocks; ++b) {
      const uint64_t size = b + 1 < blocks ? kRelocationBlockBytes : 512;
      const uint64_t target = (b + d) % blocks;
      EXPECT_EQ(std::memcmp(out.data() + target * kRelocationBlockBytes, in[d].data() + b * kRelocationBlockBytes,
                            size),
                0)
          << "DPU " << d << " block " << b;
    }
  }
}

TEST(Collectives, TheRelocationKernelsTimeIsTheEmulatorsAndGrowsWithItsBytes) {
  HardwareProfile p = MakeProfile("pim-opt");
  const double one = RelocationKernelSeconds(p, 1 << 20), two = RelocationKernelSeconds(p, 2 << 20);
  EXPECT_GT(one, 0.0);
  EXPECT_NEAR(two / one, 2.0, 0.1);
  EXPECT_EQ(RelocationKernelSeconds(p, 1 << 20), one);  // memoized: the same value
  // At least the DMA engine's busy time for the bytes read and written.
  EXPECT_GT(one, 2.0 * (1 << 20) * p.dma_occupancy_cycles_per_byte / p.dpu_frequency_hz);
  p.dma_occupancy_cycles_per_byte *= 2;  // another profile: timed again
  EXPECT_GT(RelocationKernelSeconds(p, 1 << 20), 1.5 * one);
}

TEST(Collectives, TheSoftwareRoutesEnergyIsItsBytesItsHostThreadsAndItsRelocatingDpus) {
  HardwareProfile p = MakeProfile("pim-opt");
  const uint32_t n = 1024;
  const uint64_t s = 1 << 20;
  const CollectiveCost ar = ModelCollective(p, Collective::kAllReduce, CollectiveRoute::kSoftware, n, s);
  EXPECT_DOUBLE_EQ(ar.dpu_busy_s, n * RelocationKernelSeconds(p, s));  // one relocation before the host's phase
  const CollectiveCost a2a = ModelCollective(p, Collective::kAllToAll, CollectiveRoute::kSoftware, n, s);
  EXPECT_DOUBLE_EQ(a2a.dpu_busy_s, 2 * ar.dpu_busy_s);                  // one before, one after
  const double bytes = static_cast<double>(ar.to_dpu_bytes + ar.from_dpu_bytes);
  const EnergyJoules e = CollectiveEnergyJoules(p, bytes, ar.bus_s, ar.dpu_busy_s);
  const double cores = std::min(p.collective_host_threads, p.host_cores);
  EXPECT_DOUBLE_EQ(e.transfer_j, bytes * p.channel_energy_j_per_byte + ar.bus_s * cores * p.host_core_power_w);
  EXPECT_DOUBLE_EQ(e.dpu_j, ar.dpu_busy_s * p.dpu_active_power_w);
  EXPECT_EQ(e.host_j + e.link_j, 0.0);
}

TEST(Collectives, BadSizesNameTheirArgument) {
  const HardwareProfile p = MakeProfile("pim-opt");
  const auto parameter_of = [&](uint32_t dpus, uint64_t bytes, uint32_t element) {
    try {
      ModelCollective(p, Collective::kAllReduce, CollectiveRoute::kSoftware, dpus, bytes, element);
    } catch (const ConfigError& e) {
      return e.parameter();
    }
    return std::string("none");
  };
  EXPECT_EQ(parameter_of(0, 64, 4), "dpus");
  EXPECT_EQ(parameter_of(4, 12, 4), "bytes");
  EXPECT_EQ(parameter_of(4, 0, 4), "bytes");
  EXPECT_EQ(parameter_of(4, 64, 3), "element-bytes");
  EXPECT_EQ(parameter_of(4, 64, 4), "none");
  EXPECT_THROW(RelocationKernelSeconds(p, p.mram_bytes), ConfigError);
}

}  // namespace
}  // namespace pimopt::pim
