// PrIM's histograms of 12-bit pixels into 256 bins (uint32, 1 KB blocks), as [uPIMulator] timed them (BL = 10):
//  - HST-S: each tasklet fills a histogram of its own in WRAM; after a barrier the tasklets add them up bin by bin
//    (tasklet k takes bins k, k + 16, ...), reaching each other's histograms through WRAM pointers kept in WRAM;
//  - HST-L (NR_HISTO = 1): all tasklets share one histogram and take a mutex around every bin increment.
// The input image: PrIM reads the Van Hateren natural image; pimopt draws pixels with that image's distribution of
// the software multiply's operand length (pixel x 256 bins: a 9-bit multiplier for 71% of the pixels, 8 bits for
// 21%, 7 for 8%), which is what the kernels' timing depends on (docs/pim-emulator.md).
#include <algorithm>

#include "host.h"
#include "kernel_util.h"

namespace pimopt::pim::prim {
// The port's own names: a named namespace, so that the ports share unity batches (an anonymous one is one
// namespace per batch).
namespace hst_port {

constexpr uint32_t kBlock = 1024;
constexpr uint32_t kDepth = 12;

struct Args {
  uint32_t size;
  uint32_t transfer_size;
  uint32_t bins;
  uint32_t kernel;
};

class HstKernel final : public Kernel {
 public:
  explicit HstKernel(bool shared) : shared_(shared) {}
  KernelSpec Spec() const override {
    KernelSpec spec;
    spec.name = shared_ ? "prim_hst_l" : "prim_hst_s";
    spec.wram_symbols = {{"DPU_INPUT_ARGUMENTS", sizeof(Args)}, {"message", 4 * 24}};
    // The cache and (HST-S: every tasklet; HST-L: tasklet 0) a histogram of 256 bins.
    spec.heap_bytes_per_tasklet = kBlock + 4 * 256;
    return spec;
  }

  // HST-S's histogram (noinline)
  static void HistogramPrivate(WramPtr<uint32_t> histo, u32 bins, WramPtr<uint32_t> input, u32 l_size) {
    CountCall();
    for (u32 j = 0; j < l_size; ++j) {
      const u32 d = input[j];
      histo[(d * bins) >> kDepth] += 1;
    }
  }
  // HST-L's histogram (noinline): the bin's increment under the histogram's mutex. The mutex's id is read from
  // my_mutex[] for the lock and again for the unlock: mutex_id_t is a byte (uint8_t), and a character type may alias
  // the histogram's uint32_t just stored (C11 6.5p7), so the compiler must reload it, inside the critical section.
  static void HistogramShared(Tasklet& t, WramPtr<uint32_t> histo, u32 bins, WramPtr<uint32_t> input,
                              const uint32_t* mutex_ids, u32 histo_id, u32 l_size) {
    CountCall();
    for (u32 j = 0; j < l_size; ++j) {
      const u32 d = (input[j] * bins) >> kDepth;
      const u32 mutex = Load(mutex_ids + histo_id.value());
      t.MutexLock(mutex.value());
      histo[d] += 1;
      const u32 reread = Load(mutex_ids + histo_id.value());
      t.MutexUnlock(reread.value());
    }
  }

  void Main(Tasklet& t) override {
    auto* args = t.Wram<Args>("DPU_INPUT_ARGUMENTS");
    KernelDispatch(args->kernel);
    const u32 tasklet_id = t.me();
    const WramPtr<uint32_t> message = t.WramVar<uint32_t>("message");  // WRAM addresses of the histograms
    const uint32_t mutex_ids[1] = {0};                                 // my_mutex[NR_HISTO] (zero-initialized)
    const uint32_t nr_histo = 1, nr_l_tasklet = t.nr_tasklets() / nr_histo;
    const u32 my_histo_id = tasklet_id & (nr_histo - 1);
    const u32 l_tasklet_id = tasklet_id / nr_histo;
    if (tasklet_id == 0) {
      MemReset(t);
      if (shared_) Count(Op::kWramStore, 4);  // the histogram barriers' initialization
    }
    t.BarrierWait();
    const u32 input_size_dpu_bytes = Load(&args->size);
    const u32 input_size_dpu_bytes_transfer = Load(&args->transfer_size);
    const u32 bins = Load(&args->bins);
    const u32 base_tasklet = tasklet_id << 10;
    const u32 mram_base_addr_a = HeapPointer(t);
    const u32 mram_base_addr_histo = mram_base_addr_a + input_size_dpu_bytes_transfer;
    const WramPtr<uint32_t> cache_a = MemAlloc<uint32_t>(t, kBlock);
    if (!shared_) {
      const WramPtr<uint32_t> histo = MemAlloc<uint32_t>(t, (bins * 4).value());
      for (u32 i = 0; i < bins; ++i) histo[i] = 0;
      for (u32 byte_index = base_tasklet; byte_index < input_size_dpu_bytes; byte_index += kBlock * t.nr_tasklets()) {
        const u32 l_size_bytes =
            (byte_index + kBlock >= input_size_dpu_bytes) ? u32(input_size_dpu_bytes - byte_index) : u32(kBlock);
        t.MramRead(mram_base_addr_a + byte_index, cache_a, l_size_bytes);
        HistogramPrivate(histo, bins, cache_a, l_size_bytes >> 2);
      }
      message[tasklet_id] = t.WramAddress(histo.get());
      t.BarrierWait();
    } else {
      if (tasklet_id < nr_histo) {
        const WramPtr<uint32_t> histo = MemAlloc<uint32_t>(t, (bins * 4).value());
        message[tasklet_id] = t.WramAddress(histo.get());
      }
      t.BarrierWait(1, nr_l_tasklet);  // barriers[my_histo_id]
      const WramPtr<uint32_t> my_histo = t.WramAt<uint32_t>(message[my_histo_id].load().value());
      for (u32 i = l_tasklet_id; i < bins; i += nr_l_tasklet) my_histo[i] = 0;
      t.BarrierWait(1, nr_l_tasklet);
      for (u32 byte_index = base_tasklet; byte_index < input_size_dpu_bytes; byte_index += kBlock * t.nr_tasklets()) {
        const u32 l_size_bytes =
            (byte_index + kBlock >= input_size_dpu_bytes) ? u32(input_size_dpu_bytes - byte_index) : u32(kBlock);
        t.MramRead(mram_base_addr_a + byte_index, cache_a, l_size_bytes);
        HistogramShared(t, my_histo, bins, cache_a, mutex_ids, my_histo_id, l_size_bytes >> 2);
      }
      t.BarrierWait();
    }
    // Merge: tasklet k adds bins k, k + 16, ... of every histogram into histogram 0.
    const uint32_t histograms = shared_ ? nr_histo : t.nr_tasklets();
    const WramPtr<uint32_t> histo_dpu = t.WramAt<uint32_t>(message[0].load().value());
    for (u32 i = tasklet_id; i < bins; i += t.nr_tasklets()) {
      u32 b = 0;
      for (uint32_t j = 0; j < histograms; ++j) {
        const WramPtr<uint32_t> h = t.WramAt<uint32_t>(message[j].load().value());
        b += h[i];
      }
      histo_dpu[i] = b;
    }
    t.BarrierWait();
    if (tasklet_id == 0) {
      if (bins * 4 <= 2048) {
        t.MramWrite(histo_dpu, mram_base_addr_histo, bins * 4);
      } else {
        for (u32 offset = 0; offset < ((bins * 4) >> 11); ++offset) {
          t.MramWrite(histo_dpu + (offset << 9), mram_base_addr_histo + (offset << 11), 2048);
        }
      }
    }
  }

 private:
  bool shared_;
};

RunResult RunHistogram(const RunRequest& r, const HardwareProfile& p, bool shared) {
  const char* name = shared ? "HST-L" : "HST-S";
  Host host(r, p, name);
  host.Load(shared ? "prim_hst_l" : "prim_hst_s", std::make_shared<HstKernel>(shared));
  const uint32_t dpus = host.dpus(), bins = 256;
  const uint64_t input_size = r.param;  // strong scaling (exp = 1): the parameter is the whole image
  const uint64_t input_size_8bytes = (input_size * 4) % 8 != 0 ? RoundUp(input_size, 8) : input_size;
  const uint64_t input_size_dpu = DivCeil(input_size, dpus);
  const uint64_t input_size_dpu_8bytes = (input_size_dpu * 4) % 8 != 0 ? RoundUp(input_size_dpu, 8) : input_size_dpu;
  if (input_size_8bytes < input_size_dpu_8bytes * (dpus - 1)) {
    throw ConfigError("--param", StrCat(input_size, " pixels leave the last of ", dpus, " DPUs none"));
  }
  std::vector<uint32_t> a(input_size_dpu_8bytes * dpus, 0);
  Rand rand(5);
  std::vector<uint32_t> expected(bins, 0);
  for (uint64_t i = 0; i < input_size; ++i) {
    const uint32_t u = static_cast<uint32_t>(rand()) % 1000;
    uint32_t v;
    if (u < 714) {  // 256 .. 4095, more of the small values (a natural image's skew)
      const uint32_t w = static_cast<uint32_t>(rand()) % 3840;
      v = 256 + w * w / 3840;
    } else if (u < 922) {
      v = 128 + static_cast<uint32_t>(rand()) % 128;
    } else {
      v = 64 + static_cast<uint32_t>(rand()) % 64;
    }
    a[i] = v;
    ++expected[(v * bins) >> kDepth];
  }
  std::vector<Args> args(dpus);
  for (uint32_t i = 0; i < dpus; ++i) {
    args[i] = {static_cast<uint32_t>(input_size_dpu_8bytes * 4), static_cast<uint32_t>(input_size_dpu_8bytes * 4), bins,
               0};
  }
  args[dpus - 1].size = static_cast<uint32_t>((input_size_8bytes - input_size_dpu_8bytes * (dpus - 1)) * 4);
  // The host pads the image with zeros to whole 8-byte rows per DPU, and the DPUs count the padding they are given
  // in bin 0, as on the hardware: the reference counts it too.
  uint64_t padding = 0;
  for (uint32_t d = 0; d < dpus; ++d) {
    const uint64_t first = uint64_t{d} * input_size_dpu_8bytes, end = first + args[d].size / 4;
    if (end > input_size) padding += end - std::max(first, input_size);
  }
  expected[0] += static_cast<uint32_t>(padding);
  const uint64_t bytes = input_size_dpu_8bytes * 4;
  host.Push(kCpuToDpu, "DPU_INPUT_ARGUMENTS", 0, sizeof(Args), PerDpu(args.data(), 1, dpus));
  host.Push(kCpuToDpu, kMramHeapSymbol, 0, bytes, PerDpu(a.data(), input_size_dpu_8bytes, dpus));
  host.Launch();
  std::vector<uint32_t> histo(uint64_t{dpus} * bins);
  host.Pull(kDpuToCpu, kMramHeapSymbol, bytes, bins * 4, PerDpuOut(histo.data(), bins, dpus));
  for (uint32_t d = 1; d < dpus; ++d) {
    for (uint32_t j = 0; j < bins; ++j) histo[j] += histo[uint64_t{d} * bins + j];
  }
  for (uint32_t j = 0; j < bins; ++j) {
    if (histo[j] != expected[j]) Mismatch(name, StrCat("bin ", j, ": ", histo[j], " instead of ", expected[j]));
  }
  return host.Finish(StrCat("the ", bins, "-bin histogram of ", input_size, " pixels",
                            padding ? StrCat(" and ", padding, " padding pixels of value 0") : std::string()));
}

}  // namespace hst_port

RunResult RunHstS(const RunRequest& r, const HardwareProfile& p) { return hst_port::RunHistogram(r, p, false); }
RunResult RunHstL(const RunRequest& r, const HardwareProfile& p) { return hst_port::RunHistogram(r, p, true); }

}  // namespace pimopt::pim::prim
