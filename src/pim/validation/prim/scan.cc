// PrIM's prefix sums (int64, 1 KB blocks), as [uPIMulator] timed them (BL = 10):
//  - SCAN-SSA (scan-scan-add): kernel 1 scans each block, passes the running total along the tasklets with
//    handshakes, adds it and writes the block; the host scans the DPUs' totals and sends each DPU its prefix;
//    kernel 2 adds it to the DPU's whole output;
//  - SCAN-RSS (reduce-scan-scan): kernel 1 sums the DPU's elements; the host scans the sums; kernel 2 is SSA's
//    kernel 1 starting from the DPU's prefix.
// The kernel timer covers both launches; the host's exchange in between is the DPU->DPU time.
#include "host.h"
#include "kernel_util.h"

namespace pimopt::pim::prim {
// The port's own names: a named namespace, so that the ports share unity batches (an anonymous one is one
// namespace per batch).
namespace scan_port {

constexpr uint32_t kBlock = 1024;
constexpr uint32_t kRegs = kBlock / 8;

struct Args {  // dpu_arguments_t
  uint32_t size;
  uint32_t kernel;
  int64_t t_count;
};

class ScanKernel final : public Kernel {
 public:
  explicit ScanKernel(bool rss) : rss_(rss) {}
  KernelSpec Spec() const override {
    KernelSpec spec;
    spec.name = rss_ ? "prim_scan_rss" : "prim_scan_ssa";
    spec.wram_symbols = {{"DPU_INPUT_ARGUMENTS", sizeof(Args)},
                         {"DPU_RESULTS", 8 * 24},
                         {"message", 8 * 24},
                         {"message_partial_count", 8}};
    spec.heap_bytes_per_tasklet = 2 * kBlock;
    return spec;
  }

  // reduction (noinline), #pragma unroll
  static i64 Reduction(WramPtr<int64_t> input) {
    CountCall();
    i64 output = 0;
    for (uint32_t j = 0; j < kRegs; ++j) output += input[j];
    return output;
  }
  // scan (noinline), #pragma unroll: output[j] = output[j - 1] + input[j] (the running sum stays in registers)
  static i64 Scan(WramPtr<int64_t> output, WramPtr<int64_t> input) {
    CountCall();
    i64 running = input[0];
    output[0] = running;
    for (uint32_t j = 1; j < kRegs; ++j) {
      running = running + input[j];
      output[j] = running;
    }
    return running;
  }
  // add_ (noinline), #pragma unroll
  static void Add(WramPtr<int64_t> output, i64 p_count) {
    CountCall();
    for (uint32_t j = 0; j < kRegs; ++j) output[j] += p_count;
  }
  // handshake_sync (noinline)
  void Main(Tasklet& t) override {
    auto* args = t.Wram<Args>("DPU_INPUT_ARGUMENTS");
    KernelDispatch(args->kernel);
    const uint32_t kernel = args->kernel;
    if (rss_ ? kernel == 0 : false) return Reduce(t, args);
    if (rss_ ? kernel == 1 : kernel == 0) return ScanAdd(t, args);
    return AddPrefix(t, args);
  }

 private:
  // RSS kernel 1
  static void Reduce(Tasklet& t, Args* args) {
    const u32 tasklet_id = t.me();
    if (tasklet_id == 0) MemReset(t);
    t.BarrierWait();
    const WramPtr<int64_t> result = t.WramVar<int64_t>("DPU_RESULTS") + tasklet_id;
    const WramPtr<int64_t> message = t.WramVar<int64_t>("message");
    const u32 input_size_dpu_bytes = Load(&args->size);
    const u32 base_tasklet = tasklet_id << 10;
    const u32 mram_base_addr_a = HeapPointer(t);
    const WramPtr<int64_t> cache_a = MemAlloc<int64_t>(t, kBlock);
    i64 l_count = 0;
    for (u32 byte_index = base_tasklet; byte_index < input_size_dpu_bytes; byte_index += kBlock * t.nr_tasklets()) {
      t.MramRead(mram_base_addr_a + byte_index, cache_a, kBlock);
      l_count += Reduction(cache_a);
    }
    message[tasklet_id] = l_count;
    t.BarrierWait();
    if (tasklet_id == 0) {
      for (uint32_t each_tasklet = 1; each_tasklet < t.nr_tasklets(); ++each_tasklet) {
        message[0] += message[each_tasklet];
      }
      *result = message[0].load();
    }
  }
  // SSA kernel 1 = RSS kernel 2
  static void ScanAdd(Tasklet& t, Args* args) {
    const u32 tasklet_id = t.me();
    if (tasklet_id == 0) MemReset(t);
    t.BarrierWait();
    const WramPtr<int64_t> result = t.WramVar<int64_t>("DPU_RESULTS") + tasklet_id;
    const WramPtr<int64_t> message = t.WramVar<int64_t>("message");
    const WramPtr<int64_t> message_partial_count = t.WramVar<int64_t>("message_partial_count");
    const u32 input_size_dpu_bytes = Load(&args->size);
    const u32 base_tasklet = tasklet_id << 10;
    const u32 mram_base_addr_a = HeapPointer(t);
    const u32 mram_base_addr_b = mram_base_addr_a + input_size_dpu_bytes;
    const WramPtr<int64_t> cache_a = MemAlloc<int64_t>(t, kBlock);
    const WramPtr<int64_t> cache_b = MemAlloc<int64_t>(t, kBlock);
    if (tasklet_id == t.nr_tasklets() - 1) *message_partial_count = Load(&args->t_count);
    t.BarrierWait();
    for (u32 byte_index = base_tasklet; byte_index < input_size_dpu_bytes; byte_index += kBlock * t.nr_tasklets()) {
      t.MramRead(mram_base_addr_a + byte_index, cache_a, kBlock);
      const i64 l_count = Scan(cache_b, cache_a);
      const i64 p_count = HandshakeSync(t, message, l_count, tasklet_id);
      t.BarrierWait();
      Add(cache_b, *message_partial_count + p_count);
      t.MramWrite(cache_b, mram_base_addr_b + byte_index, kBlock);
      if (tasklet_id == t.nr_tasklets() - 1) {
        *result = *message_partial_count + p_count + l_count;
        *message_partial_count = (*result).load();
      }
    }
  }
  // SSA kernel 2
  static void AddPrefix(Tasklet& t, Args* args) {
    const u32 tasklet_id = t.me();
    if (tasklet_id == 0) MemReset(t);
    t.BarrierWait();
    const u32 input_size_dpu_bytes = Load(&args->size);
    const u32 base_tasklet = tasklet_id << 10;
    const u32 mram_base_addr_b = HeapPointer(t) + input_size_dpu_bytes;
    const WramPtr<int64_t> cache_a = MemAlloc<int64_t>(t, kBlock);
    const i64 t_count = Load(&args->t_count);
    for (u32 byte_index = base_tasklet; byte_index < input_size_dpu_bytes; byte_index += kBlock * t.nr_tasklets()) {
      t.MramRead(mram_base_addr_b + byte_index, cache_a, kBlock);
      Add(cache_a, t_count);
      t.MramWrite(cache_a, mram_base_addr_b + byte_index, kBlock);
    }
  }

  bool rss_;
};

RunResult RunScan(const RunRequest& r, const HardwareProfile& p, bool rss) {
  const char* name = rss ? "SCAN-RSS" : "SCAN-SSA";
  Host host(r, p, name);
  host.Load(rss ? "prim_scan_rss" : "prim_scan_ssa", std::make_shared<ScanKernel>(rss));
  const uint32_t dpus = host.dpus(), n = host.tasklets();
  const uint64_t input_size = r.param;
  const uint64_t input_size_dpu = PaddedShare(input_size, dpus, uint64_t{n} * kRegs);
  std::vector<int64_t> a(input_size_dpu * dpus, 0), c(a.size(), 0);
  Rand rand;
  for (uint64_t i = 0; i < input_size; ++i) a[i] = rand();
  const Args args{static_cast<uint32_t>(input_size_dpu * 8), 0, 0};
  host.Push(kCpuToDpu, "DPU_INPUT_ARGUMENTS", 0, sizeof(Args), std::vector<const void*>(dpus, &args));
  host.Push(kCpuToDpu, kMramHeapSymbol, 0, input_size_dpu * 8, PerDpu(a.data(), input_size_dpu, dpus));
  host.Launch();
  // The exchange: each DPU's total (SSA: the last tasklet's; RSS: tasklet 0's), the host's scan, the prefixes.
  std::vector<int64_t> results(uint64_t{dpus} * n);
  host.Pull(kDpuToDpu, "DPU_RESULTS", 0, n * 8, PerDpuOut(results.data(), n, dpus));
  std::vector<Args> args2(dpus);
  int64_t accum = 0;
  for (uint32_t d = 0; d < dpus; ++d) {
    args2[d] = {static_cast<uint32_t>(input_size_dpu * 8), 1, accum};
    accum += results[uint64_t{d} * n + (rss ? 0 : n - 1)];
  }
  host.Push(kDpuToDpu, "DPU_INPUT_ARGUMENTS", 0, sizeof(Args), PerDpu(args2.data(), 1, dpus));
  host.Launch();
  host.Pull(kDpuToCpu, kMramHeapSymbol, input_size_dpu * 8, input_size_dpu * 8,
            PerDpuOut(c.data(), input_size_dpu, dpus));
  int64_t sum = 0;
  for (uint64_t i = 0; i < input_size; ++i) {
    sum += a[i];
    if (c[i] != sum) Mismatch(name, StrCat("prefix sum ", i, ": ", c[i], " instead of ", sum));
  }
  return host.Finish(StrCat("the prefix sums of ", input_size, " elements"));
}

}  // namespace scan_port

RunResult RunScanSsa(const RunRequest& r, const HardwareProfile& p) { return scan_port::RunScan(r, p, false); }
RunResult RunScanRss(const RunRequest& r, const HardwareProfile& p) { return scan_port::RunScan(r, p, true); }

}  // namespace pimopt::pim::prim
