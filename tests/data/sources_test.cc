#include "pimopt/data/sources.h"

#include <gtest/gtest.h>

#include "pimopt/core/error.h"
#include "pimopt/data/binary_format.h"
#include "pimopt/data/libsvm.h"
#include "test_util.h"

namespace pimopt {
namespace {

TEST(Sources, DetectsFormatsByContent) {
  testing::TempDir dir;
  testing::WriteText(dir.Path("a.data"), "1 1:1 2:1\n-1 2:1\n");
  const Dataset text = LoadDataset(dir.Path("a.data"), {});
  EXPECT_EQ(text.num_rows(), 2u);
  WriteBinaryDataset(text, dir.Path("b.data"));
  EXPECT_EQ(LoadDataset(dir.Path("b.data"), {}).num_rows(), 2u);
}

TEST(Sources, AutoStorageMakesDenseDataDense) {
  testing::TempDir dir;
  testing::WriteText(dir.Path("dense.svm"), "1 1:1 2:1\n-1 1:1 2:3\n");
  testing::WriteText(dir.Path("sparse.svm"), "1 1:1\n-1 100:1\n");
  EXPECT_FALSE(LoadDataset(dir.Path("dense.svm"), {}).is_sparse());
  EXPECT_TRUE(LoadDataset(dir.Path("sparse.svm"), {}).is_sparse());
  SourceOptions force;
  force.storage = StorageChoice::kSparse;
  EXPECT_TRUE(LoadDataset(dir.Path("dense.svm"), force).is_sparse());
}

TEST(Sources, SyntheticNamesTakeParametersAndHaveTestRows) {
  const Dataset d = LoadDataset("dense:rows=100,features=5,seed=3", {});
  EXPECT_EQ(d.num_rows(), 100u);
  EXPECT_EQ(d.num_features(), 5u);
  const auto test = LoadCompanionTestSet("dense:rows=100,features=5,seed=3,test_rows=40", {});
  ASSERT_TRUE(test.has_value());
  EXPECT_EQ(test->num_rows(), 40u);
  EXPECT_FALSE(std::equal(test->dense_values().begin(), test->dense_values().begin() + 5, d.dense_values().begin()));
  const Dataset s = LoadDataset("sparse:rows=200,features=1000", {});
  EXPECT_TRUE(s.is_sparse());
  EXPECT_EQ(s.num_features(), 1000u);
}

TEST(Sources, RowRangesOfBuiltinsAndCachesEqualTheWholeSets) {
  // One MPI rank's rows, produced without the others, are exactly those rows of the whole set.
  auto same_rows = [](const Dataset& whole, const Dataset& part, uint32_t begin) {
    std::vector<uint32_t> rows(part.num_rows());
    for (uint32_t i = 0; i < rows.size(); ++i) rows[i] = begin + i;
    testing::ExpectSameData(whole.SelectRows(rows), part);
  };
  const SourceOptions options;
  for (const std::string spec : {"dense:rows=300,features=20,test_rows=50", "sparse:rows=400,features=5000"}) {
    ASSERT_EQ(CountRowsCheaply(spec), spec[0] == 'd' ? 300u : 400u);
    const Dataset whole = LoadDataset(spec, options);
    same_rows(whole, LoadRawRows(spec, false, 120, 250), 120);
    const Dataset test = *LoadCompanionTestSet(spec, options);
    ASSERT_EQ(CountRowsCheaply(spec, true), test.num_rows());
    same_rows(test, LoadRawRows(spec, true, 10, 40), 10);
  }
  testing::TempDir dir;
  const Dataset data = testing::SmallDense(90, 6);
  WriteBinaryDataset(data, dir.Path("d.bin"));
  EXPECT_EQ(CountRowsCheaply(dir.Path("d.bin")), 90u);
  same_rows(data, LoadRawRows(dir.Path("d.bin"), false, 30, 61), 30);
  EXPECT_FALSE(CountRowsCheaply("fashion-mnist").has_value());
  EXPECT_THROW(LoadRawRows("dense:rows=10", false, 5, 11), InputError);
}

TEST(Sources, BadSpecsNameTheProblem) {
  EXPECT_THROW(LoadDataset("dense:rows=abc", {}), ConfigError);
  EXPECT_THROW(LoadDataset("dense:colour=3", {}), ConfigError);
  EXPECT_THROW(LoadDataset("fashion-mnist:validation", {}), ConfigError);
  try {
    LoadDataset("/no/such/data.svm", {});
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("/no/such/data.svm"), std::string::npos);
  }
}

TEST(Sources, FashionMnistIsTheDefaultBuiltin) {
  if (!std::filesystem::exists(FashionMnistDir() + "/train-images-idx3-ubyte.gz")) {
    GTEST_FAIL() << "dataset-fashion-mnist is not installed (scripts/setup.sh installs it)";
  }
  const Dataset test = LoadDataset("fashion-mnist:test", {});
  EXPECT_EQ(test.num_rows(), 10000u);
  EXPECT_EQ(test.num_features(), 784u);
  EXPECT_EQ(test.CountPositives(), 4000u);  // classes 0,2,4,6 have 1000 test images each
  for (float v : test.dense_values()) {
    ASSERT_GE(v, 0.0f);
    ASSERT_LE(v, 1.0f);
  }
}

}  // namespace
}  // namespace pimopt
