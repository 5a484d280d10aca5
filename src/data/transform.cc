#include "pimopt/data/transform.h"

#include <algorithm>
#include <cmath>

#include "pimopt/core/error.h"
#include "pimopt/core/rng.h"

namespace pimopt {

TrainTest SplitTrainTest(const Dataset& data, double test_fraction, uint64_t seed) {
  if (!(test_fraction > 0 && test_fraction < 1)) {
    throw ConfigError("--test-fraction", "must be strictly between 0 and 1");
  }
  const auto order = Permutation(data.num_rows(), StreamSeed(seed, 0x73706c6974ULL /* "split" */));
  const auto num_test = static_cast<size_t>(std::llround(test_fraction * static_cast<double>(data.num_rows())));
  if (num_test == 0 || num_test >= data.num_rows()) {
    throw ConfigError("--test-fraction", StrCat("leaves an empty train or test set for ", data.num_rows(), " rows"));
  }
  const std::span<const uint32_t> all(order);
  return {data.SelectRows(all.first(order.size() - num_test)), data.SelectRows(all.last(num_test))};
}

FeatureRanges FeatureRanges::Of(const Dataset& data) {
  FeatureRanges r;
  const size_t n = data.num_features();
  r.sparse = data.is_sparse();
  if (r.sparse) {
    r.lo.assign(n, 0.0f);
    r.hi.assign(n, 0.0f);
    const CsrMatrix& m = data.csr();
    for (size_t k = 0; k < m.col.size(); ++k) r.hi[m.col[k]] = std::max(r.hi[m.col[k]], std::fabs(m.val[k]));
  } else {
    r.lo.assign(n, INFINITY);
    r.hi.assign(n, -INFINITY);
    for (size_t i = 0; i < data.num_rows(); ++i) {
      const float* x = data.dense_row(i);
      for (size_t j = 0; j < n; ++j) {
        r.lo[j] = std::min(r.lo[j], x[j]);
        r.hi[j] = std::max(r.hi[j], x[j]);
      }
    }
  }
  return r;
}

FeatureScaler FeatureScaler::FromRanges(const FeatureRanges& r) {
  FeatureScaler s;
  const size_t n = r.hi.size();
  s.scale_.resize(n);
  if (r.sparse) {
    s.offset_.assign(n, 0.0f);
    for (size_t j = 0; j < n; ++j) s.scale_[j] = r.hi[j] > 0 ? 1.0f / r.hi[j] : 1.0f;
  } else {
    s.offset_ = r.lo;
    for (size_t j = 0; j < n; ++j) s.scale_[j] = r.hi[j] > r.lo[j] ? 1.0f / (r.hi[j] - r.lo[j]) : 0.0f;
  }
  return s;
}

void FeatureScaler::Apply(Dataset& data) const {
  const size_t n = std::min(data.num_features(), scale_.size());
  if (data.is_sparse()) {
    CsrMatrix& m = data.mutable_csr();
    for (size_t k = 0; k < m.col.size(); ++k) {
      if (m.col[k] < n) m.val[k] *= scale_[m.col[k]];
    }
  } else {
    auto values = data.mutable_dense_values();
    const size_t stride = data.num_features();
    for (size_t i = 0; i < data.num_rows(); ++i) {
      float* x = values.data() + i * stride;
      for (size_t j = 0; j < n; ++j) x[j] = (x[j] - offset_[j]) * scale_[j];
    }
  }
}

}  // namespace pimopt
