//===- Gather.cpp - Gathers and their scatter-add gradients ---------------===//
//
// nn.gather and nn.gather_elements become a linalg.generic over the result
// whose body reads the input with tensor.extract at the index it loads;
// their gradients are scf.for nests that add each cotangent element into a
// zero tensor in order (indices repeat, so the adds cannot run in
// parallel), as nn.embedding_grad's does. nn.iota is a linalg.generic of
// its positions.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/LinalgBuilders.h"
#include "compiler/Conversion/NNToLinalg/Patterns.h"
#include "dialects/NN/IR/NNOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::cleave;
using namespace mlir::cleave::nn;

namespace {

ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

/// An index element (integer, or a float holding an integer) as an `index`
/// into an axis of `size` entries: a negative one counts from the end, and
/// the result is clamped into [0, size) so that bad data never reads or
/// writes out of bounds.
Value axisIndex(OpBuilder &b, Location loc, Value element, int64_t size) {
  if (isa<FloatType>(element.getType()))
    element = arith::FPToSIOp::create(b, loc, b.getI64Type(), element);
  Value i = arith::IndexCastOp::create(b, loc, b.getIndexType(), element);
  Value negative = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::slt, i,
      arith::ConstantIndexOp::create(b, loc, 0));
  Value wrapped = arith::AddIOp::create(
      b, loc, i, arith::ConstantIndexOp::create(b, loc, size));
  return clampIndex(b, loc,
                    arith::SelectOp::create(b, loc, negative, wrapped, i),
                    size);
}

/// Scatter-add of `grad` into zeros of `type`: a loop nest over every
/// element of `grad`, in row-major order, that adds it at the position
/// `target(ivs, index element)` returns, where the index element is
/// `indices` read at `indexPos(ivs)`.
Value scatterAdd(
    OpBuilder &b, Location loc, RankedTensorType type, Value grad,
    Value indices, function_ref<SmallVector<Value>(ValueRange)> indexPos,
    function_ref<SmallVector<Value>(OpBuilder &, Location, ValueRange, Value)>
        target) {
  ArrayRef<int64_t> shape = shapeOf(grad);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  SmallVector<Value> ivs;
  // One loop per dimension of `grad`, the accumulator threaded through.
  std::function<Value(OpBuilder &, Location, Value)> nest =
      [&](OpBuilder &nb, Location l, Value acc) -> Value {
    size_t d = ivs.size();
    if (d == shape.size()) {
      Value id = tensor::ExtractOp::create(nb, l, indices, indexPos(ivs));
      SmallVector<Value> at = target(nb, l, ivs, id);
      Value cur = tensor::ExtractOp::create(nb, l, acc, at);
      Value g = tensor::ExtractOp::create(nb, l, grad, ivs);
      Value sum = arith::AddFOp::create(nb, l, cur, g);
      return tensor::InsertOp::create(nb, l, sum, acc, at);
    }
    Value ub = arith::ConstantIndexOp::create(nb, l, shape[d]);
    auto loop = scf::ForOp::create(
        nb, l, zero, ub, one, ValueRange{acc},
        [&](OpBuilder &ib, Location il, Value iv, ValueRange iter) {
          ivs.push_back(iv);
          Value next = nest(ib, il, iter[0]);
          ivs.pop_back();
          scf::YieldOp::create(ib, il, next);
        });
    return loop.getResult(0);
  };
  return nest(b, loc, filled(b, loc, type, 0.0));
}

/// result[i, s, j] = input[i, indices[s], j].
struct GatherLowering : OpRewritePattern<GatherOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(GatherOp op,
                                PatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
    if (!type.hasStaticShape() || !op.getInput().getType().hasStaticShape())
      return rewriter.notifyMatchFailure(op, "needs static shapes");
    int64_t axis = op.getAxis();
    int64_t q = shapeOf(op.getIndices()).size();
    int64_t size = shapeOf(op.getInput())[axis];
    Value input = op.getInput();
    SmallVector<int64_t> indexDims;
    for (int64_t k = 0; k < q; ++k)
      indexDims.push_back(axis + k);
    rewriter.replaceOp(
        op,
        indexedGeneric(rewriter, op.getLoc(), type, op.getIndices(), indexDims,
                      [&](OpBuilder &b, Location l, Value id) -> Value {
                        SmallVector<Value> at;
                        for (int64_t d = 0; d < axis; ++d)
                          at.push_back(linalg::IndexOp::create(b, l, d));
                        at.push_back(axisIndex(b, l, id, size));
                        for (int64_t d = axis + q; d < type.getRank(); ++d)
                          at.push_back(linalg::IndexOp::create(b, l, d));
                        return tensor::ExtractOp::create(b, l, input, at);
                      }));
    return success();
  }
};

/// Adds grad[i, s, j] into result[i, indices[s], j].
struct GatherGradLowering : OpRewritePattern<GatherGradOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(GatherGradOp op,
                                PatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
    if (!type.hasStaticShape() || !op.getGrad().getType().hasStaticShape())
      return rewriter.notifyMatchFailure(op, "needs static shapes");
    int64_t axis = op.getAxis(), size = op.getDimSize();
    int64_t q = shapeOf(op.getIndices()).size();
    int64_t rank = shapeOf(op.getGrad()).size();
    rewriter.replaceOp(
        op, scatterAdd(
                rewriter, op.getLoc(), type, op.getGrad(), op.getIndices(),
                [&](ValueRange ivs) {
                  return SmallVector<Value>(ivs.slice(axis, q));
                },
                [&](OpBuilder &b, Location l, ValueRange ivs, Value id) {
                  SmallVector<Value> at(ivs.take_front(axis));
                  at.push_back(axisIndex(b, l, id, size));
                  llvm::append_range(at, ivs.slice(axis + q, rank - axis - q));
                  return at;
                }));
    return success();
  }
};

/// result[p] = input[p with p[axis] = indices[p]].
struct GatherElementsLowering : OpRewritePattern<GatherElementsOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(GatherElementsOp op,
                                PatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
    if (!type.hasStaticShape() || !op.getInput().getType().hasStaticShape())
      return rewriter.notifyMatchFailure(op, "needs static shapes");
    int64_t axis = op.getAxis(), size = shapeOf(op.getInput())[axis];
    Value input = op.getInput();
    SmallVector<int64_t> all;
    for (int64_t d = 0; d < type.getRank(); ++d)
      all.push_back(d);
    rewriter.replaceOp(
        op, indexedGeneric(
                rewriter, op.getLoc(), type, op.getIndices(), all,
                [&](OpBuilder &b, Location l, Value id) -> Value {
                  SmallVector<Value> at;
                  for (int64_t d = 0; d < type.getRank(); ++d)
                    at.push_back(
                        d == axis
                            ? axisIndex(b, l, id, size)
                            : linalg::IndexOp::create(b, l, d).getResult());
                  return tensor::ExtractOp::create(b, l, input, at);
                }));
    return success();
  }
};

/// Adds grad[p] into result[p with p[axis] = indices[p]].
struct GatherElementsGradLowering : OpRewritePattern<GatherElementsGradOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(GatherElementsGradOp op,
                                PatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
    if (!op.getGrad().getType().hasStaticShape())
      return rewriter.notifyMatchFailure(op, "needs static shapes");
    int64_t axis = op.getAxis(), size = type.getDimSize(axis);
    rewriter.replaceOp(
        op, scatterAdd(
                rewriter, op.getLoc(), type, op.getGrad(), op.getIndices(),
                [](ValueRange ivs) { return SmallVector<Value>(ivs); },
                [&](OpBuilder &b, Location l, ValueRange ivs, Value id) {
                  SmallVector<Value> at(ivs);
                  at[axis] = axisIndex(b, l, id, size);
                  return at;
                }));
    return success();
  }
};

/// result[i] = i, converted to the float type.
struct IotaLowering : OpRewritePattern<IotaOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(IotaOp op,
                                PatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
    if (!type.hasStaticShape())
      return rewriter.notifyMatchFailure(op, "needs a static shape");
    rewriter.replaceOp(
        op, elementwise(rewriter, op.getLoc(), type, {},
                        [&](OpBuilder &b, Location l, ValueRange) -> Value {
                          Value i = linalg::IndexOp::create(b, l, 0);
                          Value n = arith::IndexCastOp::create(
                              b, l, b.getI64Type(), i);
                          return arith::SIToFPOp::create(
                              b, l, type.getElementType(), n);
                        }));
    return success();
  }
};

} // namespace

void mlir::cleave::populateGatherPatterns(RewritePatternSet &patterns) {
  patterns.add<GatherLowering, GatherGradLowering, GatherElementsLowering,
               GatherElementsGradLowering, IotaLowering>(patterns.getContext());
}
