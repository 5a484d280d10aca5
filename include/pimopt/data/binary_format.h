// pimopt's binary dataset cache: fast reload of a parsed dataset. Layout (little-endian), version 1:
//   offset 0   char[8]  magic "PIMOPTDS"
//          8   uint32   format version (1)
//         12   uint32   flags: bit 0 = sparse (CSR), bit 1 = per-sample weights present
//         16   uint64   rows
//         24   uint64   features
//         32   uint64   stored entries (rows*features if dense, non-zeros if sparse)
//         40   float64  original positive label value
//         48   float64  original negative label value
//         56   uint64   checksum of the payload (Checksum64 below)
//         64   payload: float32 labels[rows] (+1/-1); float32 weights[rows] if flagged;
//                       dense: float32 values[rows*features];
//                       sparse: uint64 row_ptr[rows+1], uint32 col[nnz], float32 val[nnz]
// Wrong magic, unknown version, truncation, trailing bytes, a checksum mismatch or inconsistent CSR structure
// raise ParseError naming the file.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "pimopt/data/dataset.h"

namespace pimopt {

inline constexpr char kBinaryMagic[8] = {'P', 'I', 'M', 'O', 'P', 'T', 'D', 'S'};
inline constexpr uint32_t kBinaryFormatVersion = 1;
inline constexpr size_t kBinaryHeaderBytes = 64;

// A fast 64-bit checksum over bytes (word-wise multiply-xor mixing); order-sensitive.
uint64_t Checksum64(std::span<const uint8_t> bytes, uint64_t seed = 0);

void WriteBinaryDataset(const Dataset& data, const std::string& path);
// Reads the whole file; the checksum is verified before the CSR structure is walked.
Dataset ReadBinaryDataset(const std::string& path);
// Streams the payload once and checks its checksum (ParseError on a mismatch), holding 1 MiB at a time: what a
// process that reads only some rows (ReadBinaryDatasetRows, under MPI) cannot check on its own.
void VerifyBinaryDataset(const std::string& path);
// The header of a binary dataset (validated against the file's size).
struct BinaryDatasetInfo {
  uint64_t rows = 0;
  uint64_t features = 0;
  bool sparse = false;
  bool weighted = false;
};
BinaryDatasetInfo ReadBinaryDatasetInfo(const std::string& path);
// Reads only the rows [begin, end) (for one MPI rank): seeks to them, so the cost is that of the slice. The
// header, sizes, labels and the slice's CSR structure are checked; the whole-payload checksum is not (it would
// need the whole file: `pimopt info FILE` or a single-process read checks it).
Dataset ReadBinaryDatasetRows(const std::string& path, uint64_t begin, uint64_t end);
// True if the file starts with the binary magic.
bool IsBinaryDatasetFile(const std::string& path);

}  // namespace pimopt
