// The text data files of the PIM-Opt artifact ([PIM-Opt] host_utils/read_data_utils.c, docs/sources.md), read and
// written so that the artifact's own datasets train in pimopt and pimopt's data feeds the artifact:
//
//   yfcc-text    one row per line: "label f_1 f_2 ... f_n", space separated; label 0 or 1 (1 = positive); every
//                f_j an unsigned 32-bit integer holding the feature with 31 fractional bits (x = f / 2^31, so the
//                artifact's min-max normalized features in [0, 1] map to 0 .. 2^31); the same n on every line
//                (4,096 in the artifact: YFCC100M-HNfc6).
//   criteo-text  one row per line: "label i_1 i_2 ... i_k"; label 0 or 1; the i_j are LIBSVM feature numbers
//                (1-based) of binary features (value 1), in a space of kCriteoTextFeatures (the artifact keeps the
//                Criteo rows with 39 features, all of LIBSVM value 0.16013, and drops the value).
//
// Malformed lines raise ParseError naming path:line. Blank lines are skipped.
#pragma once

#include <string>
#include <string_view>

#include "pimopt/data/dataset.h"

namespace pimopt {

inline constexpr uint64_t kCriteoTextFeatures = 1000000;  // [PIM-Opt]: 10^6 weights, the bias slot after them

Dataset ParseYfccText(std::string_view text, std::string_view path);
Dataset ParseCriteoText(std::string_view text, std::string_view path);
// Writers (atomic). yfcc-text needs dense features in [0, 2) (they are quantized toward zero to 31 fractional
// bits); criteo-text needs binary features (every stored value 1). Labels are written 1 (positive) or 0.
void WriteYfccText(const Dataset& data, const std::string& path);
void WriteCriteoText(const Dataset& data, const std::string& path);

}  // namespace pimopt
