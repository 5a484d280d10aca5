#include "pimopt/data/transform.h"

#include <algorithm>
#include <cmath>

#include "pimopt/core/error.h"
#include "pimopt/core/file_util.h"
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
  // The scale of a feature must be a finite float: a range narrower than 1 / FLT_MAX (a few subnormal values) has
  // none, and scaling it to [0, 1] would need one (the folded model's weight would overflow too).
  auto refuse_narrow = [&](size_t j, double range) {
    throw ConfigError("--scale", StrCat("feature ", j + 1, "'s training range (", FormatDouble(range),
                                        ") is too narrow to scale to [0, 1] in single precision (its scale 1 / range "
                                        "exceeds float's largest value); use --scale none, or rescale the feature"));
  };
  if (r.sparse) {
    s.offset_.assign(n, 0.0f);
    for (size_t j = 0; j < n; ++j) {
      s.scale_[j] = r.hi[j] > 0 ? 1.0f / r.hi[j] : 1.0f;
      if (!std::isfinite(s.scale_[j])) refuse_narrow(j, r.hi[j]);
    }
  } else {
    s.offset_ = r.lo;
    for (size_t j = 0; j < n; ++j) {
      if (!(r.hi[j] > r.lo[j])) {
        s.scale_[j] = 0.0f;
        continue;
      }
      const float range = r.hi[j] - r.lo[j];
      // A range wider than float's largest value (features near +-FLT_MAX) is taken in double; its scale is a
      // finite float.
      s.scale_[j] = std::isfinite(range)
                        ? 1.0f / range
                        : static_cast<float>(1.0 / (static_cast<double>(r.hi[j]) - static_cast<double>(r.lo[j])));
      if (!std::isfinite(s.scale_[j])) refuse_narrow(j, static_cast<double>(r.hi[j]) - r.lo[j]);
    }
  }
  return s;
}

void FeatureScaler::Apply(Dataset& data) const {
  // Implicit zeros that the shift would move: widen and store dense (a test set stored sparse, or with fewer
  // features than the training set, was scored with the zeros as the training minimum, not as zeros).
  const size_t from = data.is_sparse() ? 0 : std::min(data.num_features(), offset_.size());
  if (std::any_of(offset_.begin() + static_cast<std::ptrdiff_t>(from), offset_.end(),
                  [](float o) { return o != 0.0f; })) {
    const uint64_t cells = uint64_t{data.num_rows()} * std::max<uint64_t>(data.num_features(), offset_.size());
    CheckMemoryNeed(4 * cells,
                    StrCat("storing ", data.source.empty() ? "the data" : data.source, " dense (", data.num_rows(),
                           " rows) so that its zeros scale as the training set's (else: --storage sparse, which "
                           "scales without a shift, or --scale none)"),
                    "--scale");
    if (data.num_features() < offset_.size()) data.set_num_features(offset_.size());
    if (data.is_sparse()) data = data.ToDense();
  }
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
      for (size_t j = 0; j < n; ++j) {
        const float shifted = x[j] - offset_[j];
        // x - min overflows float only for a range wider than float's largest value: then in double.
        x[j] = std::isfinite(shifted) ? shifted * scale_[j]
                                      : static_cast<float>((static_cast<double>(x[j]) - offset_[j]) * scale_[j]);
      }
    }
  }
}

void CheckFiniteValues(const Dataset& data, std::string_view what) {
  if (const auto bad = FirstNonFiniteValue(data)) {
    throw InputError(StrCat(what, ": row ", bad->row + 1, ", feature ", bad->feature + 1, " is ", bad->value,
                            " after preprocessing (a value beyond float's range once scaled by the training set's "
                            "range); use --scale none, or rescale the feature"));
  }
}

}  // namespace pimopt
