// PIM-Opt's text data formats: read with their exact meaning (labels 0/1, Q1.31 features, 1-based binary
// features), written back identically, malformed lines named by file:line, and not mistaken for LIBSVM.
#include "pimopt/data/artifact_text.h"

#include <gtest/gtest.h>

#include "pimopt/core/error.h"
#include "pimopt/data/sources.h"
#include "test_util.h"

namespace pimopt {
namespace {

std::string ErrorOf(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(YfccText, ReadsLabelsAndQ31Features) {
  const Dataset d = ParseYfccText("1 2147483648 0 1073741824\n\n0 536870912 4294967295 1\n", "y.txt");
  ASSERT_EQ(d.num_rows(), 2u);
  ASSERT_EQ(d.num_features(), 3u);
  EXPECT_FALSE(d.is_sparse());
  EXPECT_EQ(d.labels()[0], 1.0f);
  EXPECT_EQ(d.labels()[1], -1.0f);
  EXPECT_EQ(d.positive_label_value, 1);
  EXPECT_EQ(d.negative_label_value, 0);
  const auto v = d.dense_values();
  EXPECT_EQ(v[0], 1.0f);  // 2^31 is the artifact's 1.0
  EXPECT_EQ(v[1], 0.0f);
  EXPECT_EQ(v[2], 0.5f);
  EXPECT_EQ(v[3], 0.25f);
  EXPECT_FLOAT_EQ(v[4], 2.0f);  // the largest uint32, just under 2
  EXPECT_EQ(ErrorOf([] { ParseYfccText("1 5 6\n0 5\n", "y.txt"); }), "y.txt:2: 1 features; the first row has 2");
  EXPECT_EQ(ErrorOf([] { ParseYfccText("2 5\n", "y.txt"); }), "y.txt:1: label '2' is not 0 or 1");
  EXPECT_EQ(ErrorOf([] { ParseYfccText("1 -5\n", "y.txt"); }),
            "y.txt:1: feature '-5' is not an unsigned whole number");
  EXPECT_EQ(ErrorOf([] { ParseYfccText("1 4294967296\n", "y.txt"); }), "y.txt:1: feature 4294967296 does not fit 32 bits");
  EXPECT_EQ(ErrorOf([] { ParseYfccText("1\n", "y.txt"); }), "y.txt:1: a row needs a label and at least one feature");
  EXPECT_EQ(ErrorOf([] { ParseYfccText("\n\n", "y.txt"); }), "y.txt: no rows");
}

TEST(CriteoText, ReadsBinaryFeaturesByTheirLibsvmNumbers) {
  const Dataset d = ParseCriteoText("0 3 1 1000000 3\n1\n", "c.txt");
  ASSERT_EQ(d.num_rows(), 2u);
  EXPECT_EQ(d.num_features(), kCriteoTextFeatures);
  ASSERT_TRUE(d.is_sparse());
  const CsrMatrix& m = d.csr();
  EXPECT_EQ(std::vector<uint32_t>(m.col.begin(), m.col.end()), (std::vector<uint32_t>{0, 2, 999999}));  // deduplicated
  EXPECT_EQ(std::vector<float>(m.val.begin(), m.val.end()), (std::vector<float>{1, 1, 1}));
  EXPECT_EQ(d.labels()[0], -1.0f);
  EXPECT_EQ(d.labels()[1], 1.0f);
  EXPECT_EQ(ErrorOf([] { ParseCriteoText("1 0\n", "c.txt"); }), "c.txt:1: feature number 0 is outside 1..1000000");
  EXPECT_EQ(ErrorOf([] { ParseCriteoText("1 7\n1 1000001\n", "c.txt"); }),
            "c.txt:2: feature number 1000001 is outside 1..1000000");
  EXPECT_EQ(ErrorOf([] { ParseCriteoText("1 x\n", "c.txt"); }),
            "c.txt:1: feature number 'x' is not an unsigned whole number");
}

TEST(ArtifactText, WritersRoundTripAndRefuseWhatTheFormatCannotHold) {
  testing::TempDir dir;
  const std::string y = dir.Path("y.txt"), c = dir.Path("c.txt");
  const Dataset yfcc = ParseYfccText("1 2147483648 7 99\n0 12 0 1073741824\n", "in");
  WriteYfccText(yfcc, y);
  EXPECT_EQ(testing::ReadText(y), "1 2147483648 7 99\n0 12 0 1073741824\n");
  const Dataset criteo = ParseCriteoText("1 4 9\n0 1\n", "in");
  WriteCriteoText(criteo, c);
  EXPECT_EQ(testing::ReadText(c), "1 4 9\n0 1\n");
  Dataset negative(Storage::kDense, 1);
  const float minus[] = {-0.5f};
  negative.AppendDenseRow(minus, 1.0f);
  EXPECT_NE(ErrorOf([&] { WriteYfccText(negative, dir.Path("n.txt")); }).find("outside [0, 2)"), std::string::npos);
  Dataset valued(Storage::kSparse, 4);
  const uint32_t col[] = {2};
  const float half[] = {0.5f};
  valued.AppendSparseRow(col, half, 1.0f);
  EXPECT_NE(ErrorOf([&] { WriteCriteoText(valued, dir.Path("v.txt")); }).find("binary features"), std::string::npos);
  EXPECT_TRUE(testing::TempLeftovers(dir.Path("")).empty());
}

TEST(ArtifactText, LoadedByInputFormatAndNotMistakenForLibsvm) {
  testing::TempDir dir;
  const std::string path = dir.Path("train.txt");
  testing::WriteText(path, "1 1073741824 0\n0 0 2147483648\n");
  EXPECT_EQ(ErrorOf([&] { LoadDataset(path, SourceOptions{}); }),
            path + ":1: no index:value pairs, so not LIBSVM; PIM-Opt's text files are read with --input-format "
                   "yfcc-text or criteo-text");
  SourceOptions yfcc;
  SourceParams().SetText(yfcc, "input-format", "yfcc-text");
  const Dataset d = LoadDataset(path, yfcc);
  EXPECT_EQ(d.num_features(), 2u);
  EXPECT_EQ(d.dense_values()[0], 0.5f);
  SourceOptions criteo;
  SourceParams().SetText(criteo, "input-format", "criteo-text");
  EXPECT_NE(ErrorOf([&] { LoadDataset(path, criteo); }).find("is outside 1..1000000"), std::string::npos);
}

}  // namespace
}  // namespace pimopt
