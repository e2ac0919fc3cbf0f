//===- EnumKeyword.h - custom<EnumKeyword> for op formats -------*- C++ -*-===//
//
// Prints and parses an enum attribute as a bare keyword inside an op's
// assembly (`train.global param @w`, `rt.kernel matmul ...`), where the
// attribute's own `<...>` form would be noise. Shared by Cleave's dialects.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_DIALECTS_COMMON_ENUMKEYWORD_H
#define CLEAVE_DIALECTS_COMMON_ENUMKEYWORD_H

#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpImplementation.h"
#include <utility>

namespace mlir::cleave {

/// Prints an enum attribute as a bare keyword (`param`, `mean`).
template <typename AttrT>
void printEnumKeyword(OpAsmPrinter &printer, Operation *, AttrT attr) {
  printer << stringifyEnum(attr.getValue());
}

/// Parses a bare enum keyword; the error lists the valid ones.
template <typename AttrT>
ParseResult parseEnumKeyword(OpAsmParser &parser, AttrT &attr) {
  using EnumT = decltype(std::declval<AttrT>().getValue());
  FailureOr<EnumT> value = FieldParser<EnumT, EnumT>::parse(parser);
  if (failed(value))
    return failure();
  attr = AttrT::get(parser.getContext(), *value);
  return success();
}

} // namespace mlir::cleave

#endif // CLEAVE_DIALECTS_COMMON_ENUMKEYWORD_H
