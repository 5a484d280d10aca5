// Seeded train/test split, row shuffling and feature scaling.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "pimopt/data/dataset.h"

namespace pimopt {

struct TrainTest {
  Dataset train;
  Dataset test;
};

// Shuffles rows with the seed, then puts the last round(test_fraction * rows) rows in the test set.
TrainTest SplitTrainTest(const Dataset& data, double test_fraction, uint64_t seed);

// Per-feature scaling fitted on one dataset and applied to others (so the test set uses the train set's
// ranges). Dense data: min-max to [0,1] ((x - min) / (max - min); constant features become 0). Sparse data:
// divide by max |x| so zeros stay zeros and sparsity is kept.
// Per-feature ranges of a dataset, combinable over parts (elementwise min of `lo`, max of `hi`): dense data
// min / max, sparse data 0 / max |x|.
struct FeatureRanges {
  std::vector<float> lo, hi;
  bool sparse = false;
  static FeatureRanges Of(const Dataset& data);
};

// Scales each feature to [0, 1] by its training range (FeatureRanges), in float; a range wider than float's largest
// value is taken in double. A range too narrow to have a finite float scale is refused (ConfigError naming --scale).
class FeatureScaler {
 public:
  static FeatureScaler Fit(const Dataset& data) { return FromRanges(FeatureRanges::Of(data)); }
  static FeatureScaler FromRanges(const FeatureRanges& ranges);
  // Scales `data` in place. Where the scaler shifts a feature (dense training data: x - min), a feature the data
  // stores implicitly (a sparse set's zeros, a narrower set's missing features) is a zero that the shift moves:
  // such data is widened to the scaler's features and stored dense first, so that every zero is scaled as the
  // training set's zeros were (and as a model with the scaling folded in predicts it).
  void Apply(Dataset& data) const;
  const std::vector<float>& offset() const { return offset_; }
  const std::vector<float>& scale() const { return scale_; }

 private:
  std::vector<float> offset_;  // subtracted (dense only)
  std::vector<float> scale_;   // multiplied after subtracting
};

// Throws InputError naming `what` (e.g. "the training set"), the row and the feature of the first value that is not
// finite (after scaling: a test value far outside the training range).
void CheckFiniteValues(const Dataset& data, std::string_view what);

}  // namespace pimopt
