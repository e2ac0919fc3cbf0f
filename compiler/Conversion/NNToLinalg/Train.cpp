//===- Train.cpp - Optimizers, clipping and reductions to linalg ----------===//
//
// Optimizer updates write into their parameter and state operands
// (destination passing), so that bufferization updates the session's
// buffers in place; hyperparameters are read once as scalars.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/LinalgBuilders.h"
#include "compiler/Conversion/NNToLinalg/Patterns.h"
#include "dialects/Runtime/IR/RtOps.h"
#include "dialects/Train/IR/TrainOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::cleave;
using namespace mlir::cleave::train;

namespace {

Value mulf(OpBuilder &b, Location l, Value x, Value y) {
  return arith::MulFOp::create(b, l, x, y);
}
Value addf(OpBuilder &b, Location l, Value x, Value y) {
  return arith::AddFOp::create(b, l, x, y);
}
Value subf(OpBuilder &b, Location l, Value x, Value y) {
  return arith::SubFOp::create(b, l, x, y);
}

struct SgdLowering : OpRewritePattern<SgdOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SgdOp op,
                                PatternRewriter &rw) const override {
    Location loc = op.getLoc();
    Value lr = extractScalar(rw, loc, op.getLr());
    Value wd = extractScalar(rw, loc, op.getWeightDecay());
    auto r = updateInPlace(
        rw, loc, {op.getGrad()}, {op.getParam()},
        [&](OpBuilder &b, Location l, ValueRange a) -> SmallVector<Value> {
          Value g = addf(b, l, a[0], mulf(b, l, wd, a[1]));
          return {subf(b, l, a[1], mulf(b, l, lr, g))};
        });
    rw.replaceOp(op, r);
    return success();
  }
};

struct MomentumLowering : OpRewritePattern<MomentumOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MomentumOp op,
                                PatternRewriter &rw) const override {
    Location loc = op.getLoc();
    Value lr = extractScalar(rw, loc, op.getLr());
    Value mom = extractScalar(rw, loc, op.getMomentum());
    Value wd = extractScalar(rw, loc, op.getWeightDecay());
    bool nesterov = op.getNesterov();
    auto r = updateInPlace(
        rw, loc, {op.getGrad()}, {op.getParam(), op.getBuf()},
        [&](OpBuilder &b, Location l, ValueRange a) -> SmallVector<Value> {
          Value p = a[1], buf = a[2];
          Value g = addf(b, l, a[0], mulf(b, l, wd, p));
          Value nb = addf(b, l, mulf(b, l, mom, buf), g);
          Value d = nesterov ? addf(b, l, g, mulf(b, l, mom, nb)) : nb;
          return {subf(b, l, p, mulf(b, l, lr, d)), nb};
        });
    rw.replaceOp(op, r);
    return success();
  }
};

struct AdamLowering : OpRewritePattern<AdamOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AdamOp op,
                                PatternRewriter &rw) const override {
    Location loc = op.getLoc();
    Type et = cast<RankedTensorType>(op.getParam().getType()).getElementType();
    Value lr = extractScalar(rw, loc, op.getLr());
    Value b1 = extractScalar(rw, loc, op.getBeta1());
    Value b2 = extractScalar(rw, loc, op.getBeta2());
    Value eps = extractScalar(rw, loc, op.getEps());
    Value wd = extractScalar(rw, loc, op.getWeightDecay());
    Value step = arith::SIToFPOp::create(rw, loc, et,
                                         extractScalar(rw, loc, op.getStep()));
    // Bias corrections are per step, computed once.
    Value one = scalar(rw, loc, 1.0, et);
    Value bc1 = subf(rw, loc, one, math::PowFOp::create(rw, loc, b1, step));
    Value bc2 = subf(rw, loc, one, math::PowFOp::create(rw, loc, b2, step));
    Value stepSize = arith::DivFOp::create(rw, loc, lr, bc1);
    Value bc2Sqrt = math::SqrtOp::create(rw, loc, bc2);
    Value c1 = subf(rw, loc, one, b1), c2 = subf(rw, loc, one, b2);
    Value decay = subf(rw, loc, one, mulf(rw, loc, lr, wd));
    bool decoupled = op.getDecoupled();
    auto r = updateInPlace(
        rw, loc, {op.getGrad()}, {op.getParam(), op.getM(), op.getV()},
        [&](OpBuilder &b, Location l, ValueRange a) -> SmallVector<Value> {
          Value g = a[0], p = a[1], m = a[2], v = a[3];
          if (decoupled)
            p = mulf(b, l, p, decay);
          else
            g = addf(b, l, g, mulf(b, l, wd, p));
          Value nm = addf(b, l, mulf(b, l, b1, m), mulf(b, l, c1, g));
          Value nv = addf(b, l, mulf(b, l, b2, v), mulf(b, l, c2, mulf(b, l, g, g)));
          Value denom = addf(
              b, l, arith::DivFOp::create(b, l, math::SqrtOp::create(b, l, nv),
                                          bc2Sqrt),
              eps);
          Value upd = arith::DivFOp::create(b, l, mulf(b, l, stepSize, nm), denom);
          return {subf(b, l, p, upd), nm, nv};
        });
    rw.replaceOp(op, r);
    return success();
  }
};

struct ClipLowering : OpRewritePattern<ClipByGlobalNormOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ClipByGlobalNormOp op,
                                PatternRewriter &rw) const override {
    Location loc = op.getLoc();
    auto normType = cast<RankedTensorType>(op.getNorm().getType());
    Type et = normType.getElementType();
    Value total;
    for (Value g : op.getGrads()) {
      auto t = cast<RankedTensorType>(g.getType());
      SmallVector<int64_t> all;
      for (int64_t d = 0; d < t.getRank(); ++d)
        all.push_back(d);
      Value sq = reduce(rw, loc, g, all, 0.0,
                        [](OpBuilder &b, Location l, Value x, Value acc) {
                          return addf(b, l, acc, mulf(b, l, x, x));
                        });
      Value s = extractScalar(rw, loc, sq);
      total = total ? addf(rw, loc, total, s) : s;
    }
    Value norm = math::SqrtOp::create(rw, loc, total);
    Value maxNorm = extractScalar(rw, loc, op.getMaxNorm());
    Value zero = scalar(rw, loc, 0.0, et), one = scalar(rw, loc, 1.0, et);
    Value ratio = arith::DivFOp::create(
        rw, loc, maxNorm, addf(rw, loc, norm, scalar(rw, loc, 1e-6, et)));
    Value coef = arith::MinimumFOp::create(rw, loc, one, ratio);
    Value enabled = arith::CmpFOp::create(rw, loc, arith::CmpFPredicate::OGT,
                                          maxNorm, zero);
    coef = arith::SelectOp::create(rw, loc, enabled, coef, one);
    SmallVector<Value> results;
    for (Value g : op.getGrads())
      results.push_back(
          updateInPlace(rw, loc, {}, {g},
                        [&](OpBuilder &b, Location l,
                            ValueRange a) -> SmallVector<Value> {
                          return {mulf(b, l, a[0], coef)};
                        })
              .front());
    results.push_back(
        tensor::FromElementsOp::create(rw, loc, normType, ValueRange{norm}));
    rw.replaceOp(op, results);
    return success();
  }
};

struct CrossRankReduceLowering : OpRewritePattern<CrossRankReduceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(CrossRankReduceOp op,
                                PatternRewriter &rw) const override {
    for (Value v : op.getValues())
      if (!cast<RankedTensorType>(v.getType()).getElementType().isF32())
        return rw.notifyMatchFailure(op, "collectives are f32 only");
    rt::ReduceKind kind = static_cast<rt::ReduceKind>(op.getKind());
    rw.replaceOpWithNewOp<rt::CrossRankReduceOp>(op, op.getValues().getTypes(),
                                                 kind, op.getValues());
    return success();
  }
};

} // namespace

void mlir::cleave::populateTrainPatterns(RewritePatternSet &patterns) {
  patterns.add<SgdLowering, MomentumLowering, AdamLowering, ClipLowering,
               CrossRankReduceLowering>(patterns.getContext());
}
