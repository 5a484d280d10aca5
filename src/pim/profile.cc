#include "pimopt/pim/profile.h"

#include <charconv>
#include <cmath>
#include <functional>
#include <map>

#include "pimopt/core/error.h"

namespace pimopt::pim {

const char* OpName(Op op) {
  static constexpr const char* kNames[kNumOps] = {
      "int32_add",  "int32_logic",   "int32_shift", "int64_add",  "int64_logic", "int64_shift",
      "mul8",       "int32_mul",     "int32_div",   "int64_mul",  "int64_div",   "float_add",
      "float_sub",  "float_mul",     "float_div",   "double_add", "double_sub",  "double_mul",
      "double_div", "float_convert", "wram_load",   "wram_store", "branch"};
  return kNames[static_cast<size_t>(op)];
}

namespace {

// upmem-model.md 2.2 (PrIM saturated throughput at 350 MHz [S1]) and 8.1: slots = 350/MOPS - 5 loop instructions.
std::array<double, kNumOps> UpmemOpSlots() {
  std::array<double, kNumOps> s{};
  auto set = [&](Op op, double v) { s[static_cast<size_t>(op)] = v; };
  set(Op::kInt32Add, 1);  // 58.56 MOPS: 6-instruction loop
  set(Op::kInt32Logic, 1);
  set(Op::kInt32Shift, 1);
  set(Op::kInt64Add, 2);  // 50.16 MOPS: add + addc
  set(Op::kInt64Logic, 2);
  set(Op::kInt64Shift, 4);     // 3-6 (upmem-model 8.1)
  set(Op::kMul8, 1);           // native mul_ul_ul [S3 op_code.go]
  set(Op::kInt32Mul, 29);      // 10.27 MOPS
  set(Op::kInt32Div, 26);      // 11.27 MOPS
  set(Op::kInt64Mul, 132);     // 2.56 MOPS
  set(Op::kInt64Div, 245);     // 1.40 MOPS
  set(Op::kFloatAdd, 66);      // 4.91 MOPS
  set(Op::kFloatSub, 71);      // ~4.59 MOPS
  set(Op::kFloatMul, 178);     // 1.91 MOPS
  set(Op::kFloatDiv, 1024);    // 0.34 MOPS
  set(Op::kDoubleAdd, 100);    // 3.32 MOPS
  set(Op::kDoubleSub, 107);    // ~3.11 MOPS
  set(Op::kDoubleMul, 655);    // 0.53 MOPS
  set(Op::kDoubleDiv, 2183);   // 0.16 MOPS
  set(Op::kFloatConvert, 40);  // 20-60 (inferred, upmem-model 8.1)
  set(Op::kWramLoad, 1);
  set(Op::kWramStore, 1);
  set(Op::kBranch, 1);
  return s;
}

}  // namespace

HardwareProfile MakeProfile(const std::string& name) {
  HardwareProfile p;
  p.name = name;
  p.op_slots = UpmemOpSlots();
  if (name == "pim-opt") {
    p.num_dpus = 2048;  // PIM-Opt's experiments: up to 2,048 DPUs at 350 MHz (pimopt-reference.md 0)
  } else if (name == "prim-2556") {
    p.num_dpus = 2556;  // [S1]
  } else if (name == "prim-640") {
    p.num_dpus = 640;  // [S1]: 10 E19 DIMMs at 267 MHz
    p.dpu_frequency_hz = 267e6;
  } else if (name == "upmem-2524") {
    p.num_dpus = 2524;  // PIM-ML system at 425 MHz (upmem-model 1.1)
    p.dpu_frequency_hz = 425e6;
  } else if (name == "future-fpu") {
    // What-if: a DPU with a pipelined FPU and 32-bit multiplier (every op one slot).
    for (Op op :
         {Op::kInt32Mul, Op::kInt32Div, Op::kInt64Mul, Op::kInt64Div, Op::kFloatAdd, Op::kFloatSub, Op::kFloatMul,
          Op::kFloatDiv, Op::kDoubleAdd, Op::kDoubleSub, Op::kDoubleMul, Op::kDoubleDiv, Op::kFloatConvert}) {
      p.op_slots[static_cast<size_t>(op)] = (op == Op::kInt64Mul || op == Op::kInt64Div) ? 2 : 1;
    }
    p.mul32_setup_slots = 1;
  } else if (name == "future-wide") {
    // What-if: Hot Chips 2019 design clock, 4x WRAM, 4x host links.
    p.dpu_frequency_hz = 500e6;
    p.wram_bytes = 256u << 10;
    for (double* bw : {&p.rank_to_dpu_bytes_per_s, &p.rank_from_dpu_bytes_per_s, &p.rank_broadcast_bytes_per_s,
                       &p.max_to_dpu_bytes_per_s, &p.max_from_dpu_bytes_per_s, &p.max_broadcast_bytes_per_s}) {
      *bw *= 4;
    }
  } else {
    std::string known;
    for (const auto& n : ProfileNames()) known += (known.empty() ? "" : ", ") + n;
    throw ConfigError("--profile", StrCat("unknown hardware profile '", name, "' (known: ", known, ")"));
  }
  return p;
}

std::vector<std::string> ProfileNames() {
  return {"pim-opt", "prim-2556", "prim-640", "upmem-2524", "future-fpu", "future-wide"};
}

void HardwareProfile::Validate() const {
  auto require = [](bool ok, const char* field, const char* what) {
    if (!ok) throw ConfigError(StrCat("profile.", field), what);
  };
  require(num_dpus >= 1, "num_dpus", "must be at least 1");
  require(dpus_per_rank >= 1, "dpus_per_rank", "must be at least 1");
  require(dpu_frequency_hz > 0, "dpu_frequency_hz", "must be positive");
  require(mram_bytes >= 8 && mram_bytes % 8 == 0, "mram_bytes", "must be a positive multiple of 8");
  require(wram_bytes >= 64 && wram_bytes % 8 == 0, "wram_bytes", "must be a multiple of 8, at least 64");
  require(max_tasklets >= 1, "max_tasklets", "must be at least 1");
  require(revolver_cycles >= 1, "revolver_cycles", "must be at least 1");
  require(dma_min_bytes >= 1 && dma_max_bytes >= dma_min_bytes, "dma_max_bytes", "must be >= dma_min_bytes");
  for (size_t i = 0; i < kNumOps; ++i) {
    require(op_slots[i] >= 0 && std::isfinite(op_slots[i]), "op_slots", "costs must be finite and >= 0");
  }
  for (double v :
       {serial_to_dpu_bytes_per_s, serial_from_dpu_bytes_per_s, rank_to_dpu_bytes_per_s, rank_from_dpu_bytes_per_s,
        rank_broadcast_bytes_per_s, max_to_dpu_bytes_per_s, max_from_dpu_bytes_per_s, max_broadcast_bytes_per_s}) {
    require(v > 0, "bandwidth", "every bandwidth must be positive");
  }
}

void ApplyOverrides(HardwareProfile& p, const std::string& overrides) {
  std::map<std::string, std::function<void(double)>> setters = {
      {"num_dpus", [&](double v) { p.num_dpus = static_cast<uint32_t>(v); }},
      {"dpus_per_rank", [&](double v) { p.dpus_per_rank = static_cast<uint32_t>(v); }},
      {"dpu_frequency_hz", [&](double v) { p.dpu_frequency_hz = v; }},
      {"mram_bytes", [&](double v) { p.mram_bytes = static_cast<uint64_t>(v); }},
      {"wram_bytes", [&](double v) { p.wram_bytes = static_cast<uint32_t>(v); }},
      {"max_tasklets", [&](double v) { p.max_tasklets = static_cast<uint32_t>(v); }},
      {"revolver_cycles", [&](double v) { p.revolver_cycles = static_cast<uint32_t>(v); }},
      {"dma_read_alpha_cycles", [&](double v) { p.dma_read_alpha_cycles = v; }},
      {"dma_write_alpha_cycles", [&](double v) { p.dma_write_alpha_cycles = v; }},
      {"dma_beta_cycles_per_byte", [&](double v) { p.dma_beta_cycles_per_byte = v; }},
      {"overlap_kappa", [&](double v) { p.overlap_kappa = v; }},
      {"rank_to_dpu_bytes_per_s", [&](double v) { p.rank_to_dpu_bytes_per_s = v; }},
      {"rank_from_dpu_bytes_per_s", [&](double v) { p.rank_from_dpu_bytes_per_s = v; }},
      {"max_to_dpu_bytes_per_s", [&](double v) { p.max_to_dpu_bytes_per_s = v; }},
      {"max_from_dpu_bytes_per_s", [&](double v) { p.max_from_dpu_bytes_per_s = v; }},
      {"launch_overhead_s", [&](double v) { p.launch_overhead_s = v; }},
      {"dpu_active_power_w", [&](double v) { p.dpu_active_power_w = v; }},
  };
  for (size_t i = 0; i < kNumOps; ++i) {
    setters[StrCat("slots.", OpName(static_cast<Op>(i)))] = [&p, i](double v) { p.op_slots[i] = v; };
  }
  size_t pos = 0;
  while (pos < overrides.size()) {
    size_t comma = overrides.find(',', pos);
    if (comma == std::string::npos) comma = overrides.size();
    const std::string item = overrides.substr(pos, comma - pos);
    pos = comma + 1;
    const size_t eq = item.find('=');
    const std::string key = item.substr(0, eq);
    auto it = setters.find(key);
    if (eq == std::string::npos || it == setters.end()) {
      throw ConfigError("--profile-set", StrCat("unknown profile field '", key, "'"));
    }
    const std::string text = item.substr(eq + 1);
    double v = 0;
    const auto res = std::from_chars(text.data(), text.data() + text.size(), v);
    if (res.ec != std::errc() || res.ptr != text.data() + text.size() || !std::isfinite(v) || v < 0) {
      throw ConfigError("--profile-set", StrCat(key, "='", text, "' is not a non-negative number"));
    }
    it->second(v);
  }
  p.Validate();
}

}  // namespace pimopt::pim
