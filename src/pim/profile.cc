#include "pimopt/pim/profile.h"

#include "pimopt/core/error.h"
#include "pimopt/core/file_util.h"

namespace pimopt::pim {

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
    {Op::kMul32Setup, 7,
     "[SDK] mul32.c (__mulsi3), counted: the call, the operand compare and its two moves, the clear of the sum, "
     "the result's move, the return; PrIM's loop (its scalar moved into the routine's register, 21 steps) "
     "6 + 7 + 21 = 34 slots, [PrIM]'s 10.27 MOPS"},
    {Op::kMulStep, 1, "[uPIMulator] op_code.go: mul_step, one bit of the smaller operand per instruction"},
    {Op::kDiv32Setup, 8, "[SDK] div32.c (__udivsi3): clz of both operands, the jump into the step chain, return"},
    {Op::kDivStep, 1, "[uPIMulator] op_code.go: div_step, one quotient bit per instruction"},
    {Op::kDivSigned, 8,
     "inferred: __divsi3's sign handling; with PrIM's operands (rand() / 2^20: about 10 steps) 8 + 8 + 10 = 26 "
     "slots, [PrIM]'s 11.27 MOPS"},
    {Op::kInt64Compare, 1, "[uPIMulator] op_code.go: sub + subc with the condition (the subc branches)"},
    {Op::kCall, 4, "inferred: call, return, and saving the return address of a function that is not inlined"},
};
static_assert(std::size(kOpCosts) == kNumOps, "every op class needs a cost");

// The timing model's free constants: fitted on PrIM kernels timed on real hardware by pimopt's validation
// ('pimopt validate --fit'), which also predicts each kernel from a fit on the others (docs/pim-emulator.md).
constexpr const char* kFitted =
    "fitted: 'pimopt validate' on 10 PrIM kernels timed on hardware ([uPIMulator] input.xlsx), "
    "leave-one-out checked (docs/pim-emulator.md)";

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
    t.AddCustom(
         StrCat("slots.", OpName(cost.op)), ParamType::kReal, cost.slots,
         [i](const HardwareProfile& p) -> ParamValue { return p.op_slots[i]; },
         [i](HardwareProfile& p, const ParamValue& v) { p.op_slots[i] = std::get<double>(v); })
        .Min(0)
        .Unit("slots")
        .Group(pipeline)
        .Source(cost.source)
        .Help(StrCat("issue slots of one ", OpName(cost.op)));
  }
  t.Add("issue_stall_cycles", &HardwareProfile::issue_stall_cycles, 0.0)
      .Min(0)
      .Max(2)
      .Unit("cycles")
      .Group(pipeline)
      .Source(kFitted)
      .Help(
          "cycles of the pipeline an issued instruction loses on average (register-file bank conflicts and other "
          "structural hazards): a full pipeline issues 1 / (1 + this) instructions per cycle");
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
  t.Add("dma_occupancy_cycles", &HardwareProfile::dma_occupancy_cycles, 0.0)
      .Min(0)
      .Unit("cycles")
      .Group(dma)
      .Source(kFitted)
      .Help(
          "the DMA engine's fixed busy time per DMA (its busy time is this + dma_occupancy_cycles_per_byte x "
          "bytes; the tasklet waits alpha + beta x bytes from the DMA's start)");
  t.Add("dma_occupancy_cycles_per_byte", &HardwareProfile::dma_occupancy_cycles_per_byte, 0.579)
      .Min(0)
      .Unit("cycles/byte")
      .Group(dma)
      .Source(kFitted)
      .Help("the DMA engine's busy time per byte: queued DMAs stream at 1 / this bytes per cycle");
  t.Add("dma_pipeline_stall", &HardwareProfile::dma_pipeline_stall, 0.372)
      .Min(0)
      .Max(1)
      .Group(dma)
      .Source(kFitted)
      .Help("share of the pipeline's issue slots lost while the DMA engine is busy");
  t.Add("dma_issue_slots", &HardwareProfile::dma_issue_slots, 0.0)
      .Min(0)
      .Unit("slots")
      .Group(dma)
      .Source(
          "[PrIM] MRAM latency: its alpha already includes the ldma / sdma instruction (a size known only at run "
          "time adds a shift and an add, counted by the kernel API)")
      .Help("issue slots of mram_read / mram_write beyond the DMA's latency");
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
  t.Add("lock_acquire_slots", &HardwareProfile::lock_acquire_slots, 1.0)
      .Min(0)
      .Unit("slots")
      .Group(sync)
      .Source("[SDK] mutex.h: mutex_lock is one acquire, re-issued while the bit is taken")
      .Help("one acquire of an atomic bit (a tasklet spinning on a taken one re-issues it)");
  t.Add("lock_release_slots", &HardwareProfile::lock_release_slots, 1.0)
      .Min(0)
      .Unit("slots")
      .Group(sync)
      .Source("[SDK] mutex.h: mutex_unlock is one release")
      .Help("one release of an atomic bit");
  t.Add("barrier_call_slots", &HardwareProfile::barrier_call_slots, 4.0)
      .Min(0)
      .Unit("slots")
      .Group(sync)
      .Source("[SDK] barrier.c, inferred count: call and prologue")
      .Help("barrier_wait's instructions before it takes the barrier's lock");
  t.Add("barrier_critical_slots", &HardwareProfile::barrier_critical_slots, 10.0)
      .Min(0)
      .Unit("slots")
      .Group(sync)
      .Source("[SDK] barrier.c, counted: read the count and the wait queue, test, enqueue, decrement, release")
      .Help("each arrival's instructions under the barrier's lock (arrivals serialize on it)");
  t.Add("barrier_resume_slots", &HardwareProfile::barrier_resume_slots, 4.0)
      .Min(0)
      .Unit("slots")
      .Group(sync)
      .Source("[SDK] barrier.c, counted: walk the wait queue (load, compare), resume")
      .Help("the last arrival's instructions per waiting tasklet it resumes");
  t.Add("sync_return_slots", &HardwareProfile::sync_return_slots, 3.0)
      .Min(0)
      .Unit("slots")
      .Group(sync)
      .Source("[SDK] barrier.c, handshake.c, sem.c, inferred count: epilogue and return")
      .Help("a synchronization routine's instructions after its critical section or after being resumed");
  t.Add("handshake_critical_slots", &HardwareProfile::handshake_critical_slots, 5.0)
      .Min(0)
      .Unit("slots")
      .Group(sync)
      .Source("[SDK] handshake.c, counted: read the notifier's slot, test, resume or record, write")
      .Help("handshake_notify / handshake_wait_for's instructions under the notifier's lock");
  t.Add("semaphore_critical_slots", &HardwareProfile::semaphore_critical_slots, 6.0)
      .Min(0)
      .Unit("slots")
      .Group(sync)
      .Source("[SDK] sem.c, inferred count")
      .Help("sem_take / sem_give's instructions under the semaphore's lock");
  t.Add("read_clock_slots", &HardwareProfile::read_clock_slots, 2.0)
      .Min(0)
      .Unit("slots")
      .Group(sync)
      .Source("[SDK] perfcounter.h: perfcounter_get reads the time register")
      .Help("perfcounter_get's instructions");
  t.Add("spin_limit_cycles", &HardwareProfile::spin_limit_cycles, 1e7)
      .Positive()
      .Unit("cycles")
      .Group("emulator checks")
      .Source("emulator setting (not hardware)")
      .Help(
          "a tasklet spinning on shared WRAM (pim::Volatile) while no other tasklet can change it for this long "
          "is reported as an error naming it");
  t.Add("serial_to_dpu_bytes_per_s", &HardwareProfile::serial_to_dpu_bytes_per_s, 0.866e9)
      .Positive()
      .Unit("bytes/s")
      .Group(host)
      .Source(kFitted)
      .Help("dpu_copy_to of one DPU");
  t.Add("serial_from_dpu_bytes_per_s", &HardwareProfile::serial_from_dpu_bytes_per_s, 0.126e9)
      .Positive()
      .Unit("bytes/s")
      .Group(host)
      .Source(kFitted)
      .Help("dpu_copy_from of one DPU");
  t.Add("serial_call_overhead_s", &HardwareProfile::serial_call_overhead_s, 37.3e-6)
      .Min(0)
      .Unit("s")
      .Group(host)
      .Source(kFitted)
      .Help("fixed cost of a serial copy");
  t.Add("rank_to_dpu_bytes_per_s", &HardwareProfile::rank_to_dpu_bytes_per_s, 5.5e9)
      .Positive()
      .Unit("bytes/s")
      .Group(host)
      .Source(kFitted)
      .Help("parallel push to one full rank");
  t.Add("rank_from_dpu_bytes_per_s", &HardwareProfile::rank_from_dpu_bytes_per_s, 1.81e9)
      .Positive()
      .Unit("bytes/s")
      .Group(host)
      .Source(kFitted)
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
  t.Add("push_to_dpu_overhead_s", &HardwareProfile::push_to_dpu_overhead_s, 54.3e-6)
      .Min(0)
      .Unit("s")
      .Group(host)
      .Source(kFitted)
      .Help("fixed cost of a parallel push or broadcast to one rank");
  t.Add("push_to_dpu_overhead_per_rank_s", &HardwareProfile::push_to_dpu_overhead_per_rank_s, 12e-6)
      .Min(0)
      .Unit("s")
      .Group(host)
      .Source("inferred: fit to about 0.45 ms at 32 ranks ([sdk-light])")
      .Help("added per further rank");
  t.Add("push_from_dpu_overhead_s", &HardwareProfile::push_from_dpu_overhead_s, 119e-6)
      .Min(0)
      .Unit("s")
      .Group(host)
      .Source(kFitted)
      .Help("fixed cost of a parallel pull from one rank");
  t.Add("push_from_dpu_overhead_per_rank_s", &HardwareProfile::push_from_dpu_overhead_per_rank_s, 28e-6)
      .Min(0)
      .Unit("s")
      .Group(host)
      .Source("inferred: fit to about 1 ms at 32 ranks ([sdk-light])")
      .Help("added per further rank");
  t.Add("push_to_dpu_overhead_per_dpu_s", &HardwareProfile::push_to_dpu_overhead_per_dpu_s, 0.19e-6)
      .Min(0)
      .Unit("s")
      .Group(host)
      .Source(kFitted)
      .Help("added per DPU of one rank to a push or broadcast (ranks are worked in parallel)");
  t.Add("push_from_dpu_overhead_per_dpu_s", &HardwareProfile::push_from_dpu_overhead_per_dpu_s, 4.74e-6)
      .Min(0)
      .Unit("s")
      .Group(host)
      .Source(kFitted)
      .Help(
          "added per DPU of one rank to a pull, and to a serial copy from one DPU of a set (per DPU of the set's "
          "first rank)");
  t.Add("push_bandwidth_knee_bytes", &HardwareProfile::push_bandwidth_knee_bytes, 67.7e6)
      .Positive()
      .Unit("bytes")
      .Group(host)
      .Source(kFitted)
      .Help(
          "bytes per rank at which a push's bandwidth has halved: the host reads its buffers from cache below, "
          "from DRAM above (bandwidth x 1 / (1 + (bytes per rank / this)^push_bandwidth_knee_exponent))");
  t.Add("push_bandwidth_knee_exponent", &HardwareProfile::push_bandwidth_knee_exponent, 0.737)
      .Min(0)
      .Max(8)
      .Group(host)
      .Source(kFitted)
      .Help("how sharply a push's bandwidth falls past push_bandwidth_knee_bytes");
  t.Add("launch_overhead_s", &HardwareProfile::launch_overhead_s, 98.6e-6)
      .Min(0)
      .Unit("s")
      .Group(host)
      .Source(kFitted)
      .Help("fixed cost of a synchronous launch");
  t.Add("launch_overhead_per_rank_s", &HardwareProfile::launch_overhead_per_rank_s, 33e-6)
      .Min(0)
      .Unit("s")
      .Group(host)
      .Source("inferred: 182 us at 4 ranks against about 50 us at one ([comm-test]): 33 us per rank")
      .Help("added per rank launched");
  const std::string uncertainty_source =
      "validated: 68th percentile of the absolute relative error out of sample, leave-one-benchmark-out over 10 "
      "PrIM kernels timed on hardware ([uPIMulator] input.xlsx; 'pimopt validate')";
  t.Add("kernel_time_uncertainty", &HardwareProfile::kernel_time_uncertainty, 0.113)
      .Min(0)
      .Unit("fraction")
      .Group("error bars")
      .Source(uncertainty_source)
      .Help("relative uncertainty of a modeled kernel time with its launch (reports' error bars)");
  t.Add("cpu_to_dpu_time_uncertainty", &HardwareProfile::cpu_to_dpu_time_uncertainty, 0.272)
      .Min(0)
      .Unit("fraction")
      .Group("error bars")
      .Source(uncertainty_source)
      .Help("relative uncertainty of a modeled CPU->DPU transfer time (1 MB or more)");
  t.Add("dpu_to_cpu_time_uncertainty", &HardwareProfile::dpu_to_cpu_time_uncertainty, 0.186)
      .Min(0)
      .Unit("fraction")
      .Group("error bars")
      .Source(uncertainty_source)
      .Help("relative uncertainty of a modeled DPU->CPU transfer time (1 MB or more)");
  const std::string links = "what-if DPU links";
  const std::string link_assumption =
      "assumption (no such link exists): a DPU's port moves what its MRAM DMA engine sustains, 0.63 GB/s read in "
      "[PrIM] Fig. 8; docs/pim-emulator.md 'What-if interconnects'";
  t.AddChoice("link_scope", &HardwareProfile::link_scope, LinkScope::kNone,
              std::vector<std::pair<ParamChoice, LinkScope>>{
                  {{"none", "no DPU-to-DPU path: everything passes through the host (today's UPMEM)", {}},
                   LinkScope::kNone},
                  {{"chip", "the DPUs of a chip are linked", {}}, LinkScope::kChip},
                  {{"rank", "the DPUs of a rank are linked", {}}, LinkScope::kRank},
                  {{"system", "every DPU: within a rank by the DPUs' ports, across ranks by the ranks' ports", {}},
                   LinkScope::kSystem}})
      .Noun("scope")
      .Group(links)
      .Source("[PIM-Opt] section 7: future PIM systems need direct DPU communication (what-if)")
      .Help("which DPUs a direct link joins");
  t.Add("dpus_per_chip", &HardwareProfile::dpus_per_chip, 8)
      .Min(1)
      .Unit("DPUs")
      .Group(links)
      .Source("[HotChips19] 8 DPUs per chip")
      .Help("DPUs per chip (the link scope 'chip')");
  t.Add("link_bytes_per_s", &HardwareProfile::link_bytes_per_s, 0.63e9)
      .Positive()
      .Unit("B/s")
      .Group(links)
      .Source(link_assumption)
      .Help("a DPU's link port, each direction: its messages to its neighbours share it");
  t.Add("link_latency_s", &HardwareProfile::link_latency_s, 1e-6)
      .Min(0)
      .Unit("s")
      .Group(links)
      .Source("assumption: 1 us per message, the order of a DPU-side DMA plus a handshake")
      .Help("a message's fixed time on a link");
  t.Add("inter_rank_link_bytes_per_s", &HardwareProfile::inter_rank_link_bytes_per_s, 19.2e9)
      .Positive()
      .Unit("B/s")
      .Group(links)
      .Source("assumption: a rank's DDR4-2400 channel, 19.2 GB/s ([PrIM] section 2)")
      .Help("a rank's port to the other ranks, each direction (scope 'system'): its DPUs' cross-rank messages share "
            "it");
  t.Add("inter_rank_link_latency_s", &HardwareProfile::inter_rank_link_latency_s, 2e-6)
      .Min(0)
      .Unit("s")
      .Group(links)
      .Source("assumption: 2 us per message across ranks")
      .Help("a cross-rank message's fixed time");
  const std::string collectives = "software collectives";
  t.Add("direct_to_dpu_bytes_per_s", &HardwareProfile::direct_to_dpu_bytes_per_s, 16.88e9)
      .Positive()
      .Unit("B/s")
      .Group(collectives)
      .Source("[PrIM] CPU-DPU broadcast, 64 DPUs (bytes delivered): the SDK's one transfer whose host side converts "
              "nothing per byte, so the rank's own write rate")
      .Help("one rank's MRAM written by host threads directly (PID-Comm's stream stores, no layout conversion)");
  t.Add("direct_from_dpu_bytes_per_s", &HardwareProfile::direct_from_dpu_bytes_per_s, 5.55e9)
      .Positive()
      .Unit("B/s")
      .Group(collectives)
      .Source("inferred: the SDK's parallel pull (rank_from_dpu_bytes_per_s, 1.81 GB/s) sped up by the factor the "
              "SDK's conversion costs a push (rank_broadcast / rank_to_dpu = 16.88 / 5.5 = 3.07)")
      .Help("one rank's MRAM read by host threads directly (PID-Comm's stream loads, no layout conversion)");
  t.Add("pim_channel_bytes_per_s", &HardwareProfile::pim_channel_bytes_per_s, 19.2e9)
      .Positive()
      .Unit("B/s")
      .Group(collectives)
      .Source("a DDR4-2400 channel's peak, 19.2 GB/s ([PrIM] section 2)")
      .Help("one memory channel of PIM DIMMs: the direct reads and writes of its ranks share it");
  t.Add("dpus_per_channel", &HardwareProfile::dpus_per_channel, 256)
      .Min(1)
      .Unit("DPUs")
      .Group(collectives)
      .Source("[PID-Comm] README: two UPMEM DIMMs per channel, each of two ranks of 64 DPUs")
      .Help("DPUs of the DIMMs on one memory channel");
  t.Add("collective_host_threads", &HardwareProfile::collective_host_threads, 32)
      .Min(1)
      .Unit("threads")
      .Group(collectives)
      .Source("[PID-Comm] the host engine starts 32 threads per collective (hw_dpu_rank.c)")
      .Help("host threads a software collective starts (each at host_thread_start_s)");
  t.Add("dpu_active_power_w", &HardwareProfile::dpu_active_power_w, 0.15)
      .Min(0)
      .Unit("W")
      .Group(energy)
      .Source("[HotChips19] 1.2 W per chip of 8 DPUs")
      .Help("power of a busy DPU");
  t.Add("host_core_power_w", &HardwareProfile::host_core_power_w, 85.0 / 8)
      .Min(0)
      .Unit("W")
      .Group(energy)
      .Source("[Xeon-4215] 85 W TDP over 8 cores (an upper bound: the core at full load)")
      .Help("power of one host core at work: a transfer's thread per rank, the reduction's threads, the launch");
  t.Add("channel_energy_j_per_byte", &HardwareProfile::channel_energy_j_per_byte, 1.3e-9 / 8)
      .Min(0)
      .Unit("J/byte")
      .Group(energy)
      .Source("[Horowitz14] a 64-bit DRAM access costs 1.3 to 2.6 nJ: the lower figure, per byte")
      .Help("energy of one byte moved between the host and a PIM DIMM over the DRAM channel (and, as an assumption, "
            "over a what-if DPU link)");
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
      .Source(
          "inferred: 4 DDR4-2400 channels of host DRAM beside 20 PIM DIMMs, 70% of their peak "
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
      {"prim-640",
       "PrIM's 640-DPU system (10 DIMMs) at 267 MHz",
       "[PrIM]",
       {{"num_dpus", "640"}, {"dpu_frequency_hz", "267e6"}}},
      {"upmem-2524",
       "the PIM-ML system: 2,524 DPUs at 425 MHz",
       "[PIM-ML]",
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
        {"slots.mul32_setup", "1"},
        {"slots.mul_step", "0"},
        {"slots.div32_setup", "1"},
        {"slots.div_step", "0"},
        {"slots.div_signed", "0"}}},
      {"links-chip",
       "what-if: today's UPMEM with links between the 8 DPUs of each chip",
       "what-if (assumed link figures, docs/pim-emulator.md 'What-if interconnects')",
       {{"link_scope", "chip"}}},
      {"links-rank",
       "what-if: today's UPMEM with links between the 64 DPUs of each rank",
       "what-if (assumed link figures, docs/pim-emulator.md 'What-if interconnects')",
       {{"link_scope", "rank"}}},
      {"links-system",
       "what-if: today's UPMEM with links between all DPUs (across ranks through each rank's port)",
       "what-if (assumed link figures, docs/pim-emulator.md 'What-if interconnects')",
       {{"link_scope", "system"}}},
      {"host-x2",
       "what-if: today's UPMEM with 2x the host <-> DPU bandwidth (every rate and cap of the transfer model)",
       "what-if: pim-opt's transfer rates x2",
       {{"rank_to_dpu_bytes_per_s", "1.1e+10"},
        {"rank_from_dpu_bytes_per_s", "3.62e+09"},
        {"rank_broadcast_bytes_per_s", "3.376e+10"},
        {"max_to_dpu_bytes_per_s", "4.52e+10"},
        {"max_from_dpu_bytes_per_s", "2.22e+10"},
        {"max_broadcast_bytes_per_s", "3.616e+11"}}},
      {"host-x4",
       "what-if: today's UPMEM with 4x the host <-> DPU bandwidth (every rate and cap of the transfer model)",
       "what-if: pim-opt's transfer rates x4",
       {{"rank_to_dpu_bytes_per_s", "2.2e+10"},
        {"rank_from_dpu_bytes_per_s", "7.24e+09"},
        {"rank_broadcast_bytes_per_s", "6.752e+10"},
        {"max_to_dpu_bytes_per_s", "9.04e+10"},
        {"max_from_dpu_bytes_per_s", "4.44e+10"},
        {"max_broadcast_bytes_per_s", "7.232e+11"}}},
      {"pim-mmu",
       "what-if: today's UPMEM with PIM-MMU's DMA copy engine: 4.1x the SDK's transfer rates (a rank at most a "
       "channel's 19.2 GB/s)",
       "what-if after [PIM-MMU]: an average 4.1x DRAM <-> PIM transfer throughput",
       {{"rank_to_dpu_bytes_per_s", "1.92e+10"},
        {"rank_from_dpu_bytes_per_s", "7.42e+09"},
        {"max_to_dpu_bytes_per_s", "9.27e+10"},
        {"max_from_dpu_bytes_per_s", "4.55e+10"}}},
      {"numa-aware",
       "what-if: today's UPMEM with NUMA-aware rank allocation: 2.9x the transfers' many-rank caps",
       "what-if after [UPMEM-Unleashed]: up to 2.9x host <-> PIM transfer throughput on a dual-socket server",
       {{"max_to_dpu_bytes_per_s", "6.55e+10"},
        {"max_from_dpu_bytes_per_s", "3.22e+10"},
        {"max_broadcast_bytes_per_s", "5.24e+11"}}},
      {"future-wide",
       "what-if: the 500 MHz design clock, 4x WRAM (256 KB) and 4x host links",
       "what-if after [HotChips19]'s 500 MHz target",
       {{"dpu_frequency_hz", "500e6"},
        {"wram_bytes", "262144"},
        {"rank_to_dpu_bytes_per_s", "22e9"},
        {"rank_from_dpu_bytes_per_s", "7.24e9"},
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
// platforms pimopt is built on (the size counts every field and the op-cost array).
static_assert(sizeof(void*) != 8 || sizeof(std::string) != 32 || sizeof(HardwareProfile) == 792,
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
  throw ConfigError("--profile",
                    StrCat("unknown hardware profile '", name, "' (known: ", JoinNames(ProfileNames()), ")"));
}

HardwareProfile MakeProfile(const std::string& name, const std::string& overrides) {
  HardwareProfile p = MakeProfile(name);
  if (!overrides.empty()) ApplyOverrides(p, overrides);
  return p;
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
  // Fields that contradict each other: the run would model a machine that cannot exist.
  auto require_within = [](uint64_t part, uint64_t whole, const char* field, const char* whole_field) {
    if (part > whole) {
      throw ConfigError(StrCat("profile.", field),
                        StrCat(part, " contradicts ", whole_field, " = ", whole, ": must be at most ", whole));
    }
  };
  require_within(dpus_per_chip, dpus_per_rank, "dpus_per_chip", "dpus_per_rank");
  require_within(host_reduction_threads, host_cores, "host_reduction_threads", "host_cores");
  if (uint64_t{max_tasklets} * default_stack_bytes > wram_bytes) {
    throw ConfigError("profile.default_stack_bytes",
                      StrCat(default_stack_bytes, " contradicts wram_bytes = ", wram_bytes, ": max_tasklets = ",
                             max_tasklets, " stacks take ", uint64_t{max_tasklets} * default_stack_bytes, " bytes"));
  }
  require_within(dma_max_bytes, wram_bytes, "dma_max_bytes", "wram_bytes");
}

void ApplyOverrides(HardwareProfile& p, const std::string& overrides) {
  std::vector<std::string> items = SplitText(overrides, ',');
  if (items.back().empty()) items.pop_back();  // "" and a trailing comma give no item
  for (const std::string& item : items) {
    const size_t eq = item.find('=');
    const std::string field = item.substr(0, eq);
    if (ProfileFields().Find(field) == nullptr) {
      throw ConfigError("--profile-set",
                        StrCat("unknown profile field '", field, "' ('pimopt profile NAME' lists the fields)"));
    }
    if (eq == std::string::npos) {
      throw ConfigError("--profile-set", StrCat("'", field, "' has no value: write ", field, "=VALUE"));
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
