//===- Passes.h - Cleave's graph transformations ----------------*- C++ -*-===//
//
// Declares the passes that take a model to the two graphs of a step.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_COMPILER_TRANSFORMS_PASSES_H
#define CLEAVE_COMPILER_TRANSFORMS_PASSES_H

#include "dialects/Common/EnumOption.h"
#include "dialects/NN/IR/NNDialect.h"
#include "dialects/Train/IR/TrainDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::cleave {

#define GEN_PASS_DECL
#include "compiler/Transforms/Passes.h.inc"

/// The checks of each pass's options, shared by the pass and by the
/// pipelines (so a tool refuses bad options before it reads a model). Each
/// reports the first problem through `error`, naming options as the pass
/// does (`reduce=mean`).
LogicalResult verifyOptions(const CleaveAttachLossOptions &options,
                            function_ref<void(const Twine &)> error);
LogicalResult verifyOptions(const CleaveBuildTrainStepOptions &options,
                            function_ref<void(const Twine &)> error);
LogicalResult verifyOptions(const CleaveSplitStepOptions &options,
                            function_ref<void(const Twine &)> error);

#define GEN_PASS_REGISTRATION
#include "compiler/Transforms/Passes.h.inc"

} // namespace mlir::cleave

#endif // CLEAVE_COMPILER_TRANSFORMS_PASSES_H
