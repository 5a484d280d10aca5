// An in-memory binary-classification dataset: features stored dense (row-major) or sparse (CSR), labels in
// {-1, +1}, optional per-sample weights. The original label values (e.g. 1/0 or 1/-1) are kept for output.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace pimopt {

enum class Storage { kDense, kSparse };

// Compressed sparse rows: row i's entries are [row_ptr[i], row_ptr[i+1]) of col/val, columns strictly increasing.
struct CsrMatrix {
  std::vector<uint64_t> row_ptr{0};
  std::vector<uint32_t> col;
  std::vector<float> val;
};

class Dataset {
 public:
  Dataset() = default;
  // Creates an empty dataset of the given storage and feature count; rows are appended with Append*.
  Dataset(Storage storage, size_t num_features);
  // Builds from whole arrays (moved in). Labels must be +1/-1; the CSR structure must be valid (see CheckCsr).
  static Dataset FromDense(size_t num_features, std::vector<float> values, std::vector<float> labels);
  static Dataset FromCsr(size_t num_features, CsrMatrix matrix, std::vector<float> labels);

  Storage storage() const { return storage_; }
  bool is_sparse() const { return storage_ == Storage::kSparse; }
  size_t num_rows() const { return labels_.size(); }
  size_t num_features() const { return num_features_; }
  // Stored entries: rows*features when dense, non-zeros when sparse.
  uint64_t num_stored() const;
  uint64_t CountNonZeros() const;

  std::span<const float> labels() const { return labels_; }
  bool has_weights() const { return !weights_.empty(); }
  std::span<const float> weights() const { return weights_; }
  float weight(size_t row) const { return weights_.empty() ? 1.0f : weights_[row]; }
  void set_weights(std::vector<float> weights);

  // Dense access (dense storage only).
  std::span<const float> dense_values() const { return dense_; }
  std::span<float> mutable_dense_values() { return dense_; }
  const float* dense_row(size_t row) const { return dense_.data() + row * num_features_; }
  // Sparse access (sparse storage only).
  const CsrMatrix& csr() const { return csr_; }
  CsrMatrix& mutable_csr() { return csr_; }

  void AppendDenseRow(std::span<const float> values, float label);
  // `cols` strictly increasing, all < num_features (the count grows if `grow_features`).
  void AppendSparseRow(std::span<const uint32_t> cols, std::span<const float> vals, float label);
  void Reserve(size_t rows, uint64_t stored_entries);
  // Widens the feature space (e.g. to a training set's): the new features are zeros in every row.
  void set_num_features(size_t n);

  // Label values as they appeared in the source (for export): positive is always 1, negative is -1 or 0.
  double positive_label_value = 1.0;
  double negative_label_value = -1.0;
  std::string source;  // where it came from (file path or built-in name), for reports
  // Data labelled by class (IDX): the classes mapped to +1 (--positive-classes); empty for data labelled +-1.
  std::vector<int> positive_classes;

  // Copies of a subset of rows, in the given order.
  Dataset SelectRows(std::span<const uint32_t> rows) const;
  Dataset ToDense() const;
  Dataset ToSparse() const;
  size_t CountPositives() const;

 private:
  Storage storage_ = Storage::kDense;
  size_t num_features_ = 0;
  std::vector<float> dense_;
  CsrMatrix csr_;
  std::vector<float> labels_;
  std::vector<float> weights_;
};

// A list of class numbers as --positive-classes and the model file write it ("0,2,4,6"), and back: ParseClassList
// throws ConfigError naming --positive-classes for an item that is not a class number (0..255).
std::string ClassListText(const std::vector<int>& classes);
std::vector<int> ParseClassList(const std::string& text);

// The first stored value that is not finite, in row order (none: nullopt).
struct StoredValue {
  uint64_t row = 0, feature = 0;
  float value = 0;
};
std::optional<StoredValue> FirstNonFiniteValue(const Dataset& data);

// Returns an empty string if `m` is a valid CSR matrix of `rows` rows over `num_features` columns (row_ptr
// non-decreasing from 0 to nnz, columns strictly increasing within a row and < num_features), else what is wrong.
std::string CheckCsr(const CsrMatrix& m, size_t rows, size_t num_features);

// True when every stored value of the sparse matrix is exactly 1 (a pass over them).
bool HasOnlyOnes(const CsrMatrix& m);

// Row kernels over both storages. Hot loops are templated on these so each storage gets its own inner loop.
struct DenseRows {
  const float* values;
  size_t num_features;
  // x_i . w over the first min(num_features, w.size()) features.
  float Dot(size_t row, const float* w, size_t w_size) const {
    const float* x = values + row * num_features;
    const size_t n = num_features < w_size ? num_features : w_size;
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (size_t j = 0; j < n; ++j) sum += x[j] * w[j];
    return sum;
  }
  // Asks the caches for row `row` ahead of its use: a shuffled epoch jumps between rows, which the hardware
  // prefetcher does not follow, so without it every row starts with a wait for memory.
  void Prefetch(size_t row) const {
    const char* x = reinterpret_cast<const char*>(values + row * num_features);
    for (size_t b = 0; b < num_features * sizeof(float); b += 64) __builtin_prefetch(x + b);
  }
  // g += a * x_i
  void Axpy(size_t row, float a, float* g, size_t g_size) const {
    const float* x = values + row * num_features;
    const size_t n = num_features < g_size ? num_features : g_size;
#pragma omp simd
    for (size_t j = 0; j < n; ++j) g[j] += a * x[j];
  }
};

struct SparseRows {
  const uint64_t* row_ptr;
  const uint32_t* col;
  const float* val;
  // Every stored value is exactly 1 (one-hot rows, as hashed categorical features): Dot and Axpy then do not read
  // the values, half of a row's bytes, with the same bits (1 x w is w). Whoever sets it has checked every value
  // (HasOnlyOnes).
  bool ones = false;
  float Dot(size_t row, const float* w, size_t w_size) const {
    float sum = 0.0f;
    if (ones) {
      for (uint64_t k = row_ptr[row]; k < row_ptr[row + 1]; ++k) {
        if (col[k] < w_size) sum += w[col[k]];
      }
      return sum;
    }
    for (uint64_t k = row_ptr[row]; k < row_ptr[row + 1]; ++k) {
      if (col[k] < w_size) sum += val[k] * w[col[k]];
    }
    return sum;
  }
  void Axpy(size_t row, float a, float* g, size_t g_size) const {
    if (ones) {
      for (uint64_t k = row_ptr[row]; k < row_ptr[row + 1]; ++k) {
        if (col[k] < g_size) g[col[k]] += a;
      }
      return;
    }
    for (uint64_t k = row_ptr[row]; k < row_ptr[row + 1]; ++k) {
      if (col[k] < g_size) g[col[k]] += a * val[k];
    }
  }
  // Asking the caches ahead for a pass that visits rows in a shuffled order, in three stages a few rows apart (each
  // needs what the previous one fetched): the row's extent, its non-zeros, the entries of w it touches.
  void PrefetchExtent(size_t row) const { __builtin_prefetch(row_ptr + row); }
  void PrefetchNonZeros(size_t row) const {
    const uint64_t begin = row_ptr[row], end = row_ptr[row + 1];
    // The values too with `ones`: leaving them out (a branch here, or a second loop) measured slower on the
    // Criteo-shaped SVM's dual pass (4.5 s of training against 3.4 s), though its steps then never read them.
    for (uint64_t k = begin; k < end; k += 16) {
      __builtin_prefetch(col + k);
      __builtin_prefetch(val + k);
    }
  }
  void PrefetchModel(size_t row, const float* w, size_t w_size) const {
    for (uint64_t k = row_ptr[row]; k < row_ptr[row + 1]; ++k) {
      if (col[k] < w_size) __builtin_prefetch(w + col[k], 1);
    }
  }
  // How many rows ahead a pass in a shuffled order runs each stage (measured with CoCoA's dual pass on the
  // Criteo-shaped set, where a row's step otherwise waits about 15 ns per non-zero; the SGD steps' small batches
  // gained nothing measurable from them).
  static constexpr size_t kExtentAhead = 12, kNonZerosAhead = 6, kModelAhead = 2;
};

// Calls fn(DenseRows) or fn(SparseRows) according to the dataset's storage.
template <typename Fn>
decltype(auto) VisitRows(const Dataset& data, Fn&& fn) {
  if (data.is_sparse()) {
    const CsrMatrix& m = data.csr();
    return fn(SparseRows{m.row_ptr.data(), m.col.data(), m.val.data()});
  }
  return fn(DenseRows{data.dense_values().data(), data.num_features()});
}

}  // namespace pimopt
