//===- Reductions.cpp - Reductions, losses and normalisation to linalg ----===//
//
// Ops built from reductions: a reduction is one linalg.generic with reduction
// iterators, and the statistics it produces broadcast back as size-1
// dimensions into elementwise generics.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/LinalgBuilders.h"
#include "compiler/Conversion/NNToLinalg/Patterns.h"
#include "dialects/NN/IR/NNOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include <cmath>
#include <limits>
#include <tuple>

using namespace mlir;
using namespace mlir::cleave;
using namespace mlir::cleave::nn;

namespace {

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

Value maxf(OpBuilder &b, Location l, Value x, Value acc) {
  return arith::MaximumFOp::create(b, l, x, acc);
}

Value sumOver(OpBuilder &b, Location l, Value x, ArrayRef<int64_t> axes) {
  return sum(b, l, x, axes);
}
Value maxOver(OpBuilder &b, Location l, Value x, ArrayRef<int64_t> axes) {
  return reduce(b, l, x, axes, -std::numeric_limits<double>::infinity(), maxf);
}

/// Multiplies every element of `x` by the constant `c`.
Value scale(OpBuilder &b, Location l, Value x, double c) {
  return elementwise(b, l, typeOf(x), {x},
                     [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
                       return arith::MulFOp::create(
                           nb, nl, a[0], scalar(nb, nl, c, a[0].getType()));
                     });
}

double elementsOver(RankedTensorType t, ArrayRef<int64_t> axes) {
  double n = 1;
  for (int64_t a : axes)
    n *= t.getDimSize(a);
  return n;
}

/// A reduction is one linalg.generic with reduction iterators; the mean
/// scales the sum once, and `keepdims` reinserts the reduced dimensions.
template <typename OpTy>
struct ReduceLowering : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;
  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    SmallVector<int64_t> axes = op.getReducedAxes();
    RankedTensorType in = typeOf(op.getInput());
    Value r;
    if constexpr (std::is_same_v<OpTy, ReduceMaxOp>)
      r = maxOver(rewriter, loc, op.getInput(), axes);
    else
      r = sumOver(rewriter, loc, op.getInput(), axes);
    if constexpr (std::is_same_v<OpTy, ReduceMeanOp>)
      r = scale(rewriter, loc, r, 1.0 / elementsOver(in, axes));
    if (op.getKeepdims())
      r = keepDims(rewriter, loc, r, axes, in.getRank());
    rewriter.replaceOp(op, r);
    return success();
  }
};

/// Routes the cotangent to the maximal elements, split evenly between ties:
/// dy * [x == max] / count([x == max]).
struct ReduceMaxGradLowering : OpRewritePattern<ReduceMaxGradOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReduceMaxGradOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = op.getInput();
    RankedTensorType xt = typeOf(x);
    SmallVector<int64_t> axes = op.getReducedAxes();
    Value m = keepDims(rewriter, loc, maxOver(rewriter, loc, x, axes), axes,
                       xt.getRank());
    // Ties share the gradient evenly.
    Value mask = elementwise(
        rewriter, loc, xt, {x, m},
        [](OpBuilder &b, Location l, ValueRange a) -> Value {
          Value eq = arith::CmpFOp::create(b, l, arith::CmpFPredicate::OEQ,
                                           a[0], a[1]);
          Type t = a[0].getType();
          return arith::SelectOp::create(b, l, eq, scalar(b, l, 1.0, t),
                                         scalar(b, l, 0.0, t));
        });
    Value ties = keepDims(rewriter, loc, sumOver(rewriter, loc, mask, axes),
                          axes, xt.getRank());
    Value dy = op.getKeepdims()
                   ? op.getGrad()
                   : keepDims(rewriter, loc, op.getGrad(), axes, xt.getRank());
    rewriter.replaceOp(
        op, elementwise(rewriter, loc, xt, {dy, mask, ties},
                        [](OpBuilder &b, Location l, ValueRange a) -> Value {
                          return arith::DivFOp::create(
                              b, l, arith::MulFOp::create(b, l, a[0], a[1]),
                              a[2]);
                        }));
    return success();
  }
};

/// Shifted exponentials along `axis`: returns (max kept, exp(x - max)).
std::pair<Value, Value> shiftedExp(OpBuilder &b, Location loc, Value x,
                                   int64_t axis) {
  RankedTensorType t = typeOf(x);
  Value m = keepDims(b, loc, maxOver(b, loc, x, {axis}), {axis}, t.getRank());
  Value e = elementwise(b, loc, t, {x, m},
                        [](OpBuilder &nb, Location l, ValueRange a) -> Value {
                          return math::ExpOp::create(
                              nb, l, arith::SubFOp::create(nb, l, a[0], a[1]));
                        });
  return {m, e};
}

/// exp(x - max) / sum(exp(x - max)) along the axis.
struct SoftmaxLowering : OpRewritePattern<SoftmaxOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SoftmaxOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType t = typeOf(op.getInput());
    int64_t axis = *normalizeAxis(op.getAxis(), t.getRank());
    auto [m, e] = shiftedExp(rewriter, loc, op.getInput(), axis);
    (void)m;
    Value s = keepDims(rewriter, loc, sumOver(rewriter, loc, e, {axis}), {axis},
                       t.getRank());
    rewriter.replaceOp(op, elementwise(rewriter, loc, t, {e, s},
                                       [](OpBuilder &b, Location l,
                                          ValueRange a) -> Value {
                                         return arith::DivFOp::create(b, l, a[0],
                                                                      a[1]);
                                       }));
    return success();
  }
};

/// x - max - log(sum(exp(x - max))) along the axis.
struct LogSoftmaxLowering : OpRewritePattern<LogSoftmaxOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LogSoftmaxOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType t = typeOf(op.getInput());
    int64_t axis = *normalizeAxis(op.getAxis(), t.getRank());
    auto [m, e] = shiftedExp(rewriter, loc, op.getInput(), axis);
    Value s = keepDims(rewriter, loc, sumOver(rewriter, loc, e, {axis}), {axis},
                       t.getRank());
    rewriter.replaceOp(
        op, elementwise(rewriter, loc, t, {op.getInput(), m, s},
                        [](OpBuilder &b, Location l, ValueRange a) -> Value {
                          Value shifted = arith::SubFOp::create(b, l, a[0], a[1]);
                          return arith::SubFOp::create(
                              b, l, shifted, math::LogOp::create(b, l, a[2]));
                        }));
    return success();
  }
};

/// Applies a loss reduction to per-sample losses `[B]`; `meanCount` is the
/// divisor of `mean`.
Value reduceLoss(OpBuilder &b, Location loc, Value perSample,
                 Reduction reduction, double meanCount) {
  if (reduction == Reduction::none)
    return perSample;
  Value total = sumOver(b, loc, perSample, {0});
  return reduction == Reduction::mean ? scale(b, loc, total, 1.0 / meanCount)
                                      : total;
}

/// logsumexp(logits) - logits[label] per sample, then the reduction. Labels
/// are clamped into range (the runtime validates them).
struct CrossEntropyLowering : OpRewritePattern<CrossEntropyOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(CrossEntropyOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = op.getLogits();
    RankedTensorType t = typeOf(x);
    int64_t batch = t.getDimSize(0), classes = t.getDimSize(1);
    auto [m, e] = shiftedExp(rewriter, loc, x, 1);
    Value s = sumOver(rewriter, loc, e, {1});
    Value mFlat = reshape(rewriter, loc, m, {batch});
    // The logit of each sample's label.
    auto rowType = RankedTensorType::get({batch}, t.getElementType());
    Value picked = elementwise(
        rewriter, loc, rowType, {op.getLabels()},
        [&](OpBuilder &b, Location l, ValueRange a) -> Value {
          Value row = linalg::IndexOp::create(b, l, 0);
          Value c = clampedIndex(b, l, a[0], classes);
          return tensor::ExtractOp::create(b, l, x, ValueRange{row, c});
        });
    Value perSample = elementwise(
        rewriter, loc, rowType, {s, mFlat, picked},
        [](OpBuilder &b, Location l, ValueRange a) -> Value {
          Value lse = arith::AddFOp::create(b, l, math::LogOp::create(b, l, a[0]),
                                            a[1]);
          return arith::SubFOp::create(b, l, lse, a[2]);
        });
    rewriter.replaceOp(
        op, reduceLoss(rewriter, loc, perSample, op.getReduction(), batch));
    return success();
  }
};

/// The mean of (input - target)^2 over the non-batch dimensions per sample,
/// then the reduction.
struct MseLossLowering : OpRewritePattern<MseLossOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MseLossOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType t = typeOf(op.getInput());
    Value sq = elementwise(rewriter, loc, t, {op.getInput(), op.getTarget()},
                           [](OpBuilder &b, Location l, ValueRange a) -> Value {
                             Value d = arith::SubFOp::create(b, l, a[0], a[1]);
                             return arith::MulFOp::create(b, l, d, d);
                           });
    SmallVector<int64_t> features;
    for (int64_t d = 1; d < t.getRank(); ++d)
      features.push_back(d);
    Value perSample = features.empty() ? sq : sumOver(rewriter, loc, sq, features);
    perSample = scale(rewriter, loc, perSample, 1.0 / elementsOver(t, features));
    rewriter.replaceOp(op, reduceLoss(rewriter, loc, perSample,
                                      op.getReduction(), t.getDimSize(0)));
    return success();
  }
};

/// The mean over the spatial dimensions, kept as size 1.
struct GlobalAvgPoolLowering : OpRewritePattern<GlobalAvgPoolOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(GlobalAvgPoolOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType t = typeOf(op.getInput());
    SmallVector<int64_t> spatial;
    for (int64_t d = 2; d < t.getRank(); ++d)
      spatial.push_back(d);
    Value mean = scale(rewriter, loc, sumOver(rewriter, loc, op.getInput(), spatial),
                       1.0 / elementsOver(t, spatial));
    rewriter.replaceOp(op, keepDims(rewriter, loc, mean, spatial, t.getRank()));
    return success();
  }
};

/// Mean and biased variance of `x` over `axes`, kept as size-1 dimensions.
std::pair<Value, Value> moments(OpBuilder &b, Location loc, Value x,
                                ArrayRef<int64_t> axes) {
  RankedTensorType t = typeOf(x);
  double n = elementsOver(t, axes);
  Value mean = scale(b, loc, sumOver(b, loc, x, axes), 1.0 / n);
  Value meanK = keepDims(b, loc, mean, axes, t.getRank());
  Value sq = elementwise(b, loc, t, {x, meanK},
                         [](OpBuilder &nb, Location l, ValueRange a) -> Value {
                           Value d = arith::SubFOp::create(nb, l, a[0], a[1]);
                           return arith::MulFOp::create(nb, l, d, d);
                         });
  Value var = scale(b, loc, sumOver(b, loc, sq, axes), 1.0 / n);
  return {mean, var};
}

/// y = (x - mean) / sqrt(var + eps) * scale + bias, where every statistic
/// and affine operand broadcasts against x.
Value normalizeAffine(OpBuilder &b, Location loc, Value x, Value mean,
                      Value var, Value scaleT, Value bias, double eps) {
  SmallVector<Value> ins = {x, mean, var};
  if (scaleT)
    ins.push_back(scaleT);
  if (bias)
    ins.push_back(bias);
  bool hasScale = static_cast<bool>(scaleT);
  return elementwise(
      b, loc, typeOf(x), ins,
      [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
        Type et = a[0].getType();
        Value inv = math::RsqrtOp::create(
            nb, l, arith::AddFOp::create(nb, l, a[2], scalar(nb, l, eps, et)));
        Value y = arith::MulFOp::create(
            nb, l, arith::SubFOp::create(nb, l, a[0], a[1]), inv);
        unsigned next = 3;
        if (hasScale)
          y = arith::MulFOp::create(nb, l, y, a[next++]);
        if (next < a.size())
          y = arith::AddFOp::create(nb, l, y, a[next]);
        return y;
      });
}

/// Normalises with the running statistics (inference) or with this batch's
/// statistics, weighted by the sample weights when present, and blends the
/// batch statistics into the running ones (training).
struct BatchNormLowering : OpRewritePattern<BatchNormOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(BatchNormOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType t = typeOf(op.getInput());
    int64_t rank = t.getRank();
    SmallVector<int64_t> axes, chan(rank, 1);
    for (int64_t d = 0; d < rank; ++d)
      if (d != 1)
        axes.push_back(d);
    chan[1] = t.getDimSize(1);
    auto asChan = [&](Value v) { return reshape(rewriter, loc, v, chan); };
    double eps = op.getEpsilon().convertToDouble();
    Value gamma = asChan(op.getScale()), beta = asChan(op.getBias());
    if (!op.getTraining()) {
      Value y = normalizeAffine(rewriter, loc, op.getInput(),
                                asChan(op.getRunningMean()),
                                asChan(op.getRunningVar()), gamma, beta, eps);
      rewriter.replaceOp(op, {y, op.getRunningMean(), op.getRunningVar()});
      return success();
    }
    double mom = op.getMomentum().convertToDouble();
    // running' = (1 - momentum) running + momentum * factor * batch.
    auto blend = [&](Value running, Value batch, Value factor) {
      return elementwise(
          rewriter, loc, typeOf(running), {running, batch},
          [&](OpBuilder &b, Location l, ValueRange a) -> Value {
            Type et = a[0].getType();
            Value keep = arith::MulFOp::create(b, l, a[0],
                                               scalar(b, l, 1.0 - mom, et));
            Value add = arith::MulFOp::create(
                b, l, a[1],
                arith::MulFOp::create(b, l, factor, scalar(b, l, mom, et)));
            return arith::AddFOp::create(b, l, keep, add);
          });
    };
    Type et = t.getElementType();
    Value mean, var, y, count;
    if (Value w = op.getSampleWeights()) {
      // Statistics over the samples of weight 1; padding rows output zero.
      SmallVector<int64_t> sample(rank, 1);
      sample[0] = t.getDimSize(0);
      Value wb = reshape(rewriter, loc, w, sample);
      double perSample = elementsOver(t, axes) / t.getDimSize(0);
      count = arith::MulFOp::create(
          rewriter, loc, extractScalar(rewriter, loc, sumOver(rewriter, loc, w, {0})),
          scalar(rewriter, loc, perSample, et));
      auto weightedMean = [&](Value v, Value center) {
        SmallVector<Value> ins = {v, wb};
        if (center)
          ins.push_back(center);
        Value weighted = elementwise(
            rewriter, loc, t, ins,
            [&](OpBuilder &b, Location l, ValueRange a) -> Value {
              Value x = a[0];
              if (a.size() > 2) {
                Value d = arith::SubFOp::create(b, l, x, a[2]);
                x = arith::MulFOp::create(b, l, d, d);
              }
              return arith::MulFOp::create(b, l, x, a[1]);
            });
        Value sum = sumOver(rewriter, loc, weighted, axes);
        return elementwise(rewriter, loc, typeOf(sum), {sum},
                           [&](OpBuilder &b, Location l, ValueRange a) -> Value {
                             return arith::DivFOp::create(b, l, a[0], count);
                           });
      };
      mean = weightedMean(op.getInput(), Value());
      var = weightedMean(op.getInput(), asChan(mean));
      Value yhat = normalizeAffine(rewriter, loc, op.getInput(), asChan(mean),
                                   asChan(var), gamma, beta, eps);
      y = elementwise(rewriter, loc, t, {yhat, wb},
                      [](OpBuilder &b, Location l, ValueRange a) -> Value {
                        return arith::MulFOp::create(b, l, a[0], a[1]);
                      });
    } else {
      std::tie(mean, var) = moments(rewriter, loc, op.getInput(), axes);
      y = normalizeAffine(rewriter, loc, op.getInput(), asChan(mean),
                          asChan(var), gamma, beta, eps);
      count = scalar(rewriter, loc, elementsOver(t, axes), et);
    }
    // Running statistics use the unbiased variance n / (n - 1), as PyTorch.
    Value one = scalar(rewriter, loc, 1.0, et);
    Value unbias = arith::SelectOp::create(
        rewriter, loc,
        arith::CmpFOp::create(rewriter, loc, arith::CmpFPredicate::OGT, count,
                              one),
        arith::DivFOp::create(rewriter, loc, count,
                              arith::SubFOp::create(rewriter, loc, count, one)),
        one);
    rewriter.replaceOp(op, {y, blend(op.getRunningMean(), mean, one),
                            blend(op.getRunningVar(), var, unbias)});
    return success();
  }
};

/// Normalises over the trailing dimensions from `axis` with their moments.
struct LayerNormLowering : OpRewritePattern<LayerNormOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LayerNormOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType t = typeOf(op.getInput());
    int64_t axis = *normalizeAxis(op.getAxis(), t.getRank());
    SmallVector<int64_t> axes;
    for (int64_t d = axis; d < t.getRank(); ++d)
      axes.push_back(d);
    auto [mean, var] = moments(rewriter, loc, op.getInput(), axes);
    Value y = normalizeAffine(
        rewriter, loc, op.getInput(), keepDims(rewriter, loc, mean, axes, t.getRank()),
        keepDims(rewriter, loc, var, axes, t.getRank()), op.getScale(),
        op.getBias(), op.getEpsilon().convertToDouble());
    rewriter.replaceOp(op, y);
    return success();
  }
};

/// SplitMix64's finaliser on i64 values, as DropoutOp::keeps computes it.
Value splitMix(OpBuilder &b, Location l, Value z) {
  auto c = [&](uint64_t v) {
    return arith::ConstantOp::create(b, l, b.getI64IntegerAttr(int64_t(v)));
  };
  auto mixStep = [&](Value x, uint64_t shift, uint64_t mul) {
    Value s = arith::ShRUIOp::create(b, l, x, c(shift));
    return arith::MulIOp::create(b, l, arith::XOrIOp::create(b, l, x, s),
                                 c(mul));
  };
  z = arith::AddIOp::create(b, l, z, c(0x9E3779B97F4A7C15ULL));
  z = mixStep(z, 30, 0xBF58476D1CE4E5B9ULL);
  z = mixStep(z, 27, 0x94D049BB133111EBULL);
  return arith::XOrIOp::create(b, l, z, arith::ShRUIOp::create(b, l, z, c(31)));
}

/// Recomputes DropoutOp::keeps for every element from its row-major index,
/// so the mask needs no storage and matches the interpreter bit for bit.
struct DropoutLowering : OpRewritePattern<DropoutOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(DropoutOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType t = typeOf(op.getInput());
    double ratio = op.getRatio().convertToDouble();
    if (ratio == 0.0) {
      rewriter.replaceOp(op, op.getInput());
      return success();
    }
    auto c = [&](OpBuilder &b, Location l, int64_t v) {
      return arith::ConstantOp::create(b, l, b.getI64IntegerAttr(v));
    };
    Value seed = extractScalar(rewriter, loc, op.getSeed());
    Value stream = c(rewriter, loc,
                     int64_t(uint64_t(op.getStream()) * 0xD1B54A32D192ED03ULL));
    Value key = splitMix(rewriter, loc,
                         arith::XOrIOp::create(rewriter, loc,
                                               splitMix(rewriter, loc, seed),
                                               stream));
    // u = (z >> 40) / 2^24 >= ratio  <=>  (z >> 40) >= ceil(ratio * 2^24).
    int64_t threshold = static_cast<int64_t>(std::ceil(ratio * 16777216.0));
    double keepScale = 1.0 / (1.0 - ratio);
    SmallVector<int64_t> strides(t.getRank(), 1);
    for (int64_t d = t.getRank() - 2; d >= 0; --d)
      strides[d] = strides[d + 1] * t.getDimSize(d + 1);
    Value y = elementwise(
        rewriter, loc, t, {op.getInput()},
        [&](OpBuilder &b, Location l, ValueRange a) -> Value {
          Value flat = c(b, l, 0);
          for (int64_t d = 0; d < t.getRank(); ++d) {
            Value i = arith::IndexCastOp::create(b, l, b.getI64Type(),
                                                 linalg::IndexOp::create(b, l, d));
            flat = arith::AddIOp::create(
                b, l, flat, arith::MulIOp::create(b, l, i, c(b, l, strides[d])));
          }
          Value z = splitMix(b, l, arith::AddIOp::create(b, l, key, flat));
          Value top = arith::ShRUIOp::create(b, l, z, c(b, l, 40));
          Value keep = arith::CmpIOp::create(b, l, arith::CmpIPredicate::sge,
                                             top, c(b, l, threshold));
          Type et = a[0].getType();
          Value kept = arith::MulFOp::create(b, l, a[0],
                                             scalar(b, l, keepScale, et));
          return arith::SelectOp::create(b, l, keep, kept,
                                         scalar(b, l, 0.0, et));
        });
    rewriter.replaceOp(op, y);
    return success();
  }
};

} // namespace

void mlir::cleave::populateReductionPatterns(RewritePatternSet &patterns) {
  patterns.add<ReduceLowering<ReduceSumOp>, ReduceLowering<ReduceMeanOp>,
               ReduceLowering<ReduceMaxOp>, ReduceMaxGradLowering,
               SoftmaxLowering, LogSoftmaxLowering, CrossEntropyLowering,
               MseLossLowering, GlobalAvgPoolLowering, BatchNormLowering,
               LayerNormLowering, DropoutLowering>(patterns.getContext());
}
