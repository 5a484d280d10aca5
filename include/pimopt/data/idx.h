// IDX files (the MNIST / Fashion-MNIST format), plain or gzip-compressed. A big-endian header: two zero bytes,
// a type byte (0x08 = unsigned byte, the only type accepted), the number of dimensions, then one uint32 size per
// dimension; then the data. Wrong magic, truncation and trailing bytes raise ParseError naming the file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pimopt/data/dataset.h"

namespace pimopt {

struct IdxArray {
  std::vector<uint32_t> dims;
  std::vector<uint8_t> values;
};

IdxArray ReadIdx(const std::string& path);

// Builds a binary dataset from an images file and a labels file: pixels scaled to [0,1] (divided by 255), label
// +1 when the class is in `positive_classes`, else -1 (one-vs-rest is a set of one class).
Dataset LoadIdxDataset(const std::string& images_path, const std::string& labels_path,
                       const std::vector<int>& positive_classes);

}  // namespace pimopt
