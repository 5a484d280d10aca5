// A complete program for pimopt's UPMEM emulator: a DPU kernel (vector addition, c = a + b on int32) and the host
// code that allocates DPUs, pushes the inputs, launches the kernel, pulls the result and prints the modeled time.
// Copy this file to start your own kernel. Build: it is built as `pimopt_example_vector_add` (see
// examples/CMakeLists.txt); run: build/examples/pimopt_example_vector_add [num_dpus] [elements_per_dpu].
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#include "pimopt/pim/system.h"

namespace pim = pimopt::pim;

// ----------------------------------------------------------------------------------------------- DPU side
// Layout of each DPU's MRAM heap: a[n] | b[n] | c[n] (int32). n is a host-visible WRAM variable.
// The kernel is ordinary C++ over the kernel API's operand types (pim::u32, pim::u64, pim::WramPtr, ...): the
// emulator counts what the DPU executes from what the code does - loads and stores through WramPtr, the add, the
// loop's index update and compare-and-branch - so nothing is charged by hand. Plain C++ numbers are compile-time
// constants (free); docs/pim-emulator.md "What a construct costs" lists every construct's cost.
class VectorAdd final : public pim::Kernel {
 public:
  static constexpr uint32_t kBlockElements = 256;  // 1 KB DMAs: large transfers amortize the DMA latency

  pim::KernelSpec Spec() const override {
    pim::KernelSpec spec;
    spec.name = "vector_add";
    spec.tasklets = 16;                                    // >= 11 tasklets keep the pipeline full
    spec.wram_symbols = {{"n", 8}};                        // __host uint64_t n;
    spec.heap_bytes_per_tasklet = 2 * 4 * kBlockElements;  // the two blocks Main allocates
    return spec;
  }

  void Main(pim::Tasklet& t) override {
    if (t.me() == 0) t.MemReset();  // the WRAM heap persists across launches
    t.BarrierWait();
    const pim::u32 n = pim::Cast<uint32_t>(pim::Load(t.Wram<uint64_t>("n")));  // MRAM addresses are 32-bit
    const pim::WramPtr<int32_t> a = t.Alloc<int32_t>(kBlockElements), b = t.Alloc<int32_t>(kBlockElements);
    const pim::u32 mram_a = pim::Cast<uint32_t>(pim::u64(t.MramHeap()));
    const pim::u32 mram_b = mram_a + n * 4, mram_c = mram_b + n * 4;  // * 4: a shift
    // Tasklet k takes blocks k, k + 16, k + 32, ... (n is a multiple of 256 here; a real kernel handles the tail).
    for (pim::u32 i = pim::u32(t.me()) * kBlockElements; i < n; i += t.nr_tasklets() * kBlockElements) {
      t.MramRead(mram_a + i * 4, a, 4 * kBlockElements);
      t.MramRead(mram_b + i * 4, b, 4 * kBlockElements);
      for (pim::u32 j = 0; j < kBlockElements; ++j) a[j] += b[j];  // per element: 2 loads, add, store, loop
      t.MramWrite(a, mram_c + i * 4, 4 * kBlockElements);
    }
  }
};

// ----------------------------------------------------------------------------------------------- host side
int main(int argc, char** argv) {
  const uint32_t num_dpus = argc > 1 ? static_cast<uint32_t>(std::atoi(argv[1])) : 64;
  const uint64_t n = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1 << 16;
  if (n % VectorAdd::kBlockElements != 0) {
    std::fprintf(stderr, "elements_per_dpu must be a multiple of %u\n", VectorAdd::kBlockElements);
    return 2;
  }
  try {
    pim::PimSystem system(pim::MakeProfile("pim-opt"));
    pim::DpuSet dpus = system.Allocate(num_dpus);
    dpus.Load(std::make_shared<VectorAdd>());

    // Inputs: DPU d gets a = d + i, b = 2i. One parallel push per array (same length to every DPU).
    std::vector<std::vector<int32_t>> inputs(num_dpus, std::vector<int32_t>(2 * n));
    for (uint32_t d = 0; d < num_dpus; ++d) {
      for (uint64_t i = 0; i < n; ++i) {
        inputs[d][i] = static_cast<int32_t>(d + i);
        inputs[d][n + i] = static_cast<int32_t>(2 * i);
      }
      dpus.PrepareXfer(d, inputs[d].data(), 8 * n);
    }
    dpus.PushXfer(pim::XferDirection::kToDpu, pim::kMramHeapSymbol, 0, 8 * n);
    dpus.BroadcastTo("n", 0, &n, sizeof(n));

    const pim::LaunchStats launch = dpus.Launch();

    std::vector<std::vector<int32_t>> outputs(num_dpus, std::vector<int32_t>(n));
    for (uint32_t d = 0; d < num_dpus; ++d) dpus.PrepareXfer(d, outputs[d].data(), 4 * n);
    dpus.PushXfer(pim::XferDirection::kFromDpu, pim::kMramHeapSymbol, 8 * n, 4 * n);

    for (uint32_t d = 0; d < num_dpus; ++d) {
      for (uint64_t i = 0; i < n; ++i) {
        if (outputs[d][i] != static_cast<int32_t>(d + 3 * i)) {
          std::fprintf(stderr, "wrong result on DPU %u at %llu\n", d, static_cast<unsigned long long>(i));
          return 1;
        }
      }
    }
    const pim::SetStats& s = dpus.stats();
    std::printf("vector_add on %u DPUs x %llu elements: correct\n", num_dpus, static_cast<unsigned long long>(n));
    std::printf(
        "modeled: CPU->DPU %.3f ms, kernel %.3f ms (%.2f DPU cycles/element; launch overhead %.3f ms), "
        "DPU->CPU %.3f ms\n",
        1e3 * s.to_dpu_s, 1e3 * launch.kernel_s, launch.slowest.total / static_cast<double>(n), 1e3 * launch.overhead_s,
        1e3 * s.from_dpu_s);
    std::printf("slowest DPU: issue %.0f, DMA %.0f, sync %.0f cycles; energy %.3f mJ; host wall %.3f ms\n",
                launch.slowest.issue, launch.slowest.dma, launch.slowest.sync, 1e3 * launch.energy_j,
                1e3 * launch.host_wall_s);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
