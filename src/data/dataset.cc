#include "pimopt/data/dataset.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "pimopt/core/error.h"
#include "pimopt/core/file_util.h"
#include "pimopt/core/huge_pages.h"

namespace pimopt {

Dataset::Dataset(Storage storage, size_t num_features) : storage_(storage), num_features_(num_features) {}

Dataset Dataset::FromDense(size_t num_features, std::vector<float> values, std::vector<float> labels) {
  PIMOPT_CHECK(values.size() == labels.size() * num_features);
  Dataset d(Storage::kDense, num_features);
  d.dense_ = std::move(values);
  d.labels_ = std::move(labels);
  return d;
}

Dataset Dataset::FromCsr(size_t num_features, CsrMatrix matrix, std::vector<float> labels) {
  const std::string problem = CheckCsr(matrix, labels.size(), num_features);
  PIMOPT_CHECK(problem.empty(), problem);
  Dataset d(Storage::kSparse, num_features);
  d.csr_ = std::move(matrix);
  d.labels_ = std::move(labels);
  return d;
}

bool HasOnlyOnes(const CsrMatrix& m) {
  return std::all_of(m.val.begin(), m.val.end(), [](float v) { return v == 1.0f; });
}

std::string CheckCsr(const CsrMatrix& m, size_t rows, size_t num_features) {
  if (m.row_ptr.size() != rows + 1 || m.row_ptr[0] != 0 || m.row_ptr[rows] != m.col.size() ||
      m.col.size() != m.val.size()) {
    return "CSR row pointers do not match the number of rows and non-zeros";
  }
  for (size_t i = 0; i < rows; ++i) {
    if (m.row_ptr[i + 1] < m.row_ptr[i]) return StrCat("CSR row pointer decreases at row ", i);
    if (m.row_ptr[i + 1] > m.col.size()) return StrCat("CSR row pointer beyond the non-zeros at row ", i);
    for (uint64_t k = m.row_ptr[i]; k < m.row_ptr[i + 1]; ++k) {
      if (m.col[k] >= num_features) return StrCat("CSR column ", m.col[k], " out of range in row ", i);
      if (k > m.row_ptr[i] && m.col[k] <= m.col[k - 1]) return StrCat("CSR columns not increasing in row ", i);
    }
  }
  return {};
}

uint64_t Dataset::num_stored() const { return is_sparse() ? csr_.col.size() : dense_.size(); }

uint64_t Dataset::CountNonZeros() const {
  const auto& v = is_sparse() ? csr_.val : dense_;
  return static_cast<uint64_t>(std::count_if(v.begin(), v.end(), [](float x) { return x != 0.0f; }));
}

void Dataset::set_weights(std::vector<float> weights) {
  if (!weights.empty() && weights.size() != num_rows()) {
    throw InputError(StrCat("sample weights: ", weights.size(), " weights for ", num_rows(), " rows"));
  }
  weights_ = std::move(weights);
}

void Dataset::AppendDenseRow(std::span<const float> values, float label) {
  PIMOPT_CHECK(storage_ == Storage::kDense && values.size() == num_features_);
  dense_.insert(dense_.end(), values.begin(), values.end());
  labels_.push_back(label);
}

void Dataset::AppendSparseRow(std::span<const uint32_t> cols, std::span<const float> vals, float label) {
  PIMOPT_CHECK(storage_ == Storage::kSparse && cols.size() == vals.size());
  for (size_t k = 0; k < cols.size(); ++k) {
    PIMOPT_CHECK(k == 0 || cols[k] > cols[k - 1], "sparse columns must increase");
    if (cols[k] >= num_features_) num_features_ = cols[k] + 1;
  }
  csr_.col.insert(csr_.col.end(), cols.begin(), cols.end());
  csr_.val.insert(csr_.val.end(), vals.begin(), vals.end());
  csr_.row_ptr.push_back(csr_.col.size());
  labels_.push_back(label);
}

void Dataset::Reserve(size_t rows, uint64_t stored_entries) {
  labels_.reserve(rows);
  if (is_sparse()) {
    csr_.row_ptr.reserve(rows + 1);
    csr_.col.reserve(stored_entries);
    csr_.val.reserve(stored_entries);
  } else {
    dense_.reserve(stored_entries);
  }
}

void Dataset::set_num_features(size_t n) {
  PIMOPT_CHECK(n >= num_features_, "a dataset's feature space can only be widened");
  if (!is_sparse() && n > num_features_) {  // each row gets the new features' zeros
    std::vector<float> wider = ZeroedVector<float>(num_rows() * n);
    for (size_t i = 0; i < num_rows(); ++i) std::copy_n(dense_row(i), num_features_, wider.data() + i * n);
    dense_ = std::move(wider);
  }
  num_features_ = n;
}

namespace {
void CopyMeta(const Dataset& from, Dataset& to) {
  to.positive_label_value = from.positive_label_value;
  to.negative_label_value = from.negative_label_value;
  to.source = from.source;
  to.positive_classes = from.positive_classes;
}
}  // namespace

Dataset Dataset::SelectRows(std::span<const uint32_t> rows) const {
  Dataset out(storage_, num_features_);
  CopyMeta(*this, out);
  out.labels_.reserve(rows.size());
  if (is_sparse()) {
    uint64_t nnz = 0;
    for (uint32_t r : rows) nnz += csr_.row_ptr[r + 1] - csr_.row_ptr[r];
    out.Reserve(rows.size(), nnz);
    for (uint32_t r : rows) {
      const uint64_t b = csr_.row_ptr[r], e = csr_.row_ptr[r + 1];
      out.csr_.col.insert(out.csr_.col.end(), csr_.col.begin() + b, csr_.col.begin() + e);
      out.csr_.val.insert(out.csr_.val.end(), csr_.val.begin() + b, csr_.val.begin() + e);
      out.csr_.row_ptr.push_back(out.csr_.col.size());
      out.labels_.push_back(labels_[r]);
    }
  } else {
    out.dense_ = ZeroedVector<float>(rows.size() * num_features_);
    for (size_t i = 0; i < rows.size(); ++i) {
      std::copy_n(dense_row(rows[i]), num_features_, out.dense_.data() + i * num_features_);
      out.labels_.push_back(labels_[rows[i]]);
    }
  }
  if (has_weights()) {
    out.weights_.reserve(rows.size());
    for (uint32_t r : rows) out.weights_.push_back(weights_[r]);
  }
  return out;
}

Dataset Dataset::ToDense() const {
  if (!is_sparse()) return *this;
  Dataset out(Storage::kDense, num_features_);
  CopyMeta(*this, out);
  out.dense_ = ZeroedVector<float>(num_rows() * num_features_);
  for (size_t i = 0; i < num_rows(); ++i) {
    for (uint64_t k = csr_.row_ptr[i]; k < csr_.row_ptr[i + 1]; ++k) {
      out.dense_[i * num_features_ + csr_.col[k]] = csr_.val[k];
    }
  }
  out.labels_ = labels_;
  out.weights_ = weights_;
  return out;
}

Dataset Dataset::ToSparse() const {
  if (is_sparse()) return *this;
  Dataset out(Storage::kSparse, num_features_);
  CopyMeta(*this, out);
  for (size_t i = 0; i < num_rows(); ++i) {
    const float* x = dense_row(i);
    for (size_t j = 0; j < num_features_; ++j) {
      if (x[j] != 0.0f) {
        out.csr_.col.push_back(static_cast<uint32_t>(j));
        out.csr_.val.push_back(x[j]);
      }
    }
    out.csr_.row_ptr.push_back(out.csr_.col.size());
  }
  out.labels_ = labels_;
  out.weights_ = weights_;
  return out;
}

size_t Dataset::CountPositives() const {
  return static_cast<size_t>(std::count_if(labels_.begin(), labels_.end(), [](float y) { return y > 0; }));
}

std::string ClassListText(const std::vector<int>& classes) {
  std::string text;
  for (int c : classes) text += StrCat(text.empty() ? "" : ",", c);
  return text;
}

std::vector<int> ParseClassList(const std::string& text) {
  std::vector<int> classes;
  for (const std::string& item : SplitText(text, ',')) {
    char* end = nullptr;
    const long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v < 0 || v > 255) {
      throw ConfigError("--positive-classes", StrCat("'", item, "' is not a class number (0..255)"));
    }
    classes.push_back(static_cast<int>(v));
  }
  return classes;
}

std::optional<StoredValue> FirstNonFiniteValue(const Dataset& data) {
  if (data.is_sparse()) {
    const CsrMatrix& m = data.csr();
    for (uint64_t i = 0; i < data.num_rows(); ++i) {
      for (uint64_t k = m.row_ptr[i]; k < m.row_ptr[i + 1]; ++k) {
        if (!std::isfinite(m.val[k])) return StoredValue{i, m.col[k], m.val[k]};
      }
    }
    return std::nullopt;
  }
  const std::span<const float> values = data.dense_values();
  bool finite = true;  // the common case in one vectorizable pass
  for (float x : values) finite &= std::isfinite(x);
  if (finite) return std::nullopt;
  for (size_t k = 0; k < values.size(); ++k) {
    if (!std::isfinite(values[k])) return StoredValue{k / data.num_features(), k % data.num_features(), values[k]};
  }
  return std::nullopt;
}

}  // namespace pimopt
