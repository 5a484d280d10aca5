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
#include "pimopt/core/thread_pool.h"

namespace pimopt {

namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

// Parses a whole token as a finite double; nullopt-like via bool.
bool ParseNumber(std::string_view token, double& out) {
  if (!token.empty() && token.front() == '+') token.remove_prefix(1);
  if (token.empty()) return false;
  const auto res = std::from_chars(token.data(), token.data() + token.size(), out);
  return res.ec == std::errc() && res.ptr == token.data() + token.size();
}

// Bytes per piece the parse is cut into (at line ends), and the most pieces.
constexpr size_t kPieceBytes = size_t{4} << 20;
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

// A piece of the text (whole lines) parsed on its own: its rows, or the first error in it (a line number within
// the piece). The first negative label sets the piece's convention; pieces are checked against each other after.
void ParsePiece(std::string_view text, LibsvmPiece& piece) {
  std::vector<uint32_t>& cols = piece.cols;
  std::vector<float>& vals = piece.vals;
  piece.row_ptr.assign(1, 0);
  int& negative_convention = piece.negative_convention;
  uint64_t& line_no = piece.lines;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
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
    if (label_token.empty()) continue;  // blank or comment-only line
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
}

}  // namespace

Dataset ParseLibsvm(std::string_view text, std::string_view path, ThreadPool* pool) {
  // Pieces of whole lines, by the text's size only, parsed on the pool's threads (one without a pool) and joined
  // in order: the same dataset, and the same first error, for any number of threads.
  const size_t pieces_wanted = std::clamp<size_t>(text.size() / kPieceBytes, 1, kMostPieces);
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
  auto parse = [&](size_t k) {
    try {
      ParsePiece(texts[k], pieces[k]);
    } catch (const PieceError& e) {
      pieces[k].error = e;
    }
  };
  if (pool != nullptr) {
    pool->ParallelFor(texts.size(), parse);
  } else {
    for (size_t k = 0; k < texts.size(); ++k) parse(k);
  }

  // The first error in file order: a piece's own, or a negative-label convention that contradicts the pieces
  // before it (at the piece's first negative label).
  uint64_t lines_before = 0, rows = 0, entries = 0, num_features = 0;
  int negative_convention = 0;
  for (const LibsvmPiece& piece : pieces) {
    const bool conflict = piece.negative_convention != 0 && negative_convention != 0 &&
                          piece.negative_convention != negative_convention;
    if (conflict && (!piece.error || piece.first_negative_line < piece.error->line)) {
      throw ParseError(path, lines_before + piece.first_negative_line,
                       StrCat("label '", piece.first_negative_label, "' mixes the 1/0 and +1/-1 conventions in one file"));
    }
    if (piece.error) throw ParseError(path, lines_before + piece.error->line, piece.error->message);
    if (negative_convention == 0) negative_convention = piece.negative_convention;
    lines_before += piece.lines;
    rows += piece.labels.size();
    entries += piece.cols.size();
    num_features = std::max(num_features, piece.num_features);
  }
  if (rows == 0) throw ParseError(path, "no samples: the file is empty or holds only comments");
  CsrMatrix matrix;
  std::vector<float> labels;
  matrix.row_ptr.reserve(rows + 1);
  matrix.col.reserve(entries);
  matrix.val.reserve(entries);
  labels.reserve(rows);  // matrix.row_ptr starts as {0}
  for (LibsvmPiece& piece : pieces) {
    const uint64_t offset = matrix.col.size();
    for (size_t r = 1; r < piece.row_ptr.size(); ++r) matrix.row_ptr.push_back(offset + piece.row_ptr[r]);
    matrix.col.insert(matrix.col.end(), piece.cols.begin(), piece.cols.end());
    matrix.val.insert(matrix.val.end(), piece.vals.begin(), piece.vals.end());
    labels.insert(labels.end(), piece.labels.begin(), piece.labels.end());
    piece = LibsvmPiece();  // its memory back before the next piece is copied
  }
  Dataset data = Dataset::FromCsr(num_features, std::move(matrix), std::move(labels));
  data.positive_label_value = 1.0;
  data.negative_label_value = negative_convention == 2 ? 0.0 : -1.0;
  data.source = std::string(path);
  return data;
}

Dataset ReadLibsvm(const std::string& path, ThreadPool* pool) { return ParseLibsvm(ReadFileToString(path), path, pool); }

void WriteLibsvm(const Dataset& data, const std::string& path) {
  AtomicFileWriter writer(path);
  std::ostream& out = writer.stream();
  const std::string pos = FormatDouble(data.positive_label_value);
  const std::string neg = FormatDouble(data.negative_label_value);
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
    line += '\n';
    out << line;
  }
  writer.Commit();
}

}  // namespace pimopt
