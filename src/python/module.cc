// The Python package's native core (`pimopt._core`): the library's run stages over arrays the caller holds. The
// estimators and scikit-learn's input validation are Python (python/pimopt/); this file converts, checks the arrays
// as a file reader checks a file, and calls.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "pimopt/core/error.h"
#include "pimopt/core/params_json.h"
#include "pimopt/data/sources.h"
#include "pimopt/pim/hw_validation.h"
#include "pimopt/pim/prim.h"
#include "pimopt/pim/profile.h"
#include "pimopt/pim/validation.h"
#include "pimopt/pim/validation_json.h"
#include "pimopt/run/pipeline.h"
#include "pimopt/run/plan.h"
#include "pimopt/run/run_config.h"

namespace py = pybind11;

namespace pimopt {
namespace {

using FloatArray = py::array_t<float, py::array::c_style | py::array::forcecast>;

using IndexArray = py::array_t<int64_t, py::array::c_style | py::array::forcecast>;

// A matrix argument and its labels, as the Python function names them (X and y, or X_test and y_test).
struct ArrayNames {
  const char* x;
  const char* y;
};

std::vector<float> ToVector(const FloatArray& a) { return std::vector<float>(a.data(), a.data() + a.size()); }

// The checks a file reader makes, for arrays: finite values and one label per row.
void CheckValuesAndLabels(ArrayNames names, const float* values, size_t count, size_t rows, const FloatArray& y) {
  for (size_t i = 0; i < count; ++i) {
    if (!std::isfinite(values[i])) throw ConfigError(names.x, "contains NaN or infinity");
  }
  if (static_cast<size_t>(y.size()) != rows) {
    throw ConfigError(names.y, StrCat(y.size(), " labels for ", rows, " rows of ", names.x));
  }
}

// A dense row-major float32 matrix and its labels (+1 / -1) as a Dataset (one copy).
Dataset DenseDataset(ArrayNames names, const FloatArray& x, const FloatArray& y) {
  if (x.ndim() != 2) throw ConfigError(names.x, "must be a 2-D array");
  const auto rows = static_cast<size_t>(x.shape(0)), features = static_cast<size_t>(x.shape(1));
  CheckValuesAndLabels(names, x.data(), rows * features, rows, y);
  std::vector<float> values(x.data(), x.data() + rows * features);  // one pass: no zero-filling first
  return Dataset::FromDense(features, std::move(values), ToVector(y));
}

// CSR arrays (row pointers, column numbers, values) and labels as a Dataset; CheckCsr names what is wrong.
Dataset CsrDataset(ArrayNames names, const IndexArray& indptr, const IndexArray& indices, const FloatArray& values,
                   size_t features, const FloatArray& y) {
  const char* what = names.x;
  CsrMatrix m;
  m.row_ptr.resize(static_cast<size_t>(indptr.size()));
  for (size_t i = 0; i < m.row_ptr.size(); ++i) {
    if (indptr.data()[i] < 0) throw ConfigError(what, "negative row pointer in the CSR matrix");
    m.row_ptr[i] = static_cast<uint64_t>(indptr.data()[i]);
  }
  m.col.resize(static_cast<size_t>(indices.size()));
  for (size_t i = 0; i < m.col.size(); ++i) {
    const int64_t c = indices.data()[i];
    if (c < 0 || static_cast<uint64_t>(c) >= features) throw ConfigError(what, "column index out of range");
    m.col[i] = static_cast<uint32_t>(c);
  }
  m.val.assign(values.data(), values.data() + values.size());
  const size_t rows = m.row_ptr.empty() ? 0 : m.row_ptr.size() - 1;
  CheckValuesAndLabels(names, m.val.data(), m.val.size(), rows, y);
  if (const std::string problem = CheckCsr(m, rows, features); !problem.empty()) throw ConfigError(what, problem);
  return Dataset::FromCsr(features, std::move(m), ToVector(y));
}

// Dense (a 2-D array) or sparse (a tuple: indptr, indices, data, n_features) input, with its sample weights (empty:
// none; finite and >= 0).
Dataset ToDataset(ArrayNames names, const py::object& x, const FloatArray& y, const FloatArray& weights) {
  Dataset d;
  if (py::isinstance<py::tuple>(x)) {
    const auto t = x.cast<py::tuple>();
    if (t.size() != 4) throw ConfigError(names.x, "a sparse matrix is passed as (indptr, indices, data, n_features)");
    d = CsrDataset(names, t[0].cast<IndexArray>(), t[1].cast<IndexArray>(), t[2].cast<FloatArray>(),
                   t[3].cast<size_t>(), y);
  } else {
    d = DenseDataset(names, x.cast<FloatArray>(), y);
  }
  if (weights.size() == 0) return d;
  for (py::ssize_t i = 0; i < weights.size(); ++i) {
    if (!std::isfinite(weights.data()[i]) || weights.data()[i] < 0) {
      throw ConfigError("sample_weight", "weights must be finite and >= 0");
    }
  }
  d.set_weights(ToVector(weights));
  return d;
}

// Runs Python's handlers of the signals that arrived (Ctrl-C: KeyboardInterrupt), from a thread without the GIL.
void RaisePendingSignals() {
  py::gil_scoped_acquire acquire;
  if (PyErr_CheckSignals() != 0) throw py::error_already_set();
}

// Trains on (x, y): `options` are train's flags by name without dashes (every value as its text), the same as the
// CLI's; returns the model (weights, bias: they score the raw features) and the JSON report's text.
py::dict TrainOnArrays(const std::map<std::string, std::string>& options, const py::object& x, const FloatArray& y,
                       const FloatArray& weights, const py::object& x_test, const FloatArray& y_test) {
  RunConfig config;
  for (const auto& [name, value] : options) SetParam(config, name, value);
  ResolveRunConfig(config, 1, DataOrigin::kInMemory);
  Dataset train = ToDataset({"X", "y"}, x, y, weights);
  train.source = "arrays";
  std::optional<Dataset> test;
  if (!x_test.is_none()) {
    test = ToDataset({"X_test", "y_test"}, x_test, y_test, FloatArray());
    test->source = "test arrays";
    if (test->num_features() != train.num_features()) {
      throw ConfigError("X_test", StrCat("has ", test->num_features(), " features; X has ", train.num_features()));
    }
  }
  RunOutcome outcome;
  {
    py::gil_scoped_release release;  // training never touches Python objects
    ThreadPool pool(config.threads);
    RunData data = PrepareRunData(config, std::move(train), std::move(test));
    std::unique_ptr<IBackend> backend = MakeBackend(config, pool);
    // Ctrl-C: Python's handler only sets a flag; raise it after each epoch and, within an epoch, between steps
    // (every 64th step, at most every 20 ms: taking the GIL at every step of batch-1 SGD would cost time).
    backend->SetStepCheck([steps = uint64_t{0}, last = std::chrono::steady_clock::now()]() mutable {
      if (++steps % 64 != 0) return;
      const auto now = std::chrono::steady_clock::now();
      if (now - last < std::chrono::milliseconds(20)) return;
      last = now;
      RaisePendingSignals();
    });
    RunCallbacks callbacks;
    callbacks.on_epoch = [](const EpochRecord&) { RaisePendingSignals(); };
    outcome = TrainAndEvaluate(config, data, *backend, SingleProcess(), pool, callbacks);
    if (!config.out.empty() || !config.liblinear_out.empty() || !config.report.empty()) {
      WriteOutputs(config, outcome, "python: pimopt.train");
    }
  }
  const LinearModel& m = outcome.result.model;
  py::array_t<float> weights_out(static_cast<py::ssize_t>(m.weights.size()));
  std::copy(m.weights.begin(), m.weights.end(), weights_out.mutable_data());
  py::dict result;
  result["coef"] = weights_out;
  result["intercept"] = m.bias;
  result["report"] = outcome.report.dump();
  return result;
}

// A dataset the CLI can read (a file or a built-in name such as "fashion-mnist" or "sparse:rows=1000"), with the
// source options of train (--input-format, --positive-classes, --storage) by name: X dense (float32) or the CSR
// arrays (indptr, indices, data, n_features), and y (+1 / -1).
py::tuple LoadForPython(const std::string& spec, const std::map<std::string, std::string>& options) {
  RunConfig config;
  for (const auto& [name, value] : options) SetParam(config, name, value);
  Dataset d;
  {
    py::gil_scoped_release release;
    ThreadPool pool(0);
    d = LoadDataset(spec, config.source, &pool);
  }
  py::array_t<float> y(static_cast<py::ssize_t>(d.num_rows()));
  std::copy(d.labels().begin(), d.labels().end(), y.mutable_data());
  if (d.is_sparse()) {
    const CsrMatrix& m = d.csr();
    py::array_t<int64_t> indptr(static_cast<py::ssize_t>(m.row_ptr.size()));
    py::array_t<int32_t> indices(static_cast<py::ssize_t>(m.col.size()));
    py::array_t<float> data(static_cast<py::ssize_t>(m.val.size()));
    std::copy(m.row_ptr.begin(), m.row_ptr.end(), indptr.mutable_data());
    std::copy(m.col.begin(), m.col.end(), indices.mutable_data());
    std::copy(m.val.begin(), m.val.end(), data.mutable_data());
    return py::make_tuple(py::make_tuple(indptr, indices, data, d.num_features()), y);
  }
  py::array_t<float> x({static_cast<py::ssize_t>(d.num_rows()), static_cast<py::ssize_t>(d.num_features())});
  std::copy(d.dense_values().begin(), d.dense_values().end(), x.mutable_data());
  return py::make_tuple(x, y);
}

// A hardware profile's fields (name -> value as text), after `overrides` ("field=value,..."), as `pimopt profile`.
std::map<std::string, std::string> ProfileForPython(const std::string& name, const std::string& overrides) {
  const pim::HardwareProfile profile = pim::MakeProfile(name, overrides);
  std::map<std::string, std::string> fields;
  const auto& table = pim::ProfileFields();
  for (const auto& e : table.entries()) fields[e.info.name] = table.GetText(profile, e.info.name);
  return fields;
}

// The emulator's validation table (PrIM-style microbenchmarks against published hardware numbers) on a profile.
py::list ValidateForPython(const std::string& name, const std::string& overrides) {
  const pim::HardwareProfile profile = pim::MakeProfile(name, overrides);
  std::vector<pim::ValidationRow> rows;
  {
    py::gil_scoped_release release;
    rows = pim::ValidationTable(profile);
  }
  py::list out;
  for (const pim::ValidationRow& r : rows) {
    py::dict row;
    row["benchmark"] = r.benchmark;
    row["modeled"] = r.modeled;
    row["published"] = r.published;
    row["error"] = r.Error();
    row["tolerance"] = r.tolerance;
    row["unit"] = r.unit;
    row["ok"] = r.Ok();
    out.append(row);
  }
  return out;
}

// A JSON value (the CLI's --json output) as Python objects.
py::object FromJson(const nlohmann::json& value) { return py::module_::import("json").attr("loads")(value.dump()); }

// One run of a ported PrIM benchmark (prim.h) on an emulated system of a profile, checked against its host
// reference: the modeled times PrIM's host program measures, the slowest DPU's cycles, counts.
// Applies `options` (name -> text, as the CLI's flags without dashes) through `table`'s declared checks: the same
// parser, bounds and messages as the command's flags.
template <typename Config>
void ApplyOptions(const ParamTable<Config>& table, Config& config, const std::map<std::string, std::string>& options) {
  for (const auto& [name, text] : options) table.SetText(config, name, text);
}

py::object RunPrimForPython(const std::string& benchmark, const std::map<std::string, std::string>& options,
                            const std::string& name, const std::string& overrides) {
  pim::prim::Find(benchmark);
  pim::prim::RunRequest request;
  ApplyOptions(pim::prim::RequestParams(), request, options);
  const pim::HardwareProfile profile = pim::MakeProfile(name, overrides);
  pim::prim::RunResult r;
  {
    py::gil_scoped_release release;
    r = pim::prim::Run(benchmark, request, profile);
  }
  return FromJson(pim::validation::PrimRunJson(r, request.tasklets, name, profile));
}

// The leave-one-benchmark-out validation against the hardware measurements in `path` (hw_validation.h).
py::object ValidateKernelsForPython(const std::string& path, const std::map<std::string, std::string>& options,
                                    const std::string& name, const std::string& overrides) {
  pim::validation::RunOptions run_options;
  ApplyOptions(pim::validation::ValidateParams(), run_options, options);
  const pim::HardwareProfile profile = pim::MakeProfile(name, overrides);
  pim::validation::Report report;
  {
    py::gil_scoped_release release;
    const std::vector<pim::validation::HwRow> rows = pim::validation::ReadHwData(path);
    report = pim::validation::LeaveOneOut(pim::validation::RunRows(rows, profile, run_options), profile);
  }
  return FromJson(pim::validation::ReportJson(report, path, name));
}

// The planner (plan.h) on a data source with train's options by name; returns the plan as `pimopt plan --json`
// prints it.
py::object PlanForPython(const std::map<std::string, std::string>& options,
                         const std::map<std::string, std::string>& plan_options_text) {
  RunConfig base;
  for (const auto& [name, value] : options) SetParam(base, name, value);
  PlanOptions plan_options;
  ApplyOptions(PlanParams(), plan_options, plan_options_text);
  Plan plan;
  {
    py::gil_scoped_release release;
    plan = MakePlan(base, plan_options);
  }
  return FromJson(PlanJson(plan));
}

// The declarations (core/params_json.h) of the parameters each entry point takes by name: train's (train, the
// estimators, plan's options), plan's own, run_prim's, validate_kernels' and load_dataset's.
py::object ParamInfos() {
  nlohmann::json out = nlohmann::json::object();
  auto add = [&](const char* entry, const auto& table) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& e : table.entries()) list.push_back(ParamInfoJson(e.info));
    out[entry] = list;
  };
  add("train", RunParams());
  add("plan", PlanParams());
  add("run_prim", pim::prim::RequestParams());
  add("validate_kernels", pim::validation::ValidateParams());
  add("load_dataset", SourceParams());
  return FromJson(out);
}

std::vector<std::string> ParamNames() {
  std::vector<std::string> names;
  for (const auto& e : RunParams().entries()) names.push_back(e.info.name);
  return names;
}

}  // namespace
}  // namespace pimopt

PYBIND11_MODULE(_core, m) {
  m.doc() = "pimopt's native core: training over arrays (use the pimopt package, not this module)";
  // pimopt's errors with the CLI's messages: the user's input (a parameter, the data) as ValueError, the rest
  // (e.g. a PIM kernel's failure) as RuntimeError. The later registration is tried first.
  py::register_exception<pimopt::Error>(m, "Error", PyExc_RuntimeError);
  py::register_exception<pimopt::InputError>(m, "InputError", PyExc_ValueError);
  m.def("train", &pimopt::TrainOnArrays, py::arg("options"), py::arg("X"), py::arg("y"), py::arg("sample_weight"),
        py::arg("X_test"), py::arg("y_test"),
        "Trains on X, y with train's options (name -> text); returns coef, intercept and the JSON report's text");
  m.def("plan", &pimopt::PlanForPython, py::arg("options"), py::arg("plan_options"),
        "the planner: per algorithm a convergence pilot and a timed epoch; the plan as `pimopt plan --json`");
  m.def("param_infos", &pimopt::ParamInfos,
        "each entry point's parameters by name: type, bounds, choices, default (as pimopt params --format json)");
  m.def("param_names", &pimopt::ParamNames, "the names of train's parameters, as the CLI's flags without dashes");
  m.def("load_dataset", &pimopt::LoadForPython, py::arg("spec"), py::arg("options"),
        "a file or built-in dataset as (X, y): X dense or CSR arrays (indptr, indices, data, n_features)");
  m.def("profile_names", &pimopt::pim::ProfileNames, "the hardware profiles' names");
  m.def("profile", &pimopt::ProfileForPython, py::arg("name"), py::arg("overrides"),
        "a hardware profile's fields (name -> value text) after 'field=value,...' overrides");
  m.def("run_prim", &pimopt::RunPrimForPython, py::arg("benchmark"), py::arg("options"), py::arg("name"),
        py::arg("overrides"),
        "one run of a ported PrIM benchmark: modeled phase times, the slowest DPU's cycles, counts");
  m.def(
      "prim_benchmarks",
      [] {
        std::vector<std::string> names;
        for (const auto& b : pimopt::pim::prim::Benchmarks()) names.push_back(b.name);
        return names;
      },
      "the ported PrIM benchmarks' names");
  m.def("default_hw_data_path", &pimopt::pim::validation::DefaultHwDataPath,
        "where the hardware measurements are read from when no path is given");
  m.def("validate_kernels", &pimopt::ValidateKernelsForPython, py::arg("path"), py::arg("options"), py::arg("name"),
        py::arg("overrides"), "leave-one-benchmark-out validation of the timing model against hardware measurements");
  m.def("validate", &pimopt::ValidateForPython, py::arg("name"), py::arg("overrides"),
        "the emulator's validation table on a profile: benchmark, modeled, published, error, tolerance, unit, ok");
}
