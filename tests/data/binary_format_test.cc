#include "pimopt/data/binary_format.h"

#include <cstring>
#include <limits>

#include <gtest/gtest.h>

#include "pimopt/core/error.h"
#include "pimopt/data/libsvm.h"
#include "test_util.h"

namespace pimopt {
namespace {

using testing::ExpectSameData;

TEST(BinaryFormat, DenseAndSparseRoundTripExactly) {
  testing::TempDir dir;
  const Dataset dense = testing::SmallDense(300, 17);
  WriteBinaryDataset(dense, dir.Path("d.bin"));
  ExpectSameData(dense, ReadBinaryDataset(dir.Path("d.bin")));
  Dataset sparse = ParseLibsvm("1 1:0.5 9:2\n0 3:1\n1\n", "x");
  sparse.set_weights({1.0f, 2.0f, 0.5f});
  WriteBinaryDataset(sparse, dir.Path("s.bin"));
  const Dataset back = ReadBinaryDataset(dir.Path("s.bin"));
  ExpectSameData(sparse, back);
  EXPECT_EQ(std::vector<float>(back.weights().begin(), back.weights().end()), (std::vector<float>{1, 2, 0.5f}));
  EXPECT_TRUE(IsBinaryDatasetFile(dir.Path("s.bin")));
}

TEST(BinaryFormat, RowSlicesEqualTheRowsOfTheWholeFile) {
  testing::TempDir dir;
  const Dataset dense = testing::SmallDense(300, 17);
  WriteBinaryDataset(dense, dir.Path("d.bin"));
  Dataset sparse = ParseLibsvm("1 1:0.5 9:2\n0 3:1\n1\n0 2:4 4:1 9:1\n1 1:1\n", "x");
  sparse.set_weights({1.0f, 2.0f, 0.5f, 3.0f, 1.5f});
  WriteBinaryDataset(sparse, dir.Path("s.bin"));
  auto rows = [](uint32_t begin, uint32_t end) {
    std::vector<uint32_t> r;
    for (uint32_t i = begin; i < end; ++i) r.push_back(i);
    return r;
  };
  for (auto [begin, end] : {std::pair<uint32_t, uint32_t>{0, 300}, {0, 1}, {17, 145}, {299, 300}, {40, 40}}) {
    const Dataset slice = ReadBinaryDatasetRows(dir.Path("d.bin"), begin, end);
    ExpectSameData(dense.SelectRows(rows(begin, end)), slice);
  }
  for (auto [begin, end] : {std::pair<uint32_t, uint32_t>{0, 5}, {1, 3}, {2, 3}, {3, 5}}) {
    const Dataset slice = ReadBinaryDatasetRows(dir.Path("s.bin"), begin, end);
    const Dataset want = sparse.SelectRows(rows(begin, end));
    ExpectSameData(want, slice);
    EXPECT_EQ(std::vector<float>(slice.weights().begin(), slice.weights().end()),
              std::vector<float>(want.weights().begin(), want.weights().end()));
  }
  const BinaryDatasetInfo info = ReadBinaryDatasetInfo(dir.Path("s.bin"));
  EXPECT_EQ(info.rows, 5u);
  EXPECT_EQ(info.features, 9u);
  EXPECT_TRUE(info.sparse && info.weighted);
  EXPECT_THROW(ReadBinaryDatasetRows(dir.Path("s.bin"), 2, 6), InputError);
}

class BinaryCorruption : public ::testing::Test {
 protected:
  void SetUp() override {
    WriteBinaryDataset(testing::SmallDense(50, 8), dir.Path("ok.bin"));
    bytes = testing::ReadText(dir.Path("ok.bin"));
  }
  void ExpectRejected(const std::string& content, const std::string& fragment) {
    testing::WriteText(dir.Path("bad.bin"), content);
    try {
      ReadBinaryDataset(dir.Path("bad.bin"));
      FAIL() << "accepted a corrupt file";
    } catch (const ParseError& e) {
      EXPECT_NE(std::string(e.what()).find("bad.bin"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  }
  testing::TempDir dir;
  std::string bytes;
};

TEST_F(BinaryCorruption, WrongMagic) {
  std::string b = bytes;
  b[0] = 'X';
  ExpectRejected(b, "wrong magic");
}
TEST_F(BinaryCorruption, UnknownVersion) {
  std::string b = bytes;
  b[8] = 9;
  ExpectRejected(b, "version 9");
}
TEST_F(BinaryCorruption, Truncated) { ExpectRejected(bytes.substr(0, bytes.size() - 5), "truncated"); }
TEST_F(BinaryCorruption, TruncatedHeader) { ExpectRejected(bytes.substr(0, 20), "truncated binary header"); }
TEST_F(BinaryCorruption, TrailingBytes) { ExpectRejected(bytes + "xx", "trailing bytes"); }
TEST_F(BinaryCorruption, FlippedPayloadByte) {
  std::string b = bytes;
  b[b.size() - 3] ^= 0x40;
  ExpectRejected(b, "checksum mismatch");
}
TEST_F(BinaryCorruption, Empty) { ExpectRejected("", "empty file"); }

// A header whose original label values are not finite numbers (or coincide) was once accepted: `info` printed
// "positive nan", `train` wrote a model that `predict` then refused. The header is read before the payload.
TEST_F(BinaryCorruption, ANonFiniteOrDuplicateLabelValueInTheHeaderIsRefused) {
  constexpr size_t kPositiveLabelOffset = 40, kNegativeLabelOffset = 48;  // magic, version, flags, 3 sizes
  for (const double bad : {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}) {
    for (const auto& [offset, field] : {std::pair<size_t, std::string>{kPositiveLabelOffset, "positive_label"},
                                       {kNegativeLabelOffset, "negative_label"}}) {
      std::string b = bytes;
      std::memcpy(b.data() + offset, &bad, sizeof(bad));
      ExpectRejected(b, "header field " + field);
    }
  }
  std::string b = bytes;
  std::memcpy(b.data() + kNegativeLabelOffset, b.data() + kPositiveLabelOffset, sizeof(double));
  ExpectRejected(b, "are both");
}

// Rows are numbered in 32 bits: a header of 2^32 rows (which wrapped to 0 in a row index) is refused as absurd
// before anything is allocated.
TEST_F(BinaryCorruption, TwoToTheThirtyTwoRowsAreRefused) {
  constexpr size_t kRowsOffset = 16, kFeaturesOffset = 24, kStoredOffset = 32;
  std::string b = bytes;
  const uint64_t rows = uint64_t{1} << 32, features = 1;
  std::memcpy(b.data() + kRowsOffset, &rows, sizeof(rows));
  std::memcpy(b.data() + kFeaturesOffset, &features, sizeof(features));
  std::memcpy(b.data() + kStoredOffset, &rows, sizeof(rows));
  ExpectRejected(b, "header sizes are absurd");
}

// A sparse cache whose row pointer jumps past the non-zeros: the checksum is verified before the CSR structure is
// walked (which once read past the column array). With a matching checksum the structure check names the row.
TEST_F(BinaryCorruption, ACorruptRowPointerIsCaughtBeforeItIsFollowed) {
  const Dataset sparse = ParseLibsvm("1 1:0.5 9:2\n-1 3:1\n1 2:1 4:1\n", "x");
  WriteBinaryDataset(sparse, dir.Path("s.bin"));
  std::string b = testing::ReadText(dir.Path("s.bin"));
  const size_t row_ptr = kBinaryHeaderBytes + 4 * 3;  // after the labels
  const uint64_t far = 1000;
  b.replace(row_ptr + 8, 8, std::string(reinterpret_cast<const char*>(&far), 8));  // row_ptr[1] = 1000
  ExpectRejected(b, "checksum mismatch");
  // The same corruption with its checksum recomputed over the payload as written.
  std::string payload = b.substr(kBinaryHeaderBytes);
  const auto part = [&](size_t at, size_t n) {
    return std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(payload.data()) + at, n);
  };
  uint64_t sum = Checksum64(part(0, 12), 1);
  sum = Checksum64(part(12, 32), sum);
  sum = Checksum64(part(44, 20), sum);
  sum = Checksum64(part(64, 20), sum);
  b.replace(56, 8, std::string(reinterpret_cast<const char*>(&sum), 8));
  ExpectRejected(b, "CSR row pointer");
}

// VerifyBinaryDataset streams the file in 1 MiB chunks: the same verdict as reading it whole, on a file of several
// chunks, and a mismatch for one flipped byte anywhere.
// A cache holds what the text readers would have refused only if it was made otherwise (by hand, or corrupted under
// a valid checksum): negative or non-finite weights and non-finite features are refused naming the row, by the
// whole read and the row reader alike (a weight of -5 trained a meaningless model).
TEST(BinaryFormat, NonFiniteValuesAndBadWeightsAreRefusedNamingTheRow) {
  testing::TempDir dir;
  auto expect_refused = [&](const Dataset& d, const std::string& message) {
    WriteBinaryDataset(d, dir.Path("x.bin"));
    for (int whole = 0; whole < 2; ++whole) {
      try {
        if (whole) {
          ReadBinaryDataset(dir.Path("x.bin"));
        } else {
          ReadBinaryDatasetRows(dir.Path("x.bin"), 1, d.num_rows());
        }
        FAIL() << message << " accepted";
      } catch (const ParseError& e) {
        EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
      }
    }
  };
  for (const float weight : {-5.0f, std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    Dataset d = ParseLibsvm("1 1:0.5\n0 2:1\n1 1:2\n", "x");
    d.set_weights({1.0f, 1.0f, weight});
    expect_refused(d, "row 3's sample weight");
  }
  for (const bool sparse : {false, true}) {
    Dataset d = ParseLibsvm("1 1:0.5 2:1\n0 2:1\n1 1:2\n", "x");
    if (!sparse) d = d.ToDense();
    (sparse ? d.mutable_csr().val.back() : d.mutable_dense_values()[4]) = std::numeric_limits<float>::quiet_NaN();
    expect_refused(d, "row 3, feature 1 is nan");
  }
}

TEST(BinaryFormat, StreamingVerificationMatchesTheWholeRead) {
  testing::TempDir dir;
  WriteBinaryDataset(testing::SmallDense(700, 600), dir.Path("big.bin"));  // 1.7 MB of values
  EXPECT_NO_THROW(VerifyBinaryDataset(dir.Path("big.bin")));
  std::string b = testing::ReadText(dir.Path("big.bin"));
  for (size_t at : {kBinaryHeaderBytes + 5, size_t{1} << 20, b.size() - 1}) {
    std::string bad = b;
    bad[at] ^= 0x01;
    testing::WriteText(dir.Path("bad.bin"), bad);
    EXPECT_THROW(VerifyBinaryDataset(dir.Path("bad.bin")), ParseError) << at;
    EXPECT_THROW(ReadBinaryDataset(dir.Path("bad.bin")), ParseError) << at;
  }
}

}  // namespace
}  // namespace pimopt
