// Seeded synthetic datasets with a planted linear model. Rows are generated in fixed blocks, each from its own
// random stream, so the data is identical whatever the thread count. Row i of a generator is always the same
// row, so a test set is simply a later range of rows (`first_row`) drawn from the same planted model.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "pimopt/core/params.h"
#include "pimopt/data/dataset.h"

namespace pimopt {

class ThreadPool;

// Shaped like YFCC100M-HNfc6 as PIM-Opt uses it: dense features in [0,1], balanced labels. Class-conditional
// means around a planted direction v (balanced +1/-1 entries, so sum_j v_j = 0 and no bias is needed):
//   true class c_i = +1/-1 with probability 1/2;  x_ij = 1/2 + c_i * separation * v_j + (1 - 2 separation)(u_ij - 1/2)
// with u_ij ~ U(0,1) (so x_ij stays in [0,1]); the observed label is c_i flipped with probability `noise`.
// The planted classifier sign(v.(x - 1/2)) has margin SNR = separation * n / ((1 - 2 separation) sqrt(n/12)), about
// 2.2 for the defaults (n = 4096): its accuracy is about (1 - noise) * 0.986 = 93.7%.
// The distribution's parameters are declared once in DenseSyntheticTable() (`pimopt gen dense` flags and the
// `dense:key=value` keys of the built-in); the constructor applies their defaults.
struct DenseSyntheticParams {
  DenseSyntheticParams();
  uint64_t rows;
  uint64_t features;
  double noise;       // label flip probability
  double separation;  // class mean shift per feature
  uint64_t seed;
  uint64_t first_row = 0;  // where in the generator's sequence of rows to start (not a distribution parameter)
};
const ParamTable<DenseSyntheticParams>& DenseSyntheticTable();

// Shaped like Criteo as PIM-Opt uses it: `fields` categorical fields per row (39), field f has a vocabulary
// whose size grows log-uniformly from 10 to `max_vocabulary`, values drawn from a Zipf(`zipf_exponent`) law
// (power-law feature frequencies); each (field, value) is hashed into `features` binary features (colliding
// indices in one row merge, so a row has <= `fields` non-zeros). Planted weight per (field, value) ~ N(0, s^2)
// with s = signal/sqrt(fields); labels ~ Bernoulli(sigmoid(sum + b)) with b chosen so that the expected positive
// rate is `positive_rate` (about 3% by default).
// Declared once in SparseSyntheticTable() (`pimopt gen sparse` flags, `sparse:key=value` keys).
struct SparseSyntheticParams {
  SparseSyntheticParams();
  uint64_t rows;
  uint64_t features;
  uint32_t fields;
  uint64_t max_vocabulary;
  double zipf_exponent;
  double signal;
  double positive_rate;
  uint64_t seed;
  uint64_t first_row = 0;
};
const ParamTable<SparseSyntheticParams>& SparseSyntheticTable();

// Shaped like PIM-Opt's YFCC100M-HNfc6 features themselves: fc6-like activations, non-negative with many zeros,
// then scaled into [0, 1] as the artifact's min-max normalization does (so its own learning rates train it).
// Pre-activations a_ij = mu + c_i * signal * v_j + e_ij with e_ij ~ N(0, 1), true class c_i = +1/-1 with
// probability 1/2 and a balanced planted direction v (+1/-1); mu = Phi^-1(active) puts a fraction `active` of the
// activations above zero; x_ij = min(1, max(0, a_ij) / (mu + 4)) (rounded to 3 decimals, as the artifact's
// normalization is); the observed label is c_i flipped with probability `noise`.
struct YfccSyntheticParams {
  YfccSyntheticParams();
  uint64_t rows;
  uint64_t features;
  double active;  // fraction of non-zero activations
  double signal;  // class mean shift of the pre-activations along the planted direction
  double noise;   // label flip probability
  uint64_t seed;
  uint64_t first_row = 0;
};
const ParamTable<YfccSyntheticParams>& YfccSyntheticTable();

Dataset GenerateDense(const DenseSyntheticParams& params, ThreadPool* pool = nullptr);
Dataset GenerateSparse(const SparseSyntheticParams& params, ThreadPool* pool = nullptr);
Dataset GenerateYfcc(const YfccSyntheticParams& params, ThreadPool* pool = nullptr);

// The generators by name ("dense", "sparse", "yfcc"): what the built-in names and `pimopt gen` use.
class SyntheticGenerator {
 public:
  virtual ~SyntheticGenerator() = default;
  virtual const std::string& name() const = 0;
  virtual const std::string& description() const = 0;
  virtual std::vector<const ParamInfo*> params() const = 0;
  // Sets a parameter from text (ConfigError naming --key); false when the generator has no such parameter.
  virtual bool Set(std::string_view key, std::string_view text) = 0;
  virtual uint64_t rows() const = 0;
  // Rows [first_row, first_row + rows) of the generator's sequence (a row is a function of its number).
  virtual Dataset Generate(uint64_t first_row, uint64_t rows, ThreadPool* pool) const = 0;
};
std::unique_ptr<SyntheticGenerator> MakeSyntheticGenerator(std::string_view name);  // nullptr: no such generator
std::vector<std::string> SyntheticGeneratorNames();

}  // namespace pimopt
