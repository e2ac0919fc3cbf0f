//===- NNKernels.cpp - Reference kernels of the nn ops --------------------===//
//
// Elementwise ops, matrix products, shape ops, reductions, softmax and the
// losses, normalisation, dropout and embedding. Convolution and pooling are
// in ConvPoolKernels.cpp.
//
// Elementwise kernels compute in the element type (float or double); every
// kernel that sums reads the elements as double, accumulates in double and
// rounds each result once (see Interpreter.h).
//
//===----------------------------------------------------------------------===//

#include "compiler/Interpreter/Kernels.h"

#include "dialects/NN/IR/NNOps.h"

#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

using namespace mlir;
using namespace mlir::cleave;
using namespace mlir::cleave::interp;
using namespace mlir::cleave::interp::kernels;

namespace {

//===----------------------------------------------------------------------===//
// Elementwise binary
//===----------------------------------------------------------------------===//

/// Calls `fn(T{})` with T the C++ type of any dtype.
template <typename Fn> void dispatchAny(DType dtype, Fn &&fn) {
  switch (dtype) {
  case DType::f32:
    return fn(float{});
  case DType::f64:
    return fn(double{});
  case DType::i32:
    return fn(int32_t{});
  case DType::i64:
    return fn(int64_t{});
  }
}

/// `fn(a, b)` elementwise with numpy broadcasting, in the element type.
template <typename OpTy, typename Fn>
LogicalResult runBinary(OpTy op, Frame &f, Fn fn) {
  const Tensor &a = f.get(op.getLhs()), &b = f.get(op.getRhs());
  std::string why;
  auto shape = nn::broadcastShapes(a.getShape(), b.getShape(), &why);
  if (failed(shape))
    return op.emitOpError("operands of shapes ")
           << shapeToString(a.getShape()) << " and "
           << shapeToString(b.getShape()) << " do not broadcast (" << why
           << ")";
  Tensor out(a.getDType(), *shape);
  SmallVector<int64_t> sa = broadcastStrides(a.getShape(), *shape);
  SmallVector<int64_t> sb = broadcastStrides(b.getShape(), *shape);
  dispatchAny(a.getDType(), [&](auto tag) {
    using T = decltype(tag);
    ArrayRef<T> x = a.data<T>(), y = b.data<T>();
    MutableArrayRef<T> o = out.data<T>();
    forEachIndex(*shape, [&](ArrayRef<int64_t> idx, int64_t i) {
      o[i] = fn(x[offsetOf(idx, sa)], y[offsetOf(idx, sb)]);
    });
  });
  f.set(op.getResult(), std::move(out));
  return success();
}

/// Integer arithmetic wraps (two's complement, as arith's): computed in the
/// unsigned type, where overflow is defined.
template <typename T, typename Fn> T wrapping(T x, T y, Fn fn) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(fn(static_cast<U>(x), static_cast<U>(y)));
}

LogicalResult runAdd(nn::AddOp op, Frame &f) {
  return runBinary(op, f, [](auto x, auto y) -> decltype(x) {
    if constexpr (std::is_integral_v<decltype(x)>)
      return wrapping(x, y, [](auto u, auto v) { return u + v; });
    else
      return x + y;
  });
}
LogicalResult runSub(nn::SubOp op, Frame &f) {
  return runBinary(op, f, [](auto x, auto y) -> decltype(x) {
    if constexpr (std::is_integral_v<decltype(x)>)
      return wrapping(x, y, [](auto u, auto v) { return u - v; });
    else
      return x - y;
  });
}
LogicalResult runMul(nn::MulOp op, Frame &f) {
  return runBinary(op, f, [](auto x, auto y) -> decltype(x) {
    if constexpr (std::is_integral_v<decltype(x)>)
      return wrapping(x, y, [](auto u, auto v) { return u * v; });
    else
      return x * y;
  });
}
/// Integers: truncated, 0 for a zero divisor, a wrapping negation for -1.
LogicalResult runDiv(nn::DivOp op, Frame &f) {
  return runBinary(op, f, [](auto x, auto y) -> decltype(x) {
    using T = decltype(x);
    if constexpr (std::is_integral_v<T>) {
      if (y == 0)
        return 0;
      if (y == -1)
        return wrapping(T(0), x, [](auto u, auto v) { return u - v; });
      return x / y;
    } else {
      return x / y;
    }
  });
}

/// NaN propagates, as arith.maximumf/minimumf.
LogicalResult runMaximum(nn::MaximumOp op, Frame &f) {
  return runBinary(op, f, [](auto x, auto y) -> decltype(x) {
    if constexpr (std::is_floating_point_v<decltype(x)>)
      if (std::isnan(x) || std::isnan(y))
        return x + y;
    return std::max(x, y);
  });
}
LogicalResult runMinimum(nn::MinimumOp op, Frame &f) {
  return runBinary(op, f, [](auto x, auto y) -> decltype(x) {
    if constexpr (std::is_floating_point_v<decltype(x)>)
      if (std::isnan(x) || std::isnan(y))
        return x + y;
    return std::min(x, y);
  });
}

/// C `pow`: a negative base with an integral exponent is real.
LogicalResult runPowF(nn::PowFOp op, Frame &f) {
  if (!isFloat(f.get(op.getLhs()).getDType()))
    return op.emitOpError("is defined on float tensors only");
  return runBinary(op, f, [](auto x, auto y) {
    return static_cast<decltype(x)>(std::pow(x, y));
  });
}

/// Compared in the operands' own type (int64 ids exactly); NaN compares
/// unequal to everything, as arith.cmpf's ordered predicates and `une`.
LogicalResult runCompare(nn::CompareOp op, Frame &f) {
  const Tensor &a = f.get(op.getLhs()), &b = f.get(op.getRhs());
  auto shape = nn::broadcastShapes(a.getShape(), b.getShape());
  if (failed(shape))
    return op.emitOpError("operands of shapes ")
           << shapeToString(a.getShape()) << " and "
           << shapeToString(b.getShape()) << " do not broadcast";
  auto dtype = getDType(op.getDtype());
  if (!dtype)
    return op.emitOpError("unsupported mask type ") << op.getDtype();
  Tensor out(*dtype, *shape);
  SmallVector<int64_t> sa = broadcastStrides(a.getShape(), *shape);
  SmallVector<int64_t> sb = broadcastStrides(b.getShape(), *shape);
  nn::ComparePredicate pred = op.getPredicate();
  auto run = [&](auto tag) {
    using T = decltype(tag);
    ArrayRef<T> x = a.data<T>(), y = b.data<T>();
    forEachIndex(*shape, [&](ArrayRef<int64_t> idx, int64_t i) {
      T u = x[offsetOf(idx, sa)], v = y[offsetOf(idx, sb)];
      bool holds = false;
      switch (pred) {
      case nn::ComparePredicate::eq:
        holds = u == v;
        break;
      case nn::ComparePredicate::ne:
        holds = u != v;
        break;
      case nn::ComparePredicate::lt:
        holds = u < v;
        break;
      case nn::ComparePredicate::le:
        holds = u <= v;
        break;
      case nn::ComparePredicate::gt:
        holds = u > v;
        break;
      case nn::ComparePredicate::ge:
        holds = u >= v;
        break;
      }
      out.setDouble(i, holds ? 1.0 : 0.0);
    });
  };
  switch (a.getDType()) {
  case DType::f32:
    run(float{});
    break;
  case DType::f64:
    run(double{});
    break;
  case DType::i32:
    run(int32_t{});
    break;
  case DType::i64:
    run(int64_t{});
    break;
  }
  f.set(op.getResult(), std::move(out));
  return success();
}

/// C++ conversions, which are C's and arith's: floats round to nearest,
/// float to integer truncates toward zero, integers wrap. A float out of an
/// integer's range is undefined behaviour in C++ as in C, so it is not
/// converted but gives the integer's minimum (x86's cvttsd2si answer), so
/// that the interpreter itself stays defined.
LogicalResult runCast(nn::CastOp op, Frame &f) {
  const Tensor &a = f.get(op.getInput());
  auto to = getDType(op.getDtype());
  if (!to)
    return op.emitOpError("unsupported element type ") << op.getDtype();
  Tensor out(*to, a.getShape());
  dispatchAny(a.getDType(), [&](auto fromTag) {
    using From = decltype(fromTag);
    dispatchAny(*to, [&](auto toTag) {
      using To = decltype(toTag);
      ArrayRef<From> x = a.data<From>();
      MutableArrayRef<To> o = out.data<To>();
      for (size_t i = 0; i < x.size(); ++i) {
        if constexpr (std::is_floating_point_v<From> &&
                      std::is_integral_v<To>) {
          // In range iff -2^(bits-1) <= x < 2^(bits-1), tested exactly in
          // From; NaN fails both.
          const From bound =
              std::ldexp(From(1), std::numeric_limits<To>::digits);
          if (!(x[i] >= -bound && x[i] < bound)) {
            o[i] = std::numeric_limits<To>::min();
            continue;
          }
        }
        o[i] = static_cast<To>(x[i]);
      }
    });
  });
  f.set(op.getResult(), std::move(out));
  return success();
}

LogicalResult runWhere(nn::WhereOp op, Frame &f) {
  const Tensor &c = f.get(op.getCondition());
  const Tensor &a = f.get(op.getLhs()), &b = f.get(op.getRhs());
  auto values = nn::broadcastShapes(a.getShape(), b.getShape());
  FailureOr<SmallVector<int64_t>> shape = failure();
  if (succeeded(values))
    shape = nn::broadcastShapes(c.getShape(), *values);
  if (failed(shape))
    return op.emitOpError("operands of shapes ")
           << shapeToString(c.getShape()) << ", " << shapeToString(a.getShape())
           << " and " << shapeToString(b.getShape()) << " do not broadcast";
  Tensor out(a.getDType(), *shape);
  SmallVector<int64_t> sc = broadcastStrides(c.getShape(), *shape);
  SmallVector<int64_t> sa = broadcastStrides(a.getShape(), *shape);
  SmallVector<int64_t> sb = broadcastStrides(b.getShape(), *shape);
  forEachIndex(*shape, [&](ArrayRef<int64_t> idx, int64_t i) {
    if (c.getDouble(offsetOf(idx, sc)) != 0)
      out.copyElement(i, a, offsetOf(idx, sa));
    else
      out.copyElement(i, b, offsetOf(idx, sb));
  });
  f.set(op.getResult(), std::move(out));
  return success();
}

//===----------------------------------------------------------------------===//
// Elementwise unary and activation gradients
//===----------------------------------------------------------------------===//

/// `fn(x)` elementwise in the element type; `fn` is generic in T.
template <typename OpTy, typename Fn>
LogicalResult runUnary(OpTy op, Frame &f, Fn fn) {
  const Tensor &x = f.get(op.getInput());
  Tensor out(x.getDType(), x.getShape());
  dispatchFloat(x.getDType(), [&](auto tag) {
    using T = decltype(tag);
    ArrayRef<T> in = x.data<T>();
    MutableArrayRef<T> o = out.data<T>();
    for (size_t i = 0; i < in.size(); ++i)
      o[i] = fn(in[i]);
  });
  f.set(op.getResult(), std::move(out));
  return success();
}

/// `fn(grad, input)` elementwise; both have the op's type.
template <typename OpTy, typename Fn>
LogicalResult runActivationGrad(OpTy op, Frame &f, Fn fn) {
  const Tensor &g = f.get(op.getGrad()), &x = f.get(op.getInput());
  if (g.getShape() != x.getShape())
    return op.emitOpError("grad ")
           << shapeToString(g.getShape()) << " and input "
           << shapeToString(x.getShape()) << " differ in shape";
  Tensor out(x.getDType(), x.getShape());
  dispatchFloat(x.getDType(), [&](auto tag) {
    using T = decltype(tag);
    ArrayRef<T> dy = g.data<T>(), in = x.data<T>();
    MutableArrayRef<T> o = out.data<T>();
    for (size_t i = 0; i < in.size(); ++i)
      o[i] = fn(dy[i], in[i]);
  });
  f.set(op.getResult(), std::move(out));
  return success();
}

constexpr double kSqrt2 = 1.41421356237309504880;
constexpr double kSqrt2OverPi = 0.79788456080286535588; // sqrt(2 / pi)
constexpr double kInvSqrt2Pi = 0.39894228040143267794;  // 1 / sqrt(2 pi)
constexpr double kGeluTanhCoeff = 0.044715;

LogicalResult runNeg(nn::NegOp op, Frame &f) {
  const Tensor &x = f.get(op.getInput());
  if (isFloat(x.getDType()))
    return runUnary(op, f, [](auto v) { return -v; });
  Tensor out(x.getDType(), x.getShape());
  dispatchAny(x.getDType(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T>) {
      ArrayRef<T> in = x.data<T>();
      MutableArrayRef<T> o = out.data<T>();
      for (size_t i = 0; i < in.size(); ++i)
        o[i] = wrapping(T(0), in[i], [](auto u, auto v) { return u - v; });
    }
  });
  f.set(op.getResult(), std::move(out));
  return success();
}
LogicalResult runExp(nn::ExpOp op, Frame &f) {
  return runUnary(op, f, [](auto x) { return std::exp(x); });
}
LogicalResult runLog(nn::LogOp op, Frame &f) {
  return runUnary(op, f, [](auto x) { return std::log(x); });
}
LogicalResult runSqrt(nn::SqrtOp op, Frame &f) {
  return runUnary(op, f, [](auto x) { return std::sqrt(x); });
}
LogicalResult runErf(nn::ErfOp op, Frame &f) {
  return runUnary(op, f, [](auto x) { return std::erf(x); });
}
LogicalResult runRelu(nn::ReluOp op, Frame &f) {
  return runUnary(op, f, [](auto x) { return x > 0 ? x : decltype(x)(0); });
}
LogicalResult runSigmoid(nn::SigmoidOp op, Frame &f) {
  return runUnary(op, f, [](auto x) {
    using T = decltype(x);
    return T(1) / (T(1) + std::exp(-x));
  });
}
LogicalResult runTanh(nn::TanhOp op, Frame &f) {
  return runUnary(op, f, [](auto x) { return std::tanh(x); });
}
LogicalResult runSin(nn::SinOp op, Frame &f) {
  return runUnary(op, f, [](auto x) { return std::sin(x); });
}
LogicalResult runCos(nn::CosOp op, Frame &f) {
  return runUnary(op, f, [](auto x) { return std::cos(x); });
}
LogicalResult runFloor(nn::FloorOp op, Frame &f) {
  return runUnary(op, f, [](auto x) { return std::floor(x); });
}
LogicalResult runCeil(nn::CeilOp op, Frame &f) {
  return runUnary(op, f, [](auto x) { return std::ceil(x); });
}
/// Halves to even whatever the floating-point environment's rounding mode
/// (std::nearbyint would follow it), as math.roundeven.
LogicalResult runRound(nn::RoundOp op, Frame &f) {
  return runUnary(op, f, [](auto x) {
    using T = decltype(x);
    T r = std::round(x); // halves away from zero
    return std::fabs(r - x) == T(0.5) ? T(2) * std::round(x / T(2)) : r;
  });
}
LogicalResult runPow(nn::PowOp op, Frame &f) {
  double c = op.getExponent().convertToDouble();
  return runUnary(op, f, [c](auto x) {
    using T = decltype(x);
    return static_cast<T>(std::pow(x, static_cast<T>(c)));
  });
}
LogicalResult runLeakyRelu(nn::LeakyReluOp op, Frame &f) {
  double alpha = op.getAlpha().convertToDouble();
  return runUnary(op, f, [alpha](auto x) {
    using T = decltype(x);
    return x >= 0 ? x : static_cast<T>(alpha) * x;
  });
}
LogicalResult runClamp(nn::ClampOp op, Frame &f) {
  double lo = op.getMin().convertToDouble();
  double hi = op.getMax().convertToDouble();
  return runUnary(op, f, [lo, hi](auto x) {
    using T = decltype(x);
    // Comparisons rather than std::clamp, so that NaN passes through.
    if (x < static_cast<T>(lo))
      return static_cast<T>(lo);
    if (x > static_cast<T>(hi))
      return static_cast<T>(hi);
    return x;
  });
}
LogicalResult runGelu(nn::GeluOp op, Frame &f) {
  bool tanhForm = op.getApproximate() == nn::GeluApproximation::tanh;
  return runUnary(op, f, [tanhForm](auto x) {
    using T = decltype(x);
    if (tanhForm) {
      T u = T(kSqrt2OverPi) * (x + T(kGeluTanhCoeff) * x * x * x);
      return T(0.5) * x * (T(1) + std::tanh(u));
    }
    return T(0.5) * x * (T(1) + std::erf(x / T(kSqrt2)));
  });
}

// The derivative at a kink is the one PyTorch uses: relu' and leaky_relu'
// take the negative branch at exactly 0.
LogicalResult runReluGrad(nn::ReluGradOp op, Frame &f) {
  return runActivationGrad(
      op, f, [](auto g, auto x) { return x > 0 ? g : decltype(g)(0); });
}
LogicalResult runLeakyReluGrad(nn::LeakyReluGradOp op, Frame &f) {
  double alpha = op.getAlpha().convertToDouble();
  return runActivationGrad(op, f, [alpha](auto g, auto x) {
    using T = decltype(g);
    return x > 0 ? g : static_cast<T>(alpha) * g;
  });
}
// clamp' is 0 at the bounds, as PyTorch's hardtanh' (see nn.clamp).
LogicalResult runClampGrad(nn::ClampGradOp op, Frame &f) {
  double lo = op.getMin().convertToDouble();
  double hi = op.getMax().convertToDouble();
  return runActivationGrad(op, f, [lo, hi](auto g, auto x) {
    using T = decltype(g);
    return x > static_cast<T>(lo) && x < static_cast<T>(hi) ? g : T(0);
  });
}
LogicalResult runGeluGrad(nn::GeluGradOp op, Frame &f) {
  bool tanhForm = op.getApproximate() == nn::GeluApproximation::tanh;
  return runActivationGrad(op, f, [tanhForm](auto g, auto x) {
    using T = decltype(g);
    if (tanhForm) {
      T x2 = x * x;
      T t = std::tanh(T(kSqrt2OverPi) * (x + T(kGeluTanhCoeff) * x2 * x));
      T du = T(kSqrt2OverPi) * (T(1) + T(3 * kGeluTanhCoeff) * x2);
      return g * (T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * du);
    }
    T cdf = T(0.5) * (T(1) + std::erf(x / T(kSqrt2)));
    T pdf = T(kInvSqrt2Pi) * std::exp(T(-0.5) * x * x);
    return g * (cdf + x * pdf);
  });
}

//===----------------------------------------------------------------------===//
// Matrix products
//===----------------------------------------------------------------------===//

LogicalResult runMatmul(nn::MatmulOp op, Frame &f) {
  const Tensor &a = f.get(op.getLhs()), &b = f.get(op.getRhs());
  ArrayRef<int64_t> as = a.getShape(), bs = b.getShape();
  int64_t ar = as.size(), br = bs.size();
  bool ta = op.getTransposeA(), tb = op.getTransposeB();
  int64_t m = ta ? as[ar - 1] : as[ar - 2], k = ta ? as[ar - 2] : as[ar - 1];
  int64_t kb = tb ? bs[br - 1] : bs[br - 2], n = tb ? bs[br - 2] : bs[br - 1];
  bool shared = br == 2;
  if (k != kb || (!shared && as.drop_back(2) != bs.drop_back(2)))
    return op.emitOpError("operands ")
           << shapeToString(as) << " and " << shapeToString(bs)
           << " do not multiply";
  SmallVector<int64_t> shape(as.drop_back(2));
  int64_t batch = numElementsOf(shape);
  shape.append({m, n});
  std::vector<double> x = f.multiplied(op, a), y = f.multiplied(op, b);
  std::vector<double> out(batch * m * n);
  int64_t aMat = as[ar - 2] * as[ar - 1], bMat = bs[br - 2] * bs[br - 1];
  for (int64_t t = 0; t < batch; ++t) {
    const double *pa = x.data() + t * aMat;
    const double *pb = y.data() + (shared ? 0 : t * bMat);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t p = 0; p < k; ++p)
          acc += (ta ? pa[p * m + i] : pa[i * k + p]) *
                 (tb ? pb[j * k + p] : pb[p * n + j]);
        out[(t * m + i) * n + j] = acc;
      }
  }
  f.set(op.getResult(), Tensor::fromDoubles(a.getDType(), shape, out));
  return success();
}

LogicalResult runLinear(nn::LinearOp op, Frame &f) {
  const Tensor &x = f.get(op.getInput()), &w = f.get(op.getWeight());
  ArrayRef<int64_t> xs = x.getShape(), ws = w.getShape();
  int64_t in = xs.back(), outF = ws[0];
  if (ws[1] != in)
    return op.emitOpError("input features (")
           << in << ") do not match weight " << shapeToString(ws);
  const Tensor *bias = op.getBias() ? &f.get(op.getBias()) : nullptr;
  if (bias && bias->getShape() != ArrayRef<int64_t>{outF})
    return op.emitOpError("bias ")
           << shapeToString(bias->getShape()) << " does not match weight "
           << shapeToString(ws);
  int64_t rows = numElementsOf(xs.drop_back());
  std::vector<double> xv = f.multiplied(op, x), wv = f.multiplied(op, w);
  std::vector<double> out(rows * outF);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < outF; ++o) {
      double acc = bias ? bias->getDouble(o) : 0.0;
      for (int64_t i = 0; i < in; ++i)
        acc += xv[r * in + i] * wv[o * in + i];
      out[r * outF + o] = acc;
    }
  SmallVector<int64_t> shape(xs);
  shape.back() = outF;
  f.set(op.getResult(), Tensor::fromDoubles(x.getDType(), shape, out));
  return success();
}

//===----------------------------------------------------------------------===//
// Shape ops
//===----------------------------------------------------------------------===//

/// A copy of `x`'s elements (row-major order kept) with a new shape.
Tensor withShape(const Tensor &x, ArrayRef<int64_t> shape) {
  return Tensor::fromDoubles(x.getDType(), shape, x.toDoubles());
}

LogicalResult runReshape(nn::ReshapeOp op, Frame &f) {
  const Tensor &x = f.get(op.getInput());
  SmallVector<int64_t> shape(op.getShape());
  int64_t known = 1, inferred = -1;
  for (auto [i, d] : llvm::enumerate(shape)) {
    if (d == -1)
      inferred = i;
    else
      known *= d;
  }
  int64_t count = x.getNumElements();
  if (inferred >= 0 && known != 0 && count % known == 0)
    shape[inferred] = count / known;
  if (numElementsOf(shape) != count || llvm::is_contained(shape, -1))
    return op.emitOpError("cannot reshape ")
           << shapeToString(x.getShape()) << " into "
           << shapeToString(op.getShape());
  f.set(op.getResult(), withShape(x, shape));
  return success();
}

LogicalResult runFlatten(nn::FlattenOp op, Frame &f) {
  const Tensor &x = f.get(op.getInput());
  int64_t axis = op.getAxis();
  if (axis < 0)
    axis += x.getRank();
  if (axis < 0 || axis > x.getRank())
    return op.emitOpError("axis ") << op.getAxis() << " out of range";
  ArrayRef<int64_t> s = x.getShape();
  f.set(op.getResult(), withShape(x, {numElementsOf(s.take_front(axis)),
                                      numElementsOf(s.drop_front(axis))}));
  return success();
}

LogicalResult runTranspose(nn::TransposeOp op, Frame &f) {
  const Tensor &x = f.get(op.getInput());
  ArrayRef<int64_t> perm = op.getPermutation();
  if (static_cast<int64_t>(perm.size()) != x.getRank())
    return op.emitOpError("permutation has ")
           << perm.size() << " entries for rank " << x.getRank();
  SmallVector<int64_t> shape, inStrides = x.getStrides(), strides;
  for (int64_t p : perm) {
    shape.push_back(x.getShape()[p]);
    strides.push_back(inStrides[p]);
  }
  Tensor out(x.getDType(), shape);
  forEachIndex(shape, [&](ArrayRef<int64_t> idx, int64_t i) {
    out.copyElement(i, x, offsetOf(idx, strides));
  });
  f.set(op.getResult(), std::move(out));
  return success();
}

LogicalResult runConcat(nn::ConcatOp op, Frame &f) {
  const Tensor &first = f.get(op.getInputs().front());
  std::optional<int64_t> axis =
      nn::normalizeAxis(op.getAxis(), first.getRank());
  if (!axis)
    return op.emitOpError("axis ") << op.getAxis() << " out of range";
  SmallVector<int64_t> shape(first.getShape());
  shape[*axis] = 0;
  for (Value v : op.getInputs()) {
    const Tensor &t = f.get(v);
    for (int64_t d = 0; d < first.getRank(); ++d)
      if (d != *axis && t.getShape()[d] != first.getShape()[d])
        return op.emitOpError("inputs ")
               << shapeToString(first.getShape()) << " and "
               << shapeToString(t.getShape())
               << " differ outside the concatenation axis";
    shape[*axis] += t.getShape()[*axis];
  }
  Tensor out(first.getDType(), shape);
  SmallVector<int64_t> outStrides = out.getStrides();
  int64_t offset = 0;
  for (Value v : op.getInputs()) {
    const Tensor &t = f.get(v);
    forEachIndex(t.getShape(), [&](ArrayRef<int64_t> idx, int64_t i) {
      SmallVector<int64_t> o(idx);
      o[*axis] += offset;
      out.copyElement(offsetOf(o, outStrides), t, i);
    });
    offset += t.getShape()[*axis];
  }
  f.set(op.getResult(), std::move(out));
  return success();
}

LogicalResult runSlice(nn::SliceOp op, Frame &f) {
  const Tensor &x = f.get(op.getInput());
  ArrayRef<int64_t> starts = op.getStarts(), steps = op.getStrides();
  SmallVector<int64_t> sizes =
      nn::SliceOp::resultShape(x.getShape(), starts, op.getSizes(), steps);
  for (int64_t d = 0; d < x.getRank(); ++d)
    if (sizes[d] > 0 &&
        starts[d] + (sizes[d] - 1) * steps[d] >= x.getShape()[d])
      return op.emitOpError("dimension ")
             << d << ": slice exceeds the size " << x.getShape()[d];
  SmallVector<int64_t> inStrides = x.getStrides();
  Tensor out(x.getDType(), sizes);
  forEachIndex(sizes, [&](ArrayRef<int64_t> idx, int64_t i) {
    int64_t src = 0;
    for (size_t d = 0; d < idx.size(); ++d)
      src += (starts[d] + idx[d] * steps[d]) * inStrides[d];
    out.copyElement(i, x, src);
  });
  f.set(op.getResult(), std::move(out));
  return success();
}

LogicalResult runPad(nn::PadOp op, Frame &f) {
  const Tensor &x = f.get(op.getInput());
  ArrayRef<int64_t> starts = op.getStarts(), steps = op.getStrides(),
                    shape = op.getShape();
  for (int64_t d = 0; d < x.getRank(); ++d) {
    int64_t n = x.getShape()[d];
    if (n > 0 && starts[d] + (n - 1) * steps[d] >= shape[d])
      return op.emitOpError("dimension ")
             << d << ": the input does not fit in size " << shape[d];
  }
  Tensor out(x.getDType(), shape);
  SmallVector<int64_t> outStrides = out.getStrides();
  forEachIndex(x.getShape(), [&](ArrayRef<int64_t> idx, int64_t i) {
    int64_t dst = 0;
    for (size_t d = 0; d < idx.size(); ++d)
      dst += (starts[d] + idx[d] * steps[d]) * outStrides[d];
    out.copyElement(dst, x, i);
  });
  f.set(op.getResult(), std::move(out));
  return success();
}

LogicalResult runBroadcastTo(nn::BroadcastToOp op, Frame &f) {
  const Tensor &x = f.get(op.getInput());
  SmallVector<int64_t> shape(op.getShape());
  for (int64_t &d : shape)
    if (d == -1 && op.getBatchSource())
      d = f.get(op.getBatchSource()).getShape()[0];
  auto joint = nn::broadcastShapes(x.getShape(), shape);
  if (failed(joint) || ArrayRef<int64_t>(*joint) != ArrayRef<int64_t>(shape))
    return op.emitOpError("cannot broadcast ")
           << shapeToString(x.getShape()) << " to " << shapeToString(shape);
  SmallVector<int64_t> strides = broadcastStrides(x.getShape(), shape);
  Tensor out(x.getDType(), shape);
  forEachIndex(shape, [&](ArrayRef<int64_t> idx, int64_t i) {
    out.copyElement(i, x, offsetOf(idx, strides));
  });
  f.set(op.getResult(), std::move(out));
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

/// How a reduction maps input elements to output elements.
struct Reduction {
  SmallVector<int64_t> outShape;
  /// Strides into the output for each input dimension (0 when reduced).
  SmallVector<int64_t> strides;
  int64_t count = 1;
};

/// `axes` normalised (empty meaning all), or failure.
FailureOr<SmallVector<int64_t>> normalizedAxes(ArrayRef<int64_t> axes,
                                               int64_t rank) {
  SmallVector<int64_t> out;
  if (axes.empty()) {
    for (int64_t d = 0; d < rank; ++d)
      out.push_back(d);
    return out;
  }
  for (int64_t a : axes) {
    std::optional<int64_t> n = nn::normalizeAxis(a, rank);
    if (!n || llvm::is_contained(out, *n))
      return failure();
    out.push_back(*n);
  }
  return out;
}

Reduction makeReduction(ArrayRef<int64_t> shape, ArrayRef<int64_t> axes,
                        bool keepdims) {
  Reduction r;
  SmallVector<int64_t> kept(shape);
  for (int64_t a : axes) {
    r.count *= shape[a];
    kept[a] = 1;
  }
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d)
    if (keepdims || !llvm::is_contained(axes, d))
      r.outShape.push_back(kept[d]);
  // Strides of the kept-dims shape, zeroed on reduced axes, address the
  // output whether or not the reduced dimensions are kept.
  r.strides.assign(shape.size(), 0);
  int64_t stride = 1;
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    if (!llvm::is_contained(axes, d))
      r.strides[d] = stride;
    stride *= kept[d];
  }
  return r;
}

/// Sum (or mean) over `axes` in double.
template <typename OpTy>
LogicalResult runSumLike(OpTy op, Frame &f, bool mean) {
  const Tensor &x = f.get(op.getInput());
  auto axes = normalizedAxes(op.getAxes(), x.getRank());
  if (failed(axes))
    return op.emitOpError("invalid axes");
  Reduction r = makeReduction(x.getShape(), *axes, op.getKeepdims());
  std::vector<double> acc(numElementsOf(r.outShape), 0.0);
  forEachIndex(x.getShape(), [&](ArrayRef<int64_t> idx, int64_t i) {
    acc[offsetOf(idx, r.strides)] += x.getDouble(i);
  });
  if (mean)
    for (double &v : acc)
      v /= static_cast<double>(r.count);
  f.set(op.getResult(), Tensor::fromDoubles(x.getDType(), r.outShape, acc));
  return success();
}

LogicalResult runReduceSum(nn::ReduceSumOp op, Frame &f) {
  return runSumLike(op, f, /*mean=*/false);
}
LogicalResult runReduceMean(nn::ReduceMeanOp op, Frame &f) {
  return runSumLike(op, f, /*mean=*/true);
}

/// Maximum over the reduced axes; NaN propagates.
std::vector<double> reduceMax(const Tensor &x, const Reduction &r) {
  std::vector<double> best(numElementsOf(r.outShape),
                           -std::numeric_limits<double>::infinity());
  forEachIndex(x.getShape(), [&](ArrayRef<int64_t> idx, int64_t i) {
    double v = x.getDouble(i);
    double &b = best[offsetOf(idx, r.strides)];
    if (v > b || std::isnan(v))
      b = v;
  });
  return best;
}

LogicalResult runReduceMax(nn::ReduceMaxOp op, Frame &f) {
  const Tensor &x = f.get(op.getInput());
  auto axes = normalizedAxes(op.getAxes(), x.getRank());
  if (failed(axes))
    return op.emitOpError("invalid axes");
  Reduction r = makeReduction(x.getShape(), *axes, op.getKeepdims());
  f.set(op.getResult(),
        Tensor::fromDoubles(x.getDType(), r.outShape, reduceMax(x, r)));
  return success();
}

LogicalResult runReduceMaxGrad(nn::ReduceMaxGradOp op, Frame &f) {
  const Tensor &g = f.get(op.getGrad()), &x = f.get(op.getInput());
  auto axes = normalizedAxes(op.getAxes(), x.getRank());
  if (failed(axes))
    return op.emitOpError("invalid axes");
  Reduction r = makeReduction(x.getShape(), *axes, op.getKeepdims());
  if (g.getShape() != ArrayRef<int64_t>(r.outShape))
    return op.emitOpError("grad ")
           << shapeToString(g.getShape()) << " does not match the reduction "
           << shapeToString(r.outShape);
  std::vector<double> best = reduceMax(x, r);
  std::vector<int64_t> ties(best.size(), 0);
  forEachIndex(x.getShape(), [&](ArrayRef<int64_t> idx, int64_t i) {
    int64_t o = offsetOf(idx, r.strides);
    if (x.getDouble(i) == best[o])
      ++ties[o];
  });
  Tensor out(x.getDType(), x.getShape());
  forEachIndex(x.getShape(), [&](ArrayRef<int64_t> idx, int64_t i) {
    int64_t o = offsetOf(idx, r.strides);
    if (x.getDouble(i) == best[o])
      out.setDouble(i, g.getDouble(o) / static_cast<double>(ties[o]));
  });
  f.set(op.getResult(), std::move(out));
  return success();
}

//===----------------------------------------------------------------------===//
// Softmax and losses
//===----------------------------------------------------------------------===//

/// Calls `fn(base, stride)` for each line of `shape` along `axis`: the
/// elements base + k * stride for k < shape[axis].
template <typename Fn>
void forEachLine(ArrayRef<int64_t> shape, int64_t axis, Fn &&fn) {
  int64_t inner = numElementsOf(shape.drop_front(axis + 1));
  int64_t outer = numElementsOf(shape.take_front(axis));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i)
      fn(o * shape[axis] * inner + i, inner);
}

/// Softmax or log-softmax along the op's axis, in double.
template <typename OpTy>
LogicalResult runSoftmaxLike(OpTy op, Frame &f, bool log) {
  const Tensor &x = f.get(op.getInput());
  std::optional<int64_t> axis = nn::normalizeAxis(op.getAxis(), x.getRank());
  if (!axis)
    return op.emitOpError("axis ") << op.getAxis() << " out of range";
  int64_t n = x.getShape()[*axis];
  Tensor out(x.getDType(), x.getShape());
  forEachLine(x.getShape(), *axis, [&](int64_t base, int64_t stride) {
    double mx = -std::numeric_limits<double>::infinity();
    for (int64_t k = 0; k < n; ++k)
      mx = std::max(mx, x.getDouble(base + k * stride));
    double sum = 0;
    for (int64_t k = 0; k < n; ++k)
      sum += std::exp(x.getDouble(base + k * stride) - mx);
    double logSum = std::log(sum);
    for (int64_t k = 0; k < n; ++k) {
      double z = x.getDouble(base + k * stride) - mx;
      out.setDouble(base + k * stride, log ? z - logSum : std::exp(z) / sum);
    }
  });
  f.set(op.getResult(), std::move(out));
  return success();
}

LogicalResult runSoftmax(nn::SoftmaxOp op, Frame &f) {
  return runSoftmaxLike(op, f, /*log=*/false);
}
LogicalResult runLogSoftmax(nn::LogSoftmaxOp op, Frame &f) {
  return runSoftmaxLike(op, f, /*log=*/true);
}

/// The operands of attention in double, and its scores row by row: what
/// nn.attention, nn.fused_attention and nn.fused_attention_grad share.
struct AttentionProblem {
  std::vector<double> q, k, v, mask;
  int64_t batch, t, s, d, dv;
  std::optional<double> scale;
  bool divides, causal;
  DType dtype;
  SmallVector<int64_t> leading;

  /// Reads the operands of `op` (any of the three ops) from `f`, rounded
  /// to bf16 where `f` emulates a kernel that stores them so.
  template <typename OpTy> LogicalResult read(OpTy op, Frame &f) {
    const Tensor &qt = f.get(op.getQuery()), &kt = f.get(op.getKey()),
                 &vt = f.get(op.getValue());
    ArrayRef<int64_t> qs = qt.getShape(), ks = kt.getShape(),
                      vs = vt.getShape();
    int64_t rank = qs.size();
    if (qs.drop_back(2) != ks.drop_back(2) ||
        qs.drop_back(2) != vs.drop_back(2) || qs.back() != ks.back() ||
        ks[rank - 2] != vs[rank - 2])
      return op.emitOpError("query ")
             << shapeToString(qs) << ", key " << shapeToString(ks)
             << " and value " << shapeToString(vs) << " do not match";
    t = qs[rank - 2], s = ks[rank - 2], d = qs.back(), dv = vs.back();
    leading.assign(qs.begin(), qs.end() - 2);
    batch = numElementsOf(leading);
    SmallVector<int64_t> scoresShape(qs.drop_back());
    scoresShape.push_back(s);
    // The mask, broadcast to the scores.
    if (Value m = op.getMask()) {
      const Tensor &mt = f.get(m);
      FailureOr<SmallVector<int64_t>> shape =
          nn::broadcastShapes(mt.getShape(), scoresShape);
      if (failed(shape) || ArrayRef<int64_t>(*shape) != ArrayRef(scoresShape))
        return op.emitOpError("mask ")
               << shapeToString(mt.getShape()) << " does not broadcast to "
               << shapeToString(scoresShape);
      SmallVector<int64_t> strides =
          broadcastStrides(mt.getShape(), scoresShape);
      std::vector<double> values = f.multiplied(op, mt);
      mask.resize(numElementsOf(scoresShape));
      forEachIndex(scoresShape, [&](ArrayRef<int64_t> idx, int64_t i) {
        mask[i] = values[offsetOf(idx, strides)];
      });
    }
    scale = op.getScaleValue();
    divides = op.getScaleIsDivisor(), causal = op.getCausal();
    q = f.multiplied(op, qt), k = f.multiplied(op, kt),
    v = f.multiplied(op, vt);
    dtype = qt.getDType();
    return success();
  }

  /// The scaled, masked scores of row `i` of slice `bt`; returns their
  /// maximum.
  double scores(int64_t bt, int64_t i, std::vector<double> &row) const {
    double mx = -std::numeric_limits<double>::infinity();
    for (int64_t j = 0; j < s; ++j) {
      double acc = 0;
      for (int64_t p = 0; p < d; ++p)
        acc += q[(bt * t + i) * d + p] * k[(bt * s + j) * d + p];
      if (scale)
        acc = divides ? acc / *scale : acc * *scale;
      if (!mask.empty())
        acc += mask[(bt * t + i) * s + j];
      if (causal && j > i)
        acc = -std::numeric_limits<double>::infinity();
      row[j] = acc;
      mx = std::max(mx, acc);
    }
    return mx;
  }

  /// What the probability (bt, i, j) is multiplied by before the product
  /// with v: keep / (1 - r) for the fused ops' dropout, else 1.
  double kept(int64_t bt, int64_t i, int64_t j) const {
    return keep.empty() ? 1.0 : keep[(bt * t + i) * s + j] * keepScale;
  }
  /// The fused ops' `keep` (rounded as the kernel stores it) and its scale.
  template <typename OpTy> void readKeep(OpTy op, Frame &f) {
    if (Value k = op.getKeep()) {
      keep = f.multiplied(op, f.get(k));
      keepScale = 1.0 / (1.0 - op.getDropoutRatio()->convertToDouble());
    }
  }
  std::vector<double> keep;
  double keepScale = 1;

  /// `leading` followed by `tail`.
  SmallVector<int64_t> shape(ArrayRef<int64_t> tail) const {
    SmallVector<int64_t> out(leading);
    out.append(tail.begin(), tail.end());
    return out;
  }
};

/// softmax(mask(scale(q k^T))) v in double, one row of scores at a time,
/// and each row's log-sum-exp (for nn.fused_attention).
/// With bf16 emulation (fused only: which operands an unfused one would
/// round is the decomposition's business) the operands are rounded and the
/// result too where the options say, the log-sum-exp never.
template <typename OpTy>
LogicalResult runAttentionForward(OpTy op, Frame &f, Value lseResult) {
  if (!lseResult && f.roundsOperandsToBf16(op))
    return op.emitOpError("is not emulated in bf16: decompose it first "
                          "(cleave-decompose-attention)");
  AttentionProblem a;
  if (failed(a.read(op, f)))
    return failure();
  // nn.attention's dropout: nn.dropout's mask over the probabilities,
  // element (bt, i, j) at row-major index (bt * T + i) * S + j.
  std::optional<double> ratio;
  uint64_t key = 0;
  if constexpr (std::is_same_v<OpTy, nn::AttentionOp>) {
    if (Value seed = op.getSeed()) {
      ratio = op.getDropoutRatio()->convertToDouble();
      key = nn::DropoutOp::streamKey(
          static_cast<uint64_t>(f.get(seed).getInt(0)),
          static_cast<uint64_t>(op.getDropoutStream()));
    }
  } else {
    a.readKeep(op, f);
  }
  std::vector<double> out(a.batch * a.t * a.dv), lse(a.batch * a.t), row(a.s);
  for (int64_t bt = 0; bt < a.batch; ++bt)
    for (int64_t i = 0; i < a.t; ++i) {
      double mx = a.scores(bt, i, row);
      double sum = 0;
      for (int64_t j = 0; j < a.s; ++j)
        sum += row[j] = std::exp(row[j] - mx);
      lse[bt * a.t + i] = mx + std::log(sum);
      for (int64_t j = 0; j < a.s; ++j) {
        row[j] = row[j] / sum * a.kept(bt, i, j);
        if (ratio)
          row[j] = nn::DropoutOp::keeps(key, (bt * a.t + i) * a.s + j, *ratio)
                       ? row[j] * (1.0 / (1.0 - *ratio))
                       : 0.0;
      }
      for (int64_t c = 0; c < a.dv; ++c) {
        double acc = 0;
        for (int64_t j = 0; j < a.s; ++j)
          acc += row[j] * a.v[(bt * a.s + j) * a.dv + c];
        out[(bt * a.t + i) * a.dv + c] = acc;
      }
    }
  f.storeResult(op, out);
  f.set(op.getResult(),
        Tensor::fromDoubles(a.dtype, a.shape({a.t, a.dv}), out));
  if (lseResult)
    f.set(lseResult, Tensor::fromDoubles(a.dtype, a.shape({a.t}), lse));
  return success();
}

LogicalResult runAttention(nn::AttentionOp op, Frame &f) {
  return runAttentionForward(op, f, Value());
}

LogicalResult runFusedAttention(nn::FusedAttentionOp op, Frame &f) {
  return runAttentionForward(op, f, op.getLse());
}

/// nn.fused_attention_grad as its definition says, in double: the
/// probabilities from the given log-sum-exp. With bf16 emulation every
/// operand but the log-sum-exp is rounded, and the results where the
/// options say.
LogicalResult runFusedAttentionGrad(nn::FusedAttentionGradOp op, Frame &f) {
  AttentionProblem a;
  if (failed(a.read(op, f)))
    return failure();
  a.readKeep(op, f);
  std::vector<double> o = f.multiplied(op, f.get(op.getResult())),
                      lse = f.get(op.getLse()).toDoubles(),
                      dO = f.multiplied(op, f.get(op.getResultGrad()));
  std::vector<double> dq(a.q.size()), dk(a.k.size()), dv(a.v.size()), row(a.s);
  double scale = a.scale ? (a.divides ? 1 / *a.scale : *a.scale) : 1;
  for (int64_t bt = 0; bt < a.batch; ++bt)
    for (int64_t i = 0; i < a.t; ++i) {
      a.scores(bt, i, row);
      const int64_t r = bt * a.t + i;
      double delta = 0;
      for (int64_t c = 0; c < a.dv; ++c)
        delta += dO[r * a.dv + c] * o[r * a.dv + c];
      for (int64_t j = 0; j < a.s; ++j) {
        double p = std::exp(row[j] - lse[r]), kept = a.kept(bt, i, j);
        double dp = 0;
        for (int64_t c = 0; c < a.dv; ++c) {
          dv[(bt * a.s + j) * a.dv + c] += p * kept * dO[r * a.dv + c];
          dp += dO[r * a.dv + c] * a.v[(bt * a.s + j) * a.dv + c];
        }
        double ds = p * (dp * kept - delta) * scale;
        for (int64_t c = 0; c < a.d; ++c) {
          dq[r * a.d + c] += ds * a.k[(bt * a.s + j) * a.d + c];
          dk[(bt * a.s + j) * a.d + c] += ds * a.q[r * a.d + c];
        }
      }
    }
  f.storeResult(op, dq);
  f.storeResult(op, dk);
  f.storeResult(op, dv);
  f.set(op.getQueryGrad(),
        Tensor::fromDoubles(a.dtype, a.shape({a.t, a.d}), dq));
  f.set(op.getKeyGrad(), Tensor::fromDoubles(a.dtype, a.shape({a.s, a.d}), dk));
  f.set(op.getValueGrad(),
        Tensor::fromDoubles(a.dtype, a.shape({a.s, a.dv}), dv));
  return success();
}

LogicalResult runOneHot(nn::OneHotOp op, Frame &f) {
  const Tensor &labels = f.get(op.getLabels());
  int64_t c = op.getNumClasses();
  std::optional<DType> dtype = getDType(op.getDtype());
  if (!dtype || !isFloat(*dtype))
    return op.emitOpError("dtype ")
           << op.getDtype() << " is not supported by the interpreter";
  SmallVector<int64_t> shape(labels.getShape());
  shape.push_back(c);
  Tensor out(*dtype, shape);
  for (int64_t i = 0, e = labels.getNumElements(); i < e; ++i) {
    int64_t l = labels.getInt(i);
    if (l >= 0 && l < c)
      out.setDouble(i * c + l, 1.0);
  }
  f.set(op.getResult(), std::move(out));
  return success();
}

/// Reduces per-sample losses as the op's `reduction` says; `meanCount` is
/// the divisor of `mean`.
Tensor reduceLoss(DType dtype, ArrayRef<double> perSample,
                  nn::Reduction reduction, double meanCount) {
  if (reduction == nn::Reduction::none)
    return Tensor::fromDoubles(dtype, {static_cast<int64_t>(perSample.size())},
                               perSample);
  double sum = 0;
  for (double v : perSample)
    sum += v;
  return Tensor::scalar(
      dtype, reduction == nn::Reduction::mean ? sum / meanCount : sum);
}

LogicalResult runCrossEntropy(nn::CrossEntropyOp op, Frame &f) {
  const Tensor &x = f.get(op.getLogits()), &labels = f.get(op.getLabels());
  int64_t b = x.getShape()[0], c = x.getShape()[1];
  if (labels.getShape() != ArrayRef<int64_t>{b})
    return op.emitOpError("labels ")
           << shapeToString(labels.getShape()) << " do not match logits "
           << shapeToString(x.getShape());
  std::vector<double> loss(b);
  for (int64_t i = 0; i < b; ++i) {
    int64_t l = labels.getInt(i);
    if (l < 0 || l >= c)
      return op.emitOpError("label ")
             << l << " of sample " << i << " is out of range [0, " << c << ")";
    double mx = -std::numeric_limits<double>::infinity();
    for (int64_t k = 0; k < c; ++k)
      mx = std::max(mx, x.getDouble(i * c + k));
    double sum = 0;
    for (int64_t k = 0; k < c; ++k)
      sum += std::exp(x.getDouble(i * c + k) - mx);
    loss[i] = mx + std::log(sum) - x.getDouble(i * c + l);
  }
  f.set(op.getResult(), reduceLoss(x.getDType(), loss, op.getReduction(),
                                   static_cast<double>(b)));
  return success();
}

LogicalResult runMseLoss(nn::MseLossOp op, Frame &f) {
  const Tensor &x = f.get(op.getInput()), &t = f.get(op.getTarget());
  if (x.getShape() != t.getShape())
    return op.emitOpError("input ")
           << shapeToString(x.getShape()) << " and target "
           << shapeToString(t.getShape()) << " differ in shape";
  int64_t b = x.getShape()[0];
  int64_t per = b == 0 ? 0 : x.getNumElements() / b;
  std::vector<double> loss(b, 0.0);
  for (int64_t i = 0; i < b; ++i) {
    for (int64_t k = 0; k < per; ++k) {
      double d = x.getDouble(i * per + k) - t.getDouble(i * per + k);
      loss[i] += d * d;
    }
    loss[i] /= static_cast<double>(per);
  }
  // The mean of equal-sized per-sample means is the mean over all elements.
  f.set(op.getResult(), reduceLoss(x.getDType(), loss, op.getReduction(),
                                   static_cast<double>(b)));
  return success();
}

//===----------------------------------------------------------------------===//
// Normalisation
//===----------------------------------------------------------------------===//

/// Checks that a per-channel operand is a vector of `c` elements.
LogicalResult checkVector(Operation *op, StringRef name, const Tensor &t,
                          int64_t c) {
  if (t.getShape() != ArrayRef<int64_t>{c})
    return op->emitOpError()
           << name << " has shape " << shapeToString(t.getShape())
           << ", expected [" << c << "]";
  return success();
}

LogicalResult runBatchNorm(nn::BatchNormOp op, Frame &f) {
  const Tensor &x = f.get(op.getInput());
  const Tensor &scale = f.get(op.getScale()), &bias = f.get(op.getBias());
  const Tensor &rm = f.get(op.getRunningMean()),
               &rv = f.get(op.getRunningVar());
  ArrayRef<int64_t> s = x.getShape();
  int64_t n = s[0], c = s[1], inner = numElementsOf(s.drop_front(2));
  StringRef names[] = {"scale", "bias", "running_mean", "running_var"};
  const Tensor *vectors[] = {&scale, &bias, &rm, &rv};
  for (auto [name, t] : llvm::zip(names, vectors))
    if (failed(checkVector(op, name, *t, c)))
      return failure();
  double eps = op.getEpsilon().convertToDouble();
  double momentum = op.getMomentum().convertToDouble();
  // Sample weights (training mode): statistics over weighted samples and
  // y = w * yhat, so padding (weight 0) neither counts nor outputs.
  std::vector<double> w(n, 1.0);
  if (op.getTraining() && op.getSampleWeights()) {
    const Tensor &wt = f.get(op.getSampleWeights());
    if (wt.getShape() != ArrayRef<int64_t>{n})
      return op.emitOpError("sample_weights has shape ")
             << shapeToString(wt.getShape()) << ", expected [" << n << "]";
    for (int64_t b = 0; b < n; ++b)
      w[b] = wt.getDouble(b);
  }
  double count = 0;
  for (int64_t b = 0; b < n; ++b)
    count += w[b] * inner;
  auto at = [&](int64_t b, int64_t ch, int64_t k) {
    return (b * c + ch) * inner + k;
  };
  Tensor y(x.getDType(), s), newMean = rm, newVar = rv;
  for (int64_t ch = 0; ch < c; ++ch) {
    double mean = rm.getDouble(ch), var = rv.getDouble(ch);
    if (op.getTraining()) {
      if (count < 2)
        return op.emitOpError("training mode needs more than one value per "
                              "channel, got ")
               << count;
      double sum = 0;
      for (int64_t b = 0; b < n; ++b)
        for (int64_t k = 0; k < inner; ++k)
          sum += w[b] * x.getDouble(at(b, ch, k));
      mean = sum / count;
      double sq = 0;
      for (int64_t b = 0; b < n; ++b)
        for (int64_t k = 0; k < inner; ++k) {
          double d = x.getDouble(at(b, ch, k)) - mean;
          sq += w[b] * d * d;
        }
      var = sq / count;
      newMean.setDouble(ch,
                        (1 - momentum) * rm.getDouble(ch) + momentum * mean);
      newVar.setDouble(ch, (1 - momentum) * rv.getDouble(ch) +
                               momentum * sq / (count - 1));
    }
    double invstd = 1.0 / std::sqrt(var + eps);
    double g = scale.getDouble(ch), beta = bias.getDouble(ch);
    for (int64_t b = 0; b < n; ++b)
      for (int64_t k = 0; k < inner; ++k) {
        int64_t i = at(b, ch, k);
        double yhat = (x.getDouble(i) - mean) * invstd * g + beta;
        y.setDouble(i, op.getTraining() && op.getSampleWeights() ? w[b] * yhat
                                                                 : yhat);
      }
  }
  f.set(op.getResult(), std::move(y));
  f.set(op.getRunningMeanOut(), std::move(newMean));
  f.set(op.getRunningVarOut(), std::move(newVar));
  return success();
}

LogicalResult runLayerNorm(nn::LayerNormOp op, Frame &f) {
  const Tensor &x = f.get(op.getInput());
  std::optional<int64_t> axis = nn::normalizeAxis(op.getAxis(), x.getRank());
  if (!axis)
    return op.emitOpError("axis ") << op.getAxis() << " out of range";
  ArrayRef<int64_t> trailing = x.getShape().drop_front(*axis);
  const Tensor *scale = op.getScale() ? &f.get(op.getScale()) : nullptr;
  const Tensor *bias = op.getBias() ? &f.get(op.getBias()) : nullptr;
  for (const Tensor *t : {scale, bias})
    if (t && t->getShape() != trailing)
      return op.emitOpError("scale and bias must have the normalised shape ")
             << shapeToString(trailing) << ", got "
             << shapeToString(t->getShape());
  int64_t inner = numElementsOf(trailing);
  int64_t outer = numElementsOf(x.getShape().take_front(*axis));
  double eps = op.getEpsilon().convertToDouble();
  Tensor y(x.getDType(), x.getShape());
  for (int64_t o = 0; o < outer; ++o) {
    double sum = 0;
    for (int64_t k = 0; k < inner; ++k)
      sum += x.getDouble(o * inner + k);
    double mean = sum / inner, sq = 0;
    for (int64_t k = 0; k < inner; ++k) {
      double d = x.getDouble(o * inner + k) - mean;
      sq += d * d;
    }
    double invstd = 1.0 / std::sqrt(sq / inner + eps);
    for (int64_t k = 0; k < inner; ++k) {
      double v = (x.getDouble(o * inner + k) - mean) * invstd;
      if (scale)
        v *= scale->getDouble(k);
      if (bias)
        v += bias->getDouble(k);
      y.setDouble(o * inner + k, v);
    }
  }
  f.set(op.getResult(), std::move(y));
  return success();
}

//===----------------------------------------------------------------------===//
// Dropout and embedding
//===----------------------------------------------------------------------===//

LogicalResult runDropout(nn::DropoutOp op, Frame &f) {
  const Tensor &x = f.get(op.getInput());
  uint64_t seed = static_cast<uint64_t>(f.get(op.getSeed()).getInt(0));
  double ratio = op.getRatio().convertToDouble();
  uint64_t key =
      nn::DropoutOp::streamKey(seed, static_cast<uint64_t>(op.getStream()));
  double scale = 1.0 / (1.0 - ratio);
  Tensor out(x.getDType(), x.getShape());
  dispatchFloat(x.getDType(), [&](auto tag) {
    using T = decltype(tag);
    ArrayRef<T> in = x.data<T>();
    MutableArrayRef<T> o = out.data<T>();
    for (size_t i = 0; i < in.size(); ++i)
      o[i] = nn::DropoutOp::keeps(key, i, ratio) ? in[i] * static_cast<T>(scale)
                                                 : T(0);
  });
  f.set(op.getResult(), std::move(out));
  return success();
}

/// Checks every index against [0, rows).
LogicalResult checkIndices(Operation *op, const Tensor &ids, int64_t rows) {
  for (int64_t i = 0, e = ids.getNumElements(); i < e; ++i) {
    int64_t id = ids.getInt(i);
    if (id < 0 || id >= rows)
      return op->emitOpError("index ")
             << id << " at position " << i << " is out of range [0, " << rows
             << ")";
  }
  return success();
}

LogicalResult runEmbedding(nn::EmbeddingOp op, Frame &f) {
  const Tensor &ids = f.get(op.getIndices()), &table = f.get(op.getTable());
  int64_t v = table.getShape()[0], d = table.getShape()[1];
  if (failed(checkIndices(op, ids, v)))
    return failure();
  SmallVector<int64_t> shape(ids.getShape());
  shape.push_back(d);
  Tensor out(table.getDType(), shape);
  for (int64_t i = 0, e = ids.getNumElements(); i < e; ++i)
    for (int64_t k = 0; k < d; ++k)
      out.setDouble(i * d + k, table.getDouble(ids.getInt(i) * d + k));
  f.set(op.getResult(), std::move(out));
  return success();
}

LogicalResult runEmbeddingGrad(nn::EmbeddingGradOp op, Frame &f) {
  const Tensor &g = f.get(op.getGrad()), &ids = f.get(op.getIndices());
  int64_t v = op.getNumEmbeddings(), d = g.getShape().back();
  if (g.getShape().drop_back() != ids.getShape())
    return op.emitOpError("grad ")
           << shapeToString(g.getShape()) << " does not match indices "
           << shapeToString(ids.getShape());
  if (failed(checkIndices(op, ids, v)))
    return failure();
  std::vector<double> acc(v * d, 0.0);
  for (int64_t i = 0, e = ids.getNumElements(); i < e; ++i)
    for (int64_t k = 0; k < d; ++k)
      acc[ids.getInt(i) * d + k] += g.getDouble(i * d + k);
  f.set(op.getResult(), Tensor::fromDoubles(g.getDType(), {v, d}, acc));
  return success();
}

} // namespace

void kernels::registerNNKernels(KernelTable &t) {
  t.add<nn::AddOp, runAdd>();
  t.add<nn::SubOp, runSub>();
  t.add<nn::MulOp, runMul>();
  t.add<nn::DivOp, runDiv>();
  t.add<nn::MaximumOp, runMaximum>();
  t.add<nn::MinimumOp, runMinimum>();
  t.add<nn::PowFOp, runPowF>();
  t.add<nn::CompareOp, runCompare>();
  t.add<nn::CastOp, runCast>();
  t.add<nn::NegOp, runNeg>();
  t.add<nn::ExpOp, runExp>();
  t.add<nn::LogOp, runLog>();
  t.add<nn::SqrtOp, runSqrt>();
  t.add<nn::ErfOp, runErf>();
  t.add<nn::ReluOp, runRelu>();
  t.add<nn::SigmoidOp, runSigmoid>();
  t.add<nn::TanhOp, runTanh>();
  t.add<nn::SinOp, runSin>();
  t.add<nn::CosOp, runCos>();
  t.add<nn::FloorOp, runFloor>();
  t.add<nn::CeilOp, runCeil>();
  t.add<nn::RoundOp, runRound>();
  t.add<nn::PowOp, runPow>();
  t.add<nn::LeakyReluOp, runLeakyRelu>();
  t.add<nn::GeluOp, runGelu>();
  t.add<nn::ClampOp, runClamp>();
  t.add<nn::ReluGradOp, runReluGrad>();
  t.add<nn::LeakyReluGradOp, runLeakyReluGrad>();
  t.add<nn::GeluGradOp, runGeluGrad>();
  t.add<nn::ClampGradOp, runClampGrad>();
  t.add<nn::MatmulOp, runMatmul>();
  t.add<nn::LinearOp, runLinear>();
  t.add<nn::ReshapeOp, runReshape>();
  t.add<nn::FlattenOp, runFlatten>();
  t.add<nn::TransposeOp, runTranspose>();
  t.add<nn::ConcatOp, runConcat>();
  t.add<nn::WhereOp, runWhere>();
  t.add<nn::SliceOp, runSlice>();
  t.add<nn::PadOp, runPad>();
  t.add<nn::BroadcastToOp, runBroadcastTo>();
  t.add<nn::ReduceSumOp, runReduceSum>();
  t.add<nn::ReduceMeanOp, runReduceMean>();
  t.add<nn::ReduceMaxOp, runReduceMax>();
  t.add<nn::ReduceMaxGradOp, runReduceMaxGrad>();
  t.add<nn::SoftmaxOp, runSoftmax>();
  t.add<nn::AttentionOp, runAttention>();
  t.add<nn::FusedAttentionOp, runFusedAttention>();
  t.add<nn::FusedAttentionGradOp, runFusedAttentionGrad>();
  t.add<nn::LogSoftmaxOp, runLogSoftmax>();
  t.add<nn::OneHotOp, runOneHot>();
  t.add<nn::CrossEntropyOp, runCrossEntropy>();
  t.add<nn::MseLossOp, runMseLoss>();
  t.add<nn::BatchNormOp, runBatchNorm>();
  t.add<nn::LayerNormOp, runLayerNorm>();
  t.add<nn::DropoutOp, runDropout>();
  t.add<nn::EmbeddingOp, runEmbedding>();
  t.add<nn::EmbeddingGradOp, runEmbeddingGrad>();
}
