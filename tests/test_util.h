// Helpers shared by the tests: temporary directories, small files, tiny datasets.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "pimopt/algorithms/train.h"
#include "pimopt/data/dataset.h"

namespace pimopt::testing {

// A fresh directory under the system temp dir, removed when the object dies.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }

 private:
  std::filesystem::path dir_;
};

void WriteText(const std::string& path, const std::string& text);
void WriteBytes(const std::string& path, const std::vector<unsigned char>& bytes);
void WriteGzip(const std::string& path, const std::vector<unsigned char>& bytes);
std::string ReadText(const std::string& path);
// Files in `dir` whose name contains ".tmp." (left-over temporaries).
std::vector<std::string> TempLeftovers(const std::string& dir);

// Small linearly-separable-ish datasets from the synthetic generators.
// EXPECTs that two datasets hold the same storage, shape, labels, values and original label values.
void ExpectSameData(const Dataset& a, const Dataset& b);

Dataset SmallDense(uint64_t rows = 2000, uint64_t features = 20, uint64_t seed = 7, uint64_t first_row = 0);
Dataset SmallSparse(uint64_t rows = 4000, uint64_t features = 1 << 12, uint64_t seed = 7, uint64_t first_row = 0);

// The built-in fashion-mnist train and test sets, loaded once per test program.
const Dataset& FashionMnistTrain();
const Dataset& FashionMnistTest();

// Runs training on the CPU backend with the given number of threads (all of them, even beyond the CPUs).
TrainResult TrainCpu(const Dataset& train, const TrainConfig& config, int threads = 2, const Dataset* test = nullptr);

// The logistic objective's optimum (F, or F_b with o.regularize_bias) by Newton's method over [w, b] in double
// precision, on dense data (an independent solver to check the algorithms and certificates against).
LinearModel NewtonLogisticOptimum(const Dataset& data, const Objective& o);

}  // namespace pimopt::testing
