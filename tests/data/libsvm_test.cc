#include "pimopt/data/libsvm.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <random>
#include <thread>

#include "pimopt/core/error.h"
#include "pimopt/core/file_util.h"
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
                                           // from_chars reads "-3" once the '+' is skipped: "+-3" was -3
                                           BadCase{"plus_minus_value", "1 1:1\n-1 1:+-3\n", 2, "is not a number"},
                                           BadCase{"plus_minus_label", "1 1:1\n+-1 1:2\n", 2, "is not a number"},
                                           BadCase{"empty_file", "", 0, "no samples"},
                                           BadCase{"only_comments", "# nothing\n\n", 0, "no samples"}),
                         [](const auto& info) { return std::string(info.param.name); });

// A text of several pieces (the parse cuts it at line ends every few MiB and parses them on threads): the rows in
// file order, and each error at its line in the whole file, the first one in file order winning.
TEST(Libsvm, TextOfManyPiecesParsesInFileOrderAndNamesTheWholeFilesLine) {
  std::string text;
  const int rows = 200000;  // about 14 MB: 12 pieces on the 3 threads, 4 on the caller's alone
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

// The text has no header: a last feature without a value in any row vanished on the way back (convert said "3
// features" and wrote a file of 2, which a test set of fewer features than its training set then met).
TEST(Libsvm, WrittenFilesKeepTheFeatureCount) {
  testing::TempDir dir;
  Dataset dense(Storage::kDense, 4);
  dense.AppendDenseRow(std::vector<float>{1, 0.5f, 0, 0}, 1);
  dense.AppendDenseRow(std::vector<float>{0, 2, 0, 0}, -1);
  const Dataset sparse = dense.ToSparse();
  for (const Dataset* d : {static_cast<const Dataset*>(&dense), &sparse}) {
    WriteLibsvm(*d, dir.Path("d.svm"));
    const Dataset back = ReadLibsvm(dir.Path("d.svm"));
    EXPECT_EQ(back.num_features(), 4u);
    testing::ExpectSameData(dense, back.ToDense());
  }
  // A set whose last feature has a value somewhere is written as it is, without an added zero.
  const Dataset full = ParseLibsvm("1 1:0.1\n0 2:-4 5:1\n", "x");
  WriteLibsvm(full, dir.Path("f.svm"));
  EXPECT_EQ(testing::ReadText(dir.Path("f.svm")), "1 1:0.1\n0 2:-4 5:1\n");
}

// LIBSVM text has no place for per-sample weights: writing a weighted set is refused, not the weights dropped.
TEST(Libsvm, AWeightedSetIsNotWrittenWithoutItsWeights) {
  testing::TempDir dir;
  Dataset d = ParseLibsvm("1 1:0.1\n0 2:-4\n", "x");
  d.set_weights({1.0f, 3.0f});
  try {
    WriteLibsvm(d, dir.Path("w.svm"));
    FAIL() << "written";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("per-sample weights"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(dir.Path("w.svm")));
}

TEST(Libsvm, MissingFileNamesThePath) {
  try {
    ReadLibsvm("/no/such/file.svm");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("/no/such/file.svm"), std::string::npos);
  }
}

// The common lines take a one-pass parse; every other line the full checks. Random texts near the format (valid
// lines, and lines with one thing wrong or unusual: signs, exponents, comments, control characters, CRLF, labels
// that set or break the convention, indices at the limits) parse to the same rows, or fail with the same first
// error, as with every line checked.
TEST(Libsvm, OnePassLinesMatchTheFullChecksOnRandomTexts) {
  std::mt19937_64 rng(11);
  const std::vector<std::string> labels = {"1", "+1", "-1", "0", "+0", "-0", "1.0", "10", "2", "", "+-1", "1e0",
                                           "-1x", "0 ", " 1", "\t-1", "1:1", "#", "01"};
  const std::vector<std::string> indices = {"1", "2", "3", "7", "10", "007", "0", "-3", "+3", "", "268435456",
                                            "268435457", "999999999", "1000000000", "99999999999999999999999", "3x"};
  const std::vector<std::string> values = {"1", "0.5", "-2.25", "+3", "1e-3", "1E5", ".5", "5.", "-0", "0", "1e39",
                                           "-1e39", "nan", "inf", "", "abc", "1:2", "1.5x", "0x10", "++1", "3.4e38",
                                           "1e-50", "7#c", "2\r", "0.0039215689", "-0.0", "00.5", "123456789012345678",
                                           "12345678901234567890", "9007199254740993", "9007199254740992",
                                           "0.1000000000000000000000001", "1.2.3", "4e", "-.5", "-"};
  const std::vector<std::string> separators = {" ", " ", " ", "  ", "\t", " \r", "\v", "\f", ""};
  auto pick = [&](const std::vector<std::string>& v) { return v[rng() % v.size()]; };
  int errors = 0, parsed = 0;
  for (int text_no = 0; text_no < 4000; ++text_no) {
    std::string text;
    const int lines = 1 + static_cast<int>(rng() % 4);
    for (int l = 0; l < lines; ++l) {
      const bool clean = rng() % 3 != 0;  // most lines well formed, as files are
      std::string line = clean ? std::vector<std::string>{"1", "-1", "0", "+1"}[rng() % 4] : pick(labels);
      uint64_t index = 0;
      const int entries = static_cast<int>(rng() % 5);
      for (int e = 0; e < entries; ++e) {
        index += 1 + rng() % 4;
        line += clean ? " " : pick(separators);
        line += clean ? std::to_string(index) : pick(indices);
        line += clean || rng() % 8 != 0 ? ":" : "";
        if (rng() % 4 == 0) {  // a random decimal: up to 21 digits, the point anywhere or nowhere
          std::string digits = rng() % 3 == 0 ? "-" : "";
          const int n = 1 + static_cast<int>(rng() % 21), point = static_cast<int>(rng() % (n + 2));
          for (int d = 0; d < n; ++d) digits += static_cast<char>(d == point ? '.' : '0' + rng() % 10);
          line += digits;
        } else {
          line += clean ? std::vector<std::string>{"1", "0.5", "-2.25", "1e-3"}[rng() % 4] : pick(values);
        }
      }
      if (!clean && rng() % 6 == 0) line += " # note";
      if (!clean && rng() % 10 == 0) line.insert(rng() % (line.size() + 1), 1, static_cast<char>(1 + rng() % 31));
      if (rng() % 5 == 0) line += "\r";
      text += line;
      if (l + 1 < lines || rng() % 2 == 0) text += "\n";
    }
    std::string fast_error, checked_error;
    std::optional<Dataset> fast, checked;
    try {
      fast = ParseLibsvm(text, "r.svm");
    } catch (const ParseError& e) {
      fast_error = e.what();
    }
    try {
      checked = ParseLibsvmEveryLineChecked(text, "r.svm");
    } catch (const ParseError& e) {
      checked_error = e.what();
    }
    ASSERT_EQ(fast_error, checked_error) << "text: " << text;
    if (fast) {
      ++parsed;
      testing::ExpectSameData(*fast, *checked);
      ASSERT_FALSE(HasFailure()) << "text: " << text;
    } else {
      ++errors;
    }
  }
  // Both outcomes were exercised many times.
  EXPECT_GT(parsed, 1000);
  EXPECT_GT(errors, 1000);
}

// A set the caller's rule stores dense is joined straight into the dense matrix: the values ToDense gives the CSR
// set, on any number of threads; the rule sees the set's counts.
TEST(Libsvm, DenseRuleBuildsTheDenseMatrixOfTheSameValues) {
  std::string text;
  for (int i = 0; i < 120000; ++i) text += StrCat(i % 2 ? "1" : "-1", " ", 1 + i % 5, ":", i % 97, " 9:", i % 7, ".5\n");
  uint64_t seen_rows = 0, seen_features = 0, seen_stored = 0;
  auto dense = [&](uint64_t rows, uint64_t features, uint64_t stored) {
    seen_rows = rows;
    seen_features = features;
    seen_stored = stored;
    return true;
  };
  ThreadPool pool(3, /*use_all_threads=*/true);
  const Dataset sparse = ParseLibsvm(text, "d.svm", &pool);
  ASSERT_TRUE(sparse.is_sparse());
  for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
    const Dataset d = ParseLibsvm(text, "d.svm", p, dense);
    ASSERT_FALSE(d.is_sparse());
    testing::ExpectSameData(d, sparse.ToDense());
    EXPECT_EQ(d.source, "d.svm");
  }
  EXPECT_EQ(seen_rows, 120000u);
  EXPECT_EQ(seen_features, 9u);
  EXPECT_EQ(seen_stored, sparse.num_stored());
  testing::ExpectSameData(ParseLibsvm(text, "d.svm", &pool, [](uint64_t, uint64_t, uint64_t) { return false; }),
                          sparse);
}

// A data file is mapped, not copied; what cannot be mapped (a pipe, an empty file) is read to its end.
TEST(Libsvm, FilesArePipesAndEmptyFilesReadTheSame) {
  testing::TempDir dir;
  const std::string text = "1 1:0.5 3:2\n0 2:1\n";
  testing::WriteText(dir.Path("d.svm"), text);
  testing::ExpectSameData(ReadLibsvm(dir.Path("d.svm")), ParseLibsvm(text, dir.Path("d.svm")));
  EXPECT_EQ(FileBytes(dir.Path("d.svm")).view(), text);
  const std::string fifo = dir.Path("pipe.svm");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::thread writer([&] { testing::WriteText(fifo, text); });
  const Dataset from_pipe = ReadLibsvm(fifo);
  writer.join();
  testing::ExpectSameData(from_pipe, ParseLibsvm(text, fifo));
  testing::WriteText(dir.Path("empty.svm"), "");
  EXPECT_EQ(FileBytes(dir.Path("empty.svm")).view(), "");
  EXPECT_THROW(ReadLibsvm(dir.Path("empty.svm")), ParseError);
  try {
    FileBytes bytes(dir.Path(""));
    FAIL() << "a directory was read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("is a directory"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace pimopt
