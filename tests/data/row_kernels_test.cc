// The row kernels (dataset.h): sparse rows whose values are all 1 take a path that does not read them, with the
// same bits as the path that multiplies by them.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "pimopt/data/dataset.h"

namespace pimopt {
namespace row_kernels_test {  // named: the unit tests share one translation unit

TEST(SparseRows, HasOnlyOnesLooksAtEveryValue) {
  CsrMatrix m;
  EXPECT_TRUE(HasOnlyOnes(m));  // no values
  m.col = {0, 3, 1};
  m.val = {1.0f, 1.0f, 1.0f};
  m.row_ptr = {0, 2, 3};
  EXPECT_TRUE(HasOnlyOnes(m));
  for (const float other : {0.0f, -1.0f, 1.0000001f, std::numeric_limits<float>::quiet_NaN()}) {
    CsrMatrix changed = m;
    changed.val[2] = other;  // the last value only
    EXPECT_FALSE(HasOnlyOnes(changed)) << other;
  }
}

TEST(SparseRows, OnesGiveTheBitsOfMultiplyingByOne) {
  CsrMatrix m;
  m.row_ptr = {0, 4, 4, 7};  // a row, an empty row, a row with a column past the model
  m.col = {0, 2, 5, 6, 1, 3, 9};
  m.val.assign(m.col.size(), 1.0f);
  // Signed zeros, a subnormal, an infinity, a NaN and ordinary values: each kernel's arithmetic on them.
  const std::vector<float> w = {0.1f,  -0.0f, 3.0e-39f, 1.5f, std::numeric_limits<float>::infinity(),
                                -2.25f, 0.0f, 7.0f};
  const SparseRows multiply{m.row_ptr.data(), m.col.data(), m.val.data(), false};
  const SparseRows ones{m.row_ptr.data(), m.col.data(), m.val.data(), true};
  for (size_t row = 0; row < 3; ++row) {
    const float a = multiply.Dot(row, w.data(), w.size()), b = ones.Dot(row, w.data(), w.size());
    EXPECT_TRUE((std::isnan(a) && std::isnan(b)) || std::signbit(a) == std::signbit(b)) << row;
    if (!std::isnan(a)) {
      EXPECT_EQ(a, b) << row;
    }
    for (const float step : {0.5f, -0.0f, -3.0f}) {
      std::vector<float> g1 = w, g2 = w;
      g1[1] = std::numeric_limits<float>::quiet_NaN();
      g2[1] = g1[1];
      multiply.Axpy(row, step, g1.data(), g1.size());
      ones.Axpy(row, step, g2.data(), g2.size());
      for (size_t j = 0; j < w.size(); ++j) {
        if (std::isnan(g1[j])) {
          EXPECT_TRUE(std::isnan(g2[j])) << row << " " << j;
        } else {
          EXPECT_EQ(g1[j], g2[j]) << row << " " << j;
          EXPECT_EQ(std::signbit(g1[j]), std::signbit(g2[j])) << row << " " << j;
        }
      }
    }
  }
}

}  // namespace row_kernels_test
}  // namespace pimopt
