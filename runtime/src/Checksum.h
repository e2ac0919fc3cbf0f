//===- Checksum.h - The runtime's one checksum ------------------*- C++ -*-===//
//
// CRC-32 (IEEE, zlib's). It checks checkpoints and artifact seals and names
// a model (its manifest's CRC) in checkpoints. The compiler seals artifacts
// with LLVM's `llvm::crc32`, the same function.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_CHECKSUM_H
#define CLEAVE_RUNTIME_CHECKSUM_H

#include <zlib.h>

#include <cstddef>
#include <cstdint>

namespace cleave::rt {

/// The CRC-32 of `bytes` bytes at `data`, continuing from `crc`: the CRC of
/// the bytes before them (0 for none), so that a file can be checked in
/// pieces.
inline uint32_t crc32(const void *data, size_t bytes, uint32_t crc = 0) {
  return uint32_t(::crc32_z(crc, static_cast<const Bytef *>(data), bytes));
}

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_CHECKSUM_H
