//===- ElementType.h - Element types of dataset arrays ----------*- C++ -*-===//

#ifndef CLEAVE_DATA_ELEMENTTYPE_H
#define CLEAVE_DATA_ELEMENTTYPE_H

#include <cstddef>

namespace cleave::data {

/// The element types a dataset array may hold, little-endian.
/// U16 holds token ids (a vocabulary of up to 65536 tokens).
enum class ElementType { U8, U16, I32, I64, F32 };

inline size_t elementSize(ElementType type) {
  switch (type) {
  case ElementType::U8:
    return 1;
  case ElementType::U16:
    return 2;
  case ElementType::I32:
  case ElementType::F32:
    return 4;
  case ElementType::I64:
    return 8;
  }
  return 0;
}

/// NumPy's name of the type: "uint8", "uint16", "int32", "int64",
/// "float32".
inline const char *elementTypeName(ElementType type) {
  switch (type) {
  case ElementType::U8:
    return "uint8";
  case ElementType::U16:
    return "uint16";
  case ElementType::I32:
    return "int32";
  case ElementType::I64:
    return "int64";
  case ElementType::F32:
    return "float32";
  }
  return "?";
}

} // namespace cleave::data

#endif // CLEAVE_DATA_ELEMENTTYPE_H
