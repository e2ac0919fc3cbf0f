//===- Idx.h - Idx files (MNIST's format), gzipped or plain ----*- C++ -*-===//
//
// The idx format of MNIST and Fashion-MNIST: a 4-byte big-endian magic
// number `0x00 0x00 <type> <rank>`, `rank` big-endian uint32 dimensions, then
// the elements in row-major order. Only unsigned-byte elements (type 0x08)
// are read: images have magic 0x00000803 ([count, rows, cols]) and labels
// 0x00000801 ([count]). A file may be gzip-compressed (detected by its
// magic bytes; a name ending in `.gz` must be gzip).
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_DATA_IDX_H
#define CLEAVE_DATA_IDX_H

#include "Status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace cleave::data {

/// Magic numbers of the two idx files a dataset split consists of.
constexpr uint32_t kIdxImagesMagic = 0x00000803;
constexpr uint32_t kIdxLabelsMagic = 0x00000801;

/// Uncompressed files larger than this are refused (a gzip bomb, or not an
/// idx file): 60000 28x28 images are 47 MB.
constexpr uint64_t kMaxIdxBytes = uint64_t(1) << 33;

/// The contents of an unsigned-byte idx file.
struct IdxArray {
  std::vector<uint32_t> dims;
  std::vector<uint8_t> data;
};

/// Reads the whole file at `path`, inflating it if it is gzip-compressed.
/// Errors name the file: it cannot be opened, it is not gzip although its
/// name ends in .gz, the gzip stream is corrupt or truncated, or it inflates
/// to more than kMaxIdxBytes.
rt::Status readMaybeGzip(const std::string &path, std::vector<uint8_t> &out);

/// Parses idx `bytes` read from `path` (named in errors): the magic must be
/// `expectedMagic`, no dimension may be zero, and the file length must be
/// exactly the header plus the product of the dimensions.
rt::Status parseIdx(const std::string &path, std::vector<uint8_t> bytes,
                    uint32_t expectedMagic, IdxArray &out);

/// readMaybeGzip followed by parseIdx.
rt::Status readIdx(const std::string &path, uint32_t expectedMagic,
                   IdxArray &out);

} // namespace cleave::data

#endif // CLEAVE_DATA_IDX_H
