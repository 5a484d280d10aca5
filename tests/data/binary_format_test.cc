#include "pimopt/data/binary_format.h"

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

}  // namespace
}  // namespace pimopt
