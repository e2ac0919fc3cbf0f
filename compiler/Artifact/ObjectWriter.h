//===- ObjectWriter.h - LLVM dialect to a shared object ---------*- C++ -*-===//
//
// The last step of compilation: machine code and the artifact file.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_COMPILER_ARTIFACT_OBJECTWRITER_H
#define CLEAVE_COMPILER_ARTIFACT_OBJECTWRITER_H

#include "mlir/IR/BuiltinOps.h"
#include <string>

namespace mlir::cleave {

/// Translates an LLVM-dialect module to LLVM IR, optimises it for the host
/// CPU and writes position-independent object code to `objectPath`.
LogicalResult emitObject(ModuleOp module, StringRef objectPath,
                         std::string &error);

/// Links `objectPath` into the shared object `outputPath` with the host
/// linker (`cc -shared`) and appends the artifact's seal (a checksum, see
/// docs/design/runtime-abi.md); `outputPath` appears only when both
/// succeeded.
LogicalResult linkSharedObject(StringRef objectPath, StringRef outputPath,
                               std::string &error);

} // namespace mlir::cleave

#endif // CLEAVE_COMPILER_ARTIFACT_OBJECTWRITER_H
