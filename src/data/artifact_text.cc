#include "pimopt/data/artifact_text.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <vector>

#include "pimopt/core/atomic_file.h"
#include "pimopt/core/error.h"

namespace pimopt {
namespace {

constexpr double kQ31 = 2147483648.0;  // 2^31: the artifact's 1.0

// Calls row(line_no, tokens) for every non-blank line.
template <typename Fn>
void ForEachLine(std::string_view text, Fn row) {
  std::vector<std::string_view> tokens;
  uint64_t line_no = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    tokens.clear();
    size_t i = 0;
    while (i < line.size()) {
      while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
      const size_t start = i;
      while (i < line.size() && line[i] != ' ' && line[i] != '\t' && line[i] != '\r') ++i;
      if (i > start) tokens.push_back(line.substr(start, i - start));
    }
    if (!tokens.empty()) row(line_no, tokens);
  }
}

uint64_t WholeNumber(std::string_view token, std::string_view path, uint64_t line, const char* what) {
  uint64_t v = 0;
  const auto res = std::from_chars(token.data(), token.data() + token.size(), v);
  if (res.ec != std::errc() || res.ptr != token.data() + token.size()) {
    throw ParseError(path, line, StrCat(what, " '", token, "' is not an unsigned whole number"));
  }
  return v;
}

float Label(std::string_view token, std::string_view path, uint64_t line) {
  if (token == "1") return 1.0f;
  if (token == "0") return -1.0f;
  throw ParseError(path, line, StrCat("label '", token, "' is not 0 or 1"));
}

Dataset Finish(Dataset d, std::string_view path) {
  if (d.num_rows() == 0) throw ParseError(path, "no rows");
  d.positive_label_value = 1;
  d.negative_label_value = 0;
  d.source = std::string(path);
  return d;
}

}  // namespace

Dataset ParseYfccText(std::string_view text, std::string_view path) {
  Dataset d(Storage::kDense, 0);
  std::vector<float> row;
  size_t features = 0;
  ForEachLine(text, [&](uint64_t line, const std::vector<std::string_view>& tokens) {
    if (tokens.size() < 2) throw ParseError(path, line, "a row needs a label and at least one feature");
    if (features == 0) {
      features = tokens.size() - 1;
      d = Dataset(Storage::kDense, features);
    } else if (tokens.size() - 1 != features) {
      throw ParseError(path, line, StrCat(tokens.size() - 1, " features; the first row has ", features));
    }
    row.resize(features);
    for (size_t j = 0; j < features; ++j) {
      const uint64_t q = WholeNumber(tokens[j + 1], path, line, "feature");
      if (q > 0xFFFFFFFFull) throw ParseError(path, line, StrCat("feature ", q, " does not fit 32 bits"));
      row[j] = static_cast<float>(static_cast<double>(q) / kQ31);
    }
    d.AppendDenseRow(row, Label(tokens[0], path, line));
  });
  return Finish(std::move(d), path);
}

Dataset ParseCriteoText(std::string_view text, std::string_view path) {
  Dataset d(Storage::kSparse, kCriteoTextFeatures);
  std::vector<uint32_t> cols;
  std::vector<float> ones;
  ForEachLine(text, [&](uint64_t line, const std::vector<std::string_view>& tokens) {
    cols.clear();
    for (size_t j = 1; j < tokens.size(); ++j) {
      const uint64_t index = WholeNumber(tokens[j], path, line, "feature number");
      if (index < 1 || index > kCriteoTextFeatures) {
        throw ParseError(path, line, StrCat("feature number ", index, " is outside 1..", kCriteoTextFeatures));
      }
      cols.push_back(static_cast<uint32_t>(index - 1));
    }
    // Hashed Criteo rows may repeat a feature: a binary feature is present once.
    std::sort(cols.begin(), cols.end());
    cols.erase(std::unique(cols.begin(), cols.end()), cols.end());
    ones.assign(cols.size(), 1.0f);
    d.AppendSparseRow(cols, ones, Label(tokens[0], path, line));
  });
  return Finish(std::move(d), path);
}

void WriteYfccText(const Dataset& data, const std::string& path) {
  if (data.is_sparse()) throw InputError(StrCat(path, ": yfcc-text holds dense rows; the data is sparse"));
  const size_t n = data.num_features();
  AtomicFileWriter writer(path);
  std::string line;
  char buf[16];
  for (size_t i = 0; i < data.num_rows(); ++i) {
    line.assign(1, data.labels()[i] > 0 ? '1' : '0');
    const float* row = data.dense_values().data() + i * n;
    for (size_t j = 0; j < n; ++j) {
      if (!(row[j] >= 0.0f && row[j] < 2.0f)) {
        throw InputError(StrCat(path, ": row ", i + 1, " feature ", j + 1, " = ", row[j],
                                " is outside [0, 2), which yfcc-text's 31 fractional bits hold (scale it: --scale minmax)"));
      }
      const auto q = static_cast<uint64_t>(std::floor(static_cast<double>(row[j]) * kQ31));
      const auto res = std::to_chars(buf, buf + sizeof(buf), q);
      line += ' ';
      line.append(buf, res.ptr);
    }
    line += '\n';
    writer.stream() << line;
  }
  writer.Commit();
}

void WriteCriteoText(const Dataset& data, const std::string& path) {
  if (data.num_features() > kCriteoTextFeatures) {
    throw InputError(StrCat(path, ": criteo-text holds at most ", kCriteoTextFeatures, " features; the data has ",
                            data.num_features()));
  }
  const Dataset sparse = data.is_sparse() ? Dataset() : data.ToSparse();
  const Dataset& d = data.is_sparse() ? data : sparse;
  const CsrMatrix& m = d.csr();
  AtomicFileWriter writer(path);
  std::string line;
  for (size_t i = 0; i < d.num_rows(); ++i) {
    line.assign(1, d.labels()[i] > 0 ? '1' : '0');
    for (uint64_t k = m.row_ptr[i]; k < m.row_ptr[i + 1]; ++k) {
      if (m.val[k] != 1.0f) {
        throw InputError(StrCat(path, ": row ", i + 1, " has feature ", m.col[k] + 1, " = ", m.val[k],
                                "; criteo-text holds binary features (value 1)"));
      }
      char buf[16];
      const auto res = std::to_chars(buf, buf + sizeof(buf), m.col[k] + 1);
      line += ' ';
      line.append(buf, res.ptr);
    }
    line += '\n';
    writer.stream() << line;
  }
  writer.Commit();
}

}  // namespace pimopt
