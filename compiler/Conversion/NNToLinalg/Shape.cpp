//===- Shape.cpp - Shape and gather nn ops to tensor and linalg -----------===//
//
// Reshapes become collapse/expand views, slices and concatenation become
// tensor slices, broadcasts and gathers become linalg.generic.
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

/// Reshape-like ops (reshape, flatten) become views.
template <typename OpTy>
struct ReshapeLowering : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;
  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, reshape(rewriter, op.getLoc(), op.getInput(),
                                   shapeOf(op.getResult())));
    return success();
  }
};

struct TransposeLowering : OpRewritePattern<TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TransposeOp op,
                                PatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
    Value init = empty(rewriter, op.getLoc(), type);
    rewriter.replaceOp(op, linalg::TransposeOp::create(
                               rewriter, op.getLoc(), op.getInput(), init,
                               op.getPermutation())
                               .getResult());
    return success();
  }
};

struct ConcatLowering : OpRewritePattern<ConcatOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ConcatOp op,
                                PatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
    int64_t axis = *normalizeAxis(op.getAxis(), type.getRank());
    Value acc = empty(rewriter, op.getLoc(), type);
    int64_t offset = 0;
    for (Value in : op.getInputs()) {
      ArrayRef<int64_t> s = shapeOf(in);
      SmallVector<OpFoldResult> offsets(s.size(), rewriter.getIndexAttr(0)),
          sizes, strides(s.size(), rewriter.getIndexAttr(1));
      for (int64_t d : s)
        sizes.push_back(rewriter.getIndexAttr(d));
      offsets[axis] = rewriter.getIndexAttr(offset);
      acc = tensor::InsertSliceOp::create(rewriter, op.getLoc(), in, acc,
                                          offsets, sizes, strides);
      offset += s[axis];
    }
    rewriter.replaceOp(op, acc);
    return success();
  }
};

SmallVector<OpFoldResult> indexAttrs(OpBuilder &b, ArrayRef<int64_t> v) {
  SmallVector<OpFoldResult> out;
  for (int64_t x : v)
    out.push_back(b.getIndexAttr(x));
  return out;
}

struct SliceLowering : OpRewritePattern<SliceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SliceOp op,
                                PatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
    rewriter.replaceOp(op, tensor::ExtractSliceOp::create(
                               rewriter, op.getLoc(), type, op.getInput(),
                               indexAttrs(rewriter, op.getStarts()),
                               indexAttrs(rewriter, op.getSizes()),
                               indexAttrs(rewriter, op.getStrides())));
    return success();
  }
};

struct PadLowering : OpRewritePattern<PadOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(PadOp op,
                                PatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
    Value zeros = filled(rewriter, op.getLoc(), type, 0.0);
    rewriter.replaceOp(op, tensor::InsertSliceOp::create(
                               rewriter, op.getLoc(), op.getInput(), zeros,
                               indexAttrs(rewriter, op.getStarts()),
                               indexAttrs(rewriter, shapeOf(op.getInput())),
                               indexAttrs(rewriter, op.getStrides())));
    return success();
  }
};

struct BroadcastToLowering : OpRewritePattern<BroadcastToOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(BroadcastToOp op,
                                PatternRewriter &rewriter) const override {
    rewriter.replaceOp(
        op, elementwise(rewriter, op.getLoc(),
                        cast<RankedTensorType>(op.getType()), {op.getInput()},
                        [](OpBuilder &, Location, ValueRange a) { return a[0]; }));
    return success();
  }
};

/// An index element as `index`, clamped into [0, bound) so that bad data can
/// never make generated code read out of bounds (the runtime validates
/// labels and indices before they get here).
Value clampedIndex(OpBuilder &b, Location loc, Value element, int64_t bound) {
  Value i = arith::IndexCastOp::create(b, loc, b.getIndexType(), element);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value max = arith::ConstantIndexOp::create(b, loc, bound - 1);
  return arith::MinSIOp::create(b, loc, arith::MaxSIOp::create(b, loc, i, zero),
                                max);
}

struct OneHotLowering : OpRewritePattern<OneHotOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(OneHotOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getType());
    int64_t rank = type.getRank();
    SmallVector<AffineExpr> labelExprs;
    for (int64_t d = 0; d + 1 < rank; ++d)
      labelExprs.push_back(rewriter.getAffineDimExpr(d));
    SmallVector<AffineMap> maps = {
        AffineMap::get(rank, 0, labelExprs, getContext()),
        rewriter.getMultiDimIdentityMap(rank)};
    SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
    auto g = linalg::GenericOp::create(
        rewriter, loc, TypeRange{type}, ValueRange{op.getLabels()},
        ValueRange{empty(rewriter, loc, type)}, maps, iters,
        [&](OpBuilder &b, Location l, ValueRange a) {
          Value cls = linalg::IndexOp::create(b, l, rank - 1);
          Value label = arith::IndexCastOp::create(b, l, b.getIndexType(), a[0]);
          Value hit = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq,
                                            cls, label);
          Type elt = type.getElementType();
          linalg::YieldOp::create(
              b, l,
              arith::SelectOp::create(b, l, hit, scalar(b, l, 1.0, elt),
                                      scalar(b, l, 0.0, elt))
                  .getResult());
        });
    rewriter.replaceOp(op, g.getResult(0));
    return success();
  }
};

struct EmbeddingLowering : OpRewritePattern<EmbeddingOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(EmbeddingOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getType());
    int64_t rank = type.getRank();
    int64_t rows = shapeOf(op.getTable())[0];
    SmallVector<AffineExpr> idExprs;
    for (int64_t d = 0; d + 1 < rank; ++d)
      idExprs.push_back(rewriter.getAffineDimExpr(d));
    SmallVector<AffineMap> maps = {
        AffineMap::get(rank, 0, idExprs, getContext()),
        rewriter.getMultiDimIdentityMap(rank)};
    SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
    Value table = op.getTable();
    auto g = linalg::GenericOp::create(
        rewriter, loc, TypeRange{type}, ValueRange{op.getIndices()},
        ValueRange{empty(rewriter, loc, type)}, maps, iters,
        [&](OpBuilder &b, Location l, ValueRange a) {
          Value row = clampedIndex(b, l, a[0], rows);
          Value col = linalg::IndexOp::create(b, l, rank - 1);
          linalg::YieldOp::create(
              b, l,
              tensor::ExtractOp::create(b, l, table, ValueRange{row, col})
                  .getResult());
        });
    rewriter.replaceOp(op, g.getResult(0));
    return success();
  }
};

/// Scatter-add: a loop over the looked-up rows, updating the table tensor in
/// place (bufferization keeps it one buffer).
struct EmbeddingGradLowering : OpRewritePattern<EmbeddingGradOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(EmbeddingGradOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getType());
    int64_t rows = type.getDimSize(0), dim = type.getDimSize(1);
    int64_t count = 1;
    for (int64_t d : shapeOf(op.getIndices()))
      count *= d;
    Value ids = reshape(rewriter, loc, op.getIndices(), {count});
    Value grad = reshape(rewriter, loc, op.getGrad(), {count, dim});
    Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
    Value n = arith::ConstantIndexOp::create(rewriter, loc, count);
    Value d = arith::ConstantIndexOp::create(rewriter, loc, dim);
    auto outer = scf::ForOp::create(
        rewriter, loc, zero, n, one,
        ValueRange{filled(rewriter, loc, type, 0.0)},
        [&](OpBuilder &b, Location l, Value i, ValueRange acc) {
          Value id = tensor::ExtractOp::create(b, l, ids, ValueRange{i});
          Value row = clampedIndex(b, l, id, rows);
          auto inner = scf::ForOp::create(
              b, l, zero, d, one, acc,
              [&](OpBuilder &ib, Location il, Value j, ValueRange t) {
                Value cur =
                    tensor::ExtractOp::create(ib, il, t[0], ValueRange{row, j});
                Value g =
                    tensor::ExtractOp::create(ib, il, grad, ValueRange{i, j});
                Value sum = arith::AddFOp::create(ib, il, cur, g);
                Value upd = tensor::InsertOp::create(ib, il, sum, t[0],
                                                     ValueRange{row, j});
                scf::YieldOp::create(ib, il, upd);
              });
          scf::YieldOp::create(b, l, inner.getResults());
        });
    rewriter.replaceOp(op, outer.getResult(0));
    return success();
  }
};

} // namespace

void mlir::cleave::populateShapePatterns(RewritePatternSet &patterns) {
  patterns.add<ReshapeLowering<ReshapeOp>, ReshapeLowering<FlattenOp>,
               TransposeLowering, ConcatLowering, SliceLowering, PadLowering,
               BroadcastToLowering, OneHotLowering, EmbeddingLowering,
               EmbeddingGradLowering>(patterns.getContext());
}
