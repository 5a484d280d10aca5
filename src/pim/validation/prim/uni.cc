// PrIM's UNI (unique: drop consecutive duplicates; int64, 1 KB blocks): as SEL, plus the last value of the
// previous tasklet's block (and of the previous round) passed along the handshake chain, so a run of duplicates
// that crosses blocks is dropped too. As [uPIMulator] timed it (BL = 10).
#include "host.h"
#include "kernel_util.h"

namespace pimopt::pim::prim {
// The port's own names: a named namespace, so that the ports share unity batches (an anonymous one is one
// namespace per batch).
namespace uni_port {

constexpr uint32_t kBlock = 1024;
constexpr uint32_t kRegs = kBlock / 8;

struct Args {
  uint32_t size;
  uint32_t kernel;
};
struct Result {  // dpu_results_t
  uint32_t t_count;
  uint32_t pad;
  int64_t first;
  int64_t last;
};

struct Uint3 {
  u32 x, y, z;
};

class UniKernel final : public Kernel {
 public:
  KernelSpec Spec() const override {
    KernelSpec spec;
    spec.name = "prim_uni";
    spec.wram_symbols = {{"DPU_INPUT_ARGUMENTS", sizeof(Args)},
                         {"DPU_RESULTS", sizeof(Result) * 24},
                         {"message", 4 * 24},
                         {"message_value", 8 * 24},
                         {"message_offset", 4 * 24},
                         {"message_partial_count", 8},
                         {"message_last_from_last", 8}};
    spec.heap_bytes_per_tasklet = 2 * kBlock;
    return spec;
  }

  // unique (noinline), #pragma unroll over REGS
  static u32 Unique(WramPtr<int64_t> output, WramPtr<int64_t> input) {
    CountCall();
    u32 pos = 0;
    i64 previous = input[0];  // pos is 0: constant offsets; the unrolled loop loads each element once
    output[0] = previous;
    ++pos;
    for (uint32_t j = 1; j < kRegs; ++j) {
      const i64 x = input[j];
      if (x != previous) {
        output[pos] = x;
        ++pos;
      }
      previous = x;
    }
    return pos;
  }

  struct Shared {
    WramPtr<uint32_t> message, message_offset, message_partial_count;
    WramPtr<int64_t> message_value, message_last_from_last;
  };

  // handshake_sync (noinline)
  static Uint3 HandshakeSync(Tasklet& t, const Shared& m, WramPtr<int64_t> output, u32 l_count, u32 tasklet_id) {
    CountCall();
    u32 p_count, o_count, offset;
    if (tasklet_id != 0) {
      t.HandshakeWaitFor(tasklet_id.value() - 1);
      p_count = m.message[tasklet_id];
      offset = (m.message_value[tasklet_id] == output[0]) ? u32(1) : u32(0);
      o_count = m.message_offset[tasklet_id];
    } else {
      p_count = 0;
      offset = (*m.message_last_from_last == output[0]) ? u32(1) : u32(0);
      o_count = 0;
    }
    if (tasklet_id < t.nr_tasklets() - 1) {
      m.message[tasklet_id + 1] = p_count + l_count;
      m.message_value[tasklet_id + 1] = output[l_count - 1].load();
      m.message_offset[tasklet_id + 1] = o_count + offset;
      t.HandshakeNotify();
    }
    return {p_count, o_count, offset};
  }

  void Main(Tasklet& t) override {
    auto* args = t.Wram<Args>("DPU_INPUT_ARGUMENTS");
    KernelDispatch(args->kernel);
    const u32 tasklet_id = t.me();
    if (tasklet_id == 0) MemReset(t);
    t.BarrierWait();
    Result* result = t.Wram<Result>("DPU_RESULTS") + t.me();
    Count(Op::kInt32Add);  // &DPU_RESULTS[tasklet_id]
    Shared m;
    m.message = t.WramVar<uint32_t>("message");
    m.message_value = t.WramVar<int64_t>("message_value");
    m.message_offset = t.WramVar<uint32_t>("message_offset");
    m.message_partial_count = t.WramVar<uint32_t>("message_partial_count");
    m.message_last_from_last = t.WramVar<int64_t>("message_last_from_last");
    const u32 input_size_dpu_bytes = Load(&args->size);
    const u32 base_tasklet = tasklet_id << 10;
    const u32 mram_base_addr_a = HeapPointer(t);
    const u32 mram_base_addr_b = mram_base_addr_a + input_size_dpu_bytes;
    const WramPtr<int64_t> cache_a = MemAlloc<int64_t>(t, kBlock);
    const WramPtr<int64_t> cache_b = MemAlloc<int64_t>(t, kBlock);
    if (tasklet_id == t.nr_tasklets() - 1) {
      *m.message_partial_count = 0;
      *m.message_last_from_last = 0xFFFFFFFF;  // a value that is not in the input array
    }
    t.BarrierWait();
    u32 i = 0;
    for (u32 byte_index = base_tasklet; byte_index < input_size_dpu_bytes; byte_index += kBlock * t.nr_tasklets()) {
      t.MramRead(mram_base_addr_a + byte_index, cache_a, kBlock);
      const u32 l_count = Unique(cache_b, cache_a);
      const Uint3 po = HandshakeSync(t, m, cache_b, l_count, tasklet_id);
      const u32 partial = *m.message_partial_count;
      t.MramWrite(cache_b + po.z, mram_base_addr_b + (partial + po.x - po.y) * 8, l_count * 8);
      if (tasklet_id == 0 && i == 0) Store(&result->first, cache_b[0].load());
      if (tasklet_id == t.nr_tasklets() - 1) {
        *m.message_last_from_last = cache_b[l_count - 1].load();
        Store(&result->last, cache_b[l_count - 1].load());
        const u32 total = *m.message_partial_count + po.x + l_count - po.y - po.z;
        Store(&result->t_count, total);
        *m.message_partial_count = Load(&result->t_count);
      }
      t.BarrierWait();
      ++i;
    }
  }
};

}  // namespace uni_port

RunResult RunUni(const RunRequest& r, const HardwareProfile& p) {
  using namespace uni_port;
  Host host(r, p, "UNI");
  host.Load("prim_uni", std::make_shared<UniKernel>());
  const uint32_t dpus = host.dpus(), n = host.tasklets();
  const uint64_t input_size = r.param;
  const uint64_t input_size_dpu_round = PaddedShare(input_size, dpus, uint64_t{n} * kRegs);
  std::vector<int64_t> a(input_size_dpu_round * dpus), c(a.size(), 0);
  for (uint64_t i = 0; i < input_size; ++i) a[i] = i % 2 == 0 ? static_cast<int64_t>(i) : static_cast<int64_t>(i + 1);
  for (uint64_t i = input_size; i < a.size(); ++i) a[i] = a[input_size - 1];
  std::vector<int64_t> expected;
  for (uint64_t i = 0; i < input_size; ++i) {
    if (i == 0 || a[i] != a[i - 1]) expected.push_back(a[i]);
  }
  const Args args{static_cast<uint32_t>(input_size_dpu_round * 8), 0};
  host.Push(kCpuToDpu, "DPU_INPUT_ARGUMENTS", 0, sizeof(Args), std::vector<const void*>(dpus, &args));
  host.Push(kCpuToDpu, kMramHeapSymbol, 0, input_size_dpu_round * 8, PerDpu(a.data(), input_size_dpu_round, dpus));
  host.Launch();
  std::vector<Result> results(uint64_t{dpus} * n);
  host.Pull(kDpuToCpu, "DPU_RESULTS", 0, n * sizeof(Result), PerDpuOut(results.data(), n, dpus));
  // The host's scan of the DPUs' counts, dropping a DPU's first element when it repeats the previous DPU's last.
  std::vector<uint64_t> counts(dpus), scan(dpus), offset(dpus, 0);
  std::vector<int64_t> first(dpus), last(dpus);
  uint64_t accum = 0;
  for (uint32_t d = 0; d < dpus; ++d) {
    first[d] = results[uint64_t{d} * n].first;
    counts[d] = results[uint64_t{d} * n + n - 1].t_count;
    last[d] = results[uint64_t{d} * n + n - 1].last;
    if (d > 0 && first[d] == last[d - 1]) offset[d] = 1;
    scan[d] = accum;
    accum += counts[d] - offset[d];
  }
  for (uint32_t d = 0; d < dpus; ++d) {
    // dpu_copy_from(dpu, heap, size, bufferC + results_scan[i] - offset_scan[i], t_count * 8): the repeated first
    // element lands on the previous DPU's last, which equals it.
    if (counts[d] == 0) continue;
    host.CopyFrom(kDpuToCpu, d, kMramHeapSymbol, input_size_dpu_round * 8, c.data() + scan[d] - offset[d],
                  counts[d] * 8);
  }
  // The padding repeats the last value: unique over the padded vector equals unique over the input.
  if (accum != expected.size()) Mismatch("UNI", StrCat(accum, " elements kept instead of ", expected.size()));
  for (uint64_t i = 0; i < accum; ++i) {
    if (c[i] != expected[i]) Mismatch("UNI", StrCat("kept element ", i, ": ", c[i], " instead of ", expected[i]));
  }
  return host.Finish(StrCat("the ", accum, " unique of ", input_size, " elements, in order"));
}

}  // namespace pimopt::pim::prim
