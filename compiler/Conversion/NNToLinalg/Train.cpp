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

#include "llvm/ADT/Sequence.h"

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

/// The sum over all elements of `fn(inputs...)^2`, accumulated in f64 (for
/// a long tensor an f32 sum is off by ~1e-5 relative already at 1e5
/// elements); `inputs` share one shape and `fn` sees their elements.
Value sumOfSquares(OpBuilder &rw, Location loc, ValueRange inputs,
                   ScalarFn fn) {
  auto t = cast<RankedTensorType>(inputs.front().getType());
  MLIRContext *ctx = rw.getContext();
  Type f64 = rw.getF64Type();
  auto accType = RankedTensorType::get({}, f64);
  SmallVector<utils::IteratorType> iters(t.getRank(),
                                         utils::IteratorType::reduction);
  SmallVector<AffineMap> maps(
      inputs.size(), AffineMap::getMultiDimIdentityMap(t.getRank(), ctx));
  maps.push_back(AffineMap::get(t.getRank(), 0, {}, ctx));
  auto sq = linalg::GenericOp::create(
      rw, loc, TypeRange{accType}, inputs,
      ValueRange{filled(rw, loc, accType, 0.0)}, maps, iters,
      [&](OpBuilder &b, Location l, ValueRange a) {
        Value x = fn(b, l, a.drop_back());
        if (!t.getElementType().isF64())
          x = arith::ExtFOp::create(b, l, f64, x);
        linalg::YieldOp::create(b, l, addf(b, l, a.back(), mulf(b, l, x, x)));
      });
  return extractScalar(rw, loc, sq.getResult(0));
}

/// The layer-wise trust ratio `num / den` in f64, 1 where `pnorm` or
/// `other` (the norm the ratio compares it with) is 0, as in the reference
/// LAMB and LARS implementations.
Value trustRatio(OpBuilder &b, Location loc, Value num, Value den, Value pnorm,
                 Value other) {
  Type f64 = b.getF64Type();
  Value zero = scalar(b, loc, 0.0, f64), one = scalar(b, loc, 1.0, f64);
  auto positive = [&](Value v) {
    return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, v, zero);
  };
  Value both = arith::AndIOp::create(b, loc, positive(pnorm), positive(other));
  return arith::SelectOp::create(b, loc, both,
                                 arith::DivFOp::create(b, loc, num, den), one);
}

/// Scalar conversions between the element type and f64, where the per-step
/// factors are computed (as PyTorch computes them in Python).
struct Widen {
  OpBuilder &b;
  Location loc;
  Type et;
  Value wide(Value v) const {
    return et.isF64() ? v : arith::ExtFOp::create(b, loc, b.getF64Type(), v);
  }
  Value narrow(Value v) const {
    return et.isF64() ? v : arith::TruncFOp::create(b, loc, et, v);
  }
};

/// RMSprop without momentum or centring, into the parameter and the square
/// average.
struct RmspropLowering : OpRewritePattern<RmspropOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(RmspropOp op,
                                PatternRewriter &rw) const override {
    Location loc = op.getLoc();
    Type et = cast<RankedTensorType>(op.getParam().getType()).getElementType();
    Widen w{rw, loc, et};
    Value lr = extractScalar(rw, loc, op.getLr());
    Value alpha = extractScalar(rw, loc, op.getAlpha());
    Value eps = extractScalar(rw, loc, op.getEps());
    Value wd = extractScalar(rw, loc, op.getWeightDecay());
    Value c = w.narrow(
        subf(rw, loc, scalar(rw, loc, 1.0, rw.getF64Type()), w.wide(alpha)));
    auto r = updateInPlace(
        rw, loc, {op.getGrad()}, {op.getParam(), op.getSquareAvg()},
        [&](OpBuilder &b, Location l, ValueRange a) -> SmallVector<Value> {
          Value p = a[1], sq = a[2];
          Value g = addf(b, l, a[0], mulf(b, l, wd, p));
          Value nsq = addf(b, l, mulf(b, l, alpha, sq),
                           mulf(b, l, c, mulf(b, l, g, g)));
          Value avg = addf(b, l, math::SqrtOp::create(b, l, nsq), eps);
          Value upd = arith::DivFOp::create(b, l, mulf(b, l, lr, g), avg);
          return {subf(b, l, p, upd), nsq};
        });
    rw.replaceOp(op, r);
    return success();
  }
};

/// Adagrad, into the parameter and the sum of squares; the decayed learning
/// rate is computed once, outside the loop.
struct AdagradLowering : OpRewritePattern<AdagradOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AdagradOp op,
                                PatternRewriter &rw) const override {
    Location loc = op.getLoc();
    Type et = cast<RankedTensorType>(op.getParam().getType()).getElementType();
    Widen w{rw, loc, et};
    Type f64 = rw.getF64Type();
    Value eps = extractScalar(rw, loc, op.getEps());
    Value wd = extractScalar(rw, loc, op.getWeightDecay());
    Value one = scalar(rw, loc, 1.0, f64);
    Value step = arith::SIToFPOp::create(rw, loc, f64,
                                         extractScalar(rw, loc, op.getStep()));
    Value decay = addf(rw, loc, one,
                       mulf(rw, loc, subf(rw, loc, step, one),
                            w.wide(extractScalar(rw, loc, op.getLrDecay()))));
    Value clr = w.narrow(arith::DivFOp::create(
        rw, loc, w.wide(extractScalar(rw, loc, op.getLr())), decay));
    auto r = updateInPlace(
        rw, loc, {op.getGrad()}, {op.getParam(), op.getSum()},
        [&](OpBuilder &b, Location l, ValueRange a) -> SmallVector<Value> {
          Value p = a[1];
          Value g = addf(b, l, a[0], mulf(b, l, wd, p));
          Value ns = addf(b, l, a[2], mulf(b, l, g, g));
          Value std = addf(b, l, math::SqrtOp::create(b, l, ns), eps);
          Value upd = arith::DivFOp::create(b, l, mulf(b, l, clr, g), std);
          return {subf(b, l, p, upd), ns};
        });
    rw.replaceOp(op, r);
    return success();
  }
};

/// LAMB in three loops: the moments in place, the norms of the parameter
/// and of the update direction (recomputed from the new moments rather than
/// stored), then the parameter.
struct LambLowering : OpRewritePattern<LambOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LambOp op, PatternRewriter &rw) const override {
    Location loc = op.getLoc();
    Type et = cast<RankedTensorType>(op.getParam().getType()).getElementType();
    Widen w{rw, loc, et};
    Type f64 = rw.getF64Type();
    bool adapt = !op.getNoAdapt();
    Value lr = extractScalar(rw, loc, op.getLr());
    Value b1 = extractScalar(rw, loc, op.getBeta1());
    Value b2 = extractScalar(rw, loc, op.getBeta2());
    Value eps = extractScalar(rw, loc, op.getEps());
    Value wd = adapt ? extractScalar(rw, loc, op.getWeightDecay())
                     : scalar(rw, loc, 0.0, et);
    Value step = arith::SIToFPOp::create(rw, loc, f64,
                                         extractScalar(rw, loc, op.getStep()));
    Value one = scalar(rw, loc, 1.0, f64);
    Value bc1 =
        subf(rw, loc, one, math::PowFOp::create(rw, loc, w.wide(b1), step));
    Value bc2 =
        subf(rw, loc, one, math::PowFOp::create(rw, loc, w.wide(b2), step));
    Value invBc1 = w.narrow(arith::DivFOp::create(rw, loc, one, bc1));
    Value bc2Sqrt = w.narrow(math::SqrtOp::create(rw, loc, bc2));
    Value c1 = w.narrow(subf(rw, loc, one, w.wide(b1)));
    Value c2 = w.narrow(subf(rw, loc, one, w.wide(b2)));
    auto moments = updateInPlace(
        rw, loc, {op.getGrad()}, {op.getM(), op.getV()},
        [&](OpBuilder &b, Location l, ValueRange a) -> SmallVector<Value> {
          Value g = a[0];
          return {addf(b, l, mulf(b, l, b1, a[1]), mulf(b, l, c1, g)),
                  addf(b, l, mulf(b, l, b2, a[2]),
                       mulf(b, l, c2, mulf(b, l, g, g)))};
        });
    // r = m_hat / (sqrt(v_hat) + eps) + wd * p, from p, m', v'.
    auto direction = [&](OpBuilder &b, Location l, Value p, Value m,
                         Value v) -> Value {
      Value denom = addf(
          b, l,
          arith::DivFOp::create(b, l, math::SqrtOp::create(b, l, v), bc2Sqrt),
          eps);
      Value r = arith::DivFOp::create(b, l, mulf(b, l, m, invBc1), denom);
      return adapt ? addf(b, l, r, mulf(b, l, wd, p)) : r;
    };
    Value scale = lr;
    if (adapt) {
      Value pnorm =
          math::SqrtOp::create(rw, loc,
                               sumOfSquares(rw, loc, {op.getParam()},
                                            [](OpBuilder &, Location,
                                               ValueRange a) { return a[0]; }));
      Value rnorm = math::SqrtOp::create(
          rw, loc,
          sumOfSquares(rw, loc, {op.getParam(), moments[0], moments[1]},
                       [&](OpBuilder &b, Location l, ValueRange a) {
                         return direction(b, l, a[0], a[1], a[2]);
                       }));
      Value trust = trustRatio(rw, loc, pnorm, rnorm, pnorm, rnorm);
      scale = w.narrow(mulf(rw, loc, w.wide(lr), trust));
    }
    auto r = updateInPlace(
        rw, loc, {moments[0], moments[1]}, {op.getParam()},
        [&](OpBuilder &b, Location l, ValueRange a) -> SmallVector<Value> {
          Value p = a[2];
          return {
              subf(b, l, p, mulf(b, l, scale, direction(b, l, p, a[0], a[1])))};
        });
    rw.replaceOp(op, {r[0], moments[0], moments[1]});
    return success();
  }
};

/// LARS: the norms of the parameter and the gradient, then the parameter
/// and the momentum buffer in one loop.
struct LarsLowering : OpRewritePattern<LarsOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LarsOp op, PatternRewriter &rw) const override {
    Location loc = op.getLoc();
    Type et = cast<RankedTensorType>(op.getParam().getType()).getElementType();
    Widen w{rw, loc, et};
    bool adapt = !op.getNoAdapt();
    Value lr = extractScalar(rw, loc, op.getLr());
    Value mom = extractScalar(rw, loc, op.getMomentum());
    Value wd = adapt ? extractScalar(rw, loc, op.getWeightDecay())
                     : scalar(rw, loc, 0.0, et);
    Value trust = scalar(rw, loc, 1.0, et);
    if (adapt) {
      auto identity = [](OpBuilder &, Location, ValueRange a) { return a[0]; };
      Value pnorm = math::SqrtOp::create(
          rw, loc, sumOfSquares(rw, loc, {op.getParam()}, identity));
      Value gnorm = math::SqrtOp::create(
          rw, loc, sumOfSquares(rw, loc, {op.getGrad()}, identity));
      Value wpn = mulf(rw, loc, w.wide(wd), pnorm);
      Value num =
          mulf(rw, loc, w.wide(extractScalar(rw, loc, op.getEta())), pnorm);
      trust = w.narrow(
          trustRatio(rw, loc, num, addf(rw, loc, gnorm, wpn), pnorm, gnorm));
    }
    auto r = updateInPlace(
        rw, loc, {op.getGrad()}, {op.getParam(), op.getBuf()},
        [&](OpBuilder &b, Location l, ValueRange a) -> SmallVector<Value> {
          Value p = a[1];
          Value d = mulf(b, l, trust, addf(b, l, a[0], mulf(b, l, wd, p)));
          Value nb = addf(b, l, mulf(b, l, mom, a[2]), d);
          return {subf(b, l, p, mulf(b, l, lr, nb)), nb};
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
      Value s =
          sumOfSquares(rw, loc, {g}, [](OpBuilder &, Location, ValueRange a) {
            return a[0];
          });
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

/// Per value, `sum(x - x)` in its element type: 0 when every element is
/// finite, NaN otherwise (`inf - inf` and `NaN - NaN` are NaN; nothing
/// folds `x - x` without fast-math flags). The sums become a vector of
/// flags, 1 where a value is not finite (32 values per kernel, so that a
/// kernel's operands stay few), which `across_ranks` sums across ranks (one
/// collective for all values), and the result is 1 + the position of the
/// first flag set, or 0. Everything stays in tensors, so
/// that on a GPU each step is a kernel and the host reads nothing.
struct CheckFiniteLowering : OpRewritePattern<CheckFiniteOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(CheckFiniteOp op,
                                PatternRewriter &rw) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rw.getContext();
    SmallVector<Value> sums;
    for (Value v : op.getValues()) {
      int64_t rank = cast<RankedTensorType>(v.getType()).getRank();
      sums.push_back(
          rank == 0
              ? v
              : reduce(rw, loc, v, llvm::to_vector(llvm::seq<int64_t>(0, rank)),
                       0.0, [](OpBuilder &b, Location l, Value e, Value acc) {
                         return addf(b, l, acc, subf(b, l, e, e));
                       }));
    }
    int64_t n = sums.size();
    Type f32 = rw.getF32Type();
    auto flagsType = RankedTensorType::get({n}, f32);
    // The flags of `chunk` (rank-0 sums), one per element: a kernel reads a
    // bounded number of operands however many parameters the model has.
    auto flagsOf = [&](ArrayRef<Value> chunk) -> Value {
      int64_t m = chunk.size();
      auto type = RankedTensorType::get({m}, f32);
      SmallVector<AffineMap> maps(m, AffineMap::get(1, 0, {}, ctx));
      maps.push_back(AffineMap::getMultiDimIdentityMap(1, ctx));
      return linalg::GenericOp::create(
                 rw, loc, TypeRange{type}, chunk,
                 ValueRange{empty(rw, loc, type)}, maps,
                 {utils::IteratorType::parallel},
                 [&](OpBuilder &b, Location l, ValueRange a) {
                   Value i = linalg::IndexOp::create(b, l, 0);
                   Value flag = scalar(b, l, 0.0, f32);
                   for (int64_t k = 0; k < m; ++k) {
                     Value d = subf(b, l, a[k], a[k]);
                     Value bad = arith::UIToFPOp::create(
                         b, l, f32,
                         arith::CmpFOp::create(b, l, arith::CmpFPredicate::UNO,
                                               d, d));
                     Value here = arith::CmpIOp::create(
                         b, l, arith::CmpIPredicate::eq, i,
                         arith::ConstantIndexOp::create(b, l, k));
                     flag = arith::SelectOp::create(b, l, here, bad, flag);
                   }
                   linalg::YieldOp::create(b, l, ValueRange{flag});
                 })
          .getResult(0);
    };
    constexpr int64_t kChunk = 32;
    Value flags;
    if (n <= kChunk) {
      flags = flagsOf(sums);
    } else {
      flags = empty(rw, loc, flagsType);
      for (int64_t begin = 0; begin < n; begin += kChunk) {
        int64_t m = std::min(kChunk, n - begin);
        flags = tensor::InsertSliceOp::create(
            rw, loc, flagsOf(ArrayRef(sums).slice(begin, m)), flags,
            ArrayRef<OpFoldResult>{rw.getIndexAttr(begin)},
            ArrayRef<OpFoldResult>{rw.getIndexAttr(m)},
            ArrayRef<OpFoldResult>{rw.getIndexAttr(1)});
      }
    }
    if (op.getAcrossRanks())
      flags =
          rt::CrossRankReduceOp::create(rw, loc, TypeRange{flagsType},
                                        rt::ReduceKind::sum, ValueRange{flags})
              .getResult(0);
    // The smallest 1 + position whose flag is set, in any order of
    // iteration.
    Type i64 = rw.getI64Type();
    auto firstType = cast<RankedTensorType>(op.getType());
    Value first =
        linalg::GenericOp::create(
            rw, loc, TypeRange{firstType}, ValueRange{flags},
            ValueRange{filled(rw, loc, firstType, 0)},
            {AffineMap::getMultiDimIdentityMap(1, ctx),
             AffineMap::get(1, 0, {}, ctx)},
            {utils::IteratorType::reduction},
            [&](OpBuilder &b, Location l, ValueRange a) {
              Value position = arith::AddIOp::create(
                  b, l,
                  arith::IndexCastOp::create(b, l, i64,
                                             linalg::IndexOp::create(b, l, 0)),
                  scalar(b, l, 1, i64));
              Value zero = scalar(b, l, 0, i64);
              Value set = arith::CmpFOp::create(b, l, arith::CmpFPredicate::OGT,
                                                a[0], scalar(b, l, 0.0, f32));
              Value none = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq,
                                                 a[1], zero);
              Value earlier = arith::CmpIOp::create(
                  b, l, arith::CmpIPredicate::slt, position, a[1]);
              Value take = arith::AndIOp::create(
                  b, l, set, arith::OrIOp::create(b, l, none, earlier));
              linalg::YieldOp::create(b, l,
                                      ValueRange{arith::SelectOp::create(
                                          b, l, take, position, a[1])});
            })
            .getResult(0);
    rw.replaceOp(op, first);
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
  patterns.add<SgdLowering, MomentumLowering, AdamLowering, RmspropLowering,
               AdagradLowering, LambLowering, LarsLowering, ClipLowering,
               CheckFiniteLowering, CrossRankReduceLowering,
               ReduceScatterLowering, AllGatherLowering, ShardLowering>(
      patterns.getContext());
}
