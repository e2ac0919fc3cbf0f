//===- SameCode.h - Functions that are the same code -----------*- C++ -*-===//
//
// A model repeats itself (the blocks of a ResNet stage, the layers of a
// transformer, the same elementwise op forward and backward), so the loop
// nests the CPU outliner and the GPU kernel outliner make are often the same
// code under another name. Both back ends compile each distinct function
// once; this is their one notion of "the same".
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_COMPILER_CONVERSION_SAMECODE_H
#define CLEAVE_COMPILER_CONVERSION_SAMECODE_H

#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/Hashing.h"

namespace mlir::cleave {

/// Every attribute of `op` (inherent and discardable) but its symbol name.
DictionaryAttr attributesButName(Operation *op);

/// A hash of a function's code, blind to its name, value names and
/// locations: equal for functions that `isSameCode` says are the same.
llvm::hash_code hashCode(FunctionOpInterface function);

/// Whether two functions are the same code: the same op, the same
/// attributes but their symbol names (the signature among them), and bodies
/// equal op for op up to the renaming of values (block arguments map in
/// order).
bool isSameCode(FunctionOpInterface a, FunctionOpInterface b);

} // namespace mlir::cleave

#endif // CLEAVE_COMPILER_CONVERSION_SAMECODE_H
