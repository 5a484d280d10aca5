#include "pimopt/run/cross_validation.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>

#include "pimopt/algorithms/algorithm.h"
#include "pimopt/backends/registry.h"
#include "pimopt/core/error.h"
#include "pimopt/core/file_util.h"
#include "pimopt/core/rng.h"
#include "pimopt/data/transform.h"
#include "pimopt/run/pipeline.h"

namespace pimopt {
namespace {

constexpr uint64_t kFoldStream = 0xC5F01D;  // the folds' own random stream (independent of shuffles and splits)

// Mean and (population) standard deviation of each score over the folds.
void Summarize(CrossValidation& cv) {
  const double n = static_cast<double>(cv.per_fold.size());
  auto fields = [](Metrics& m) {
    return std::array<double*, 5>{&m.accuracy, &m.auc, &m.log_loss, &m.hinge_loss, &m.objective};
  };
  for (Metrics& m : cv.per_fold) {
    cv.mean.rows += m.rows;
    auto src = fields(m);
    auto dst = fields(cv.mean);
    for (size_t i = 0; i < src.size(); ++i) *dst[i] += *src[i] / n;
  }
  cv.stddev.rows = cv.mean.rows;
  for (Metrics& m : cv.per_fold) {
    auto src = fields(m);
    auto mean = fields(cv.mean);
    auto dst = fields(cv.stddev);
    for (size_t i = 0; i < src.size(); ++i) *dst[i] += (*src[i] - *mean[i]) * (*src[i] - *mean[i]) / n;
  }
  for (double* v : fields(cv.stddev)) *v = std::sqrt(*v);
}

}  // namespace

std::vector<uint32_t> StratifiedFolds(std::span<const float> labels, uint32_t k, uint64_t seed) {
  PIMOPT_CHECK(k >= 1);
  std::vector<uint32_t> fold(labels.size(), 0);
  const std::vector<uint32_t> order = Permutation(labels.size(), StreamSeed(seed, kFoldStream));
  uint64_t dealt[2] = {0, 0};  // per class: negatives, positives
  for (uint32_t row : order) {
    const int c = labels[row] > 0 ? 1 : 0;
    fold[row] = static_cast<uint32_t>(dealt[c]++ % k);
  }
  return fold;
}

std::vector<uint32_t> CheckCrossValidation(const RunConfig& config, const Dataset& train) {
  const uint32_t k = config.cv_folds;
  PIMOPT_CHECK(k >= 2);
  uint64_t positives = 0;
  for (float y : train.labels()) positives += y > 0 ? 1 : 0;
  const uint64_t negatives = train.num_rows() - positives;
  if (positives < k || negatives < k) {
    throw ConfigError("--cv", StrCat(k, " folds need at least ", k, " rows of each class; the training set has ",
                                     positives, " positive and ", negatives, " negative rows"));
  }
  std::vector<uint32_t> fold = StratifiedFolds(train.labels(), k, config.train.seed);
  std::vector<uint64_t> held(k, 0);
  for (uint32_t f : fold) ++held[f];
  // A fold's training part must still hold what the algorithm needs (e.g. GA-SGD's global batch).
  for (uint32_t f = 0; f < k; ++f) {
    const uint64_t fit_rows = train.num_rows() - held[f];
    try {
      config.train.Validate(fit_rows);
    } catch (const ConfigError& e) {
      throw ConfigError("--cv", StrCat("with ", k, " folds each training part has about ", fit_rows,
                                       " rows: ", e.what()));
    }
  }
  return fold;
}

namespace {

// The objective without its L2 strength: what a warm start must share (the loss, the class costs, whether the bias
// is fitted and regularized).
Objective WithoutL2(Objective objective) {
  objective.l2 = 0;
  return objective;
}

// Whether a run's end does not depend on where it starts, so that a warm start changes its cost and not its score:
// a method without a learning rate stops on its certificate (cocoa, newton), and the plateau schedule decays its
// learning rate until the objective stops moving. A given learning rate for given epochs ends where its start and
// its epochs take it: warm, a setting's score would also be the settings' before it (a grid over --lr picked 0.002,
// scored 0.92 warm after 0.05's training and 0.71 alone, over 0.05's 0.92).
bool EndsWhereverItStarts(const RunConfig& config) {
  return !config.train.traits().uses_learning_rate || config.train.schedule == LrSchedule::kPlateau;
}

// Whether `set` is of the same kind as a run of `config` (the run replaces it), and whether it can warm-start it.
// The same objective but for L2: a state of another loss or costs, or with a bias where the run fits none (newton
// kept the state's bias, which it does not train with --no-bias: a fold scored 0.64 instead of 0.91), is another
// problem's.
bool SameKind(const FoldStateSet& set, const RunConfig& config) {
  return set.backend == config.backend && set.algorithm == config.train.algorithm &&
         set.workers == config.train.workers && WithoutL2(set.objective) == WithoutL2(config.train.objective);
}
bool CanWarmStart(const FoldStateSet& set, const RunConfig& config, uint32_t k) {
  return SameKind(set, config) && EndsWhereverItStarts(config) && set.per_fold.size() == k &&
         (!config.train.traits().row_duals || set.objective == config.train.objective ||
          FindBackend(config.backend).traits.rescales_row_duals);
}

// How many folds train at once: folds are independent trainings, so on a backend whose workers are threads they run
// one per host thread (a fold's phases then run inline on its thread, with the bits a fold gets alone), as many as
// the host threads, the folds and the memory for a copy of the training rows per fold allow.
int FoldsAtOnce(const RunConfig& config, const Dataset& train, const ThreadPool& pool, uint32_t k) {
  if (FindBackend(config.backend).traits.workers_are_devices) return 1;  // an emulated machine each: one at a time
  const uint64_t row_bytes = train.is_sparse() ? train.csr().val.size() * (sizeof(float) + sizeof(uint32_t)) +
                                                     train.num_rows() * sizeof(uint64_t)
                                               : uint64_t{train.num_rows()} * train.num_features() * sizeof(float);
  const uint64_t per_fold = 2 * std::max<uint64_t>(row_bytes, 1);  // the fold's rows and the backend's own state
  const uint64_t fit_in_memory = std::max<uint64_t>(1, AvailableMemoryBytes() / per_fold);
  return static_cast<int>(std::min<uint64_t>({static_cast<uint64_t>(pool.UsableThreads()), k, fit_in_memory}));
}

}  // namespace

CrossValidation CrossValidate(const RunConfig& config, const Dataset& train, ThreadPool& pool,
                              const std::function<void(uint32_t fold, const Metrics& metrics)>& on_fold,
                              FoldStates* warm) {
  const auto start = std::chrono::steady_clock::now();
  const uint32_t k = config.cv_folds;
  const std::vector<uint32_t> fold = CheckCrossValidation(config, train);
  CrossValidation cv;
  cv.folds = k;
  // A warm start must come from the same fold of the same rows: a state trained on rows that are this fold's
  // held-out rows (another --seed deals other folds) would score them as seen data.
  if (warm && warm->folds != fold) *warm = FoldStates{fold, {}};
  const FoldStateSet* from = nullptr;
  if (warm) {
    for (auto it = warm->sets.rbegin(); it != warm->sets.rend() && !from; ++it) {
      if (CanWarmStart(*it, config, k)) from = &*it;
    }
  }
  FoldStateSet next{config.backend, config.train.algorithm, config.train.workers, config.train.objective, {}, {}};
  if (warm) {
    next.per_fold.resize(k);
    next.l2.resize(k);
  }
  std::vector<Metrics> scores(k);
  std::vector<std::exception_ptr> errors(k);
  auto run_fold = [&](size_t f) {
    try {
      std::vector<uint32_t> fit_rows, held_rows;
      for (uint32_t r = 0; r < train.num_rows(); ++r) (fold[r] == f ? held_rows : fit_rows).push_back(r);
      Dataset fit = train.SelectRows(fit_rows), held = train.SelectRows(held_rows);
      // --scale minmax: scaled by the fold's own training rows, as the whole run is by its training set. The rows come
      // scaled by the whole training set, whose ranges the held-out rows shaped (with a held-out extreme value the
      // others' features shrank, and the fold scored what the run would not); scaling them again by the fit rows'
      // ranges is the affine map from the raw values that the fit rows alone give.
      if (config.scale == ScaleChoice::kMinMax) {
        const FeatureScaler scaler = FeatureScaler::Fit(fit);
        scaler.Apply(fit);
        scaler.Apply(held);
        CheckFiniteValues(held, StrCat("fold ", f + 1, "'s held-out rows"));
      }
      std::unique_ptr<IBackend> backend = MakeBackend(config, pool);
      TrainOptions options;  // no checkpoints, no training-set metrics: only the held-out fold is scored
      options.eval_pool = &pool;
      options.evaluate_train = false;
      options.evaluate_test_every_epoch = false;
      if (from) {
        options.warm_start = &from->per_fold[f];
        if (config.train.traits().row_duals) options.warm_start_l2 = from->l2[f];
      }
      options.keep_final_state = warm != nullptr;
      TrainResult result = Train(fit, &held, config.train, *backend, options);
      if (warm) {
        next.per_fold[f] = std::move(result.final_state);
        next.l2[f] = result.config.objective.l2;
      }
      scores[f] = *result.epochs.back().test;
    } catch (...) {
      errors[f] = std::current_exception();
    }
  };
  const int at_once = FoldsAtOnce(config, train, pool, k);
  if (at_once > 1) {
    pool.ParallelFor(k, run_fold, at_once);  // each fold's own phases run inline on its thread
  } else {
    for (uint32_t f = 0; f < k; ++f) run_fold(f);
  }
  for (uint32_t f = 0; f < k; ++f) {
    if (errors[f]) std::rethrow_exception(errors[f]);  // the first fold's error, whichever thread met it first
  }
  for (uint32_t f = 0; f < k; ++f) {
    cv.per_fold.push_back(scores[f]);
    if (on_fold) on_fold(f, cv.per_fold.back());
  }
  if (warm) {
    std::erase_if(warm->sets, [&](const FoldStateSet& set) { return SameKind(set, config); });
    warm->sets.push_back(std::move(next));
  }
  Summarize(cv);
  cv.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return cv;
}

}  // namespace pimopt
