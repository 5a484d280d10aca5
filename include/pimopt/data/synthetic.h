// Seeded synthetic datasets with a planted linear model. Rows are generated in fixed blocks, each from its own
// random stream, so the data is identical whatever the thread count. Row i of a generator is always the same
// row, so a test set is simply a later range of rows (`first_row`) drawn from the same planted model.
#pragma once

#include <cstdint>

#include "pimopt/data/dataset.h"

namespace pimopt {

class ThreadPool;

// Shaped like YFCC100M-HNfc6 as PIM-Opt uses it: dense features in [0,1], balanced labels. Class-conditional
// means around a planted direction v (balanced +1/-1 entries, so sum_j v_j = 0 and no bias is needed):
//   true class c_i = +1/-1 with probability 1/2;  x_ij = 1/2 + c_i * separation * v_j + (1 - 2 separation)(u_ij - 1/2)
// with u_ij ~ U(0,1) (so x_ij stays in [0,1]); the observed label is c_i flipped with probability `noise`.
// The planted classifier sign(v.(x - 1/2)) has margin SNR = separation * n / ((1 - 2 separation) sqrt(n/12)), about
// 2.2 for the defaults (n = 4096): its accuracy is about (1 - noise) * 0.986 = 93.7%.
struct DenseSyntheticParams {
  uint64_t rows = 20000;
  uint64_t features = 4096;
  double noise = 0.05;       // label flip probability
  double separation = 0.01;  // class mean shift per feature
  uint64_t seed = 1;
  uint64_t first_row = 0;
};

// Shaped like Criteo as PIM-Opt uses it: `fields` categorical fields per row (39), field f has a vocabulary
// whose size grows log-uniformly from 10 to `max_vocabulary`, values drawn from a Zipf(`zipf_exponent`) law
// (power-law feature frequencies); each (field, value) is hashed into `features` binary features (colliding
// indices in one row merge, so a row has <= `fields` non-zeros). Planted weight per (field, value) ~ N(0, s^2)
// with s = signal/sqrt(fields); labels ~ Bernoulli(sigmoid(sum + b)) with b chosen so that the expected positive
// rate is `positive_rate` (about 3% by default).
struct SparseSyntheticParams {
  uint64_t rows = 100000;
  uint64_t features = 1 << 20;
  uint32_t fields = 39;
  uint64_t max_vocabulary = 100000;
  double zipf_exponent = 1.1;
  double signal = 2.0;
  double positive_rate = 0.03;
  uint64_t seed = 1;
  uint64_t first_row = 0;
};

Dataset GenerateDense(const DenseSyntheticParams& params, ThreadPool* pool = nullptr);
Dataset GenerateSparse(const SparseSyntheticParams& params, ThreadPool* pool = nullptr);

}  // namespace pimopt
