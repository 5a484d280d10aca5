#include "test_util.h"

#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <cmath>
#include <fstream>
#include <random>
#include <sstream>

#include "pimopt/backends/cpu/cpu_backend.h"
#include "pimopt/core/thread_pool.h"
#include "pimopt/data/sources.h"
#include "pimopt/data/synthetic.h"

namespace pimopt::testing {

TempDir::TempDir() {
  static int counter = 0;
  dir_ = std::filesystem::temp_directory_path() /
         ("pimopt_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
  std::filesystem::create_directories(dir_);
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

void WriteBytes(const std::string& path, const std::vector<unsigned char>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

void WriteGzip(const std::string& path, const std::vector<unsigned char>& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(f);
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> TempLeftovers(const std::string& dir) {
  std::vector<std::string> found;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().filename().string().find(".tmp.") != std::string::npos) found.push_back(entry.path());
  }
  return found;
}

Dataset SmallDense(uint64_t rows, uint64_t features, uint64_t seed, uint64_t first_row) {
  DenseSyntheticParams p;
  p.rows = rows;
  p.features = features;
  p.noise = 0.02;
  p.separation = 0.15;  // few features: a large shift keeps the classes apart
  p.seed = seed;
  p.first_row = first_row;
  return GenerateDense(p);
}

Dataset SmallSparse(uint64_t rows, uint64_t features, uint64_t seed, uint64_t first_row) {
  SparseSyntheticParams p;
  p.rows = rows;
  p.features = features;
  p.fields = 10;
  p.max_vocabulary = 50;
  p.positive_rate = 0.3;
  p.signal = 4.0;
  p.seed = seed;
  p.first_row = first_row;
  return GenerateSparse(p);
}

const Dataset& FashionMnistTrain() {
  static const Dataset data = LoadDataset("fashion-mnist", {});
  return data;
}

const Dataset& FashionMnistTest() {
  static const Dataset data = *LoadCompanionTestSet("fashion-mnist", {});
  return data;
}

TrainResult TrainCpu(const Dataset& train, const TrainConfig& config, int threads, const Dataset* test) {
  ThreadPool pool(threads, /*use_all_threads=*/true);  // the threads the test names, even beyond this machine's CPUs
  CpuBackend backend(pool);
  TrainOptions options;
  options.eval_pool = &pool;
  return Train(train, test, config, backend, options);
}

void ExpectSameData(const Dataset& a, const Dataset& b) {
  ASSERT_EQ(a.storage(), b.storage());
  EXPECT_EQ(a.num_rows(), b.num_rows());
  EXPECT_EQ(a.num_features(), b.num_features());
  EXPECT_TRUE(std::equal(a.labels().begin(), a.labels().end(), b.labels().begin(), b.labels().end()));
  if (a.is_sparse()) {
    EXPECT_EQ(a.csr().row_ptr, b.csr().row_ptr);
    EXPECT_EQ(a.csr().col, b.csr().col);
    EXPECT_EQ(a.csr().val, b.csr().val);
  } else {
    EXPECT_TRUE(
        std::equal(a.dense_values().begin(), a.dense_values().end(), b.dense_values().begin(), b.dense_values().end()));
  }
  EXPECT_EQ(a.positive_label_value, b.positive_label_value);
  EXPECT_EQ(a.negative_label_value, b.negative_label_value);
}

LinearModel NewtonLogisticOptimum(const Dataset& data, const Objective& o) {
  const size_t d = data.num_features(), n = data.num_rows(), p = d + 1;
  std::vector<double> theta(p, 0.0);
  for (int iter = 0; iter < 50; ++iter) {
    std::vector<double> grad(p, 0.0), hess(p * p, 0.0);
    for (size_t i = 0; i < n; ++i) {
      const float* x = data.dense_row(i);
      const double y = data.labels()[i], c = o.ClassWeight(data.labels()[i]) / static_cast<double>(n);
      double z = theta[d];
      for (size_t j = 0; j < d; ++j) z += theta[j] * x[j];
      const double s = 1.0 / (1.0 + std::exp(y * z));  // -l'(z) / y
      const double h = s * (1 - s);
      for (size_t a = 0; a < p; ++a) {
        const double xa = a < d ? x[a] : 1.0;
        grad[a] -= c * s * y * xa;
        for (size_t b = 0; b < p; ++b) hess[a * p + b] += c * h * xa * (b < d ? x[b] : 1.0);
      }
    }
    for (size_t j = 0; j < (o.regularize_bias ? p : d); ++j) {
      grad[j] += o.l2 * theta[j];
      hess[j * p + j] += o.l2;
    }
    // Solve hess * step = grad (Gaussian elimination; the Hessian is positive definite).
    std::vector<double> a = hess, step = grad;
    for (size_t k = 0; k < p; ++k) {
      for (size_t r = k + 1; r < p; ++r) {
        const double f = a[r * p + k] / a[k * p + k];
        for (size_t col = k; col < p; ++col) a[r * p + col] -= f * a[k * p + col];
        step[r] -= f * step[k];
      }
    }
    for (size_t k = p; k-- > 0;) {
      for (size_t col = k + 1; col < p; ++col) step[k] -= a[k * p + col] * step[col];
      step[k] /= a[k * p + k];
    }
    for (size_t j = 0; j < p; ++j) theta[j] -= step[j];
  }
  LinearModel m;
  m.loss = o.loss;
  m.weights.assign(theta.begin(), theta.begin() + static_cast<long>(d));
  m.bias = static_cast<float>(theta[d]);
  return m;
}


}  // namespace pimopt::testing
