//===- NNBuilders.h - Helpers that build nn graphs --------------*- C++ -*-===//
//
// Small building blocks shared by the VJPs, autodiff, the training-step
// builder and the frontends. Every helper infers result types.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_NN_IR_NNBUILDERS_H
#define CLEAVE_NN_IR_NNBUILDERS_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

namespace mlir::cleave::nn {

class AttentionOp;

/// A splat `arith.constant` of `shape` (rank 0 by default).
Value splat(OpBuilder &b, Location loc, double value, Type elementType,
            ArrayRef<int64_t> shape = {});

/// A splat constant with the type of `like`.
Value splatLike(OpBuilder &b, Location loc, double value, Value like);

/// Reshapes `v` to `shape`, writing one dynamic dimension as -1. Returns `v`
/// unchanged when it already has that shape.
Value reshapeTo(OpBuilder &b, Location loc, Value v, ArrayRef<int64_t> shape);

/// Sums a broadcast result back to the shape of the operand it came from
/// (the adjoint of numpy broadcasting).
Value sumToShape(OpBuilder &b, Location loc, Value v, ArrayRef<int64_t> shape);

/// Broadcasts `v` (the result of a reduction over `axes`, with or without
/// kept dimensions) back to `shape`.
Value unreduce(OpBuilder &b, Location loc, Value v, ArrayRef<int64_t> axes,
               ArrayRef<int64_t> shape);

/// Number of elements in the reduced `axes` of `shape`, as a double
/// (requires those dimensions to be static).
FailureOr<double> reducedCount(ArrayRef<int64_t> shape, ArrayRef<int64_t> axes);

/// The values of `nn.attention`'s decomposition.
struct AttentionParts {
  /// softmax(mask(scale(query @ key^T))), `[..., T, S]`.
  Value probs;
  /// The probabilities after the op's dropout: `probs` without one.
  Value kept;
  /// kept @ value, `[..., T, Dv]`.
  Value result;
};

/// Builds the ops `op` stands for (nn.matmul, nn.mul or nn.div, nn.add,
/// nn.where, nn.softmax, nn.dropout, nn.matmul: what the ONNX importer emits
/// for attention) at the builder's insertion point, from `op`'s operands. A
/// key that is an nn.transpose of the last two dimensions is multiplied as
/// its input, without `transpose_b`.
/// Without `withResult`, only the probabilities, with and without dropout
/// (a VJP's recomputation).
AttentionParts decomposeAttention(OpBuilder &b, AttentionOp op,
                                  bool withResult = true);

} // namespace mlir::cleave::nn

#endif // CLEAVE_NN_IR_NNBUILDERS_H
