#include "pimopt/pim/profile.h"

#include "pimopt/core/error.h"
#include "pimopt/core/file_util.h"

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

// Issue slots per op class: PrIM's saturated throughput of one DPU at 350 MHz gives 350 / MOPS instructions per
// loop iteration, of which 5 are the loop itself (load, store, index, compare-and-branch, address).
struct OpCost {
  Op op;
  double slots;
  const char* source;
};
constexpr OpCost kOpCosts[] = {
    {Op::kInt32Add, 1, "[PrIM] arithmetic throughput: 58.56 MOPS, a 6-instruction loop"},
    {Op::kInt32Logic, 1, "[uPIMulator] op_code.go: native"},
    {Op::kInt32Shift, 1, "[uPIMulator] op_code.go: native"},
    {Op::kInt64Add, 2, "[PrIM] arithmetic throughput: 50.16 MOPS (add + addc)"},
    {Op::kInt64Logic, 2, "inferred: two 32-bit halves"},
    {Op::kInt64Shift, 4, "inferred: 3 to 6 instructions"},
    {Op::kMul8, 1, "[uPIMulator] op_code.go: native mul_ul_ul"},
    {Op::kInt32Mul, 29, "[PrIM] arithmetic throughput: 10.27 MOPS"},
    {Op::kInt32Div, 26, "[PrIM] arithmetic throughput: 11.27 MOPS"},
    {Op::kInt64Mul, 132, "[PrIM] arithmetic throughput: 2.56 MOPS"},
    {Op::kInt64Div, 245, "[PrIM] arithmetic throughput: 1.40 MOPS"},
    {Op::kFloatAdd, 66, "[PrIM] arithmetic throughput: 4.91 MOPS"},
    {Op::kFloatSub, 71, "[PrIM] arithmetic throughput: about 4.59 MOPS"},
    {Op::kFloatMul, 178, "[PrIM] arithmetic throughput: 1.91 MOPS"},
    {Op::kFloatDiv, 1024, "[PrIM] arithmetic throughput: 0.34 MOPS"},
    {Op::kDoubleAdd, 100, "[PrIM] arithmetic throughput: 3.32 MOPS"},
    {Op::kDoubleSub, 107, "[PrIM] arithmetic throughput: about 3.11 MOPS"},
    {Op::kDoubleMul, 655, "[PrIM] arithmetic throughput: 0.53 MOPS"},
    {Op::kDoubleDiv, 2183, "[PrIM] arithmetic throughput: 0.16 MOPS"},
    {Op::kFloatConvert, 40, "inferred: 20 to 60 instructions of the soft-float routines"},
    {Op::kWramLoad, 1, "[SDK-docs] DPU handbook: 1-cycle WRAM access"},
    {Op::kWramStore, 1, "[SDK-docs] DPU handbook: 1-cycle WRAM access"},
    {Op::kBranch, 1, "[SDK-docs] DPU handbook: fused compare-and-branch"},
};
static_assert(std::size(kOpCosts) == kNumOps, "every op class needs a cost");

ParamTable<HardwareProfile> MakeProfileFields() {
  ParamTable<HardwareProfile> t;
  const std::string org = "organization", pipeline = "pipeline", dma = "MRAM DMA", sync = "synchronization",
                    host = "host transfers and launches", energy = "energy";
  t.Add("num_dpus", &HardwareProfile::num_dpus, 2048)
      .Min(1)
      .Unit("DPUs")
      .Group(org)
      .Source("[PIM-Opt] experiments on up to 2,048 DPUs")
      .Help("DPUs in the system");
  t.Add("dpus_per_rank", &HardwareProfile::dpus_per_rank, 64)
      .Min(1)
      .Unit("DPUs")
      .Group(org)
      .Source("[SDK-docs] 8 chips x 8 DPUs per rank")
      .Help("DPUs per rank (one parallel transfer reaches a rank's DPUs at once)");
  t.Add("dpu_frequency_hz", &HardwareProfile::dpu_frequency_hz, 350e6)
      .Positive()
      .Unit("Hz")
      .Group(org)
      .Source("[PrIM] 2,556-DPU system at 350 MHz; [PIM-Opt] 350 MHz")
      .Help("DPU clock");
  t.Add("mram_bytes", &HardwareProfile::mram_bytes, uint64_t{64} << 20)
      .Min(8)
      .Unit("bytes")
      .Group(org)
      .Source("[SDK-docs] 64 MB MRAM bank per DPU")
      .Help("MRAM per DPU (a multiple of 8)");
  t.Add("wram_bytes", &HardwareProfile::wram_bytes, 64u << 10)
      .Min(64)
      .Unit("bytes")
      .Group(org)
      .Source("[SDK-docs] v1A: 64 KB WRAM")
      .Help("WRAM per DPU (a multiple of 8)");
  t.Add("max_tasklets", &HardwareProfile::max_tasklets, 24)
      .Min(1)
      .Unit("tasklets")
      .Group(org)
      .Source("[SDK-docs] v1A: 24 tasklets")
      .Help("hardware threads per DPU");
  t.Add("default_stack_bytes", &HardwareProfile::default_stack_bytes, 1024)
      .Unit("bytes")
      .Group(org)
      .Source("[SDK] STACK_SIZE_DEFAULT")
      .Help("WRAM stack reserved per tasklet when a kernel declares none");
  t.Add("revolver_cycles", &HardwareProfile::revolver_cycles, 11)
      .Min(1)
      .Unit("cycles")
      .Group(pipeline)
      .Source("[uPIMulator] thread_scheduler.go; [HotChips19] 11 threads fill the pipeline")
      .Help("cycles between two issues of one tasklet: IPC = min(1, tasklets / this)");
  for (const OpCost& cost : kOpCosts) {
    const size_t i = static_cast<size_t>(cost.op);
    t.AddCustom(StrCat("slots.", OpName(cost.op)), ParamType::kReal, cost.slots,
                [i](const HardwareProfile& p) -> ParamValue { return p.op_slots[i]; },
                [i](HardwareProfile& p, const ParamValue& v) { p.op_slots[i] = std::get<double>(v); })
        .Min(0)
        .Unit("slots")
        .Group(pipeline)
        .Source(cost.source)
        .Help(StrCat("issue slots of one ", OpName(cost.op)));
  }
  t.Add("mul32_setup_slots", &HardwareProfile::mul32_setup_slots, 8.0)
      .Min(0)
      .Unit("slots")
      .Group(pipeline)
      .Source("[SDK] mul32.c (__mulsi3), inferred count")
      .Help("__mulsi3's setup and call; Tasklet::Mul32 adds the bit length of the smaller operand");
  t.Add("dma_read_alpha_cycles", &HardwareProfile::dma_read_alpha_cycles, 77.0)
      .Min(0)
      .Unit("cycles")
      .Group(dma)
      .Source("[PrIM] MRAM latency, corroborated by [PrIM-notes]")
      .Help("fixed latency of an MRAM read");
  t.Add("dma_write_alpha_cycles", &HardwareProfile::dma_write_alpha_cycles, 61.0)
      .Min(0)
      .Unit("cycles")
      .Group(dma)
      .Source("[PrIM] MRAM latency")
      .Help("fixed latency of an MRAM write");
  t.Add("dma_beta_cycles_per_byte", &HardwareProfile::dma_beta_cycles_per_byte, 0.5)
      .Min(0)
      .Unit("cycles/byte")
      .Group(dma)
      .Source("[PrIM] MRAM latency")
      .Help("latency per byte transferred");
  t.Add("dma_occupancy_alpha_fraction", &HardwareProfile::dma_occupancy_alpha_fraction, 1.0)
      .Min(0)
      .Max(1)
      .Group(dma)
      .Source("inferred (docs/pim-emulator.md): 1 = the engine is busy for the whole latency")
      .Help("share of alpha during which the DMA engine is busy");
  t.Add("dma_max_bytes", &HardwareProfile::dma_max_bytes, 2048)
      .Min(8)
      .Unit("bytes")
      .Group(dma)
      .Source("[SDK] mram.h")
      .Help("largest DMA");
  t.Add("dma_min_bytes", &HardwareProfile::dma_min_bytes, 8)
      .Min(1)
      .Unit("bytes")
      .Group(dma)
      .Source("[SDK] mram.h")
      .Help("smallest DMA");
  t.Add("overlap_kappa", &HardwareProfile::overlap_kappa, 0.55)
      .Min(0)
      .Group(dma)
      .Source("inferred: fitted on PrIM's VA, 10.26 cycles/element measured ([uPIMulator] input.xlsx)")
      .Help("how imperfectly DMA and pipeline overlap: T = max(issue, dma, chain) + kappa min(issue, dma)");
  t.Add("barrier_slots_per_tasklet", &HardwareProfile::barrier_slots_per_tasklet, 17.5)
      .Min(0)
      .Unit("slots")
      .Group(sync)
      .Source("[SDK] barrier.c, inferred count")
      .Help("serialized issue slots per tasklet arriving at a barrier");
  t.Add("mutex_slots", &HardwareProfile::mutex_slots, 1.0)
      .Min(0)
      .Unit("slots")
      .Group(sync)
      .Source("[SDK] mutex.h, inferred count")
      .Help("slots of an uncontended lock or unlock");
  t.Add("mutex_contention_cycles", &HardwareProfile::mutex_contention_cycles, 22.0)
      .Min(0)
      .Unit("cycles")
      .Group(sync)
      .Source("inferred: two spin retries")
      .Help("extra cycles per contended lock");
  t.Add("serial_to_dpu_bytes_per_s", &HardwareProfile::serial_to_dpu_bytes_per_s, 0.33e9)
      .Positive()
      .Unit("bytes/s")
      .Group(host)
      .Source("[PrIM] CPU-DPU, 1 DPU; [PrIM-notes]")
      .Help("dpu_copy_to of one DPU");
  t.Add("serial_from_dpu_bytes_per_s", &HardwareProfile::serial_from_dpu_bytes_per_s, 0.12e9)
      .Positive()
      .Unit("bytes/s")
      .Group(host)
      .Source("[PrIM] DPU-CPU, 1 DPU; [PrIM-notes]")
      .Help("dpu_copy_from of one DPU");
  t.Add("serial_call_overhead_s", &HardwareProfile::serial_call_overhead_s, 30e-6)
      .Min(0)
      .Unit("s")
      .Group(host)
      .Source("[PrIM-notes] a 4 KB serial copy takes about 30 us")
      .Help("fixed cost of a serial copy");
  t.Add("rank_to_dpu_bytes_per_s", &HardwareProfile::rank_to_dpu_bytes_per_s, 6.68e9)
      .Positive()
      .Unit("bytes/s")
      .Group(host)
      .Source("[PrIM] CPU-DPU parallel, 64 DPUs")
      .Help("parallel push to one full rank");
  t.Add("rank_from_dpu_bytes_per_s", &HardwareProfile::rank_from_dpu_bytes_per_s, 4.74e9)
      .Positive()
      .Unit("bytes/s")
      .Group(host)
      .Source("[PrIM] DPU-CPU parallel, 64 DPUs")
      .Help("parallel pull from one full rank");
  t.Add("rank_broadcast_bytes_per_s", &HardwareProfile::rank_broadcast_bytes_per_s, 16.88e9)
      .Positive()
      .Unit("bytes/s")
      .Group(host)
      .Source("[PrIM] CPU-DPU broadcast, 64 DPUs (bytes delivered)")
      .Help("broadcast to one full rank, counting every copy delivered");
  t.Add("max_to_dpu_bytes_per_s", &HardwareProfile::max_to_dpu_bytes_per_s, 22.6e9)
      .Positive()
      .Unit("bytes/s")
      .Group(host)
      .Source("[sdk-light] 32 ranks, SDK 2023.2")
      .Help("the host's cap on pushes over many ranks");
  t.Add("max_from_dpu_bytes_per_s", &HardwareProfile::max_from_dpu_bytes_per_s, 11.1e9)
      .Positive()
      .Unit("bytes/s")
      .Group(host)
      .Source("[sdk-light] 32 ranks, SDK 2023.2")
      .Help("the host's cap on pulls over many ranks");
  t.Add("max_broadcast_bytes_per_s", &HardwareProfile::max_broadcast_bytes_per_s, 8 * 22.6e9)
      .Positive()
      .Unit("bytes/s")
      .Group(host)
      .Source("inferred: a broadcast writes one copy per chip group (8 x the push cap)")
      .Help("the host's cap on broadcasts, counting every copy delivered");
  t.Add("push_to_dpu_overhead_s", &HardwareProfile::push_to_dpu_overhead_s, 60e-6)
      .Min(0)
      .Unit("s")
      .Group(host)
      .Source("[comm-test] one rank")
      .Help("fixed cost of a parallel push or broadcast to one rank");
  t.Add("push_to_dpu_overhead_per_rank_s", &HardwareProfile::push_to_dpu_overhead_per_rank_s, 12e-6)
      .Min(0)
      .Unit("s")
      .Group(host)
      .Source("inferred: fit to about 0.45 ms at 32 ranks ([sdk-light])")
      .Help("added per further rank");
  t.Add("push_from_dpu_overhead_s", &HardwareProfile::push_from_dpu_overhead_s, 150e-6)
      .Min(0)
      .Unit("s")
      .Group(host)
      .Source("[comm-test] one rank")
      .Help("fixed cost of a parallel pull from one rank");
  t.Add("push_from_dpu_overhead_per_rank_s", &HardwareProfile::push_from_dpu_overhead_per_rank_s, 28e-6)
      .Min(0)
      .Unit("s")
      .Group(host)
      .Source("inferred: fit to about 1 ms at 32 ranks ([sdk-light])")
      .Help("added per further rank");
  t.Add("launch_overhead_s", &HardwareProfile::launch_overhead_s, 50e-6)
      .Min(0)
      .Unit("s")
      .Group(host)
      .Source("[comm-test] dpu_launch of an empty kernel: 183 us at 4 ranks")
      .Help("fixed cost of a synchronous launch");
  t.Add("launch_overhead_per_rank_s", &HardwareProfile::launch_overhead_per_rank_s, 33e-6)
      .Min(0)
      .Unit("s")
      .Group(host)
      .Source("inferred: 50 + 4 x 33 = 182 us at 4 ranks ([comm-test])")
      .Help("added per rank launched");
  t.Add("dpu_active_power_w", &HardwareProfile::dpu_active_power_w, 0.15)
      .Min(0)
      .Unit("W")
      .Group(energy)
      .Source("[HotChips19] 1.2 W per chip of 8 DPUs")
      .Help("power of a busy DPU");
  const std::string host_group = "host reduction";
  const std::string calibrated =
      "measured: 'pimopt profile --calibrate-host' on a Xeon server core, baseline x86-64 code (docs/pim-emulator.md)";
  t.Add("host_cores", &HardwareProfile::host_cores, 16)
      .Min(1)
      .Unit("cores")
      .Group(host_group)
      .Source("[PIM-Opt] 2 x Intel Xeon Silver 4215, 8 cores each")
      .Help("host cores the reduction threads share");
  t.Add("host_reduction_threads", &HardwareProfile::host_reduction_threads, 16)
      .Min(1)
      .Unit("threads")
      .Group(host_group)
      .Source("[PIM-Opt] MA-SGD/*/LR/host/app.c: 16 reduction threads of 256 features on YFCC (63 on Criteo)")
      .Help("threads the host starts for each reduction (it uses min(this, host_cores) cores)");
  t.Add("host_clock_hz", &HardwareProfile::host_clock_hz, 2.5e9)
      .Positive()
      .Unit("Hz")
      .Group(host_group)
      .Source("[PIM-Opt] Xeon Silver 4215 at 2.5 GHz")
      .Help("host core clock");
  t.Add("host_cycles_per_element", &HardwareProfile::host_cycles_per_element, 0.55)
      .Positive()
      .Unit("cycles")
      .Group(host_group)
      .Source(calibrated)
      .Help("one thread adding one value of a DPU's vector into a 64-bit sum, data in cache");
  t.Add("host_update_cycles_per_element", &HardwareProfile::host_update_cycles_per_element, 2.6)
      .Min(0)
      .Unit("cycles")
      .Group(host_group)
      .Source(calibrated)
      .Help("one thread turning one 64-bit sum into a model coordinate (divide, saturate, store)");
  t.Add("host_thread_bytes_per_s", &HardwareProfile::host_thread_bytes_per_s, 6.3e9)
      .Positive()
      .Unit("B/s")
      .Group(host_group)
      .Source(calibrated)
      .Help("one thread streaming from host memory");
  t.Add("host_memory_bytes_per_s", &HardwareProfile::host_memory_bytes_per_s, 54e9)
      .Positive()
      .Unit("B/s")
      .Group(host_group)
      .Source("inferred: 4 DDR4-2400 channels of host DRAM beside 20 PIM DIMMs, 70% of their peak "
              "(docs/pim-emulator.md)")
      .Help("host memory bandwidth with every reduction thread streaming");
  t.Add("host_thread_start_s", &HardwareProfile::host_thread_start_s, 10e-6)
      .Min(0)
      .Unit("s")
      .Group(host_group)
      .Source(calibrated)
      .Help("create and join one reduction thread (the artifact starts its threads at every reduction)");
  return t;
}

// The base is UPMEM's v1A DPU in the PIM-Opt server; presets change only what differs.
std::vector<ProfilePreset> MakePresets() {
  const std::string x4 = "4 x the host links of the base";
  return {
      {"pim-opt", "the PIM-Opt server: 2,048 DPUs (32 ranks) of UPMEM v1A at 350 MHz", "[PIM-Opt]", {}},
      {"prim-2556", "PrIM's 2,556-DPU system (20 dual-rank DIMMs) at 350 MHz", "[PrIM]", {{"num_dpus", "2556"}}},
      {"prim-640", "PrIM's 640-DPU system (10 DIMMs) at 267 MHz", "[PrIM]",
       {{"num_dpus", "640"}, {"dpu_frequency_hz", "267e6"}}},
      {"upmem-2524", "the PIM-ML system: 2,524 DPUs at 425 MHz", "[PIM-ML]",
       {{"num_dpus", "2524"}, {"dpu_frequency_hz", "425e6"}}},
      {"future-fpu",
       "what-if: a DPU with a pipelined FPU and 32-bit multiplier (every op one slot, 64-bit mul/div two)",
       "what-if",
       {{"slots.int32_mul", "1"},
        {"slots.int32_div", "1"},
        {"slots.int64_mul", "2"},
        {"slots.int64_div", "2"},
        {"slots.float_add", "1"},
        {"slots.float_sub", "1"},
        {"slots.float_mul", "1"},
        {"slots.float_div", "1"},
        {"slots.double_add", "1"},
        {"slots.double_sub", "1"},
        {"slots.double_mul", "1"},
        {"slots.double_div", "1"},
        {"slots.float_convert", "1"},
        {"mul32_setup_slots", "1"}}},
      {"future-wide", "what-if: the 500 MHz design clock, 4x WRAM (256 KB) and 4x host links",
       "what-if after [HotChips19]'s 500 MHz target",
       {{"dpu_frequency_hz", "500e6"},
        {"wram_bytes", "262144"},
        {"rank_to_dpu_bytes_per_s", "26.72e9"},
        {"rank_from_dpu_bytes_per_s", "18.96e9"},
        {"rank_broadcast_bytes_per_s", "67.52e9"},
        {"max_to_dpu_bytes_per_s", "90.4e9"},
        {"max_from_dpu_bytes_per_s", "44.4e9"},
        {"max_broadcast_bytes_per_s", "723.2e9"}}},
  };
}

}  // namespace

const ParamTable<HardwareProfile>& ProfileFields() {
  static const ParamTable<HardwareProfile> table = MakeProfileFields();
  return table;
}

// A field added to HardwareProfile must be declared in ProfileFields(): its fields have no initializers of their
// own, so an undeclared one would be left unset. This guard makes such an addition fail to compile on the LP64
// platforms pimopt is built on (the size counts 43 fields and the op-cost array).
static_assert(sizeof(void*) != 8 || sizeof(std::string) != 32 || sizeof(HardwareProfile) == 520,
              "HardwareProfile changed: declare every field in ProfileFields() and update this size");

HardwareProfile::HardwareProfile() : name("pim-opt") { ProfileFields().ApplyDefaults(*this); }

const std::vector<ProfilePreset>& ProfilePresets() {
  static const std::vector<ProfilePreset> presets = MakePresets();
  return presets;
}

std::vector<std::string> ProfileNames() {
  std::vector<std::string> names;
  for (const ProfilePreset& p : ProfilePresets()) names.push_back(p.name);
  return names;
}

HardwareProfile MakeProfile(const std::string& name) {
  for (const ProfilePreset& preset : ProfilePresets()) {
    if (preset.name != name) continue;
    HardwareProfile p;
    p.name = name;
    for (const auto& [field, value] : preset.fields) ProfileFields().SetText(p, field, value);
    p.Validate();
    return p;
  }
  throw ConfigError("--profile", StrCat("unknown hardware profile '", name, "' (known: ", JoinNames(ProfileNames()), ")"));
}

void HardwareProfile::Validate() const {
  try {
    ProfileFields().CheckValues(*this);
  } catch (const ConfigError& e) {
    throw ConfigError(StrCat("profile.", e.parameter().substr(2)), e.detail());
  }
  auto require = [](bool ok, const char* field, const char* what) {
    if (!ok) throw ConfigError(StrCat("profile.", field), what);
  };
  require(mram_bytes % 8 == 0, "mram_bytes", "must be a multiple of 8");
  require(wram_bytes % 8 == 0, "wram_bytes", "must be a multiple of 8");
  require(dma_max_bytes >= dma_min_bytes, "dma_max_bytes", "must be >= dma_min_bytes");
}

void ApplyOverrides(HardwareProfile& p, const std::string& overrides) {
  std::vector<std::string> items = SplitText(overrides, ',');
  if (items.back().empty()) items.pop_back();  // "" and a trailing comma give no item
  for (const std::string& item : items) {
    const size_t eq = item.find('=');
    const std::string field = item.substr(0, eq);
    if (eq == std::string::npos || ProfileFields().Find(field) == nullptr) {
      throw ConfigError("--profile-set",
                        StrCat("unknown profile field '", field, "' ('pimopt profile NAME' lists the fields)"));
    }
    try {
      ProfileFields().SetText(p, field, item.substr(eq + 1));
    } catch (const ConfigError& e) {
      throw ConfigError("--profile-set", StrCat(field, ": ", e.detail()));
    }
  }
  try {
    p.Validate();
  } catch (const ConfigError& e) {
    throw ConfigError("--profile-set", StrCat(e.parameter().substr(8), ": ", e.detail()));
  }
}

}  // namespace pimopt::pim
