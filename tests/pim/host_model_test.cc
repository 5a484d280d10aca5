// The modeled host: a reduction's time follows the profile's host fields (compute- or memory-bound, threads capped
// by cores, thread starts), never this machine's clock; MeasureHost() measures this machine with sane results.
#include <gtest/gtest.h>

#include "pimopt/pim/host_model.h"

namespace pimopt::pim {
namespace {

HostReductionWork Work(uint64_t vectors, uint64_t elements, uint32_t bytes = 4) {
  return {.vectors = vectors, .elements = elements, .bytes_per_element = bytes};
}

TEST(HostModel, MemoryBoundReductionStreamsAtTheHostsBandwidth) {
  HardwareProfile p;  // pim-opt: 16 threads on 16 cores, 54 GB/s
  p.host_thread_start_s = 0;
  // Criteo MA-SGD at 2,048 DPUs: 2,048 models of 1,001,472 int32 = 8.2 GB per synchronization.
  const double s = ModelHostReductionSeconds(p, Work(2048, 1001472));
  EXPECT_NEAR(s, 2048.0 * 1001472 * 4 / p.host_memory_bytes_per_s, 1e-9);
  // int64 gradients stream twice the bytes.
  EXPECT_NEAR(ModelHostReductionSeconds(p, Work(2048, 1001472, 8)), 2 * s, 1e-9);
}

TEST(HostModel, FewThreadsAreBoundByTheirOwnBandwidthOrByCompute) {
  HardwareProfile p;
  p.host_thread_start_s = 0;
  p.host_reduction_threads = 1;
  const double one = ModelHostReductionSeconds(p, Work(64, 1 << 20));
  EXPECT_NEAR(one, 64.0 * (1 << 20) * 4 / p.host_thread_bytes_per_s, 1e-9);
  // A slow core makes the same work compute-bound.
  p.host_clock_hz = 1e8;
  EXPECT_NEAR(ModelHostReductionSeconds(p, Work(64, 1 << 20)), 64.0 * (1 << 20) * p.host_cycles_per_element / 1e8,
              1e-9);
}

TEST(HostModel, ThreadsBeyondTheCoresDoNotHelpButCostTheirStart) {
  HardwareProfile p;
  p.host_memory_bytes_per_s = 1e15;  // compute-bound
  p.host_thread_bytes_per_s = 1e15;
  p.host_thread_start_s = 0;
  const double at16 = ModelHostReductionSeconds(p, Work(256, 4096));
  p.host_reduction_threads = 63;  // PIM-Opt's Criteo host: 63 threads on 16 cores
  EXPECT_DOUBLE_EQ(ModelHostReductionSeconds(p, Work(256, 4096)), at16);
  p.host_thread_start_s = 1e-5;
  EXPECT_NEAR(ModelHostReductionSeconds(p, Work(256, 4096)), at16 + 63e-5, 1e-12);
}

TEST(HostModel, TimeGrowsWithTheDpusAndIsZeroWithoutWork) {
  HardwareProfile p;
  EXPECT_EQ(ModelHostReductionSeconds(p, HostReductionWork{}), 0);
  double previous = 0;
  for (uint64_t k : {256, 512, 1024, 2048}) {
    HostReductionWork w = Work(k, 4097);
    w.update_elements = 4097;
    const double s = ModelHostReductionSeconds(p, w);
    EXPECT_GT(s, previous) << k;
    previous = s;
  }
}

TEST(HostModel, MeasuringThisHostGivesPlausibleConstantsThatFormValidOverrides) {
  const HostMeasurement m = MeasureHost(0.2, uint64_t{32} << 20);
  EXPECT_GT(m.clock_hz, 2e8);
  EXPECT_LT(m.clock_hz, 1e10);
  EXPECT_GT(m.cycles_per_element, 0.01);
  EXPECT_LT(m.cycles_per_element, 100);
  EXPECT_GT(m.thread_bytes_per_s, 1e8);
  EXPECT_GT(m.memory_bytes_per_s, 1e8);
  EXPECT_GE(m.cores, 1u);
  HardwareProfile p;
  ApplyOverrides(p, m.ProfileOverrides());  // throws if a field is unknown or out of bounds
  EXPECT_EQ(p.host_cores, m.cores);
  EXPECT_NEAR(p.host_clock_hz, m.clock_hz, m.clock_hz * 1e-2);
}

}  // namespace
}  // namespace pimopt::pim
