//===- NNDialect.cpp - The nn dialect -------------------------------------===//
//
// Registers the nn dialect's ops and attributes.
//
//===----------------------------------------------------------------------===//

#include "dialects/NN/IR/NNDialect.h"
#include "dialects/NN/IR/NNOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::cleave::nn;

#include "dialects/NN/IR/NNDialect.cpp.inc"
#include "dialects/NN/IR/NNEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/NN/IR/NNAttrs.cpp.inc"

void NNDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/NN/IR/NNOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/NN/IR/NNAttrs.cpp.inc"
      >();
}
