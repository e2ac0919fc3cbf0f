//===- EntryAbi.h - Reading an entry point's runtime ABI --------*- C++ -*-===//
//
// cleave-lower-entry-abi gives each entry point an `rt.abi` list: one
// dictionary (role, name) per argument after the kernel context. The passes
// after it find arguments by role and name through this.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_COMPILER_CONVERSION_ABI_ENTRYABI_H
#define CLEAVE_COMPILER_CONVERSION_ABI_ENTRYABI_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::cleave {

/// The argument of `f` that its `rt.abi` lists with `role` and `name`, or
/// null if it lists none (or `f` has no ABI yet).
BlockArgument abiArgument(func::FuncOp f, StringRef role, StringRef name);

/// The role `f`'s `rt.abi` gives block argument `arg` ("input", "global",
/// ...), or "" if `arg` is not one of `f`'s arguments or it has no ABI yet.
StringRef abiRole(func::FuncOp f, Value arg);

} // namespace mlir::cleave

#endif // CLEAVE_COMPILER_CONVERSION_ABI_ENTRYABI_H
