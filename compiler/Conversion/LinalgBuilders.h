//===- LinalgBuilders.h - Building linalg on tensors ------------*- C++ -*-===//
//
// The few shapes of linalg.generic the nn and train lowerings are made of:
// broadcasting elementwise maps, reductions, and in-place updates.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_COMPILER_CONVERSION_LINALGBUILDERS_H
#define CLEAVE_COMPILER_CONVERSION_LINALGBUILDERS_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

namespace mlir::cleave {

/// Computes an element of the result from the elements of the inputs (and,
/// for in-place forms, the current elements of the inits, appended).
using ScalarFn = function_ref<Value(OpBuilder &, Location, ValueRange)>;
using ScalarsFn =
    function_ref<SmallVector<Value>(OpBuilder &, Location, ValueRange)>;

/// A constant of the float or integer type `type` (an integer `value` must
/// be whole).
Value scalar(OpBuilder &b, Location loc, double value, Type type);

/// `tensor.empty` of `type`.
Value empty(OpBuilder &b, Location loc, RankedTensorType type);

/// A tensor of `type` filled with `value`.
Value filled(OpBuilder &b, Location loc, RankedTensorType type, double value);

/// An elementwise linalg.generic over the iteration space of `outType`;
/// inputs broadcast numpy-style (size-1 and missing leading dimensions).
Value elementwise(OpBuilder &b, Location loc, RankedTensorType outType,
                  ValueRange inputs, ScalarFn body);

/// An elementwise update of `inits` (same shape) from `inputs` (broadcast to
/// that shape); the body sees the inputs' elements then the inits' elements
/// and returns one value per init. Writing into the inits lets
/// bufferization update state in place.
SmallVector<Value> updateInPlace(OpBuilder &b, Location loc, ValueRange inputs,
                                 ValueRange inits, ScalarsFn body);

/// Reduces `input` over the sorted `axes` (dropping them) with `combine(x,
/// acc)`, starting from `init`, in the element type.
Value reduce(OpBuilder &b, Location loc, Value input, ArrayRef<int64_t> axes,
             double init,
             function_ref<Value(OpBuilder &, Location, Value, Value)> combine);

/// Sums `input` over the sorted `axes` (dropping them). An f32 sum
/// accumulates in f64 and rounds once at the end, as PyTorch's CPU kernels
/// do for batch-norm statistics: a float32 sum of n terms drifts by up to
/// n ulps, enough to flip the sign of a near-zero gradient that an adaptive
/// optimizer then turns into a full step (docs/design/numerics.md).
Value sum(OpBuilder &b, Location loc, Value input, ArrayRef<int64_t> axes);

/// Reinserts the reduced `axes` as size-1 dimensions.
Value keepDims(OpBuilder &b, Location loc, Value reduced,
               ArrayRef<int64_t> axes, int64_t rank);

/// Reshapes without copying (collapse/expand, through 1-D if needed).
Value reshape(OpBuilder &b, Location loc, Value v, ArrayRef<int64_t> shape);

/// The first element of a rank-0 tensor.
Value extractScalar(OpBuilder &b, Location loc, Value rank0);

/// An integer tensor element (a label or an index) as `index`, clamped into
/// [0, bound) so that bad data can never make generated code read out of
/// bounds (the runtime validates labels and indices before they get here).
Value clampedIndex(OpBuilder &b, Location loc, Value element, int64_t bound);
/// clampedIndex of a value that is an `index` already.
Value clampIndex(OpBuilder &b, Location loc, Value index, int64_t bound);

/// A linalg.generic over `type` whose one input, `indices`, is read at the
/// result dimensions `indexDims`: `body` maps the index element (the
/// builder positioned in the body) to the result element. Lookups (one-hot,
/// embedding, gathers) build on it.
Value indexedGeneric(OpBuilder &b, Location loc, RankedTensorType type,
                     Value indices, ArrayRef<int64_t> indexDims,
                     function_ref<Value(OpBuilder &, Location, Value)> body);

} // namespace mlir::cleave

#endif // CLEAVE_COMPILER_CONVERSION_LINALGBUILDERS_H
