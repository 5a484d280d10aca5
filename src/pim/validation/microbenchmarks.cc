// PrIM-style microbenchmark kernels. Each charges what the DPU compiler emits for the loop PrIM measures.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>

#include "pimopt/core/error.h"
#include "pimopt/pim/prim.h"
#include "pimopt/pim/system.h"
#include "pimopt/pim/validation.h"

namespace pimopt::pim {

const char* ElementTypeName(ElementType t) {
  switch (t) {
    case ElementType::kInt32:
      return "int32";
    case ElementType::kInt64:
      return "int64";
    case ElementType::kFloat:
      return "float";
    case ElementType::kDouble:
      return "double";
  }
  return "?";
}

const char* ArithOpName(ArithOp o) {
  switch (o) {
    case ArithOp::kAdd:
      return "add";
    case ArithOp::kSub:
      return "sub";
    case ArithOp::kMul:
      return "mul";
    case ArithOp::kDiv:
      return "div";
  }
  return "?";
}

namespace {

constexpr uint32_t kBlockBytes = 1024;  // PrIM's default DMA size (BL = 10)

struct ArithArgs {  // dpu_arguments_t, plus what the build fixes (type and operation)
  uint32_t size;    // bytes per DPU
  uint32_t type;
  uint32_t op;
  uint32_t pad;
};

// PrIM's Arithmetic-Throughput kernel: each tasklet reads a block, and times (perfcounter) the update loop
// `temp = buffer[i]; temp OP= scalar; buffer[i] = temp` between two barriers; the scalar is the DPU's element count
// (the software multiply's and divide's operand lengths follow from it).
template <typename T>
void Update(WramPtr<T> buffer, Value<T> scalar, ArithOp op, uint32_t elements) {
  for (u32 i = 0; i < elements; ++i) {
    const Ref<T> element = buffer[i];  // one address for the load and the store
    Value<T> temp = element;
    switch (op) {
      case ArithOp::kAdd:
        temp = temp + scalar;
        break;
      case ArithOp::kSub:
        temp = temp - scalar;
        break;
      case ArithOp::kMul:
        temp = temp * scalar;
        break;
      case ArithOp::kDiv:
        temp = temp / scalar;
        break;
    }
    element = temp;
  }
}

class ArithmeticKernel final : public Kernel {
 public:
  KernelSpec Spec() const override {
    return {"prim_arithmetic", 16, 0, {{"args", sizeof(ArithArgs)}, {"cycles", 8 * 24}}, {}};
  }
  void Main(Tasklet& t) override {
    const ArithArgs args = *t.Wram<ArithArgs>("args");
    const auto type = static_cast<ElementType>(args.type);
    const auto op = static_cast<ArithOp>(args.op);
    if (t.me() == 0) t.MemReset();
    t.BarrierWait();
    const size_t size = type == ElementType::kInt32 || type == ElementType::kFloat ? 4 : 8;
    const uint32_t elements_per_dpu = args.size / static_cast<uint32_t>(size);
    uint64_t& cycles = t.Wram<uint64_t>("cycles")[t.me()];
    cycles = 0;
    void* block = t.MemAlloc(kBlockBytes);
    const uint64_t base_a = t.MramHeap() + (uint64_t{t.me()} << 10), base_b = base_a + args.size;
    for (uint32_t byte_index = 0; byte_index < args.size; byte_index += kBlockBytes * t.nr_tasklets()) {
      t.MramRead(base_a + byte_index, block, kBlockBytes);
      t.BarrierWait();
      const uint64_t start = t.Cycles();
      const uint32_t n = kBlockBytes / static_cast<uint32_t>(size);
      switch (type) {
        case ElementType::kInt32:
          Update(WramPtr<int32_t>(static_cast<int32_t*>(block)), i32(static_cast<int32_t>(elements_per_dpu)), op, n);
          break;
        case ElementType::kInt64:
          Update(WramPtr<int64_t>(static_cast<int64_t*>(block)), i64(int64_t{elements_per_dpu}), op, n);
          break;
        case ElementType::kFloat:
          Update(WramPtr<float>(static_cast<float*>(block)), f32(static_cast<float>(elements_per_dpu)), op, n);
          break;
        case ElementType::kDouble:
          Update(WramPtr<double>(static_cast<double*>(block)), f64(static_cast<double>(elements_per_dpu)), op, n);
          break;
      }
      cycles += t.Cycles() - start;
      t.BarrierWait();
      t.MramWrite(block, base_b + byte_index, kBlockBytes);
    }
  }
};

struct DmaArgs {
  uint32_t bytes;
  uint32_t count;
  uint32_t read;
  uint32_t pad;
};

class DmaKernel final : public Kernel {
 public:
  KernelSpec Spec() const override { return {"prim_mram_latency", 1, 0, {{"args", sizeof(DmaArgs)}}, {}}; }
  void Main(Tasklet& t) override {
    const DmaArgs args = *t.Wram<DmaArgs>("args");
    void* buffer = t.MemAlloc(args.bytes);
    for (uint32_t i = 0; i < args.count; ++i) {
      // PrIM times the DMA call alone (perfcounter around mram_read / mram_write): nothing else is charged.
      const uint64_t address = t.MramHeap() + uint64_t{i} * args.bytes;
      if (args.read) {
        t.MramRead(address, buffer, args.bytes);
      } else {
        t.MramWrite(buffer, address, args.bytes);
      }
    }
  }
};

}  // namespace

double MeasureArithmeticMops(const HardwareProfile& profile, ElementType type, ArithOp op, uint32_t tasklets,
                             uint64_t elements) {
  PimSystem system(profile, 1);
  DpuSet set = system.Allocate(1);
  set.Load(std::make_shared<ArithmeticKernel>(), tasklets);
  const size_t size = type == ElementType::kInt32 || type == ElementType::kFloat ? 4 : 8;
  // Whole rounds of one block per tasklet, as PrIM sizes its runs.
  const uint64_t per_round = uint64_t{tasklets} * kBlockBytes / size;
  const uint64_t n = std::max<uint64_t>(per_round, elements / per_round * per_round);
  const ArithArgs args{static_cast<uint32_t>(n * size), static_cast<uint32_t>(type), static_cast<uint32_t>(op), 0};
  set.CopyTo(0, "args", 0, &args, sizeof(args));
  // The host's data: rand() (PrIM's read_input).
  std::vector<uint8_t> data(n * size);
  uint64_t state = 12345;
  for (uint64_t i = 0; i < n; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const auto r = static_cast<int32_t>(state >> 33);
    switch (type) {
      case ElementType::kInt32:
        std::memcpy(&data[i * 4], &r, 4);
        break;
      case ElementType::kInt64: {
        const int64_t v = r;
        std::memcpy(&data[i * 8], &v, 8);
        break;
      }
      case ElementType::kFloat: {
        const float v = static_cast<float>(r);
        std::memcpy(&data[i * 4], &v, 4);
        break;
      }
      case ElementType::kDouble: {
        const double v = r;
        std::memcpy(&data[i * 8], &v, 8);
        break;
      }
    }
  }
  set.CopyTo(0, kMramHeapSymbol, 0, data.data(), data.size());
  set.Launch();
  std::vector<uint64_t> cycles(24, 0);
  set.CopyFrom(0, "cycles", 0, cycles.data(), 8 * 24);
  const uint64_t slowest = *std::max_element(cycles.begin(), cycles.begin() + tasklets);
  return static_cast<double>(n) / (static_cast<double>(slowest) / profile.dpu_frequency_hz) / 1e6;
}

double PublishedArithmeticMops(ElementType type, ArithOp op) {
  static constexpr double kMops[4][4] = {
      {58.56, 58.56, 10.27, 11.27},  // int32 [PrIM]
      {50.16, 50.16, 2.56, 1.40},    // int64
      {4.91, 4.59, 1.91, 0.34},      // float
      {3.32, 3.11, 0.53, 0.16},      // double
  };
  return kMops[static_cast<int>(type)][static_cast<int>(op)];
}

DmaResult MeasureMramDma(const HardwareProfile& profile, bool read, uint32_t bytes, uint32_t count) {
  PimSystem system(profile, 1);
  DpuSet set = system.Allocate(1);
  set.Load(std::make_shared<DmaKernel>(), 1);
  const DmaArgs args{bytes, count, read ? 1u : 0u, 0};
  set.CopyTo(0, "args", 0, &args, sizeof(args));
  const LaunchStats s = set.Launch();
  DmaResult r;
  r.latency_cycles = s.slowest.total / count;
  r.bandwidth_mb_per_s = bytes * profile.dpu_frequency_hz / r.latency_cycles / 1e6;
  return r;
}

DmaResult PublishedMramDma(bool read, uint32_t bytes) {
  DmaResult r;
  r.latency_cycles = (read ? 77.0 : 61.0) + 0.5 * bytes;
  r.bandwidth_mb_per_s = bytes * 350e6 / r.latency_cycles / 1e6;
  return r;
}

HostTransferResult MeasureHostTransfers(const HardwareProfile& profile, uint32_t dpus, uint64_t bytes_per_dpu,
                                        bool functional) {
  HostTransferResult r;
  const double total = static_cast<double>(dpus) * static_cast<double>(bytes_per_dpu);
  if (!functional) {
    r.to_dpu_gb_per_s = total / ModelParallelTransferSeconds(profile, XferDirection::kToDpu, dpus, bytes_per_dpu) / 1e9;
    r.from_dpu_gb_per_s =
        total / ModelParallelTransferSeconds(profile, XferDirection::kFromDpu, dpus, bytes_per_dpu) / 1e9;
    r.broadcast_gb_per_s = total / ModelBroadcastSeconds(profile, dpus, bytes_per_dpu) / 1e9;
    return r;
  }
  PimSystem system(profile, 0);
  DpuSet set = system.Allocate(dpus);
  set.Load(std::make_shared<DmaKernel>(), 1);
  std::vector<std::vector<uint8_t>> buffers(dpus, std::vector<uint8_t>(bytes_per_dpu, 1));
  for (uint32_t i = 0; i < dpus; ++i) set.PrepareXfer(i, buffers[i].data(), bytes_per_dpu);
  r.to_dpu_gb_per_s = total / set.PushXfer(XferDirection::kToDpu, kMramHeapSymbol, 0, bytes_per_dpu) / 1e9;
  for (uint32_t i = 0; i < dpus; ++i) set.PrepareXfer(i, buffers[i].data(), bytes_per_dpu);
  r.from_dpu_gb_per_s = total / set.PushXfer(XferDirection::kFromDpu, kMramHeapSymbol, 0, bytes_per_dpu) / 1e9;
  r.broadcast_gb_per_s = total / set.BroadcastTo(kMramHeapSymbol, 0, buffers[0].data(), bytes_per_dpu) / 1e9;
  return r;
}

double MeasureVectorAddCyclesPerElement(const HardwareProfile& profile, uint32_t tasklets, uint64_t elements) {
  prim::RunRequest r;
  r.param = elements;
  r.tasklets = tasklets;
  r.host_threads = 1;
  return prim::Run("VA", r, profile).slowest_dpu.total / static_cast<double>(elements);
}

double MeasureReductionCyclesPerElement(const HardwareProfile& profile, uint32_t tasklets, uint64_t elements) {
  prim::RunRequest r;
  r.param = elements;
  r.tasklets = tasklets;
  r.host_threads = 1;
  return prim::Run("RED", r, profile).slowest_dpu.total / static_cast<double>(elements);
}

bool ValidationRow::Ok() const { return std::fabs(Error()) <= tolerance; }

std::vector<ValidationRow> ValidationTable(const HardwareProfile& p) {
  std::vector<ValidationRow> rows;
  auto row = [&rows](std::string what, double modeled, double published, double tolerance, const char* unit) {
    rows.push_back({std::move(what), modeled, published, tolerance, unit});
  };
  for (ElementType type : {ElementType::kInt32, ElementType::kInt64, ElementType::kFloat, ElementType::kDouble}) {
    for (ArithOp op : {ArithOp::kAdd, ArithOp::kSub, ArithOp::kMul, ArithOp::kDiv}) {
      row(StrCat("arithmetic ", ElementTypeName(type), " ", ArithOpName(op), ", 16 tasklets (MOPS)"),
          MeasureArithmeticMops(p, type, op, 16), PublishedArithmeticMops(type, op), 0.10, "MOPS");
    }
  }
  for (uint32_t t : {1u, 4u, 8u, 11u, 24u}) {
    row(StrCat("arithmetic int32 add, ", t, " tasklets (MOPS)"),
        MeasureArithmeticMops(p, ElementType::kInt32, ArithOp::kAdd, t),
        PublishedArithmeticMops(ElementType::kInt32, ArithOp::kAdd) * std::min(t, 11u) / 11.0, 0.10, "MOPS");
  }
  for (bool read : {true, false}) {
    const char* verb = read ? "read" : "write";
    for (uint32_t bytes : {8u, 64u, 256u, 1024u, 2048u}) {
      row(StrCat("MRAM ", verb, " ", bytes, " B latency (cycles)"), MeasureMramDma(p, read, bytes).latency_cycles,
          PublishedMramDma(read, bytes).latency_cycles, 0.10, "cycles");
    }
    row(StrCat("MRAM ", verb, " 2048 B bandwidth (MB/s, measured)"), MeasureMramDma(p, read, 2048).bandwidth_mb_per_s,
        read ? 628 : 633, 0.10, "MB/s");
  }
  // Host transfers are validated against the hardware file, leave-one-benchmark-out (hw_validation.h): PrIM's
  // published one-rank bandwidths come from another server and sizes beyond the file's (docs/pim-emulator.md).
  row("PrIM VA, 1 DPU, 2^21 elements (DPU cycles/element)", MeasureVectorAddCyclesPerElement(p, 16, 1 << 21),
      kPublishedVaCyclesPerElement, 0.15, "cycles");
  row("PrIM RED, 1 DPU, 2^21 elements (DPU cycles/element)", MeasureReductionCyclesPerElement(p, 16, 1 << 21),
      kPublishedRedCyclesPerElement, 0.15, "cycles");
  return rows;
}

}  // namespace pimopt::pim
