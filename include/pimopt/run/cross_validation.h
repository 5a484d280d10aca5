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

// Warm starts between cross-validations of one training set with the same folds (pimopt tune): each fold's final
// backend state, and what it belongs to. A run with other folds (another --seed or --cv), of another backend, algorithm or worker count starts from zero, and
// so does a run of a dual method (AlgorithmTraits::row_duals) with another objective: its model is w(beta) of its
// duals for one objective (L2 strength, loss, costs), and a state of another would start it off that invariant.
struct FoldStates {
  std::string backend, algorithm;
  int workers = 0;
  std::vector<BackendState> per_fold;
  Objective objective;  // as configured (an auto L2 stays auto: each fold resolves it from its rows)
  std::vector<uint32_t> folds;  // the fold of every row: a state warm-starts only the same fold of the same rows
};

// The folds of config.cv_folds-fold cross-validation of `train` (StratifiedFolds with --seed), after checking that
// every fold holds rows of both classes and every training part what the run needs (ConfigError naming --cv).
std::vector<uint32_t> CheckCrossValidation(const RunConfig& config, const Dataset& train);

// Runs the K trainings (config.cv_folds folds of `train`, which must be the whole training set of one process).
// `on_fold(f, metrics)` is called after each fold. With `warm`, fold f starts from warm->per_fold[f] when it belongs
// to the same backend, algorithm and workers, and `warm` then holds this run's final states. Throws ConfigError
// naming --cv when a fold would hold no row of a class or the folds leave a training part smaller than the run
// needs.
CrossValidation CrossValidate(const RunConfig& config, const Dataset& train, ThreadPool& pool,
                              const std::function<void(uint32_t fold, const Metrics& metrics)>& on_fold = {},
                              FoldStates* warm = nullptr);

}  // namespace pimopt
