// Validation of the UPMEM emulator's timing model: PrIM-style microbenchmarks written with the public kernel API,
// modeled by the emulator, side by side with the published hardware numbers (docs/sources.md).
// Usage: pimopt_pim_validate [--profile NAME]   (default pim-opt: 350 MHz, as the published measurements)
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#include "pimopt/pim/validation.h"

using namespace pimopt::pim;

namespace {
int failures = 0;
void Row(const char* what, double modeled, double published, double tolerance, const char* unit) {
  const double error = (modeled - published) / published;
  const bool ok = std::fabs(error) <= tolerance;
  failures += !ok;
  std::printf("| %-44s | %10.3f | %10.3f | %+6.1f%% | %s (tolerance %.0f%%) |\n", what, modeled, published, 100 * error,
              ok ? "ok" : "FAIL", 100 * tolerance);
  (void)unit;
}
}  // namespace

int main(int argc, char** argv) {
  std::string name = "pim-opt";
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--profile") == 0) name = argv[i + 1];
  }
  const HardwareProfile p = MakeProfile(name);
  std::printf("profile %s, %.0f MHz\n\n", name.c_str(), p.dpu_frequency_hz / 1e6);
  std::printf("| benchmark | modeled | published | error | check |\n|---|---|---|---|---|\n");
  for (ElementType type : {ElementType::kInt32, ElementType::kInt64, ElementType::kFloat, ElementType::kDouble}) {
    for (ArithOp op : {ArithOp::kAdd, ArithOp::kSub, ArithOp::kMul, ArithOp::kDiv}) {
      char what[96];
      std::snprintf(what, sizeof(what), "arithmetic %s %s, 16 tasklets (MOPS)", ElementTypeName(type), ArithOpName(op));
      Row(what, MeasureArithmeticMops(p, type, op, 16), PublishedArithmeticMops(type, op), 0.10, "MOPS");
    }
  }
  for (uint32_t t : {1u, 4u, 8u, 11u, 24u}) {
    char what[96];
    std::snprintf(what, sizeof(what), "arithmetic int32 add, %u tasklets (MOPS)", t);
    Row(what, MeasureArithmeticMops(p, ElementType::kInt32, ArithOp::kAdd, t),
        PublishedArithmeticMops(ElementType::kInt32, ArithOp::kAdd) * std::min(t, 11u) / 11.0, 0.10, "MOPS");
  }
  for (bool read : {true, false}) {
    for (uint32_t bytes : {8u, 64u, 256u, 1024u, 2048u}) {
      char what[96];
      std::snprintf(what, sizeof(what), "MRAM %s %u B latency (cycles)", read ? "read" : "write", bytes);
      Row(what, MeasureMramDma(p, read, bytes).latency_cycles, PublishedMramDma(read, bytes).latency_cycles, 0.10,
          "cycles");
    }
    char what[96];
    std::snprintf(what, sizeof(what), "MRAM %s 2048 B bandwidth (MB/s, measured)", read ? "read" : "write");
    Row(what, MeasureMramDma(p, read, 2048).bandwidth_mb_per_s, read ? 628 : 633, 0.10, "MB/s");
  }
  const HostTransferResult rank = MeasureHostTransfers(p, 64, 32ull << 20, false);
  const HostTransferResult one = MeasureHostTransfers(p, 1, 32ull << 20, false);
  Row("CPU->DPU parallel, 1 rank, 32 MB/DPU (GB/s)", rank.to_dpu_gb_per_s, 6.68, 0.15, "GB/s");
  Row("DPU->CPU parallel, 1 rank, 32 MB/DPU (GB/s)", rank.from_dpu_gb_per_s, 4.74, 0.15, "GB/s");
  Row("CPU->DPU broadcast, 1 rank, 32 MB/DPU (GB/s)", rank.broadcast_gb_per_s, 16.88, 0.15, "GB/s");
  Row("CPU->DPU, 1 DPU, 32 MB (GB/s)", one.to_dpu_gb_per_s, 0.33, 0.15, "GB/s");
  Row("DPU->CPU, 1 DPU, 32 MB (GB/s)", one.from_dpu_gb_per_s, 0.12, 0.15, "GB/s");
  Row("VA, 16 tasklets (DPU cycles/element)", MeasureVectorAddCyclesPerElement(p, 16, 1 << 21),
      kPublishedVaCyclesPerElement, 0.15, "cycles");
  Row("RED, 16 tasklets (DPU cycles/element)", MeasureReductionCyclesPerElement(p, 16, 1 << 21),
      kPublishedRedCyclesPerElement, 0.15, "cycles");
  std::printf("\n%d of the checks outside tolerance\n", failures);
  return failures == 0 ? 0 : 1;
}
