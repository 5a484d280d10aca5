// PrIM-style microbenchmark kernels. Each charges what the DPU compiler emits for the loop PrIM measures.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>

#include "pimopt/core/error.h"
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

Op OpClass(ElementType type, ArithOp op) {
  static constexpr Op kTable[4][4] = {
      {Op::kInt32Add, Op::kInt32Add, Op::kInt32Mul, Op::kInt32Div},
      {Op::kInt64Add, Op::kInt64Add, Op::kInt64Mul, Op::kInt64Div},
      {Op::kFloatAdd, Op::kFloatSub, Op::kFloatMul, Op::kFloatDiv},
      {Op::kDoubleAdd, Op::kDoubleSub, Op::kDoubleMul, Op::kDoubleDiv},
  };
  return kTable[static_cast<int>(type)][static_cast<int>(op)];
}

template <typename T>
void Apply(T* buffer, size_t n, ArithOp op, T scalar) {
  for (size_t i = 0; i < n; ++i) {
    switch (op) {
      case ArithOp::kAdd:
        buffer[i] += scalar;
        break;
      case ArithOp::kSub:
        buffer[i] -= scalar;
        break;
      case ArithOp::kMul:
        buffer[i] *= scalar;
        break;
      case ArithOp::kDiv:
        buffer[i] /= scalar;
        break;
    }
  }
}

struct ArithArgs {
  uint64_t elements_per_tasklet;
  uint32_t type;
  uint32_t op;
};

class ArithmeticKernel final : public Kernel {
 public:
  KernelSpec Spec() const override { return {"prim_arithmetic", 16, 0, {{"args", sizeof(ArithArgs)}}, {}}; }
  void Main(Tasklet& t) override {
    const ArithArgs args = *t.Wram<ArithArgs>("args");
    const auto type = static_cast<ElementType>(args.type);
    const auto op = static_cast<ArithOp>(args.op);
    auto* block = t.MemAlloc(kBlockBytes);
    t.MramRead(t.MramHeap() + uint64_t{t.me()} * kBlockBytes, block, kBlockBytes);
    const size_t size = type == ElementType::kInt32 || type == ElementType::kFloat ? 4 : 8;
    const size_t per_block = kBlockBytes / size;
    for (uint64_t done = 0; done < args.elements_per_tasklet; done += per_block) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(per_block, args.elements_per_tasklet - done));
      switch (type) {
        case ElementType::kInt32:
          Apply(static_cast<int32_t*>(block), n, op, int32_t{3});
          break;
        case ElementType::kInt64:
          Apply(static_cast<int64_t*>(block), n, op, int64_t{3});
          break;
        case ElementType::kFloat:
          Apply(static_cast<float*>(block), n, op, 1.5f);
          break;
        case ElementType::kDouble:
          Apply(static_cast<double*>(block), n, op, 1.5);
          break;
      }
      // Per element: address computation, load, the op, store, index increment, compare-and-branch (PrIM: the
      // int32-add loop compiles to 6 instructions).
      t.Charge(Op::kInt32Add, 2 * n);
      t.Charge(Op::kWramLoad, n);
      t.Charge(OpClass(type, op), n);
      t.Charge(Op::kWramStore, n);
      t.Charge(Op::kBranch, n);
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

// Bookkeeping per 1,024-byte block in VA and RED: address computation, DMA call setup, loop setup (inferred: about
// 5.5 slots per RED element of which 5 are the inner loop, docs/pim-emulator.md).
constexpr uint64_t kBlockOverheadSlots = 64;

class VectorAddKernel final : public Kernel {
 public:
  KernelSpec Spec() const override { return {"prim_va", 16, 0, {{"elements", 8}}, {}}; }
  void Main(Tasklet& t) override {
    const uint64_t n = *t.Wram<uint64_t>("elements");
    constexpr uint64_t kPerBlock = kBlockBytes / 4;
    auto* a = static_cast<int32_t*>(t.MemAlloc(kBlockBytes));
    auto* b = static_cast<int32_t*>(t.MemAlloc(kBlockBytes));
    const uint64_t base_a = t.MramHeap(), base_b = base_a + 4 * n, base_c = base_b + 4 * n;
    for (uint64_t i = uint64_t{t.me()} * kPerBlock; i < n; i += uint64_t{t.nr_tasklets()} * kPerBlock) {
      t.MramRead(base_a + 4 * i, a, kBlockBytes);
      t.MramRead(base_b + 4 * i, b, kBlockBytes);
      for (uint64_t j = 0; j < kPerBlock; ++j) a[j] += b[j];
      t.Charge(Op::kWramLoad, 2 * kPerBlock);
      t.Charge(Op::kInt32Add, 2 * kPerBlock);  // the add and the index increment
      t.Charge(Op::kWramStore, kPerBlock);
      t.Charge(Op::kBranch, kPerBlock);
      t.Charge(Op::kInt32Add, kBlockOverheadSlots);
      t.MramWrite(a, base_c + 4 * i, kBlockBytes);
    }
  }
};

class ReductionKernel final : public Kernel {
 public:
  KernelSpec Spec() const override { return {"prim_red", 16, 0, {{"elements", 8}, {"partial", 8 * 24}}, {}}; }
  void Main(Tasklet& t) override {
    const uint64_t n = *t.Wram<uint64_t>("elements");
    constexpr uint64_t kPerBlock = kBlockBytes / 8;
    auto* x = static_cast<uint64_t*>(t.MemAlloc(kBlockBytes));
    uint64_t sum = 0;
    for (uint64_t i = uint64_t{t.me()} * kPerBlock; i < n; i += uint64_t{t.nr_tasklets()} * kPerBlock) {
      t.MramRead(t.MramHeap() + 8 * i, x, kBlockBytes);
      for (uint64_t j = 0; j < kPerBlock; ++j) sum += x[j];
      t.Charge(Op::kWramLoad, kPerBlock);
      t.Charge(Op::kInt64Add, kPerBlock);
      t.Charge(Op::kInt32Add, kPerBlock);
      t.Charge(Op::kBranch, kPerBlock);
      t.Charge(Op::kInt32Add, kBlockOverheadSlots);
    }
    auto* partial = t.Wram<uint64_t>("partial");
    partial[t.me()] = sum;
    t.BarrierWait();
    if (t.me() == 0) {
      for (uint32_t k = 1; k < t.nr_tasklets(); ++k) partial[0] += partial[k];
      t.Charge(Op::kInt64Add, t.nr_tasklets());
    }
  }
};

}  // namespace

double MeasureArithmeticMops(const HardwareProfile& profile, ElementType type, ArithOp op, uint32_t tasklets,
                             uint64_t elements) {
  PimSystem system(profile, 1);
  DpuSet set = system.Allocate(1);
  set.Load(std::make_shared<ArithmeticKernel>(), tasklets);
  const ArithArgs args{elements / tasklets, static_cast<uint32_t>(type), static_cast<uint32_t>(op)};
  set.CopyTo(0, "args", 0, &args, sizeof(args));
  const LaunchStats s = set.Launch();
  return static_cast<double>(args.elements_per_tasklet * tasklets) / s.kernel_s / 1e6;
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

HostTransferResult PublishedHostTransfers(uint32_t dpus) {
  if (dpus == 1) return {0.33, 0.12, 0.33};
  return {6.68, 4.74, 16.88};  // 64 DPUs, one rank [PrIM]
}

LaunchStats RunVectorAdd(const HardwareProfile& profile, uint32_t tasklets, uint64_t elements) {
  PimSystem system(profile, 1);
  DpuSet set = system.Allocate(1);
  set.Load(std::make_shared<VectorAddKernel>(), tasklets);
  set.CopyTo(0, "elements", 0, &elements, 8);
  std::vector<int32_t> data(2 * elements);
  for (uint64_t i = 0; i < data.size(); ++i) data[i] = static_cast<int32_t>(i % 1000);
  set.CopyTo(0, kMramHeapSymbol, 0, data.data(), 4 * data.size());
  const LaunchStats s = set.Launch();
  std::vector<int32_t> c(elements);
  set.CopyFrom(0, kMramHeapSymbol, 8 * elements, c.data(), 4 * elements);
  for (uint64_t i = 0; i < elements; ++i) {
    if (c[i] != data[i] + data[elements + i]) throw PimError("VA kernel computed a wrong sum");
  }
  return s;
}

double MeasureVectorAddCyclesPerElement(const HardwareProfile& profile, uint32_t tasklets, uint64_t elements) {
  return RunVectorAdd(profile, tasklets, elements).slowest.total / static_cast<double>(elements);
}

LaunchStats RunReduction(const HardwareProfile& profile, uint32_t tasklets, uint64_t elements) {
  PimSystem system(profile, 1);
  DpuSet set = system.Allocate(1);
  set.Load(std::make_shared<ReductionKernel>(), tasklets);
  set.CopyTo(0, "elements", 0, &elements, 8);
  std::vector<uint64_t> data(elements);
  uint64_t expected = 0;
  for (uint64_t i = 0; i < elements; ++i) expected += data[i] = i * 7 + 1;
  set.CopyTo(0, kMramHeapSymbol, 0, data.data(), 8 * elements);
  const LaunchStats s = set.Launch();
  uint64_t sum = 0;
  set.CopyFrom(0, "partial", 0, &sum, 8);
  if (sum != expected) throw PimError("RED kernel computed a wrong sum");
  return s;
}

double MeasureReductionCyclesPerElement(const HardwareProfile& profile, uint32_t tasklets, uint64_t elements) {
  return RunReduction(profile, tasklets, elements).slowest.total / static_cast<double>(elements);
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
    row(StrCat("arithmetic int32 add, ", t, " tasklets (MOPS)"), MeasureArithmeticMops(p, ElementType::kInt32,
                                                                                       ArithOp::kAdd, t),
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
  const HostTransferResult rank = MeasureHostTransfers(p, 64, 32ull << 20, false);
  const HostTransferResult one = MeasureHostTransfers(p, 1, 32ull << 20, false);
  row("CPU->DPU parallel, 1 rank, 32 MB/DPU (GB/s)", rank.to_dpu_gb_per_s, 6.68, 0.15, "GB/s");
  row("DPU->CPU parallel, 1 rank, 32 MB/DPU (GB/s)", rank.from_dpu_gb_per_s, 4.74, 0.15, "GB/s");
  row("CPU->DPU broadcast, 1 rank, 32 MB/DPU (GB/s)", rank.broadcast_gb_per_s, 16.88, 0.15, "GB/s");
  row("CPU->DPU, 1 DPU, 32 MB (GB/s)", one.to_dpu_gb_per_s, 0.33, 0.15, "GB/s");
  row("DPU->CPU, 1 DPU, 32 MB (GB/s)", one.from_dpu_gb_per_s, 0.12, 0.15, "GB/s");
  row("VA, 16 tasklets (DPU cycles/element)", MeasureVectorAddCyclesPerElement(p, 16, 1 << 21),
      kPublishedVaCyclesPerElement, 0.15, "cycles");
  row("RED, 16 tasklets (DPU cycles/element)", MeasureReductionCyclesPerElement(p, 16, 1 << 21),
      kPublishedRedCyclesPerElement, 0.15, "cycles");
  return rows;
}

}  // namespace pimopt::pim
