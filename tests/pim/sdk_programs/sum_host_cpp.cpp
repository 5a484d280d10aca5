// An SDK-style host program in C++ (pimopt's test corpus) for sum_dpu.c, written against the SDK's C++ API
// (#include <dpu>): every class and every form of copy, checked against the sums computed here.
// Prints "sdk sum c++: PASS" and exits 0 when every result is right.
#include <dpu>

#include <cstdint>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#ifndef DPU_BINARY
#define DPU_BINARY "sum_dpu.dpu"
#endif

namespace {

const unsigned kDpus = 130;  // three ranks of 64: two full, one partial
const unsigned kElements = 4096;
int failures = 0;

void Expect(bool condition, const std::string& what) {
  if (!condition) {
    std::cerr << "FAILED: " << what << "\n";
    ++failures;
  }
}

// Each DPU's total of its input times `scale`.
std::vector<uint64_t> Totals(const std::vector<std::vector<uint32_t>>& input, const std::vector<uint32_t>& scale) {
  std::vector<uint64_t> totals;
  for (size_t d = 0; d < input.size(); ++d) {
    uint64_t sum = 0;
    for (uint32_t v : input[d]) sum += static_cast<uint64_t>(v) * scale[d];
    totals.push_back(sum);
  }
  return totals;
}

// What the DPUs' "total" holds, read back one buffer per DPU.
std::vector<uint64_t> ReadTotals(dpu::DpuSet& set) {
  std::vector<std::vector<uint64_t>> totals(set.dpus().size(), std::vector<uint64_t>(1));
  set.copy(totals, "total");
  std::vector<uint64_t> flat;
  for (const auto& t : totals) flat.push_back(t[0]);
  return flat;
}

}  // namespace

int main() {
  try {
    auto system = dpu::DpuSet::allocate(kDpus);
    Expect(system.dpus().size() == kDpus, "dpus(): " + std::to_string(system.dpus().size()));
    Expect(system.ranks().size() == 3 && system.ranks()[2]->dpus().size() == 2, "ranks()");
    Expect(system.dpus()[70]->ranks().size() == 1 && system.dpus()[70]->ranks()[0] == system.ranks()[1],
           "a DPU's rank");
    dpu::DpuProgram program = system.load(DPU_BINARY);

    std::vector<std::vector<uint32_t>> input(kDpus, std::vector<uint32_t>(kElements));
    for (unsigned d = 0; d < kDpus; ++d)
      for (unsigned i = 0; i < kElements; ++i) input[d][i] = ((d * kElements + i) * 2654435761u) >> 20;
    system.copy("n_elements", std::vector<uint32_t>{kElements});  // one buffer to every DPU
    system.copy("input", input);                                   // one buffer per DPU
    system.exec();
    std::vector<uint32_t> ones(kDpus, 1);
    Expect(ReadTotals(system) == Totals(input, ones), "the totals of the first launch");

    // By symbol, with offsets and sizes: a scale of 3 on the second rank, 2 on DPU 5 (a DPU's own copy).
    dpu::DpuSymbol scale = program.get("scale");
    system.ranks()[1]->copy(scale, 0, std::vector<uint32_t>{3, 99}, 4);
    system.dpus()[5]->copy("scale", std::vector<uint32_t>{2});
    std::vector<uint32_t> scales(kDpus, 1);
    for (unsigned d = 64; d < 128; ++d) scales[d] = 3;
    scales[5] = 2;
    // The second half of each input replaced by a per-DPU push at an offset, with a size.
    std::vector<std::vector<uint32_t>> half(kDpus, std::vector<uint32_t>(kElements / 2 + 7));
    for (unsigned d = 0; d < kDpus; ++d)
      for (unsigned i = 0; i < kElements / 2; ++i) half[d][i] = input[d][kElements / 2 + i] = d + i;
    system.copy("input", kElements / 2 * 4, half, kElements / 2 * 4);

    // An asynchronous launch, a callback per rank behind it, then a wait.
    auto async = system.async();
    async.exec();
    std::vector<unsigned> rank_dpus;
    async.call([&](dpu::DpuSet& rank, unsigned index) {
      Expect(index == rank_dpus.size(), "callback index " + std::to_string(index));
      rank_dpus.push_back(static_cast<unsigned>(rank.dpus().size()));
    });
    Expect(rank_dpus == std::vector<unsigned>({64, 64, 2}), "a callback per rank");
    unsigned single_calls = 0;
    async.call([&](dpu::DpuSet& whole, unsigned) { single_calls += whole.dpus().size() == kDpus; }, true, true);
    Expect(single_calls == 1, "one callback for the whole set");
    async.sync();
    Expect(ReadTotals(system) == Totals(input, scales), "the totals of the second launch");

    // From the DPUs by symbol with a size and an offset: prefix[1..2] of every DPU.
    dpu::DpuSymbol prefix = program.get("prefix");
    std::vector<std::vector<uint64_t>> prefixes(kDpus, std::vector<uint64_t>(2));
    system.copy(prefixes, 16, prefix, 8);
    Expect(prefixes[3][1] >= prefixes[3][0] && prefixes[3][0] > 0, "prefix[1..2] by symbol");

    // The log: DPU 129 printed its total after 2 launches.
    std::ostringstream log;
    system.dpus()[129]->log(log);
    const std::string expect_log =
        "DPU total " + std::to_string(Totals(input, scales)[129]) + " after 2 launches\n";
    Expect(log.str() == expect_log, "log '" + log.str() + "', expected '" + expect_log + "'");
    std::ostringstream rank_log;
    system.ranks()[2]->log(rank_log);
    Expect(rank_log.str().find("DPU 129:\n" + expect_log) != std::string::npos, "a rank's log: " + rank_log.str());

    // Errors are DpuError, with the C API's text and status.
    try {
      system.copy("no_such_symbol", std::vector<uint32_t>{1});
      Expect(false, "an unknown symbol was accepted");
    } catch (const dpu::DpuError& e) {
      Expect(e.error() == DPU_ERR_UNKNOWN_SYMBOL && std::string(e.what()) == dpu_error_to_string(e.error()),
             std::string("unknown symbol: ") + e.what());
    }
    try {
      std::vector<std::vector<uint32_t>> ragged{{1, 2}, {3}};
      system.copy("input", ragged);
      Expect(false, "buffers of different lengths were accepted");
    } catch (const dpu::DpuError& e) {
      Expect(e.error() == DPU_ERR_INVALID_MEMORY_TRANSFER, std::string("ragged buffers: ") + e.what());
    }
    try {
      std::vector<std::vector<uint32_t>> too_few(kDpus - 1, std::vector<uint32_t>(4));
      system.copy("input", too_few);
      Expect(false, "fewer buffers than DPUs were accepted");
    } catch (const dpu::DpuError& e) {
      Expect(e.error() == DPU_ERR_INVALID_MEMORY_TRANSFER, std::string("too few buffers: ") + e.what());
    }
    try {
      system.load("/nonexistent/program.dpu");
      Expect(false, "another program was loaded");
    } catch (const dpu::DpuError& e) {
      Expect(e.error() == DPU_ERR_ELF_NO_SUCH_FILE || e.error() == DPU_ERR_DIFFERENT_DPU_PROGRAMS,
             std::string("a missing program: ") + e.what());
    }
    // A set moved out of a function keeps its DPUs; allocateRanks gives whole ranks.
    auto ranks = dpu::DpuSet::allocateRanks(2);
    Expect(ranks.ranks().size() == 2 && ranks.dpus().size() == 128, "allocateRanks(2)");
  } catch (const dpu::DpuError& e) {
    std::cerr << "FAILED: DpuError " << e.what() << "\n";
    return 1;
  }
  if (failures > 0) return 1;
  std::printf("sdk sum c++: PASS\n");
  return 0;
}
