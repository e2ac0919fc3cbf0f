//===- Passes.h - Cleave's graph transformations ----------------*- C++ -*-===//
//
// Declares the passes that take a model to the two graphs of a step.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_COMPILER_TRANSFORMS_PASSES_H
#define CLEAVE_COMPILER_TRANSFORMS_PASSES_H

#include "dialects/NN/IR/NNDialect.h"
#include "dialects/Train/IR/TrainDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::cleave {

#define GEN_PASS_DECL
#include "compiler/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "compiler/Transforms/Passes.h.inc"

} // namespace mlir::cleave

#endif // CLEAVE_COMPILER_TRANSFORMS_PASSES_H
