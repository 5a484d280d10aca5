// The Python package's native core (`pimopt._core`): the library's run stages over arrays the caller holds. The
// estimators and the argument checks are Python (python/pimopt/); this file only converts and calls.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "pimopt/core/error.h"
#include "pimopt/run/pipeline.h"
#include "pimopt/run/run_config.h"

namespace py = pybind11;

namespace pimopt {
namespace {

using FloatArray = py::array_t<float, py::array::c_style | py::array::forcecast>;

// A dense row-major float32 matrix and its labels (+1 / -1) and weights (empty: none) as a Dataset (one copy).
Dataset DenseDataset(const FloatArray& x, const FloatArray& y, const FloatArray& weights) {
  if (x.ndim() != 2) throw ConfigError("X", "must be a 2-D array");
  const auto rows = static_cast<size_t>(x.shape(0)), features = static_cast<size_t>(x.shape(1));
  std::vector<float> values(rows * features);
  if (!values.empty()) std::memcpy(values.data(), x.data(), values.size() * sizeof(float));
  Dataset d = Dataset::FromDense(features, std::move(values), std::vector<float>(y.data(), y.data() + y.size()));
  if (weights.size() > 0) d.set_weights(std::vector<float>(weights.data(), weights.data() + weights.size()));
  return d;
}

// CSR arrays (row pointers, column numbers, values) as a Dataset; CheckCsr names what is wrong.
Dataset CsrDataset(py::array_t<int64_t, py::array::c_style | py::array::forcecast> indptr,
                   py::array_t<int64_t, py::array::c_style | py::array::forcecast> indices, const FloatArray& values,
                   size_t features, const FloatArray& y, const FloatArray& weights) {
  CsrMatrix m;
  m.row_ptr.resize(static_cast<size_t>(indptr.size()));
  for (size_t i = 0; i < m.row_ptr.size(); ++i) {
    if (indptr.data()[i] < 0) throw ConfigError("X", "negative row pointer in the CSR matrix");
    m.row_ptr[i] = static_cast<uint64_t>(indptr.data()[i]);
  }
  m.col.resize(static_cast<size_t>(indices.size()));
  for (size_t i = 0; i < m.col.size(); ++i) {
    const int64_t c = indices.data()[i];
    if (c < 0 || static_cast<uint64_t>(c) >= features) throw ConfigError("X", "column index out of range");
    m.col[i] = static_cast<uint32_t>(c);
  }
  m.val.assign(values.data(), values.data() + values.size());
  const size_t rows = m.row_ptr.empty() ? 0 : m.row_ptr.size() - 1;
  if (const std::string problem = CheckCsr(m, rows, features); !problem.empty()) throw ConfigError("X", problem);
  Dataset d = Dataset::FromCsr(features, std::move(m), std::vector<float>(y.data(), y.data() + y.size()));
  if (weights.size() > 0) d.set_weights(std::vector<float>(weights.data(), weights.data() + weights.size()));
  return d;
}

// Dense (a 2-D array) or sparse (a tuple: indptr, indices, data, n_features) input.
Dataset ToDataset(const py::object& x, const FloatArray& y, const FloatArray& weights) {
  if (py::isinstance<py::tuple>(x)) {
    const auto t = x.cast<py::tuple>();
    if (t.size() != 4) throw ConfigError("X", "a sparse matrix is passed as (indptr, indices, data, n_features)");
    return CsrDataset(t[0].cast<py::array_t<int64_t, py::array::c_style | py::array::forcecast>>(),
                      t[1].cast<py::array_t<int64_t, py::array::c_style | py::array::forcecast>>(),
                      t[2].cast<FloatArray>(), t[3].cast<size_t>(), y, weights);
  }
  return DenseDataset(x.cast<FloatArray>(), y, weights);
}

// Trains on (x, y): `options` are train's flags by name without dashes (every value as its text), the same as the
// CLI's; returns the model (weights, bias: they score the raw features) and the JSON report's text.
py::dict TrainOnArrays(const std::map<std::string, std::string>& options, const py::object& x, const FloatArray& y,
               const FloatArray& weights, const py::object& x_test, const FloatArray& y_test) {
  RunConfig config;
  for (const auto& [name, value] : options) SetParam(config, name, value);
  ResolveRunConfig(config, 1, DataOrigin::kInMemory);
  Dataset train = ToDataset(x, y, weights);
  train.source = "arrays";
  std::optional<Dataset> test;
  if (!x_test.is_none()) {
    test = ToDataset(x_test, y_test, FloatArray());
    test->source = "test arrays";
  }
  RunOutcome outcome;
  {
    py::gil_scoped_release release;  // training never touches Python objects
    ThreadPool pool(config.threads);
    RunData data = PrepareRunData(config, std::move(train), std::move(test));
    std::unique_ptr<IBackend> backend = MakeBackend(config, pool);
    RunCallbacks callbacks;
    callbacks.on_epoch = [](const EpochRecord&) {
      py::gil_scoped_acquire acquire;  // Ctrl-C: Python's handler set a flag; raise it between epochs
      if (PyErr_CheckSignals() != 0) throw py::error_already_set();
    };
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
  m.def("param_names", &pimopt::ParamNames, "the names of train's parameters, as the CLI's flags without dashes");
}
