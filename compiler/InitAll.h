//===- InitAll.h - Register everything Cleave's tools need ------*- C++ -*-===//
//
// One registration point for cleave-opt, cleave-compile and the tests:
// Cleave's dialects, passes and pipelines plus the upstream ones they use.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_COMPILER_INITALL_H
#define CLEAVE_COMPILER_INITALL_H

#include "mlir/IR/DialectRegistry.h"

namespace mlir::cleave {

/// Registers Cleave's dialects and every upstream dialect and extension.
void registerAllDialects(DialectRegistry &registry);

/// Registers Cleave's passes and pipelines and every upstream pass.
void registerAllPasses();

} // namespace mlir::cleave

#endif // CLEAVE_COMPILER_INITALL_H
