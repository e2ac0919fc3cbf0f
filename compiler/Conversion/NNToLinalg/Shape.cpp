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

/// A transpose becomes linalg.transpose into a fresh tensor.
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

/// An index constant.
Value indexConst(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

/// `v` clamped into [0, bound).
Value clampIndex(OpBuilder &b, Location loc, Value v, int64_t bound) {
  return arith::MinSIOp::create(
      b, loc, arith::MaxSIOp::create(b, loc, v, indexConst(b, loc, 0)),
      indexConst(b, loc, bound - 1));
}

// Concatenation, slices and padding are gathers: one linalg.generic over
// the result that reads its operands with tensor.extract. The obvious
// tensor.insert_slice / tensor.extract_slice forms bufferize to strided
// views, and every copy into or out of a strided view (the insertion
// itself, or densifying the view for a kernel, a reshape or an output)
// becomes a memref.copy that the LLVM lowering turns into a call of
// `memrefCopy` from MLIR's runner library: a symbol no artifact can
// resolve.

/// Each result element selects the input whose range along the axis holds
/// it (the other reads are clamped in bounds and discarded).
struct ConcatLowering : OpRewritePattern<ConcatOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ConcatOp op,
                                PatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
    int64_t rank = type.getRank();
    int64_t axis = *normalizeAxis(op.getAxis(), rank);
    rewriter.replaceOp(
        op, elementwise(
                rewriter, op.getLoc(), type, {},
                [&](OpBuilder &b, Location l, ValueRange) -> Value {
                  SmallVector<Value> idx;
                  for (int64_t d = 0; d < rank; ++d)
                    idx.push_back(linalg::IndexOp::create(b, l, d));
                  Value pos = idx[axis];
                  // The first input whose range ends after `pos` holds it.
                  SmallVector<Value> picked;
                  SmallVector<int64_t> ends;
                  int64_t offset = 0;
                  for (Value in : op.getInputs()) {
                    int64_t size = shapeOf(in)[axis];
                    if (size == 0)
                      continue;
                    SmallVector<Value> at(idx);
                    at[axis] = clampIndex(
                        b, l,
                        arith::SubIOp::create(b, l, pos,
                                              indexConst(b, l, offset)),
                        size);
                    picked.push_back(tensor::ExtractOp::create(b, l, in, at));
                    offset += size;
                    ends.push_back(offset);
                  }
                  if (picked.empty()) // an empty result: never runs
                    return scalar(b, l, 0.0, type.getElementType());
                  Value r = picked.back();
                  for (int64_t k = int64_t(picked.size()) - 2; k >= 0; --k) {
                    Value inside = arith::CmpIOp::create(
                        b, l, arith::CmpIPredicate::slt, pos,
                        indexConst(b, l, ends[k]));
                    r = arith::SelectOp::create(b, l, inside, picked[k], r);
                  }
                  return r;
                }));
    return success();
  }
};

/// Result element i reads input element start + i * stride.
struct SliceLowering : OpRewritePattern<SliceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SliceOp op,
                                PatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
    ArrayRef<int64_t> starts = op.getStarts(), strides = op.getStrides();
    Value input = op.getInput();
    rewriter.replaceOp(
        op, elementwise(rewriter, op.getLoc(), type, {},
                        [&](OpBuilder &b, Location l, ValueRange) -> Value {
                          SmallVector<Value> at;
                          for (int64_t d = 0; d < type.getRank(); ++d) {
                            Value i = linalg::IndexOp::create(b, l, d);
                            if (strides[d] != 1)
                              i = arith::MulIOp::create(
                                  b, l, i, indexConst(b, l, strides[d]));
                            if (starts[d] != 0)
                              i = arith::AddIOp::create(
                                  b, l, i, indexConst(b, l, starts[d]));
                            at.push_back(i);
                          }
                          return tensor::ExtractOp::create(b, l, input, at);
                        }));
    return success();
  }
};

/// The adjoint of a slice: result element i comes from input element
/// (i - start) / stride when that is a whole index inside the input, and
/// is zero otherwise.
struct PadLowering : OpRewritePattern<PadOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(PadOp op,
                                PatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
    ArrayRef<int64_t> starts = op.getStarts(), strides = op.getStrides();
    Value input = op.getInput();
    ArrayRef<int64_t> inShape = shapeOf(input);
    rewriter.replaceOp(
        op,
        elementwise(
            rewriter, op.getLoc(), type, {},
            [&](OpBuilder &b, Location l, ValueRange) -> Value {
              Value inside;
              auto both = [&](Value c) {
                inside = inside
                             ? arith::AndIOp::create(b, l, inside, c).getResult()
                             : c;
              };
              SmallVector<Value> at;
              for (int64_t d = 0; d < type.getRank(); ++d) {
                Value rel = arith::SubIOp::create(
                    b, l, linalg::IndexOp::create(b, l, d),
                    indexConst(b, l, starts[d]));
                both(arith::CmpIOp::create(b, l, arith::CmpIPredicate::sge,
                                           rel, indexConst(b, l, 0)));
                Value q = rel;
                if (strides[d] != 1) {
                  Value stride = indexConst(b, l, strides[d]);
                  both(arith::CmpIOp::create(
                      b, l, arith::CmpIPredicate::eq,
                      arith::RemSIOp::create(b, l, rel, stride),
                      indexConst(b, l, 0)));
                  q = arith::DivSIOp::create(b, l, rel, stride);
                }
                both(arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, q,
                                           indexConst(b, l, inShape[d])));
                at.push_back(clampIndex(b, l, q, inShape[d]));
              }
              Value v = tensor::ExtractOp::create(b, l, input, at);
              Value zero = scalar(b, l, 0.0, type.getElementType());
              return inside
                         ? arith::SelectOp::create(b, l, inside, v, zero)
                               .getResult()
                         : v;
            }));
    return success();
  }
};

/// A broadcast is an elementwise copy with broadcasting operand maps.
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

/// indexedGeneric with `indices` of the shape of all but the last result
/// dimension: `body` computes a result element from the index at its
/// leading position (the last position is `linalg.index rank - 1`).
Value perIndexGeneric(OpBuilder &b, Location loc, RankedTensorType type,
                      Value indices,
                      function_ref<Value(OpBuilder &, Location, Value)> body) {
  SmallVector<int64_t> leading;
  for (int64_t d = 0; d + 1 < type.getRank(); ++d)
    leading.push_back(d);
  return indexedGeneric(b, loc, type, indices, leading, body);
}

/// One-hot encoding: 1 where the class position equals the label.
struct OneHotLowering : OpRewritePattern<OneHotOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(OneHotOp op,
                                PatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
    rewriter.replaceOp(
        op, perIndexGeneric(
                rewriter, op.getLoc(), type, op.getLabels(),
                [&](OpBuilder &b, Location l, Value labelElt) -> Value {
                  Value cls = linalg::IndexOp::create(b, l, type.getRank() - 1);
                  Value label = arith::IndexCastOp::create(
                      b, l, b.getIndexType(), labelElt);
                  Value hit = arith::CmpIOp::create(
                      b, l, arith::CmpIPredicate::eq, cls, label);
                  Type elt = type.getElementType();
                  return arith::SelectOp::create(b, l, hit,
                                                 scalar(b, l, 1.0, elt),
                                                 scalar(b, l, 0.0, elt));
                }));
    return success();
  }
};

/// A row lookup: result element [..., j] is table[index, j].
struct EmbeddingLowering : OpRewritePattern<EmbeddingOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(EmbeddingOp op,
                                PatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
    int64_t rows = shapeOf(op.getTable())[0];
    Value table = op.getTable();
    rewriter.replaceOp(
        op, perIndexGeneric(
                rewriter, op.getLoc(), type, op.getIndices(),
                [&](OpBuilder &b, Location l, Value id) -> Value {
                  Value row = clampedIndex(b, l, id, rows);
                  Value col = linalg::IndexOp::create(b, l, type.getRank() - 1);
                  return tensor::ExtractOp::create(b, l, table,
                                                   ValueRange{row, col});
                }));
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
