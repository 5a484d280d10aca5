#include "pimopt/data/libsvm.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <vector>

#include "pimopt/core/atomic_file.h"
#include "pimopt/core/error.h"
#include "pimopt/core/file_util.h"

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

}  // namespace

Dataset ParseLibsvm(std::string_view text, std::string_view path) {
  Dataset data(Storage::kSparse, 0);
  std::vector<uint32_t> cols;
  std::vector<float> vals;
  int negative_convention = 0;  // 0 unknown, -1 means labels -1, 2 means labels 0
  uint64_t line_no = 0;
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
        throw ParseError(path, line_no, "binary data (control character) in a LIBSVM text file");
      }
    }
    cols.clear();
    vals.clear();
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
      throw ParseError(path, line_no, StrCat("missing label: line starts with feature '", label_token, "'"));
    }
    double label_value;
    if (!ParseNumber(label_token, label_value)) {
      throw ParseError(path, line_no, StrCat("label '", label_token, "' is not a number"));
    }
    float label;
    if (label_value == 1.0) {
      label = 1.0f;
    } else if (label_value == -1.0 || label_value == 0.0) {
      const int convention = label_value == 0.0 ? 2 : -1;
      if (negative_convention != 0 && negative_convention != convention) {
        throw ParseError(path, line_no,
                         StrCat("label '", label_token, "' mixes the 1/0 and +1/-1 conventions in one file"));
      }
      negative_convention = convention;
      label = -1.0f;
    } else {
      throw ParseError(path, line_no,
                       StrCat("unknown label value '", label_token, "' (binary labels must be +1/-1 or 1/0)"));
    }
    uint64_t previous_index = 0;
    for (std::string_view token = next_token(); !token.empty(); token = next_token()) {
      const size_t colon = token.find(':');
      if (colon == std::string_view::npos) {
        throw ParseError(path, line_no, StrCat("expected index:value, got '", token, "'"));
      }
      const std::string_view index_text = token.substr(0, colon);
      const std::string_view value_text = token.substr(colon + 1);
      uint64_t index = 0;
      const auto res = std::from_chars(index_text.data(), index_text.data() + index_text.size(), index);
      if (res.ec == std::errc::result_out_of_range) {
        throw ParseError(path, line_no, StrCat("feature index '", index_text, "' is absurdly large"));
      }
      if (index_text.empty() || res.ec != std::errc() || res.ptr != index_text.data() + index_text.size()) {
        throw ParseError(path, line_no, StrCat("feature index '", index_text, "' is not a positive integer"));
      }
      if (index == 0) throw ParseError(path, line_no, "feature index 0: indices are 1-based");
      if (index > kMaxFeatureIndex) {
        throw ParseError(path, line_no,
                         StrCat("feature index ", index, " exceeds the limit of ", kMaxFeatureIndex, " features"));
      }
      if (index == previous_index) {
        throw ParseError(path, line_no, StrCat("duplicate feature index ", index));
      }
      if (index < previous_index) {
        throw ParseError(path, line_no, StrCat("feature indices must increase: ", index, " follows ", previous_index));
      }
      double value;
      if (!ParseNumber(value_text, value)) {
        throw ParseError(path, line_no, StrCat("value '", value_text, "' of feature ", index, " is not a number"));
      }
      if (!std::isfinite(value) || std::fabs(value) > 3.4e38) {
        throw ParseError(path, line_no, StrCat("value '", value_text, "' of feature ", index, " is not finite"));
      }
      previous_index = index;
      cols.push_back(static_cast<uint32_t>(index - 1));
      vals.push_back(static_cast<float>(value));
    }
    data.AppendSparseRow(cols, vals, label);
  }
  if (data.num_rows() == 0) throw ParseError(path, "no samples: the file is empty or holds only comments");
  data.positive_label_value = 1.0;
  data.negative_label_value = negative_convention == 2 ? 0.0 : -1.0;
  data.source = std::string(path);
  return data;
}

Dataset ReadLibsvm(const std::string& path) { return ParseLibsvm(ReadFileToString(path), path); }

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
