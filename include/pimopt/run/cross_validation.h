// K-fold cross-validation of a training run (`pimopt train --cv K`, as LIBLINEAR's -v): the training rows are dealt
// into K folds, stratified by label and seeded; for each fold the run's configuration trains on the other K - 1
// folds, on the run's backend, and the fold is evaluated. The folds depend only on the labels, K and --seed, so the
// same seed gives the same folds and, the training being deterministic, the same scores on any thread count.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "pimopt/algorithms/backend.h"
#include "pimopt/core/thread_pool.h"
#include "pimopt/data/dataset.h"
#include "pimopt/model/metrics.h"
#include "pimopt/run/run_config.h"

namespace pimopt {

// fold[i] in 0..k-1 for every row: the rows of each label in a seeded random order, dealt round-robin (each fold
// gets floor or ceil of a label's rows / k, so every fold sees both classes when each class has k rows or more).
std::vector<uint32_t> StratifiedFolds(std::span<const float> labels, uint32_t k, uint64_t seed);

struct CrossValidation {
  uint32_t folds = 0;
  std::vector<Metrics> per_fold;  // each fold evaluated by the model trained on the others
  Metrics mean, stddev;           // over the folds (accuracy, auc, log and hinge loss, objective); rows: the total
  double seconds = 0;             // wall time of all folds (training and evaluation)
};

// Warm starts between cross-validations of one training set with the same folds (pimopt tune): the final backend
// states of earlier cross-validations, the latest of each kind. A fold starts from the most recent state of the same
// fold of the same rows (another --seed or --cv deals other folds), backend, algorithm and worker count. A dual
// method's model (AlgorithmTraits::row_duals) is w(beta) of its duals for one objective, so it also needs the same
// loss and costs; a state of another L2 strength is moved to this run's (IBackend::MoveRowDualsToL2, LIBLINEAR's
// warm start along C) where the backend can (BackendTraits::rescales_row_duals), and not used otherwise.
struct FoldStateSet {
  std::string backend, algorithm;
  int workers = 0;
  Objective objective;        // as configured (an auto L2 stays auto: each fold resolves it from its rows)
  std::vector<double> l2;     // each fold's L2 strength as its run resolved it
  std::vector<BackendState> per_fold;
};
struct FoldStates {
  std::vector<uint32_t> folds;      // the fold of every row: a state warm-starts only the same fold of the same rows
  std::vector<FoldStateSet> sets;   // the latest of each kind (backend, algorithm, workers; loss and costs for row
                                    // duals), the most recent last
};

// The folds of config.cv_folds-fold cross-validation of `train` (StratifiedFolds with --seed), after checking that
// every fold holds rows of both classes and every training part what the run needs (ConfigError naming --cv).
std::vector<uint32_t> CheckCrossValidation(const RunConfig& config, const Dataset& train);

// Runs the K trainings (config.cv_folds folds of `train`, which must be the whole training set of one process).
// `on_fold(f, metrics)` is called after each fold. With `warm`, fold f starts from the most recent fitting state
// (FoldStates), and `warm` then holds this run's final states in place of those of its kind. Throws ConfigError
// naming --cv when a fold would hold no row of a class or the folds leave a training part smaller than the run
// needs.
CrossValidation CrossValidate(const RunConfig& config, const Dataset& train, ThreadPool& pool,
                              const std::function<void(uint32_t fold, const Metrics& metrics)>& on_fold = {},
                              FoldStates* warm = nullptr);

}  // namespace pimopt
