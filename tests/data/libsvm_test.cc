#include "pimopt/data/libsvm.h"

#include <gtest/gtest.h>

#include "pimopt/core/error.h"
#include "pimopt/core/thread_pool.h"
#include "test_util.h"

namespace pimopt {
namespace {

TEST(Libsvm, ParsesLabelsIndicesCommentsBlankLinesAndCrlf) {
  const Dataset d = ParseLibsvm(
      "# header comment\n+1 1:0.5 3:2\r\n\n-1 2:-1.5e-1   # trailing comment\n"
      "1\n\t-1 4:1\n",
      "mem.svm");
  ASSERT_EQ(d.num_rows(), 4u);
  EXPECT_EQ(d.num_features(), 4u);
  EXPECT_TRUE(d.is_sparse());
  EXPECT_EQ(std::vector<float>(d.labels().begin(), d.labels().end()), (std::vector<float>{1, -1, 1, -1}));
  const CsrMatrix& m = d.csr();
  EXPECT_EQ(m.row_ptr, (std::vector<uint64_t>{0, 2, 3, 3, 4}));
  EXPECT_EQ(m.col, (std::vector<uint32_t>{0, 2, 1, 3}));
  EXPECT_FLOAT_EQ(m.val[1], 2.0f);
  EXPECT_FLOAT_EQ(m.val[2], -0.15f);
  EXPECT_EQ(d.negative_label_value, -1.0);
}

TEST(Libsvm, AcceptsOneZeroLabels) {
  const Dataset d = ParseLibsvm("1 1:1\n0 2:1\n", "x");
  EXPECT_EQ(d.labels()[1], -1.0f);
  EXPECT_EQ(d.negative_label_value, 0.0);
}

struct BadCase {
  const char* name;
  const char* text;
  int line;
  const char* message;
};

class LibsvmMalformed : public ::testing::TestWithParam<BadCase> {};

TEST_P(LibsvmMalformed, RaisesParseErrorNamingFileAndLine) {
  const BadCase& c = GetParam();
  try {
    ParseLibsvm(c.text, "bad.svm");
    FAIL() << "no error for " << c.name;
  } catch (const ParseError& e) {
    const std::string what = e.what();
    const std::string where = c.line > 0 ? "bad.svm:" + std::to_string(c.line) + ":" : "bad.svm:";
    EXPECT_EQ(what.rfind(where, 0), 0u) << what;
    EXPECT_NE(what.find(c.message), std::string::npos) << what;
  }
}

INSTANTIATE_TEST_SUITE_P(EveryCase, LibsvmMalformed,
                         ::testing::Values(BadCase{"non_numeric_value", "1 1:0.5\n-1 2:abc\n", 2, "is not a number"},
                                           BadCase{"index_zero", "1 0:1\n", 1, "indices are 1-based"},
                                           BadCase{"decreasing_index", "1 3:1 2:1\n", 1, "must increase"},
                                           BadCase{"duplicate_index", "1 2:1 2:1\n", 1, "duplicate feature index 2"},
                                           BadCase{"nan_value", "1 1:nan\n", 1, "not finite"},
                                           BadCase{"inf_value", "1 1:inf\n", 1, "not finite"},
                                           BadCase{"overflowing_value", "1 1:1e39\n", 1, "not finite"},
                                           BadCase{"missing_label", "1 1:1\n2:1 3:1\n", 2, "missing label"},
                                           BadCase{"unknown_label", "1 1:1\n2 1:1\n", 2, "unknown label value '2'"},
                                           BadCase{"fractional_label", "0.5 1:1\n", 1, "unknown label value"},
                                           BadCase{"non_numeric_label", "abc 1:1\n", 1, "is not a number"},
                                           BadCase{"mixed_conventions", "-1 1:1\n0 1:1\n", 2, "mixes"},
                                           BadCase{"absurd_index", "1 99999999999999999999999:1\n", 1,
                                                   "absurdly large"},
                                           BadCase{"index_over_limit", "1 300000000:1\n", 1, "exceeds the limit"},
                                           BadCase{"negative_index", "1 -3:1\n", 1, "not a positive integer"},
                                           BadCase{"missing_colon", "1 5\n", 1, "expected index:value"},
                                           BadCase{"empty_value", "1 5:\n", 1, "is not a number"},
                                           BadCase{"empty_file", "", 0, "no samples"},
                                           BadCase{"only_comments", "# nothing\n\n", 0, "no samples"}),
                         [](const auto& info) { return std::string(info.param.name); });

// A text of several pieces (the parse cuts it at line ends every few MiB and parses them on threads): the rows in
// file order, and each error at its line in the whole file, the first one in file order winning.
TEST(Libsvm, TextOfManyPiecesParsesInFileOrderAndNamesTheWholeFilesLine) {
  std::string text;
  const int rows = 200000;  // about 14 MB: four pieces
  for (int i = 0; i < rows; ++i) {
    text += StrCat(i % 3 == 0 ? "+1" : "0", " ", 1 + i % 50, ":", i % 1000, " 77:0.25 # row ", i, "\n");
  }
  ThreadPool pool(3, /*use_all_threads=*/true);
  const Dataset d = ParseLibsvm(text, "big.svm", &pool);
  testing::ExpectSameData(d, ParseLibsvm(text, "big.svm"));  // on the pool's threads and on the caller's alone
  ASSERT_EQ(d.num_rows(), static_cast<size_t>(rows));
  EXPECT_EQ(d.num_features(), 77u);
  EXPECT_EQ(d.negative_label_value, 0.0);
  for (int i : {0, 1, 77777, 123456, rows - 1}) {
    EXPECT_EQ(d.labels()[i], i % 3 == 0 ? 1.0f : -1.0f) << i;
    const uint64_t at = d.csr().row_ptr[i];
    EXPECT_EQ(d.csr().col[at], static_cast<uint32_t>(i % 50)) << i;
    EXPECT_EQ(d.csr().val[at], static_cast<float>(i % 1000)) << i;
  }
  auto error_of = [&](const std::string& t) -> std::string {
    try {
      ParseLibsvm(t, "big.svm", &pool);
    } catch (const ParseError& e) {
      return e.what();
    }
    return "no error";
  };
  // A bad line late in the file, and an earlier one too.
  std::string late = text;
  const size_t line_180001 = [&] {
    size_t pos = 0;
    for (int l = 1; l < 180001; ++l) pos = late.find('\n', pos) + 1;
    return pos;
  }();
  late.insert(line_180001, "1 3:x\n");
  EXPECT_NE(error_of(late).find("big.svm:180001"), std::string::npos) << error_of(late);
  std::string both = late;
  both.insert(0, "# a comment\n1 0:1\n");
  EXPECT_NE(error_of(both).find("big.svm:2"), std::string::npos) << error_of(both);
  // The +1/-1 convention first met in a later piece contradicts the 1/0 of the first.
  std::string mixed = text;
  mixed.insert(line_180001, "-1 3:1\n");
  EXPECT_NE(error_of(mixed).find("big.svm:180001: label '-1' mixes"), std::string::npos) << error_of(mixed);
}

TEST(Libsvm, NulByteIsRejected) { EXPECT_THROW(ParseLibsvm(std::string_view("1 1:1\n\0 2:1\n", 12), "x"), ParseError); }

TEST(Libsvm, WriteThenReadRoundTripsExactly) {
  testing::TempDir dir;
  const Dataset d = ParseLibsvm("1 1:0.1 7:3.25e-7\n0 2:-4\n1\n", "x");
  WriteLibsvm(d, dir.Path("d.svm"));
  const Dataset back = ReadLibsvm(dir.Path("d.svm"));
  EXPECT_EQ(back.csr().col, d.csr().col);
  EXPECT_EQ(back.csr().val, d.csr().val);
  EXPECT_EQ(back.csr().row_ptr, d.csr().row_ptr);
  EXPECT_EQ(std::vector<float>(back.labels().begin(), back.labels().end()),
            std::vector<float>(d.labels().begin(), d.labels().end()));
  EXPECT_EQ(back.negative_label_value, 0.0);
}

TEST(Libsvm, MissingFileNamesThePath) {
  try {
    ReadLibsvm("/no/such/file.svm");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("/no/such/file.svm"), std::string::npos);
  }
}

}  // namespace
}  // namespace pimopt
