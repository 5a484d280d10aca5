#include "pimopt/data/sources.h"

#include <charconv>
#include <cstdlib>
#include <fstream>
#include <algorithm>
#include <map>
#include <optional>

#include "pimopt/core/error.h"
#include "pimopt/data/artifact_text.h"
#include "pimopt/data/binary_format.h"
#include "pimopt/core/file_util.h"
#include "pimopt/data/idx.h"
#include "pimopt/data/libsvm.h"
#include "pimopt/data/synthetic.h"

namespace pimopt {
namespace {

ParamTable<SourceOptions> MakeSourceParams() {
  ParamTable<SourceOptions> t;
  t.AddChoice("input-format", &SourceOptions::input_format, InputFormat::kAuto,
              std::vector<std::pair<ParamChoice, InputFormat>>{
                  {{"auto", "pimopt binary and IDX by their headers, else LIBSVM", {}}, InputFormat::kAuto},
                  {{"libsvm", "LIBSVM text", {}}, InputFormat::kLibsvm},
                  {{"yfcc-text", "PIM-Opt's dense text: label 0/1 and uint32 features with 31 fractional bits", {}},
                   InputFormat::kYfccText},
                  {{"criteo-text", "PIM-Opt's sparse text: label 0/1 and 1-based numbers of binary features", {}},
                   InputFormat::kCriteoText}})
      .Noun("input format")
      .Effect(ParamEffect::kNone)  // what it reads is fingerprinted
      .Group(kDataParamGroup)
      .Help("how data files are read (docs/formats.md)");
  t.AddCustom(
       "positive-classes", ParamType::kText, std::string("0,2,4,6"),
       [](const SourceOptions& o) -> ParamValue { return ClassListText(o.positive_classes); },
       [](SourceOptions& o, const ParamValue& v) { o.positive_classes = ParseClassList(std::get<std::string>(v)); })
      .Group(kDataParamGroup)
      .Help("IDX data: the classes labelled +1, a comma list (one class = one-vs-rest)");
  t.AddChoice("storage", &SourceOptions::storage, StorageChoice::kAuto,
              std::vector<std::pair<ParamChoice, StorageChoice>>{
                  {{"auto", "dense if at least 25% of the entries are non-zero (and it fits in 8 GiB)", {}},
                   StorageChoice::kAuto},
                  {{"dense", "row-major floats", {}}, StorageChoice::kDense},
                  {{"sparse", "CSR", {}}, StorageChoice::kSparse}})
      .Noun("storage")
      .Group(kDataParamGroup)
      .Help(
          "how the features are stored (dense and sparse paths round differently, and --scale minmax scales a "
          "sparse set by max |x| without a shift, which would fill its zeros)");
  return t;
}

struct Spec {
  std::string name;                         // before ':'
  std::string part;                         // fashion-mnist: "train" / "test"
  std::map<std::string, std::string> keys;  // synthetic: key=value pairs
};

Spec ParseSpec(const std::string& spec) {
  Spec s;
  const size_t colon = spec.find(':');
  s.name = spec.substr(0, colon);
  if (colon == std::string::npos) return s;
  const std::string rest = spec.substr(colon + 1);
  if (s.name == "fashion-mnist") {
    s.part = rest;
    if (rest != "train" && rest != "test") {
      throw ConfigError("--data", StrCat("'", spec, "': fashion-mnist takes :train or :test"));
    }
    return s;
  }
  for (const std::string& item : SplitText(rest, ',')) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw ConfigError("--data", StrCat("'", spec, "': expected key=value, got '", item, "'"));
    }
    s.keys[item.substr(0, eq)] = item.substr(eq + 1);
  }
  return s;
}

// A built-in synthetic set: its generator (with the spec's parameters) and the size of its companion test set.
struct Synthetic {
  std::unique_ptr<SyntheticGenerator> generator;
  uint64_t test_rows = 0;
};

// Sets the generator's parameters from the spec's keys (keys may use '_' for '-'); test-rows is the built-in's own:
// the size of its companion test set (default rows / 4).
Synthetic ParseSynthetic(const std::string& spec) {
  const Spec s = ParseSpec(spec);
  Synthetic out;
  out.generator = MakeSyntheticGenerator(s.name);
  PIMOPT_CHECK(out.generator != nullptr, "not a synthetic built-in: ", s.name);
  std::optional<uint64_t> test_rows;
  for (const auto& [raw_key, text] : s.keys) {
    std::string key = raw_key;
    std::replace(key.begin(), key.end(), '_', '-');
    try {
      if (key == "test-rows") {
        ParamInfo info;
        info.name = "test-rows";
        info.type = ParamType::kUint;
        info.min = 1;
        test_rows = std::get<uint64_t>(ParseParamValue(info, text));
      } else if (!out.generator->Set(key, text)) {
        std::vector<std::string> known;
        for (const ParamInfo* info : out.generator->params()) known.push_back(info->name);
        known.push_back("test-rows");
        throw ConfigError("--data",
                          StrCat(s.name, ": unknown parameter '", raw_key, "' (known: ", JoinNames(known), ")"));
      }
    } catch (const ConfigError& e) {
      if (e.parameter() == "--data") throw;
      throw ConfigError("--data", StrCat(s.name, ": ", raw_key, "='", text, "': ", e.detail()));
    }
  }
  out.test_rows = test_rows.value_or(std::max<uint64_t>(1, out.generator->rows() / 4));
  return out;
}

bool IsSyntheticName(const std::string& name) { return MakeSyntheticGenerator(name) != nullptr; }

Dataset LoadFashionMnist(const std::string& part, const SourceOptions& options) {
  const std::string dir = FashionMnistDir();
  const std::string prefix = part == "test" ? "t10k" : "train";
  const std::string images = StrCat(dir, "/", prefix, "-images-idx3-ubyte.gz");
  const std::string labels = StrCat(dir, "/", prefix, "-labels-idx1-ubyte.gz");
  if (!FileExists(images)) {
    throw InputError(StrCat("fashion-mnist: ", images,
                            " not found (install Debian's dataset-fashion-mnist: scripts/setup.sh, or set "
                            "PIMOPT_FASHION_MNIST_DIR)"));
  }
  Dataset d = LoadIdxDataset(images, labels, options.positive_classes);
  d.source = StrCat("fashion-mnist:", part.empty() ? "train" : part);
  return d;
}

// In auto mode, a first line with several tokens and no ':' is not LIBSVM: most likely one of PIM-Opt's formats.
void RejectArtifactTextAsLibsvm(const std::string& path, std::string_view head) {
  const std::string_view line = head.substr(0, head.find('\n'));
  const size_t first_space = line.find_first_of(" \t");
  const bool several = first_space != std::string_view::npos &&
                       line.find_first_not_of(" \t\r", first_space) != std::string_view::npos;
  if (several && line.find(':') == std::string_view::npos && line.find('#') == std::string_view::npos) {
    throw ParseError(path, 1,
                     "no index:value pairs, so not LIBSVM; PIM-Opt's text files are read with --input-format "
                     "yfcc-text or criteo-text");
  }
}

DenseRule DenseRuleOf(const SourceOptions& options) {
  return [&options](uint64_t rows, uint64_t features, uint64_t stored) {
    return StoresDense(rows, features, stored, options);
  };
}

Dataset LoadFile(const std::string& path, const SourceOptions& options, ThreadPool* pool) {
  switch (options.input_format) {
    case InputFormat::kYfccText:
      return ParseYfccText(FileBytes(path).view(), path);
    case InputFormat::kCriteoText:
      return ParseCriteoText(FileBytes(path).view(), path);
    case InputFormat::kLibsvm:
      return ReadLibsvm(path, pool, DenseRuleOf(options));
    case InputFormat::kAuto:
      break;
  }
  std::ifstream probe(path, std::ios::binary);
  if (!probe) {
    if (!FileExists(path)) throw InputError(StrCat(path, ": no such file (and not a built-in dataset name)"));
    throw InputError(StrCat(path, ": cannot open"));
  }
  unsigned char head[8] = {};
  probe.read(reinterpret_cast<char*>(head), 8);
  const auto got = probe.gcount();
  if (got == 0) throw ParseError(path, "empty file");
  if (got >= 8 && std::equal(head, head + 8, reinterpret_cast<const unsigned char*>(kBinaryMagic))) {
    return ReadBinaryDataset(path);
  }
  const bool gzip = got >= 2 && head[0] == 0x1f && head[1] == 0x8b;
  const bool idx = (got >= 2 && head[0] == 0 && head[1] == 0) || path.find("-idx") != std::string::npos;
  if (gzip || idx) {
    std::string labels = path;
    const size_t at = labels.find("images-idx3");
    if (at == std::string::npos) {
      throw InputError(StrCat(path,
                              ": an IDX images file must be named *images-idx3* so its labels file "
                              "(*labels-idx1*) can be found"));
    }
    labels.replace(at, 11, "labels-idx1");
    return LoadIdxDataset(path, labels, options.positive_classes);
  }
  const FileBytes bytes(path);
  RejectArtifactTextAsLibsvm(path, bytes.view());
  return ParseLibsvm(bytes.view(), path, pool, DenseRuleOf(options));
}

}  // namespace

const ParamTable<SourceOptions>& SourceParams() {
  static const ParamTable<SourceOptions> table = MakeSourceParams();
  return table;
}

SourceOptions::SourceOptions() { SourceParams().ApplyDefaults(*this); }

bool IsBuiltinName(const std::string& spec) {
  const std::string name = spec.substr(0, spec.find(':'));
  return name == "fashion-mnist" || IsSyntheticName(name);
}

void CheckDataSpec(const std::string& spec) {
  const std::string name = spec.substr(0, spec.find(':'));
  if (name == "fashion-mnist") {
    ParseSpec(spec);
  } else if (IsSyntheticName(name)) {
    ParseSynthetic(spec);
  }
}

std::string FashionMnistDir() {
  const char* env = std::getenv("PIMOPT_FASHION_MNIST_DIR");
  return env && *env ? env : "/usr/share/datasets/fashion-mnist";
}

namespace {
// Whether rows x features floats stay within the 8 GiB dense storage allows.
bool DenseArrayFits(uint64_t rows, uint64_t features) {
  return static_cast<double>(rows) * static_cast<double>(features) * 4 <= 8.0 * (1ull << 30);
}
}  // namespace

bool AutoStoresDense(uint64_t rows, uint64_t features, uint64_t stored, const SourceOptions& options) {
  const double cells = static_cast<double>(rows) * static_cast<double>(features);
  return cells > 0 && static_cast<double>(stored) / cells >= options.dense_threshold && DenseArrayFits(rows, features);
}

bool StoresDense(uint64_t rows, uint64_t features, uint64_t stored, const SourceOptions& options) {
  switch (options.storage) {
    case StorageChoice::kDense:
      return DenseArrayFits(rows, features);
    case StorageChoice::kSparse:
      return false;
    case StorageChoice::kAuto:
      return AutoStoresDense(rows, features, stored, options);
  }
  return false;
}

Dataset ApplyStorageChoice(Dataset data, const SourceOptions& options) {
  switch (options.storage) {
    case StorageChoice::kDense:
      if (!DenseArrayFits(data.num_rows(), data.num_features())) {
        throw ConfigError("--storage", "dense storage of this dataset would exceed 8 GiB");
      }
      return data.is_sparse() ? data.ToDense() : std::move(data);
    case StorageChoice::kSparse:
      return data.is_sparse() ? std::move(data) : data.ToSparse();
    case StorageChoice::kAuto:
      if (data.is_sparse() && AutoStoresDense(data.num_rows(), data.num_features(), data.num_stored(), options)) {
        return data.ToDense();
      }
      return data;
  }
  return data;
}

Dataset LoadDataset(const std::string& spec, const SourceOptions& options, ThreadPool* pool) {
  const std::string name = spec.substr(0, spec.find(':'));
  Dataset d;
  if (name == "fashion-mnist") {
    d = LoadFashionMnist(ParseSpec(spec).part, options);
  } else if (IsSyntheticName(name)) {
    const Synthetic s = ParseSynthetic(spec);
    d = s.generator->Generate(0, s.generator->rows(), pool);
    d.source = spec;
  } else {
    d = LoadFile(spec, options, pool);
  }
  return ApplyStorageChoice(std::move(d), options);
}

std::optional<Dataset> LoadCompanionTestSet(const std::string& spec, const SourceOptions& options, ThreadPool* pool) {
  const std::string name = spec.substr(0, spec.find(':'));
  Dataset d;
  if (name == "fashion-mnist") {
    if (ParseSpec(spec).part == "test") return std::nullopt;
    d = LoadFashionMnist("test", options);
  } else if (IsSyntheticName(name)) {
    const Synthetic s = ParseSynthetic(spec);
    d = s.generator->Generate(s.generator->rows(), s.test_rows, pool);  // the rows after the training rows
    d.source = StrCat(spec, " (test rows)");
  } else {
    return std::nullopt;
  }
  return ApplyStorageChoice(std::move(d), options);
}

std::optional<uint64_t> CountRowsCheaply(const std::string& spec, bool companion_test) {
  const std::string name = spec.substr(0, spec.find(':'));
  if (IsSyntheticName(name)) {
    const Synthetic s = ParseSynthetic(spec);
    return companion_test ? s.test_rows : s.generator->rows();
  }
  if (!companion_test && !IsBuiltinName(spec) && IsBinaryDatasetFile(spec)) return ReadBinaryDatasetInfo(spec).rows;
  return std::nullopt;
}

Dataset LoadRawRows(const std::string& spec, bool companion_test, uint64_t begin, uint64_t end, ThreadPool* pool) {
  const std::string name = spec.substr(0, spec.find(':'));
  const std::optional<uint64_t> rows = CountRowsCheaply(spec, companion_test);
  PIMOPT_CHECK(rows.has_value(), "LoadRawRows needs a binary cache or a synthetic built-in");
  if (begin > end || end > *rows) {
    throw InputError(StrCat(spec, ": rows [", begin, ", ", end, ") are outside its ", *rows, " rows"));
  }
  if (!IsSyntheticName(name)) return ReadBinaryDatasetRows(spec, begin, end);
  // A synthetic row is a function of its row number: generate only [begin, end) (the test rows follow the train rows).
  const Synthetic s = ParseSynthetic(spec);
  Dataset d = s.generator->Generate((companion_test ? s.generator->rows() : 0) + begin, end - begin, pool);
  d.source = companion_test ? StrCat(spec, " (test rows)") : spec;
  return d;
}

}  // namespace pimopt
