// PrIM's RED (reduction, int64, 1 KB blocks; VERSION SINGLE: tasklet 0 adds the tasklets' partial sums after a
// barrier), as [uPIMulator] timed it (BL = 10, TYPE = INT64, SYNC = HAND, PERF = 0).
#include "host.h"
#include "kernel_util.h"

namespace pimopt::pim::prim {
// The port's own names: a named namespace, so that the ports share unity batches (an anonymous one is one
// namespace per batch).
namespace red_port {

constexpr uint32_t kBlock = 1024;

struct Args {  // dpu_arguments_t
  uint32_t size;
  uint32_t kernel;
  int64_t t_count;
};
struct Result {  // dpu_results_t
  uint64_t cycles;
  int64_t t_count;
};

class RedKernel final : public Kernel {
 public:
  KernelSpec Spec() const override {
    KernelSpec spec;
    spec.name = "prim_red";
    spec.wram_symbols = {
        {"DPU_INPUT_ARGUMENTS", sizeof(Args)}, {"DPU_RESULTS", sizeof(Result) * 24}, {"message", 8 * 24}};
    spec.heap_bytes_per_tasklet = kBlock;
    return spec;
  }

  // reduction (noinline)
  static i64 Reduction(WramPtr<int64_t> input, u32 l_size) {
    CountCall();
    i64 output = 0;
    for (u32 j = 0; j < l_size; ++j) output += input[j];
    return output;
  }

  void Main(Tasklet& t) override {
    auto* args = t.Wram<Args>("DPU_INPUT_ARGUMENTS");
    KernelDispatch(args->kernel);
    const u32 tasklet_id = t.me();
    if (tasklet_id == 0) MemReset(t);
    t.BarrierWait();
    const WramPtr<Result> result = t.WramVar<Result>("DPU_RESULTS") + tasklet_id;
    const WramPtr<int64_t> message = t.WramVar<int64_t>("message");
    const u32 input_size_dpu_bytes = Load(&args->size);
    const u32 base_tasklet = tasklet_id << 10;
    const u32 mram_base_addr_a = HeapPointer(t);
    const WramPtr<int64_t> cache_a = MemAlloc<int64_t>(t, kBlock);
    i64 l_count = 0;
    for (u32 byte_index = base_tasklet; byte_index < input_size_dpu_bytes; byte_index += kBlock * t.nr_tasklets()) {
      const u32 l_size_bytes =
          (byte_index + kBlock >= input_size_dpu_bytes) ? u32(input_size_dpu_bytes - byte_index) : u32(kBlock);
      t.MramRead(mram_base_addr_a + byte_index, cache_a, l_size_bytes);
      l_count += Reduction(cache_a, l_size_bytes >> 3);
    }
    message[tasklet_id] = l_count;
    t.BarrierWait();
    if (tasklet_id == 0) {
      // #pragma unroll over the tasklets
      for (uint32_t each_tasklet = 1; each_tasklet < t.nr_tasklets(); ++each_tasklet) {
        message[0] += message[each_tasklet];
      }
    }
    if (tasklet_id == 0) Store(&result.get()->t_count, message[0].load());
  }
};

}  // namespace red_port

RunResult RunRed(const RunRequest& r, const HardwareProfile& p) {
  using namespace red_port;
  Host host(r, p, "RED");
  host.Load("prim_red", std::make_shared<RedKernel>());
  const uint32_t dpus = host.dpus();
  const uint64_t input_size = r.param;
  const uint64_t input_size_8bytes = input_size;  // int64 elements are 8-byte multiples already
  const uint64_t input_size_dpu_8bytes = DivCeil(input_size, dpus);
  if (input_size_8bytes < input_size_dpu_8bytes * (dpus - 1)) {
    throw ConfigError("--param", StrCat(input_size, " elements leave the last of ", dpus, " DPUs nothing to reduce"));
  }
  std::vector<int64_t> a(input_size_dpu_8bytes * dpus, 0);
  Rand rand;
  int64_t expected = 0;
  for (uint64_t i = 0; i < input_size; ++i) expected += a[i] = rand();
  std::vector<Args> args(dpus, Args{static_cast<uint32_t>(input_size_dpu_8bytes * 8), 0, 0});
  args[dpus - 1].size = static_cast<uint32_t>((input_size_8bytes - input_size_dpu_8bytes * (dpus - 1)) * 8);
  host.Push(kCpuToDpu, "DPU_INPUT_ARGUMENTS", 0, sizeof(Args), PerDpu(args.data(), 1, dpus));
  host.Push(kCpuToDpu, kMramHeapSymbol, 0, input_size_dpu_8bytes * 8, PerDpu(a.data(), input_size_dpu_8bytes, dpus));
  host.Launch();
  const uint32_t n = host.tasklets();
  std::vector<Result> results(uint64_t{dpus} * n);
  host.Pull(kDpuToCpu, "DPU_RESULTS", 0, n * sizeof(Result), PerDpuOut(results.data(), n, dpus));
  int64_t total = 0;
  for (uint32_t d = 0; d < dpus; ++d) total += results[uint64_t{d} * n].t_count;
  if (total != expected) Mismatch("RED", StrCat("sum ", total, " instead of ", expected));
  return host.Finish(StrCat("the sum of ", input_size, " elements"));
}

}  // namespace pimopt::pim::prim
