//===- Elementwise.cpp - Elementwise nn ops to linalg.generic -------------===//
//
// Each elementwise nn op becomes one linalg.generic; fusion of neighbouring
// generics is left to linalg's elementwise fusion.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/LinalgBuilders.h"
#include "compiler/Conversion/NNToLinalg/Patterns.h"
#include "dialects/NN/IR/NNOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include <cmath>

using namespace mlir;
using namespace mlir::cleave;
using namespace mlir::cleave::nn;

namespace {

/// Lowers a binary op with broadcasting to the arith op `FloatOp` on floats
/// and `IntOp` (a type with the same `create`) on integers.
template <typename OpTy, typename FloatOp, typename IntOp>
struct BinaryLowering : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;
  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
    bool isFloat = isa<FloatType>(type.getElementType());
    rewriter.replaceOp(
        op, elementwise(rewriter, op.getLoc(), type, {op.getLhs(), op.getRhs()},
                        [&](OpBuilder &b, Location loc, ValueRange a) -> Value {
                          if (isFloat)
                            return FloatOp::create(b, loc, a[0], a[1]);
                          return IntOp::create(b, loc, a[0], a[1]);
                        }));
    return success();
  }
};

/// Integer division as nn.div documents it: truncated toward zero, 0 for a
/// zero divisor and a wrapping negation for -1, so that `arith.divsi` never
/// sees the operands it leaves undefined (x86 traps on both).
struct TruncatingDiv {
  static Value create(OpBuilder &b, Location l, Value x, Value y) {
    Type t = x.getType();
    auto c = [&](int64_t v) -> Value {
      return arith::ConstantOp::create(b, l, t, b.getIntegerAttr(t, v));
    };
    Value zero = c(0), one = c(1), minusOne = c(-1);
    Value byZero =
        arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, y, zero);
    Value byMinusOne =
        arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, y, minusOne);
    Value safe = arith::SelectOp::create(
        b, l, arith::OrIOp::create(b, l, byZero, byMinusOne), one, y);
    Value q = arith::DivSIOp::create(b, l, x, safe);
    Value negated = arith::SubIOp::create(b, l, zero, x);
    return arith::SelectOp::create(
        b, l, byZero, zero,
        arith::SelectOp::create(b, l, byMinusOne, negated, q));
  }
};

/// For ops that have no integer form (the verifier admits floats only).
struct NoIntegerForm {
  static Value create(OpBuilder &, Location, Value, Value) {
    llvm_unreachable("the op's verifier admits float tensors only");
  }
};

/// Lowers a unary op (or an activation gradient, whose extra operand comes
/// first) to a scalar function of its operands' elements.
template <typename OpTy>
struct UnaryLowering : OpRewritePattern<OpTy> {
  using Fn = std::function<Value(OpBuilder &, Location, ValueRange, OpTy)>;
  UnaryLowering(MLIRContext *ctx, Fn fn)
      : OpRewritePattern<OpTy>(ctx), fn(std::move(fn)) {}
  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    rewriter.replaceOp(
        op, elementwise(rewriter, op.getLoc(),
                        cast<RankedTensorType>(op.getType()),
                        op->getOperands(),
                        [&](OpBuilder &b, Location loc, ValueRange a) {
                          return fn(b, loc, a, op);
                        }));
    return success();
  }
  Fn fn;
};

/// A constant of the (float or integer) type of `like`.
Value cst(OpBuilder &b, Location loc, double v, Value like) {
  return scalar(b, loc, v, like.getType());
}

/// Standard normal CDF (erf form): 0.5 * (1 + erf(x / sqrt(2))).
Value normalCdf(OpBuilder &b, Location loc, Value x) {
  Value s = arith::MulFOp::create(b, loc, x, cst(b, loc, M_SQRT1_2, x));
  Value e = math::ErfOp::create(b, loc, s);
  return arith::MulFOp::create(
      b, loc, cst(b, loc, 0.5, x),
      arith::AddFOp::create(b, loc, cst(b, loc, 1.0, x), e));
}

/// tanh(sqrt(2/pi) * (x + 0.044715 x^3)), the GELU tanh approximation's core.
Value geluTanhInner(OpBuilder &b, Location loc, Value x) {
  Value x3 = arith::MulFOp::create(b, loc, x, arith::MulFOp::create(b, loc, x, x));
  Value inner = arith::AddFOp::create(
      b, loc, x, arith::MulFOp::create(b, loc, cst(b, loc, 0.044715, x), x3));
  return math::TanhOp::create(
      b, loc,
      arith::MulFOp::create(b, loc, cst(b, loc, std::sqrt(2.0 / M_PI), x),
                            inner));
}

/// GELU of one element, in the erf form or the tanh approximation.
Value gelu(OpBuilder &b, Location loc, Value x, GeluApproximation approx) {
  Value half = cst(b, loc, 0.5, x), one = cst(b, loc, 1.0, x);
  if (approx == GeluApproximation::tanh) {
    Value t = geluTanhInner(b, loc, x);
    return arith::MulFOp::create(
        b, loc, arith::MulFOp::create(b, loc, half, x),
        arith::AddFOp::create(b, loc, one, t));
  }
  return arith::MulFOp::create(b, loc, x, normalCdf(b, loc, x));
}

/// The derivative of `gelu` at one element.
Value geluDerivative(OpBuilder &b, Location loc, Value x,
                     GeluApproximation approx) {
  Value half = cst(b, loc, 0.5, x), one = cst(b, loc, 1.0, x);
  if (approx == GeluApproximation::tanh) {
    // 0.5 (1 + t) + 0.5 x (1 - t^2) sqrt(2/pi) (1 + 3 * 0.044715 x^2).
    Value t = geluTanhInner(b, loc, x);
    Value x2 = arith::MulFOp::create(b, loc, x, x);
    Value du = arith::MulFOp::create(
        b, loc, cst(b, loc, std::sqrt(2.0 / M_PI), x),
        arith::AddFOp::create(
            b, loc, one,
            arith::MulFOp::create(b, loc, cst(b, loc, 3 * 0.044715, x), x2)));
    Value sech2 = arith::SubFOp::create(b, loc, one,
                                        arith::MulFOp::create(b, loc, t, t));
    Value left = arith::MulFOp::create(b, loc, half,
                                       arith::AddFOp::create(b, loc, one, t));
    Value right = arith::MulFOp::create(
        b, loc, arith::MulFOp::create(b, loc, half, x),
        arith::MulFOp::create(b, loc, sech2, du));
    return arith::AddFOp::create(b, loc, left, right);
  }
  // Phi(x) + x phi(x), phi(x) = exp(-x^2 / 2) / sqrt(2 pi).
  Value x2 = arith::MulFOp::create(b, loc, x, x);
  Value pdf = arith::MulFOp::create(
      b, loc, cst(b, loc, 1.0 / std::sqrt(2.0 * M_PI), x),
      math::ExpOp::create(
          b, loc, arith::MulFOp::create(b, loc, cst(b, loc, -0.5, x), x2)));
  return arith::AddFOp::create(b, loc, normalCdf(b, loc, x),
                               arith::MulFOp::create(b, loc, x, pdf));
}

/// `pred(x, bound) ? t : f`.
Value select(OpBuilder &b, Location loc, arith::CmpFPredicate pred, Value x,
             Value bound, Value t, Value f) {
  Value c = arith::CmpFOp::create(b, loc, pred, x, bound);
  return arith::SelectOp::create(b, loc, c, t, f);
}

/// nn.compare: arith.cmpf (ordered, but unordered for `ne`, so NaN compares
/// unequal to everything as in IEEE and PyTorch) or arith.cmpi (signed), the
/// i1 widened to 0/1 in the mask's float type.
struct CompareLowering : OpRewritePattern<CompareOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(CompareOp op,
                                PatternRewriter &rewriter) const override {
    ComparePredicate pred = op.getPredicate();
    auto type = cast<RankedTensorType>(op.getType());
    rewriter.replaceOp(
        op,
        elementwise(rewriter, op.getLoc(), type, {op.getLhs(), op.getRhs()},
                    [&](OpBuilder &b, Location l, ValueRange a) -> Value {
                      Value holds;
                      if (isa<FloatType>(a[0].getType())) {
                        using P = arith::CmpFPredicate;
                        static constexpr P kFloat[] = {P::OEQ, P::UNE, P::OLT,
                                                       P::OLE, P::OGT, P::OGE};
                        holds = arith::CmpFOp::create(
                            b, l, kFloat[static_cast<int>(pred)], a[0], a[1]);
                      } else {
                        using P = arith::CmpIPredicate;
                        static constexpr P kInt[] = {P::eq,  P::ne,  P::slt,
                                                     P::sle, P::sgt, P::sge};
                        holds = arith::CmpIOp::create(
                            b, l, kInt[static_cast<int>(pred)], a[0], a[1]);
                      }
                      return arith::UIToFPOp::create(
                          b, l, type.getElementType(), holds);
                    }));
    return success();
  }
};

/// nn.cast: the arith conversion between the element types, with C's
/// semantics (integers signed unless `unsigned`; float to integer truncates
/// toward zero).
struct CastLowering : OpRewritePattern<CastOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(CastOp op,
                                PatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
    Type to = type.getElementType();
    bool isUnsigned = op.getUnsignedInput();
    rewriter.replaceOp(
        op, elementwise(rewriter, op.getLoc(), type, {op.getInput()},
                        [&](OpBuilder &b, Location l, ValueRange a) -> Value {
                          return convertScalar(b, l, a[0], to, isUnsigned);
                        }));
    return success();
  }

  static Value convertScalar(OpBuilder &b, Location l, Value x, Type to,
                             bool isUnsigned) {
    Type from = x.getType();
    if (from == to)
      return x;
    unsigned fromBits = from.getIntOrFloatBitWidth();
    unsigned toBits = to.getIntOrFloatBitWidth();
    // bf16 converts to and from f32 only (as integer arithmetic, see
    // cleave-expand-bf16): other types go through f32, which holds every
    // bf16 exactly (a conversion to bf16 from a type wider than f32 then
    // rounds twice).
    if ((from.isBF16() || to.isBF16()) && !from.isF32() && !to.isF32()) {
      x = convertScalar(b, l, x, b.getF32Type(), isUnsigned);
      return convertScalar(b, l, x, to, /*isUnsigned=*/false);
    }
    if (isa<FloatType>(from) && isa<FloatType>(to))
      return fromBits < toBits ? Value(arith::ExtFOp::create(b, l, to, x))
                               : Value(arith::TruncFOp::create(b, l, to, x));
    if (isa<FloatType>(to))
      return isUnsigned ? Value(arith::UIToFPOp::create(b, l, to, x))
                        : Value(arith::SIToFPOp::create(b, l, to, x));
    if (isa<FloatType>(from))
      return arith::FPToSIOp::create(b, l, to, x);
    if (fromBits > toBits)
      return arith::TruncIOp::create(b, l, to, x);
    return isUnsigned ? Value(arith::ExtUIOp::create(b, l, to, x))
                      : Value(arith::ExtSIOp::create(b, l, to, x));
  }
};

} // namespace

void mlir::cleave::populateElementwisePatterns(RewritePatternSet &patterns) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<BinaryLowering<AddOp, arith::AddFOp, arith::AddIOp>,
               BinaryLowering<SubOp, arith::SubFOp, arith::SubIOp>,
               BinaryLowering<MulOp, arith::MulFOp, arith::MulIOp>,
               BinaryLowering<DivOp, arith::DivFOp, TruncatingDiv>,
               BinaryLowering<MaximumOp, arith::MaximumFOp, arith::MaxSIOp>,
               BinaryLowering<MinimumOp, arith::MinimumFOp, arith::MinSIOp>,
               BinaryLowering<PowFOp, math::PowFOp, NoIntegerForm>,
               CompareLowering>(ctx);
  patterns.add<CastLowering>(ctx);

  using Args = ValueRange;
  patterns.add<UnaryLowering<NegOp>>(
      ctx, [](OpBuilder &b, Location l, Args a, NegOp) -> Value {
        if (isa<FloatType>(a[0].getType()))
          return arith::NegFOp::create(b, l, a[0]);
        return arith::SubIOp::create(b, l, cst(b, l, 0.0, a[0]), a[0]);
      });
  patterns.add<UnaryLowering<ExpOp>>(
      ctx, [](OpBuilder &b, Location l, Args a, ExpOp) -> Value {
        return math::ExpOp::create(b, l, a[0]);
      });
  patterns.add<UnaryLowering<LogOp>>(
      ctx, [](OpBuilder &b, Location l, Args a, LogOp) -> Value {
        return math::LogOp::create(b, l, a[0]);
      });
  patterns.add<UnaryLowering<SqrtOp>>(
      ctx, [](OpBuilder &b, Location l, Args a, SqrtOp) -> Value {
        return math::SqrtOp::create(b, l, a[0]);
      });
  patterns.add<UnaryLowering<ErfOp>>(
      ctx, [](OpBuilder &b, Location l, Args a, ErfOp) -> Value {
        return math::ErfOp::create(b, l, a[0]);
      });
  patterns.add<UnaryLowering<TanhOp>>(
      ctx, [](OpBuilder &b, Location l, Args a, TanhOp) -> Value {
        return math::TanhOp::create(b, l, a[0]);
      });
  // Not approximated (see cleave-approximate-math): libm's sinf and cosf
  // reduce large arguments exactly.
  patterns.add<UnaryLowering<SinOp>>(
      ctx, [](OpBuilder &b, Location l, Args a, SinOp) -> Value {
        return math::SinOp::create(b, l, a[0]);
      });
  patterns.add<UnaryLowering<CosOp>>(
      ctx, [](OpBuilder &b, Location l, Args a, CosOp) -> Value {
        return math::CosOp::create(b, l, a[0]);
      });
  patterns.add<UnaryLowering<FloorOp>>(
      ctx, [](OpBuilder &b, Location l, Args a, FloorOp) -> Value {
        return math::FloorOp::create(b, l, a[0]);
      });
  patterns.add<UnaryLowering<CeilOp>>(
      ctx, [](OpBuilder &b, Location l, Args a, CeilOp) -> Value {
        return math::CeilOp::create(b, l, a[0]);
      });
  // Halves to even; math.round rounds them away from zero.
  patterns.add<UnaryLowering<RoundOp>>(
      ctx, [](OpBuilder &b, Location l, Args a, RoundOp) -> Value {
        return math::RoundEvenOp::create(b, l, a[0]);
      });
  patterns.add<UnaryLowering<ReluOp>>(
      ctx, [](OpBuilder &b, Location l, Args a, ReluOp) -> Value {
        return arith::MaximumFOp::create(b, l, a[0], cst(b, l, 0.0, a[0]));
      });
  patterns.add<UnaryLowering<SigmoidOp>>(
      ctx, [](OpBuilder &b, Location l, Args a, SigmoidOp) -> Value {
        Value one = cst(b, l, 1.0, a[0]);
        Value e = math::ExpOp::create(b, l, arith::NegFOp::create(b, l, a[0]));
        return arith::DivFOp::create(b, l, one,
                                     arith::AddFOp::create(b, l, one, e));
      });
  patterns.add<UnaryLowering<PowOp>>(
      ctx, [](OpBuilder &b, Location l, Args a, PowOp op) -> Value {
        double c = op.getExponent().convertToDouble();
        if (c == 1.0)
          return a[0];
        if (c == 2.0)
          return arith::MulFOp::create(b, l, a[0], a[0]);
        if (c == 0.5)
          return math::SqrtOp::create(b, l, a[0]);
        if (c == -0.5)
          return math::RsqrtOp::create(b, l, a[0]);
        return math::PowFOp::create(b, l, a[0], cst(b, l, c, a[0]));
      });
  patterns.add<UnaryLowering<LeakyReluOp>>(
      ctx, [](OpBuilder &b, Location l, Args a, LeakyReluOp op) -> Value {
        Value x = a[0];
        Value scaled = arith::MulFOp::create(
            b, l, x, cst(b, l, op.getAlpha().convertToDouble(), x));
        return select(b, l, arith::CmpFPredicate::OGE, x, cst(b, l, 0.0, x),
                      x, scaled);
      });
  patterns.add<UnaryLowering<ClampOp>>(
      ctx, [](OpBuilder &b, Location l, Args a, ClampOp op) -> Value {
        // Selects rather than minimumf/maximumf: NaN passes through either
        // way, and infinite bounds need no special case.
        Value x = a[0];
        Value lo = cst(b, l, op.getMin().convertToDouble(), x);
        Value hi = cst(b, l, op.getMax().convertToDouble(), x);
        Value above = select(b, l, arith::CmpFPredicate::OGT, x, hi, hi, x);
        return select(b, l, arith::CmpFPredicate::OLT, x, lo, lo, above);
      });
  patterns.add<UnaryLowering<GeluOp>>(
      ctx, [](OpBuilder &b, Location l, Args a, GeluOp op) -> Value {
        return gelu(b, l, a[0], op.getApproximate());
      });

  patterns.add<UnaryLowering<WhereOp>>(
      ctx, [](OpBuilder &b, Location l, Args a, WhereOp) -> Value {
        Value c = a[0];
        Value zero = cst(b, l, 0.0, c);
        Value holds =
            isa<FloatType>(c.getType())
                ? arith::CmpFOp::create(b, l, arith::CmpFPredicate::UNE, c,
                                        zero)
                      .getResult()
                : arith::CmpIOp::create(b, l, arith::CmpIPredicate::ne, c, zero)
                      .getResult();
        return arith::SelectOp::create(b, l, holds, a[1], a[2]);
      });

  // Gradients: operands are (grad, input).
  patterns.add<UnaryLowering<ReluGradOp>>(
      ctx, [](OpBuilder &b, Location l, Args a, ReluGradOp) -> Value {
        return select(b, l, arith::CmpFPredicate::OGT, a[1],
                      cst(b, l, 0.0, a[1]), a[0], cst(b, l, 0.0, a[0]));
      });
  patterns.add<UnaryLowering<LeakyReluGradOp>>(
      ctx, [](OpBuilder &b, Location l, Args a, LeakyReluGradOp op) -> Value {
        Value scaled = arith::MulFOp::create(
            b, l, a[0], cst(b, l, op.getAlpha().convertToDouble(), a[0]));
        return select(b, l, arith::CmpFPredicate::OGT, a[1],
                      cst(b, l, 0.0, a[1]), a[0], scaled);
      });
  patterns.add<UnaryLowering<ClampGradOp>>(
      ctx, [](OpBuilder &b, Location l, Args a, ClampGradOp op) -> Value {
        // Zero at the bounds, as nn.clamp documents.
        Value x = a[1], zero = cst(b, l, 0.0, a[0]);
        Value lo = cst(b, l, op.getMin().convertToDouble(), x);
        Value hi = cst(b, l, op.getMax().convertToDouble(), x);
        Value inside =
            select(b, l, arith::CmpFPredicate::OLT, x, hi, a[0], zero);
        return select(b, l, arith::CmpFPredicate::OGT, x, lo, inside, zero);
      });
  patterns.add<UnaryLowering<GeluGradOp>>(
      ctx, [](OpBuilder &b, Location l, Args a, GeluGradOp op) -> Value {
        return arith::MulFOp::create(
            b, l, a[0], geluDerivative(b, l, a[1], op.getApproximate()));
      });
}
