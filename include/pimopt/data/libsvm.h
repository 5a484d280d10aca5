// LIBSVM/SVMlight text format, read with LIBLINEAR's strictness:
//   <label> <index>:<value> <index>:<value> ...      # optional comment
// Labels are +1/-1 or 1/0 (one convention per file); indices are 1-based and strictly increasing; values are
// finite numbers. Blank lines and '#' comments are skipped; CRLF line ends are accepted. Any violation raises
// ParseError naming path:line.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "pimopt/data/dataset.h"

namespace pimopt {

class ThreadPool;

// Largest feature index accepted (1-based). Larger indices would need a model of > 1 GiB of floats; a hashed
// feature space is expected to be smaller.
inline constexpr uint64_t kMaxFeatureIndex = uint64_t{1} << 28;

// Whether a parsed set of `rows` rows, `features` features and `stored` non-zeros is stored dense (the caller's
// storage rule: sources.h's StoresDense). Empty: sparse.
using DenseRule = std::function<bool(uint64_t rows, uint64_t features, uint64_t stored)>;

// Parses LIBSVM text already in memory. `path` is only used in error messages. The text is parsed in pieces of a few
// MiB (at line ends) on the pool's threads, or on the caller's without one, and the pieces are joined in place on
// the same threads, as a dense matrix when `store_dense` says so (the values ToDense would give), else as CSR: the
// same dataset and errors for any number of threads.
Dataset ParseLibsvm(std::string_view text, std::string_view path, ThreadPool* pool = nullptr,
                    const DenseRule& store_dense = {});
Dataset ReadLibsvm(const std::string& path, ThreadPool* pool = nullptr, const DenseRule& store_dense = {});
// ParseLibsvm with every line through the full checks (the reference the common lines' one-pass parse is tested
// against: the same rows, or the same first error).
Dataset ParseLibsvmEveryLineChecked(std::string_view text, std::string_view path);
// Writes with the dataset's original label values and shortest round-trip floats (atomically).
void WriteLibsvm(const Dataset& data, const std::string& path);

}  // namespace pimopt
