// LIBSVM/SVMlight text format, read with LIBLINEAR's strictness:
//   <label> <index>:<value> <index>:<value> ...      # optional comment
// Labels are +1/-1 or 1/0 (one convention per file); indices are 1-based and strictly increasing; values are
// finite numbers. Blank lines and '#' comments are skipped; CRLF line ends are accepted. Any violation raises
// ParseError naming path:line.
#pragma once

#include <string>
#include <string_view>

#include "pimopt/data/dataset.h"

namespace pimopt {

class ThreadPool;

// Largest feature index accepted (1-based). Larger indices would need a model of > 1 GiB of floats; a hashed
// feature space is expected to be smaller.
inline constexpr uint64_t kMaxFeatureIndex = uint64_t{1} << 28;

// Parses LIBSVM text already in memory. `path` is only used in error messages. The text is parsed in pieces of a few
// MiB (at line ends) on the pool's threads, or on the caller's without one: the same dataset and errors either way.
Dataset ParseLibsvm(std::string_view text, std::string_view path, ThreadPool* pool = nullptr);
Dataset ReadLibsvm(const std::string& path, ThreadPool* pool = nullptr);
// Writes with the dataset's original label values and shortest round-trip floats (atomically).
void WriteLibsvm(const Dataset& data, const std::string& path);

}  // namespace pimopt
