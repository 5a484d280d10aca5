#include "pimopt/data/idx.h"

#include <gtest/gtest.h>

#include "pimopt/core/error.h"
#include "test_util.h"

namespace pimopt {
namespace {

std::vector<unsigned char> Header(unsigned char type, std::vector<uint32_t> dims) {
  std::vector<unsigned char> h{0, 0, type, static_cast<unsigned char>(dims.size())};
  for (uint32_t d : dims) {
    h.push_back(d >> 24);
    h.push_back((d >> 16) & 0xff);
    h.push_back((d >> 8) & 0xff);
    h.push_back(d & 0xff);
  }
  return h;
}

struct IdxFiles {
  testing::TempDir dir;
  std::string images = dir.Path("x-images-idx3-ubyte.gz");
  std::string labels = dir.Path("x-labels-idx1-ubyte.gz");
  IdxFiles() {
    auto img = Header(0x08, {3, 2, 2});
    for (int i = 0; i < 12; ++i) img.push_back(static_cast<unsigned char>(i * 20));
    auto lab = Header(0x08, {3});
    lab.insert(lab.end(), {0, 3, 6});
    testing::WriteGzip(images, img);
    testing::WriteGzip(labels, lab);
  }
};

TEST(Idx, LoadsGzipImagesScaledAndMapsClassSet) {
  IdxFiles f;
  const Dataset d = LoadIdxDataset(f.images, f.labels, {0, 6});
  ASSERT_EQ(d.num_rows(), 3u);
  EXPECT_EQ(d.num_features(), 4u);
  EXPECT_FLOAT_EQ(d.dense_row(1)[0], 80.0f / 255.0f);
  EXPECT_EQ(std::vector<float>(d.labels().begin(), d.labels().end()), (std::vector<float>{1, -1, 1}));
}

TEST(Idx, OneVsRestIsASetOfOneClass) {
  IdxFiles f;
  const Dataset d = LoadIdxDataset(f.images, f.labels, {3});
  EXPECT_EQ(std::vector<float>(d.labels().begin(), d.labels().end()), (std::vector<float>{-1, 1, -1}));
}

// A class no row has: every row would be negative, silently (a probe's `--positive-classes 9` on classes 0-3).
TEST(Idx, APositiveClassThatLabelsNoRowIsRefusedNamingIt) {
  IdxFiles f;
  try {
    LoadIdxDataset(f.images, f.labels, {3, 9});
    FAIL() << "accepted";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("--positive-classes"), std::string::npos) << what;
    EXPECT_NE(what.find("class 9 labels no row"), std::string::npos) << what;
    EXPECT_NE(what.find("0 to 6"), std::string::npos) << what;
  }
}

TEST(Idx, ReadsUncompressedFiles) {
  testing::TempDir dir;
  auto lab = Header(0x08, {2});
  lab.insert(lab.end(), {1, 2});
  testing::WriteBytes(dir.Path("l"), lab);
  EXPECT_EQ(ReadIdx(dir.Path("l")).values, (std::vector<uint8_t>{1, 2}));
}

void ExpectParseError(const std::string& path, const std::string& fragment) {
  try {
    ReadIdx(path);
    FAIL() << "no error";
  } catch (const ParseError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(Idx, WrongMagicIsRejected) {
  testing::TempDir dir;
  testing::WriteGzip(dir.Path("a"), {1, 2, 8, 1, 0, 0, 0, 1, 5});
  ExpectParseError(dir.Path("a"), "wrong magic");
  testing::WriteGzip(dir.Path("b"), {0, 0, 0x0D, 1, 0, 0, 0, 1, 5});
  ExpectParseError(dir.Path("b"), "unsupported IDX element type");
}

TEST(Idx, TruncatedDataIsRejected) {
  testing::TempDir dir;
  auto img = Header(0x08, {10, 28, 28});
  img.resize(img.size() + 100);
  testing::WriteGzip(dir.Path("t"), img);
  ExpectParseError(dir.Path("t"), "truncated");
  testing::WriteGzip(dir.Path("h"), {0, 0, 8, 3, 0, 0});
  ExpectParseError(dir.Path("h"), "truncated IDX header");
}

// A header that declares 4 GiB (65536 x 256 x 256) over a few bytes of data is a truncated file, found without
// allocating what the header claims (the array grows with the data that arrives).
TEST(Idx, AHeaderDeclaringGigabytesOverAFewBytesIsTruncated) {
  testing::TempDir dir;
  auto img = Header(0x08, {65536, 256, 256});
  img.resize(img.size() + 64);
  testing::WriteGzip(dir.Path("huge.gz"), img);
  ExpectParseError(dir.Path("huge.gz"), "the header declares 4294967296 bytes of data (dimensions 65536 256 256), "
                                        "the file holds 64");
}

TEST(Idx, TruncatedGzipStreamIsRejected) {
  testing::TempDir dir;
  auto img = Header(0x08, {100, 28, 28});
  for (int i = 0; i < 100 * 784; ++i) img.push_back(static_cast<unsigned char>(i * 7));
  testing::WriteGzip(dir.Path("full.gz"), img);
  std::string bytes = testing::ReadText(dir.Path("full.gz"));
  bytes.resize(bytes.size() / 2);
  testing::WriteText(dir.Path("cut.gz"), bytes);
  EXPECT_THROW(ReadIdx(dir.Path("cut.gz")), ParseError);
}

TEST(Idx, TrailingBytesAndEmptyFilesAreRejected) {
  testing::TempDir dir;
  auto lab = Header(0x08, {2});
  lab.insert(lab.end(), {1, 2, 3});
  testing::WriteGzip(dir.Path("x"), lab);
  ExpectParseError(dir.Path("x"), "trailing bytes");
  testing::WriteBytes(dir.Path("e"), {});
  ExpectParseError(dir.Path("e"), "empty file");
}

TEST(Idx, CountMismatchBetweenImagesAndLabelsIsRejected) {
  IdxFiles f;
  auto lab = Header(0x08, {2});
  lab.insert(lab.end(), {0, 1});
  testing::WriteGzip(f.labels, lab);
  EXPECT_THROW(LoadIdxDataset(f.images, f.labels, {0}), InputError);
}

}  // namespace
}  // namespace pimopt
