//===- Patterns.h - nn and train ops to linalg and rt -----------*- C++ -*-===//
//
// Pattern sets of the lowering, split by theme.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_COMPILER_CONVERSION_NNTOLINALG_PATTERNS_H
#define CLEAVE_COMPILER_CONVERSION_NNTOLINALG_PATTERNS_H

#include "mlir/IR/PatternMatch.h"

namespace mlir::cleave {

/// Elementwise arithmetic, activations and their gradients.
void populateElementwisePatterns(RewritePatternSet &patterns);
/// Reshapes, transposes, slices, concatenation, broadcasts, embedding.
void populateShapePatterns(RewritePatternSet &patterns);
/// Gathers with run-time indices and their scatter-add gradients.
void populateGatherPatterns(RewritePatternSet &patterns);
/// Reductions, softmax, losses, normalisation, dropout.
void populateReductionPatterns(RewritePatternSet &patterns);
/// Matmul, linear, convolution and pooling as runtime kernels.
void populateKernelPatterns(RewritePatternSet &patterns);
/// Reports (at the op) a kernel op whose operands the runtime's f32 kernels
/// cannot take, before the conversion would fail without a reason.
LogicalResult checkKernelOperands(Operation *root);
/// Optimizer updates, clipping and cross-rank reduction.
void populateTrainPatterns(RewritePatternSet &patterns);

} // namespace mlir::cleave

#endif // CLEAVE_COMPILER_CONVERSION_NNTOLINALG_PATTERNS_H
