// Seeded synthetic datasets with a planted linear model. Rows are generated in fixed blocks, each from its own
// random stream, so the data is identical whatever the thread count. Row i of a generator is always the same
// row, so a test set is simply a later range of rows (`first_row`) drawn from the same planted model.
#pragma once

#include <cstdint>

#include "pimopt/data/dataset.h"

namespace pimopt {

class ThreadPool;

// Shaped like YFCC100M-HNfc6 as PIM-Opt uses it: dense features in [0,1], balanced labels.
// x_ij ~ U(0,1); planted w*_j ~ N(0,1); margin m_i = w*.(x_i - 1/2) / sqrt(n/12) (so m_i ~ N(0,1));
// y_i = sign(m_i + noise * e_i), e_i ~ N(0,1). The Bayes error is atan(noise)/pi (noise 0.15 -> 4.7%).
struct DenseSyntheticParams {
  uint64_t rows = 20000;
  uint64_t features = 4096;
  double noise = 0.15;
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
