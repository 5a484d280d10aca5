#include "pimopt/run/pipeline.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "pimopt/algorithms/algorithm.h"
#include "pimopt/backends/registry.h"
#include "pimopt/core/atomic_file.h"
#include "pimopt/core/error.h"
#include "pimopt/core/stopwatch.h"
#include "pimopt/core/file_util.h"
#include "pimopt/data/binary_format.h"
#include "pimopt/data/sources.h"
#include "pimopt/data/transform.h"
#include "pimopt/model/model_io.h"
#include "pimopt/run/report.h"

namespace pimopt {
namespace {

using Clock = std::chrono::steady_clock;


// Rows [begin, end) of a whole dataset, as a Dataset of their own.
Dataset SliceRows(const Dataset& whole, uint64_t begin, uint64_t end) {
  std::vector<uint32_t> rows(end - begin);
  for (uint64_t i = begin; i < end; ++i) rows[i - begin] = static_cast<uint32_t>(i);
  Dataset part = whole.SelectRows(rows);
  part.source = whole.source;
  return part;
}

// The storage choice (dense / sparse) for a dataset split over processes, made once from all parts, so that every
// process and a single process holding the whole set store it alike (dense and sparse paths round differently).
void AgreeOnStorage(Dataset& part, const SourceOptions& options, Communicator& comm) {
  if (options.storage != StorageChoice::kAuto) {
    part = ApplyStorageChoice(std::move(part), options);
    return;
  }
  int64_t totals[3] = {part.is_sparse() ? 1 : 0, static_cast<int64_t>(part.num_rows()),
                       static_cast<int64_t>(part.num_stored())};
  comm.AllreduceSum(totals);
  if (totals[0] == 0) return;  // dense everywhere: auto keeps dense data dense
  if (AutoStoresDense(static_cast<uint64_t>(totals[1]), part.num_features(), static_cast<uint64_t>(totals[2]),
                      options)) {
    part = part.ToDense();
  }
}

// One process: the whole training set and the test set (--test, --test-fraction or the built-in's own).
void LoadWhole(const RunConfig& c, ThreadPool& pool, RunData& d) {
  d.train = LoadDataset(c.data, c.source, &pool);
  if (!c.test.empty()) {
    d.test = LoadDataset(c.test, c.source, &pool);
  } else if (c.test_fraction > 0) {
    TrainTest split = SplitTrainTest(d.train, c.test_fraction, c.train.seed);
    d.train = std::move(split.train);
    d.test = std::move(split.test);
  } else {
    d.test = LoadCompanionTestSet(c.data, c.source, &pool);
  }
  d.partition = Partition::Whole(d.train.num_rows(), c.train.workers);
}

// A binary cache of which each process read only its rows: rank 0 streams the whole file once to check its
// checksum, and every rank fails alike on a mismatch.
void VerifyBinaryOnRoot(const std::string& spec, Communicator& comm) {
  if (IsBuiltinName(spec) || !IsBinaryDatasetFile(spec)) return;
  comm.RunOnRoot([&] { VerifyBinaryDataset(spec); });
}

// A process of several: its rows of the training set and its evaluation slice of the test set.
void LoadPart(const RunConfig& c, Communicator& comm, ThreadPool& pool, RunData& d) {
  const std::optional<uint64_t> train_rows = CountRowsCheaply(c.data);
  if (train_rows.has_value() && c.test_fraction == 0) {
    d.partition = Partition::ForRank(*train_rows, c.train.workers, comm.rank(), comm.size());
    d.train = LoadRawRows(c.data, false, d.partition.first_row, d.partition.first_row + d.partition.local_rows, &pool);
    VerifyBinaryOnRoot(c.data, comm);
    AgreeOnStorage(d.train, c.source, comm);
  } else {
    d.notes.push_back(StrCat("every rank parses ", c.data,
                             " whole and keeps its rows; convert it to a binary cache ('pimopt convert IN OUT.bin') "
                             "so that each rank reads only its rows"));
    Dataset whole = LoadDataset(c.data, c.source, &pool);
    if (c.test_fraction > 0) {
      TrainTest split = SplitTrainTest(whole, c.test_fraction, c.train.seed);
      whole = std::move(split.train);
      d.test = std::move(split.test);
    }
    d.partition = Partition::ForRank(whole.num_rows(), c.train.workers, comm.rank(), comm.size());
    d.train = SliceRows(whole, d.partition.first_row, d.partition.first_row + d.partition.local_rows);
  }
  if (c.test_fraction > 0) {
    const RowRange r = EvaluationSlice(d.test->num_rows(), comm.rank(), comm.size());
    d.test = SliceRows(*d.test, r.begin, r.end);
    return;
  }
  const std::string test_spec = c.test.empty() ? c.data : c.test;
  const bool companion = c.test.empty();
  if (const auto rows = CountRowsCheaply(test_spec, companion)) {
    const RowRange r = EvaluationSlice(*rows, comm.rank(), comm.size());
    d.test = LoadRawRows(test_spec, companion, r.begin, r.end, &pool);
    if (!companion) VerifyBinaryOnRoot(test_spec, comm);
    AgreeOnStorage(*d.test, c.source, comm);
    return;
  }
  d.test = companion ? LoadCompanionTestSet(c.data, c.source, &pool) : LoadDataset(c.test, c.source, &pool);
  if (d.test) {
    const RowRange r = EvaluationSlice(d.test->num_rows(), comm.rank(), comm.size());
    d.test = SliceRows(*d.test, r.begin, r.end);
  }
}

// --scale: the scaler fitted on all processes' training rows, applied to this process's rows; the test rows counted.
void FitScalerAndCount(const RunConfig& c, Communicator& comm, RunData& d) {
  // --positive-classes names classes of data labelled by class (IDX); data labelled +-1 has none to name.
  if (c.given.count("positive-classes") > 0 && d.train.positive_classes.empty()) {
    throw ConfigError("--positive-classes", StrCat("applies to data labelled by class (IDX: fashion-mnist, "
                                                   "*-images-idx3* files), and ",
                                                   d.train.source, " is labelled +1/-1 already"));
  }
  if (c.scale == ScaleChoice::kMinMax) {
    // The ranges and the scaler: 4 vectors of a float per feature.
    CheckMemoryNeed(16 * static_cast<uint64_t>(d.train.num_features()),
                    StrCat("per-feature scaling of ", d.train.num_features(), " features"), "--scale");
    // Ranges over all processes' rows (min / max are exact in any order): the scaler one process would fit.
    FeatureRanges ranges = FeatureRanges::Of(d.train);
    comm.AllreduceMin(ranges.lo);
    comm.AllreduceMax(ranges.hi);
    d.scaler = FeatureScaler::FromRanges(ranges);
    d.scaler->Apply(d.train);
    if (d.test) d.scaler->Apply(*d.test);
  }
  // Numbers change hands here: the algorithms and the metrics assume finite features.
  CheckFiniteValues(d.train, "the training set");
  if (d.test) CheckFiniteValues(*d.test, "the test set");
  d.total_test_rows = comm.SumU64(d.test ? d.test->num_rows() : 0);
  // One class only trains a model that predicts it everywhere (as LIBLINEAR does), at a perfect training accuracy:
  // said, not silent.
  const uint64_t positives = comm.SumU64(d.train.CountPositives()), rows = comm.SumU64(d.train.num_rows());
  if (rows > 0 && (positives == 0 || positives == rows)) {
    d.notes.push_back(StrCat("every training row is ", positives == 0 ? "negative" : "positive",
                             ": the model predicts that class for every row (check the labels, or "
                             "--positive-classes)"));
  }
}

}  // namespace

RunData LoadRunData(const RunConfig& c, Communicator& comm, ThreadPool& pool) {
  const auto start = Clock::now();
  RunData d;
  if (comm.size() == 1) {
    LoadWhole(c, pool, d);
  } else {
    LoadPart(c, comm, pool, d);
  }
  FitScalerAndCount(c, comm, d);
  d.load_seconds = SecondsSince(start);
  return d;
}

RunData PrepareRunData(const RunConfig& c, Dataset train, std::optional<Dataset> test) {
  const auto start = Clock::now();
  // Arrays are stored as a file of the same values would be (--storage auto: by density): the storage decides the
  // min-max scaling (a sparse set is divided by max |x|, unshifted), so a dense array of sparse data trained another
  // model than the same data as CSR or as a LIBSVM file.
  auto stored_as_a_file_would_be = [&](Dataset d) {
    if (c.source.storage == StorageChoice::kAuto && !d.is_sparse() &&
        !AutoStoresDense(d.num_rows(), d.num_features(), d.CountNonZeros(), c.source)) {
      d = d.ToSparse();
    }
    return ApplyStorageChoice(std::move(d), c.source);
  };
  RunData d;
  d.train = stored_as_a_file_would_be(std::move(train));
  if (test) d.test = stored_as_a_file_would_be(std::move(*test));
  d.partition = Partition::Whole(d.train.num_rows(), c.train.workers);
  FitScalerAndCount(c, SingleProcess(), d);
  d.load_seconds = SecondsSince(start);
  return d;
}

std::unique_ptr<IBackend> MakeBackend(const RunConfig& c, ThreadPool& pool) {
  return MakeBackend(c.backend, pool, c.backend_options);
}

RunOutcome TrainAndEvaluate(const RunConfig& c, const RunData& data, IBackend& backend, Communicator& comm,
                            ThreadPool& pool, const RunCallbacks& callbacks) {
  TrainOptions options;
  options.eval_pool = &pool;
  options.evaluate_train = !c.no_train_metrics;
  // A target on the training set (no test set) is looked for in every epoch's training metrics: spaced, the first
  // epoch that reached it could go unseen.
  const bool train_target = (c.target_accuracy > 0 || c.target_auc > 0) && !data.test;
  options.spaced_train_metrics = !c.train_metrics_every_epoch && !train_target;
  options.checkpoint_path = c.checkpoint;
  options.checkpoint_every = c.checkpoint.empty() ? 0 : c.checkpoint_every;
  options.resume = c.resume;
  options.resume_options = ResumeOptions(c);
  options.comm = &comm;
  options.partition = &data.partition;
  options.after_epoch = callbacks.after_epoch;
  options.on_epoch = callbacks.on_epoch;
  RunOutcome outcome;
  outcome.config = c;
  if (c.cv_folds > 0) {
    PIMOPT_CHECK(comm.size() == 1, "--cv runs in one process");
    outcome.cross_validation = CrossValidate(c, data.train, pool, callbacks.on_fold);
  }
  outcome.result = Train(data.train, data.test ? &*data.test : nullptr, c.train, backend, options);
  if (data.scaler) {
    LinearModel folded = FoldScalerIntoModel(outcome.result.model, *data.scaler);
    size_t feature = 0;
    const double cancellation = FoldedScoreCancellation(outcome.result.model, folded, *data.scaler, &feature);
    if (cancellation > kFoldedCancellationNote) {
      const float lo = data.scaler->offset()[feature], range = 1.0f / data.scaler->scale()[feature];
      outcome.notes.push_back(
          StrCat("the saved model folds the min-max scaling into its weights (it scores raw features): feature ",
                 feature + 1, " lies in [", FormatFloat(lo), ", ", FormatFloat(lo + range),
                 "], far from 0 for its range, and its terms cancel about ", FormatDouble(std::round(cancellation)),
                 "-fold in single precision, so the saved model's predictions near the boundary can differ from this "
                 "run's metrics; to save a model of the scaled features, scale the data beforehand and train with "
                 "--scale none"));
    }
    outcome.result.model = std::move(folded);
  }
  const EpochProjector* projector = backend.projector();
  if (projector != nullptr && (c.project_dpus > 0 || c.project_rows_per_dpu > 0)) {
    const uint32_t dpus = c.project_dpus > 0 ? c.project_dpus : static_cast<uint32_t>(c.train.workers);
    const uint64_t rows = c.project_rows_per_dpu > 0
                              ? c.project_rows_per_dpu
                              : (data.train.num_rows() + c.train.workers - 1) / c.train.workers;
    outcome.projection = projector->Project(dpus, rows, static_cast<int>(outcome.result.epochs.size()));
    outcome.projection->CheckFinite();
  }
  ReportInputs inputs;
  inputs.config = &c;
  inputs.data = &data;
  inputs.result = &outcome.result;
  inputs.backend_counters = outcome.result.backend_counters ? *outcome.result.backend_counters : backend.Counters();
  inputs.projection = outcome.projection;
  inputs.cross_validation = outcome.cross_validation ? &*outcome.cross_validation : nullptr;
  inputs.pool = &pool;
  inputs.ranks = comm.size();
  // The PIM backend quantizes features to int8 over [-1, 1]: values beyond were clipped, silently for the model.
  if (const auto it = inputs.backend_counters.find("quantization_saturations");
      it != inputs.backend_counters.end() && it->second > 0) {
    outcome.notes.push_back(
        StrCat("the PIM backend quantizes features to [-1, 1] on the DPUs: ", FormatDouble(it->second),
               " training values lay beyond and were clipped, so the model learned from other data than the run's",
               c.scale == ScaleChoice::kNone ? "; scale the features (--scale minmax, the default)" : ""));
  }
  inputs.notes = &outcome.notes;
  outcome.report = BuildReport(inputs);
  return outcome;
}

LinearModel FoldScalerIntoModel(const LinearModel& model, const FeatureScaler& scaler) {
  LinearModel raw = model;
  double bias = model.bias;
  const size_t n = std::min(model.weights.size(), scaler.scale().size());
  bool shifted = false;
  for (size_t j = 0; j < n; ++j) {
    const double w = static_cast<double>(model.weights[j]) * scaler.scale()[j];
    raw.weights[j] = static_cast<float>(w);
    bias -= w * scaler.offset()[j];
    shifted |= scaler.offset()[j] != 0.0f && model.weights[j] != 0.0f;
  }
  raw.bias = static_cast<float>(bias);
  if (shifted) raw.fit_bias = true;  // the offsets become a bias even when training fit none
  bool finite = std::isfinite(raw.bias);
  for (float w : raw.weights) finite &= std::isfinite(w);
  if (!finite) {
    throw ConfigError("--scale", "the model trained on scaled features has no finite form on the raw features "
                                 "(a weight or the bias folded back through the scaling exceeds float's range); use "
                                 "--scale none");
  }
  return raw;
}

double FoldedScoreCancellation(const LinearModel& scaled_model, const LinearModel& folded_model,
                               const FeatureScaler& scaler, size_t* feature) {
  const size_t n = std::min(scaled_model.weights.size(), scaler.scale().size());
  double scaled = std::fabs(scaled_model.bias), raw = std::fabs(folded_model.bias), largest = -1;
  for (size_t j = 0; j < n; ++j) {
    scaled += std::fabs(scaled_model.weights[j]);
    const double scale = scaler.scale()[j], lo = scaler.offset()[j];
    if (scale == 0) continue;  // a constant feature: its scaled value is 0
    const double term = std::fabs(folded_model.weights[j]) * std::max(std::fabs(lo), std::fabs(lo + 1 / scale));
    raw += term;
    if (term > largest) {
      largest = term;
      if (feature) *feature = j;
    }
  }
  return scaled > 0 ? raw / scaled : 1.0;
}

void WriteOutputs(const RunConfig& c, const RunOutcome& outcome, const std::string& command_line) {
  OutputBatch batch;  // all of them or none
  if (!c.out.empty()) {
    std::string options;
    for (const auto& [name, value] : ResultOptions(c)) options += StrCat(options.empty() ? "" : " ", name, "=", value);
    const std::string scaled = c.scale == ScaleChoice::kNone
                                   ? ""
                                   : "\nfeatures: raw (the training's --scale is folded into the weights and bias)";
    WriteModel(outcome.result.model, c.out, StrCat("trained by: ", command_line, "\noptions: ", options, scaled));
  }
  if (!c.liblinear_out.empty()) WriteLiblinearModel(outcome.result.model, c.liblinear_out);
  if (!c.report.empty()) {
    nlohmann::json report = outcome.report;
    report["command_line"] = command_line;
    WriteJsonFile(report, c.report);
  }
  batch.Commit();
}

RunOutcome RunTraining(RunConfig config, Communicator& comm, const std::string& command_line,
                       const RunCallbacks& callbacks) {
  ResolveRunConfig(config, comm.size());
  ThreadPool pool(config.threads);
  const RunData data = LoadRunData(config, comm, pool);
  if (callbacks.on_start) callbacks.on_start(config, data, pool);
  std::unique_ptr<IBackend> backend = MakeBackend(config, pool);
  RunOutcome outcome = TrainAndEvaluate(config, data, *backend, comm, pool, callbacks);
  if (callbacks.before_write) callbacks.before_write(outcome.report);
  if (comm.rank() == 0) WriteOutputs(config, outcome, command_line);
  return outcome;
}

}  // namespace pimopt
