//===- LinalgBuilders.cpp - Building linalg on tensors --------------------===//
//
// Implements the generic shapes the lowerings use.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/LinalgBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/Sequence.h"

using namespace mlir;
using namespace mlir::cleave;

Value cleave::scalar(OpBuilder &b, Location loc, double value, Type type) {
  if (isa<IntegerType>(type))
    return arith::ConstantOp::create(
        b, loc, type, b.getIntegerAttr(type, static_cast<int64_t>(value)));
  return arith::ConstantOp::create(b, loc, type, b.getFloatAttr(type, value));
}

Value cleave::empty(OpBuilder &b, Location loc, RankedTensorType type) {
  return tensor::EmptyOp::create(b, loc, type.getShape(),
                                 type.getElementType());
}

Value cleave::filled(OpBuilder &b, Location loc, RankedTensorType type,
                     double value) {
  Value v = scalar(b, loc, value, type.getElementType());
  return linalg::FillOp::create(b, loc, v, empty(b, loc, type)).getResult(0);
}

/// The map reading a (possibly broadcast) operand of `shape` inside an
/// iteration space of `out`.
static AffineMap broadcastMap(MLIRContext *ctx, ArrayRef<int64_t> shape,
                              ArrayRef<int64_t> out) {
  int64_t lead = out.size() - shape.size();
  SmallVector<AffineExpr> exprs;
  for (auto [i, d] : llvm::enumerate(shape)) {
    int64_t dim = lead + i;
    exprs.push_back(d == 1 && out[dim] != 1 ? getAffineConstantExpr(0, ctx)
                                            : getAffineDimExpr(dim, ctx));
  }
  return AffineMap::get(out.size(), 0, exprs, ctx);
}

Value cleave::elementwise(OpBuilder &b, Location loc, RankedTensorType outType,
                          ValueRange inputs, ScalarFn body) {
  MLIRContext *ctx = b.getContext();
  SmallVector<AffineMap> maps;
  for (Value in : inputs)
    maps.push_back(broadcastMap(ctx,
                                cast<RankedTensorType>(in.getType()).getShape(),
                                outType.getShape()));
  maps.push_back(b.getMultiDimIdentityMap(outType.getRank()));
  SmallVector<utils::IteratorType> iters(outType.getRank(),
                                         utils::IteratorType::parallel);
  auto op = linalg::GenericOp::create(
      b, loc, TypeRange{outType}, inputs, ValueRange{empty(b, loc, outType)},
      maps, iters, [&](OpBuilder &nb, Location nl, ValueRange args) {
        Value r = body(nb, nl, args.drop_back());
        linalg::YieldOp::create(nb, nl, r);
      });
  return op.getResult(0);
}

SmallVector<Value> cleave::updateInPlace(OpBuilder &b, Location loc,
                                         ValueRange inputs, ValueRange inits,
                                         ScalarsFn body) {
  MLIRContext *ctx = b.getContext();
  auto outType = cast<RankedTensorType>(inits.front().getType());
  SmallVector<AffineMap> maps;
  for (Value in : inputs)
    maps.push_back(broadcastMap(ctx,
                                cast<RankedTensorType>(in.getType()).getShape(),
                                outType.getShape()));
  for (size_t i = 0; i < inits.size(); ++i)
    maps.push_back(b.getMultiDimIdentityMap(outType.getRank()));
  SmallVector<utils::IteratorType> iters(outType.getRank(),
                                         utils::IteratorType::parallel);
  auto op = linalg::GenericOp::create(
      b, loc, inits.getTypes(), inputs, inits, maps, iters,
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        linalg::YieldOp::create(nb, nl, body(nb, nl, args));
      });
  return SmallVector<Value>(op.getResults());
}

/// Reduces `input` over the sorted `axes` into an accumulator of element
/// type `accElt` starting at `init`; `combine(x, acc)` sees the input's
/// element and the accumulator's.
static Value
reduceInto(OpBuilder &b, Location loc, Value input, ArrayRef<int64_t> axes,
           Type accElt, double init,
           function_ref<Value(OpBuilder &, Location, Value, Value)> combine) {
  auto inType = cast<RankedTensorType>(input.getType());
  int64_t rank = inType.getRank();
  SmallVector<int64_t> outShape;
  SmallVector<AffineExpr> outExprs;
  SmallVector<utils::IteratorType> iters;
  for (int64_t d = 0; d < rank; ++d) {
    bool reduced = llvm::is_contained(axes, d);
    iters.push_back(reduced ? utils::IteratorType::reduction
                            : utils::IteratorType::parallel);
    if (!reduced) {
      outShape.push_back(inType.getDimSize(d));
      outExprs.push_back(b.getAffineDimExpr(d));
    }
  }
  auto outType = RankedTensorType::get(outShape, accElt);
  SmallVector<AffineMap> maps = {
      b.getMultiDimIdentityMap(rank),
      AffineMap::get(rank, 0, outExprs, b.getContext())};
  auto op = linalg::GenericOp::create(
      b, loc, TypeRange{outType}, ValueRange{input},
      ValueRange{filled(b, loc, outType, init)}, maps, iters,
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        linalg::YieldOp::create(nb, nl, combine(nb, nl, args[0], args[1]));
      });
  return op.getResult(0);
}

Value cleave::reduce(
    OpBuilder &b, Location loc, Value input, ArrayRef<int64_t> axes,
    double init,
    function_ref<Value(OpBuilder &, Location, Value, Value)> combine) {
  Type elt = cast<RankedTensorType>(input.getType()).getElementType();
  return reduceInto(b, loc, input, axes, elt, init, combine);
}

Value cleave::sum(OpBuilder &b, Location loc, Value input,
                  ArrayRef<int64_t> axes) {
  Type elt = cast<RankedTensorType>(input.getType()).getElementType();
  if (!elt.isF32())
    return reduce(b, loc, input, axes, 0.0,
                  [](OpBuilder &nb, Location nl, Value x, Value acc) -> Value {
                    return arith::AddFOp::create(nb, nl, x, acc);
                  });
  Type wide = b.getF64Type();
  Value acc =
      reduceInto(b, loc, input, axes, wide, 0.0,
                 [&](OpBuilder &nb, Location nl, Value x, Value acc) -> Value {
                   return arith::AddFOp::create(
                       nb, nl, arith::ExtFOp::create(nb, nl, wide, x), acc);
                 });
  auto accType = cast<RankedTensorType>(acc.getType());
  return elementwise(b, loc, accType.clone(elt), {acc},
                     [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
                       return arith::TruncFOp::create(nb, nl, elt, a[0]);
                     });
}

Value cleave::keepDims(OpBuilder &b, Location loc, Value reduced,
                       ArrayRef<int64_t> axes, int64_t rank) {
  auto t = cast<RankedTensorType>(reduced.getType());
  SmallVector<int64_t> shape;
  int64_t next = 0;
  for (int64_t d = 0; d < rank; ++d)
    shape.push_back(llvm::is_contained(axes, d) ? 1 : t.getDimSize(next++));
  return reshape(b, loc, reduced, shape);
}

/// Reassociation grouping `from` into `to` when `to` is a collapse of
/// `from`: every target dimension is the product of consecutive source
/// dimensions, and trailing size-1 source dimensions join the last group.
static std::optional<SmallVector<ReassociationIndices>>
collapseGroups(ArrayRef<int64_t> from, ArrayRef<int64_t> to) {
  SmallVector<ReassociationIndices> groups;
  size_t i = 0;
  for (int64_t target : to) {
    ReassociationIndices group;
    int64_t prod = 1;
    do {
      if (i >= from.size())
        return std::nullopt;
      prod *= from[i];
      group.push_back(i++);
    } while (prod < target);
    if (prod != target)
      return std::nullopt;
    groups.push_back(group);
  }
  while (i < from.size() && from[i] == 1 && !groups.empty())
    groups.back().push_back(i++);
  if (i != from.size())
    return std::nullopt;
  return groups;
}

Value cleave::reshape(OpBuilder &b, Location loc, Value v,
                      ArrayRef<int64_t> shape) {
  auto t = cast<RankedTensorType>(v.getType());
  if (t.getShape() == shape)
    return v;
  auto target = RankedTensorType::get(shape, t.getElementType());
  if (shape.empty()) {
    // Everything (all ones) collapses into a scalar.
    return tensor::CollapseShapeOp::create(b, loc, target, v,
                                           ArrayRef<ReassociationIndices>{});
  }
  if (t.getRank() == 0)
    return tensor::ExpandShapeOp::create(b, loc, target, v,
                                         ArrayRef<ReassociationIndices>{});
  if (shape.size() < (size_t)t.getRank())
    if (auto g = collapseGroups(t.getShape(), shape))
      return tensor::CollapseShapeOp::create(b, loc, target, v, *g);
  if (shape.size() > (size_t)t.getRank())
    if (auto g = collapseGroups(shape, t.getShape()))
      return tensor::ExpandShapeOp::create(b, loc, target, v, *g);
  // General case: through a 1-D view, with one group each way. Built
  // directly rather than by recursion, which would not terminate when a
  // zero-sized dimension defeats `collapseGroups`.
  auto oneGroup = [](int64_t rank) {
    return SmallVector<ReassociationIndices>{
        llvm::to_vector(llvm::seq<int64_t>(0, rank))};
  };
  Value flat = v;
  if (t.getRank() != 1)
    flat = tensor::CollapseShapeOp::create(
        b, loc, RankedTensorType::get({t.getNumElements()}, t.getElementType()),
        v, oneGroup(t.getRank()));
  if (shape.size() == 1)
    return flat;
  return tensor::ExpandShapeOp::create(b, loc, target, flat,
                                       oneGroup(shape.size()));
}

Value cleave::extractScalar(OpBuilder &b, Location loc, Value rank0) {
  return tensor::ExtractOp::create(b, loc, rank0, ValueRange{});
}

Value cleave::clampedIndex(OpBuilder &b, Location loc, Value element,
                           int64_t bound) {
  return clampIndex(
      b, loc, arith::IndexCastOp::create(b, loc, b.getIndexType(), element),
      bound);
}

Value cleave::clampIndex(OpBuilder &b, Location loc, Value index,
                         int64_t bound) {
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value max = arith::ConstantIndexOp::create(b, loc, bound - 1);
  return arith::MinSIOp::create(
      b, loc, arith::MaxSIOp::create(b, loc, index, zero), max);
}

Value cleave::indexedGeneric(
    OpBuilder &b, Location loc, RankedTensorType type, Value indices,
    ArrayRef<int64_t> indexDims,
    function_ref<Value(OpBuilder &, Location, Value)> body) {
  int64_t rank = type.getRank();
  SmallVector<AffineExpr> read;
  for (int64_t d : indexDims)
    read.push_back(b.getAffineDimExpr(d));
  SmallVector<AffineMap> maps = {AffineMap::get(rank, 0, read, b.getContext()),
                                 b.getMultiDimIdentityMap(rank)};
  SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
  auto g = linalg::GenericOp::create(
      b, loc, TypeRange{type}, ValueRange{indices},
      ValueRange{empty(b, loc, type)}, maps, iters,
      [&](OpBuilder &nb, Location l, ValueRange a) {
        linalg::YieldOp::create(nb, l, body(nb, l, a[0]));
      });
  return g.getResult(0);
}
