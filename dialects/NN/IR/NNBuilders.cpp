//===- NNBuilders.cpp - Helpers that build nn graphs ----------------------===//
//
// Shape-adjusting building blocks for VJPs and graph builders.
//
//===----------------------------------------------------------------------===//

#include "dialects/NN/IR/NNBuilders.h"
#include "dialects/NN/IR/NNOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

#include <limits>

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

nn::AttentionParts nn::decomposeAttention(OpBuilder &b, AttentionOp op,
                                          bool withResult) {
  Location loc = op.getLoc();
  Type elt = op.getType().getElementType();
  // A key that is a transposed K^T (nn.MultiheadAttention's export) is
  // multiplied as K^T, as it was exported.
  Value key = op.getKey();
  bool transposeKey = true;
  if (auto t = key.getDefiningOp<TransposeOp>();
      t && swapsLastTwo(t.getPermutation())) {
    key = t.getInput();
    transposeKey = false;
  }
  Value scores = MatmulOp::create(b, loc, op.getQuery(), key,
                                  /*transpose_a=*/false, transposeKey);
  if (std::optional<double> scale = op.getScaleValue()) {
    Value c = splat(b, loc, *scale, elt);
    scores = op.getScaleIsDivisor() ? Value(DivOp::create(b, loc, scores, c))
                                    : Value(MulOp::create(b, loc, scores, c));
  }
  if (Value mask = op.getMask())
    scores = AddOp::create(b, loc, scores, mask);
  ArrayRef<int64_t> shape = cast<RankedTensorType>(scores.getType()).getShape();
  int64_t rank = shape.size();
  if (op.getCausal()) {
    // 1 above the diagonal (j > i): the positions set to -inf.
    int64_t t = shape[rank - 2], s = shape[rank - 1];
    auto type = RankedTensorType::get({t, s}, elt);
    const APFloat one = b.getFloatAttr(elt, 1.0).getValue(),
                  zero = b.getFloatAttr(elt, 0.0).getValue();
    SmallVector<APFloat> above;
    above.reserve(t * s);
    for (int64_t i = 0; i < t; ++i)
      for (int64_t j = 0; j < s; ++j)
        above.push_back(j > i ? one : zero);
    Value cond = arith::ConstantOp::create(b, loc, type,
                                           DenseElementsAttr::get(type, above));
    Value minusInf =
        splat(b, loc, -std::numeric_limits<double>::infinity(), elt);
    scores = WhereOp::create(b, loc, cond, minusInf, scores);
  }
  Value probs =
      SoftmaxOp::create(b, loc, scores, b.getI64IntegerAttr(rank - 1));
  Value kept = probs;
  if (Value seed = op.getSeed())
    kept = DropoutOp::create(b, loc, probs, seed, op.getDropoutRatioAttr(),
                             op.getDropoutStreamAttr());
  if (!withResult)
    return {probs, kept, Value()};
  Value result = MatmulOp::create(b, loc, kept, op.getValue(), false, false);
  return {probs, kept, result};
}
