//===- NNBuilders.cpp - Helpers that build nn graphs ----------------------===//
//
// Shape-adjusting building blocks for VJPs and graph builders.
//
//===----------------------------------------------------------------------===//

#include "dialects/NN/IR/NNBuilders.h"
#include "dialects/NN/IR/NNOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
using namespace mlir::cleave;

Value nn::splat(OpBuilder &b, Location loc, double value, Type elementType,
                ArrayRef<int64_t> shape) {
  auto type = RankedTensorType::get(shape, elementType);
  auto attr = DenseElementsAttr::get(
      type, b.getFloatAttr(elementType, value).getValue());
  return arith::ConstantOp::create(b, loc, type, attr);
}

Value nn::splatLike(OpBuilder &b, Location loc, double value, Value like) {
  auto t = cast<RankedTensorType>(like.getType());
  return splat(b, loc, value, t.getElementType(), t.getShape());
}

Value nn::reshapeTo(OpBuilder &b, Location loc, Value v,
                    ArrayRef<int64_t> shape) {
  auto t = cast<RankedTensorType>(v.getType());
  if (t.getShape() == shape)
    return v;
  SmallVector<int64_t> target(shape);
  for (int64_t &d : target)
    if (ShapedType::isDynamic(d))
      d = -1;
  return ReshapeOp::create(b, loc, v, target);
}

Value nn::sumToShape(OpBuilder &b, Location loc, Value v,
                     ArrayRef<int64_t> shape) {
  auto t = cast<RankedTensorType>(v.getType());
  if (t.getShape() == shape)
    return v;
  int64_t lead = t.getRank() - shape.size();
  SmallVector<int64_t> axes;
  for (int64_t d = 0; d < t.getRank(); ++d)
    if (d < lead || (shape[d - lead] == 1 && t.getDimSize(d) != 1))
      axes.push_back(d);
  Value sum = v;
  if (!axes.empty())
    sum = ReduceSumOp::create(b, loc, v, axes, /*keepdims=*/true);
  return reshapeTo(b, loc, sum, shape);
}

Value nn::unreduce(OpBuilder &b, Location loc, Value v, ArrayRef<int64_t> axes,
                   ArrayRef<int64_t> shape) {
  SmallVector<int64_t> kept(shape);
  for (int64_t a : axes)
    kept[a] = 1;
  Value r = reshapeTo(b, loc, v, kept);
  if (cast<RankedTensorType>(r.getType()).getShape() == shape)
    return r;
  return BroadcastToOp::create(b, loc, r, shape);
}

FailureOr<double> nn::reducedCount(ArrayRef<int64_t> shape,
                                   ArrayRef<int64_t> axes) {
  double n = 1;
  for (int64_t a : axes) {
    if (ShapedType::isDynamic(shape[a]))
      return failure();
    n *= shape[a];
  }
  return n;
}
