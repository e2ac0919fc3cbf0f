//===- TrainDialect.cpp - The train dialect -------------------------------===//
//
// Registers the train dialect and implements #train.init.
//
//===----------------------------------------------------------------------===//

#include "dialects/Train/IR/TrainDialect.h"
#include "dialects/Train/IR/TrainOps.h"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::cleave::train;

#include "dialects/Train/IR/TrainDialect.cpp.inc"
#include "dialects/Train/IR/TrainEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/Train/IR/TrainAttrs.cpp.inc"

void TrainDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/Train/IR/TrainOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/Train/IR/TrainAttrs.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// #train.init
//===----------------------------------------------------------------------===//

/// Number of numeric parameters each initialiser kind takes.
static size_t expectedParams(InitKind kind) {
  switch (kind) {
  case InitKind::zeros:
  case InitKind::ones:
  case InitKind::kaiming_uniform:
    return 0;
  case InitKind::constant:
  case InitKind::fan_in_uniform:
    return 1;
  case InitKind::uniform:
  case InitKind::normal:
    return 2;
  }
  llvm_unreachable("unknown initializer kind");
}

LogicalResult
InitializerAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                        InitKind kind, ArrayRef<APFloat> params) {
  if (params.size() != expectedParams(kind))
    return emitError() << "initializer '" << stringifyInitKind(kind)
                       << "' takes " << expectedParams(kind)
                       << " parameter(s), got " << params.size();
  auto p = [&](unsigned i) { return params[i].convertToDouble(); };
  if (kind == InitKind::fan_in_uniform && p(0) <= 0)
    return emitError() << "fan_in must be positive";
  if (kind == InitKind::uniform && p(0) > p(1))
    return emitError() << "uniform bounds must satisfy lo <= hi";
  if (kind == InitKind::normal && p(1) < 0)
    return emitError() << "normal std must be >= 0";
  return success();
}

Attribute InitializerAttr::parse(AsmParser &parser, Type) {
  StringRef keyword;
  SMLoc loc = parser.getCurrentLocation();
  if (parser.parseLess() || parser.parseKeyword(&keyword))
    return {};
  auto kind = symbolizeInitKind(keyword);
  if (!kind) {
    parser.emitError(loc, "unknown initializer '") << keyword << "'";
    return {};
  }
  SmallVector<APFloat> params;
  while (succeeded(parser.parseOptionalComma())) {
    double v;
    if (parser.parseFloat(v))
      return {};
    params.push_back(APFloat(v));
  }
  if (parser.parseGreater())
    return {};
  return getChecked([&] { return parser.emitError(loc); },
                    parser.getContext(), *kind, params);
}

void InitializerAttr::print(AsmPrinter &printer) const {
  printer << "<" << stringifyInitKind(getKind());
  for (const APFloat &p : getParams()) {
    printer << ", ";
    printer.printFloat(p);
  }
  printer << ">";
}
