#include "pimopt/pim/hw_validation.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>

#include "pimopt/core/error.h"
#include "pimopt/core/file_util.h"
#include "pimopt/core/thread_pool.h"

namespace pimopt::pim::validation {

// ---------------------------------------------------------------- the hardware file
std::string DefaultHwDataPath() {
  if (const char* env = std::getenv("PIMOPT_HW_DATA"); env != nullptr && *env != '\0') return env;
  return PIMOPT_DEFAULT_HW_DATA;
}

std::vector<HwRow> ReadHwData(const std::string& path) {
  std::string text;
  try {
    text = ReadFileToString(path);
  } catch (const InputError& e) {
    throw InputError(StrCat(e.what(),
                            " (the hardware measurements of PrIM kernels on UPMEM: give their file with "
                            "--hw-data or PIMOPT_HW_DATA)"));
  }
  if (text.rfind("\xEF\xBB\xBF", 0) == 0) text.erase(0, 3);  // a UTF-8 byte-order mark (Excel writes one)
  std::vector<std::string> lines = SplitText(text, '\n');
  if (lines.empty() || lines[0].find("benchmark") == std::string::npos) {
    throw ParseError(path, 1, "expected a header line naming the columns (benchmark, num_dpus, ...)");
  }
  // A line's fields, as a CSV writer quotes them: "a,b" is one field, "" inside quotes is one quote; spaces and a
  // carriage return around a field are dropped.
  auto cells = [&](const std::string& line, int line_number) {
    std::vector<std::string> c(1);
    bool quoted = false;
    for (size_t k = 0; k < line.size(); ++k) {
      const char ch = line[k];
      if (quoted) {
        if (ch != '"') {
          c.back() += ch;
        } else if (k + 1 < line.size() && line[k + 1] == '"') {
          c.back() += '"';
          ++k;
        } else {
          quoted = false;
        }
      } else if (ch == '"') {
        quoted = true;
      } else if (ch == ',') {
        c.emplace_back();
      } else {
        c.back() += ch;
      }
    }
    if (quoted) throw ParseError(path, line_number, "a quoted field is not closed");
    for (std::string& s : c) s = TrimSpaces(s.substr(0, s.find_last_not_of('\r') + 1));
    return c;
  };
  const std::vector<std::string> header = cells(lines[0], 1);
  auto column = [&](const char* name) -> size_t {
    const auto it = std::find(header.begin(), header.end(), name);
    if (it == header.end()) throw ParseError(path, 1, StrCat("no column '", name, "'"));
    return static_cast<size_t>(it - header.begin());
  };
  const size_t c_bench = column("benchmark"), c_dpus = column("num_dpus"), c_param = column("data_prep_param"),
               c_kernel = column("hw_kernel_ms"), c_to = column("hw_cpu_to_dpu_ms"),
               c_from = column("hw_dpu_to_cpu_ms"), c_d2d = column("hw_dpu_to_dpu_ms"),
               c_sim = column("upimulator_sim_kernel_ms");
  std::vector<HwRow> rows;
  for (size_t i = 1; i < lines.size(); ++i) {
    const int line = static_cast<int>(i + 1);
    if (lines[i].find_first_not_of(" \r\t") == std::string::npos) continue;
    const std::vector<std::string> c = cells(lines[i], line);
    if (c.size() != header.size()) {
      throw ParseError(path, line, StrCat(c.size(), " fields; the header has ", header.size()));
    }
    auto number = [&](size_t k, const char* what, bool positive) {
      double v = 0;
      size_t used = 0;
      try {
        v = std::stod(c[k], &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != c[k].size() || !std::isfinite(v) || v < 0 || (positive && v <= 0)) {
        throw ParseError(path, line,
                         StrCat(what, " '", c[k], "' is not a ", positive ? "positive" : "non-negative", " number"));
      }
      return v;
    };
    HwRow r;
    r.line = line;
    r.benchmark = c[c_bench];
    // A whole number in 1 .. most (what a row of a real measurement can hold: a million DPUs, 10^15 elements).
    auto whole = [&](size_t k, const char* what, double most) {
      const double v = number(k, what, true);
      if (v != std::floor(v)) throw ParseError(path, line, StrCat(what, " '", c[k], "' is not a whole number"));
      if (v > most) {
        throw ParseError(path, line, StrCat(what, " '", c[k], "' is out of range: at most ", FormatDouble(most)));
      }
      return v;
    };
    const double dpus = whole(c_dpus, "num_dpus", 1e6), param = whole(c_param, "data_prep_param", 1e15);
    r.dpus = static_cast<uint32_t>(dpus);
    r.param = static_cast<uint64_t>(param);
    r.kernel_s = number(c_kernel, "hw_kernel_ms", true) / 1e3;
    r.cpu_to_dpu_s = number(c_to, "hw_cpu_to_dpu_ms", false) / 1e3;
    r.dpu_to_cpu_s = number(c_from, "hw_dpu_to_cpu_ms", false) / 1e3;
    r.dpu_to_dpu_s = number(c_d2d, "hw_dpu_to_dpu_ms", false) / 1e3;
    r.simulator_kernel_s = number(c_sim, "upimulator_sim_kernel_ms", false) / 1e3;
    rows.push_back(r);
  }
  if (rows.empty()) throw ParseError(path, "no measurements after the header");
  return rows;
}

// ---------------------------------------------------------------- constants
KernelConstants KernelConstantsOf(const HardwareProfile& p) {
  return {p.launch_overhead_s, p.dma_occupancy_cycles, p.dma_occupancy_cycles_per_byte, p.dma_pipeline_stall,
          p.issue_stall_cycles};
}
TransferConstants TransferConstantsOf(const HardwareProfile& p) {
  return {p.push_to_dpu_overhead_s,    p.push_from_dpu_overhead_s,       p.serial_call_overhead_s,
          p.serial_to_dpu_bytes_per_s, p.serial_from_dpu_bytes_per_s,    p.rank_to_dpu_bytes_per_s,
          p.rank_from_dpu_bytes_per_s, p.push_to_dpu_overhead_per_dpu_s, p.push_from_dpu_overhead_per_dpu_s,
          p.push_bandwidth_knee_bytes, p.push_bandwidth_knee_exponent};
}
void Apply(const KernelConstants& c, HardwareProfile& p) {
  p.launch_overhead_s = c.launch_overhead_s;
  p.dma_occupancy_cycles = c.dma_occupancy_cycles;
  p.dma_occupancy_cycles_per_byte = c.dma_occupancy_cycles_per_byte;
  p.dma_pipeline_stall = c.dma_pipeline_stall;
  p.issue_stall_cycles = c.issue_stall_cycles;
}
void Apply(const TransferConstants& c, HardwareProfile& p) {
  p.push_to_dpu_overhead_s = c.push_to_dpu_overhead_s;
  p.push_from_dpu_overhead_s = c.push_from_dpu_overhead_s;
  p.serial_call_overhead_s = c.serial_call_overhead_s;
  p.serial_to_dpu_bytes_per_s = c.serial_to_dpu_bytes_per_s;
  p.serial_from_dpu_bytes_per_s = c.serial_from_dpu_bytes_per_s;
  p.rank_to_dpu_bytes_per_s = c.rank_to_dpu_bytes_per_s;
  p.rank_from_dpu_bytes_per_s = c.rank_from_dpu_bytes_per_s;
  p.push_to_dpu_overhead_per_dpu_s = c.push_to_dpu_overhead_per_dpu_s;
  p.push_from_dpu_overhead_per_dpu_s = c.push_from_dpu_overhead_per_dpu_s;
  p.push_bandwidth_knee_bytes = c.push_bandwidth_knee_bytes;
  p.push_bandwidth_knee_exponent = c.push_bandwidth_knee_exponent;
}

// ---------------------------------------------------------------- running the rows
const ParamTable<RunOptions>& ValidateParams() {
  static const ParamTable<RunOptions> table = [] {
    ParamTable<RunOptions> t;
    const std::string group = "Validation";
    t.AddCustom(
         "benchmarks", ParamType::kText, std::string(),
         [](const RunOptions& o) -> ParamValue { return NameListText(o.benchmarks); },
         [](RunOptions& o, const ParamValue& v) {
           std::vector<std::string> names = ParseNameList(std::get<std::string>(v), "--benchmarks");
           for (const std::string& name : names) {
             try {
               prim::Find(name);
             } catch (const ConfigError& e) {
               throw ConfigError("--benchmarks", e.detail());
             }
           }
           o.benchmarks = std::move(names);
         })
        .Effect(ParamEffect::kNone)
        .DefaultNote("all")
        .Group(group)
        .Help("A,B,...: only these benchmarks' rows (each a ported benchmark, none twice)");
    AddKernelSourceParam(t, &RunOptions::kernels).Group(group);
    AddThreadsParam(t, &RunOptions::host_threads, "host threads emulating the DPUs; never changes the result")
        .Group(group);
    return t;
  }();
  return table;
}

Runs RunRows(const std::vector<HwRow>& rows, const HardwareProfile& base, const RunOptions& options) {
  Runs out;
  std::set<std::string> ported;
  for (const prim::BenchmarkInfo& b : prim::Benchmarks()) ported.insert(b.name);
  ValidateParams().CheckValuesAsSet(options);  // known benchmark names, none twice; the thread count
  std::vector<const HwRow*> selected;
  for (const HwRow& r : rows) {
    if (!options.benchmarks.empty() &&
        std::find(options.benchmarks.begin(), options.benchmarks.end(), r.benchmark) == options.benchmarks.end()) {
      continue;
    }
    if (!ported.count(r.benchmark)) {
      out.skipped.push_back(StrCat("line ", r.line, ": ", r.benchmark, " (not ported)"));
      continue;
    }
    if (options.max_elements_per_dpu > 0 && r.param / r.dpus > options.max_elements_per_dpu && r.benchmark != "TRNS" &&
        r.benchmark != "MLP") {
      out.skipped.push_back(StrCat("line ", r.line, ": ", r.benchmark, " (larger than the quick check's limit)"));
      continue;
    }
    selected.push_back(&r);
  }
  for (size_t i = 0; i < selected.size(); ++i) {
    const HwRow& r = *selected[i];
    prim::RunRequest request;
    request.dpus = r.dpus;
    request.param = r.param;
    request.keep_events = true;
    request.host_threads = options.host_threads;
    request.kernels = options.kernels;
    RowRun run{r, {}};
    try {
      run.run = prim::Run(r.benchmark, request, base);
    } catch (const ConfigError& e) {
      out.skipped.push_back(StrCat("line ", r.line, ": ", r.benchmark, " (", e.what(), ")"));
      continue;
    }
    out.rows.push_back(std::move(run));
    if (options.progress) options.progress(i + 1, selected.size(), out.rows.back());
  }
  return out;
}

// ---------------------------------------------------------------- fitting
namespace {

// Nelder-Mead on a box (points outside are clamped before evaluation).
std::vector<double> Minimize(const std::function<double(const std::vector<double>&)>& f, std::vector<double> start,
                             const std::vector<double>& step, const std::vector<double>& lo,
                             const std::vector<double>& hi, int max_evaluations) {
  const size_t n = start.size();
  auto clamp = [&](std::vector<double> x) {
    for (size_t i = 0; i < n; ++i) x[i] = std::clamp(x[i], lo[i], hi[i]);
    return x;
  };
  std::vector<std::vector<double>> simplex(n + 1, clamp(start));
  for (size_t i = 0; i < n; ++i) {
    simplex[i + 1][i] += step[i];
    simplex[i + 1] = clamp(simplex[i + 1]);
    if (simplex[i + 1][i] == simplex[0][i]) simplex[i + 1][i] -= step[i];
    simplex[i + 1] = clamp(simplex[i + 1]);
  }
  std::vector<double> value(n + 1);
  int evaluations = 0;
  for (size_t i = 0; i <= n; ++i, ++evaluations) value[i] = f(simplex[i]);
  while (evaluations < max_evaluations) {
    std::vector<size_t> order(n + 1);
    for (size_t i = 0; i <= n; ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return value[a] < value[b]; });
    const size_t best = order[0], worst = order[n], second = order[n - 1];
    // Converged: the simplex's values agree to 1e-7 (the constants then agree to about 0.1%; running on to 1e-10
    // took 1.5x the evaluations and moved no reported error by more than 0.2 points).
    if (std::fabs(value[worst] - value[best]) < 1e-7 * (1 + std::fabs(value[best]))) break;
    std::vector<double> centroid(n, 0);
    for (size_t i = 0; i <= n; ++i) {
      if (i == worst) continue;
      for (size_t k = 0; k < n; ++k) centroid[k] += simplex[i][k] / static_cast<double>(n);
    }
    auto along = [&](double t) {
      std::vector<double> x(n);
      for (size_t k = 0; k < n; ++k) x[k] = centroid[k] + t * (simplex[worst][k] - centroid[k]);
      return clamp(x);
    };
    const std::vector<double> reflected = along(-1);
    const double fr = f(reflected);
    ++evaluations;
    if (fr < value[best]) {
      const std::vector<double> expanded = along(-2);
      const double fe = f(expanded);
      ++evaluations;
      if (fe < fr) {
        simplex[worst] = expanded;
        value[worst] = fe;
      } else {
        simplex[worst] = reflected;
        value[worst] = fr;
      }
    } else if (fr < value[second]) {
      simplex[worst] = reflected;
      value[worst] = fr;
    } else {
      const std::vector<double> contracted = along(fr < value[worst] ? -0.5 : 0.5);
      const double fc = f(contracted);
      ++evaluations;
      if (fc < std::min(fr, value[worst])) {
        simplex[worst] = contracted;
        value[worst] = fc;
      } else {  // shrink towards the best
        for (size_t i = 0; i <= n; ++i) {
          if (i == best) continue;
          for (size_t k = 0; k < n; ++k) simplex[i][k] = simplex[best][k] + 0.5 * (simplex[i][k] - simplex[best][k]);
          value[i] = f(simplex[i]);
          ++evaluations;
        }
      }
    }
  }
  size_t best = 0;
  for (size_t i = 1; i <= n; ++i) {
    if (value[i] < value[best]) best = i;
  }
  return simplex[best];
}

bool In(const std::vector<std::string>& set, const std::string& name) {
  return std::find(set.begin(), set.end(), name) != set.end();
}

double LogError(double modeled, double measured) { return std::log(std::max(modeled, 1e-12) / measured); }

// Mean over benchmarks of the mean squared log error of their rows.
double BenchmarkMean(const std::map<std::string, std::pair<double, int>>& sums) {
  double total = 0;
  for (const auto& [name, s] : sums) total += s.first / s.second;
  return sums.empty() ? 0 : total / static_cast<double>(sums.size());
}

// The rows' kernel launches over one pool of distinct traces (rows of one benchmark at other DPU counts often
// share them): an evaluation replays each distinct trace once, on every host thread. A launch's time is its slowest
// DPU's: the fit replays, per launch, the DPU that is slowest under the profile it starts from (its DPUs do
// statistically the same work, so the constants the fit moves do not reorder them), so that its cost is one DPU's
// events per launch, whatever the number of DPUs and however long their lock traffic; the errors it reports come
// from exact replays of every DPU (prim::Retime).
class KernelModel {
 public:
  KernelModel(const std::vector<RowRun>& rows, int host_threads, const HardwareProfile& start) : pool_(host_threads) {
    std::map<std::pair<size_t, uint64_t>, std::vector<uint32_t>> seen;  // (events, hash) -> global indices
    for (const RowRun& r : rows) {
      RowLaunches row;
      for (const prim::LaunchRecord& launch : r.run.kernel_launches) {
        std::vector<uint32_t> global;
        for (uint32_t local : launch.traces) global.push_back(Intern(r.run.traces[local], seen));
        std::sort(global.begin(), global.end());
        global.erase(std::unique(global.begin(), global.end()), global.end());
        row.launches.push_back({launch.dpus, std::move(global)});
      }
      rows_.push_back(std::move(row));
    }
    // Each launch's slowest DPU under the starting profile.
    const timing::ClockParams params = timing::FromProfile(start);
    std::vector<double> cycles(traces_.size());
    pool_.ParallelFor(traces_.size(), [&](size_t i) { cycles[i] = timing::Replay(params, *traces_[i]).total; });
    for (RowLaunches& row : rows_) {
      for (auto& [dpus, traces] : row.launches) {
        const uint32_t slowest = *std::max_element(traces.begin(), traces.end(),
                                                   [&](uint32_t a, uint32_t b) { return cycles[a] < cycles[b]; });
        traces = {slowest};
      }
    }
  }
  // The kernel seconds under `profile` of the rows `wanted` selects (the others: 0), replaying only their traces.
  std::vector<double> KernelSeconds(const HardwareProfile& profile, const std::vector<bool>& wanted) {
    const timing::ClockParams params = timing::FromProfile(profile);
    std::vector<uint32_t> needed;
    std::vector<bool> taken(traces_.size(), false);
    for (size_t r = 0; r < rows_.size(); ++r) {
      if (!wanted[r]) continue;
      for (const auto& [dpus, traces] : rows_[r].launches) {
        for (uint32_t i : traces) {
          if (!taken[i]) needed.push_back(i);
          taken[i] = true;
        }
      }
    }
    std::vector<double> cycles(traces_.size(), 0);
    pool_.ParallelFor(needed.size(),
                      [&](size_t k) { cycles[needed[k]] = timing::Replay(params, *traces_[needed[k]]).total; });
    std::vector<double> seconds;
    for (size_t r = 0; r < rows_.size(); ++r) {
      const RowLaunches& row = rows_[r];
      double s = 0;
      if (!wanted[r]) {
        seconds.push_back(0);
        continue;
      }
      for (const auto& [dpus, traces] : row.launches) {
        double slowest = 0;
        for (uint32_t i : traces) slowest = std::max(slowest, cycles[i]);
        s += ModelLaunchOverheadSeconds(profile, dpus) + slowest / profile.dpu_frequency_hz;
      }
      seconds.push_back(s);
    }
    return seconds;
  }

 private:
  struct RowLaunches {
    std::vector<std::pair<uint32_t, std::vector<uint32_t>>> launches;  // (DPUs, distinct traces)
  };
  static uint64_t Hash(const timing::DpuTrace& t) {
    uint64_t h = 1469598103934665603ull;
    for (const auto& tasklet : t.tasklets) {
      for (const timing::TraceEvent& e : tasklet) {
        uint64_t bits;
        std::memcpy(&bits, &e.slots, 8);
        h = (h ^ bits) * 1099511628211ull;
        h = (h ^ (static_cast<uint64_t>(e.event.kind) << 48 ^ uint64_t{e.event.a} << 16 ^ e.event.b)) *
            1099511628211ull;
      }
      h = (h ^ 0xFF) * 1099511628211ull;
    }
    return h;
  }
  static bool Same(const timing::DpuTrace& a, const timing::DpuTrace& b) {
    if (a.tasklets.size() != b.tasklets.size() || a.semaphores != b.semaphores) return false;
    for (size_t k = 0; k < a.tasklets.size(); ++k) {
      const auto &x = a.tasklets[k], &y = b.tasklets[k];
      if (x.size() != y.size()) return false;
      for (size_t j = 0; j < x.size(); ++j) {
        if (x[j].slots != y[j].slots || x[j].event.kind != y[j].event.kind || x[j].event.a != y[j].event.a ||
            x[j].event.b != y[j].event.b) {
          return false;
        }
      }
    }
    return true;
  }
  uint32_t Intern(const timing::DpuTrace& t, std::map<std::pair<size_t, uint64_t>, std::vector<uint32_t>>& seen) {
    size_t events = 0;
    for (const auto& tasklet : t.tasklets) events += tasklet.size();
    auto& candidates = seen[{events, Hash(t)}];
    for (uint32_t i : candidates) {
      if (Same(*traces_[i], t)) return i;
    }
    traces_.push_back(&t);
    candidates.push_back(static_cast<uint32_t>(traces_.size() - 1));
    return candidates.back();
  }

  ThreadPool pool_;
  std::vector<const timing::DpuTrace*> traces_;
  std::vector<RowLaunches> rows_;
};

// The fit's coordinates: each free constant scaled to about 1.
std::vector<double> Coordinates(const KernelConstants& c) {
  return {c.launch_overhead_s / 1e-4, c.dma_occupancy_cycles / 100, c.dma_occupancy_cycles_per_byte,
          c.dma_pipeline_stall, c.issue_stall_cycles};
}
KernelConstants FromCoordinates(const std::vector<double>& x) { return {x[0] * 1e-4, x[1] * 100, x[2], x[3], x[4]}; }

KernelConstants FitKernelOn(KernelModel& model, const std::vector<RowRun>& rows,
                            const std::vector<std::string>& benchmarks, const HardwareProfile& base,
                            const FreeKernelConstants& free, const std::vector<KernelConstants>& starts,
                            int evaluations) {
  const bool is_free[5] = {free.launch_overhead_s, free.dma_occupancy_cycles, free.dma_occupancy_cycles_per_byte,
                           free.dma_pipeline_stall, free.issue_stall_cycles};
  const std::vector<double> lo_all = {0, 0, 0, 0, 0}, hi_all = {20, 5, 2, 0.95, 1},
                            step_all = {0.5, 0.3, 0.1, 0.1, 0.05};
  const std::vector<double> fixed = Coordinates(KernelConstantsOf(base));
  std::vector<size_t> index;
  for (size_t i = 0; i < 5; ++i) {
    if (is_free[i]) index.push_back(i);
  }
  auto expand = [&](const std::vector<double>& y) {
    std::vector<double> x = fixed;
    for (size_t k = 0; k < index.size(); ++k) x[index[k]] = y[k];
    return x;
  };
  std::vector<bool> wanted(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) wanted[i] = In(benchmarks, rows[i].hw.benchmark);
  auto objective = [&](const std::vector<double>& y) {
    HardwareProfile p = base;
    Apply(FromCoordinates(expand(y)), p);
    const std::vector<double> seconds = model.KernelSeconds(p, wanted);
    std::map<std::string, std::pair<double, int>> sums;
    for (size_t i = 0; i < rows.size(); ++i) {
      if (!In(benchmarks, rows[i].hw.benchmark)) continue;
      const double e = LogError(seconds[i], rows[i].hw.kernel_s);
      auto& s = sums[rows[i].hw.benchmark];
      s.first += e * e;
      ++s.second;
    }
    return BenchmarkMean(sums);
  };
  if (index.empty()) return KernelConstantsOf(base);
  std::vector<double> lo, hi, step;
  for (size_t i : index) {
    lo.push_back(lo_all[i]);
    hi.push_back(hi_all[i]);
    step.push_back(step_all[i]);
  }
  std::vector<double> best;
  double best_value = 0;
  for (const KernelConstants& start : starts) {
    const std::vector<double> x0 = Coordinates(start);
    std::vector<double> y0;
    for (size_t i : index) y0.push_back(x0[i]);
    const std::vector<double> y = Minimize(objective, y0, step, lo, hi, evaluations);
    const double v = objective(y);
    if (best.empty() || v < best_value) {
      best = y;
      best_value = v;
    }
  }
  return FromCoordinates(expand(best));
}

// Two starts (the stall and the occupancy share the DMA's cost between them): the better local optimum.
std::vector<KernelConstants> Starts(const HardwareProfile& base) {
  KernelConstants a = KernelConstantsOf(base), b = a;
  a.dma_pipeline_stall = std::clamp(a.dma_pipeline_stall, 0.05, 0.9);
  b.dma_pipeline_stall = 0.6;
  return {a, b};
}

// The measured transfers of a row worth comparing: the CPU->DPU and DPU->CPU columns with their modeled bytes.
struct TransferPoint {
  double measured_s = 0;
  uint64_t bytes = 0;
  uint32_t column = 0;  // the log's tag: prim::kTransferColumnCpuToDpu or kTransferColumnDpuToCpu
};
std::vector<TransferPoint> TransferPoints(const RowRun& r) {
  std::vector<TransferPoint> points;
  uint64_t to = 0, from = 0;
  for (const auto& [key, times] : r.run.transfers.transfers()) {
    const uint64_t bytes = times * key.verb.bytes();
    if (key.tag == prim::kTransferColumnCpuToDpu) to += bytes;
    if (key.tag == prim::kTransferColumnDpuToCpu) from += bytes;
  }
  if (r.hw.cpu_to_dpu_s > 0 && to > 0) points.push_back({r.hw.cpu_to_dpu_s, to, prim::kTransferColumnCpuToDpu});
  if (r.hw.dpu_to_cpu_s > 0 && from > 0) points.push_back({r.hw.dpu_to_cpu_s, from, prim::kTransferColumnDpuToCpu});
  return points;
}
double ModeledColumn(const prim::PhaseTimes& t, uint32_t column) {
  return column == prim::kTransferColumnCpuToDpu ? t.cpu_to_dpu_s : t.dpu_to_cpu_s;
}

}  // namespace

KernelConstants FitKernel(const std::vector<RowRun>& rows, const std::vector<std::string>& benchmarks,
                          const HardwareProfile& base, const FreeKernelConstants& free) {
  KernelModel model(rows, 0, base);
  return FitKernelOn(model, rows, benchmarks, base, free, Starts(base), 200);
}

TransferConstants FitTransfers(const std::vector<RowRun>& rows, const std::vector<std::string>& benchmarks,
                               const HardwareProfile& base) {
  const TransferConstants s = TransferConstantsOf(base);
  // Log-scaled: every constant is positive and spans decades.
  // A zero constant starts at a small positive value (its logarithm must exist).
  auto log_of = [](double v, double floor) { return std::log(std::max(v, floor)); };
  const std::vector<double> start = {
      log_of(s.push_to_dpu_overhead_s, 1e-7),           log_of(s.push_from_dpu_overhead_s, 1e-7),
      log_of(s.serial_call_overhead_s, 1e-7),           log_of(s.serial_to_dpu_bytes_per_s, 1e6),
      log_of(s.serial_from_dpu_bytes_per_s, 1e6),       log_of(s.rank_to_dpu_bytes_per_s, 1e6),
      log_of(s.rank_from_dpu_bytes_per_s, 1e6),         log_of(s.push_to_dpu_overhead_per_dpu_s, 1e-8),
      log_of(s.push_from_dpu_overhead_per_dpu_s, 1e-8), log_of(s.push_bandwidth_knee_bytes, 1e3),
      log_of(s.push_bandwidth_knee_exponent, 1e-2)};
  auto unpack = [](const std::vector<double>& x) {
    return TransferConstants{std::exp(x[0]), std::exp(x[1]), std::exp(x[2]), std::exp(x[3]),
                             std::exp(x[4]), std::exp(x[5]), std::exp(x[6]), std::exp(x[7]),
                             std::exp(x[8]), std::exp(x[9]), std::exp(x[10])};
  };
  // What an evaluation needs, worked out once: per fitted row, its run (whose logged transfers each evaluation
  // re-times with prim::RetimeTransfers, each distinct transfer once) and its measured points.
  struct FitRow {
    size_t benchmark = 0;  // index into `fitted` (sorted by name: BenchmarkMean's order)
    const prim::RunResult* run = nullptr;
    std::vector<TransferPoint> points;
  };
  std::vector<std::string> fitted;
  for (const RowRun& r : rows) {
    if (In(benchmarks, r.hw.benchmark) && !TransferPoints(r).empty()) fitted.push_back(r.hw.benchmark);
  }
  std::sort(fitted.begin(), fitted.end());
  fitted.erase(std::unique(fitted.begin(), fitted.end()), fitted.end());
  std::vector<FitRow> fit_rows;
  for (const RowRun& r : rows) {
    if (!In(benchmarks, r.hw.benchmark)) continue;
    FitRow row;
    row.benchmark = static_cast<size_t>(std::lower_bound(fitted.begin(), fitted.end(), r.hw.benchmark) - fitted.begin());
    row.run = &r.run;
    row.points = TransferPoints(r);
    if (!row.points.empty()) fit_rows.push_back(std::move(row));
  }
  auto objective = [&](const std::vector<double>& x) {
    HardwareProfile p = base;
    Apply(unpack(x), p);
    std::vector<std::pair<double, int>> sums(fitted.size(), {0.0, 0});
    for (const FitRow& row : fit_rows) {
      const prim::PhaseTimes modeled = prim::RetimeTransfers(*row.run, p);
      for (const TransferPoint& point : row.points) {
        const double e = LogError(ModeledColumn(modeled, point.column), point.measured_s);
        sums[row.benchmark].first += e * e;
        ++sums[row.benchmark].second;
      }
    }
    double total = 0;  // BenchmarkMean over the benchmarks in name order
    for (const auto& [sum, count] : sums) total += sum / count;
    return sums.empty() ? 0 : total / static_cast<double>(sums.size());
  };
  const size_t n = start.size();
  std::vector<double> lo(n), hi(n), step(n, 0.5);
  for (size_t i = 0; i < n; ++i) {
    lo[i] = start[i] - std::log(100.0);
    hi[i] = start[i] + std::log(100.0);
  }
  hi[10] = std::min(hi[10], std::log(8.0));  // the knee's exponent, within its declared range
  std::vector<double> x = Minimize(objective, start, step, lo, hi, 1500);
  x = Minimize(objective, x, step, lo, hi, 1500);  // a restart escapes a collapsed simplex
  return unpack(x);
}

double AbsQuantile(std::vector<double> errors, double q) {
  if (errors.empty()) return 0;
  for (double& e : errors) e = std::fabs(e);
  std::sort(errors.begin(), errors.end());
  const double at = q * static_cast<double>(errors.size() - 1);
  const size_t i = static_cast<size_t>(at);
  if (i + 1 >= errors.size()) return errors.back();
  return errors[i] + (at - static_cast<double>(i)) * (errors[i + 1] - errors[i]);
}

ErrorSummary Summarize(const std::vector<double>& errors) {
  ErrorSummary s;
  s.rows = errors.size();
  if (errors.empty()) return s;
  std::vector<double> a;
  for (double e : errors) {
    a.push_back(std::fabs(e));
    if (std::fabs(e) > s.worst_abs) {
      s.worst_abs = std::fabs(e);
      s.worst_signed = e;
    }
  }
  std::sort(a.begin(), a.end());
  const size_t m = a.size();
  s.median_abs = m % 2 ? a[m / 2] : 0.5 * (a[m / 2 - 1] + a[m / 2]);
  return s;
}

Report LeaveOneOut(const Runs& runs, const HardwareProfile& base, const FreeKernelConstants& free) {
  const auto t0 = std::chrono::steady_clock::now();
  Report report;
  report.skipped = runs.skipped;
  std::vector<std::string> names;
  for (const prim::BenchmarkInfo& b : prim::Benchmarks()) {
    for (const RowRun& r : runs.rows) {
      if (r.hw.benchmark == b.name) {
        names.push_back(b.name);
        break;
      }
    }
  }
  if (names.size() < 2) {
    // Say why when rows were skipped: the reasons would otherwise be lost with the run.
    std::string why;
    for (size_t i = 0; i < runs.skipped.size() && i < 3; ++i) why += StrCat(i ? "; " : "", runs.skipped[i]);
    if (runs.skipped.size() > 3) why += StrCat("; and ", runs.skipped.size() - 3, " more");
    throw ConfigError("--benchmarks",
                      StrCat("leave-one-out needs rows of at least two benchmarks; rows of ", names.size(),
                             names.size() == 1 ? " benchmark ran" : " benchmarks ran",
                             runs.skipped.empty() ? std::string() : StrCat(" (skipped: ", why, ")")));
  }
  KernelModel model(runs.rows, 0, base);
  report.fitted = FitKernelOn(model, runs.rows, names, base, free, Starts(base), 200);
  // The transfer fits (on every benchmark, and each fold's) are independent of one another: on all host threads.
  std::vector<TransferConstants> transfer_fits(names.size() + 1);
  {
    ThreadPool pool(0);
    pool.ParallelFor(transfer_fits.size(), [&](size_t i) {
      std::vector<std::string> fitted_on;
      for (const std::string& n : names) {
        if (i == names.size() || n != names[i]) fitted_on.push_back(n);
      }
      transfer_fits[i] = FitTransfers(runs.rows, fitted_on, base);
    });
  }
  report.transfers = transfer_fits.back();
  HardwareProfile all = base;
  Apply(report.fitted, all);
  Apply(report.transfers, all);
  double sum_median = 0, sum_sim = 0, sum_transfers = 0;
  size_t with_transfers = 0;
  std::vector<double> all_kernel, all_to, all_from;  // out of sample, pooled: the error bars
  for (size_t fold_index = 0; fold_index < names.size(); ++fold_index) {
    const std::string& name = names[fold_index];
    std::vector<std::string> others;
    for (const std::string& n : names) {
      if (n != name) others.push_back(n);
    }
    BenchmarkValidation v;
    v.benchmark = name;
    v.fold = FitKernelOn(model, runs.rows, others, base, free, {report.fitted}, 100);
    HardwareProfile fold = base;
    Apply(v.fold, fold);
    Apply(transfer_fits[fold_index], fold);
    std::vector<double> out, in, sim, x_out, x_in, x_all;
    for (const RowRun& r : runs.rows) {
      if (r.hw.benchmark != name) continue;
      ++v.rows;
      const prim::PhaseTimes t_out = prim::Retime(r.run, fold), t_in = prim::Retime(r.run, all);
      out.push_back(t_out.kernel_s / r.hw.kernel_s - 1);
      in.push_back(t_in.kernel_s / r.hw.kernel_s - 1);
      if (r.hw.simulator_kernel_s > 0) sim.push_back(r.hw.simulator_kernel_s / r.hw.kernel_s - 1);
      for (const TransferPoint& point : TransferPoints(r)) {
        const double e_out = ModeledColumn(t_out, point.column) / point.measured_s - 1;
        x_all.push_back(e_out);
        if (point.bytes >= (1u << 20)) {
          x_out.push_back(e_out);
          (point.column == prim::kTransferColumnCpuToDpu ? all_to : all_from).push_back(e_out);
          x_in.push_back(ModeledColumn(t_in, point.column) / point.measured_s - 1);
        }
      }
    }
    all_kernel.insert(all_kernel.end(), out.begin(), out.end());
    v.kernel_errors_out_of_sample = out;
    v.out_of_sample = Summarize(out);
    v.in_sample = Summarize(in);
    v.simulator = Summarize(sim);
    v.transfers_out_of_sample = Summarize(x_out);
    v.transfers_in_sample = Summarize(x_in);
    v.transfers_all_out_of_sample = Summarize(x_all);
    sum_median += v.out_of_sample.median_abs;
    sum_sim += v.simulator.median_abs;
    if (v.transfers_out_of_sample.rows > 0) {
      sum_transfers += v.transfers_out_of_sample.median_abs;
      ++with_transfers;
    }
    report.benchmarks.push_back(std::move(v));
  }
  if (with_transfers > 0) report.mean_median_transfers_out_of_sample = sum_transfers / with_transfers;
  report.kernel_uncertainty = AbsQuantile(all_kernel, 0.68);
  report.cpu_to_dpu_uncertainty = AbsQuantile(all_to, 0.68);
  report.dpu_to_cpu_uncertainty = AbsQuantile(all_from, 0.68);
  report.mean_median_out_of_sample = sum_median / static_cast<double>(names.size());
  report.mean_median_simulator = sum_sim / static_cast<double>(names.size());
  report.fit_wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return report;
}

std::string Markdown(const Report& r) {
  auto pct = [](double x) { return StrCat(std::lround(100 * x), "%"); };
  auto pct1 = [](double x) {
    char b[32];
    std::snprintf(b, sizeof(b), "%.1f%%", 100 * x);
    return std::string(b);
  };
  std::string s =
      "| benchmark | rows | kernel, out of sample: median / worst | in sample: median | simulator: median / worst |"
      " transfers >= 1 MB, out of sample: median / worst (points) |\n|---|---|---|---|---|---|\n";
  for (const BenchmarkValidation& b : r.benchmarks) {
    s += StrCat("| ", b.benchmark, " | ", b.rows, " | ", pct1(b.out_of_sample.median_abs), " / ",
                pct(b.out_of_sample.worst_signed), " | ", pct1(b.in_sample.median_abs), " | ",
                pct1(b.simulator.median_abs), " / ", pct(b.simulator.worst_signed), " | ",
                b.transfers_out_of_sample.rows
                    ? StrCat(pct1(b.transfers_out_of_sample.median_abs), " / ",
                             pct(b.transfers_out_of_sample.worst_signed), " (", b.transfers_out_of_sample.rows, ")")
                    : std::string("-"),
                " |\n");
  }
  s += StrCat("| **mean of the medians** | | **", pct1(r.mean_median_out_of_sample), "** | | ",
              pct1(r.mean_median_simulator), " | ", pct1(r.mean_median_transfers_out_of_sample), " |\n");
  s += StrCat("\nError bars (68% of the out-of-sample errors are smaller): kernel ", pct1(r.kernel_uncertainty),
              ", CPU->DPU ", pct1(r.cpu_to_dpu_uncertainty), ", DPU->CPU ", pct1(r.dpu_to_cpu_uncertainty), "\n");
  return s;
}

}  // namespace pimopt::pim::validation
