// A trained binary linear classifier: score(x) = w.x + b; predicts the positive class when score > 0 (as
// LIBLINEAR does, so an all-zero model predicts the negative class).
#pragma once

#include <string>
#include <vector>

#include "pimopt/data/dataset.h"
#include "pimopt/model/loss.h"

namespace pimopt {

struct LinearModel {
  LossKind loss = LossKind::kLogistic;
  std::vector<float> weights;
  float bias = 0.0f;
  bool fit_bias = true;
  double positive_label_value = 1.0;  // label values of the training data, for output and LIBLINEAR export
  double negative_label_value = -1.0;
  // Trained on data labelled by class (IDX): the classes it calls positive (--positive-classes), which predict
  // applies to such data; empty otherwise.
  std::vector<int> positive_classes;

  size_t num_features() const { return weights.size(); }
  // Features of x beyond num_features() are ignored (they were never seen in training).
  float Score(const Dataset& data, size_t row) const {
    return VisitRows(data, [&](auto rows) { return rows.Dot(row, weights.data(), weights.size()); }) + bias;
  }
};

}  // namespace pimopt
