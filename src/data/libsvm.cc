#include "pimopt/data/libsvm.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <optional>
#include <vector>

#include "pimopt/core/atomic_file.h"
#include "pimopt/core/error.h"
#include "pimopt/core/file_util.h"
#include "pimopt/core/huge_pages.h"
#include "pimopt/core/thread_pool.h"

namespace pimopt {

namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

// Parses a whole token as a finite double; nullopt-like via bool.
bool ParseNumber(std::string_view token, double& out) {
  // from_chars takes no '+': one is skipped, and what follows must be unsigned ("+-1" is no number).
  if (!token.empty() && token.front() == '+') {
    token.remove_prefix(1);
    if (!token.empty() && token.front() == '-') return false;
  }
  if (token.empty()) return false;
  const auto res = std::from_chars(token.data(), token.data() + token.size(), out);
  return res.ec == std::errc() && res.ptr == token.data() + token.size();
}

// The pieces the parse is cut into (at line ends): about kPieceBytes each, but at least 4 per thread where pieces
// of kMinPieceBytes allow it, and at most kMostPieces. A piece's columns and values lie on huge pages, of which each
// array's last is partly used: with 4 MiB pieces fashion-mnist's text (335 MB) peaked at 840 MB of memory and loaded
// in 0.61-0.87 s (2 threads), with 16 MiB pieces 735 MB and 0.60-0.61 s (2026-12-07). The pieces never change the
// dataset or the error reported, only how the work is split.
constexpr size_t kPieceBytes = size_t{16} << 20;
constexpr size_t kMinPieceBytes = size_t{1} << 20;
constexpr size_t kMostPieces = 256;

struct PieceError {
  uint64_t line;  // within the piece, from 1
  std::string message;
};

struct LibsvmPiece {
  std::vector<uint64_t> row_ptr;
  std::vector<uint32_t> cols;
  std::vector<float> vals;
  std::vector<float> labels;
  uint64_t num_features = 0;
  uint64_t lines = 0;
  int negative_convention = 0;  // 0 none yet, -1 labels -1, 2 labels 0
  uint64_t first_negative_line = 0;
  std::string first_negative_label;  // its text
  std::optional<PieceError> error;
};

[[noreturn]] void Fail(uint64_t line, std::string message) { throw PieceError{line, std::move(message)}; }

// One line (without its '\n') parsed with every check, the reference for what a line means: a row appended to the
// piece, nothing for a blank or comment-only line, or Fail naming what is wrong first. `line_no` counts the piece's
// lines from 1 (this one included).
void ParseLineChecked(std::string_view line, uint64_t line_no, LibsvmPiece& piece) {
  std::vector<uint32_t>& cols = piece.cols;
  std::vector<float>& vals = piece.vals;
  int& negative_convention = piece.negative_convention;
  if (const size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
  for (char c : line) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 && c != '\t' && c != '\r' && c != '\v' && c != '\f') {
      Fail(line_no, "binary data (control character) in a LIBSVM text file");
    }
  }
  size_t i = 0;
  auto next_token = [&]() -> std::string_view {
    while (i < line.size() && IsSpace(line[i])) ++i;
    const size_t start = i;
    while (i < line.size() && !IsSpace(line[i])) ++i;
    return line.substr(start, i - start);
  };
  std::string_view label_token = next_token();
  if (label_token.empty()) return;  // blank or comment-only line
  if (label_token.find(':') != std::string_view::npos) {
    Fail(line_no, StrCat("missing label: line starts with feature '", label_token, "'"));
  }
  double label_value;
  if (!ParseNumber(label_token, label_value)) {
    Fail(line_no, StrCat("label '", label_token, "' is not a number"));
  }
  float label;
  if (label_value == 1.0) {
    label = 1.0f;
  } else if (label_value == -1.0 || label_value == 0.0) {
    const int convention = label_value == 0.0 ? 2 : -1;
    if (negative_convention != 0 && negative_convention != convention) {
      Fail(line_no, StrCat("label '", label_token, "' mixes the 1/0 and +1/-1 conventions in one file"));
    }
    if (negative_convention == 0) {
      piece.first_negative_line = line_no;
      piece.first_negative_label = std::string(label_token);
    }
    negative_convention = convention;
    label = -1.0f;
  } else {
    Fail(line_no, StrCat("unknown label value '", label_token, "' (binary labels must be +1/-1 or 1/0)"));
  }
  uint64_t previous_index = 0;
  for (std::string_view token = next_token(); !token.empty(); token = next_token()) {
    const size_t colon = token.find(':');
    if (colon == std::string_view::npos) {
      Fail(line_no, StrCat("expected index:value, got '", token, "'"));
    }
    const std::string_view index_text = token.substr(0, colon);
    const std::string_view value_text = token.substr(colon + 1);
    uint64_t index = 0;
    const auto res = std::from_chars(index_text.data(), index_text.data() + index_text.size(), index);
    if (res.ec == std::errc::result_out_of_range) {
      Fail(line_no, StrCat("feature index '", index_text, "' is absurdly large"));
    }
    if (index_text.empty() || res.ec != std::errc() || res.ptr != index_text.data() + index_text.size()) {
      Fail(line_no, StrCat("feature index '", index_text, "' is not a positive integer"));
    }
    if (index == 0) Fail(line_no, "feature index 0: indices are 1-based");
    if (index > kMaxFeatureIndex) {
      Fail(line_no, StrCat("feature index ", index, " exceeds the limit of ", kMaxFeatureIndex, " features"));
    }
    if (index == previous_index) {
      Fail(line_no, StrCat("duplicate feature index ", index));
    }
    if (index < previous_index) {
      Fail(line_no, StrCat("feature indices must increase: ", index, " follows ", previous_index));
    }
    double value;
    if (!ParseNumber(value_text, value)) {
      Fail(line_no, StrCat("value '", value_text, "' of feature ", index, " is not a number"));
    }
    if (!std::isfinite(value) || std::fabs(value) > 3.4e38) {
      Fail(line_no, StrCat("value '", value_text, "' of feature ", index, " is not finite"));
    }
    previous_index = index;
    cols.push_back(static_cast<uint32_t>(index - 1));
    vals.push_back(static_cast<float>(value));
    piece.num_features = std::max<uint64_t>(piece.num_features, index);
  }
  piece.row_ptr.push_back(cols.size());
  piece.labels.push_back(label);
}

// A plain decimal, [-]digits[.digits] with at most 19 digits, whose digits as an integer m are exact in a double
// (m <= 2^53) and with at most 22 digits after the point: m / 10^k, one correctly rounded division of two exact
// doubles, is the correctly rounded value of the text, the double std::from_chars gives (Clinger's fast path). False
// for anything else (an exponent, more digits, no digit on a side of the point): from_chars parses it then.
bool ParsePlainDecimal(const char* p, const char* end, double& value, const char*& next) {
  static constexpr double kPowersOf10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                           1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
  const bool negative = p < end && *p == '-';
  if (negative) ++p;
  uint64_t m = 0;
  int digits = 0, fraction_digits = 0;
  const char* first = p;
  while (p < end && *p >= '0' && *p <= '9' && digits < 20) m = m * 10 + static_cast<uint64_t>(*p++ - '0'), ++digits;
  if (p == first) return false;
  if (p < end && *p == '.') {
    const char* fraction = ++p;
    while (p < end && *p >= '0' && *p <= '9' && digits < 20) {
      m = m * 10 + static_cast<uint64_t>(*p++ - '0');
      ++digits;
    }
    fraction_digits = static_cast<int>(p - fraction);
    if (fraction_digits == 0) return false;
  }
  if (digits > 19 || fraction_digits > 22 || m > (uint64_t{1} << 53)) return false;
  if (p < end && ((*p >= '0' && *p <= '9') || *p == '.' || *p == 'e' || *p == 'E')) return false;
  const double magnitude = static_cast<double>(m) / kPowersOf10[fraction_digits];
  value = negative ? -magnitude : magnitude;
  next = p;
  return true;
}

// The common line in one pass, without a check's own scan: "label index:value ...", separated by spaces or tabs
// (a '\r' before the line end too). Appends the row and returns true only where ParseLineChecked would append the
// same row and raise nothing; anything else (a comment, a control character, a blank line, any error, a label that
// sets or contradicts the convention) returns false with the piece as it was, and ParseLineChecked decides.
bool ParseLineFast(std::string_view line, LibsvmPiece& piece) {
  const char* p = line.data();
  const char* const end = p + line.size();
  auto is_separator = [](char c) { return c == ' ' || c == '\t' || c == '\r'; };
  while (p < end && is_separator(*p)) ++p;
  // The label: 1, +1, -1 or 0 as whole tokens, the convention already the piece's (the first negative label of a
  // piece is left to ParseLineChecked, which records it).
  float label;
  const bool plus = p < end && *p == '+';
  if (plus) ++p;
  if (p < end && *p == '1') {
    label = 1.0f;
    ++p;
  } else if (!plus && end - p >= 2 && p[0] == '-' && p[1] == '1' && piece.negative_convention == -1) {
    label = -1.0f;
    p += 2;
  } else if (!plus && p < end && *p == '0' && piece.negative_convention == 2) {
    label = -1.0f;
    ++p;
  } else {
    return false;
  }
  if (p < end && !is_separator(*p)) return false;  // "1.0", "10", "-1x": ParseLineChecked decides
  const size_t entries_before = piece.cols.size();
  const uint64_t features_before = piece.num_features;
  auto undo = [&] {
    piece.cols.resize(entries_before);
    piece.vals.resize(entries_before);
    piece.num_features = features_before;
    return false;
  };
  uint64_t previous_index = 0;
  for (;;) {
    while (p < end && is_separator(*p)) ++p;
    if (p == end) break;
    // index: 1 to 9 digits (up to 999,999,999, beyond kMaxFeatureIndex: checked below)
    uint64_t index = 0;
    const char* digits = p;
    while (p < end && *p >= '0' && *p <= '9' && p - digits < 10) index = index * 10 + static_cast<uint64_t>(*p++ - '0');
    if (p == digits || p - digits > 9 || p == end || *p != ':') return undo();
    if (index == 0 || index > kMaxFeatureIndex || index <= previous_index) return undo();
    ++p;
    if (p < end && *p == '+') {
      ++p;
      if (p < end && *p == '-') return undo();  // "+-3" is no number (the full parse names the line)
    }
    double value;
    const char* next;
    if (!ParsePlainDecimal(p, end, value, next)) {
      const auto res = std::from_chars(p, end, value);
      if (res.ec != std::errc() || res.ptr == p) return undo();
      next = res.ptr;
    }
    if ((next < end && !is_separator(*next)) || !std::isfinite(value) || std::fabs(value) > 3.4e38) return undo();
    p = next;
    previous_index = index;
    piece.cols.push_back(static_cast<uint32_t>(index - 1));
    piece.vals.push_back(static_cast<float>(value));
    piece.num_features = std::max(piece.num_features, index);
  }
  piece.row_ptr.push_back(piece.cols.size());
  piece.labels.push_back(label);
  return true;
}

// A piece of the text (whole lines) parsed on its own: its rows, or the first error in it (a line number within
// the piece). The first negative label sets the piece's convention; pieces are checked against each other after.
void ParsePiece(std::string_view text, LibsvmPiece& piece, bool fast_lines) {
  piece.row_ptr.assign(1, 0);
  // An entry takes at least 4 bytes of text ("1:0 "): room for every entry the piece could hold, reserved (not
  // touched) once instead of grown by copies.
  piece.cols.reserve(text.size() / 4 + 1);
  piece.vals.reserve(text.size() / 4 + 1);
  AdviseHugePages(piece.cols.data(), piece.cols.capacity() * sizeof(uint32_t));
  AdviseHugePages(piece.vals.data(), piece.vals.capacity() * sizeof(float));
  size_t pos = 0;
  while (pos < text.size()) {
    const char* newline = static_cast<const char*>(std::memchr(text.data() + pos, '\n', text.size() - pos));
    const size_t end = newline == nullptr ? text.size() : static_cast<size_t>(newline - text.data());
    const std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++piece.lines;
    if (!fast_lines || !ParseLineFast(line, piece)) ParseLineChecked(line, piece.lines, piece);
  }
}

Dataset ParseLibsvmPieces(std::string_view text, std::string_view path, ThreadPool* pool, const DenseRule& store_dense,
                          bool fast_lines) {
  // Pieces of whole lines, by the text's size and the threads, parsed on the pool's threads (one without a pool) and
  // joined in order: the same dataset, and the same first error, for any number of threads and pieces.
  const size_t threads = pool != nullptr ? static_cast<size_t>(pool->NumThreads()) : 1;
  const size_t pieces_wanted = std::clamp<size_t>(
      std::max(text.size() / kPieceBytes, std::min(4 * threads, text.size() / kMinPieceBytes)), 1, kMostPieces);
  std::vector<std::string_view> texts;
  for (size_t begin = 0, p = 1; begin < text.size(); ++p) {
    size_t end = p >= pieces_wanted ? text.size() : std::max(begin, text.size() * p / pieces_wanted);
    if (end < text.size()) {
      const size_t newline = text.find('\n', end);
      end = newline == std::string_view::npos ? text.size() : newline + 1;
    }
    if (end > begin) texts.push_back(text.substr(begin, end - begin));
    begin = end;
  }
  std::vector<LibsvmPiece> pieces(texts.size());
  auto for_each_piece = [&](auto&& fn) {
    if (pool != nullptr) {
      pool->ParallelFor(pieces.size(), fn);
    } else {
      for (size_t k = 0; k < pieces.size(); ++k) fn(k);
    }
  };
  for_each_piece([&](size_t k) {
    try {
      ParsePiece(texts[k], pieces[k], fast_lines);
    } catch (const PieceError& e) {
      pieces[k].error = e;
    }
  });

  // The first error in file order: a piece's own, or a negative-label convention that contradicts the pieces
  // before it (at the piece's first negative label).
  uint64_t lines_before = 0, rows = 0, entries = 0, num_features = 0;
  int negative_convention = 0;
  std::vector<uint64_t> rows_before(pieces.size()), entries_before(pieces.size());
  for (size_t k = 0; k < pieces.size(); ++k) {
    const LibsvmPiece& piece = pieces[k];
    const bool conflict = piece.negative_convention != 0 && negative_convention != 0 &&
                          piece.negative_convention != negative_convention;
    if (conflict && (!piece.error || piece.first_negative_line < piece.error->line)) {
      throw ParseError(path, lines_before + piece.first_negative_line,
                       StrCat("label '", piece.first_negative_label, "' mixes the 1/0 and +1/-1 conventions in one file"));
    }
    if (piece.error) throw ParseError(path, lines_before + piece.error->line, piece.error->message);
    if (negative_convention == 0) negative_convention = piece.negative_convention;
    lines_before += piece.lines;
    rows_before[k] = rows;
    entries_before[k] = entries;
    rows += piece.labels.size();
    entries += piece.cols.size();
    num_features = std::max(num_features, piece.num_features);
  }
  if (rows == 0) throw ParseError(path, "no samples: the file is empty or holds only comments");
  // The pieces are joined where they belong, each on its own thread: straight into a dense matrix when the
  // caller's rule stores the set dense (the values a sparse set's ToDense would give), else into one CSR matrix.
  std::vector<float> labels(rows);
  Dataset data;
  if (store_dense && store_dense(rows, num_features, entries)) {
    std::vector<float> values = ZeroedVector<float>(rows * num_features);
    for_each_piece([&](size_t k) {
      LibsvmPiece& piece = pieces[k];
      float* out = values.data() + rows_before[k] * num_features;
      for (size_t r = 0; r + 1 < piece.row_ptr.size(); ++r, out += num_features) {
        for (uint64_t e = piece.row_ptr[r]; e < piece.row_ptr[r + 1]; ++e) out[piece.cols[e]] = piece.vals[e];
      }
      std::copy(piece.labels.begin(), piece.labels.end(), labels.begin() + static_cast<std::ptrdiff_t>(rows_before[k]));
      piece = LibsvmPiece();
    });
    data = Dataset::FromDense(num_features, std::move(values), std::move(labels));
  } else {
    CsrMatrix matrix;
    matrix.row_ptr = ZeroedVector<uint64_t>(rows + 1);  // row_ptr[0] = 0
    matrix.col = ZeroedVector<uint32_t>(entries);
    matrix.val = ZeroedVector<float>(entries);
    for_each_piece([&](size_t k) {
      LibsvmPiece& piece = pieces[k];
      const uint64_t offset = entries_before[k];
      for (size_t r = 1; r < piece.row_ptr.size(); ++r) matrix.row_ptr[rows_before[k] + r] = offset + piece.row_ptr[r];
      std::copy(piece.cols.begin(), piece.cols.end(), matrix.col.begin() + static_cast<std::ptrdiff_t>(offset));
      std::copy(piece.vals.begin(), piece.vals.end(), matrix.val.begin() + static_cast<std::ptrdiff_t>(offset));
      std::copy(piece.labels.begin(), piece.labels.end(), labels.begin() + static_cast<std::ptrdiff_t>(rows_before[k]));
      piece = LibsvmPiece();  // its memory back as soon as it is copied
    });
    data = Dataset::FromCsr(num_features, std::move(matrix), std::move(labels));
  }
  data.positive_label_value = 1.0;
  data.negative_label_value = negative_convention == 2 ? 0.0 : -1.0;
  data.source = std::string(path);
  return data;
}

}  // namespace

Dataset ParseLibsvm(std::string_view text, std::string_view path, ThreadPool* pool, const DenseRule& store_dense) {
  return ParseLibsvmPieces(text, path, pool, store_dense, true);
}

Dataset ParseLibsvmEveryLineChecked(std::string_view text, std::string_view path) {
  return ParseLibsvmPieces(text, path, nullptr, {}, false);
}

Dataset ReadLibsvm(const std::string& path, ThreadPool* pool, const DenseRule& store_dense) {
  const FileBytes bytes(path);
  return ParseLibsvm(bytes.view(), path, pool, store_dense);
}

void WriteLibsvm(const Dataset& data, const std::string& path) {
  if (data.has_weights()) {
    throw InputError(StrCat(path,
                            ": LIBSVM text holds no per-sample weights, and the data has them; write a binary "
                            "cache (.bin) to keep them"));
  }
  AtomicFileWriter writer(path);
  std::ostream& out = writer.stream();
  const std::string pos = FormatDouble(data.positive_label_value);
  const std::string neg = FormatDouble(data.negative_label_value);
  // The text has no header, and a reader counts the features up to the highest index it sees: where no row has a
  // value in the last feature, the first row names it with an explicit zero, so that the file reads back with the
  // data's feature count (a trailing feature of zeros vanished, and a narrower test set was scored otherwise).
  bool last_feature_written = data.num_features() == 0;
  if (!last_feature_written) {
    const size_t last = data.num_features() - 1;
    if (data.is_sparse()) {
      const CsrMatrix& m = data.csr();
      last_feature_written = std::find(m.col.begin(), m.col.end(), last) != m.col.end();
    } else {
      for (size_t i = 0; i < data.num_rows() && !last_feature_written; ++i)
        last_feature_written = data.dense_row(i)[last] != 0.0f;
    }
  }
  std::string line;
  for (size_t i = 0; i < data.num_rows(); ++i) {
    line = data.labels()[i] > 0 ? pos : neg;
    auto emit = [&](size_t col, float v) {
      line += ' ';
      line += std::to_string(col + 1);
      line += ':';
      line += FormatFloat(v);
    };
    if (data.is_sparse()) {
      const CsrMatrix& m = data.csr();
      for (uint64_t k = m.row_ptr[i]; k < m.row_ptr[i + 1]; ++k) emit(m.col[k], m.val[k]);
    } else {
      const float* x = data.dense_row(i);
      for (size_t j = 0; j < data.num_features(); ++j) {
        if (x[j] != 0.0f) emit(j, x[j]);
      }
    }
    if (i == 0 && !last_feature_written) emit(data.num_features() - 1, 0.0f);
    line += '\n';
    out << line;
  }
  writer.Commit();
}

}  // namespace pimopt
