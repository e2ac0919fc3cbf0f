//===- Utils.h - Helpers shared by Cleave's transformations -----*- C++ -*-===//
//
// Function-level utilities used by several passes and the frontends.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_COMPILER_TRANSFORMS_UTILS_H
#define CLEAVE_COMPILER_TRANSFORMS_UTILS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::cleave {

/// Recomputes the result type of every op in `func` from its operands (in
/// order), then the function's result types. Used after argument types
/// change, e.g. when the batch is specialised. Emits the diagnostic of the
/// first op whose type cannot be inferred.
LogicalResult reinferTypes(func::FuncOp func);

/// Requires `func` to be a single block without nested regions.
LogicalResult requireStraightLine(func::FuncOp func, StringRef why);

} // namespace mlir::cleave

#endif // CLEAVE_COMPILER_TRANSFORMS_UTILS_H
