// The UPMEM SDK's host API (dpu/host/dpu.h) over pimopt's emulator: libpimopt_dpu, which a host program written
// for the SDK links instead of the SDK's libdpu (docs/pim-emulator.md "Host programs").
//
// An allocation is a PimSystem (the profile and the host threads) and a DpuSet; a dpu_set_t names all of it, one of
// its ranks or one DPU. Every call runs under one lock (the SDK's calls are not meant to race either), catches the
// emulator's errors, prints pimopt's account of them to stderr and returns the SDK's status for them. Every call's
// modeled seconds add to the process's modeled clock (pimopt_modeled_seconds; modeled_clock.c lets the program's
// own clock read it).
#include <algorithm>
#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <ctime>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "dpu.h"
#include "dpu_log.h"
#include "dpu_probe.h"
#include "pimopt/core/atomic_file.h"
#include "pimopt/core/error.h"
#include "pimopt/core/file_util.h"
#include "pimopt/pim/energy.h"
#include "pimopt/pim/native_program.h"
#include "pimopt/pim/system.h"
#include "pimopt/pim/validation_json.h"

struct dpu_t {
  struct Allocation* allocation;
  uint32_t index;  // in the allocation
};
struct dpu_rank_t {
  struct Allocation* allocation;
  uint32_t index;
  uint32_t first_dpu, dpus;
};
struct dpu_program_t {
  struct Symbol {
    std::string name;
    uint32_t bytes;
    bool mram;
  };
  std::shared_ptr<pimopt::pim::DpuProgram> program;
  // Its symbols, read once at load: the WRAM ones, the MRAM ones, then the MRAM heap. A dpu_symbol_t's address
  // carries its index here (MRAM ones with kMramSymbolBase set).
  std::vector<Symbol> symbols;

  explicit dpu_program_t(std::shared_ptr<pimopt::pim::DpuProgram> loaded) : program(std::move(loaded)) {
    const pimopt::pim::KernelSpec spec = program->Spec();
    for (const auto& w : spec.wram_symbols) symbols.push_back({w.name, w.bytes, false});
    for (const auto& m : spec.mram_symbols) symbols.push_back({m.name, m.bytes, true});
    symbols.push_back({std::string(pimopt::pim::kMramHeapSymbol), 0, true});
  }
  // The symbol named `name`, or its index's end (symbols.size()).
  size_t Find(const std::string& name) const {
    size_t i = 0;
    while (i < symbols.size() && symbols[i].name != name) ++i;
    return i;
  }
};

struct Allocation {
  std::unique_ptr<pimopt::pim::PimSystem> system;
  std::optional<pimopt::pim::DpuSet> set;
  std::vector<dpu_t> dpus;
  std::vector<dpu_rank_t> ranks;
  std::vector<dpu_rank_t*> rank_pointers;
  std::vector<void*> prepared;  // per DPU: the buffer of the next push
  std::unique_ptr<dpu_program_t> program;
  // The asynchronous launches in flight: their DPUs and the instant of the program's clock (modeled seconds of the
  // calls plus real seconds outside them) when each ends.
  struct InFlight {
    uint32_t first, count;
    double ends_at_s;
  };
  std::vector<InFlight> in_flight;
};

namespace {

using pimopt::StrCat;

constexpr uint32_t kMramSymbolBase = 0x08000000;  // dpu_symbol_t addresses of MRAM symbols

std::recursive_mutex g_api;
std::vector<std::unique_ptr<Allocation>> g_allocations;
std::string g_profile_name;

// The modeled clock: modeled seconds of the calls, real seconds spent inside them (which the modeled ones replace).
struct ClockState {
  double modeled_s = 0;
  double real_in_api_s = 0;
  double last_launch_s = 0;
  double energy_j = 0;  // the modeled energy of the launches and transfers so far (dpu_probe.h)
};
ClockState g_clock;
thread_local int t_api_depth = 0;

// PIMOPT_REPORT=FILE: every launch's modeled account (cycles by cause, instructions by class, DMAs), written as JSON
// when the program exits (a temporary file renamed into place).
const std::string g_report_path = [] {
  const char* path = std::getenv("PIMOPT_REPORT");
  return std::string(path != nullptr ? path : "");
}();
nlohmann::json g_launches = nlohmann::json::array();

void WriteReport() {
  try {
    pimopt::AtomicFileWriter file(g_report_path);
    const nlohmann::json report = {
        {"profile", g_profile_name}, {"modeled_s", g_clock.modeled_s}, {"launches", g_launches}};
    file.stream() << report.dump(1) << "\n";
    file.Commit();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pimopt: PIMOPT_REPORT: %s\n", e.what());
  }
}

void RecordLaunch(const pimopt::pim::LaunchStats& s) {
  if (g_report_path.empty()) return;
  static const bool registered = std::atexit(WriteReport) == 0;
  (void)registered;
  nlohmann::json op_counts = nlohmann::json::object();
  for (size_t op = 0; op < pimopt::pim::kNumOps; ++op) {
    if (s.op_counts[op] != 0) op_counts[pimopt::pim::kOpNames[op]] = s.op_counts[op];
  }
  g_launches.push_back({{"program", s.kernel},
                        {"dpus", s.dpus},
                        {"tasklets", s.tasklets},
                        {"kernel_s", s.kernel_s},
                        {"overhead_s", s.overhead_s},
                        {"slowest_dpu_cycles", pimopt::pim::validation::DpuCyclesJson(s.slowest)},
                        {"instructions", s.issue_slots},
                        {"mram_read_bytes", s.mram_read_bytes},
                        {"mram_write_bytes", s.mram_write_bytes},
                        {"dmas", s.dmas},
                        {"barrier_waits", s.barrier_waits},
                        {"lock_contentions", s.lock_contentions},
                        {"energy_j", s.energy_j},
                        {"op_counts", op_counts}});
}

extern "C" double __pimopt_real_seconds(void);  // modeled_clock.c: the real monotonic clock

bool ModeledClockOn() {
  static const bool on = [] {
    const char* v = std::getenv("PIMOPT_MODELED_CLOCK");
    return v != nullptr && std::strcmp(v, "1") == 0;
  }();
  return on;
}
thread_local bool t_main_thread = false;
__attribute__((constructor)) void MarkMainThread() { t_main_thread = true; }
std::atomic<double> g_clock_shift_s{0};  // modeled_s - real_in_api_s, for the program's clock

// Real seconds spent outside the API so far.
// Inside a call: as when the outermost call began (the call's own real time is replaced by modeled time).
double g_call_began_s = 0;
double RealOutsideSeconds() {
  return (t_api_depth > 0 ? g_call_began_s : __pimopt_real_seconds()) - g_clock.real_in_api_s;
}

// A status and pimopt's account of it.
struct Failure {
  dpu_error_t status;
  std::string what;
};

// One API call: the lock, the real time it takes (replaced by modeled time), errors mapped to statuses.
template <typename F>
dpu_error_t Api(const char* call, F&& body) {
  std::lock_guard<std::recursive_mutex> lock(g_api);
  const bool outer = t_api_depth++ == 0;
  const double t0 = outer ? __pimopt_real_seconds() : 0;
  if (outer) g_call_began_s = t0;
  dpu_error_t status = DPU_OK;
  try {
    status = body();
  } catch (const Failure& f) {
    std::fprintf(stderr, "pimopt: %s: %s\n", call, f.what.c_str());
    status = f.status;
  } catch (const pimopt::pim::PimError& e) {
    std::fprintf(stderr, "pimopt: %s: %s\n", call, e.what());
    status = DPU_ERR_DPU_FAULT;
  } catch (const pimopt::ConfigError& e) {
    std::fprintf(stderr, "pimopt: %s: %s\n", call, e.what());
    status = DPU_ERR_INVALID_PROFILE;
  } catch (const pimopt::InputError& e) {
    std::fprintf(stderr, "pimopt: %s: %s\n", call, e.what());
    status = DPU_ERR_ELF_INVALID_FILE;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "pimopt: %s: out of host memory\n", call);
    status = DPU_ERR_SYSTEM;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pimopt: %s: %s\n", call, e.what());
    status = DPU_ERR_INTERNAL;
  }
  if (outer) {
    g_clock.real_in_api_s += __pimopt_real_seconds() - t0;
    g_clock_shift_s.store(g_clock.modeled_s - g_clock.real_in_api_s);
  }
  --t_api_depth;
  return status;
}

[[noreturn]] void Refuse(dpu_error_t status, std::string what) { throw Failure{status, std::move(what)}; }

// The DPUs a set names, in order (indices in their allocation).
struct Members {
  Allocation* allocation = nullptr;
  uint32_t first = 0, count = 0;
  bool whole() const { return first == 0 && count == allocation->dpus.size(); }
};

// Whether p points into [begin, end) (std::less: a total order on any pointers).
template <typename T>
bool Within(const T* p, const T* begin, const T* end) {
  return !std::less<const T*>()(p, begin) && std::less<const T*>()(p, end);
}

// The live allocation a set belongs to, found without reading through the set's pointers (a freed set's point to
// freed memory).
Members Live(const dpu_set_t& set) {
  if (set.kind == DPU_SET_DPU) {
    for (const auto& a : g_allocations) {
      if (Within<dpu_t>(set.dpu, a->dpus.data(), a->dpus.data() + a->dpus.size())) {
        return {a.get(), set.dpu->index, 1};
      }
    }
  } else if (set.kind == DPU_SET_RANKS) {
    for (const auto& a : g_allocations) {
      dpu_rank_t* const* begin = a->rank_pointers.data();
      dpu_rank_t* const* end = begin + a->rank_pointers.size();
      if (set.list.nr_ranks > 0 && Within<dpu_rank_t*>(set.list.ranks, begin, end) &&
          set.list.nr_ranks <= static_cast<uint32_t>(end - set.list.ranks)) {
        const dpu_rank_t* first = set.list.ranks[0];
        const dpu_rank_t* last = set.list.ranks[set.list.nr_ranks - 1];
        return {a.get(), first->first_dpu, last->first_dpu + last->dpus - first->first_dpu};
      }
    }
  }
  Refuse(DPU_ERR_INVALID_DPU_SET, "not a DPU set of a live allocation (dpu_alloc; not yet dpu_free)");
}

// The program's clock: the modeled seconds of the calls and the real seconds outside them.
double ProgramNow() { return g_clock.modeled_s + RealOutsideSeconds(); }

// The asynchronous launches on DPUs first .. first + count - 1 end (in modeled time) before anything else is done
// with those DPUs: the modeled clock waits for the last of them. Launches on other DPUs stay in flight.
void Settle(Allocation& a, uint32_t first = 0, uint32_t count = UINT32_MAX) {
  double ends_at_s = -1;
  auto overlaps = [&](const Allocation::InFlight& f) {
    return f.first < first + static_cast<uint64_t>(count) && first < f.first + f.count;
  };
  for (const Allocation::InFlight& f : a.in_flight) {
    if (overlaps(f)) ends_at_s = std::max(ends_at_s, f.ends_at_s);
  }
  a.in_flight.erase(std::remove_if(a.in_flight.begin(), a.in_flight.end(), overlaps), a.in_flight.end());
  g_clock.modeled_s += std::max(0.0, ends_at_s - ProgramNow());
}

pimopt::pim::DpuProgram& LoadedProgram(const Allocation& a, dpu_error_t status) {
  if (!a.program) Refuse(status, "no program loaded on these DPUs (dpu_load)");
  return *a.program->program;
}

// The index of the loaded program's symbol `name`; DPU_ERR_UNKNOWN_SYMBOL when there is none.
size_t KnownSymbol(const dpu_program_t& program, const std::string& name) {
  const size_t i = program.Find(name);
  if (i == program.symbols.size()) {
    Refuse(DPU_ERR_UNKNOWN_SYMBOL, StrCat("the program ", program.program->path(), " has no symbol '", name, "'"));
  }
  return i;
}

// Runs a host access of the emulator; its rule violations become the SDK's access statuses.
template <typename F>
double Access(const Allocation& a, const std::string& symbol, F&& access) {
  LoadedProgram(a, DPU_ERR_UNKNOWN_SYMBOL);
  const bool mram = a.program->symbols[KnownSymbol(*a.program, symbol)].mram;
  try {
    return access();
  } catch (const pimopt::pim::PimError& e) {
    Refuse(mram ? DPU_ERR_INVALID_MRAM_ACCESS : DPU_ERR_INVALID_WRAM_ACCESS, e.what());
  }
}

std::string SymbolName(const Allocation& a, const dpu_symbol_t& symbol) {
  LoadedProgram(a, DPU_ERR_UNKNOWN_SYMBOL);
  const uint32_t index = symbol.address & ~kMramSymbolBase;
  if (index >= a.program->symbols.size()) Refuse(DPU_ERR_UNKNOWN_SYMBOL, "a dpu_symbol_t not of the loaded program");
  return a.program->symbols[index].name;
}

}  // namespace

extern "C" {

double __pimopt_clock_shift(int* active) {
  *active = 0;
  if (!ModeledClockOn() || !t_main_thread || t_api_depth > 0) return 0;
  *active = 1;
  return g_clock_shift_s.load();
}

const char* dpu_error_to_string(dpu_error_t status) {
  switch (status) {
    case DPU_OK: return "success";
    case DPU_ERR_INTERNAL: return "internal error";
    case DPU_ERR_SYSTEM: return "system error (host memory)";
    case DPU_ERR_DRIVER: return "driver error";
    case DPU_ERR_ALLOCATION: return "cannot allocate the DPUs asked for";
    case DPU_ERR_INVALID_DPU_SET: return "invalid DPU set";
    case DPU_ERR_INVALID_THREAD_ID: return "invalid tasklet id";
    case DPU_ERR_INVALID_NOTIFY_ID: return "invalid notify id";
    case DPU_ERR_INVALID_WRAM_ACCESS: return "invalid WRAM access";
    case DPU_ERR_INVALID_IRAM_ACCESS: return "invalid IRAM access";
    case DPU_ERR_INVALID_MRAM_ACCESS: return "invalid MRAM access";
    case DPU_ERR_INVALID_SYMBOL_ACCESS: return "invalid symbol access";
    case DPU_ERR_MRAM_BUSY: return "MRAM busy";
    case DPU_ERR_TRANSFER_ALREADY_SET: return "transfer already prepared";
    case DPU_ERR_DIFFERENT_DPU_PROGRAMS: return "different DPU programs";
    case DPU_ERR_CORRUPTED_MEMORY: return "corrupted memory";
    case DPU_ERR_DPU_DISABLED: return "DPU disabled";
    case DPU_ERR_DPU_ALREADY_RUNNING: return "DPU already running";
    case DPU_ERR_INVALID_MEMORY_TRANSFER: return "invalid memory transfer";
    case DPU_ERR_INVALID_LAUNCH_POLICY: return "invalid launch policy";
    case DPU_ERR_DPU_FAULT: return "DPU fault (a DPU program broke a rule; see the message above)";
    case DPU_ERR_ELF_INVALID_FILE: return "invalid DPU program file";
    case DPU_ERR_ELF_NO_SUCH_FILE: return "no such DPU program file";
    case DPU_ERR_ELF_NO_SUCH_SECTION: return "no such section in the DPU program";
    case DPU_ERR_TIMEOUT: return "timeout";
    case DPU_ERR_INVALID_PROFILE: return "invalid profile";
    case DPU_ERR_UNKNOWN_SYMBOL: return "unknown symbol";
    case DPU_ERR_LOG_FORMAT: return "invalid log format";
    case DPU_ERR_LOG_CONTEXT_MISSING: return "no log context";
    case DPU_ERR_LOG_BUFFER_TOO_SMALL: return "log buffer too small";
  }
  return "unknown status";
}

static dpu_error_t Allocate(uint32_t nr_dpus, bool whole_ranks, const char* profile, dpu_set_t* dpu_set) {
  if (dpu_set == nullptr) Refuse(DPU_ERR_INVALID_DPU_SET, "dpu_set is NULL");
  // The SDK's profile text: "backend=..." is every backend here; "nrThreadsPerRank=" and "nrJobsPerRank=" set the
  // SDK's host threads for transfers (upmem_communication_performance_test passes them), which the transfer model
  // does not take: accepted, changing nothing. Nothing else is understood.
  if (profile != nullptr) {
    for (const std::string& item : pimopt::SplitText(profile, ',')) {
      if (!item.empty() && item.rfind("backend=", 0) != 0 && item.rfind("nrThreadsPerRank=", 0) != 0 &&
          item.rfind("nrJobsPerRank=", 0) != 0) {
        Refuse(DPU_ERR_INVALID_PROFILE,
               StrCat("profile \"", profile, "\": '", item, "' is not understood here (only backend=..., ",
                      "nrThreadsPerRank=... and nrJobsPerRank=...; the emulated system is PIMOPT_PROFILE and ",
                      "PIMOPT_PROFILE_SET)"));
      }
    }
  }
  const char* name = std::getenv("PIMOPT_PROFILE");
  const char* overrides = std::getenv("PIMOPT_PROFILE_SET");
  pimopt::pim::HardwareProfile hw = pimopt::pim::MakeProfile(name && *name ? name : "prim-2556",
                                                             overrides ? overrides : "");
  g_profile_name = hw.name;
  uint32_t n = nr_dpus;
  if (whole_ranks) {
    if (nr_dpus == DPU_ALLOCATE_ALL) {
      n = hw.num_dpus;
    } else if (static_cast<uint64_t>(nr_dpus) * hw.dpus_per_rank > hw.num_dpus) {
      Refuse(DPU_ERR_ALLOCATION, StrCat(nr_dpus, " ranks asked for; system '", hw.name, "' has ",
                                        hw.num_ranks(), " (PIMOPT_PROFILE)"));
    } else {
      n = nr_dpus * hw.dpus_per_rank;
    }
  } else if (nr_dpus == DPU_ALLOCATE_ALL) {
    n = hw.num_dpus;
  }
  if (n == 0 || n > hw.num_dpus) {
    Refuse(DPU_ERR_ALLOCATION, StrCat(n, " DPUs asked for; system '", hw.name, "' has ", hw.num_dpus,
                                      " (PIMOPT_PROFILE picks another)"));
  }
  uint64_t allocated = 0;
  for (const auto& live : g_allocations) allocated += live->dpus.size();
  if (allocated + n > hw.num_dpus) {
    Refuse(DPU_ERR_ALLOCATION, StrCat(n, " more DPUs asked for while ", allocated, " of the ", hw.num_dpus,
                                      " are allocated"));
  }
  auto a = std::make_unique<Allocation>();
  a->system = std::make_unique<pimopt::pim::PimSystem>(hw);
  a->set.emplace(a->system->Allocate(n));
  a->dpus.resize(n);
  a->prepared.assign(n, nullptr);
  for (uint32_t i = 0; i < n; ++i) a->dpus[i] = {a.get(), i};
  const uint32_t per_rank = a->system->profile().dpus_per_rank;
  for (uint32_t r = 0; r * per_rank < n; ++r) {
    a->ranks.push_back({a.get(), r, r * per_rank, std::min(per_rank, n - r * per_rank)});
  }
  for (dpu_rank_t& r : a->ranks) a->rank_pointers.push_back(&r);
  dpu_set->kind = DPU_SET_RANKS;
  dpu_set->list.nr_ranks = static_cast<uint32_t>(a->ranks.size());
  dpu_set->list.ranks = a->rank_pointers.data();
  g_allocations.push_back(std::move(a));
  return DPU_OK;
}

dpu_error_t dpu_alloc(uint32_t nr_dpus, const char* profile, dpu_set_t* dpu_set) {
  return Api("dpu_alloc", [&] { return Allocate(nr_dpus, false, profile, dpu_set); });
}
dpu_error_t dpu_alloc_ranks(uint32_t nr_ranks, const char* profile, dpu_set_t* dpu_set) {
  return Api("dpu_alloc_ranks", [&] { return Allocate(nr_ranks, true, profile, dpu_set); });
}

dpu_error_t dpu_free(dpu_set_t dpu_set) {
  return Api("dpu_free", [&] {
    const Members m = Live(dpu_set);
    if (!m.whole() || dpu_set.kind != DPU_SET_RANKS) {
      Refuse(DPU_ERR_INVALID_DPU_SET, "dpu_free takes the set dpu_alloc gave");
    }
    Settle(*m.allocation);
    for (auto it = g_allocations.begin(); it != g_allocations.end(); ++it) {
      if (it->get() == m.allocation) {
        g_allocations.erase(it);
        break;
      }
    }
    return DPU_OK;
  });
}

dpu_error_t dpu_get_nr_ranks(dpu_set_t dpu_set, uint32_t* nr_ranks) {
  return Api("dpu_get_nr_ranks", [&] {
    const Members m = Live(dpu_set);
    const uint32_t per_rank = m.allocation->system->profile().dpus_per_rank;
    *nr_ranks = dpu_set.kind == DPU_SET_DPU ? 1 : (m.first + m.count - 1) / per_rank - m.first / per_rank + 1;
    return DPU_OK;
  });
}
dpu_error_t dpu_get_nr_dpus(dpu_set_t dpu_set, uint32_t* nr_dpus) {
  return Api("dpu_get_nr_dpus", [&] {
    *nr_dpus = Live(dpu_set).count;
    return DPU_OK;
  });
}

// Iterators: plain structs over the set (no API call, no lock).
dpu_set_rank_iterator_t dpu_set_rank_iterator_from(dpu_set_t* set) {
  dpu_set_rank_iterator_t it{};
  it.set = set;
  it.count = 0;
  it.next_idx = 0;
  if (set->kind == DPU_SET_DPU) {
    it.has_next = set->dpu != nullptr;
    it.next = *set;
  } else {
    it.has_next = set->list.nr_ranks > 0;
    if (it.has_next) {
      it.next.kind = DPU_SET_RANKS;
      it.next.list.nr_ranks = 1;
      it.next.list.ranks = &set->list.ranks[0];
    }
  }
  return it;
}
void dpu_set_rank_iterator_next(dpu_set_rank_iterator_t* it) {
  ++it->count;
  ++it->next_idx;
  if (it->set->kind == DPU_SET_DPU || it->next_idx >= it->set->list.nr_ranks) {
    it->has_next = false;
    return;
  }
  it->next.list.ranks = &it->set->list.ranks[it->next_idx];
}
static void PointAtDpu(dpu_set_dpu_iterator_t* it) {
  const dpu_set_t& rank = it->rank_iterator.next;
  if (rank.kind == DPU_SET_DPU) {
    it->next = rank;
    return;
  }
  const dpu_rank_t* r = rank.list.ranks[0];
  it->next.kind = DPU_SET_DPU;
  it->next.dpu = &r->allocation->dpus[r->first_dpu + it->next_idx];
}
dpu_set_dpu_iterator_t dpu_set_dpu_iterator_from(dpu_set_t* set) {
  dpu_set_dpu_iterator_t it{};
  it.rank_iterator = dpu_set_rank_iterator_from(set);
  it.count = 0;
  it.next_idx = 0;
  it.has_next = it.rank_iterator.has_next;
  if (it.has_next) PointAtDpu(&it);
  return it;
}
void dpu_set_dpu_iterator_next(dpu_set_dpu_iterator_t* it) {
  ++it->count;
  ++it->next_idx;
  const dpu_set_t& rank = it->rank_iterator.next;
  const uint32_t in_rank = rank.kind == DPU_SET_DPU ? 1 : rank.list.ranks[0]->dpus;
  if (it->next_idx >= in_rank) {
    dpu_set_rank_iterator_next(&it->rank_iterator);
    it->next_idx = 0;
    if (!it->rank_iterator.has_next) {
      it->has_next = false;
      return;
    }
  }
  PointAtDpu(it);
}

dpu_error_t dpu_load(dpu_set_t dpu_set, const char* binary_path, dpu_program_t** program) {
  return Api("dpu_load", [&] {
    const Members m = Live(dpu_set);
    if (binary_path == nullptr) Refuse(DPU_ERR_ELF_NO_SUCH_FILE, "binary_path is NULL");
    // One program per allocation: a load on part of it (a rank, a DPU: DPU_RANK_FOREACH loops) loads the program on
    // the whole allocation the first time and is a no-op for the program already there (its variables keep their
    // values); another program is refused.
    if (!m.whole() && m.allocation->program) {
      const std::string& loaded_path = m.allocation->program->program->path();
      char* a = realpath(loaded_path.c_str(), nullptr);
      char* b = realpath(binary_path, nullptr);
      const bool same = a != nullptr && b != nullptr && std::strcmp(a, b) == 0;
      std::free(a);
      std::free(b);
      if (!same) {
        Refuse(DPU_ERR_DIFFERENT_DPU_PROGRAMS,
               StrCat("pimopt runs one program per allocation: ", loaded_path, " is loaded, not ", binary_path));
      }
      if (program != nullptr) *program = m.allocation->program.get();
      return DPU_OK;
    }
    Settle(*m.allocation);
    std::shared_ptr<pimopt::pim::DpuProgram> loaded;
    try {
      loaded = pimopt::pim::LoadNativeProgram(binary_path);
    } catch (const pimopt::InputError& e) {
      std::FILE* f = std::fopen(binary_path, "rb");
      if (f == nullptr) Refuse(DPU_ERR_ELF_NO_SUCH_FILE, e.what());
      std::fclose(f);
      Refuse(DPU_ERR_ELF_INVALID_FILE, e.what());
    }
    m.allocation->set->Load(loaded);
    m.allocation->program = std::make_unique<dpu_program_t>(loaded);
    if (program != nullptr) *program = m.allocation->program.get();
    return DPU_OK;
  });
}

dpu_error_t dpu_get_symbol(dpu_program_t* program, const char* symbol_name, dpu_symbol_t* symbol) {
  return Api("dpu_get_symbol", [&] {
    if (program == nullptr || symbol_name == nullptr || symbol == nullptr) {
      Refuse(DPU_ERR_INVALID_SYMBOL_ACCESS, "a NULL argument");
    }
    const size_t index = KnownSymbol(*program, symbol_name);
    const dpu_program_t::Symbol& found = program->symbols[index];
    *symbol = {(found.mram ? kMramSymbolBase : 0) | static_cast<uint32_t>(index), found.bytes};
    return DPU_OK;
  });
}

dpu_error_t dpu_launch(dpu_set_t dpu_set, dpu_launch_policy_t policy) {
  return Api("dpu_launch", [&] {
    const Members m = Live(dpu_set);
    if (policy != DPU_SYNCHRONOUS && policy != DPU_ASYNCHRONOUS) {
      Refuse(DPU_ERR_INVALID_LAUNCH_POLICY, StrCat("launch policy ", static_cast<int>(policy)));
    }
    Allocation& a = *m.allocation;
    Settle(a, m.first, m.count);  // a launch on DPUs still running waits for them
    pimopt::pim::DpuProgram& program = LoadedProgram(a, DPU_ERR_INVALID_DPU_SET);
    program.ClearLogs(m.first, m.count);
    const pimopt::pim::LaunchStats stats = a.set->Launch(m.first, m.count);
    RecordLaunch(stats);
    g_clock.energy_j += stats.energy_j;
    const double s = stats.kernel_s + stats.overhead_s;
    g_clock.last_launch_s = s;
    if (policy == DPU_SYNCHRONOUS) {
      g_clock.modeled_s += s;
    } else {
      a.in_flight.push_back({m.first, m.count, ProgramNow() + s});
    }
    return DPU_OK;
  });
}

dpu_error_t dpu_status(dpu_set_t dpu_set, bool* done, bool* fault) {
  return Api("dpu_status", [&] {
    const Members m = Live(dpu_set);
    Settle(*m.allocation, m.first, m.count);
    if (done) *done = true;
    if (fault) *fault = false;  // a fault is reported by dpu_launch itself
    return DPU_OK;
  });
}
dpu_error_t dpu_sync(dpu_set_t dpu_set) {
  return Api("dpu_sync", [&] {
    const Members m = Live(dpu_set);
    Settle(*m.allocation, m.first, m.count);
    return DPU_OK;
  });
}

dpu_error_t dpu_callback(dpu_set_t dpu_set, dpu_error_t (*callback)(dpu_set_t, uint32_t, void*), void* args,
                         dpu_callback_flags_t flags) {
  return Api("dpu_callback", [&] {
    if (callback == nullptr) Refuse(DPU_ERR_INTERNAL, "callback is NULL");
    const unsigned known = DPU_CALLBACK_ASYNC | DPU_CALLBACK_NONBLOCKING | DPU_CALLBACK_SINGLE_CALL;
    if ((static_cast<unsigned>(flags) & ~known) != 0) {
      Refuse(DPU_ERR_INTERNAL, StrCat("callback flags ", static_cast<unsigned>(flags), ": unknown bits"));
    }
    const Members m = Live(dpu_set);
    Settle(*m.allocation, m.first, m.count);
    if ((flags & DPU_CALLBACK_SINGLE_CALL) != 0 || dpu_set.kind == DPU_SET_DPU) {
      const dpu_error_t status = callback(dpu_set, 0, args);
      if (status != DPU_OK) Refuse(status, StrCat("the callback returned ", dpu_error_to_string(status)));
      return DPU_OK;
    }
    for (uint32_t r = 0; r < dpu_set.list.nr_ranks; ++r) {
      dpu_set_t rank{};
      rank.kind = DPU_SET_RANKS;
      rank.list.nr_ranks = 1;
      rank.list.ranks = &dpu_set.list.ranks[r];
      const dpu_error_t status = callback(rank, r, args);
      if (status != DPU_OK) {
        Refuse(status, StrCat("the callback for rank ", r, " of the set returned ", dpu_error_to_string(status)));
      }
    }
    return DPU_OK;
  });
}

// A transfer's modeled seconds, its energy added to the process's (`dpus` DPUs, `bytes` each).
static double Moved(const Allocation& a, uint32_t dpus, size_t bytes, double seconds) {
  g_clock.energy_j +=
      pimopt::pim::TransferEnergyJoules(a.system->profile(), dpus, static_cast<double>(bytes) * dpus, seconds);
  return seconds;
}

static dpu_error_t Copy(dpu_set_t dpu_set, const std::string& symbol, uint32_t offset, const void* src, void* dst,
                        size_t length) {
  const Members m = Live(dpu_set);
  Allocation& a = *m.allocation;
  Settle(a, m.first, m.count);
  pimopt::pim::DpuSet& set = *a.set;
  if (dst != nullptr) {  // from: one DPU
    if (m.count != 1) Refuse(DPU_ERR_INVALID_DPU_SET, "dpu_copy_from reads one DPU");
    g_clock.modeled_s +=
        Moved(a, 1, length, Access(a, symbol, [&] { return set.CopyFrom(m.first, symbol, offset, dst, length); }));
  } else if (m.whole() && m.count > 1) {
    g_clock.modeled_s +=
        Moved(a, m.count, length, Access(a, symbol, [&] { return set.BroadcastTo(symbol, offset, src, length); }));
  } else {
    for (uint32_t i = m.first; i < m.first + m.count; ++i) {
      g_clock.modeled_s +=
          Moved(a, 1, length, Access(a, symbol, [&] { return set.CopyTo(i, symbol, offset, src, length); }));
    }
  }
  return DPU_OK;
}

dpu_error_t dpu_copy_to(dpu_set_t dpu_set, const char* symbol_name, uint32_t symbol_offset, const void* src,
                        size_t length) {
  return Api("dpu_copy_to", [&] {
    if (symbol_name == nullptr || src == nullptr) Refuse(DPU_ERR_INVALID_SYMBOL_ACCESS, "a NULL argument");
    return Copy(dpu_set, symbol_name, symbol_offset, src, nullptr, length);
  });
}
dpu_error_t dpu_copy_from(dpu_set_t dpu_set, const char* symbol_name, uint32_t symbol_offset, void* dst,
                          size_t length) {
  return Api("dpu_copy_from", [&] {
    if (symbol_name == nullptr || dst == nullptr) Refuse(DPU_ERR_INVALID_SYMBOL_ACCESS, "a NULL argument");
    return Copy(dpu_set, symbol_name, symbol_offset, nullptr, dst, length);
  });
}
dpu_error_t dpu_copy_to_symbol(dpu_set_t dpu_set, dpu_symbol_t symbol, uint32_t symbol_offset, const void* src,
                               size_t length) {
  return Api("dpu_copy_to_symbol", [&] {
    if (src == nullptr) Refuse(DPU_ERR_INVALID_SYMBOL_ACCESS, "src is NULL");
    return Copy(dpu_set, SymbolName(*Live(dpu_set).allocation, symbol), symbol_offset, src, nullptr, length);
  });
}
dpu_error_t dpu_copy_from_symbol(dpu_set_t dpu_set, dpu_symbol_t symbol, uint32_t symbol_offset, void* dst,
                                 size_t length) {
  return Api("dpu_copy_from_symbol", [&] {
    if (dst == nullptr) Refuse(DPU_ERR_INVALID_SYMBOL_ACCESS, "dst is NULL");
    return Copy(dpu_set, SymbolName(*Live(dpu_set).allocation, symbol), symbol_offset, nullptr, dst, length);
  });
}

dpu_error_t dpu_broadcast_to(dpu_set_t dpu_set, const char* symbol_name, uint32_t symbol_offset, const void* src,
                             size_t length, dpu_xfer_flags_t) {
  return Api("dpu_broadcast_to", [&] {
    if (symbol_name == nullptr || src == nullptr) Refuse(DPU_ERR_INVALID_SYMBOL_ACCESS, "a NULL argument");
    return Copy(dpu_set, symbol_name, symbol_offset, src, nullptr, length);
  });
}

dpu_error_t dpu_broadcast_to_symbol(dpu_set_t dpu_set, dpu_symbol_t symbol, uint32_t symbol_offset, const void* src,
                                    size_t length, dpu_xfer_flags_t) {
  return Api("dpu_broadcast_to_symbol", [&] {
    if (src == nullptr) Refuse(DPU_ERR_INVALID_SYMBOL_ACCESS, "src is NULL");
    return Copy(dpu_set, SymbolName(*Live(dpu_set).allocation, symbol), symbol_offset, src, nullptr, length);
  });
}

dpu_error_t dpu_prepare_xfer(dpu_set_t dpu_set, void* buffer) {
  return Api("dpu_prepare_xfer", [&] {
    const Members m = Live(dpu_set);
    for (uint32_t i = m.first; i < m.first + m.count; ++i) m.allocation->prepared[i] = buffer;
    return DPU_OK;
  });
}

static dpu_error_t Push(dpu_set_t dpu_set, dpu_xfer_t xfer, const std::string& symbol, uint32_t offset,
                        size_t length, dpu_xfer_flags_t flags) {
  if (xfer != DPU_XFER_TO_DPU && xfer != DPU_XFER_FROM_DPU) {
    Refuse(DPU_ERR_INVALID_MEMORY_TRANSFER, StrCat("transfer direction ", static_cast<int>(xfer)));
  }
  const Members m = Live(dpu_set);
  Allocation& a = *m.allocation;
  Settle(a, m.first, m.count);
  uint32_t prepared = 0;
  for (uint32_t i = m.first; i < m.first + m.count; ++i) {
    if (a.prepared[i] == nullptr) continue;
    a.set->PrepareXfer(i, a.prepared[i], length);
    ++prepared;
  }
  if (prepared > 0) {
    const auto direction =
        xfer == DPU_XFER_TO_DPU ? pimopt::pim::XferDirection::kToDpu : pimopt::pim::XferDirection::kFromDpu;
    g_clock.modeled_s += Moved(a, prepared, length, Access(a, symbol, [&] {
                                 return a.set->PushXfer(direction, symbol, offset, length);
                               }));
  }
  if ((flags & DPU_XFER_NO_RESET) == 0) {
    for (uint32_t i = m.first; i < m.first + m.count; ++i) a.prepared[i] = nullptr;
  }
  return DPU_OK;
}

dpu_error_t dpu_push_xfer(dpu_set_t dpu_set, dpu_xfer_t xfer, const char* symbol_name, uint32_t symbol_offset,
                          size_t length, dpu_xfer_flags_t flags) {
  return Api("dpu_push_xfer", [&] {
    if (symbol_name == nullptr) Refuse(DPU_ERR_INVALID_SYMBOL_ACCESS, "symbol_name is NULL");
    return Push(dpu_set, xfer, symbol_name, symbol_offset, length, flags);
  });
}
dpu_error_t dpu_push_xfer_symbol(dpu_set_t dpu_set, dpu_xfer_t xfer, dpu_symbol_t symbol, uint32_t symbol_offset,
                                 size_t length, dpu_xfer_flags_t flags) {
  return Api("dpu_push_xfer_symbol", [&] {
    return Push(dpu_set, xfer, SymbolName(*Live(dpu_set).allocation, symbol), symbol_offset, length, flags);
  });
}

dpu_error_t dpu_log_read(dpu_set_t dpu_set, FILE* stream) {
  return Api("dpu_log_read", [&] {
    if (stream == nullptr) Refuse(DPU_ERR_LOG_CONTEXT_MISSING, "stream is NULL");
    const Members m = Live(dpu_set);
    Settle(*m.allocation, m.first, m.count);
    const pimopt::pim::DpuProgram& program = LoadedProgram(*m.allocation, DPU_ERR_LOG_CONTEXT_MISSING);
    for (uint32_t i = m.first; i < m.first + m.count; ++i) {
      if (m.count > 1) std::fprintf(stream, "DPU %u:\n", i);
      const std::string log = program.Log(i);
      std::fwrite(log.data(), 1, log.size(), stream);
    }
    return DPU_OK;
  });
}
dpu_error_t dpulog_read_for_dpu(dpu_t* dpu, FILE* stream) {
  dpu_set_t one{};
  one.kind = DPU_SET_DPU;
  one.dpu = dpu;
  return dpu_log_read(one, stream);
}

// ---------------------------------------------------------------- dpu_probe.h
static struct dpu_probe_t* CheckedProbe(struct dpu_probe_t* probe) {
  if (probe == nullptr) Refuse(DPU_ERR_INTERNAL, "probe is NULL");
  if (probe->initialized != 1) Refuse(DPU_ERR_INTERNAL, "a probe not initialized (dpu_probe_init)");
  return probe;
}

dpu_error_t dpu_probe_init(const char* name, struct dpu_probe_t* probe) {
  return Api("dpu_probe_init", [&] {
    if (probe == nullptr) Refuse(DPU_ERR_INTERNAL, "probe is NULL");
    *probe = {};
    std::snprintf(probe->name, sizeof probe->name, "%s", name != nullptr ? name : "");
    probe->initialized = 1;
    return DPU_OK;
  });
}

dpu_error_t dpu_probe_start(struct dpu_probe_t* probe) {
  return Api("dpu_probe_start", [&] {
    CheckedProbe(probe);
    if (probe->running) Refuse(DPU_ERR_INTERNAL, StrCat("probe '", probe->name, "' is already started"));
    for (const auto& a : g_allocations) Settle(*a);
    probe->running = 1;
    probe->start_energy_j = g_clock.energy_j;
    probe->start_time_s = g_clock.modeled_s;
    return DPU_OK;
  });
}

dpu_error_t dpu_probe_stop(struct dpu_probe_t* probe) {
  return Api("dpu_probe_stop", [&] {
    CheckedProbe(probe);
    if (!probe->running) Refuse(DPU_ERR_INTERNAL, StrCat("probe '", probe->name, "' is not started"));
    for (const auto& a : g_allocations) Settle(*a);  // the window ends once the launches in flight have
    probe->running = 0;
    probe->energy_j += g_clock.energy_j - probe->start_energy_j;
    probe->time_s += g_clock.modeled_s - probe->start_time_s;
    ++probe->windows;
    return DPU_OK;
  });
}

dpu_error_t dpu_probe_get(struct dpu_probe_t* probe, dpu_probe_option_t option, dpu_probe_aggregation_t aggregation,
                          double* value) {
  return Api("dpu_probe_get", [&] {
    CheckedProbe(probe);
    if (value == nullptr) Refuse(DPU_ERR_INTERNAL, "value is NULL");
    if (option != DPU_ENERGY && option != DPU_TIME) Refuse(DPU_ERR_INTERNAL, StrCat("probe option ", option));
    if (aggregation != DPU_ACCUMULATE && aggregation != DPU_AVERAGE) {
      Refuse(DPU_ERR_INTERNAL, StrCat("probe aggregation ", aggregation));
    }
    if (probe->windows == 0) {
      Refuse(DPU_ERR_INTERNAL, StrCat("probe '", probe->name, "' has no completed window (dpu_probe_start, then "
                                      "dpu_probe_stop)"));
    }
    const double sum = option == DPU_ENERGY ? probe->energy_j : probe->time_s;
    *value = aggregation == DPU_ACCUMULATE ? sum : sum / probe->windows;
    return DPU_OK;
  });
}

dpu_error_t dpu_probe_deinit(struct dpu_probe_t* probe) {
  return Api("dpu_probe_deinit", [&] {
    CheckedProbe(probe);
    probe->initialized = 0;
    return DPU_OK;
  });
}

double pimopt_modeled_seconds(void) {
  std::lock_guard<std::recursive_mutex> lock(g_api);
  return g_clock.modeled_s;
}
double pimopt_last_launch_seconds(void) {
  std::lock_guard<std::recursive_mutex> lock(g_api);
  return g_clock.last_launch_s;
}
const char* pimopt_profile_name(void) {
  std::lock_guard<std::recursive_mutex> lock(g_api);
  return g_profile_name.c_str();
}

}  // extern "C"
