// The backend registry: every backend registers itself from its own files with its traits, its parameter table and
// its factory (RegisterBackend), as algorithms do. The run's configuration, the pipeline, the planner and the CLI
// ask the registry and the backend's capabilities (IBackend::projector()); none of them names a backend.
#pragma once

#include <any>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "pimopt/algorithms/backend.h"
#include "pimopt/core/params.h"

namespace pimopt {

class ThreadPool;

// What the rest of pimopt may know about a backend, declared by the backend itself.
struct BackendTraits {
  std::string name;       // the --backend value and the checkpoint's backend
  std::string help;       // one line for --backend's choices
  int listing_order = 0;  // where it appears in lists and --help
  std::string param_group;  // --help's group of its parameters (and of --dpus, --project-dpus for devices)
  // Every worker is a device of a system the run sizes (a DPU): --dpus counts them and the run's
  // --project-dpus/--project-rows-per-dpu project to other sizes.
  bool workers_are_devices = false;
  bool projects_epochs = false;  // its instances offer an EpochProjector (projection.h)
  // It keeps per-row duals with the workers and runs LocalSolver::kDualCoordinateAscent (AlgorithmTraits::row_duals).
  bool keeps_row_duals = false;
  // Its row duals can warm-start a run under another L2 strength (IBackend::MoveRowDualsToL2).
  bool rescales_row_duals = false;
  // It offers the full-batch second-order verbs (IBackend::PrimalDerivativesAtGlobal ...; AlgorithmTraits::second_order).
  bool second_order = false;
  // Its instances run a worker on one thread (IBackend::RunsAWorkerOnOneThread): what the run header says of
  // threads before the backend exists.
  bool runs_a_worker_on_one_thread = false;
};

// The system a backend's options describe (a PIM profile), for a planner: its name and how many workers it holds.
struct BackendSystem {
  std::string name;
  uint64_t most_workers = 0;
};

// A backend's options: its own struct, held in a std::any (the struct's type is the backend's business).
struct BackendRegistration {
  BackendTraits traits;
  ParamTable<std::any> params;  // its options' parameters (EraseParamTable), possibly none
  std::function<std::any()> default_options;
  // The checks that need no data (ConfigError naming the flag); the run's host threads passed on.
  std::function<void(std::any& options, int host_threads)> resolve;
  // The system the options describe; unset: none (the workers are threads).
  std::function<BackendSystem(const std::any& options)> system;
  std::function<std::unique_ptr<IBackend>(ThreadPool& pool, const std::any& options)> make;
};

// Registers a backend (from a static initializer in its own file); returns true.
bool RegisterBackend(BackendRegistration registration);

// Every backend's options, by backend name: what a run's configuration carries for whichever backend it picks.
class BackendOptionSet : public NamedOptions {
 public:
  BackendOptionSet();  // every registered backend's defaults
};

// The backend named `name`; ConfigError naming --backend (with the known names) otherwise.
const BackendRegistration& FindBackend(const std::string& name);
// Every registered backend, in listing order.
std::vector<const BackendRegistration*> RegisteredBackends();
// The names of the backends whose traits satisfy `has`, in listing order (for parameters that apply to them).
std::vector<std::string> BackendNamesWith(const std::function<bool(const BackendTraits&)>& has);
// --backend's choices, in listing order.
std::vector<ParamChoice> BackendChoices();
// A backend `name` with its options from `options`.
std::unique_ptr<IBackend> MakeBackend(const std::string& name, ThreadPool& pool, const BackendOptionSet& options);

}  // namespace pimopt
