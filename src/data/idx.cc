#include "pimopt/data/idx.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include "pimopt/core/error.h"
#include "pimopt/core/huge_pages.h"

namespace pimopt {
namespace {

struct GzCloser {
  void operator()(gzFile f) const { gzclose(f); }
};
using GzHandle = std::unique_ptr<std::remove_pointer_t<gzFile>, GzCloser>;

// Reads exactly `size` bytes; returns how many were read before end of file.
size_t ReadUpTo(gzFile f, uint8_t* out, size_t size, const std::string& path) {
  size_t done = 0;
  while (done < size) {
    const unsigned chunk = static_cast<unsigned>(std::min<size_t>(size - done, 1u << 30));
    const int got = gzread(f, out + done, chunk);
    if (got < 0) {
      int errnum = 0;
      const char* msg = gzerror(f, &errnum);
      throw ParseError(path, StrCat("corrupt compressed data: ", msg ? msg : "unknown zlib error"));
    }
    if (got == 0) break;
    done += static_cast<size_t>(got);
  }
  return done;
}

}  // namespace

IdxArray ReadIdx(const std::string& path) {
  GzHandle file(gzopen(path.c_str(), "rb"));
  if (!file) throw InputError(StrCat(path, ": cannot open: ", std::strerror(errno)));
  uint8_t magic[4];
  const size_t got = ReadUpTo(file.get(), magic, 4, path);
  if (got == 0) throw ParseError(path, "empty file (expected an IDX header)");
  if (got < 4) throw ParseError(path, "truncated IDX header");
  if (magic[0] != 0 || magic[1] != 0) {
    throw ParseError(path, "wrong magic number: not an IDX file (first two bytes must be zero)");
  }
  if (magic[2] != 0x08) {
    throw ParseError(path, StrCat("unsupported IDX element type 0x", std::hex, int{magic[2]},
                                  " (only 0x08, unsigned byte, is supported)"));
  }
  const int ndims = magic[3];
  if (ndims < 1 || ndims > 4) throw ParseError(path, StrCat("IDX file with ", ndims, " dimensions"));
  IdxArray array;
  uint64_t total = 1;
  for (int d = 0; d < ndims; ++d) {
    uint8_t b[4];
    if (ReadUpTo(file.get(), b, 4, path) < 4) throw ParseError(path, "truncated IDX header");
    const uint32_t size = (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | b[3];
    array.dims.push_back(size);
    total *= size;
    if (total > (uint64_t{1} << 36)) throw ParseError(path, "IDX dimensions are absurdly large");
  }
  // Read in chunks, growing the array with the data that arrives: a header that declares more than the file holds
  // (the size of a gzip stream is unknown until it is read) fails as truncated without filling what it claims. Room
  // for what it declares (up to 256 MiB) is reserved, not touched, so the array grows without copies.
  array.values.reserve(std::min<uint64_t>(total, uint64_t{256} << 20));
  AdviseHugePages(array.values.data(), array.values.capacity());
  uint64_t data_got = 0;
  while (data_got < total) {  // chunks of 1 MiB, then as large as what arrived so far (at most 64 MiB)
    const uint64_t chunk = std::clamp<uint64_t>(data_got, uint64_t{1} << 20, uint64_t{64} << 20);
    const uint64_t want = std::min(chunk, total - data_got);
    array.values.resize(data_got + want);
    const size_t got_now = ReadUpTo(file.get(), array.values.data() + data_got, want, path);
    data_got += got_now;
    if (got_now < want) break;
  }
  if (data_got < total) {
    throw ParseError(path, StrCat("truncated: the header declares ", total, " bytes of data (dimensions",
                                  [&] {
                                    std::string d;
                                    for (uint32_t v : array.dims) d += StrCat(" ", v);
                                    return d;
                                  }(),
                                  "), the file holds ", data_got));
  }
  uint8_t extra;
  if (ReadUpTo(file.get(), &extra, 1, path) != 0) {
    throw ParseError(path, "trailing bytes after the data the header declares");
  }
  return array;
}

Dataset LoadIdxDataset(const std::string& images_path, const std::string& labels_path,
                       const std::vector<int>& positive_classes) {
  const IdxArray images = ReadIdx(images_path);
  const IdxArray labels = ReadIdx(labels_path);
  if (labels.dims.size() != 1) {
    throw ParseError(labels_path, StrCat("a labels file must have 1 dimension, this one has ", labels.dims.size()));
  }
  if (images.dims.size() < 2) throw ParseError(images_path, "an images file must have at least 2 dimensions");
  if (images.dims[0] != labels.dims[0]) {
    throw InputError(StrCat(images_path, " holds ", images.dims[0], " images but ", labels_path, " holds ",
                            labels.dims[0], " labels"));
  }
  size_t num_features = 1;
  for (size_t d = 1; d < images.dims.size(); ++d) num_features *= images.dims[d];
  const size_t n = images.dims[0];
  std::vector<float> values = ZeroedVector<float>(n * num_features);
  std::vector<float> targets(n);
  for (size_t i = 0; i < n; ++i) {
    const uint8_t* px = images.values.data() + i * num_features;
    float* row = values.data() + i * num_features;
    for (size_t j = 0; j < num_features; ++j) row[j] = static_cast<float>(px[j]) / 255.0f;
    const int cls = labels.values[i];
    const bool positive = std::find(positive_classes.begin(), positive_classes.end(), cls) != positive_classes.end();
    targets[i] = positive ? 1.0f : -1.0f;
  }
  // A positive class that labels no row is a mistaken class list (every row would be negative, silently).
  for (int cls : positive_classes) {
    if (std::find(labels.values.begin(), labels.values.end(), cls) == labels.values.end()) {
      const auto [lo, hi] = std::minmax_element(labels.values.begin(), labels.values.end());
      throw ConfigError("--positive-classes",
                        StrCat("class ", cls, " labels no row of ", labels_path,
                               " (its classes: ", n == 0 ? 0 : int{*lo}, " to ", n == 0 ? 0 : int{*hi}, ")"));
    }
  }
  Dataset data = Dataset::FromDense(num_features, std::move(values), std::move(targets));
  data.source = images_path;
  data.positive_classes = positive_classes;
  return data;
}

}  // namespace pimopt
