#include "pimopt/model/model_io.h"

#include <charconv>
#include <cmath>
#include <sstream>

#include "pimopt/core/atomic_file.h"
#include "pimopt/core/error.h"
#include "pimopt/core/file_util.h"

namespace pimopt {

void WriteModel(const LinearModel& model, const std::string& path, std::string_view comment) {
  AtomicFileWriter writer(path);
  std::ostream& out = writer.stream();
  out << "pimopt_model " << kModelFormatVersion << '\n';
  std::istringstream comments{std::string(comment)};
  for (std::string line; std::getline(comments, line);) out << "# " << line << '\n';
  out << "loss " << LossName(model.loss) << '\n'
      << "num_features " << model.weights.size() << '\n'
      << "fit_bias " << (model.fit_bias ? 1 : 0) << '\n'
      << "positive_label " << FormatDouble(model.positive_label_value) << '\n'
      << "negative_label " << FormatDouble(model.negative_label_value) << '\n';
  if (!model.positive_classes.empty()) out << "positive_classes " << ClassListText(model.positive_classes) << '\n';
  out << "bias " << FormatFloat(model.bias) << '\n' << "weights\n";
  std::string buffer;
  for (float w : model.weights) {
    buffer += FormatFloat(w);
    buffer += '\n';
  }
  out << buffer << "end\n";
  writer.Commit();
}

namespace {

class LineReader {
 public:
  LineReader(std::string_view text, std::string_view path) : text_(text), path_(path) {}
  // Next non-comment line with CR stripped; throws at end of file.
  std::string_view Next(const char* expecting) {
    while (pos_ < text_.size()) {
      size_t end = text_.find('\n', pos_);
      if (end == std::string_view::npos) end = text_.size();
      std::string_view line = text_.substr(pos_, end - pos_);
      pos_ = end + 1;
      ++line_;
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (!line.empty() && line.front() == '#') continue;
      return line;
    }
    throw ParseError(path_, line_ + 1, StrCat("unexpected end of file, expected ", expecting));
  }
  // Reads "key value" and returns value.
  std::string_view Field(std::string_view key) {
    std::string_view line = Next(std::string(key).c_str());
    if (line.substr(0, key.size()) != key || line.size() <= key.size() || line[key.size()] != ' ') {
      Fail(StrCat("expected '", key, " <value>', got '", line, "'"));
    }
    return line.substr(key.size() + 1);
  }
  template <typename T>
  T Number(std::string_view text, const char* what) {
    T v{};
    const auto res = std::from_chars(text.data(), text.data() + text.size(), v);
    if (res.ec != std::errc() || res.ptr != text.data() + text.size()) {
      Fail(StrCat(what, " '", text, "' is not a valid number"));
    }
    if constexpr (std::is_floating_point_v<T>) {
      if (!std::isfinite(v)) Fail(StrCat(what, " '", text, "' is not finite"));
    }
    return v;
  }
  // Whether the next non-comment line is "key ..." (nothing is consumed).
  bool PeekIs(std::string_view key) {
    const size_t pos = pos_;
    const uint64_t line = line_;
    bool is = false;
    try {
      const std::string_view next = Next(std::string(key).c_str());
      is = next.size() > key.size() && next.substr(0, key.size()) == key && next[key.size()] == ' ';
    } catch (const ParseError&) {
    }
    pos_ = pos;
    line_ = line;
    return is;
  }
  [[noreturn]] void Fail(const std::string& what) const { throw ParseError(path_, line_, what); }
  bool AtEnd() const {
    for (size_t i = pos_; i < text_.size(); ++i) {
      if (text_[i] != '\n' && text_[i] != '\r' && text_[i] != ' ') return false;
    }
    return true;
  }

 private:
  std::string_view text_;
  std::string_view path_;
  size_t pos_ = 0;
  uint64_t line_ = 0;
};

}  // namespace

LinearModel ParseModel(std::string_view text, std::string_view path) {
  if (text.empty()) throw ParseError(path, "empty file");
  LineReader in(text, path);
  const std::string_view header = in.Next("'pimopt_model <version>'");
  if (header.substr(0, 13) != "pimopt_model ") in.Fail("not a pimopt model file (expected 'pimopt_model 1')");
  const int version = in.Number<int>(header.substr(13), "format version");
  if (version != kModelFormatVersion) {
    in.Fail(StrCat("unsupported model format version ", version, " (this build reads ", kModelFormatVersion, ")"));
  }
  LinearModel model;
  const std::string_view loss = in.Field("loss");
  if (loss == "logistic") {
    model.loss = LossKind::kLogistic;
  } else if (loss == "hinge") {
    model.loss = LossKind::kHinge;
  } else {
    in.Fail(StrCat("unknown loss '", loss, "'"));
  }
  const auto n = in.Number<uint64_t>(in.Field("num_features"), "num_features");
  if (n > (uint64_t{1} << 28)) in.Fail("num_features is absurdly large");
  const int fit_bias = in.Number<int>(in.Field("fit_bias"), "fit_bias");
  if (fit_bias != 0 && fit_bias != 1) in.Fail("fit_bias must be 0 or 1");
  model.fit_bias = fit_bias == 1;
  model.positive_label_value = in.Number<double>(in.Field("positive_label"), "positive_label");
  model.negative_label_value = in.Number<double>(in.Field("negative_label"), "negative_label");
  // Optional: the classes called positive, for a model trained on data labelled by class.
  if (in.PeekIs("positive_classes")) {
    const std::string list(in.Field("positive_classes"));
    try {
      model.positive_classes = ParseClassList(list);
    } catch (const ConfigError& e) {
      in.Fail(StrCat("positive_classes: ", e.detail()));
    }
  }
  model.bias = in.Number<float>(in.Field("bias"), "bias");
  if (in.Next("'weights'") != "weights") in.Fail("expected 'weights'");
  model.weights.resize(n);
  for (auto& w : model.weights) w = in.Number<float>(in.Next("a weight"), "weight");
  if (in.Next("'end'") != "end") in.Fail(StrCat("expected 'end' after ", n, " weights (too many weights?)"));
  if (!in.AtEnd()) in.Fail("unexpected content after 'end'");
  return model;
}

LinearModel ReadModel(const std::string& path) { return ParseModel(ReadFileToString(path), path); }

void WriteLiblinearModel(const LinearModel& model, const std::string& path) {
  AtomicFileWriter writer(path);
  std::ostream& out = writer.stream();
  auto label = [](double v) { return std::to_string(static_cast<long long>(std::llround(v))); };
  out << "solver_type " << (model.loss == LossKind::kLogistic ? "L2R_LR" : "L2R_L1LOSS_SVC_DUAL") << '\n'
      << "nr_class 2\n"
      << "label " << label(model.positive_label_value) << ' ' << label(model.negative_label_value) << '\n'
      << "nr_feature " << model.weights.size() << '\n'
      << "bias " << (model.fit_bias ? 1 : -1) << '\n'
      << "w\n";
  std::string buffer;
  char tmp[64];
  for (float w : model.weights) {
    std::snprintf(tmp, sizeof(tmp), "%.17g \n", static_cast<double>(w));
    buffer += tmp;
  }
  if (model.fit_bias) {
    std::snprintf(tmp, sizeof(tmp), "%.17g \n", static_cast<double>(model.bias));
    buffer += tmp;
  }
  out << buffer;
  writer.Commit();
}

}  // namespace pimopt
