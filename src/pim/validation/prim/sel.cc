// PrIM's SEL (select: keep the elements that fail the predicate x % 2 == 0; int64, 1 KB blocks): each tasklet
// selects from its block, the tasklets pass their running counts along with handshakes, meet at a barrier, and
// write their kept elements where the counts say; the host reads each DPU's count, then copies each DPU's output
// serially (dpu_copy_from of a different length per DPU). As [uPIMulator] timed it (BL = 10).
#include "host.h"
#include "kernel_util.h"

namespace pimopt::pim::prim {
// The port's own names: a named namespace, so that the ports share unity batches (an anonymous one is one
// namespace per batch).
namespace sel_port {

constexpr uint32_t kBlock = 1024;
constexpr uint32_t kRegs = kBlock / 8;  // REGS

struct Args {
  uint32_t size;
  uint32_t kernel;
};
struct Result {
  uint32_t t_count;
};

// pred(x): (x % 2) == 0 (inlined). Only the low bit matters: clang tests the low word (one and, its branch fused).
inline Cond Pred(u64 x) { return (Cast<uint32_t>(x) % 2) == 0; }

class SelKernel final : public Kernel {
 public:
  KernelSpec Spec() const override {
    KernelSpec spec;
    spec.name = "prim_sel";
    spec.wram_symbols = {{"DPU_INPUT_ARGUMENTS", sizeof(Args)},
                         {"DPU_RESULTS", 4 * 24},
                         {"message", 4 * 24},
                         {"message_partial_count", 8}};
    spec.heap_bytes_per_tasklet = 2 * kBlock;
    return spec;
  }

  // select (noinline), #pragma unroll over REGS
  static u32 Select(WramPtr<uint64_t> output, WramPtr<uint64_t> input) {
    CountCall();
    u32 pos = 0;
    for (uint32_t j = 0; j < kRegs; ++j) {
      const u64 x = input[j];
      if (!Pred(x)) {
        output[pos] = x;
        ++pos;
      }
    }
    return pos;
  }

  // handshake_sync (noinline)
  void Main(Tasklet& t) override {
    auto* args = t.Wram<Args>("DPU_INPUT_ARGUMENTS");
    KernelDispatch(args->kernel);
    const u32 tasklet_id = t.me();
    if (tasklet_id == 0) MemReset(t);
    t.BarrierWait();
    const WramPtr<uint32_t> result = t.WramVar<uint32_t>("DPU_RESULTS") + tasklet_id;
    const WramPtr<uint32_t> message = t.WramVar<uint32_t>("message");
    const WramPtr<uint32_t> message_partial_count = t.WramVar<uint32_t>("message_partial_count");
    const u32 input_size_dpu_bytes = Load(&args->size);
    const u32 base_tasklet = tasklet_id << 10;
    const u32 mram_base_addr_a = HeapPointer(t);
    const u32 mram_base_addr_b = mram_base_addr_a + input_size_dpu_bytes;
    const WramPtr<uint64_t> cache_a = MemAlloc<uint64_t>(t, kBlock);
    const WramPtr<uint64_t> cache_b = MemAlloc<uint64_t>(t, kBlock);
    if (tasklet_id == t.nr_tasklets() - 1) *message_partial_count = 0;
    t.BarrierWait();
    for (u32 byte_index = base_tasklet; byte_index < input_size_dpu_bytes; byte_index += kBlock * t.nr_tasklets()) {
      t.MramRead(mram_base_addr_a + byte_index, cache_a, kBlock);
      const u32 l_count = Select(cache_b, cache_a);
      const u32 p_count = HandshakeSync(t, message, l_count, tasklet_id);
      t.BarrierWait();
      const u32 partial = *message_partial_count;
      t.MramWrite(cache_b, mram_base_addr_b + (partial + p_count) * 8, l_count * 8);
      if (tasklet_id == t.nr_tasklets() - 1) {
        *result = *message_partial_count + p_count + l_count;
        *message_partial_count = (*result).load();
      }
    }
  }
};

}  // namespace sel_port

RunResult RunSel(const RunRequest& r, const HardwareProfile& p) {
  using namespace sel_port;
  Host host(r, p, "SEL");
  host.Load("prim_sel", std::make_shared<SelKernel>());
  const uint32_t dpus = host.dpus(), n = host.tasklets();
  const uint64_t input_size = r.param;
  const uint64_t input_size_dpu_round = PaddedShare(input_size, dpus, uint64_t{n} * kRegs);
  std::vector<uint64_t> a(input_size_dpu_round * dpus, 0), c(a.size(), 0);
  for (uint64_t i = 0; i < input_size; ++i) a[i] = i + 1;  // the rest: 0, which the predicate removes
  std::vector<uint64_t> expected;
  for (uint64_t i = 0; i < input_size; ++i) {
    if (a[i] % 2 != 0) expected.push_back(a[i]);
  }
  const Args args{static_cast<uint32_t>(input_size_dpu_round * 8), 0};
  host.Push(kCpuToDpu, "DPU_INPUT_ARGUMENTS", 0, sizeof(Args), std::vector<const void*>(dpus, &args));
  host.Push(kCpuToDpu, kMramHeapSymbol, 0, input_size_dpu_round * 8, PerDpu(a.data(), input_size_dpu_round, dpus));
  host.Launch();
  std::vector<Result> results(uint64_t{dpus} * n);
  host.Pull(kDpuToCpu, "DPU_RESULTS", 0, n * sizeof(Result), PerDpuOut(results.data(), n, dpus));
  std::vector<uint64_t> counts(dpus), scan(dpus);
  uint64_t accum = 0;
  for (uint32_t d = 0; d < dpus; ++d) {
    counts[d] = results[uint64_t{d} * n + n - 1].t_count;
    scan[d] = accum;
    accum += counts[d];
  }
  for (uint32_t d = 0; d < dpus; ++d) {
    if (counts[d] == 0) continue;
    host.CopyFrom(kDpuToCpu, d, kMramHeapSymbol, input_size_dpu_round * 8, c.data() + scan[d], counts[d] * 8);
  }
  if (accum != expected.size()) Mismatch("SEL", StrCat(accum, " elements kept instead of ", expected.size()));
  for (uint64_t i = 0; i < accum; ++i) {
    if (c[i] != expected[i]) Mismatch("SEL", StrCat("kept element ", i, ": ", c[i], " instead of ", expected[i]));
  }
  return host.Finish(StrCat("the ", accum, " kept of ", input_size, " elements, in order"));
}

}  // namespace pimopt::pim::prim
