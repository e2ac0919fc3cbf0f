//===- Driver.h - Compiling a model file to an artifact ---------*- C++ -*-===//
//
// The logic behind cleave-compile, as a library that tests and the tracing
// frontend share.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_COMPILER_DRIVER_DRIVER_H
#define CLEAVE_COMPILER_DRIVER_DRIVER_H

#include "compiler/Pipelines/Pipelines.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

namespace mlir::cleave {

/// Reads a model: MLIR text in the nn dialect (`.mlir`) or an ONNX file
/// (`.onnx`). Errors are reported through the context's diagnostics.
OwningOpRef<ModuleOp> loadModel(MLIRContext &context, llvm::StringRef path);

/// Runs the pipeline of the options' target on `module` (stopping after
/// `stopAfter` if given), reporting progress on stderr when `verbose`. With
/// `manifest`, it gets the artifact's manifest (JSON) once
/// cleave-write-manifest has written it.
LogicalResult lowerModel(ModuleOp module,
                         const TrainingPipelineOptions &options,
                         std::optional<Phase> stopAfter, bool verbose,
                         std::string *manifest = nullptr);

/// Writes Graphviz of the micro-step and apply graphs of a split module.
LogicalResult writeDot(ModuleOp module, llvm::raw_ostream &os);

/// cleave-compile's main.
int compileMain(int argc, char **argv);

} // namespace mlir::cleave

#endif // CLEAVE_COMPILER_DRIVER_DRIVER_H
