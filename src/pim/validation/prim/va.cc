// PrIM's VA (vector addition, int32, 1 KB blocks) on the emulator: dpu/task.c and host/app.c of [PrIM] / the
// copy [uPIMulator] timed (BL = 10, TYPE = INT32, 16 tasklets). The kernel's structure is PrIM's line for line;
// its work is counted by the operand types (docs/pim-emulator.md "Validation kernels").
#include "host.h"
#include "kernel_util.h"

namespace pimopt::pim::prim {
// The port's own names: a named namespace, so that the ports share unity batches (an anonymous one is one
// namespace per batch).
namespace va_port {

constexpr uint32_t kBlock = 1024;  // BLOCK_SIZE (BL = 10)

struct Args {  // dpu_arguments_t
  uint32_t size;
  uint32_t transfer_size;
  uint32_t kernel;
};

class VaKernel final : public Kernel {
 public:
  KernelSpec Spec() const override {
    KernelSpec spec;
    spec.name = "prim_va";
    spec.wram_symbols = {{"DPU_INPUT_ARGUMENTS", sizeof(Args)}};
    spec.heap_bytes_per_tasklet = 2 * kBlock;
    return spec;
  }

  // vector_addition (noinline)
  static void VectorAddition(WramPtr<int32_t> buffer_b, WramPtr<int32_t> buffer_a, u32 l_size) {
    CountCall();
    for (u32 i = 0; i < l_size; ++i) buffer_b[i] += buffer_a[i];
  }

  void Main(Tasklet& t) override {
    auto* args = t.Wram<Args>("DPU_INPUT_ARGUMENTS");
    KernelDispatch(args->kernel);
    const u32 tasklet_id = t.me();
    if (tasklet_id == 0) MemReset(t);
    t.BarrierWait();
    const u32 input_size_dpu_bytes = Load(&args->size);
    const u32 input_size_dpu_bytes_transfer = Load(&args->transfer_size);
    const u32 base_tasklet = tasklet_id << 10;
    const u32 mram_base_addr_a = HeapPointer(t);
    const u32 mram_base_addr_b = mram_base_addr_a + input_size_dpu_bytes_transfer;
    const WramPtr<int32_t> cache_a = MemAlloc<int32_t>(t, kBlock);
    const WramPtr<int32_t> cache_b = MemAlloc<int32_t>(t, kBlock);
    for (u32 byte_index = base_tasklet; byte_index < input_size_dpu_bytes; byte_index += kBlock * t.nr_tasklets()) {
      const u32 l_size_bytes =
          (byte_index + kBlock >= input_size_dpu_bytes) ? u32(input_size_dpu_bytes - byte_index) : u32(kBlock);
      t.MramRead(mram_base_addr_a + byte_index, cache_a, l_size_bytes);
      t.MramRead(mram_base_addr_b + byte_index, cache_b, l_size_bytes);
      VectorAddition(cache_b, cache_a, l_size_bytes >> 2);
      t.MramWrite(cache_b, mram_base_addr_b + byte_index, l_size_bytes);
    }
  }
};

}  // namespace va_port

RunResult RunVa(const RunRequest& r, const HardwareProfile& p) {
  using namespace va_port;
  Host host(r, p, "VA");
  host.Load("prim_va", std::make_shared<VaKernel>());
  const uint32_t dpus = host.dpus();
  const uint64_t input_size = r.param;  // strong scaling: the parameter is the whole vector
  const uint64_t input_size_8bytes = (input_size * 4) % 8 != 0 ? RoundUp(input_size, 8) : input_size;
  const uint64_t input_size_dpu = DivCeil(input_size, dpus);
  const uint64_t input_size_dpu_8bytes = (input_size_dpu * 4) % 8 != 0 ? RoundUp(input_size_dpu, 8) : input_size_dpu;
  if (input_size_8bytes < input_size_dpu_8bytes * (dpus - 1)) {
    throw ConfigError("--param", StrCat(input_size, " elements leave the last of ", dpus, " DPUs nothing to add"));
  }
  std::vector<int32_t> a(input_size_dpu_8bytes * dpus), b(a.size()), c(a.size());
  Rand rand;
  for (uint64_t i = 0; i < input_size; ++i) {
    a[i] = rand();
    b[i] = rand();
  }
  std::vector<Args> args(dpus);
  for (uint32_t i = 0; i < dpus; ++i) {
    args[i] = {static_cast<uint32_t>(input_size_dpu_8bytes * 4), static_cast<uint32_t>(input_size_dpu_8bytes * 4), 0};
  }
  args[dpus - 1].size = static_cast<uint32_t>((input_size_8bytes - input_size_dpu_8bytes * (dpus - 1)) * 4);
  const uint64_t bytes = input_size_dpu_8bytes * 4;
  host.Push(kCpuToDpu, "DPU_INPUT_ARGUMENTS", 0, sizeof(Args), PerDpu(args.data(), 1, dpus));
  host.Push(kCpuToDpu, kMramHeapSymbol, 0, bytes, PerDpu(a.data(), input_size_dpu_8bytes, dpus));
  host.Push(kCpuToDpu, kMramHeapSymbol, bytes, bytes, PerDpu(b.data(), input_size_dpu_8bytes, dpus));
  host.Launch();
  host.Pull(kDpuToCpu, kMramHeapSymbol, bytes, bytes, PerDpuOut(c.data(), input_size_dpu_8bytes, dpus));
  for (uint64_t i = 0; i < input_size; ++i) {
    const int32_t expected = static_cast<int32_t>(static_cast<uint32_t>(a[i]) + static_cast<uint32_t>(b[i]));
    if (c[i] != expected) Mismatch("VA", StrCat("element ", i, ": ", c[i], " instead of ", expected));
  }
  return host.Finish(StrCat("c = a + b for all ", input_size, " elements"));
}

}  // namespace pimopt::pim::prim
