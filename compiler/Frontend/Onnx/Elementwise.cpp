//===- Elementwise.cpp - Arithmetic, activations and softmax --------------===//
//
// Add/Sub/Mul/Div/Pow with numpy broadcasting, the unary activations and
// softmax. Operations on compile-time values fold: integer arithmetic on
// shapes stays symbolic in the batch size, and scalar float arithmetic
// (`sqrt(head_dim)` as exporters spell it) becomes a constant.
//
//===----------------------------------------------------------------------===//

#include "compiler/Frontend/Onnx/Importer.h"

#include "dialects/NN/IR/NNOps.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::cleave;
using namespace mlir::cleave::importer;

namespace {

enum class Arith { Add, Sub, Mul, Div, Pow };

FailureOr<SymInt> foldInts(Arith kind, SymInt a, SymInt b) {
  switch (kind) {
  case Arith::Add:
    return add(a, b);
  case Arith::Sub:
    return sub(a, b);
  case Arith::Mul:
    return mul(a, b);
  case Arith::Div:
    return div(a, b);
  case Arith::Pow:
    return failure();
  }
  llvm_unreachable("unknown arithmetic");
}

/// Computes `a op b` rounded to `a`'s semantics, as the op would at run time.
APFloat foldFloats(Arith kind, APFloat a, const APFloat &b) {
  switch (kind) {
  case Arith::Add:
    a.add(b, APFloat::rmNearestTiesToEven);
    return a;
  case Arith::Sub:
    a.subtract(b, APFloat::rmNearestTiesToEven);
    return a;
  case Arith::Mul:
    a.multiply(b, APFloat::rmNearestTiesToEven);
    return a;
  case Arith::Div:
    a.divide(b, APFloat::rmNearestTiesToEven);
    return a;
  case Arith::Pow: {
    APFloat r(std::pow(a.convertToDouble(), b.convertToDouble()));
    bool lost;
    r.convert(a.getSemantics(), APFloat::rmNearestTiesToEven, &lost);
    return r;
  }
  }
  llvm_unreachable("unknown arithmetic");
}

/// The broadcast of two shapes, if they broadcast.
std::optional<SmallVector<int64_t>> broadcast(ArrayRef<int64_t> a,
                                              ArrayRef<int64_t> b) {
  SmallVector<int64_t> out(std::max(a.size(), b.size()));
  for (size_t i = 0; i < out.size(); ++i) {
    int64_t da = i < a.size() ? a[a.size() - 1 - i] : 1;
    int64_t db = i < b.size() ? b[b.size() - 1 - i] : 1;
    if (da != db && da != 1 && db != 1)
      return std::nullopt;
    out[out.size() - 1 - i] = da == 1 ? db : da;
  }
  return out;
}

/// Folds integer arithmetic on shape values (rank 0 or 1, broadcasting).
LogicalResult foldSymbolic(NodeImporter &n, Arith kind) {
  ImportedValue &a = n.input(0), &b = n.input(1);
  size_t size = std::max(a.symbolic.size(), b.symbolic.size());
  if ((a.symbolic.size() != size && a.symbolic.size() != 1) ||
      (b.symbolic.size() != size && b.symbolic.size() != 1))
    return n.emitError() << n.getOpType() << " operands of sizes "
                         << a.symbolic.size() << " and " << b.symbolic.size()
                         << " do not broadcast";
  SmallVector<SymInt> out;
  for (size_t i = 0; i < size; ++i) {
    SymInt x = a.symbolic[a.symbolic.size() == 1 ? 0 : i];
    SymInt y = b.symbolic[b.symbolic.size() == 1 ? 0 : i];
    FailureOr<SymInt> r = foldInts(kind, x, y);
    if (failed(r))
      return n.emitError() << "cannot fold " << n.getOpType() << " of " << x
                           << " and " << y
                           << " (B is the batch size) to a shape";
    out.push_back(*r);
  }
  n.setOutput(
      0, ImportedValue::ofSymbolic(out, a.scalar && b.scalar, a.symbolicType));
  return success();
}

/// Folds float arithmetic on two splat constants into a splat constant.
void foldSplats(NodeImporter &n, Arith kind, DenseElementsAttr a,
                DenseElementsAttr b, ArrayRef<int64_t> shape) {
  APFloat r =
      foldFloats(kind, a.getSplatValue<APFloat>(), b.getSplatValue<APFloat>());
  auto type = RankedTensorType::get(shape, a.getElementType());
  n.setOutput(0, ImportedValue::ofConstant(DenseElementsAttr::get(type, r)));
}

/// Operand `i` of a binary op whose other operand is `other`, as a float
/// or integer tensor; an integer constant against a run-time integer
/// carried in float (`lengths - 1`) takes the carrier's type.
FailureOr<Value> operandOf(NodeImporter &n, unsigned i, ImportedValue &other) {
  FailureOr<Value> carried = carriedConstant(n, i, other);
  if (failed(carried) || *carried)
    return carried;
  return n.numericTensor(i);
}

template <typename OpTy, Arith kind>
LogicalResult importBinary(NodeImporter &n) {
  if (failed(n.checkAttrs({})))
    return failure();
  if (!n.hasInput(0) || !n.hasInput(1))
    return n.emitError() << n.getOpType() << " needs two inputs";
  using Kind = ImportedValue::Kind;
  ImportedValue &a = n.input(0), &b = n.input(1);
  if (a.kind == Kind::Symbolic && b.kind == Kind::Symbolic)
    return foldSymbolic(n, kind);
  if (a.kind == Kind::Constant && b.kind == Kind::Constant &&
      a.constant.isSplat() && b.constant.isSplat() &&
      isa<FloatType>(a.constant.getElementType()) &&
      a.constant.getElementType() == b.constant.getElementType()) {
    auto shape = broadcast(a.constant.getType().getShape(),
                           b.constant.getType().getShape());
    if (shape) {
      foldSplats(n, kind, a.constant, b.constant, *shape);
      return success();
    }
  }
  FailureOr<Value> lhs = operandOf(n, 0, b);
  if (failed(lhs))
    return failure();
  FailureOr<Value> rhs = operandOf(n, 1, a);
  if (failed(rhs))
    return failure();
  return n.createOutput<OpTy>(*lhs, *rhs);
}

/// Pow with a tensor of exponents, or of an integer base: `nn.powf`, the
/// exponents converted to the base's float type. An integer base is raised
/// in double precision and truncated back, as numpy's reference computes
/// it (exact while the power is below 2^53).
LogicalResult importTensorPow(NodeImporter &n) {
  FailureOr<Value> base = n.numericTensor(0);
  if (failed(base))
    return failure();
  FailureOr<Value> exponents = n.numericTensor(1);
  if (failed(exponents))
    return failure();
  auto eltOf = [](Value v) {
    return cast<RankedTensorType>(v.getType()).getElementType();
  };
  Type baseType = eltOf(*base);
  Type computeType = isa<FloatType>(baseType)
                         ? baseType
                         : Type(Float64Type::get(n.getBuilder().getContext()));
  auto convert = [&](Value v, Type to) -> FailureOr<Value> {
    if (eltOf(v) == to)
      return v;
    FailureOr<nn::CastOp> c = n.create<nn::CastOp>(v, TypeAttr::get(to));
    if (failed(c))
      return failure();
    return c->getResult();
  };
  FailureOr<Value> x = convert(*base, computeType);
  if (failed(x))
    return failure();
  FailureOr<Value> y = convert(*exponents, computeType);
  if (failed(y))
    return failure();
  FailureOr<nn::PowFOp> pow = n.create<nn::PowFOp>(*x, *y);
  if (failed(pow))
    return failure();
  FailureOr<Value> z = convert(pow->getResult(), baseType);
  if (failed(z))
    return failure();
  n.setOutput(0, *z);
  return success();
}

/// Pow: `nn.pow` with a single constant exponent (both constant folds), or
/// `nn.powf` with a tensor of exponents, broadcasting. An initializer
/// exponent is a constant, not a parameter.
LogicalResult importPow(NodeImporter &n) {
  if (failed(n.checkAttrs({})))
    return failure();
  if (!n.hasInput(0) || !n.hasInput(1))
    return n.emitError() << "Pow needs two inputs";
  ImportedValue &e = n.input(1);
  bool single = e.kind == ImportedValue::Kind::Symbolic
                    ? e.symbolic.size() == 1
                    : e.kind == ImportedValue::Kind::Constant &&
                          e.constant.getNumElements() == 1;
  auto isInteger = [&](unsigned i) {
    ImportedValue &v = n.input(i);
    if (v.kind == ImportedValue::Kind::Symbolic)
      return true;
    Type t = v.kind == ImportedValue::Kind::Constant
                 ? v.constant.getElementType()
                 : cast<RankedTensorType>(v.tensor.getType()).getElementType();
    return isa<IntegerType>(t);
  };
  if (!single || isInteger(0))
    return importTensorPow(n);
  FailureOr<double> exponent = n.constantScalar(1, "exponent");
  if (failed(exponent))
    return failure();
  ImportedValue &base = n.input(0);
  if (base.kind == ImportedValue::Kind::Constant && base.constant.isSplat() &&
      isa<FloatType>(base.constant.getElementType())) {
    APFloat r = foldFloats(Arith::Pow, base.constant.getSplatValue<APFloat>(),
                           APFloat(*exponent));
    n.setOutput(0, ImportedValue::ofConstant(
                       DenseElementsAttr::get(base.constant.getType(), r)));
    return success();
  }
  FailureOr<Value> x = n.floatTensor(0);
  if (failed(x))
    return failure();
  return n.createOutput<nn::PowOp>(*x, APFloat(*exponent));
}

template <typename OpTy> LogicalResult importUnary(NodeImporter &n) {
  if (failed(n.checkAttrs({})))
    return failure();
  FailureOr<Value> x = n.floatTensor(0);
  if (failed(x))
    return failure();
  return n.createOutput<OpTy>(*x);
}

LogicalResult importLeakyRelu(NodeImporter &n) {
  if (failed(n.checkAttrs({"alpha"})))
    return failure();
  FailureOr<double> alpha = n.getFloat("alpha", 0.01);
  FailureOr<Value> x = n.floatTensor(0);
  if (failed(alpha) || failed(x))
    return failure();
  return n.createOutput<nn::LeakyReluOp>(*x, APFloat(*alpha));
}

/// The bound of a Clip node at input `i`, or `dflt` when the input is absent.
FailureOr<double> clipBound(NodeImporter &n, unsigned i, StringRef what,
                            double dflt) {
  if (!n.hasInput(i))
    return dflt;
  FailureOr<double> bound = n.constantScalar(i, what);
  if (failed(bound))
    return failure();
  if (std::isnan(*bound))
    return n.emitError() << "Clip " << what << " ('" << n.inputName(i)
                         << "') is NaN";
  return *bound;
}

/// Clip from opset 11 on takes its bounds as optional inputs; `nn.clamp`
/// needs them at compile time, as every exporter writes them (ReLU6,
/// hardtanh, clamp with numbers).
LogicalResult importClip(NodeImporter &n) {
  if (failed(n.checkAttrs({})))
    return failure();
  double inf = std::numeric_limits<double>::infinity();
  FailureOr<double> lo = clipBound(n, 1, "min", -inf);
  FailureOr<double> hi = clipBound(n, 2, "max", inf);
  if (failed(lo) || failed(hi))
    return failure();
  // ONNX sets every element to max here; no exporter writes such a Clip.
  if (*lo > *hi)
    return n.emitError() << "Clip min " << *lo << " is greater than max " << *hi
                         << ", which is not supported";
  FailureOr<Value> x = n.numericTensor(0);
  if (failed(x))
    return failure();
  if (isa<FloatType>(cast<RankedTensorType>(x->getType()).getElementType()))
    return n.createOutput<nn::ClampOp>(*x, APFloat(*lo), APFloat(*hi));
  // Integers (bounds of the same type, so whole numbers): no gradient to
  // define, nn.maximum and nn.minimum.
  Composer c(n);
  Value y = *x;
  if (!std::isinf(*lo))
    y = c.op<nn::MaximumOp>(y, c.scalar(y, *lo));
  if (!std::isinf(*hi))
    y = c.op<nn::MinimumOp>(y, c.scalar(y, *hi));
  return c.output(0, y);
}

/// `clamp(alpha * x + beta, 0, 1)` as nn ops: a multiply-add that linalg
/// fuses with the clamp. Its gradient is 0 where the clamp saturates, at
/// the bounds included, as PyTorch's hardsigmoid backward.
FailureOr<Value> hardSigmoid(NodeImporter &n, Value x, double alpha,
                             double beta) {
  Composer c(n);
  Value scaled = c.op<nn::MulOp>(x, c.scalar(x, alpha));
  Value shifted = c.op<nn::AddOp>(scaled, c.scalar(x, beta));
  return c.value(c.op<nn::ClampOp>(shifted, APFloat(0.0), APFloat(1.0)));
}

LogicalResult importHardSigmoid(NodeImporter &n) {
  if (failed(n.checkAttrs({"alpha", "beta"})))
    return failure();
  FailureOr<double> alpha = n.getFloat("alpha", 0.2);
  FailureOr<double> beta = n.getFloat("beta", 0.5);
  FailureOr<Value> x = n.floatTensor(0);
  if (failed(alpha) || failed(beta) || failed(x))
    return failure();
  FailureOr<Value> y = hardSigmoid(n, *x, *alpha, *beta);
  if (failed(y))
    return failure();
  n.setOutput(0, *y);
  return success();
}

/// `x * hardsigmoid(x)` with alpha 1/6 and beta 1/2. Its gradient differs
/// from PyTorch's hardswish backward only at x = -3 and x = 3.
LogicalResult importHardSwish(NodeImporter &n) {
  if (failed(n.checkAttrs({})))
    return failure();
  FailureOr<Value> x = n.floatTensor(0);
  if (failed(x))
    return failure();
  FailureOr<Value> gate = hardSigmoid(n, *x, 1.0 / 6.0, 0.5);
  if (failed(gate))
    return failure();
  return n.createOutput<nn::MulOp>(*x, *gate);
}

/// Neg, folded on shape values (`-axis` in ONNX's function bodies).
LogicalResult importNeg(NodeImporter &n) {
  if (failed(n.checkAttrs({})))
    return failure();
  if (!n.hasInput(0) || n.input(0).kind != ImportedValue::Kind::Symbolic) {
    FailureOr<Value> x = n.numericTensor(0);
    if (failed(x))
      return failure();
    return n.createOutput<nn::NegOp>(*x);
  }
  ImportedValue &x = n.input(0);
  SmallVector<SymInt> out;
  for (SymInt v : x.symbolic) {
    FailureOr<SymInt> negated = mul(v, SymInt::constant(-1));
    if (failed(negated))
      return n.emitError() << "cannot fold Neg of " << v;
    out.push_back(*negated);
  }
  n.setOutput(0, ImportedValue::ofSymbolic(out, x.scalar, x.symbolicType));
  return success();
}

/// |x| as `nn.leaky_relu` with slope -1: exact, and its gradient is the sign
/// of x (at x = 0 it is -1 where PyTorch's abs backward gives 0).
FailureOr<Value> absolute(NodeImporter &n, Value x) {
  FailureOr<nn::LeakyReluOp> op = n.create<nn::LeakyReluOp>(x, APFloat(-1.0));
  if (failed(op))
    return failure();
  return op->getResult();
}

LogicalResult importAbs(NodeImporter &n) {
  if (failed(n.checkAttrs({})))
    return failure();
  FailureOr<Value> x = n.floatTensor(0);
  if (failed(x))
    return failure();
  FailureOr<Value> y = absolute(n, *x);
  if (failed(y))
    return failure();
  n.setOutput(0, *y);
  return success();
}

/// log(1 + exp(x)) computed without overflow as
/// relu(x) + log(1 + exp(-|x|)); its gradient is sigmoid(x). Without a
/// log1p, softplus(x) below about -17 (f32) rounds to 0 rather than to
/// exp(x): an absolute error under 1e-7.
LogicalResult importSoftplus(NodeImporter &n) {
  if (failed(n.checkAttrs({})))
    return failure();
  FailureOr<Value> x = n.floatTensor(0);
  if (failed(x))
    return failure();
  FailureOr<Value> magnitude = absolute(n, *x);
  if (failed(magnitude))
    return failure();
  auto negated = n.create<nn::NegOp>(*magnitude);
  if (failed(negated))
    return failure();
  auto e = n.create<nn::ExpOp>(negated->getResult());
  if (failed(e))
    return failure();
  auto onePlus = n.create<nn::AddOp>(scalarLike(n, *x, 1.0), e->getResult());
  if (failed(onePlus))
    return failure();
  auto log = n.create<nn::LogOp>(onePlus->getResult());
  auto positive = n.create<nn::ReluOp>(*x);
  if (failed(log) || failed(positive))
    return failure();
  return n.createOutput<nn::AddOp>(positive->getResult(), log->getResult());
}

/// 1 / x.
LogicalResult importReciprocal(NodeImporter &n) {
  if (failed(n.checkAttrs({})))
    return failure();
  FailureOr<Value> x = n.floatTensor(0);
  if (failed(x))
    return failure();
  return n.createOutput<nn::DivOp>(scalarLike(n, *x, 1.0), *x);
}

/// Max and Min of one or more inputs with numpy broadcasting, folded left
/// into `nn.maximum`/`nn.minimum`: the cotangent reaches the selected input.
template <typename OpTy> FailureOr<Value> foldInputs(NodeImporter &n) {
  if (failed(n.checkAttrs({})))
    return failure();
  if (n.getNumInputs() == 0)
    return n.emitError() << n.getOpType() << " needs at least one input";
  FailureOr<Value> acc = n.numericTensor(0);
  if (failed(acc))
    return failure();
  for (unsigned i = 1, e = n.getNumInputs(); i < e; ++i) {
    FailureOr<Value> next = n.numericTensor(i);
    if (failed(next))
      return failure();
    FailureOr<OpTy> op = n.create<OpTy>(*acc, *next);
    if (failed(op))
      return failure();
    acc = op->getResult();
  }
  return acc;
}

template <typename OpTy> LogicalResult importVariadic(NodeImporter &n) {
  FailureOr<Value> y = foldInputs<OpTy>(n);
  if (failed(y))
    return failure();
  n.setOutput(0, *y);
  return success();
}

/// Mean of one or more inputs with numpy broadcasting: their sum, divided
/// by their number.
LogicalResult importMean(NodeImporter &n) {
  FailureOr<Value> sum = foldInputs<nn::AddOp>(n);
  if (failed(sum))
    return failure();
  return n.createOutput<nn::DivOp>(
      *sum, scalarLike(n, *sum, static_cast<double>(n.getNumInputs())));
}

/// The unary activations composed of nn ops, so their gradients follow
/// from the ops'. Each reads its attributes and returns `y` for `x`.
using Composition = Value (*)(NodeImporter &, Composer &, Value, double,
                              double);

template <Composition compose>
LogicalResult importComposed(NodeImporter &n, ArrayRef<StringRef> attrs,
                             double dfltA, double dfltB) {
  if (failed(n.checkAttrs(attrs)))
    return failure();
  FailureOr<double> a = attrs.empty() ? dfltA : n.getFloat(attrs[0], dfltA);
  FailureOr<double> b = attrs.size() < 2 ? dfltB : n.getFloat(attrs[1], dfltB);
  FailureOr<Value> x = n.floatTensor(0);
  if (failed(a) || failed(b) || failed(x))
    return failure();
  Composer c(n);
  return c.output(compose(n, c, *x, *a, *b));
}

/// alpha * (exp(min(x, 0) / scale) - 1) + relu(x): ELU (scale 1) and CELU
/// (scale alpha). The exponential never sees a positive argument, so its
/// branch cannot overflow where it is not taken.
Value exponentialUnit(Composer &c, Value x, double alpha, double scale) {
  Value negative = c.negativePart(x);
  if (scale != 1.0)
    negative = c.op<nn::DivOp>(negative, c.scalar(x, scale));
  Value decay = c.op<nn::SubOp>(c.op<nn::ExpOp>(negative), c.scalar(x, 1.0));
  Value scaled = c.op<nn::MulOp>(c.scalar(x, alpha), decay);
  Value positive = c.op<nn::ReluOp>(x);
  return c.op<nn::AddOp>(positive, scaled);
}

Value elu(NodeImporter &, Composer &c, Value x, double alpha, double) {
  return exponentialUnit(c, x, alpha, 1.0);
}

Value celu(NodeImporter &n, Composer &c, Value x, double alpha, double) {
  if (alpha == 0) {
    n.emitError() << "Celu alpha must not be 0";
    return c.fail();
  }
  return exponentialUnit(c, x, alpha, alpha);
}

Value selu(NodeImporter &, Composer &c, Value x, double alpha, double gamma) {
  return c.op<nn::MulOp>(c.scalar(x, gamma), exponentialUnit(c, x, alpha, 1.0));
}

/// x where x > alpha, else 0.
Value thresholdedRelu(NodeImporter &, Composer &c, Value x, double alpha,
                      double) {
  return c.op<nn::WhereOp>(
      c.compare(nn::ComparePredicate::gt, x, c.scalar(x, alpha)), x,
      c.scalar(x, 0.0));
}

/// x / (1 + |x|).
Value softsign(NodeImporter &, Composer &c, Value x, double, double) {
  return c.op<nn::DivOp>(x, c.op<nn::AddOp>(c.scalar(x, 1.0), c.abs(x)));
}

/// x + bias below -lambd, x - bias above lambd, 0 between.
Value shrink(NodeImporter &, Composer &c, Value x, double bias, double lambd) {
  Value isAbove = c.compare(nn::ComparePredicate::gt, x, c.scalar(x, lambd));
  Value lowered = c.op<nn::SubOp>(x, c.scalar(x, bias));
  Value above = c.op<nn::WhereOp>(isAbove, lowered, c.scalar(x, 0.0));
  Value isBelow = c.compare(nn::ComparePredicate::lt, x, c.scalar(x, -lambd));
  Value raised = c.op<nn::AddOp>(x, c.scalar(x, bias));
  return c.op<nn::WhereOp>(isBelow, raised, above);
}

/// 1 above 0, -1 below, and x itself (0, -0 or NaN) otherwise.
Value sign(NodeImporter &, Composer &c, Value x, double, double) {
  Value isNegative = c.compare(nn::ComparePredicate::lt, x, c.scalar(x, 0.0));
  Value itself = c.op<nn::MulOp>(x, c.scalar(x, 0.0));
  Value notPositive = c.op<nn::WhereOp>(isNegative, c.scalar(x, -1.0), itself);
  Value isPositive = c.compare(nn::ComparePredicate::gt, x, c.scalar(x, 0.0));
  return c.op<nn::WhereOp>(isPositive, c.scalar(x, 1.0), notPositive);
}

/// (exp(x) - exp(-x)) / 2 and (exp(x) + exp(-x)) / 2. Near 0, sinh's
/// absolute error is that of exp (about 1e-7 in f32), not relative to x.
template <typename CombineOp>
Value hyperbolic(NodeImporter &, Composer &c, Value x, double, double) {
  Value up = c.op<nn::ExpOp>(x);
  Value down = c.op<nn::ExpOp>(c.op<nn::NegOp>(x));
  return c.op<nn::MulOp>(c.scalar(x, 0.5), c.op<CombineOp>(up, down));
}

/// sign(x) * log(|x| + sqrt(x^2 + 1)), odd by construction.
Value asinh(NodeImporter &, Composer &c, Value x, double, double) {
  Value m = c.abs(x);
  Value r = c.op<nn::LogOp>(
      c.op<nn::AddOp>(m, c.op<nn::SqrtOp>(c.op<nn::AddOp>(c.op<nn::MulOp>(m, m),
                                                          c.scalar(x, 1.0)))));
  Value isNegative = c.compare(nn::ComparePredicate::lt, x, c.scalar(x, 0.0));
  Value negated = c.op<nn::NegOp>(r);
  return c.op<nn::WhereOp>(isNegative, negated, r);
}

/// log(x + sqrt(x^2 - 1)), NaN below 1.
Value acosh(NodeImporter &, Composer &c, Value x, double, double) {
  return c.op<nn::LogOp>(
      c.op<nn::AddOp>(x, c.op<nn::SqrtOp>(c.op<nn::SubOp>(c.op<nn::MulOp>(x, x),
                                                          c.scalar(x, 1.0)))));
}

/// log((1 + x) / (1 - x)) / 2.
Value atanh(NodeImporter &, Composer &c, Value x, double, double) {
  Value numerator = c.op<nn::AddOp>(c.scalar(x, 1.0), x);
  Value denominator = c.op<nn::SubOp>(c.scalar(x, 1.0), x);
  Value ratio = c.op<nn::DivOp>(numerator, denominator);
  return c.op<nn::MulOp>(c.scalar(x, 0.5), c.op<nn::LogOp>(ratio));
}

/// sin(x) / cos(x).
Value tangent(NodeImporter &, Composer &c, Value x, double, double) {
  Value sine = c.op<nn::SinOp>(x);
  Value cosine = c.op<nn::CosOp>(x);
  return c.op<nn::DivOp>(sine, cosine);
}

/// NaN elements: x != x.
Value isNan(NodeImporter &, Composer &c, Value x, double, double) {
  return c.boolean(nn::ComparePredicate::ne, x, x);
}

/// PRelu: x where x >= 0, slope * x below, the slope broadcasting to x
/// (usually a trainable parameter, whose gradient is x where x < 0).
LogicalResult importPRelu(NodeImporter &n) {
  if (failed(n.checkAttrs({})))
    return failure();
  FailureOr<Value> x = n.floatTensor(0);
  FailureOr<Value> slope = n.floatTensor(1);
  if (failed(x) || failed(slope))
    return failure();
  Composer c(n);
  Value leaked = c.op<nn::MulOp>(*slope, *x);
  Value isNegative = c.compare(nn::ComparePredicate::lt, *x, c.scalar(*x, 0.0));
  return c.output(c.op<nn::WhereOp>(isNegative, leaked, *x));
}

/// IsInf: x == inf (detect_positive), x == -inf (detect_negative), or
/// |x| == inf (both, the default).
LogicalResult importIsInf(NodeImporter &n) {
  if (failed(n.checkAttrs({"detect_negative", "detect_positive"})))
    return failure();
  FailureOr<int64_t> negative = n.getInt("detect_negative", 1);
  FailureOr<int64_t> positive = n.getInt("detect_positive", 1);
  FailureOr<Value> x = n.floatTensor(0);
  if (failed(negative) || failed(positive) || failed(x))
    return failure();
  Composer c(n);
  double inf = std::numeric_limits<double>::infinity();
  using P = nn::ComparePredicate;
  if (*negative && *positive)
    return c.output(c.boolean(P::eq, c.abs(*x), c.scalar(*x, inf)));
  if (*positive)
    return c.output(c.boolean(P::eq, *x, c.scalar(*x, inf)));
  if (*negative)
    return c.output(c.boolean(P::eq, *x, c.scalar(*x, -inf)));
  // Nothing is detected: x < -inf holds for no x, NaN included.
  return c.output(c.boolean(P::lt, *x, c.scalar(*x, -inf)));
}

/// Gelu (opset 20) in its erf form or its tanh approximation: one
/// `nn.gelu`, as the opset-13 decomposition is recomposed into.
LogicalResult importGelu(NodeImporter &n) {
  if (failed(n.checkAttrs({"approximate"})))
    return failure();
  FailureOr<std::string> approximate = n.getString("approximate", "none");
  FailureOr<Value> x = n.floatTensor(0);
  if (failed(approximate) || failed(x))
    return failure();
  std::optional<nn::GeluApproximation> form =
      nn::symbolizeGeluApproximation(*approximate);
  if (!form)
    return n.emitError() << "Gelu approximate '" << *approximate
                         << "' is not supported (expected 'none' or 'tanh')";
  return n.createOutput<nn::GeluOp>(*x, *form);
}

/// Softmax and LogSoftmax from opset 13 on normalise along one axis.
template <typename OpTy> LogicalResult importSoftmax(NodeImporter &n) {
  if (failed(n.checkAttrs({"axis"})))
    return failure();
  FailureOr<int64_t> axis = n.getInt("axis", -1);
  FailureOr<Value> x = n.floatTensor(0);
  if (failed(axis) || failed(x))
    return failure();
  int64_t rank = cast<RankedTensorType>(x->getType()).getRank();
  std::optional<int64_t> a = normalizeAxis(*axis, rank);
  if (!a)
    return n.emitError() << n.getOpType() << " axis " << *axis
                         << " is out of range for rank " << rank;
  return n.createOutput<OpTy>(*x, static_cast<uint64_t>(*a));
}

} // namespace

TypedAttr importer::elementAttr(Type elt, double v) {
  if (isa<IntegerType>(elt))
    return IntegerAttr::get(elt, static_cast<int64_t>(v));
  return FloatAttr::get(elt, v);
}

Value importer::scalarLike(NodeImporter &n, Value like, double v) {
  Type elt = cast<RankedTensorType>(like.getType()).getElementType();
  return n.getGraph().materialize(
      DenseElementsAttr::get(RankedTensorType::get({}, elt),
                             elementAttr(elt, v)),
      n.getLoc());
}

void importer::populateElementwiseImporters(ImporterTable &table) {
  // The notes are the operator table of docs/user/onnx.md (cleave-opt
  // --list-onnx-ops).
  constexpr unsigned exponent = 1u << 1;
  const char *arithmeticNotes =
      "NumPy broadcasting; folds on shape values and on scalar constants; "
      "float, int32 and int64 tensors (integers wrap on overflow)";
  const char *noGradientNotes =
      "no gradient flows through it (a constant to autodiff)";
  addImporter(table, "Add", importBinary<nn::AddOp, Arith::Add>)
      .describe(arithmeticNotes);
  addImporter(table, "Sub", importBinary<nn::SubOp, Arith::Sub>)
      .describe(arithmeticNotes);
  addImporter(table, "Mul", importBinary<nn::MulOp, Arith::Mul>)
      .describe(arithmeticNotes);
  addImporter(table, "Div", importBinary<nn::DivOp, Arith::Div>)
      .describe(
          "NumPy broadcasting; folds on shape values and on scalar constants; "
          "float, int32 and int64 tensors: integer division truncates toward "
          "zero, and a zero divisor gives 0 (no trap)");
  addImporter(table, "Pow", importPow)
      .constants(exponent)
      .describe(
          "a single constant exponent (`nn.pow`), or a tensor of them, "
          "broadcasting (`nn.powf`, whose exponent gradient is NaN for a "
          "negative base, as PyTorch's); integer exponents are converted to "
          "the base's type; an int32 or int64 base is raised in float64 and "
          "truncated back (exact while the power is below 2^53)");
  addImporter(table, "Relu", importUnary<nn::ReluOp>);
  addImporter(table, "Sigmoid", importUnary<nn::SigmoidOp>);
  addImporter(table, "Tanh", importUnary<nn::TanhOp>);
  addImporter(table, "Erf", importUnary<nn::ErfOp>)
      .describe(
          "the erf form of GELU (`F.gelu`) is recomposed into one `nn.gelu`");
  addImporter(table, "Sqrt", importUnary<nn::SqrtOp>);
  addImporter(table, "Exp", importUnary<nn::ExpOp>);
  addImporter(table, "Log", importUnary<nn::LogOp>);
  addImporter(table, "Neg", importNeg)
      .describe("float, int32 and int64 tensors; folds on shape values");
  addImporter(table, "Sin", importUnary<nn::SinOp>)
      .describe("libm's `sinf` on the CPU, libdevice's on cuda");
  addImporter(table, "Cos", importUnary<nn::CosOp>)
      .describe("libm's `cosf` on the CPU, libdevice's on cuda");
  addImporter(table, "Tan", [](NodeImporter &n) {
    return importComposed<tangent>(n, {}, 0.0, 0.0);
  }).describe("`sin(x) / cos(x)`");
  addImporter(table, "Floor", importUnary<nn::FloorOp>)
      .describe(noGradientNotes);
  addImporter(table, "Ceil", importUnary<nn::CeilOp>).describe(noGradientNotes);
  addImporter(table, "Round", importUnary<nn::RoundOp>)
      .describe("halves to even; no gradient flows through it (a "
                "constant to autodiff)");
  addImporter(table, "LeakyRelu", importLeakyRelu);
  addImporter(table, "Clip", importClip)
      .constants(1u << 1 | 1u << 2)
      .describe(
          "constant bounds (Constant nodes or initializers), either may be "
          "absent, `min <= max`; one `nn.clamp` (ReLU6, `hardtanh`, `clamp`), "
          "or `nn.maximum`/`nn.minimum` on integers. Its gradient is 0 at the "
          "bounds, as PyTorch's `hardtanh`/`relu6` backward (PyTorch's `clamp` "
          "passes it there)");
  addImporter(table, "HardSigmoid", importHardSigmoid)
      .describe(
          "`clamp(alpha * x + beta, 0, 1)` with `nn.clamp`; the gradient is "
          "PyTorch's except exactly at the kinks");
  addImporter(table, "HardSwish", importHardSwish)
      .since(14)
      .describe(
          "`x * HardSigmoid(x)`; the gradient is PyTorch's except at x = -3 "
          "and 3");
  addImporter(table, "Abs", importAbs)
      .describe("a leaky ReLU of slope -1 (its gradient at exactly 0 is "
                "-1, PyTorch's is 0)");
  addImporter(table, "Softplus", importSoftplus)
      .describe(
          "`relu(x) + log(1 + exp(-abs(x)))`, which cannot overflow (below "
          "about -17 it rounds to 0 rather than `exp(x)`: an absolute error "
          "under 1e-7)");
  addImporter(table, "Reciprocal", importReciprocal).describe("`1 / x`");
  addImporter(table, "Gelu", importGelu)
      .since(20)
      .describe("`approximate` `none` or `tanh`: one `nn.gelu`");
  addImporter(table, "Max", importVariadic<nn::MaximumOp>)
      .describe(
          "one or more inputs, numpy broadcasting, float, int32 or int64: "
          "`nn.maximum`, whose gradient reaches the larger input (the second "
          "on ties)");
  addImporter(table, "Sum", importVariadic<nn::AddOp>)
      .describe("one or more inputs, numpy broadcasting: `nn.add`");
  addImporter(table, "Mean", importMean)
      .describe("one or more inputs, numpy broadcasting: their sum over their "
                "number");
  addImporter(table, "Elu", [](NodeImporter &n) {
    return importComposed<elu>(n, {"alpha"}, 1.0, 0.0);
  }).describe("`relu(x) + alpha * (exp(min(x, 0)) - 1)`");
  addImporter(table, "Celu",
              [](NodeImporter &n) {
                return importComposed<celu>(n, {"alpha"}, 1.0, 0.0);
              })
      .since(12)
      .describe("`relu(x) + alpha * (exp(min(x, 0) / alpha) - 1)`");
  addImporter(table, "Selu", [](NodeImporter &n) {
    // ONNX's defaults, the float32 values of PyTorch's constants.
    return importComposed<selu>(n, {"alpha", "gamma"},
                                1.67326319217681884765625,
                                1.05070102214813232421875);
  }).describe("`gamma * Elu(x)`");
  addImporter(table, "ThresholdedRelu", [](NodeImporter &n) {
    return importComposed<thresholdedRelu>(n, {"alpha"}, 1.0, 0.0);
  }).describe("`nn.where(x > alpha, x, 0)`");
  addImporter(table, "Softsign", [](NodeImporter &n) {
    return importComposed<softsign>(n, {}, 0.0, 0.0);
  }).describe("`x / (1 + abs(x))`");
  addImporter(table, "Shrink", [](NodeImporter &n) {
    return importComposed<shrink>(n, {"bias", "lambd"}, 0.0, 0.5);
  }).describe("two `nn.where`s");
  addImporter(table, "Sign", [](NodeImporter &n) {
    return importComposed<sign>(n, {}, 0.0, 0.0);
  }).describe("two `nn.where`s; NaN stays NaN");
  addImporter(table, "Sinh",
              [](NodeImporter &n) {
                return importComposed<hyperbolic<nn::SubOp>>(n, {}, 0.0, 0.0);
              })
      .describe("`(exp(x) - exp(-x)) / 2`: near 0 its error is "
                "absolute (about 1e-7 in f32), not relative");
  addImporter(table, "Cosh", [](NodeImporter &n) {
    return importComposed<hyperbolic<nn::AddOp>>(n, {}, 0.0, 0.0);
  }).describe("`(exp(x) + exp(-x)) / 2`");
  addImporter(
      table, "Asinh",
      [](NodeImporter &n) { return importComposed<asinh>(n, {}, 0.0, 0.0); })
      .describe(
          "`sign(x) * log(abs(x) + sqrt(x * x + 1))`: near 0 its error is "
          "absolute (about 1e-7 in f32), and it overflows above about 1e19");
  addImporter(
      table, "Acosh",
      [](NodeImporter &n) { return importComposed<acosh>(n, {}, 0.0, 0.0); })
      .describe("`log(x + sqrt(x * x - 1))`; overflows above about "
                "1e19");
  addImporter(
      table, "Atanh",
      [](NodeImporter &n) { return importComposed<atanh>(n, {}, 0.0, 0.0); })
      .describe("`log((1 + x) / (1 - x)) / 2`: near 0 its error is "
                "absolute (about 1e-7 in f32)");
  addImporter(table, "IsNaN", [](NodeImporter &n) {
    return importComposed<isNan>(n, {}, 0.0, 0.0);
  }).describe("`x != x`, a run-time mask");
  addImporter(table, "IsInf", importIsInf)
      .describe("`detect_negative`, `detect_positive`; a run-time "
                "mask");
  addImporter(table, "PRelu", importPRelu)
      .describe("`nn.where(x < 0, slope * x, x)`, the slope "
                "broadcasting to x (a parameter, trained)");
  addImporter(table, "Min", importVariadic<nn::MinimumOp>)
      .describe(
          "one or more inputs, numpy broadcasting, float, int32 or int64: "
          "`nn.minimum`, whose gradient "
          "reaches the smaller input (the second on ties)");
  addImporter(table, "Softmax", importSoftmax<nn::SoftmaxOp>)
      .describe("any one axis");
  addImporter(table, "LogSoftmax", importSoftmax<nn::LogSoftmaxOp>)
      .describe("any one axis");
}
