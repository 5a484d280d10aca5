// PrIM-style microbenchmarks written with the public kernel API, run on the emulator, and the published UPMEM
// hardware numbers they are compared with ([PrIM], [uPIMulator] in docs/sources.md). Used by
// tests/pim/validation_test.cc (10% on arithmetic and MRAM, 15% on host transfers, VA and RED) and
// bench/pim_validate.cc (the README table).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pimopt/pim/profile.h"
#include "pimopt/pim/system.h"

namespace pimopt::pim {

enum class ElementType { kInt32, kInt64, kFloat, kDouble };
enum class ArithOp { kAdd, kSub, kMul, kDiv };
const char* ElementTypeName(ElementType t);
const char* ArithOpName(ArithOp o);

// PrIM Arithmetic-Throughput: each tasklet loads a 1,024-byte block into WRAM and applies `op` with a scalar to
// its elements (x = buf[i]; x op= s; buf[i] = x), 1 DPU. Returns modeled millions of operations per second.
double MeasureArithmeticMops(const HardwareProfile& profile, ElementType type, ArithOp op, uint32_t tasklets,
                             uint64_t elements = 1 << 20);
// Published saturated throughput (MOPS, 350 MHz) from [PrIM].
double PublishedArithmeticMops(ElementType type, ArithOp op);

struct DmaResult {
  double latency_cycles = 0;
  double bandwidth_mb_per_s = 0;
};
// PrIM MRAM-Latency: one tasklet issues `count` DMAs of `bytes` (read or write); per-DMA latency and bandwidth.
DmaResult MeasureMramDma(const HardwareProfile& profile, bool read, uint32_t bytes, uint32_t count = 64);
// Published: latency alpha + beta * bytes (alpha 77 read / 61 write, beta 0.5) [PrIM].
DmaResult PublishedMramDma(bool read, uint32_t bytes);

struct HostTransferResult {
  double to_dpu_gb_per_s = 0;
  double from_dpu_gb_per_s = 0;
  double broadcast_gb_per_s = 0;
};
// PrIM CPU-DPU: `dpus` DPUs of one rank, `bytes_per_dpu` each, parallel push / pull and broadcast (aggregate GB/s,
// broadcast counting bytes delivered). Runs the transfers on the emulator when `functional` (keep sizes small),
// else evaluates the same model.
HostTransferResult MeasureHostTransfers(const HardwareProfile& profile, uint32_t dpus, uint64_t bytes_per_dpu,
                                        bool functional);

// PrIM's VA (int32 c = a + b) and RED (int64 sum) on one DPU (the ports of prim.h): modeled DPU cycles per
// element.
double MeasureVectorAddCyclesPerElement(const HardwareProfile& profile, uint32_t tasklets, uint64_t elements);
double MeasureReductionCyclesPerElement(const HardwareProfile& profile, uint32_t tasklets, uint64_t elements);
// Hardware runs of 2^21 elements on one DPU at 16 tasklets, 350 MHz ([uPIMulator] input.xlsx: 61.45 and 49.51 ms).
inline constexpr double kPublishedVaCyclesPerElement = 10.25;
inline constexpr double kPublishedRedCyclesPerElement = 8.26;

// One line of the validation table: a microbenchmark's modeled value beside the published one.
struct ValidationRow {
  std::string benchmark;  // e.g. "MRAM read 64 B latency (cycles)"
  double modeled = 0;
  double published = 0;
  double tolerance = 0;  // the largest relative error the test suite accepts
  std::string unit;
  double Error() const { return (modeled - published) / published; }
  bool Ok() const;
};
// Every comparison of the README's validation table, run on `profile` (the published values are at 350 MHz:
// profile pim-opt). bench/pim_validate.cc prints it; the Python package returns it.
std::vector<ValidationRow> ValidationTable(const HardwareProfile& profile);

}  // namespace pimopt::pim
