#include "pimopt/data/binary_format.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <vector>

#include "pimopt/core/atomic_file.h"
#include "pimopt/core/error.h"
#include "pimopt/core/huge_pages.h"
#include "pimopt/core/rng.h"

namespace pimopt {

namespace {

// Checksum64's state after the whole 8-byte words of `bytes` (a chunk of a part, mixed into `h`); returns the
// number of bytes it mixed (the rest is the part's tail, which only its last chunk has).
size_t MixWords(uint64_t& h, std::span<const uint8_t> bytes) {
  size_t i = 0;
  for (; i + 8 <= bytes.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, bytes.data() + i, 8);
    h = (h ^ w) * 0x9E3779B97F4A7C15ULL;
    h ^= h >> 29;
  }
  return i;
}

uint64_t FinishChecksum(uint64_t h, std::span<const uint8_t> tail_bytes) {
  uint64_t tail = 0;
  if (!tail_bytes.empty()) std::memcpy(&tail, tail_bytes.data(), tail_bytes.size());  // no memcpy from null
  return Mix64(h ^ tail);
}

}  // namespace

uint64_t Checksum64(std::span<const uint8_t> bytes, uint64_t seed) {
  uint64_t h = Mix64(seed ^ bytes.size());
  const size_t mixed = MixWords(h, bytes);
  return FinishChecksum(h, bytes.subspan(mixed));
}

namespace {

struct Header {
  char magic[8];
  uint32_t version;
  uint32_t flags;
  uint64_t rows;
  uint64_t features;
  uint64_t stored;
  double positive_label;
  double negative_label;
  uint64_t checksum;
};
static_assert(sizeof(Header) == kBinaryHeaderBytes);

template <typename T>
std::span<const uint8_t> Bytes(const std::vector<T>& v) {
  return {reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(T)};
}
template <typename T>
std::span<const uint8_t> Bytes(std::span<const T> v) {
  return {reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(T)};
}

// Checksum chained over the payload parts in file order (each part is one Checksum64 call seeded by the chain).
uint64_t ChecksumOfParts(std::initializer_list<std::span<const uint8_t>> parts) {
  uint64_t h = 1;
  for (const auto& part : parts) h = Checksum64(part, h);
  return h;
}

uint64_t PayloadChecksum(const Dataset& d) {
  if (d.is_sparse()) {
    return d.has_weights() ? ChecksumOfParts({Bytes(d.labels()), Bytes(d.weights()), Bytes(d.csr().row_ptr),
                                              Bytes(d.csr().col), Bytes(d.csr().val)})
                           : ChecksumOfParts({Bytes(d.labels()), Bytes(d.csr().row_ptr), Bytes(d.csr().col),
                                              Bytes(d.csr().val)});
  }
  return d.has_weights() ? ChecksumOfParts({Bytes(d.labels()), Bytes(d.weights()), Bytes(d.dense_values())})
                         : ChecksumOfParts({Bytes(d.labels()), Bytes(d.dense_values())});
}

// Checksum64 over a part read from a stream in chunks, without holding it (the same value as one call).
uint64_t StreamChecksum64(std::istream& in, uint64_t bytes, uint64_t seed, const std::string& path) {
  uint64_t h = Mix64(seed ^ bytes);
  std::vector<uint8_t> chunk(uint64_t{1} << 20);  // a multiple of 8 bytes: only the last chunk has a tail
  for (uint64_t left = bytes; left > 0;) {
    const uint64_t n = std::min<uint64_t>(left, chunk.size());
    in.read(reinterpret_cast<char*>(chunk.data()), static_cast<std::streamsize>(n));
    if (!in) throw ParseError(path, "read failed");
    const std::span<const uint8_t> part(chunk.data(), n);
    const size_t mixed = MixWords(h, part);
    left -= n;
    if (left == 0) return FinishChecksum(h, part.subspan(mixed));
  }
  return FinishChecksum(h, {});
}

}  // namespace

void WriteBinaryDataset(const Dataset& data, const std::string& path) {
  Header h{};
  std::memcpy(h.magic, kBinaryMagic, 8);
  h.version = kBinaryFormatVersion;
  h.flags = (data.is_sparse() ? 1u : 0u) | (data.has_weights() ? 2u : 0u);
  h.rows = data.num_rows();
  h.features = data.num_features();
  h.stored = data.num_stored();
  h.positive_label = data.positive_label_value;
  h.negative_label = data.negative_label_value;
  h.checksum = PayloadChecksum(data);
  AtomicFileWriter writer(path, /*binary=*/true);
  std::ostream& out = writer.stream();
  auto put = [&](std::span<const uint8_t> b) {
    out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  };
  put({reinterpret_cast<const uint8_t*>(&h), sizeof(h)});
  put(Bytes(data.labels()));
  if (data.has_weights()) put(Bytes(data.weights()));
  if (data.is_sparse()) {
    put(Bytes(data.csr().row_ptr));
    put(Bytes(data.csr().col));
    put(Bytes(data.csr().val));
  } else {
    put(Bytes(data.dense_values()));
  }
  writer.Commit();
}

bool IsBinaryDatasetFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[8] = {};
  in.read(magic, 8);
  return in && std::memcmp(magic, kBinaryMagic, 8) == 0;
}

namespace {

// Opens a binary dataset and validates its header against the file size; leaves `in` after the header.
Header OpenBinary(const std::string& path, std::ifstream& in) {
  in.open(path, std::ios::binary | std::ios::ate);
  if (!in) throw InputError(StrCat(path, ": cannot open: ", std::strerror(errno)));
  const uint64_t file_size = static_cast<uint64_t>(in.tellg());
  in.seekg(0);
  if (file_size == 0) throw ParseError(path, "empty file");
  Header h{};
  if (file_size < sizeof(h)) throw ParseError(path, "truncated binary header");
  in.read(reinterpret_cast<char*>(&h), sizeof(h));
  if (std::memcmp(h.magic, kBinaryMagic, 8) != 0) {
    throw ParseError(path, "wrong magic: not a pimopt binary dataset");
  }
  if (h.version != kBinaryFormatVersion) {
    throw ParseError(path, StrCat("unsupported binary format version ", h.version, " (this build reads version ",
                                  kBinaryFormatVersion, ")"));
  }
  if (h.flags > 3) throw ParseError(path, StrCat("unknown flags 0x", std::hex, h.flags));
  // The original label values travel into the model file, which refuses what is not a finite number.
  for (const auto& [field, value] : {std::pair{"positive_label", h.positive_label}, {"negative_label", h.negative_label}}) {
    if (!std::isfinite(value)) {
      throw ParseError(path, StrCat("header field ", field, " is ", value, ", not a finite label value (corrupt file?)"));
    }
  }
  if (h.positive_label == h.negative_label) {
    throw ParseError(path, StrCat("header fields positive_label and negative_label are both ", h.positive_label,
                                  " (corrupt file?)"));
  }
  const bool sparse = h.flags & 1u, weighted = h.flags & 2u;
  if (h.rows == 0) throw ParseError(path, "dataset has no rows");
  // Rows are numbered in 32 bits (Dataset::SelectRows): at most 2^32 - 1 of them.
  if (h.rows >= (uint64_t{1} << 32) || h.features > (uint64_t{1} << 28) || h.stored > (uint64_t{1} << 40)) {
    throw ParseError(path, "header sizes are absurd (corrupt file?)");
  }
  if (!sparse && h.stored != h.rows * h.features) throw ParseError(path, "dense size does not match rows*features");
  const uint64_t expected =
      sizeof(h) + 4 * h.rows * (weighted ? 2 : 1) + (sparse ? 8 * (h.rows + 1) + 8 * h.stored : 4 * h.stored);
  if (file_size < expected) {
    throw ParseError(path, StrCat("truncated: header declares ", expected, " bytes, file holds ", file_size));
  }
  if (file_size > expected) throw ParseError(path, "trailing bytes after the declared payload");
  return h;
}

}  // namespace

BinaryDatasetInfo ReadBinaryDatasetInfo(const std::string& path) {
  std::ifstream in;
  const Header h = OpenBinary(path, in);
  return {h.rows, h.features, (h.flags & 1u) != 0, (h.flags & 2u) != 0};
}

namespace {
// What the readers of text refuse, a binary cache must not carry in: labels other than +1/-1, features that are not
// finite, weights that are not finite or negative (`first_row`: the file's row number of the data's first row).
void CheckLabelsValuesAndWeights(const Dataset& data, const std::vector<float>& weights, const std::string& path,
                                 uint64_t first_row) {
  for (float y : data.labels()) {
    if (y != 1.0f && y != -1.0f) throw ParseError(path, StrCat("label ", y, " is not +1/-1 (corrupt file?)"));
  }
  for (size_t i = 0; i < weights.size(); ++i) {
    if (!std::isfinite(weights[i]) || weights[i] < 0) {
      throw ParseError(path, StrCat("row ", first_row + i + 1, "'s sample weight is ", weights[i],
                                    ": weights must be finite and >= 0 (corrupt file?)"));
    }
  }
  if (const auto bad = FirstNonFiniteValue(data)) {
    throw ParseError(path, StrCat("row ", first_row + bad->row + 1, ", feature ", bad->feature + 1, " is ", bad->value,
                                  ", not a finite value (corrupt file?)"));
  }
}
}  // namespace

Dataset ReadBinaryDatasetRows(const std::string& path, uint64_t begin, uint64_t end) {
  std::ifstream in;
  const Header h = OpenBinary(path, in);
  if (begin > end || end > h.rows) {
    throw InputError(StrCat(path, ": rows [", begin, ", ", end, ") are outside its ", h.rows, " rows"));
  }
  const bool sparse = h.flags & 1u, weighted = h.flags & 2u;
  const uint64_t rows = end - begin;
  auto get_at = [&](uint64_t offset, void* dst, uint64_t bytes) {
    in.seekg(static_cast<std::streamoff>(offset));
    in.read(static_cast<char*>(dst), static_cast<std::streamsize>(bytes));
    if (!in) throw ParseError(path, "read failed");
  };
  uint64_t offset = sizeof(Header);
  std::vector<float> labels(rows);
  get_at(offset + 4 * begin, labels.data(), 4 * rows);
  offset += 4 * h.rows;
  std::vector<float> weights;
  if (weighted) {
    weights.resize(rows);
    get_at(offset + 4 * begin, weights.data(), 4 * rows);
    offset += 4 * h.rows;
  }
  Dataset data;
  if (sparse) {
    CsrMatrix m;
    m.row_ptr = ZeroedVector<uint64_t>(rows + 1);
    get_at(offset + 8 * begin, m.row_ptr.data(), 8 * (rows + 1));
    const uint64_t first = m.row_ptr[0], last = m.row_ptr[rows];
    if (first > last || last > h.stored)
      throw ParseError(path, StrCat("row_ptr of rows [", begin, ", ", end, ") is corrupt"));
    for (auto& p : m.row_ptr) p -= first;  // CheckCsr rejects a non-monotone row_ptr (which wrapped around)
    const uint64_t entries = last - first;
    m.col = ZeroedVector<uint32_t>(entries);
    m.val = ZeroedVector<float>(entries);
    offset += 8 * (h.rows + 1);
    get_at(offset + 4 * first, m.col.data(), 4 * entries);
    get_at(offset + 4 * h.stored + 4 * first, m.val.data(), 4 * entries);
    if (const std::string problem = CheckCsr(m, rows, h.features); !problem.empty()) {
      throw ParseError(path, StrCat("rows [", begin, ", ", end, "): ", problem));
    }
    data = Dataset::FromCsr(h.features, std::move(m), std::move(labels));
  } else {
    std::vector<float> values = ZeroedVector<float>(rows * h.features);
    get_at(offset + 4 * begin * h.features, values.data(), 4 * rows * h.features);
    data = Dataset::FromDense(h.features, std::move(values), std::move(labels));
  }
  CheckLabelsValuesAndWeights(data, weights, path, begin);
  if (weighted) data.set_weights(std::move(weights));
  data.positive_label_value = h.positive_label;
  data.negative_label_value = h.negative_label;
  data.source = path;
  return data;
}

void VerifyBinaryDataset(const std::string& path) {
  std::ifstream in;
  const Header h = OpenBinary(path, in);
  const bool sparse = h.flags & 1u, weighted = h.flags & 2u;
  std::vector<uint64_t> parts{4 * h.rows};
  if (weighted) parts.push_back(4 * h.rows);
  if (sparse) {
    parts.insert(parts.end(), {8 * (h.rows + 1), 4 * h.stored, 4 * h.stored});
  } else {
    parts.push_back(4 * h.stored);
  }
  uint64_t sum = 1;
  for (uint64_t bytes : parts) sum = StreamChecksum64(in, bytes, sum, path);
  if (sum != h.checksum) throw ParseError(path, "checksum mismatch: the file is corrupt");
}

Dataset ReadBinaryDataset(const std::string& path) {
  std::ifstream in;
  const Header h = OpenBinary(path, in);
  const bool sparse = h.flags & 1u, weighted = h.flags & 2u;

  auto get = [&](void* dst, uint64_t bytes) {
    in.read(static_cast<char*>(dst), static_cast<std::streamsize>(bytes));
    if (!in) throw ParseError(path, "read failed");
  };
  std::vector<float> labels(h.rows);
  get(labels.data(), 4 * h.rows);
  std::vector<float> weights;
  if (weighted) {
    weights.resize(h.rows);
    get(weights.data(), 4 * h.rows);
  }
  Dataset data;
  if (sparse) {
    CsrMatrix m;
    m.row_ptr = ZeroedVector<uint64_t>(h.rows + 1);
    m.col = ZeroedVector<uint32_t>(h.stored);
    m.val = ZeroedVector<float>(h.stored);
    get(m.row_ptr.data(), 8 * (h.rows + 1));
    get(m.col.data(), 4 * h.stored);
    get(m.val.data(), 4 * h.stored);
    // The checksum first: a corrupt structure is never walked.
    const uint64_t sum = weighted ? ChecksumOfParts({Bytes(labels), Bytes(weights), Bytes(m.row_ptr), Bytes(m.col),
                                                     Bytes(m.val)})
                                  : ChecksumOfParts({Bytes(labels), Bytes(m.row_ptr), Bytes(m.col), Bytes(m.val)});
    if (sum != h.checksum) throw ParseError(path, "checksum mismatch: the file is corrupt");
    if (const std::string problem = CheckCsr(m, h.rows, h.features); !problem.empty()) {
      throw ParseError(path, problem);
    }
    data = Dataset::FromCsr(h.features, std::move(m), std::move(labels));
  } else {
    std::vector<float> values = ZeroedVector<float>(h.stored);
    get(values.data(), 4 * h.stored);
    const uint64_t sum = weighted ? ChecksumOfParts({Bytes(labels), Bytes(weights), Bytes(values)})
                                  : ChecksumOfParts({Bytes(labels), Bytes(values)});
    if (sum != h.checksum) throw ParseError(path, "checksum mismatch: the file is corrupt");
    data = Dataset::FromDense(h.features, std::move(values), std::move(labels));
  }
  CheckLabelsValuesAndWeights(data, weights, path, 0);
  if (weighted) data.set_weights(std::move(weights));
  data.positive_label_value = h.positive_label;
  data.negative_label_value = h.negative_label;
  data.source = path;
  return data;
}

}  // namespace pimopt
