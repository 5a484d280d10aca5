#include "host.h"

#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstring>
#include <functional>
#include <map>

#include "pimopt/core/error.h"
#include "pimopt/core/file_util.h"
#include "pimopt/core/thread_pool.h"
#include "pimopt/pim/native_program.h"

namespace pimopt::pim::prim {
namespace {

// The input data of a benchmark at size `param`, in bytes: over all DPUs, and on each DPU (a lower bound: the
// input alone, split evenly, or broadcast whole where every DPU holds it). Long double: no size overflows here.
struct InputBytes {
  long double total;
  long double per_dpu;
};

InputBytes InputBytesOf(const std::string& name, uint64_t param, uint32_t dpus) {
  const long double p = static_cast<long double>(param), d = dpus;
  long double total = 0;
  if (name == "VA") {
    total = 8 * p;  // a and b, int32
  } else if (name == "HST-S" || name == "HST-L" || name == "TS") {
    total = 4 * p;  // uint32 pixels, int32 series
  } else if (name == "TRNS") {
    total = p * 4 * 64 * 8 * 8;  // (M_ x 4) x (64 x 8) int64
  } else if (name == "MLP") {
    total = 3 * p * p * 4;  // three n x n int32 layers
  } else if (name == "GEMV") {
    total = p * 64 * 4;  // a rows x 64 int32 matrix
  } else if (name == "BS") {
    return {8 * p, 8 * p};  // the sorted int64 vector, on every DPU
  } else {
    total = 8 * p;  // RED, SEL, UNI, SCAN-SSA, SCAN-RSS: int64
  }
  return {total, total / d};
}

std::string Mb(long double bytes) { return FormatDouble(std::round(static_cast<double>(bytes / (1 << 20)) * 10) / 10); }

// Refuses, before anything is allocated, a size whose input cannot fit the DPUs' MRAM (naming the largest that
// can) or this machine's memory (the host keeps the inputs and the results: about three copies).
void CheckSizeFits(const std::string& name, const RunRequest& r, const HardwareProfile& profile) {
  const InputBytes need = InputBytesOf(name, r.param, r.dpus);
  if (need.per_dpu > static_cast<long double>(profile.mram_bytes)) {
    uint64_t lo = 1, hi = r.param;  // the largest param that fits: the need grows with param
    while (lo < hi) {
      const uint64_t mid = lo + (hi - lo + 1) / 2;
      if (InputBytesOf(name, mid, r.dpus).per_dpu <= static_cast<long double>(profile.mram_bytes)) {
        lo = mid;
      } else {
        hi = mid - 1;
      }
    }
    throw ConfigError("--param", StrCat(r.param, " (", Find(name).param_meaning, ") needs at least ", Mb(need.per_dpu),
                                        " MB of MRAM per DPU on ", r.dpus, " DPUs; a DPU of profile '", profile.name,
                                        "' has ", Mb(profile.mram_bytes), " MB: at most ", lo, " on ", r.dpus,
                                        " DPUs"));
  }
  CheckMemoryNeed(static_cast<uint64_t>(3 * need.total), StrCat("PrIM ", name, " at --param ", r.param, " (host arrays)"),
                  "--param");
}

}  // namespace

const std::vector<BenchmarkInfo>& Benchmarks() {
  static const std::vector<BenchmarkInfo> list = {
      {"VA", "vector length (c = a + b)", "int32", "BL=10 (1 KB blocks), 16 tasklets"},
      {"RED", "vector length (sum)", "int64", "BL=10, single-tasklet final reduction (VERSION SINGLE)"},
      {"SEL", "vector length (keeps the odd elements: half)", "int64", "BL=10"},
      {"UNI", "vector length (drops consecutive duplicates: half)", "int64", "BL=10"},
      {"HST-S", "pixels (12-bit values, 256 bins; a histogram per tasklet)", "uint32", "BL=10"},
      {"HST-L", "pixels (12-bit values, 256 bins; one mutex-protected histogram)", "uint32", "BL=10, NR_HISTO=1"},
      {"TS", "time-series length (query length 64)", "int32",
       "BL undefined (the build passes -DBL10): 256-byte blocks"},
      {"SCAN-SSA", "vector length (scan, then add)", "int64", "BL=10"},
      {"SCAN-RSS", "vector length (reduce, then scan)", "int64", "BL=10"},
      {"TRNS", "M_ in a (M_ x 4) x (64 x 8) matrix of int64 tiles, transposed in place", "int64",
       "BL undefined (unused); m = 4, n = 8, N_ = 64 column tiles over the DPUs"},
      {"MLP", "n: three n x n layers applied to an n-vector (ReLU)", "int32", "BL=10"},
      {"GEMV", "rows of a rows x 64 matrix times a 64-vector", "int32", "BL=10"},
      {"BS", "sorted vector length (param / 8 queries)", "int64", "BL undefined: 256-byte blocks"},
  };
  return list;
}

const BenchmarkInfo& Find(const std::string& name) {
  for (const BenchmarkInfo& b : Benchmarks()) {
    if (b.name == name) return b;
  }
  std::string known;
  for (const BenchmarkInfo& b : Benchmarks()) known += (known.empty() ? "" : ", ") + b.name;
  throw ConfigError("benchmark", StrCat("unknown PrIM benchmark '", name, "' (known: ", known, ")"));
}

const ParamTable<RunRequest>& RequestParams() {
  static const ParamTable<RunRequest> table = [] {
    ParamTable<RunRequest> t;
    const RunRequest d;
    const std::string group = "Run";
    t.Add("dpus", &RunRequest::dpus, d.dpus).Min(1).Unit("DPUs").Group(group).Help(
        "DPUs (at most the profile's num_dpus)");
    t.Add("param", &RunRequest::param, d.param)
        .Min(1)
        .Group(group)
        .Help("the benchmark's size parameter, over all DPUs ('pimopt prim --list'); its input must fit the DPUs' "
              "MRAM");
    t.Add("tasklets", &RunRequest::tasklets, d.tasklets)
        .Min(1)
        .Unit("tasklets")
        .Group(group)
        .Help("tasklets per DPU (at most the profile's max_tasklets)");
    t.Add("shuffle-seed", &RunRequest::shuffle_seed, d.shuffle_seed)
        .Effect(ParamEffect::kNone)
        .DefaultNote("0 = in order")
        .Group(group)
        .Help("> 0: resume waiting tasklets in a seeded random order (flushes out kernel races)");
    t.AddChoice("scheduler", &RunRequest::scheduler, d.scheduler,
                {{{"batched", "a tasklet runs on past its DMAs", {}}, Scheduler::kBatched},
                 {{"reference", "a tasklet stops at every event", {}}, Scheduler::kReference}})
        .Effect(ParamEffect::kNone)
        .Group(group)
        .Help("how the emulator runs the tasklets (the same modeled times)");
    AddKernelSourceParam(t, &RunRequest::kernels).Group(group);
    AddThreadsParam(t, &RunRequest::host_threads, "host threads emulating the DPUs; never changes the result")
        .Group(group);
    return t;
  }();
  return table;
}

RunResult Run(const std::string& name, const RunRequest& request, const HardwareProfile& profile) {
  static const std::map<std::string, std::function<RunResult(const RunRequest&, const HardwareProfile&)>> runners = {
      {"VA", RunVa},     {"RED", RunRed},          {"SEL", RunSel},
      {"UNI", RunUni},   {"HST-S", RunHstS},       {"HST-L", RunHstL},
      {"TS", RunTs},     {"SCAN-SSA", RunScanSsa}, {"SCAN-RSS", RunScanRss},
      {"TRNS", RunTrns}, {"MLP", RunMlp},          {"GEMV", RunGemv},
      {"BS", RunBs}};
  Find(name);
  RequestParams().CheckValues(request);
  if (request.dpus > profile.num_dpus) {
    throw ConfigError("--dpus",
                      StrCat(request.dpus, " DPUs: profile '", profile.name, "' has 1 to ", profile.num_dpus));
  }
  if (request.tasklets > profile.max_tasklets) {
    throw ConfigError("--tasklets", StrCat(request.tasklets, ": the profile's DPUs run 1 to ", profile.max_tasklets));
  }
  CheckSizeFits(name, request, profile);
  const auto t0 = std::chrono::steady_clock::now();
  RunResult r = runners.at(name)(request, profile);
  r.host_wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

PhaseTimes Retime(const RunResult& run, const HardwareProfile& profile) {
  if (!run.kernel_launches.empty() && run.traces.empty()) {
    throw PimError(StrCat(run.benchmark, ": Retime needs a run made with keep_events"));
  }
  const timing::ClockParams params = timing::FromProfile(profile);
  std::vector<double> cycles(run.traces.size(), -1.0);
  PhaseTimes t;
  for (const LaunchRecord& launch : run.kernel_launches) {
    double slowest = 0;
    for (uint32_t index : launch.traces) {
      if (cycles[index] < 0) cycles[index] = timing::Replay(params, run.traces[index]).total;
      slowest = std::max(slowest, cycles[index]);
    }
    t.kernel_s += ModelLaunchOverheadSeconds(profile, launch.dpus) + slowest / profile.dpu_frequency_hz;
  }
  const PhaseTimes x = RetimeTransfers(run, profile);
  t.cpu_to_dpu_s = x.cpu_to_dpu_s;
  t.dpu_to_cpu_s = x.dpu_to_cpu_s;
  t.dpu_to_dpu_s = x.dpu_to_dpu_s;
  return t;
}

PhaseTimes RetimeTransfers(const RunResult& run, const HardwareProfile& profile) {
  PhaseTimes t;
  for (const auto& [key, times] : run.transfers.transfers()) {
    if (key.tag == kUntimed) continue;
    double& column = key.tag == kCpuToDpu ? t.cpu_to_dpu_s : key.tag == kDpuToCpu ? t.dpu_to_cpu_s : t.dpu_to_dpu_s;
    column += static_cast<double>(times) * ModelTransferSeconds(profile, key.verb);
  }
  return t;
}

void Mismatch(const std::string& benchmark, const std::string& what) {
  throw PimError(StrCat("PrIM ", benchmark, ": the DPUs' result differs from the host reference: ", what));
}

// ---------------------------------------------------------------- Host
Host::Host(const RunRequest& request, const HardwareProfile& profile, const std::string& benchmark)
    : request_(request), profile_(profile), system_(std::make_unique<PimSystem>(profile, request.host_threads)) {
  set_ = std::make_unique<DpuSet>(system_->Allocate(request.dpus));
  set_->RecordTraces(request.keep_events);
  set_->SetShuffleSeed(request.shuffle_seed);
  set_->SetScheduler(request.scheduler);
  result_.benchmark = benchmark;
  result_.dpus = request.dpus;
  result_.param = request.param;
}

void Host::Load(const std::string& program, std::shared_ptr<Kernel> port) {
  // The tasklets' stacks and heaps must fit the WRAM: refused naming --tasklets before anything is compiled or run
  // (the emulator's load check is the last guard, an internal error). The port declares the program's need too (its
  // variables, and per tasklet its stack and mem_alloc'd blocks).
  const KernelSpec spec = port->Spec();
  CheckTaskletsFit(spec, profile_, request_.tasklets,
                   StrCat("kernel '", spec.name, "' (its WRAM variables, and per tasklet its stack and heap)"));
  if (request_.kernels == KernelSource::kPort) {
    kernel_ = std::move(port);
  } else {
    kernel_ = LoadNativeProgram(ProgramPath(program, request_.tasklets));
  }
  set_->Load(kernel_, request_.tasklets);
}

void Host::Reallocate(uint32_t dpus) {
  released_log_.Merge(set_->log());
  set_ = std::make_unique<DpuSet>(system_->Allocate(dpus));
  set_->RecordTraces(request_.keep_events);
  set_->SetShuffleSeed(request_.shuffle_seed);
  set_->SetScheduler(request_.scheduler);
  set_->Load(kernel_, request_.tasklets);
}

void Host::AddTransfer(Column column, double seconds) {
  if (column == kUntimed) return;
  PhaseTimes& m = result_.modeled;
  (column == kCpuToDpu ? m.cpu_to_dpu_s : column == kDpuToCpu ? m.dpu_to_cpu_s : m.dpu_to_dpu_s) += seconds;
}

void Host::Push(Column column, std::string_view symbol, uint64_t offset, uint64_t bytes,
                const std::vector<const void*>& buffers) {
  for (uint32_t d = 0; d < set_->size() && d < buffers.size(); ++d) {
    if (buffers[d] != nullptr) set_->PrepareXfer(d, const_cast<void*>(buffers[d]), bytes);
  }
  AddTransfer(column, set_->PushXfer(XferDirection::kToDpu, symbol, offset, bytes, column));
}

void Host::Pull(Column column, std::string_view symbol, uint64_t offset, uint64_t bytes,
                const std::vector<void*>& buffers) {
  for (uint32_t d = 0; d < set_->size() && d < buffers.size(); ++d) {
    if (buffers[d] != nullptr) set_->PrepareXfer(d, buffers[d], bytes);
  }
  AddTransfer(column, set_->PushXfer(XferDirection::kFromDpu, symbol, offset, bytes, column));
}

void Host::Broadcast(Column column, std::string_view symbol, uint64_t offset, const void* source, uint64_t bytes) {
  AddTransfer(column, set_->BroadcastTo(symbol, offset, source, bytes, column));
}

void Host::CopyTo(Column column, uint32_t dpu, std::string_view symbol, uint64_t offset, const void* source,
                  uint64_t bytes) {
  AddTransfer(column, set_->CopyTo(dpu, symbol, offset, source, bytes, column));
}

void Host::CopyFrom(Column column, uint32_t dpu, std::string_view symbol, uint64_t offset, void* destination,
                    uint64_t bytes) {
  AddTransfer(column, set_->CopyFrom(dpu, symbol, offset, destination, bytes, column));
}

uint32_t Host::KeepTrace(timing::DpuTrace&& trace) {
  // FNV-1a over the events: identical DPUs (most of them) keep one trace.
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
  };
  for (const auto& tasklet : trace.tasklets) {
    for (const timing::TraceEvent& e : tasklet) {
      mix(&e.slots, sizeof(e.slots));
      mix(&e.event.kind, sizeof(e.event.kind));
      mix(&e.event.a, sizeof(e.event.a));
      mix(&e.event.b, sizeof(e.event.b));
    }
    h = (h ^ 0xFF) * 1099511628211ull;
  }
  for (uint32_t i = 0; i < trace_hashes_.size(); ++i) {
    if (trace_hashes_[i] != h) continue;
    const timing::DpuTrace& kept = result_.traces[i];
    bool same = kept.tasklets.size() == trace.tasklets.size() && kept.semaphores == trace.semaphores;
    for (size_t k = 0; same && k < kept.tasklets.size(); ++k) {
      const auto& a = kept.tasklets[k];
      const auto& b = trace.tasklets[k];
      same = a.size() == b.size();
      for (size_t j = 0; same && j < a.size(); ++j) {
        same = a[j].slots == b[j].slots && a[j].event.kind == b[j].event.kind && a[j].event.a == b[j].event.a &&
               a[j].event.b == b[j].event.b;
      }
    }
    if (same) return i;
  }
  trace_hashes_.push_back(h);
  result_.traces.push_back(std::move(trace));
  return static_cast<uint32_t>(result_.traces.size() - 1);
}

void Host::Launch(bool kernel_timer) {
  LaunchStats s = set_->Launch();
  result_.instructions += s.issue_slots;
  result_.dmas += s.dmas;
  result_.unaligned_dmas += s.unaligned_dmas;
  result_.resized_dmas += s.resized_dmas;
  if (!kernel_timer) return;
  result_.modeled.kernel_s += s.kernel_s + s.overhead_s;
  DpuCycles& c = result_.slowest_dpu;
  c.issue += s.slowest.issue;
  c.revolver += s.slowest.revolver;
  c.dma += s.slowest.dma;
  c.interference += s.slowest.interference;
  c.sync += s.slowest.sync;
  c.total += s.slowest.total;
  if (request_.keep_events) {
    LaunchRecord record;
    record.dpus = s.dpus;
    for (timing::DpuTrace& trace : s.traces) record.traces.push_back(KeepTrace(std::move(trace)));
    result_.kernel_launches.push_back(std::move(record));
  }
}

RunResult Host::Finish(std::string check) {
  result_.check = std::move(check);
  result_.transfers = released_log_;
  result_.transfers.Merge(set_->log());
  return std::move(result_);
}

}  // namespace pimopt::pim::prim
