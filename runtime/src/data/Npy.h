//===- Npy.h - NumPy's .npy array format ------------------------*- C++ -*-===//
//
// A .npy file (format versions 1.0, 2.0 and 3.0) is the magic "\x93NUMPY",
// the version bytes, a little-endian header length (2 bytes in 1.0, 4 in
// later versions), a header that is a Python dict literal
//
//   {'descr': '<f4', 'fortran_order': False, 'shape': (60000, 28, 28), }
//
// padded with spaces and a newline, then the elements. Read are C-order
// arrays of little-endian uint8 ('|u1'), int32 ('<i4'), int64 ('<i8') and
// float32 ('<f4'); Fortran order, big-endian data and every other dtype
// (structured, object, float64, ...) are refused with a message saying what
// was found and what is read.
//
// The parser works on bytes in memory (a mapped file, a member of an .npz
// archive) and never copies the elements: the result points into them.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_DATA_NPY_H
#define CLEAVE_DATA_NPY_H

#include "ElementType.h"
#include "Status.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace cleave::data {

/// Arrays larger than this are refused (a corrupt header, most likely).
constexpr uint64_t kMaxNpyBytes = uint64_t(1) << 40;

/// A view of the elements of a parsed .npy array.
struct NpyArray {
  ElementType type = ElementType::U8;
  std::vector<int64_t> shape;
  /// The elements, C order, little-endian; not necessarily aligned (inside
  /// an .npz archive they start wherever the member does).
  const uint8_t *data = nullptr;
  size_t bytes = 0;
};

/// Parses the .npy `bytes[0..size)` read from `name` (a path, or
/// "archive.npz:member.npy"; named in errors). The bytes must hold exactly
/// the header and the elements it describes.
rt::Status parseNpy(const std::string &name, const uint8_t *bytes, size_t size,
                    NpyArray &out);

/// "[60000, 28, 28]".
std::string shapeString(const std::vector<int64_t> &shape);

} // namespace cleave::data

#endif // CLEAVE_DATA_NPY_H
