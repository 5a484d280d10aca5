// Resolves a data argument (a file path or a built-in name) to a Dataset.
//
// Built-in names:
//   fashion-mnist[:train|:test]   Debian's dataset-fashion-mnist (60,000 train / 10,000 test, 784 features in
//                                  [0,1]); binary task: classes in `positive_classes` (default 0,2,4,6 =
//                                  "upper-body garment") vs the rest. The directory can be overridden with the
//                                  PIMOPT_FASHION_MNIST_DIR environment variable.
//   dense[:key=value,...]          synthetic YFCC-shaped data (keys: DenseSyntheticTable()'s parameters and
//                                  test-rows, the size of its own test set; '_' is accepted for '-')
//   sparse[:key=value,...]         synthetic Criteo-shaped data (keys: SparseSyntheticTable()'s and test-rows)
// Files: the format is detected from the content: pimopt binary cache (magic "PIMOPTDS"), IDX images (plain or
// gzip; the labels file is found by replacing "images-idx3" with "labels-idx1" in the name), else LIBSVM text.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "pimopt/core/params.h"
#include "pimopt/data/dataset.h"

namespace pimopt {

class ThreadPool;

// The group of the parameters that say how data are read, split and preprocessed (--data, --scale, --storage, ...).
inline constexpr const char* kDataParamGroup = "Data";

enum class StorageChoice { kAuto, kDense, kSparse };
// How a data file is read: by its content (binary cache and IDX by their headers, else LIBSVM), or as one of
// PIM-Opt's text formats (artifact_text.h), which cannot be told from LIBSVM by content alone.
enum class InputFormat { kAuto, kLibsvm, kYfccText, kCriteoText };

// How data sources are read. `positive_classes` and `storage` are parameters declared in SourceParams() (the
// constructor applies their defaults).
struct SourceOptions {
  SourceOptions();
  std::vector<int> positive_classes;  // IDX data: classes mapped to +1
  StorageChoice storage;
  InputFormat input_format;
  // LIBSVM data is stored dense when at least this fraction of entries is non-zero (and it fits in 8 GiB).
  double dense_threshold = 0.25;
};
// The data-source parameters: input-format, positive-classes, storage.
const ParamTable<SourceOptions>& SourceParams();

bool IsBuiltinName(const std::string& spec);
// Checks a built-in name's parameters without generating or reading anything (ConfigError naming --data); files
// are checked when they are read.
void CheckDataSpec(const std::string& spec);
std::string FashionMnistDir();

// Loads the training part of `spec` (for a file: the whole file).
Dataset LoadDataset(const std::string& spec, const SourceOptions& options, ThreadPool* pool = nullptr);
// For a built-in name, its own held-out test set (fashion-mnist's official test split, or further rows of a
// synthetic generator); nullopt for files.
std::optional<Dataset> LoadCompanionTestSet(const std::string& spec, const SourceOptions& options,
                                            ThreadPool* pool = nullptr);
// For reading a part of a dataset (one MPI rank's rows) without producing the rest: the row count of `spec` (or,
// with companion_test, of its companion test set) when it is known without loading - a binary cache or a synthetic
// built-in - else nullopt; and rows [begin, end) of it, before any storage choice (callers that split a dataset
// must make one choice for all parts).
std::optional<uint64_t> CountRowsCheaply(const std::string& spec, bool companion_test = false);
Dataset LoadRawRows(const std::string& spec, bool companion_test, uint64_t begin, uint64_t end,
                    ThreadPool* pool = nullptr);
// The automatic choice for sparse data of `rows` x `features` with `stored` non-zeros: dense when at least
// options.dense_threshold of the entries are stored and the dense array fits in 8 GiB.
bool AutoStoresDense(uint64_t rows, uint64_t features, uint64_t stored, const SourceOptions& options);
// Whether ApplyStorageChoice stores such a set dense (--storage dense: when it fits in 8 GiB; ApplyStorageChoice
// refuses it otherwise). A reader that knows the counts before it joins its rows builds the dense matrix directly.
bool StoresDense(uint64_t rows, uint64_t features, uint64_t stored, const SourceOptions& options);
// Applies the storage choice (dense <-> sparse conversion).
Dataset ApplyStorageChoice(Dataset data, const SourceOptions& options);

}  // namespace pimopt
