// Newton (src/algorithms/newton.cc, the CPU backend's verbs in src/backends/cpu/cpu_newton.cc): the backend's
// derivatives against finite differences of its own loss (weights, class weights, with and without the bias), the
// optimum against CoCoA's certified one, the certificate at the stop, and the same bits for every thread count.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <vector>

#include "pimopt/algorithms/train.h"
#include "pimopt/backends/cpu/cpu_backend.h"
#include "pimopt/core/thread_pool.h"
#include "test_util.h"

namespace pimopt {
namespace {

TrainConfig NewtonConfig(double tol) {
  TrainConfig c;
  c.algorithm = "newton";
  c.objective.loss = LossKind::kLogistic;
  c.objective.l2 = 1e-3;
  c.workers = 1;
  c.batch = 1;
  c.epochs = 60;
  c.tol = tol;
  return c;
}

// The gradient is the loss's slope along each coordinate, the curvature's diagonal and CurvatureTimes are the
// gradient's slope, at a model away from zero; row weights and class weights weigh each term.
TEST(Newton, DerivativesAreTheLossSlopes) {
  for (bool sparse : {false, true}) {
    for (bool bias : {true, false}) {
      Dataset data = sparse ? testing::SmallSparse(700, 40, 3) : testing::SmallDense(700, 9, 3);
      if (sparse) {  // values other than 1, so that a square and a value differ
        CsrMatrix m = data.csr();
        for (size_t e = 0; e < m.val.size(); ++e) m.val[e] *= 0.5f + 0.3f * static_cast<float>(e % 5);
        data = Dataset::FromCsr(data.num_features(), std::move(m),
                                std::vector<float>(data.labels().begin(), data.labels().end()));
      }
      std::vector<float> weights(data.num_rows());
      for (size_t i = 0; i < weights.size(); ++i) weights[i] = i % 7 == 0 ? 0.0f : 0.5f + 0.25f * static_cast<float>(i % 3);
      data.set_weights(weights);
      TrainConfig config = NewtonConfig(0);
      config.objective.fit_bias = bias;
      config.objective.positive_weight = 2.5;
      config.ResolveDefaults();
      ThreadPool pool(2);
      CpuBackend backend(pool);
      backend.Setup(data, config);
      const size_t width = data.num_features() + 1;
      std::vector<double> start(width);
      for (size_t j = 0; j < width; ++j) start[j] = 0.3 * std::sin(1.0 + 2.0 * static_cast<double>(j));
      backend.StepGlobalModel(1.0, start);
      const PrimalDerivatives at = backend.PrimalDerivativesAtGlobal();
      const std::string what = StrCat(sparse ? "sparse" : "dense", bias ? ", bias" : ", no bias");
      const double h = 1e-3;
      for (size_t j = 0; j < width; j += sparse ? 5 : 1) {
        std::vector<double> unit(width, 0.0);
        unit[j] = 1.0;
        backend.SetPrimalDirection(unit);
        const double slope = (backend.LossSumAlong(h) - backend.LossSumAlong(-h)) / (2 * h);
        if (j + 1 == width && !bias) {
          EXPECT_EQ(at.gradient[j], 0.0) << what;
          EXPECT_EQ(slope, 0.0) << what;
          continue;
        }
        EXPECT_NEAR(at.gradient[j], slope, 1e-4 * (1 + std::fabs(slope))) << what << ", coordinate " << j;
        std::vector<double> column(width);
        backend.CurvatureTimes(unit, column);
        EXPECT_NEAR(column[j], at.curvature_diagonal[j], 1e-4 * (1 + at.curvature_diagonal[j])) << what << " " << j;
      }
      // H v against the gradient's change along v (the model moves by +-h v and back).
      std::vector<double> v(width), hv(width);
      for (size_t j = 0; j < width; ++j) v[j] = std::cos(3.0 * static_cast<double>(j));
      if (!bias) v[width - 1] = 0;
      backend.CurvatureTimes(v, hv);
      const double step = 0.05;
      backend.StepGlobalModel(step, v);
      const PrimalDerivatives plus = backend.PrimalDerivativesAtGlobal();
      backend.StepGlobalModel(-2 * step, v);
      const PrimalDerivatives minus = backend.PrimalDerivativesAtGlobal();
      double scale = 0;
      for (double x : hv) scale = std::max(scale, std::fabs(x));
      for (size_t j = 0; j < width; ++j) {
        EXPECT_NEAR(hv[j], (plus.gradient[j] - minus.gradient[j]) / (2 * step), 2e-2 * scale) << what << " " << j;
      }
    }
  }
}

// Newton's certified stop and CoCoA's end at the same optimum of F_b, each within the other's certificate.
TEST(Newton, ReachesTheOptimumCocoaCertifies) {
  const Dataset dense = testing::SmallDense(2000, 20, 6);
  const Dataset sparse = testing::SmallSparse(2000, 1 << 9, 6);
  for (const Dataset* data : {&dense, &sparse}) {
    TrainConfig config = NewtonConfig(1e-6);
    config.objective.positive_weight = 2.0;
    const TrainResult newton = testing::TrainCpu(*data, config, 2);
    ASSERT_TRUE(newton.stopped_on_gap) << newton.epochs.size() << " epochs";
    EXPECT_LT(newton.epochs.size(), 20u);  // Newton's steps converge fast once near the optimum
    const DualityGap& n = newton.epochs.back().gap;
    TrainConfig cocoa_config = config;
    cocoa_config.algorithm = "cocoa";
    cocoa_config.tol = 1e-5;
    cocoa_config.epochs = 2000;
    const TrainResult cocoa = testing::TrainCpu(*data, cocoa_config, 2);
    ASSERT_TRUE(cocoa.stopped_on_gap);
    const DualityGap& c = cocoa.epochs.back().gap;
    // Weak duality both ways: each dual below the other's primal.
    EXPECT_LE(n.dual, c.primal);
    EXPECT_LE(c.dual, n.primal);
    EXPECT_NEAR(n.primal, c.primal, n.gap() + c.gap());
  }
}

TEST(Newton, SameBitsForEveryThreadCount) {
  const Dataset dense = testing::SmallDense(9000, 16, 4);  // 4 row blocks
  const Dataset sparse = testing::SmallSparse(9000, 1 << 10, 4);
  for (const Dataset* data : {&dense, &sparse}) {
    TrainConfig config = NewtonConfig(0);
    config.epochs = 4;
    const TrainResult one = testing::TrainCpu(*data, config, 1);
    for (int threads : {2, 5}) {
      const TrainResult many = testing::TrainCpu(*data, config, threads);
      EXPECT_EQ(one.model.weights, many.model.weights) << threads << " threads";
      EXPECT_EQ(one.model.bias, many.model.bias);
    }
    // The float model hides most of a sum's last bits: the verbs' double sums themselves are the same too.
    config.ResolveDefaults();
    std::vector<std::vector<double>> sums;
    for (int threads : {1, 2, 5}) {
      ThreadPool pool(threads);
      CpuBackend backend(pool);
      backend.Setup(*data, config);
      std::vector<double> start(data->num_features() + 1), product(start.size());
      for (size_t j = 0; j < start.size(); ++j) start[j] = 0.1 * std::sin(static_cast<double>(j));
      backend.StepGlobalModel(1.0, start);
      PrimalDerivatives d = backend.PrimalDerivativesAtGlobal();
      backend.CurvatureTimes(start, product);
      d.gradient.insert(d.gradient.end(), product.begin(), product.end());
      d.gradient.push_back(d.loss_sum);
      sums.push_back(d.gradient);
    }
    EXPECT_EQ(sums[0], sums[1]);
    EXPECT_EQ(sums[0], sums[2]);
  }
}

// Newton on sparse rows keeps a column-major copy of them (without their values when all are 1): a backend set up
// again on other rows of the same count trains the model a new backend does.
TEST(Newton, OtherRowsOfTheSameCountGiveANewBackendsModel) {
  const Dataset first = testing::SmallSparse(1500, 300, 3);
  Dataset second = testing::SmallSparse(1500, 300, 4);
  std::vector<float> ones(second.csr().val.size(), 1.0f);
  second.mutable_csr().val = ones;  // binary rows: no values in the copy
  TrainConfig c = NewtonConfig(0);
  c.epochs = 3;
  ThreadPool pool(2);
  CpuBackend reused(pool);
  Train(first, nullptr, c, reused, {});
  for (const Dataset* data : {static_cast<const Dataset*>(&second), &first}) {
    CpuBackend fresh(pool);
    const LinearModel again = Train(*data, nullptr, c, reused, {}).model, anew = Train(*data, nullptr, c, fresh, {}).model;
    EXPECT_EQ(std::memcmp(again.weights.data(), anew.weights.data(), again.weights.size() * sizeof(float)), 0);
    EXPECT_EQ(std::bit_cast<uint32_t>(again.bias), std::bit_cast<uint32_t>(anew.bias));
  }
  // The binary rows' sums without their values: the model of the same rows stored dense, up to rounding.
  CpuBackend sparse_backend(pool), dense_backend(pool);
  const LinearModel a = Train(second, nullptr, c, sparse_backend, {}).model;
  const LinearModel b = Train(second.ToDense(), nullptr, c, dense_backend, {}).model;
  ASSERT_EQ(a.weights.size(), b.weights.size());
  double largest = 0;
  for (float w : b.weights) largest = std::max(largest, static_cast<double>(std::fabs(w)));
  ASSERT_GT(largest, 1e-3);
  for (size_t j = 0; j < a.weights.size(); ++j) EXPECT_NEAR(a.weights[j], b.weights[j], 1e-4 * largest) << j;
  EXPECT_NEAR(a.bias, b.bias, 1e-4 * largest);
}

}  // namespace
}  // namespace pimopt
