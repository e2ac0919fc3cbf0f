//===- Passes.h - Writing the artifact --------------------------*- C++ -*-===//
//
// Declares the passes that give a module the artifact's exported symbols.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_COMPILER_ARTIFACT_PASSES_H
#define CLEAVE_COMPILER_ARTIFACT_PASSES_H

#include "dialects/Runtime/IR/RtOps.h"
#include "dialects/Train/IR/TrainDialect.h"
#include "dialects/Common/EnumOption.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Pass/Pass.h"

namespace mlir::cleave {

#define GEN_PASS_DECL
#include "compiler/Artifact/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "compiler/Artifact/Passes.h.inc"

} // namespace mlir::cleave

#endif // CLEAVE_COMPILER_ARTIFACT_PASSES_H
