// The PIM backend's parameters (PimParams), its options' checks, and its registration with the backend registry.
#include <any>

#include "pimopt/algorithms/algorithm.h"
#include "pimopt/backends/pim/pim_backend.h"
#include "pimopt/backends/registry.h"
#include "pimopt/core/error.h"
#include "pimopt/core/file_util.h"

namespace pimopt {

namespace {

ParamTable<PimBackendOptions> MakePimParams() {
  ParamTable<PimBackendOptions> t;
  const std::string group = kPimParamGroup;
  t.Add("tasklets", &PimBackendOptions::tasklets, 16)
      .Min(1)
      .Unit("tasklets")
      .Effect(ParamEffect::kModeledTime)
      .AppliesWhen("backend", {"pim"})
      .Group(group)
      .Help("tasklets (hardware threads) per DPU; at most what the profile and the kernel's WRAM allow");
  t.AddCustom(
       "profile", ParamType::kChoice, std::string("pim-opt"),
       [](const PimBackendOptions& o) -> ParamValue { return o.profile; },
       [](PimBackendOptions& o, const ParamValue& v) { o.profile = std::get<std::string>(v); })
      .ListChoices([] {
        std::vector<ParamChoice> choices;
        for (const pim::ProfilePreset& p : pim::ProfilePresets()) choices.push_back({p.name, p.description, {}});
        return choices;
      })
      .Noun("hardware profile")
      .Effect(ParamEffect::kModeledTime)
      .AppliesWhen("backend", {"pim"})
      .Group(group)
      .Help("hardware profile ('pimopt profile' lists them and their fields)");
  t.Add("profile-set", &PimBackendOptions::profile_overrides, "")
      .Effect(ParamEffect::kModeledTime)
      .AppliesWhen("backend", {"pim"})
      .Group(group)
      .Help(
          "profile overrides FIELD=VALUE,... (any field 'pimopt profile NAME' shows, e.g. "
          "dpu_frequency_hz=4e8,slots.float_mul=1)");
  t.AddChoice("kernel", &PimBackendOptions::artifact_kernel, false,
              std::vector<std::pair<ParamChoice, bool>>{
                  {{"pimopt", "pimopt's: int8 features, sample-parallel scoring, the model broadcast", {}}, false},
                  {{"pim-opt",
                    "PIM-Opt's: int32 Q0.31 features with 64-bit products shifted one by one, its -1 rule, feature "
                    "split, float sigmoid with a 4 MiB exp table, hinge margin 2^-15, int32 GA gradients on dense "
                    "data, the model pushed to each DPU and ADMM's x_k pushed back every round",
                    {}},
                   true}})
      .Noun("kernel")
      .AppliesWhen("backend", {"pim"})
      .Group(group)
      .Help("the DPU kernel and transfer pattern (docs/pim-backend.md compares them)");
  // The DPU program where pimopt was built with its toolchain (scripts/setup.sh installs it), else the port: the
  // same models either way.
  pim::AddKernelSourceParam(t, &PimBackendOptions::kernels,
                            pim::HaveDpuToolchain() ? pim::KernelSource::kProgram : pim::KernelSource::kPort)
      .Help("what runs on the DPUs (default: program where pimopt was built with its DPU toolchain, else port)")
      .Effect(ParamEffect::kModeledTime)  // the same models (docs/pim-backend.md "The kernel as a DPU program in C")
      .AppliesWhen("backend", {"pim"})
      .Group(group);
  t.AddChoice("sigmoid", &PimBackendOptions::sigmoid_float, false,
              std::vector<std::pair<ParamChoice, bool>>{
                  {{"table", "fixed-point lookup table", {}}, false},
                  {{"float", "PIM-Opt's software-float exp (slower on DPUs)", {}}, true}})
      .Noun("sigmoid")
      .AppliesWhen("backend", {"pim"})
      .AppliesWhen("model", {"lr"})
      // The dual ascent mode (cocoa) inverts the sigmoid by bisection on the kernel's table: no exp to choose.
      .AppliesWhen("algo", std::function<std::vector<std::string>()>([] {
        return AlgorithmNameListWith([](const AlgorithmTraits& a) { return a.uses_learning_rate; });
      }))
      .Group(group)
      .Help("how DPUs compute the logistic sigmoid");
  t.AddChoice("tasklet-split", &PimBackendOptions::feature_split, false,
              std::vector<std::pair<ParamChoice, bool>>{
                  {{"samples", "each tasklet whole rows, 2 barriers per step", {}}, false},
                  {{"features", "PIM-Opt's: each tasklet part of every row, 2 barriers per row", {}}, true}})
      .Noun("split")
      .Effect(ParamEffect::kModeledTime)
      .AppliesWhen("backend", {"pim"})
      // The dual ascent mode (a dual method's: cocoa) has its own split: a dense row's feature blocks are shared by
      // the tasklets, a sparse row is one tasklet's (docs/pim-backend.md).
      .AppliesWhen("algo", std::function<std::vector<std::string>()>([] {
        return AlgorithmNameListWith([](const AlgorithmTraits& a) { return !a.row_duals; });
      }))
      .Group(group)
      .Help("how a DPU's tasklets share the work on dense data (docs/pim-backend.md compares them)");
  t.AddChoice("sync-path", &PimBackendOptions::sync_path, PimBackendOptions::SyncPath::kAuto,
              std::vector<std::pair<ParamChoice, PimBackendOptions::SyncPath>>{
                  {{"auto", "what-if DPU links where the profile's links cover a synchronization, else the host", {}},
                   PimBackendOptions::SyncPath::kAuto},
                  {{"host", "every synchronization through the host (today's UPMEM)", {}},
                   PimBackendOptions::SyncPath::kHost},
                  {{"links",
                    "every synchronization over the profile's links (all-reduces, gossip); an error when they do not "
                    "cover it",
                    {}},
                   PimBackendOptions::SyncPath::kLinks},
                  {{"software",
                    "PID-Comm's software collectives on today's UPMEM: the host reads and writes the DPUs' MRAM "
                    "directly, relocation kernels on the DPUs (docs/pim-emulator.md 'Software collectives')",
                    {}},
                   PimBackendOptions::SyncPath::kSoftware}})
      .Noun("path")
      .Effect(ParamEffect::kModeledTime)
      .AppliesWhen("backend", {"pim"})
      .Group(group)
      .Help("how DPUs synchronize: through the host with the SDK's transfers, by software collectives, or over "
            "what-if DPU links (docs/pim-emulator.md 'What-if interconnects', 'Software collectives'): the sums of "
            "MA-SGD, CoCoA, GA-SGD and ADMM by all-reduce, D-PSGD's gossip DPU to DPU; the same models on every path");
  t.AddChoice(
       "host-time", &PimBackendOptions::measured_host, false,
       std::vector<std::pair<ParamChoice, bool>>{
           {{"modeled", "the profile's host model (host_* fields): the same on every machine", {}}, false},
           {{"measured", "this machine's real reduction time (varies with the machine and its load)", {}}, true}})
      .Noun("host time")
      .Effect(ParamEffect::kModeledTime)
      .AppliesWhen("backend", {"pim"})
      .Group(group)
      .Help("how the host's reduction at each synchronization is timed in the modeled times");
  t.AddChoice("sync-format", &PimBackendOptions::sync_format, PimBackendOptions::SyncFormat::kDense,
              std::vector<std::pair<ParamChoice, PimBackendOptions::SyncFormat>>{
                  {{"dense", "every DPU sends its whole vector (PIM-Opt's)", {}},
                   PimBackendOptions::SyncFormat::kDense},
                  {{"auto",
                    "a DPU sends the coordinates its rows touched as (index, value) pairs when that is smaller: "
                    "GA-SGD's gradients, MA-SGD's model deltas with --reg 0 (the same model)",
                    {}},
                   PimBackendOptions::SyncFormat::kAuto},
                  {{"int16",
                    "MA-SGD: every DPU sends its model delta quantized to 16 bits with error feedback (lossy)", {}},
                   PimBackendOptions::SyncFormat::kInt16},
                  {{"int8", "MA-SGD: ... to 8 bits with error feedback (lossy)", {}},
                   PimBackendOptions::SyncFormat::kInt8}})
      .Noun("format")
      .Effect(ParamEffect::kResult)
      .AppliesWhen("backend", {"pim"})
      .Group(group)
      .Help("how DPUs send their vectors up to the host at a synchronization (docs/pim-backend.md 'Compacted "
            "synchronization', 'Quantized model deltas')");
  t.AddChoice("transfers", &PimBackendOptions::async_transfers, false,
              std::vector<std::pair<ParamChoice, bool>>{
                  {{"sync", "each pull ends before the host's reduction starts (PIM-Opt's host)", {}}, false},
                  {{"async",
                    "the host pulls in chunks of coordinates with asynchronous transfers and reduces each chunk while "
                    "the next is on its way",
                    {}},
                   true}})
      .Noun("transfers")
      .Effect(ParamEffect::kModeledTime)
      .AppliesWhen("backend", {"pim"})
      .Group(group)
      .Help("how the modeled host overlaps a synchronization's pull with its reduction (docs/pim-emulator.md "
            "'Asynchronous transfers')");
  t.AddChoice("scheduler", &PimBackendOptions::scheduler, pim::Scheduler::kBatched,
              std::vector<std::pair<ParamChoice, pim::Scheduler>>{
                  {{"batched",
                    "a tasklet runs on past its DMAs and unlocks; DPUs that do the same events share their clock's "
                    "work",
                    {}},
                   pim::Scheduler::kBatched},
                  {{"reference", "a tasklet stops at every event for the clock (slower)", {}},
                   pim::Scheduler::kReference}})
      .Noun("scheduler")
      .Effect(ParamEffect::kNone)
      .AppliesWhen("backend", {"pim"})
      .Group(group)
      .Help("how the emulator runs the DPUs' tasklets: the same model and modeled times either way "
            "(docs/pim-emulator.md 'The batched scheduler')");
  return t;
}

}  // namespace

const ParamTable<PimBackendOptions>& PimParams() {
  static const ParamTable<PimBackendOptions> table = MakePimParams();
  return table;
}

PimBackendOptions::PimBackendOptions() { PimParams().ApplyDefaults(*this); }

pim::HardwareProfile PimBackendOptions::ResolveProfile() const {
  const pim::HardwareProfile profile = pim::MakeProfile(this->profile, profile_overrides);
  if (tasklets == 0 || tasklets > profile.max_tasklets) {
    throw ConfigError("--tasklets", StrCat("must be in 1..", profile.max_tasklets, " (profile '", profile.name, "')"));
  }
  pim::CheckTaskletsFit(pimbackend::MakeLinearKernel()->Spec(), profile, tasklets,
                        StrCat("the linear kernel's WRAM buffers (", pimbackend::kHeapBytesPerTasklet,
                               " bytes per tasklet, and its stack)"));
  return profile;
}


namespace {

BackendRegistration PimRegistration() {
  BackendRegistration r;
  r.traits.name = "pim";
  r.traits.help = "every worker a DPU of the emulated UPMEM system, fixed point (docs/pim-backend.md)";
  r.traits.listing_order = 20;
  r.traits.param_group = kPimParamGroup;
  r.traits.workers_are_devices = true;
  r.traits.projects_epochs = true;
  r.traits.keeps_row_duals = true;  // in MRAM, beside the rows (the kernel's dual ascent mode)
  r.params = EraseParamTable(PimParams());
  r.default_options = [] { return std::any(PimBackendOptions()); };
  r.resolve = [](std::any& options, int host_threads) {
    auto& o = std::any_cast<PimBackendOptions&>(options);
    o.host_threads = host_threads;
    o.ResolveProfile();
  };
  r.system = [](const std::any& options) {
    const auto& o = std::any_cast<const PimBackendOptions&>(options);
    const pim::HardwareProfile profile = pim::MakeProfile(o.profile, o.profile_overrides);
    return BackendSystem{profile.name, profile.num_dpus};
  };
  r.make = [](ThreadPool& pool, const std::any& options) -> std::unique_ptr<IBackend> {
    return std::make_unique<PimBackend>(pool, std::any_cast<const PimBackendOptions&>(options));
  };
  return r;
}

[[maybe_unused]] const bool registered = RegisterBackend(PimRegistration());
// The training kernel, loadable by name on any PIM machine (machine.h).
[[maybe_unused]] const bool kernel_registered =
    (pim::RegisterKernel(pimbackend::kLinearKernelName, pimbackend::MakeLinearKernel), true);

}  // namespace

}  // namespace pimopt
