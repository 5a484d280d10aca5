// The pipelined reduction: one chunk is the synchronous round; chunks hide the shorter of the pull and the host's
// reduction behind the longer, never below what the shared memory allows, and never make a round slower.
#include "pimopt/pim/pipelined_reduction.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace pimopt::pim {
namespace {

// GA-SGD's gradient sum over `dpus` DPUs of `elements` int64 coordinates, then the model step.
HostReductionWork GradientSum(uint32_t dpus, uint64_t elements) {
  return {.vectors = dpus, .elements = elements, .bytes_per_element = 8, .update_elements = elements,
          .update_bytes_per_element = 24};
}

TEST(PipelinedReduction, SynchronousIsThePullThenTheReduction) {
  const HardwareProfile p = MakeProfile("pim-opt");
  const uint64_t elements = 1 << 18;
  const std::vector<PullShape> pulls{{8 * elements}};
  for (uint32_t dpus : {1u, 64u, 2048u}) {
    const PipelinedReduction r = ModelPipelinedReduction(p, dpus, pulls, GradientSum(dpus, elements));
    const double expected = ModelParallelTransferSeconds(p, XferDirection::kFromDpu, dpus, 8 * elements) +
                            ModelHostReductionSeconds(p, GradientSum(dpus, elements));
    EXPECT_NEAR(r.synchronous_s, expected, 1e-12 * expected) << dpus;
    EXPECT_LE(r.pipelined_s, r.synchronous_s) << dpus;
    EXPECT_GE(r.chunks, 1u);
  }
}

TEST(PipelinedReduction, HidesTheShorterStageBehindTheLonger) {
  const HardwareProfile p = MakeProfile("pim-opt");
  const uint32_t dpus = 2048;
  const uint64_t elements = 1 << 18;  // 2 MB of gradients per DPU: 4 GB pulled, then summed
  const std::vector<PullShape> pulls{{8 * elements}};
  const HostReductionWork work = GradientSum(dpus, elements);
  const double pull_s = ModelParallelTransferSeconds(p, XferDirection::kFromDpu, dpus, 8 * elements);
  const double host_s = ModelHostReductionSeconds(p, work);
  const PipelinedReduction r = ModelPipelinedReduction(p, dpus, pulls, work);
  EXPECT_GT(r.chunks, 1u);
  EXPECT_GT(r.saved_s(), 0.5 * std::min(pull_s, host_s)) << pull_s << " " << host_s;
  EXPECT_LE(r.saved_s(), std::min(pull_s, host_s));
  // The shared memory carries the pulled bytes and the reduction's streams.
  const double streamed = static_cast<double>(dpus) * 8 * elements + static_cast<double>(dpus) * elements * 8 +
                          static_cast<double>(elements) * 24;
  EXPECT_GE(r.pipelined_s, streamed / p.host_memory_bytes_per_s);
  EXPECT_GE(r.pipelined_s, std::max(pull_s, host_s));
}

TEST(PipelinedReduction, SmallVectorsStayInOneChunk) {
  // Each chunk is a transfer call with its fixed cost: for a few hundred bytes per DPU the calls cost more than
  // the overlap saves.
  const HardwareProfile p = MakeProfile("pim-opt");
  const std::vector<PullShape> pulls{{256}};
  const PipelinedReduction r = ModelPipelinedReduction(p, 2048, pulls, GradientSum(2048, 32));
  EXPECT_EQ(r.chunks, 1u);
  EXPECT_EQ(r.pipelined_s, r.synchronous_s);
}

TEST(PipelinedReduction, NoHostWorkNothingToHide) {
  const HardwareProfile p = MakeProfile("pim-opt");
  const std::vector<PullShape> pulls{{1 << 20}};
  const PipelinedReduction r = ModelPipelinedReduction(p, 2048, pulls, {});
  EXPECT_EQ(r.saved_s(), 0);
}

}  // namespace
}  // namespace pimopt::pim
