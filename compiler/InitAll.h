//===- InitAll.h - Register what Cleave parses and runs ---------*- C++ -*-===//
//
// One registration point for cleave-opt, cleave-compile and the tests:
// Cleave's dialects, passes and pipelines plus the upstream ones they use.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_COMPILER_INITALL_H
#define CLEAVE_COMPILER_INITALL_H

#include "mlir/IR/DialectRegistry.h"

namespace mlir::cleave {

/// Registers Cleave's dialects and the upstream dialects, interface models
/// and extensions its inputs and pipelines use.
void registerAllDialects(DialectRegistry &registry);

/// Registers Cleave's passes and pipelines, upstream's general transforms and
/// the upstream passes the pipelines run.
void registerAllPasses();

} // namespace mlir::cleave

#endif // CLEAVE_COMPILER_INITALL_H
