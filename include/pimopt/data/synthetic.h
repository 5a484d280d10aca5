// Seeded synthetic datasets with a planted linear model. Rows are generated in fixed blocks, each from its own
// random stream, so the data is identical whatever the thread count. Row i of a generator is always the same
// row, so a test set is simply a later range of rows (`first_row`) drawn from the same planted model.
#pragma once

#include <cstdint>

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

Dataset GenerateDense(const DenseSyntheticParams& params, ThreadPool* pool = nullptr);
Dataset GenerateSparse(const SparseSyntheticParams& params, ThreadPool* pool = nullptr);

}  // namespace pimopt
