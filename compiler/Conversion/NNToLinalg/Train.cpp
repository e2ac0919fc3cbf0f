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

/// `torch.optim.SGD` without momentum, written into the parameter.
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

/// SGD with (Nesterov) momentum, written into the parameter and buffer.
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

/// Adam / AdamW, written into the parameter and both moments; the per-step
/// bias corrections are computed once, outside the loop.
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
    // The per-step scalar factors in f64 (as PyTorch computes them in
    // Python): in f32, 1 - beta2^t loses most of its digits (beta2^t is
    // close to 1), an error of up to ~1e-5 relative in every update.
    Type f64 = rw.getF64Type();
    auto wide = [&](Value v) -> Value {
      return et.isF64() ? v : arith::ExtFOp::create(rw, loc, f64, v);
    };
    auto narrow = [&](Value v) -> Value {
      return et.isF64() ? v : arith::TruncFOp::create(rw, loc, et, v);
    };
    Value step = arith::SIToFPOp::create(rw, loc, f64,
                                         extractScalar(rw, loc, op.getStep()));
    Value one = scalar(rw, loc, 1.0, f64);
    Value bc1 =
        subf(rw, loc, one, math::PowFOp::create(rw, loc, wide(b1), step));
    Value bc2 =
        subf(rw, loc, one, math::PowFOp::create(rw, loc, wide(b2), step));
    Value stepSize = narrow(arith::DivFOp::create(rw, loc, wide(lr), bc1));
    Value bc2Sqrt = narrow(math::SqrtOp::create(rw, loc, bc2));
    Value c1 = narrow(subf(rw, loc, one, wide(b1)));
    Value c2 = narrow(subf(rw, loc, one, wide(b2)));
    Value decay =
        narrow(subf(rw, loc, one, mulf(rw, loc, wide(lr), wide(wd))));
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

/// The global L2 norm in f64 (summed across ranks for sharded gradients),
/// then every gradient scaled in place by min(1, max_norm / (norm + 1e-6)).
struct ClipLowering : OpRewritePattern<ClipByGlobalNormOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ClipByGlobalNormOp op,
                                PatternRewriter &rw) const override {
    Location loc = op.getLoc();
    auto normType = cast<RankedTensorType>(op.getNorm().getType());
    Type et = normType.getElementType();
    // Squares summed in f64: a sum over every gradient element is long
    // enough for f32 accumulation to be off by ~1e-5 relative already at
    // 1e5 elements, and that error scales every clipped gradient.
    Type f64 = rw.getF64Type();
    Value total;
    for (Value g : op.getGrads()) {
      auto t = cast<RankedTensorType>(g.getType());
      MLIRContext *ctx = rw.getContext();
      auto accType = RankedTensorType::get({}, f64);
      SmallVector<utils::IteratorType> iters(t.getRank(),
                                             utils::IteratorType::reduction);
      SmallVector<AffineMap> maps = {
          AffineMap::getMultiDimIdentityMap(t.getRank(), ctx),
          AffineMap::get(t.getRank(), 0, {}, ctx)};
      auto sq = linalg::GenericOp::create(
          rw, loc, TypeRange{accType}, ValueRange{g},
          ValueRange{filled(rw, loc, accType, 0.0)}, maps, iters,
          [&](OpBuilder &b, Location l, ValueRange a) {
            Value x = t.getElementType().isF64()
                          ? a[0]
                          : arith::ExtFOp::create(b, l, f64, a[0]);
            linalg::YieldOp::create(b, l,
                                    addf(b, l, a[1], mulf(b, l, x, x)));
          });
      Value s = extractScalar(rw, loc, sq.getResult(0));
      total = total ? addf(rw, loc, total, s) : s;
    }
    if (op.getAcrossRanks()) {
      // Each rank holds shards of the gradients: the squared norm of the
      // whole gradients is the sum of the ranks' partial sums. Collectives
      // move f32; each partial sum is rounded once (1e-7 relative), far
      // below what changes a clipping decision.
      auto partialType = RankedTensorType::get({}, rw.getF32Type());
      Value partial = tensor::FromElementsOp::create(
          rw, loc, partialType,
          ValueRange{arith::TruncFOp::create(rw, loc, rw.getF32Type(), total)
                         .getResult()});
      auto summed = rt::CrossRankReduceOp::create(
          rw, loc, TypeRange{partialType}, rt::ReduceKind::sum,
          ValueRange{partial});
      total = arith::ExtFOp::create(
          rw, loc, f64, extractScalar(rw, loc, summed.getResult(0)));
    }
    Value norm64 = math::SqrtOp::create(rw, loc, total);
    Value norm = et.isF64() ? norm64
                            : arith::TruncFOp::create(rw, loc, et, norm64)
                                  .getResult();
    Value maxNorm = extractScalar(rw, loc, op.getMaxNorm());
    if (!et.isF64())
      maxNorm = arith::ExtFOp::create(rw, loc, f64, maxNorm);
    Value zero = scalar(rw, loc, 0.0, f64), one = scalar(rw, loc, 1.0, f64);
    Value ratio = arith::DivFOp::create(
        rw, loc, maxNorm, addf(rw, loc, norm64, scalar(rw, loc, 1e-6, f64)));
    Value coef = arith::MinimumFOp::create(rw, loc, one, ratio);
    Value enabled = arith::CmpFOp::create(rw, loc, arith::CmpFPredicate::OGT,
                                          maxNorm, zero);
    coef = arith::SelectOp::create(rw, loc, enabled, coef, one);
    if (!et.isF64())
      coef = arith::TruncFOp::create(rw, loc, et, coef);
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

/// The runtime's collectives move f32 buffers.
LogicalResult requireF32(PatternRewriter &rw, Operation *op) {
  for (Type t : op->getOperandTypes())
    if (!cast<RankedTensorType>(t).getElementType().isF32())
      return rw.notifyMatchFailure(op, "collectives are f32 only");
  return success();
}

/// `train.cross_rank_reduce` becomes the destination-passing
/// `rt.cross_rank_reduce`, in place on its operands.
struct CrossRankReduceLowering : OpRewritePattern<CrossRankReduceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(CrossRankReduceOp op,
                                PatternRewriter &rw) const override {
    if (failed(requireF32(rw, op)))
      return failure();
    rt::ReduceKind kind = static_cast<rt::ReduceKind>(op.getKind());
    rw.replaceOpWithNewOp<rt::CrossRankReduceOp>(op, op.getValues().getTypes(),
                                                 kind, op.getValues());
    return success();
  }
};

/// Fresh destinations for the results of `op`.
SmallVector<Value> emptyResults(PatternRewriter &rw, Operation *op) {
  SmallVector<Value> inits;
  for (Type t : op->getResultTypes())
    inits.push_back(empty(rw, op->getLoc(), cast<RankedTensorType>(t)));
  return inits;
}

/// `train.reduce_scatter` becomes `rt.reduce_scatter` into fresh shards.
struct ReduceScatterLowering : OpRewritePattern<ReduceScatterOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReduceScatterOp op,
                                PatternRewriter &rw) const override {
    if (failed(requireF32(rw, op)))
      return failure();
    rw.replaceOpWithNewOp<rt::ReduceScatterOp>(
        op, op.getResultTypes(), op.getValues(), emptyResults(rw, op),
        op.getRanks());
    return success();
  }
};

/// `train.all_gather` becomes `rt.all_gather`, into the parameter's own
/// buffer when the gathered value is only stored there.
struct AllGatherLowering : OpRewritePattern<AllGatherOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AllGatherOp op,
                                PatternRewriter &rw) const override {
    if (failed(requireF32(rw, op)))
      return failure();
    // A gathered value that is only stored into a global is gathered
    // straight into that global's buffer: the entry ABI threads the load to
    // the session's buffer and bufferization writes it in place.
    SmallVector<Value> inits;
    for (Value r : op.getResults()) {
      auto store =
          r.hasOneUse() ? dyn_cast<StoreOp>(*r.getUsers().begin()) : StoreOp();
      inits.push_back(
          store ? LoadOp::create(rw, op.getLoc(), r.getType(),
                                 store.getGlobalAttr())
                      .getResult()
                : empty(rw, op.getLoc(), cast<RankedTensorType>(r.getType())));
    }
    rw.replaceOpWithNewOp<rt::AllGatherOp>(
        op, op.getResultTypes(), op.getShards(), inits, op.getRanks());
    return success();
  }
};

/// `train.shard` becomes `rt.shard` into a fresh shard.
struct ShardLowering : OpRewritePattern<ShardOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ShardOp op,
                                PatternRewriter &rw) const override {
    if (failed(requireF32(rw, op)))
      return failure();
    rw.replaceOpWithNewOp<rt::ShardOp>(op, op.getResult().getType(),
                                       ValueRange{op.getInput()},
                                       emptyResults(rw, op), op.getRanks());
    return success();
  }
};

} // namespace

void mlir::cleave::populateTrainPatterns(RewritePatternSet &patterns) {
  patterns.add<SgdLowering, MomentumLowering, AdamLowering, ClipLowering,
               CrossRankReduceLowering, ReduceScatterLowering,
               AllGatherLowering, ShardLowering>(patterns.getContext());
}
