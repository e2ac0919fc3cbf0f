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

/// Links `objectPath` into the shared object `outputPath` with the C
/// compiler driver Cleave was configured with (`-shared`; the environment
/// variable CLEAVE_LINKER overrides it) and appends the artifact's seal (a
/// checksum, see docs/design/runtime-abi.md); `outputPath` appears only when
/// both succeeded.
LogicalResult linkSharedObject(StringRef objectPath, StringRef outputPath,
                               std::string &error);

/// Machine code for the fully lowered `module` into the sealed artifact
/// `outputPath`: `emitObject` into a temporary file, then
/// `linkSharedObject`. The one way every producer of artifacts
/// (cleave-compile, the tracer, tests) writes them. `codegenSeconds`, when
/// given, receives the time LLVM took to optimise and emit code.
LogicalResult writeArtifact(ModuleOp module, StringRef outputPath,
                            std::string &error,
                            double *codegenSeconds = nullptr);

} // namespace mlir::cleave

#endif // CLEAVE_COMPILER_ARTIFACT_OBJECTWRITER_H
