#include "pimopt/data/synthetic.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "pimopt/core/error.h"
#include "pimopt/core/file_util.h"
#include "pimopt/core/huge_pages.h"
#include "pimopt/core/rng.h"
#include "pimopt/core/thread_pool.h"

namespace pimopt {
namespace {

constexpr uint64_t kRowsPerBlock = 1024;            // generation unit: one random stream per block of rows
constexpr uint64_t kModelStream = 0x6d6f64656cULL;  // "model"
constexpr uint64_t kRowStream = 0x726f7773ULL;      // "rows"

void ForEachBlock(uint64_t first_row, uint64_t rows, ThreadPool* pool,
                  const std::function<void(uint64_t block, uint64_t begin, uint64_t end)>& fn) {
  // Row numbers stay far from 2^64, so first_row + rows never wraps around.
  constexpr uint64_t kMaxRow = uint64_t{1} << 62;
  if (first_row > kMaxRow || rows > kMaxRow - first_row) {
    throw ConfigError("--first-row", StrCat("rows ", first_row, " .. ", first_row, " + ", rows,
                                            " go beyond row 2^62, the last row number a generator has"));
  }
  // Blocks are aligned to absolute row numbers so row i is the same whatever first_row is.
  const uint64_t first_block = first_row / kRowsPerBlock;
  const uint64_t last_block = (first_row + rows + kRowsPerBlock - 1) / kRowsPerBlock;
  auto task = [&](size_t t) {
    const uint64_t block = first_block + t;
    const uint64_t begin = std::max(first_row, block * kRowsPerBlock);
    const uint64_t end = std::min(first_row + rows, (block + 1) * kRowsPerBlock);
    fn(block, begin, end);
  };
  if (pool) {
    pool->ParallelFor(last_block - first_block, task);
  } else {
    for (size_t t = 0; t < last_block - first_block; ++t) task(t);
  }
}

// The planted direction of the dense generators: exactly balanced +1 / -1 entries in a seeded random order.
std::vector<float> PlantedDirection(uint64_t features, uint64_t seed) {
  std::vector<float> v(features);
  for (uint64_t j = 0; j < features; ++j) v[j] = j < features / 2 ? 1.0f : -1.0f;
  Rng model_rng(StreamSeed(seed, kModelStream));
  Shuffle(std::span<float>(v), model_rng);
  return v;
}

constexpr uint64_t kMostBytes = std::numeric_limits<uint64_t>::max();
uint64_t SaturatingProduct(uint64_t a, uint64_t b) { return b != 0 && a > kMostBytes / b ? kMostBytes : a * b; }
uint64_t SaturatingSum(uint64_t a, uint64_t b) { return a > kMostBytes - b ? kMostBytes : a + b; }

// The memory the generated rows take (`bytes_per_row` each, and `fixed_bytes` besides) checked against what this
// machine has, before any allocation (ConfigError naming --rows with the sizes).
void CheckGeneratedSize(uint64_t rows, uint64_t bytes_per_row, uint64_t fixed_bytes, const std::string& what) {
  CheckMemoryNeed(SaturatingSum(SaturatingProduct(rows, bytes_per_row), fixed_bytes), StrCat("generating ", what),
                  "--rows");
}

// A dense generator's memory: per row its features and label (floats), and the planted direction.
void CheckDenseSize(uint64_t rows, uint64_t features) {
  const uint64_t feature_bytes = SaturatingProduct(features, sizeof(float));
  CheckGeneratedSize(rows, SaturatingSum(feature_bytes, sizeof(float)), feature_bytes,
                     StrCat(rows, " rows x ", features, " dense features"));
}

// Rows [first_row, first_row + rows) of a dense generator: `draw_row(rng, x)` draws one row from its block's stream
// and returns its label, writing the features to x (nullptr: rows of the block before first_row, drawn and dropped
// so that row i never depends on first_row).
template <typename DrawRow>
Dataset GenerateDenseRows(uint64_t first_row, uint64_t rows, uint64_t features, uint64_t seed, ThreadPool* pool,
                          const DrawRow& draw_row) {
  std::vector<float> values = ZeroedVector<float>(rows * features);
  std::vector<float> labels(rows);
  ForEachBlock(first_row, rows, pool, [&](uint64_t block, uint64_t begin, uint64_t end) {
    Rng rng(StreamSeed(seed, kRowStream, block));
    for (uint64_t r = block * kRowsPerBlock; r < end; ++r) {
      const bool keep = r >= begin;
      const float y = draw_row(rng, keep ? values.data() + (r - first_row) * features : nullptr);
      if (keep) labels[r - first_row] = y;
    }
  });
  return Dataset::FromDense(features, std::move(values), std::move(labels));
}

double HashedNormal(uint64_t key) {
  const double u1 = 1.0 - static_cast<double>(Mix64(key) >> 11) * 0x1.0p-53;
  const double u2 = static_cast<double>(Mix64(key ^ 0xA5A5A5A5A5A5A5A5ULL) >> 11) * 0x1.0p-53;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

ParamTable<DenseSyntheticParams> MakeDenseTable() {
  ParamTable<DenseSyntheticParams> t;
  const std::string group = "dense (YFCC-shaped)";
  t.Add("rows", &DenseSyntheticParams::rows, 20000).Min(1).Unit("rows").Group(group).Help("rows to generate");
  t.Add("features", &DenseSyntheticParams::features, 4096).Min(1).Unit("features").Group(group).Help(
      "dense features in [0, 1]");
  t.Add("noise", &DenseSyntheticParams::noise, 0.05).Min(0).Max(0.5).Group(group).Help("label flip probability");
  t.Add("separation", &DenseSyntheticParams::separation, 0.01).Min(0).Max(0.5).Group(group).Help(
      "class mean shift per feature along the planted direction");
  t.Add("seed", &DenseSyntheticParams::seed, 1).Group(group).Help("seed of the planted direction and the rows");
  return t;
}

ParamTable<SparseSyntheticParams> MakeSparseTable() {
  ParamTable<SparseSyntheticParams> t;
  const std::string group = "sparse (Criteo-shaped)";
  t.Add("rows", &SparseSyntheticParams::rows, 100000).Min(1).Unit("rows").Group(group).Help("rows to generate");
  t.Add("features", &SparseSyntheticParams::features, uint64_t{1} << 20)
      .Min(1)
      .Max(1 << 28)
      .Unit("features")
      .Group(group)
      .Help("binary features the (field, value) pairs are hashed into");
  t.Add("fields", &SparseSyntheticParams::fields, 39).Min(1).Unit("fields").Group(group).Help(
      "categorical fields per row");
  t.Add("vocabulary", &SparseSyntheticParams::max_vocabulary, 100000)
      .Min(10)
      .Unit("values")
      .Group(group)
      .Help("the largest field's vocabulary (they grow log-uniformly from 10)");
  t.Add("zipf", &SparseSyntheticParams::zipf_exponent, 1.1).Min(0).Group(group).Help(
      "Zipf exponent of the value frequencies");
  t.Add("signal", &SparseSyntheticParams::signal, 2.0).Min(0).Group(group).Help(
      "standard deviation of the planted score, over all fields");
  t.Add("positive-rate", &SparseSyntheticParams::positive_rate, 0.03)
      .Min(0, true)
      .Max(1, true)
      .Group(group)
      .Help("expected fraction of positive labels");
  t.Add("seed", &SparseSyntheticParams::seed, 1).Group(group).Help("seed of the planted model and the rows");
  return t;
}

ParamTable<YfccSyntheticParams> MakeYfccTable() {
  ParamTable<YfccSyntheticParams> t;
  const std::string group = "yfcc (fc6-like activations)";
  t.Add("rows", &YfccSyntheticParams::rows, 20000).Min(1).Unit("rows").Group(group).Help("rows to generate");
  t.Add("features", &YfccSyntheticParams::features, 4096).Min(1).Unit("features").Group(group).Help(
      "activations per row, in [0, 1]");
  t.Add("active", &YfccSyntheticParams::active, 0.3).Min(0, true).Max(1, true).Group(group).Help(
      "fraction of non-zero activations");
  t.Add("signal", &YfccSyntheticParams::signal, 0.04).Min(0).Group(group).Help(
      "class mean shift of the pre-activations along the planted direction");
  t.Add("noise", &YfccSyntheticParams::noise, 0.03).Min(0).Max(0.5).Group(group).Help("label flip probability");
  t.Add("seed", &YfccSyntheticParams::seed, 1).Group(group).Help("seed of the planted direction and the rows");
  return t;
}

// The inverse of the standard normal CDF (bisection on erfc; used once per generator).
double NormalQuantile(double p) {
  double lo = -10, hi = 10;
  for (int it = 0; it < 200; ++it) {
    const double mid = 0.5 * (lo + hi);
    (0.5 * std::erfc(-mid / std::sqrt(2.0)) < p ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

// A generator behind the SyntheticGenerator interface: its parameter table and its Generate function.
template <typename Params>
class TableGenerator final : public SyntheticGenerator {
 public:
  using GenerateFn = Dataset (*)(const Params&, ThreadPool*);
  TableGenerator(std::string name, std::string description, const ParamTable<Params>& table, GenerateFn generate)
      : name_(std::move(name)), description_(std::move(description)), table_(table), generate_(generate) {}
  const std::string& name() const override { return name_; }
  const std::string& description() const override { return description_; }
  std::vector<const ParamInfo*> params() const override {
    std::vector<const ParamInfo*> infos;
    for (const auto& e : table_.entries()) infos.push_back(&e.info);
    return infos;
  }
  bool Set(std::string_view key, std::string_view text) override {
    if (table_.Find(key) == nullptr) return false;
    table_.SetText(params_, key, text);
    return true;
  }
  uint64_t rows() const override { return params_.rows; }
  Dataset Generate(uint64_t first_row, uint64_t rows, ThreadPool* pool) const override {
    Params p = params_;
    p.first_row = first_row;
    p.rows = rows;
    return generate_(p, pool);
  }

 private:
  std::string name_, description_;
  const ParamTable<Params>& table_;
  GenerateFn generate_;
  Params params_;
};

}  // namespace

const ParamTable<YfccSyntheticParams>& YfccSyntheticTable() {
  static const ParamTable<YfccSyntheticParams> table = MakeYfccTable();
  return table;
}

YfccSyntheticParams::YfccSyntheticParams() { YfccSyntheticTable().ApplyDefaults(*this); }

Dataset GenerateYfcc(const YfccSyntheticParams& p, ThreadPool* pool) {
  YfccSyntheticTable().CheckValues(p);
  CheckDenseSize(p.rows, p.features);  // before the planted direction and the rows are allocated
  const std::vector<float> v = PlantedDirection(p.features, p.seed);
  const double mu = NormalQuantile(p.active);
  const double scale = mu + 4.0;  // about the largest activation: the min-max normalization's divisor
  Dataset d = GenerateDenseRows(p.first_row, p.rows, p.features, p.seed, pool, [&](Rng& rng, float* x) {
    const double c = rng.Uniform() < 0.5 ? 1.0 : -1.0;
    const bool flip = rng.Uniform() < p.noise;
    for (uint64_t j = 0; j < p.features; ++j) {
      const double a = mu + c * p.signal * v[j] + rng.Normal();
      if (x) x[j] = static_cast<float>(std::round(std::min(1.0, std::max(0.0, a) / scale) * 1000.0) / 1000.0);
    }
    return static_cast<float>(flip ? -c : c);
  });
  d.source = "yfcc";
  return d;
}

std::vector<std::string> SyntheticGeneratorNames() { return {"dense", "sparse", "yfcc"}; }

std::unique_ptr<SyntheticGenerator> MakeSyntheticGenerator(std::string_view name) {
  if (name == "dense") {
    return std::make_unique<TableGenerator<DenseSyntheticParams>>(
        "dense", "YFCC-shaped uniform dense features with a planted direction", DenseSyntheticTable(), GenerateDense);
  }
  if (name == "sparse") {
    return std::make_unique<TableGenerator<SparseSyntheticParams>>(
        "sparse", "Criteo-shaped hashed categorical fields, ~3% positives", SparseSyntheticTable(), GenerateSparse);
  }
  if (name == "yfcc") {
    return std::make_unique<TableGenerator<YfccSyntheticParams>>(
        "yfcc", "fc6-like non-negative sparse activations in [0, 1], as PIM-Opt's YFCC100M-HNfc6",
        YfccSyntheticTable(), GenerateYfcc);
  }
  return nullptr;
}

const ParamTable<DenseSyntheticParams>& DenseSyntheticTable() {
  static const ParamTable<DenseSyntheticParams> table = MakeDenseTable();
  return table;
}

const ParamTable<SparseSyntheticParams>& SparseSyntheticTable() {
  static const ParamTable<SparseSyntheticParams> table = MakeSparseTable();
  return table;
}

DenseSyntheticParams::DenseSyntheticParams() { DenseSyntheticTable().ApplyDefaults(*this); }
SparseSyntheticParams::SparseSyntheticParams() { SparseSyntheticTable().ApplyDefaults(*this); }

Dataset GenerateDense(const DenseSyntheticParams& p, ThreadPool* pool) {
  DenseSyntheticTable().CheckValues(p);
  CheckDenseSize(p.rows, p.features);  // before the planted direction and the rows are allocated
  const std::vector<float> v = PlantedDirection(p.features, p.seed);
  const float shift = static_cast<float>(p.separation);
  const float spread = static_cast<float>(1.0 - 2.0 * p.separation);
  Dataset d = GenerateDenseRows(p.first_row, p.rows, p.features, p.seed, pool, [&](Rng& rng, float* x) {
    const float y = rng.Uniform() < 0.5 ? 1.0f : -1.0f;
    const bool flip = rng.Uniform() < p.noise;
    for (uint64_t j = 0; j < p.features; ++j) {
      const float u = rng.UniformFloat();
      if (x) x[j] = std::clamp(0.5f + y * shift * v[j] + spread * (u - 0.5f), 0.0f, 1.0f);
    }
    return flip ? -y : y;
  });
  d.source = "dense";
  return d;
}

Dataset GenerateSparse(const SparseSyntheticParams& p, ThreadPool* pool) {
  SparseSyntheticTable().CheckValues(p);
  // Per row: its column list (a vector and up to `fields` entries, then again in the CSR matrix), logit, uniform
  // and label; the vocabularies' tables besides.
  CheckMemoryNeed(SaturatingProduct(p.fields, SaturatingProduct(p.max_vocabulary, sizeof(double))),
                  StrCat("the value tables of ", p.fields, " fields of up to ", p.max_vocabulary, " values"),
                  "--vocabulary");
  CheckGeneratedSize(p.rows, SaturatingProduct(p.fields, 2 * sizeof(uint32_t)) + 64, 0,
                     StrCat(p.rows, " sparse rows of ", p.fields, " fields"));
  // Per-field Zipf cumulative tables.
  std::vector<std::vector<double>> cdf(p.fields);
  for (uint32_t f = 0; f < p.fields; ++f) {
    const double t = p.fields == 1 ? 1.0 : static_cast<double>(f) / (p.fields - 1);
    const auto vocab = static_cast<uint64_t>(std::llround(
        std::exp(std::log(10.0) + t * (std::log(static_cast<double>(p.max_vocabulary)) - std::log(10.0)))));
    cdf[f].resize(vocab);
    double sum = 0;
    for (uint64_t v = 0; v < vocab; ++v) {
      sum += 1.0 / std::pow(static_cast<double>(v + 1), p.zipf_exponent);
      cdf[f][v] = sum;
    }
    for (auto& c : cdf[f]) c /= sum;
  }
  const double scale = p.signal / std::sqrt(static_cast<double>(p.fields));
  const uint64_t hash_seed = StreamSeed(p.seed, kModelStream);
  std::vector<std::vector<uint32_t>> row_cols(p.rows);
  std::vector<double> logits(p.rows);
  std::vector<double> uniforms(p.rows);
  ForEachBlock(p.first_row, p.rows, pool, [&](uint64_t block, uint64_t begin, uint64_t end) {
    Rng rng(StreamSeed(p.seed, kRowStream, block));
    std::vector<uint32_t> cols;
    for (uint64_t r = block * kRowsPerBlock; r < end; ++r) {
      cols.clear();
      double logit = 0;
      for (uint32_t f = 0; f < p.fields; ++f) {
        const double u = rng.Uniform();
        const uint64_t v = static_cast<uint64_t>(std::lower_bound(cdf[f].begin(), cdf[f].end(), u) - cdf[f].begin());
        const uint64_t key = hash_seed ^ (uint64_t{f} << 40) ^ std::min<uint64_t>(v, cdf[f].size() - 1);
        cols.push_back(static_cast<uint32_t>(Mix64(key) % p.features));
        logit += scale * HashedNormal(key);
      }
      const double label_u = rng.Uniform();
      if (r < begin) continue;
      std::sort(cols.begin(), cols.end());
      cols.erase(std::unique(cols.begin(), cols.end()), cols.end());
      row_cols[r - p.first_row] = cols;
      logits[r - p.first_row] = logit;
      uniforms[r - p.first_row] = label_u;
    }
  });
  // The intercept depends only on the planted model, not on which rows were drawn: estimate it on a fixed
  // reference sample (rows 0..4095 of the distribution) so train and test sets agree.
  std::vector<double> ref_logits;
  {
    Rng rng(StreamSeed(p.seed, kRowStream ^ 0xFEEDULL));
    for (int r = 0; r < 4096; ++r) {
      double logit = 0;
      for (uint32_t f = 0; f < p.fields; ++f) {
        const double u = rng.Uniform();
        const uint64_t v = static_cast<uint64_t>(std::lower_bound(cdf[f].begin(), cdf[f].end(), u) - cdf[f].begin());
        logit += scale * HashedNormal(hash_seed ^ (uint64_t{f} << 40) ^ std::min<uint64_t>(v, cdf[f].size() - 1));
      }
      ref_logits.push_back(logit);
    }
  }
  double lo = -50, hi = 50;
  for (int it = 0; it < 100; ++it) {
    const double mid = 0.5 * (lo + hi);
    double mean = 0;
    for (double l : ref_logits) mean += 1.0 / (1.0 + std::exp(-(l + mid)));
    mean /= static_cast<double>(ref_logits.size());
    (mean < p.positive_rate ? lo : hi) = mid;
  }
  const double intercept = 0.5 * (lo + hi);
  CsrMatrix m;
  m.row_ptr.reserve(p.rows + 1);
  std::vector<float> labels(p.rows);
  for (uint64_t i = 0; i < p.rows; ++i) {
    m.col.insert(m.col.end(), row_cols[i].begin(), row_cols[i].end());
    m.row_ptr.push_back(m.col.size());
    const double prob = 1.0 / (1.0 + std::exp(-(logits[i] + intercept)));
    labels[i] = uniforms[i] < prob ? 1.0f : -1.0f;
  }
  m.val.assign(m.col.size(), 1.0f);
  Dataset d = Dataset::FromCsr(p.features, std::move(m), std::move(labels));
  d.source = "sparse";
  return d;
}

}  // namespace pimopt
