//===- NNGradients.cpp - Vector-Jacobian products of the nn ops -----------===//
//
// Each differentiable op builds the cotangents of its operands from nn ops.
// Forward values (operands and results) are reused, not recomputed, except
// for normalisation statistics, which are cheap to rebuild and would
// otherwise need extra results.
//
//===----------------------------------------------------------------------===//

#include "dialects/NN/IR/NNBuilders.h"
#include "dialects/NN/IR/NNOps.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/Sequence.h"
#include <cmath>

using namespace mlir;
using namespace mlir::cleave::nn;

static ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

/// Fills `grads` for a single-operand op whose cotangent is `g`.
static LogicalResult single(SmallVectorImpl<Value> &grads, ArrayRef<bool> needed,
                            function_ref<Value()> g) {
  grads.push_back(needed[0] ? g() : Value());
  return success();
}

//===----------------------------------------------------------------------===//
// Elementwise binary
//===----------------------------------------------------------------------===//

LogicalResult AddOp::buildVJP(OpBuilder &b, ValueRange dys,
                              ArrayRef<bool> needed,
                              SmallVectorImpl<Value> &grads) {
  Location loc = getLoc();
  Value dy = dys[0];
  grads.push_back(needed[0] ? sumToShape(b, loc, dy, shapeOf(getLhs()))
                            : Value());
  grads.push_back(needed[1] ? sumToShape(b, loc, dy, shapeOf(getRhs()))
                            : Value());
  return success();
}

LogicalResult SubOp::buildVJP(OpBuilder &b, ValueRange dys,
                              ArrayRef<bool> needed,
                              SmallVectorImpl<Value> &grads) {
  Location loc = getLoc();
  Value dy = dys[0];
  grads.push_back(needed[0] ? sumToShape(b, loc, dy, shapeOf(getLhs()))
                            : Value());
  grads.push_back(needed[1] ? sumToShape(b, loc, NegOp::create(b, loc, dy),
                                         shapeOf(getRhs()))
                            : Value());
  return success();
}

LogicalResult MulOp::buildVJP(OpBuilder &b, ValueRange dys,
                              ArrayRef<bool> needed,
                              SmallVectorImpl<Value> &grads) {
  Location loc = getLoc();
  Value dy = dys[0];
  grads.push_back(needed[0] ? sumToShape(b, loc, MulOp::create(b, loc, dy, getRhs()),
                                         shapeOf(getLhs()))
                            : Value());
  grads.push_back(needed[1] ? sumToShape(b, loc, MulOp::create(b, loc, dy, getLhs()),
                                         shapeOf(getRhs()))
                            : Value());
  return success();
}

LogicalResult DivOp::buildVJP(OpBuilder &b, ValueRange dys,
                              ArrayRef<bool> needed,
                              SmallVectorImpl<Value> &grads) {
  Location loc = getLoc();
  Value dy = dys[0];
  grads.push_back(needed[0] ? sumToShape(b, loc, DivOp::create(b, loc, dy, getRhs()),
                                         shapeOf(getLhs()))
                            : Value());
  if (needed[1]) {
    // d(a/b)/db = -(a/b)/b.
    Value q = DivOp::create(b, loc, MulOp::create(b, loc, dy, getResult()),
                            getRhs());
    grads.push_back(sumToShape(b, loc, NegOp::create(b, loc, q),
                               shapeOf(getRhs())));
  } else {
    grads.push_back(Value());
  }
  return success();
}

/// The cotangents of max(lhs, rhs) (`larger` = lhs - rhs) or of
/// min(lhs, rhs) (`larger` = rhs - lhs): the cotangent reaches lhs where
/// `larger` is positive (relu_grad), rhs elsewhere. For finite floats
/// `a - b > 0` exactly when `a > b`.
static void selectedVJP(OpBuilder &b, Location loc, Value dy, Value lhs,
                        Value rhs, Value larger, ArrayRef<bool> needed,
                        SmallVectorImpl<Value> &grads) {
  Value toLhs = ReluGradOp::create(b, loc, dy, larger);
  grads.push_back(needed[0] ? sumToShape(b, loc, toLhs, shapeOf(lhs))
                            : Value());
  grads.push_back(
      needed[1]
          ? sumToShape(b, loc, SubOp::create(b, loc, dy, toLhs), shapeOf(rhs))
          : Value());
}

LogicalResult MaximumOp::buildVJP(OpBuilder &b, ValueRange dys,
                                  ArrayRef<bool> needed,
                                  SmallVectorImpl<Value> &grads) {
  Location loc = getLoc();
  selectedVJP(b, loc, dys[0], getLhs(), getRhs(),
              SubOp::create(b, loc, getLhs(), getRhs()), needed, grads);
  return success();
}

LogicalResult MinimumOp::buildVJP(OpBuilder &b, ValueRange dys,
                                  ArrayRef<bool> needed,
                                  SmallVectorImpl<Value> &grads) {
  Location loc = getLoc();
  selectedVJP(b, loc, dys[0], getLhs(), getRhs(),
              SubOp::create(b, loc, getRhs(), getLhs()), needed, grads);
  return success();
}

LogicalResult PowFOp::buildVJP(OpBuilder &b, ValueRange dys,
                               ArrayRef<bool> needed,
                               SmallVectorImpl<Value> &grads) {
  Location loc = getLoc();
  Value dy = dys[0], x = getLhs(), y = getRhs();
  Type elt = getType().getElementType();
  Value zero = splat(b, loc, 0.0, elt);
  auto compareToZero = [&](ComparePredicate pred, Value v) {
    return CompareOp::create(b, loc, pred, v, zero, elt);
  };
  if (needed[0]) {
    // y * x^(y-1): a power of x, not y * x^y / x, so that x = 0 and a
    // negative x with an integral y work; 0 where y = 0 (see nn.powf).
    Value ym1 = SubOp::create(b, loc, y, splat(b, loc, 1.0, elt));
    Value d = MulOp::create(
        b, loc, dy, MulOp::create(b, loc, y, PowFOp::create(b, loc, x, ym1)));
    d = WhereOp::create(b, loc, compareToZero(ComparePredicate::eq, y), zero,
                        d);
    grads.push_back(sumToShape(b, loc, d, shapeOf(x)));
  } else {
    grads.push_back(Value());
  }
  if (needed[1]) {
    // log(x) * x^y; 0 where x = 0 and y >= 0 (see nn.powf).
    Value d = MulOp::create(
        b, loc, dy,
        MulOp::create(b, loc, LogOp::create(b, loc, x), getResult()));
    Value zeroBase = compareToZero(ComparePredicate::eq, x);
    Value nonNegative = compareToZero(ComparePredicate::ge, y);
    Value atZero = MulOp::create(b, loc, zeroBase, nonNegative);
    d = WhereOp::create(b, loc, atZero, zero, d);
    grads.push_back(sumToShape(b, loc, d, shapeOf(y)));
  } else {
    grads.push_back(Value());
  }
  return success();
}

/// Only a float-to-float cast has a gradient; cleave-autodiff treats the
/// result of any other as a constant, so it never asks for one.
bool CastOp::isDifferentiableOperand(unsigned) { return isFloatToFloat(); }

LogicalResult CastOp::buildVJP(OpBuilder &b, ValueRange dys,
                               ArrayRef<bool> needed,
                               SmallVectorImpl<Value> &grads) {
  if (needed[0] && !isFloatToFloat())
    return emitOpError("a cast from or to an integer type has no gradient");
  return single(grads, needed, [&]() -> Value {
    return CastOp::create(b, getLoc(), dys[0],
                          getInput().getType().getElementType());
  });
}

LogicalResult WhereOp::buildVJP(OpBuilder &b, ValueRange dys,
                                ArrayRef<bool> needed,
                                SmallVectorImpl<Value> &grads) {
  Location loc = getLoc();
  Value dy = dys[0];
  Value zero = splat(b, loc, 0.0, getType().getElementType());
  grads.push_back(Value());
  grads.push_back(
      needed[1] ? sumToShape(b, loc,
                             WhereOp::create(b, loc, getCondition(), dy, zero),
                             shapeOf(getLhs()))
                : Value());
  grads.push_back(
      needed[2] ? sumToShape(b, loc,
                             WhereOp::create(b, loc, getCondition(), zero, dy),
                             shapeOf(getRhs()))
                : Value());
  return success();
}

//===----------------------------------------------------------------------===//
// Elementwise unary
//===----------------------------------------------------------------------===//

LogicalResult NegOp::buildVJP(OpBuilder &b, ValueRange dys,
                              ArrayRef<bool> needed,
                              SmallVectorImpl<Value> &grads) {
  return single(grads, needed,
                [&]() -> Value { return NegOp::create(b, getLoc(), dys[0]); });
}

LogicalResult ExpOp::buildVJP(OpBuilder &b, ValueRange dys,
                              ArrayRef<bool> needed,
                              SmallVectorImpl<Value> &grads) {
  return single(grads, needed, [&]() -> Value {
    return MulOp::create(b, getLoc(), dys[0], getResult());
  });
}

LogicalResult LogOp::buildVJP(OpBuilder &b, ValueRange dys,
                              ArrayRef<bool> needed,
                              SmallVectorImpl<Value> &grads) {
  return single(grads, needed, [&]() -> Value {
    return DivOp::create(b, getLoc(), dys[0], getInput());
  });
}

LogicalResult SqrtOp::buildVJP(OpBuilder &b, ValueRange dys,
                               ArrayRef<bool> needed,
                               SmallVectorImpl<Value> &grads) {
  return single(grads, needed, [&]() -> Value {
    Location loc = getLoc();
    Value half = splat(b, loc, 0.5, getType().getElementType());
    return DivOp::create(b, loc, MulOp::create(b, loc, dys[0], half),
                         getResult());
  });
}

LogicalResult ErfOp::buildVJP(OpBuilder &b, ValueRange dys,
                              ArrayRef<bool> needed,
                              SmallVectorImpl<Value> &grads) {
  return single(grads, needed, [&]() -> Value {
    // d erf(x)/dx = 2/sqrt(pi) * exp(-x^2).
    Location loc = getLoc();
    Type elt = getType().getElementType();
    Value x2 = MulOp::create(b, loc, getInput(), getInput());
    Value e = ExpOp::create(b, loc, NegOp::create(b, loc, x2));
    Value c = splat(b, loc, 2.0 / std::sqrt(M_PI), elt);
    return MulOp::create(b, loc, dys[0], MulOp::create(b, loc, e, c));
  });
}

LogicalResult ReluOp::buildVJP(OpBuilder &b, ValueRange dys,
                               ArrayRef<bool> needed,
                               SmallVectorImpl<Value> &grads) {
  return single(grads, needed, [&]() -> Value {
    return ReluGradOp::create(b, getLoc(), dys[0], getInput());
  });
}

LogicalResult LeakyReluOp::buildVJP(OpBuilder &b, ValueRange dys,
                                    ArrayRef<bool> needed,
                                    SmallVectorImpl<Value> &grads) {
  return single(grads, needed, [&]() -> Value {
    return LeakyReluGradOp::create(b, getLoc(), dys[0], getInput(),
                                   getAlphaAttr());
  });
}

LogicalResult ClampOp::buildVJP(OpBuilder &b, ValueRange dys,
                                ArrayRef<bool> needed,
                                SmallVectorImpl<Value> &grads) {
  return single(grads, needed, [&]() -> Value {
    return ClampGradOp::create(b, getLoc(), dys[0], getInput(), getMinAttr(),
                               getMaxAttr());
  });
}

LogicalResult GeluOp::buildVJP(OpBuilder &b, ValueRange dys,
                               ArrayRef<bool> needed,
                               SmallVectorImpl<Value> &grads) {
  return single(grads, needed, [&]() -> Value {
    return GeluGradOp::create(b, getLoc(), dys[0], getInput(),
                              getApproximateAttr());
  });
}

LogicalResult SigmoidOp::buildVJP(OpBuilder &b, ValueRange dys,
                                  ArrayRef<bool> needed,
                                  SmallVectorImpl<Value> &grads) {
  return single(grads, needed, [&]() -> Value {
    // y * (1 - y).
    Location loc = getLoc();
    Value one = splat(b, loc, 1.0, getType().getElementType());
    Value d = MulOp::create(b, loc, getResult(),
                            SubOp::create(b, loc, one, getResult()));
    return MulOp::create(b, loc, dys[0], d);
  });
}

LogicalResult TanhOp::buildVJP(OpBuilder &b, ValueRange dys,
                               ArrayRef<bool> needed,
                               SmallVectorImpl<Value> &grads) {
  return single(grads, needed, [&]() -> Value {
    // 1 - y^2.
    Location loc = getLoc();
    Value one = splat(b, loc, 1.0, getType().getElementType());
    Value y2 = MulOp::create(b, loc, getResult(), getResult());
    return MulOp::create(b, loc, dys[0], SubOp::create(b, loc, one, y2));
  });
}

LogicalResult SinOp::buildVJP(OpBuilder &b, ValueRange dys,
                              ArrayRef<bool> needed,
                              SmallVectorImpl<Value> &grads) {
  return single(grads, needed, [&]() -> Value {
    Location loc = getLoc();
    return MulOp::create(b, loc, dys[0], CosOp::create(b, loc, getInput()));
  });
}

LogicalResult CosOp::buildVJP(OpBuilder &b, ValueRange dys,
                              ArrayRef<bool> needed,
                              SmallVectorImpl<Value> &grads) {
  return single(grads, needed, [&]() -> Value {
    Location loc = getLoc();
    return NegOp::create(
        b, loc,
        MulOp::create(b, loc, dys[0], SinOp::create(b, loc, getInput())));
  });
}

LogicalResult PowOp::buildVJP(OpBuilder &b, ValueRange dys,
                              ArrayRef<bool> needed,
                              SmallVectorImpl<Value> &grads) {
  return single(grads, needed, [&]() -> Value {
    // c * x^(c-1).
    Location loc = getLoc();
    double c = getExponent().convertToDouble();
    Value coef = splat(b, loc, c, getType().getElementType());
    Value d = c == 2.0 ? getInput()
                       : Value(PowOp::create(b, loc, getInput(),
                                             b.getF64FloatAttr(c - 1.0)));
    return MulOp::create(b, loc, dys[0], MulOp::create(b, loc, coef, d));
  });
}

//===----------------------------------------------------------------------===//
// Matrix products
//===----------------------------------------------------------------------===//

/// Collapses every dimension but the last into one: [..., n] -> [-1, n].
static Value flattenRows(OpBuilder &b, Location loc, Value v) {
  ArrayRef<int64_t> s = shapeOf(v);
  if (s.size() == 2)
    return v;
  return ReshapeOp::create(b, loc, v, ArrayRef<int64_t>{-1, s.back()});
}

LogicalResult MatmulOp::buildVJP(OpBuilder &b, ValueRange dys,
                                 ArrayRef<bool> needed,
                                 SmallVectorImpl<Value> &grads) {
  Location loc = getLoc();
  Value dc = dys[0], a = getLhs(), bm = getRhs();
  bool ta = getTransposeA(), tb = getTransposeB();
  int64_t ar = shapeOf(a).size(), br = shapeOf(bm).size();
  // dA = dC op(B)^T, laid out as A is.
  if (needed[0]) {
    if (!ta) {
      grads.push_back(MatmulOp::create(b, loc, dc, bm, false, !tb));
    } else if (br == 2 && ar > 2) {
      // A shared rhs cannot be the lhs of a batched product: transpose
      // dC op(B)^T into A's layout instead.
      SmallVector<int64_t> perm;
      for (int64_t d = 0; d < ar; ++d)
        perm.push_back(d);
      std::swap(perm[ar - 2], perm[ar - 1]);
      grads.push_back(TransposeOp::create(
          b, loc, MatmulOp::create(b, loc, dc, bm, false, !tb), perm));
    } else {
      grads.push_back(MatmulOp::create(b, loc, bm, dc, tb, true));
    }
  } else {
    grads.push_back(Value());
  }
  if (!needed[1]) {
    grads.push_back(Value());
    return success();
  }
  if (br == 2 && ar > 2 && !ta) {
    // A shared matrix: fold the batch into the rows of one GEMM.
    Value af = flattenRows(b, loc, a), dcf = flattenRows(b, loc, dc);
    grads.push_back(tb ? MatmulOp::create(b, loc, dcf, af, true, false)
                       : MatmulOp::create(b, loc, af, dcf, true, false));
    return success();
  }
  Value db = tb ? MatmulOp::create(b, loc, dc, a, true, ta)
                : MatmulOp::create(b, loc, a, dc, !ta, false);
  grads.push_back(sumToShape(b, loc, db, shapeOf(bm)));
  return success();
}

LogicalResult LinearOp::buildVJP(OpBuilder &b, ValueRange dys,
                                 ArrayRef<bool> needed,
                                 SmallVectorImpl<Value> &grads) {
  Location loc = getLoc();
  Value dy = dys[0];
  // dx = dy W: [..., out] x [out, in]. A single sample ([out], which
  // matmul does not take) goes through as one row.
  if (needed[0]) {
    Value rows = shapeOf(dy).size() == 1 ? flattenRows(b, loc, dy) : dy;
    grads.push_back(reshapeTo(
        b, loc, MatmulOp::create(b, loc, rows, getWeight(), false, false),
        shapeOf(getInput())));
  } else {
    grads.push_back(Value());
  }
  // dW = dy^T x over all rows: [out, rows] x [rows, in].
  grads.push_back(needed[1]
                      ? MatmulOp::create(b, loc, flattenRows(b, loc, dy),
                                         flattenRows(b, loc, getInput()), true,
                                         false)
                      : Value());
  if (getBias())
    grads.push_back(needed.size() > 2 && needed[2]
                        ? sumToShape(b, loc, dy, shapeOf(getBias()))
                        : Value());
  return success();
}

//===----------------------------------------------------------------------===//
// Shape ops
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::buildVJP(OpBuilder &b, ValueRange dys,
                                  ArrayRef<bool> needed,
                                  SmallVectorImpl<Value> &grads) {
  return single(grads, needed, [&]() -> Value {
    return reshapeTo(b, getLoc(), dys[0], shapeOf(getInput()));
  });
}

LogicalResult FlattenOp::buildVJP(OpBuilder &b, ValueRange dys,
                                  ArrayRef<bool> needed,
                                  SmallVectorImpl<Value> &grads) {
  return single(grads, needed, [&]() -> Value {
    return reshapeTo(b, getLoc(), dys[0], shapeOf(getInput()));
  });
}

LogicalResult TransposeOp::buildVJP(OpBuilder &b, ValueRange dys,
                                    ArrayRef<bool> needed,
                                    SmallVectorImpl<Value> &grads) {
  return single(grads, needed, [&]() -> Value {
    ArrayRef<int64_t> perm = getPermutation();
    SmallVector<int64_t> inverse(perm.size());
    for (auto [i, p] : llvm::enumerate(perm))
      inverse[p] = i;
    return TransposeOp::create(b, getLoc(), dys[0], inverse);
  });
}

LogicalResult ConcatOp::buildVJP(OpBuilder &b, ValueRange dys,
                                 ArrayRef<bool> needed,
                                 SmallVectorImpl<Value> &grads) {
  Location loc = getLoc();
  auto outType = cast<RankedTensorType>(getType());
  int64_t axis = *normalizeAxis(getAxis(), outType.getRank());
  int64_t offset = 0;
  for (auto [i, in] : llvm::enumerate(getInputs())) {
    ArrayRef<int64_t> s = shapeOf(in);
    if (ShapedType::isDynamic(s[axis]) || !cast<RankedTensorType>(in.getType())
                                               .hasStaticShape())
      return emitOpError("gradient needs static shapes");
    if (needed[i]) {
      SmallVector<int64_t> starts(s.size(), 0), strides(s.size(), 1);
      starts[axis] = offset;
      grads.push_back(SliceOp::create(b, loc, dys[0], starts, s, strides));
    } else {
      grads.push_back(Value());
    }
    offset += s[axis];
  }
  return success();
}

LogicalResult SliceOp::buildVJP(OpBuilder &b, ValueRange dys,
                                ArrayRef<bool> needed,
                                SmallVectorImpl<Value> &grads) {
  if (!getInput().getType().hasStaticShape())
    return emitOpError("gradient needs a static input shape");
  return single(grads, needed, [&]() -> Value {
    return PadOp::create(b, getLoc(), dys[0], getStarts(), getStrides(),
                         shapeOf(getInput()));
  });
}

LogicalResult PadOp::buildVJP(OpBuilder &b, ValueRange dys,
                              ArrayRef<bool> needed,
                              SmallVectorImpl<Value> &grads) {
  if (!getInput().getType().hasStaticShape())
    return emitOpError("gradient needs a static input shape");
  return single(grads, needed, [&]() -> Value {
    return SliceOp::create(b, getLoc(), dys[0], getStarts(),
                           shapeOf(getInput()), getStrides());
  });
}

LogicalResult BroadcastToOp::buildVJP(OpBuilder &b, ValueRange dys,
                                      ArrayRef<bool> needed,
                                      SmallVectorImpl<Value> &grads) {
  (void)single(grads, needed, [&]() -> Value {
    return sumToShape(b, getLoc(), dys[0], shapeOf(getInput()));
  });
  if (getBatchSource())
    grads.push_back(Value());
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

LogicalResult ReduceSumOp::buildVJP(OpBuilder &b, ValueRange dys,
                                    ArrayRef<bool> needed,
                                    SmallVectorImpl<Value> &grads) {
  return single(grads, needed, [&]() -> Value {
    return unreduce(b, getLoc(), dys[0], getReducedAxes(), shapeOf(getInput()));
  });
}

LogicalResult ReduceMeanOp::buildVJP(OpBuilder &b, ValueRange dys,
                                     ArrayRef<bool> needed,
                                     SmallVectorImpl<Value> &grads) {
  auto count = reducedCount(shapeOf(getInput()), getReducedAxes());
  if (failed(count))
    return emitOpError("gradient needs static reduced dimensions");
  return single(grads, needed, [&]() -> Value {
    Location loc = getLoc();
    Value scale = splat(b, loc, 1.0 / *count,
                        getInput().getType().getElementType());
    Value g = unreduce(b, loc, dys[0], getReducedAxes(), shapeOf(getInput()));
    return MulOp::create(b, loc, g, scale);
  });
}

LogicalResult ReduceMaxOp::buildVJP(OpBuilder &b, ValueRange dys,
                                    ArrayRef<bool> needed,
                                    SmallVectorImpl<Value> &grads) {
  return single(grads, needed, [&]() -> Value {
    return ReduceMaxGradOp::create(b, getLoc(), dys[0], getInput(), getAxes(),
                                   getKeepdims());
  });
}

//===----------------------------------------------------------------------===//
// Softmax and losses
//===----------------------------------------------------------------------===//

LogicalResult SoftmaxOp::buildVJP(OpBuilder &b, ValueRange dys,
                                  ArrayRef<bool> needed,
                                  SmallVectorImpl<Value> &grads) {
  return single(grads, needed, [&]() -> Value {
    // y * (dy - sum(dy * y)).
    Location loc = getLoc();
    int64_t axis = *normalizeAxis(getAxis(), getType().getRank());
    Value s = ReduceSumOp::create(b, loc, MulOp::create(b, loc, dys[0],
                                                        getResult()),
                                  ArrayRef<int64_t>{axis}, true);
    return MulOp::create(b, loc, getResult(),
                         SubOp::create(b, loc, dys[0], s));
  });
}

LogicalResult AttentionOp::buildVJP(OpBuilder &b, ValueRange dys,
                                    ArrayRef<bool> needed,
                                    SmallVectorImpl<Value> &grads) {
  // FlashAttention's backward pass: P is recomputed from the operands rather
  // than held, and softmax's row sums use rowsum(dO * O), which equals
  // rowsum(dP * P) and needs no T x S product. With dropout (mask M, kept
  // entries scaled by 1 / (1 - ratio)), K = dropout(P) and O = K V:
  //   dV = K^T dO,  dP = dropout(dO V^T),  dS = P * (dP - rowsum(dO * O)),
  //   dQ = scale dS K,  dK = scale dS^T Q,  dMask = dS (summed to its shape).
  // The identity still holds: rowsum(dP * P) = sum_j P_ij M_ij / (1 - ratio)
  // (dO V^T)_ij = rowsum(dO * (K V)) = rowsum(dO * O).
  Location loc = getLoc();
  Value dO = dys[0];
  int64_t rank = getType().getRank();
  AttentionParts parts = decomposeAttention(b, *this, /*withResult=*/false);
  Value probs = parts.probs;
  size_t base = grads.size();
  grads.resize(base + getNumOperands());
  auto grad = [&](unsigned i, function_ref<Value()> g) {
    if (needed[i])
      grads[base + i] = g();
  };
  grad(2,
       [&] { return MatmulOp::create(b, loc, parts.kept, dO, true, false); });
  if (!needed[0] && !needed[1] && !(getMask() && needed[3]))
    return success();
  Value dP = MatmulOp::create(b, loc, dO, getValue(), false, true);
  if (Value seed = getSeed())
    dP = DropoutOp::create(b, loc, dP, seed, getDropoutRatioAttr(),
                           getDropoutStreamAttr());
  Value rowSums =
      ReduceSumOp::create(b, loc, MulOp::create(b, loc, dO, getResult()),
                          ArrayRef<int64_t>{rank - 1}, true);
  Value dS = MulOp::create(b, loc, probs, SubOp::create(b, loc, dP, rowSums));
  if (getMask())
    grad(3, [&] { return sumToShape(b, loc, dS, shapeOf(getMask())); });
  // The cotangent of query @ key^T.
  Value dZ = dS;
  if (std::optional<double> scale = getScaleValue()) {
    Value c = splat(b, loc, *scale, getType().getElementType());
    dZ = getScaleIsDivisor() ? Value(DivOp::create(b, loc, dS, c))
                             : Value(MulOp::create(b, loc, dS, c));
  }
  grad(0, [&] { return MatmulOp::create(b, loc, dZ, getKey(), false, false); });
  grad(1,
       [&] { return MatmulOp::create(b, loc, dZ, getQuery(), true, false); });
  return success();
}

LogicalResult FusedAttentionOp::buildVJP(OpBuilder &b, ValueRange dys,
                                         ArrayRef<bool> needed,
                                         SmallVectorImpl<Value> &grads) {
  // One kernel for all three cotangents, from the statistics the forward
  // kernel kept (attention.md); the log-sum-exp itself has none.
  size_t base = grads.size();
  grads.resize(base + getNumOperands());
  if (!dys[0] || !(needed[0] || needed[1] || needed[2]))
    return success();
  auto grad = FusedAttentionGradOp::create(
      b, getLoc(), getQuery(), getKey(), getValue(), getResult(), getLse(),
      dys[0], getMask(), getKeep(), getScaleAttr(), getScaleIsDivisorAttr(),
      getCausalAttr(), getDropoutRatioAttr());
  for (unsigned i = 0; i < 3; ++i)
    if (needed[i])
      grads[base + i] = grad->getResult(i);
  return success();
}

LogicalResult LogSoftmaxOp::buildVJP(OpBuilder &b, ValueRange dys,
                                     ArrayRef<bool> needed,
                                     SmallVectorImpl<Value> &grads) {
  return single(grads, needed, [&]() -> Value {
    // dy - exp(y) * sum(dy).
    Location loc = getLoc();
    int64_t axis = *normalizeAxis(getAxis(), getType().getRank());
    Value s = ReduceSumOp::create(b, loc, dys[0], ArrayRef<int64_t>{axis}, true);
    Value p = ExpOp::create(b, loc, getResult());
    return SubOp::create(b, loc, dys[0], MulOp::create(b, loc, p, s));
  });
}

/// Scales per-sample loss derivatives `d` ([B, ...]) by the loss cotangent
/// `dy`, according to how the loss was reduced.
static Value scaleBySampleCotangent(OpBuilder &b, Location loc, Value d,
                                    Value dy, Reduction reduction,
                                    double meanCount) {
  auto dt = cast<RankedTensorType>(d.getType());
  if (reduction == Reduction::none) {
    SmallVector<int64_t> s(dt.getRank(), 1);
    s[0] = dt.getDimSize(0);
    return MulOp::create(b, loc, d, reshapeTo(b, loc, dy, s));
  }
  Value scaled = MulOp::create(b, loc, d, dy);
  if (reduction == Reduction::mean)
    scaled = MulOp::create(
        b, loc, scaled, splat(b, loc, 1.0 / meanCount, dt.getElementType()));
  return scaled;
}

LogicalResult CrossEntropyOp::buildVJP(OpBuilder &b, ValueRange dys,
                                       ArrayRef<bool> needed,
                                       SmallVectorImpl<Value> &grads) {
  if (!needed[0]) {
    grads.append({Value(), Value()});
    return success();
  }
  Location loc = getLoc();
  auto lt = cast<RankedTensorType>(getLogits().getType());
  if (!lt.hasStaticShape())
    return emitOpError("gradient needs static logits");
  // softmax(x) - onehot(labels), per sample.
  Value p = SoftmaxOp::create(b, loc, getLogits(), b.getI64IntegerAttr(1));
  Value oh = OneHotOp::create(b, loc, getLabels(), lt.getDimSize(1),
                              cast<FloatType>(lt.getElementType()));
  Value d = SubOp::create(b, loc, p, oh);
  grads.append({scaleBySampleCotangent(b, loc, d, dys[0], getReduction(),
                                       lt.getDimSize(0)),
                Value()});
  return success();
}

LogicalResult MseLossOp::buildVJP(OpBuilder &b, ValueRange dys,
                                  ArrayRef<bool> needed,
                                  SmallVectorImpl<Value> &grads) {
  Location loc = getLoc();
  auto xt = cast<RankedTensorType>(getInput().getType());
  if (!xt.hasStaticShape())
    return emitOpError("gradient needs static shapes");
  // Per sample l = mean((x - t)^2) over the D non-batch elements, so
  // dl/dx = 2 (x - t) / D. D is the product of the non-batch dimensions, not
  // the element count divided by the batch, which an empty batch makes 0.
  double perSample = *reducedCount(
      xt.getShape(), llvm::to_vector(llvm::seq<int64_t>(1, xt.getRank())));
  Value diff = SubOp::create(b, loc, getInput(), getTarget());
  Value d = MulOp::create(b, loc, diff,
                          splat(b, loc, 2.0 / perSample, xt.getElementType()));
  Value g = scaleBySampleCotangent(b, loc, d, dys[0], getReduction(),
                                   xt.getDimSize(0));
  grads.push_back(needed[0] ? g : Value());
  grads.push_back(needed[1] ? Value(NegOp::create(b, loc, g)) : Value());
  return success();
}

//===----------------------------------------------------------------------===//
// Convolution and pooling
//===----------------------------------------------------------------------===//

LogicalResult Conv2DOp::buildVJP(OpBuilder &b, ValueRange dys,
                                 ArrayRef<bool> needed,
                                 SmallVectorImpl<Value> &grads) {
  Location loc = getLoc();
  Value dy = dys[0];
  ArrayRef<int64_t> xs = shapeOf(getInput()), ws = shapeOf(getWeight());
  grads.push_back(needed[0]
                      ? Value(Conv2DGradInputOp::create(
                            b, loc, dy, getWeight(), xs.drop_front(2),
                            getStrides(), getPadding(), getDilations(),
                            getGroups()))
                      : Value());
  grads.push_back(needed[1]
                      ? Value(Conv2DGradWeightOp::create(
                            b, loc, dy, getInput(), ws.drop_front(2),
                            getStrides(), getPadding(), getDilations(),
                            getGroups()))
                      : Value());
  if (getBias())
    grads.push_back(needed[2] ? sumToShape(b, loc,
                                           ReduceSumOp::create(
                                               b, loc, dy,
                                               ArrayRef<int64_t>{0, 2, 3},
                                               false),
                                           shapeOf(getBias()))
                              : Value());
  return success();
}

LogicalResult Conv2DGradInputOp::buildVJP(OpBuilder &b, ValueRange dys,
                                          ArrayRef<bool> needed,
                                          SmallVectorImpl<Value> &grads) {
  // The op is the adjoint of x -> conv2d(x, w), linear in each operand:
  // <conv2d(a, w), g> = <a, conv2d_grad_input(g, w)>
  //                   = <w, conv2d_grad_weight(g, a)>,
  // so its own VJPs are the forward convolution of the cotangent and the
  // weight gradient with the roles of the two activations swapped.
  Location loc = getLoc();
  Value dy = dys[0];
  grads.push_back(needed[0] ? Value(Conv2DOp::create(
                                  b, loc, dy, getWeight(),
                                  /*bias=*/Value(), getStrides(), getPadding(),
                                  getDilations(), getGroups()))
                            : Value());
  grads.push_back(
      needed[1] ? Value(Conv2DGradWeightOp::create(
                      b, loc, getGrad(), dy, shapeOf(getWeight()).drop_front(2),
                      getStrides(), getPadding(), getDilations(), getGroups()))
                : Value());
  return success();
}

LogicalResult MaxPool2DOp::buildVJP(OpBuilder &b, ValueRange dys,
                                    ArrayRef<bool> needed,
                                    SmallVectorImpl<Value> &grads) {
  return single(grads, needed, [&]() -> Value {
    return MaxPool2DGradOp::create(b, getLoc(), dys[0], getInput(),
                                   getKernelSize(), getStrides(), getPadding(),
                                   getDilations(), getCeilMode());
  });
}

LogicalResult AvgPool2DOp::buildVJP(OpBuilder &b, ValueRange dys,
                                    ArrayRef<bool> needed,
                                    SmallVectorImpl<Value> &grads) {
  return single(grads, needed, [&]() -> Value {
    return AvgPool2DGradOp::create(
        b, getLoc(), dys[0], shapeOf(getInput()).drop_front(2),
        getKernelSize(), getStrides(), getPadding(), getDilations(),
        getCeilMode(), getCountIncludePad());
  });
}

LogicalResult GlobalAvgPoolOp::buildVJP(OpBuilder &b, ValueRange dys,
                                        ArrayRef<bool> needed,
                                        SmallVectorImpl<Value> &grads) {
  ArrayRef<int64_t> xs = shapeOf(getInput());
  SmallVector<int64_t> spatial;
  for (int64_t d = 2; d < (int64_t)xs.size(); ++d)
    spatial.push_back(d);
  auto count = reducedCount(xs, spatial);
  if (failed(count))
    return emitOpError("gradient needs static spatial dimensions");
  return single(grads, needed, [&]() -> Value {
    Location loc = getLoc();
    Value scale =
        splat(b, loc, 1.0 / *count, getInput().getType().getElementType());
    return MulOp::create(b, loc, BroadcastToOp::create(b, loc, dys[0], xs),
                         scale);
  });
}

//===----------------------------------------------------------------------===//
// Normalisation
//===----------------------------------------------------------------------===//

namespace {
/// The pieces of a normalisation VJP: statistics over `axes` (kept as size
/// 1), the normalised input and the inverse standard deviation.
struct Normalized {
  Value xhat, invstd;
};
} // namespace

static Normalized normalize(OpBuilder &b, Location loc, Value x,
                            ArrayRef<int64_t> axes, double eps) {
  Type elt = cast<RankedTensorType>(x.getType()).getElementType();
  Value mean = ReduceMeanOp::create(b, loc, x, axes, true);
  Value xc = SubOp::create(b, loc, x, mean);
  Value var =
      ReduceMeanOp::create(b, loc, MulOp::create(b, loc, xc, xc), axes, true);
  Value invstd =
      PowOp::create(b, loc, AddOp::create(b, loc, var, splat(b, loc, eps, elt)),
                    b.getF64FloatAttr(-0.5));
  return Normalized{MulOp::create(b, loc, xc, invstd), invstd};
}

/// dx of y = xhat * gamma + beta with batch statistics over `axes`, given
/// dxhat = dy * gamma: invstd * (dxhat - mean(dxhat) - xhat * mean(dxhat *
/// xhat)).
static Value normalizedInputGrad(OpBuilder &b, Location loc, Value dxhat,
                                 const Normalized &n, ArrayRef<int64_t> axes) {
  Value m1 = ReduceMeanOp::create(b, loc, dxhat, axes, true);
  Value m2 = ReduceMeanOp::create(b, loc, MulOp::create(b, loc, dxhat, n.xhat),
                                  axes, true);
  Value inner = SubOp::create(b, loc, SubOp::create(b, loc, dxhat, m1),
                              MulOp::create(b, loc, n.xhat, m2));
  return MulOp::create(b, loc, n.invstd, inner);
}

LogicalResult BatchNormOp::buildVJP(OpBuilder &b, ValueRange dys,
                                    ArrayRef<bool> needed,
                                    SmallVectorImpl<Value> &grads) {
  if (dys[1] || dys[2])
    return emitOpError("cannot differentiate through running statistics");
  Location loc = getLoc();
  auto xt = cast<RankedTensorType>(getInput().getType());
  if (!xt.hasStaticShape())
    return emitOpError("gradient needs a static input shape");
  Type elt = xt.getElementType();
  SmallVector<int64_t> axes, chanShape(xt.getRank(), 1);
  for (int64_t d = 0; d < xt.getRank(); ++d)
    if (d != 1)
      axes.push_back(d);
  chanShape[1] = xt.getDimSize(1);
  Value dy = dys[0];
  double eps = getEpsilon().convertToDouble();
  Value gamma = reshapeTo(b, loc, getScale(), chanShape);

  Normalized n;
  Value w = getTraining() ? getSampleWeights() : Value();
  if (w) {
    // Weighted statistics over the samples with weight 1 (padding has
    // weight 0 and its outputs are zero): see the op's description.
    SmallVector<int64_t> sampleShape(xt.getRank(), 1);
    sampleShape[0] = xt.getDimSize(0);
    Value wb = reshapeTo(b, loc, w, sampleShape);
    double perSample = 1;
    for (int64_t d = 2; d < xt.getRank(); ++d)
      perSample *= xt.getDimSize(d);
    Value count = MulOp::create(
        b, loc, ReduceSumOp::create(b, loc, w, ArrayRef<int64_t>{}, false),
        splat(b, loc, perSample, elt));
    auto weightedMean = [&](Value v) -> Value {
      return DivOp::create(
          b, loc,
          ReduceSumOp::create(b, loc, MulOp::create(b, loc, v, wb), axes, true),
          count);
    };
    Value xc = SubOp::create(b, loc, getInput(), weightedMean(getInput()));
    Value var = weightedMean(MulOp::create(b, loc, xc, xc));
    n.invstd = PowOp::create(
        b, loc, AddOp::create(b, loc, var, splat(b, loc, eps, elt)),
        b.getF64FloatAttr(-0.5));
    n.xhat = MulOp::create(b, loc, xc, n.invstd);
    // y = w * yhat, so the cotangent of yhat is w * dy; it is zero on
    // padding, which makes every sum below a sum over real samples.
    Value dyhat = MulOp::create(b, loc, dy, wb);
    Value g = MulOp::create(b, loc, dyhat, gamma);
    if (needed[0]) {
      auto weightedSum = [&](Value v) -> Value {
        return MulOp::create(
            b, loc, DivOp::create(b, loc, ReduceSumOp::create(b, loc, v, axes, true),
                                  count),
            wb);
      };
      Value inner = SubOp::create(
          b, loc, SubOp::create(b, loc, g, weightedSum(g)),
          MulOp::create(b, loc, n.xhat,
                        weightedSum(MulOp::create(b, loc, g, n.xhat))));
      grads.push_back(MulOp::create(b, loc, n.invstd, inner));
    } else {
      grads.push_back(Value());
    }
    grads.push_back(needed[1]
                        ? Value(ReduceSumOp::create(
                              b, loc, MulOp::create(b, loc, dyhat, n.xhat),
                              axes, false))
                        : Value());
    grads.push_back(needed[2]
                        ? Value(ReduceSumOp::create(b, loc, dyhat, axes, false))
                        : Value());
    grads.append({Value(), Value(), Value()});
    return success();
  }
  if (getTraining()) {
    n = normalize(b, loc, getInput(), axes, eps);
  } else {
    Value mean = reshapeTo(b, loc, getRunningMean(), chanShape);
    Value var = reshapeTo(b, loc, getRunningVar(), chanShape);
    n.invstd = PowOp::create(
        b, loc, AddOp::create(b, loc, var, splat(b, loc, eps, elt)),
        b.getF64FloatAttr(-0.5));
    n.xhat = MulOp::create(b, loc, SubOp::create(b, loc, getInput(), mean),
                           n.invstd);
  }
  Value dxhat = MulOp::create(b, loc, dy, gamma);
  if (needed[0])
    grads.push_back(getTraining()
                        ? normalizedInputGrad(b, loc, dxhat, n, axes)
                        : Value(MulOp::create(b, loc, dxhat, n.invstd)));
  else
    grads.push_back(Value());
  grads.push_back(needed[1]
                      ? Value(ReduceSumOp::create(
                            b, loc, MulOp::create(b, loc, dy, n.xhat), axes,
                            false))
                      : Value());
  grads.push_back(needed[2]
                      ? Value(ReduceSumOp::create(b, loc, dy, axes, false))
                      : Value());
  grads.append({Value(), Value()});
  // Inference mode ignores the sample weights.
  if (getSampleWeights())
    grads.push_back(Value());
  return success();
}

LogicalResult LayerNormOp::buildVJP(OpBuilder &b, ValueRange dys,
                                    ArrayRef<bool> needed,
                                    SmallVectorImpl<Value> &grads) {
  Location loc = getLoc();
  auto xt = cast<RankedTensorType>(getInput().getType());
  if (!xt.hasStaticShape())
    return emitOpError("gradient needs a static input shape");
  int64_t axis = *normalizeAxis(getAxis(), xt.getRank());
  SmallVector<int64_t> normAxes, leadAxes;
  for (int64_t d = 0; d < xt.getRank(); ++d)
    (d >= axis ? normAxes : leadAxes).push_back(d);
  Normalized n = normalize(b, loc, getInput(), normAxes,
                           getEpsilon().convertToDouble());
  Value dy = dys[0];
  Value dxhat = getScale() ? Value(MulOp::create(b, loc, dy, getScale())) : dy;
  grads.push_back(needed[0] ? normalizedInputGrad(b, loc, dxhat, n, normAxes)
                            : Value());
  unsigned next = 1;
  auto paramGrad = [&](Value g) -> Value {
    return leadAxes.empty() ? g
                            : Value(ReduceSumOp::create(b, loc, g, leadAxes,
                                                        false));
  };
  if (getScale())
    grads.push_back(needed[next++]
                        ? paramGrad(MulOp::create(b, loc, dy, n.xhat))
                        : Value());
  if (getBias())
    grads.push_back(needed[next++] ? paramGrad(dy) : Value());
  return success();
}

//===----------------------------------------------------------------------===//
// Dropout and embedding
//===----------------------------------------------------------------------===//

LogicalResult DropoutOp::buildVJP(OpBuilder &b, ValueRange dys,
                                  ArrayRef<bool> needed,
                                  SmallVectorImpl<Value> &grads) {
  // Dropout is linear in its input with the same mask: reapply it.
  grads.push_back(needed[0] ? Value(DropoutOp::create(b, getLoc(), dys[0],
                                                      getSeed(),
                                                      getRatioAttr(),
                                                      getStreamAttr()))
                            : Value());
  grads.push_back(Value());
  return success();
}

LogicalResult EmbeddingOp::buildVJP(OpBuilder &b, ValueRange dys,
                                    ArrayRef<bool> needed,
                                    SmallVectorImpl<Value> &grads) {
  grads.push_back(Value());
  int64_t v = shapeOf(getTable())[0];
  if (ShapedType::isDynamic(v))
    return emitOpError("gradient needs a static table");
  grads.push_back(needed[1] ? Value(EmbeddingGradOp::create(
                                  b, getLoc(), dys[0], getIndices(), v))
                            : Value());
  return success();
}
