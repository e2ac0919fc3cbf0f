//===- TrainKernels.cpp - Reference kernels of the train ops --------------===//
//
// State access, the window cut, the optimizers (exactly the formulas of
// TrainOps.td, elementwise in the parameter's element type), clipping, the
// one-rank cross-rank reduction, and the arith ops that counters and
// constants use.
//
//===----------------------------------------------------------------------===//

#include "compiler/Interpreter/Kernels.h"

#include "dialects/Train/IR/TrainOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

#include <cmath>

using namespace mlir;
using namespace mlir::cleave;
using namespace mlir::cleave::interp;
using namespace mlir::cleave::interp::kernels;

namespace {

//===----------------------------------------------------------------------===//
// State
//===----------------------------------------------------------------------===//

/// The state entry `name` accessed by `op` with a value of type `type`.
FailureOr<Tensor *> stateEntry(Operation *op, Frame &f, StringRef name,
                               Type type) {
  Tensor *value = f.getState().lookup(name);
  if (!value)
    return op->emitOpError("global @")
           << name << " has no value in the interpreter state";
  if (!value->matches(cast<ShapedType>(type)))
    return op->emitOpError("global @") << name << " holds " << value->describe()
                                       << ", the op uses " << type;
  return value;
}

LogicalResult runLoad(train::LoadOp op, Frame &f) {
  auto value = stateEntry(op, f, op.getGlobal(), op.getType());
  if (failed(value))
    return failure();
  f.set(op.getResult(), **value);
  return success();
}

LogicalResult runStore(train::StoreOp op, Frame &f) {
  auto value = stateEntry(op, f, op.getGlobal(), op.getValue().getType());
  if (failed(value))
    return failure();
  **value = f.get(op.getValue());
  return success();
}

LogicalResult runAccumulate(train::AccumulateOp op, Frame &f) {
  auto value = stateEntry(op, f, op.getGlobal(), op.getValue().getType());
  if (failed(value))
    return failure();
  const Tensor &add = f.get(op.getValue());
  Tensor &acc = **value;
  if (acc.getShape() != add.getShape())
    return op.emitOpError("adds ")
           << add.describe() << " into " << acc.describe();
  dispatchFloat(acc.getDType(), [&](auto tag) {
    using T = decltype(tag);
    MutableArrayRef<T> a = acc.data<T>();
    ArrayRef<T> v = add.data<T>();
    for (size_t i = 0; i < a.size(); ++i)
      a[i] += v[i];
  });
  return success();
}

/// Results equal to operands: the window of an unsplit step is one
/// micro-batch, and one rank reduces to itself.
template <typename OpTy> LogicalResult runIdentity(OpTy op, Frame &f) {
  for (auto [operand, result] : llvm::zip(op->getOperands(), op->getResults()))
    f.set(result, f.get(operand));
  return success();
}

LogicalResult runWindowSum(train::WindowSumOp op, Frame &f) {
  return runIdentity(op, f);
}
LogicalResult runCrossRankReduce(train::CrossRankReduceOp op, Frame &f) {
  return runIdentity(op, f);
}

/// ZeRO-1 collectives on one rank: each result holds the operand's elements
/// in order (a flattened shard of the whole, or the whole from its single
/// shard), zero past the end. A job of several ranks cannot be interpreted
/// in one process.
LogicalResult runShardCopies(Operation *op, int64_t ranks, Frame &f) {
  if (ranks != 1)
    return op->emitOpError("is a collective of ")
           << ranks << " ranks; the interpreter runs one rank";
  for (auto [in, out] : llvm::zip(op->getOperands(), op->getResults())) {
    const Tensor &t = f.get(in);
    auto type = cast<RankedTensorType>(out.getType());
    Tensor r(t.getDType(), type.getShape());
    int64_t n = std::min(t.getNumElements(), r.getNumElements());
    for (int64_t i = 0; i < n; ++i)
      r.setDouble(i, t.getDouble(i));
    f.set(out, std::move(r));
  }
  return success();
}

LogicalResult runReduceScatter(train::ReduceScatterOp op, Frame &f) {
  return runShardCopies(op, op.getRanks(), f);
}

LogicalResult runAllGather(train::AllGatherOp op, Frame &f) {
  return runShardCopies(op, op.getRanks(), f);
}

LogicalResult runShard(train::ShardOp op, Frame &f) {
  return runShardCopies(op, op.getRanks(), f);
}

//===----------------------------------------------------------------------===//
// Optimizers
//===----------------------------------------------------------------------===//

/// Checks that `t` has the parameter's shape.
LogicalResult checkLike(Operation *op, StringRef name, const Tensor &t,
                        const Tensor &param) {
  if (t.getShape() != param.getShape())
    return op->emitOpError()
           << name << " " << t.describe() << " does not match the parameter "
           << param.describe();
  return success();
}

LogicalResult runSgd(train::SgdOp op, Frame &f) {
  const Tensor &p = f.get(op.getParam()), &g = f.get(op.getGrad());
  if (failed(checkLike(op, "grad", g, p)))
    return failure();
  double lr = f.get(op.getLr()).getDouble(0);
  double wd = f.get(op.getWeightDecay()).getDouble(0);
  Tensor out(p.getDType(), p.getShape());
  dispatchFloat(p.getDType(), [&](auto tag) {
    using T = decltype(tag);
    ArrayRef<T> pv = p.data<T>(), gv = g.data<T>();
    MutableArrayRef<T> o = out.data<T>();
    for (size_t i = 0; i < pv.size(); ++i) {
      T gi = gv[i] + static_cast<T>(wd) * pv[i];
      o[i] = pv[i] - static_cast<T>(lr) * gi;
    }
  });
  f.set(op.getNewParam(), std::move(out));
  return success();
}

LogicalResult runMomentum(train::MomentumOp op, Frame &f) {
  const Tensor &p = f.get(op.getParam()), &g = f.get(op.getGrad()),
               &buf = f.get(op.getBuf());
  if (failed(checkLike(op, "grad", g, p)) ||
      failed(checkLike(op, "buf", buf, p)))
    return failure();
  double lr = f.get(op.getLr()).getDouble(0);
  double m = f.get(op.getMomentum()).getDouble(0);
  double wd = f.get(op.getWeightDecay()).getDouble(0);
  bool nesterov = op.getNesterov();
  Tensor newP(p.getDType(), p.getShape()), newBuf(p.getDType(), p.getShape());
  dispatchFloat(p.getDType(), [&](auto tag) {
    using T = decltype(tag);
    ArrayRef<T> pv = p.data<T>(), gv = g.data<T>(), bv = buf.data<T>();
    MutableArrayRef<T> po = newP.data<T>(), bo = newBuf.data<T>();
    T mt = static_cast<T>(m);
    for (size_t i = 0; i < pv.size(); ++i) {
      T gi = gv[i] + static_cast<T>(wd) * pv[i];
      bo[i] = mt * bv[i] + gi;
      T d = nesterov ? gi + mt * bo[i] : bo[i];
      po[i] = pv[i] - static_cast<T>(lr) * d;
    }
  });
  f.set(op.getNewParam(), std::move(newP));
  f.set(op.getNewBuf(), std::move(newBuf));
  return success();
}

LogicalResult runAdam(train::AdamOp op, Frame &f) {
  const Tensor &p = f.get(op.getParam()), &g = f.get(op.getGrad()),
               &m = f.get(op.getM()), &v = f.get(op.getV());
  if (failed(checkLike(op, "grad", g, p)) || failed(checkLike(op, "m", m, p)) ||
      failed(checkLike(op, "v", v, p)))
    return failure();
  int64_t step = f.get(op.getStep()).getInt(0);
  if (step < 1)
    return op.emitOpError("step must be >= 1 (the first update is step 1), "
                          "got ")
           << step;
  double lr = f.get(op.getLr()).getDouble(0);
  double b1 = f.get(op.getBeta1()).getDouble(0);
  double b2 = f.get(op.getBeta2()).getDouble(0);
  double eps = f.get(op.getEps()).getDouble(0);
  double wd = f.get(op.getWeightDecay()).getDouble(0);
  bool decoupled = op.getDecoupled();
  // Scalar factors in double, as PyTorch computes them in Python.
  double stepSize = lr / (1.0 - std::pow(b1, static_cast<double>(step)));
  double bc2Sqrt = std::sqrt(1.0 - std::pow(b2, static_cast<double>(step)));
  Tensor newP(p.getDType(), p.getShape()), newM(p.getDType(), p.getShape()),
      newV(p.getDType(), p.getShape());
  dispatchFloat(p.getDType(), [&](auto tag) {
    using T = decltype(tag);
    ArrayRef<T> pv = p.data<T>(), gv = g.data<T>(), mv = m.data<T>(),
                vv = v.data<T>();
    MutableArrayRef<T> po = newP.data<T>(), mo = newM.data<T>(),
                       vo = newV.data<T>();
    for (size_t i = 0; i < pv.size(); ++i) {
      T param = pv[i], gi = gv[i];
      if (decoupled)
        param *= static_cast<T>(1.0 - lr * wd);
      else
        gi += static_cast<T>(wd) * param;
      mo[i] = static_cast<T>(b1) * mv[i] + static_cast<T>(1.0 - b1) * gi;
      vo[i] = static_cast<T>(b2) * vv[i] + static_cast<T>(1.0 - b2) * gi * gi;
      T denom =
          std::sqrt(vo[i]) / static_cast<T>(bc2Sqrt) + static_cast<T>(eps);
      po[i] = param - static_cast<T>(stepSize) * (mo[i] / denom);
    }
  });
  f.set(op.getNewParam(), std::move(newP));
  f.set(op.getNewM(), std::move(newM));
  f.set(op.getNewV(), std::move(newV));
  return success();
}

LogicalResult runRmsprop(train::RmspropOp op, Frame &f) {
  const Tensor &p = f.get(op.getParam()), &g = f.get(op.getGrad()),
               &sq = f.get(op.getSquareAvg());
  if (failed(checkLike(op, "grad", g, p)) ||
      failed(checkLike(op, "square_avg", sq, p)))
    return failure();
  double lr = f.get(op.getLr()).getDouble(0);
  double alpha = f.get(op.getAlpha()).getDouble(0);
  double eps = f.get(op.getEps()).getDouble(0);
  double wd = f.get(op.getWeightDecay()).getDouble(0);
  Tensor newP(p.getDType(), p.getShape()), newSq(p.getDType(), p.getShape());
  dispatchFloat(p.getDType(), [&](auto tag) {
    using T = decltype(tag);
    ArrayRef<T> pv = p.data<T>(), gv = g.data<T>(), sv = sq.data<T>();
    MutableArrayRef<T> po = newP.data<T>(), so = newSq.data<T>();
    for (size_t i = 0; i < pv.size(); ++i) {
      T gi = gv[i] + static_cast<T>(wd) * pv[i];
      so[i] =
          static_cast<T>(alpha) * sv[i] + static_cast<T>(1.0 - alpha) * gi * gi;
      po[i] = pv[i] - static_cast<T>(lr) * gi /
                          (std::sqrt(so[i]) + static_cast<T>(eps));
    }
  });
  f.set(op.getNewParam(), std::move(newP));
  f.set(op.getNewSquareAvg(), std::move(newSq));
  return success();
}

/// The optimizer step counter of `op`, which starts at 1.
FailureOr<int64_t> getStep(Operation *op, Frame &f, Value stepValue) {
  int64_t step = f.get(stepValue).getInt(0);
  if (step < 1) {
    op->emitOpError("step must be >= 1 (the first update is step 1), got ")
        << step;
    return failure();
  }
  return step;
}

LogicalResult runAdagrad(train::AdagradOp op, Frame &f) {
  const Tensor &p = f.get(op.getParam()), &g = f.get(op.getGrad()),
               &sum = f.get(op.getSum());
  if (failed(checkLike(op, "grad", g, p)) ||
      failed(checkLike(op, "sum", sum, p)))
    return failure();
  FailureOr<int64_t> step = getStep(op, f, op.getStep());
  if (failed(step))
    return failure();
  double lr = f.get(op.getLr()).getDouble(0);
  double lrDecay = f.get(op.getLrDecay()).getDouble(0);
  double eps = f.get(op.getEps()).getDouble(0);
  double wd = f.get(op.getWeightDecay()).getDouble(0);
  double clr = lr / (1.0 + static_cast<double>(*step - 1) * lrDecay);
  Tensor newP(p.getDType(), p.getShape()), newSum(p.getDType(), p.getShape());
  dispatchFloat(p.getDType(), [&](auto tag) {
    using T = decltype(tag);
    ArrayRef<T> pv = p.data<T>(), gv = g.data<T>(), sv = sum.data<T>();
    MutableArrayRef<T> po = newP.data<T>(), so = newSum.data<T>();
    for (size_t i = 0; i < pv.size(); ++i) {
      T gi = gv[i] + static_cast<T>(wd) * pv[i];
      so[i] = sv[i] + gi * gi;
      po[i] = pv[i] - static_cast<T>(clr) * gi /
                          (std::sqrt(so[i]) + static_cast<T>(eps));
    }
  });
  f.set(op.getNewParam(), std::move(newP));
  f.set(op.getNewSum(), std::move(newSum));
  return success();
}

/// The L2 norm of a whole tensor, accumulated in double.
double l2Norm(const Tensor &t) {
  double sq = 0;
  for (int64_t i = 0, e = t.getNumElements(); i < e; ++i)
    sq += t.getDouble(i) * t.getDouble(i);
  return std::sqrt(sq);
}

/// The layer-wise trust ratio, 1 where either norm is 0.
double trustRatio(double num, double den, double pnorm, double other) {
  return pnorm > 0 && other > 0 ? num / den : 1.0;
}

LogicalResult runLamb(train::LambOp op, Frame &f) {
  const Tensor &p = f.get(op.getParam()), &g = f.get(op.getGrad()),
               &m = f.get(op.getM()), &v = f.get(op.getV());
  if (failed(checkLike(op, "grad", g, p)) || failed(checkLike(op, "m", m, p)) ||
      failed(checkLike(op, "v", v, p)))
    return failure();
  FailureOr<int64_t> step = getStep(op, f, op.getStep());
  if (failed(step))
    return failure();
  bool adapt = !op.getNoAdapt();
  double lr = f.get(op.getLr()).getDouble(0);
  double b1 = f.get(op.getBeta1()).getDouble(0);
  double b2 = f.get(op.getBeta2()).getDouble(0);
  double eps = f.get(op.getEps()).getDouble(0);
  double wd = adapt ? f.get(op.getWeightDecay()).getDouble(0) : 0.0;
  double bc1 = 1.0 - std::pow(b1, static_cast<double>(*step));
  double bc2Sqrt = std::sqrt(1.0 - std::pow(b2, static_cast<double>(*step)));
  Tensor newP(p.getDType(), p.getShape()), newM(p.getDType(), p.getShape()),
      newV(p.getDType(), p.getShape()), r(p.getDType(), p.getShape());
  dispatchFloat(p.getDType(), [&](auto tag) {
    using T = decltype(tag);
    ArrayRef<T> pv = p.data<T>(), gv = g.data<T>(), mv = m.data<T>(),
                vv = v.data<T>();
    MutableArrayRef<T> mo = newM.data<T>(), vo = newV.data<T>(),
                       ro = r.data<T>();
    for (size_t i = 0; i < pv.size(); ++i) {
      T gi = gv[i];
      mo[i] = static_cast<T>(b1) * mv[i] + static_cast<T>(1.0 - b1) * gi;
      vo[i] = static_cast<T>(b2) * vv[i] + static_cast<T>(1.0 - b2) * gi * gi;
      T denom =
          std::sqrt(vo[i]) / static_cast<T>(bc2Sqrt) + static_cast<T>(eps);
      ro[i] = mo[i] * static_cast<T>(1.0 / bc1) / denom +
              static_cast<T>(wd) * pv[i];
    }
  });
  double trust = 1.0;
  if (adapt) {
    double pnorm = l2Norm(p), rnorm = l2Norm(r);
    trust = trustRatio(pnorm, rnorm, pnorm, rnorm);
  }
  dispatchFloat(p.getDType(), [&](auto tag) {
    using T = decltype(tag);
    ArrayRef<T> pv = p.data<T>(), rv = r.data<T>();
    MutableArrayRef<T> po = newP.data<T>();
    for (size_t i = 0; i < pv.size(); ++i)
      po[i] = pv[i] - static_cast<T>(lr * trust) * rv[i];
  });
  f.set(op.getNewParam(), std::move(newP));
  f.set(op.getNewM(), std::move(newM));
  f.set(op.getNewV(), std::move(newV));
  return success();
}

LogicalResult runLars(train::LarsOp op, Frame &f) {
  const Tensor &p = f.get(op.getParam()), &g = f.get(op.getGrad()),
               &buf = f.get(op.getBuf());
  if (failed(checkLike(op, "grad", g, p)) ||
      failed(checkLike(op, "buf", buf, p)))
    return failure();
  bool adapt = !op.getNoAdapt();
  double lr = f.get(op.getLr()).getDouble(0);
  double mom = f.get(op.getMomentum()).getDouble(0);
  double eta = f.get(op.getEta()).getDouble(0);
  double wd = adapt ? f.get(op.getWeightDecay()).getDouble(0) : 0.0;
  double trust = 1.0;
  if (adapt) {
    double pnorm = l2Norm(p), gnorm = l2Norm(g);
    trust = trustRatio(eta * pnorm, gnorm + wd * pnorm, pnorm, gnorm);
  }
  Tensor newP(p.getDType(), p.getShape()), newBuf(p.getDType(), p.getShape());
  dispatchFloat(p.getDType(), [&](auto tag) {
    using T = decltype(tag);
    ArrayRef<T> pv = p.data<T>(), gv = g.data<T>(), bv = buf.data<T>();
    MutableArrayRef<T> po = newP.data<T>(), bo = newBuf.data<T>();
    for (size_t i = 0; i < pv.size(); ++i) {
      T d = static_cast<T>(trust) * (gv[i] + static_cast<T>(wd) * pv[i]);
      bo[i] = static_cast<T>(mom) * bv[i] + d;
      po[i] = pv[i] - static_cast<T>(lr) * bo[i];
    }
  });
  f.set(op.getNewParam(), std::move(newP));
  f.set(op.getNewBuf(), std::move(newBuf));
  return success();
}

//===----------------------------------------------------------------------===//
// Clipping
//===----------------------------------------------------------------------===//

LogicalResult runClipByGlobalNorm(train::ClipByGlobalNormOp op, Frame &f) {
  // Values, not references into the frame: each f.set below may grow it.
  const Tensor &maxNormT = f.get(op.getMaxNorm());
  const double maxNorm = maxNormT.getDouble(0);
  const DType normType = maxNormT.getDType();
  double sq = 0;
  for (Value g : op.getGrads()) {
    const Tensor &t = f.get(g);
    for (int64_t i = 0, e = t.getNumElements(); i < e; ++i)
      sq += t.getDouble(i) * t.getDouble(i);
  }
  double norm = std::sqrt(sq);
  // A non-positive max_norm disables clipping.
  double factor = maxNorm > 0 ? std::min(1.0, maxNorm / (norm + 1e-6)) : 1.0;
  for (auto [g, r] : llvm::zip(op.getGrads(), op.getResults())) {
    const Tensor &t = f.get(g);
    Tensor out(t.getDType(), t.getShape());
    dispatchFloat(t.getDType(), [&](auto tag) {
      using T = decltype(tag);
      ArrayRef<T> in = t.data<T>();
      MutableArrayRef<T> o = out.data<T>();
      for (size_t i = 0; i < in.size(); ++i)
        o[i] = in[i] * static_cast<T>(factor);
    });
    f.set(r, std::move(out));
  }
  f.set(op.getNorm(), Tensor::scalar(normType, norm));
  return success();
}

/// One rank: across_ranks combines this rank's verdicts with nothing.
LogicalResult runCheckFinite(train::CheckFiniteOp op, Frame &f) {
  int64_t first = 0;
  for (auto [i, v] : llvm::enumerate(op.getValues())) {
    const Tensor &t = f.get(v);
    bool finite = true;
    for (int64_t e = 0, n = t.getNumElements(); e < n && finite; ++e)
      finite = std::isfinite(t.getDouble(e));
    if (!finite) {
      first = int64_t(i) + 1;
      break;
    }
  }
  f.set(op.getFirst(), Tensor::scalar(DType::i64, double(first)));
  return success();
}

//===----------------------------------------------------------------------===//
// arith
//===----------------------------------------------------------------------===//

LogicalResult runConstant(arith::ConstantOp op, Frame &f) {
  auto dense = dyn_cast<DenseElementsAttr>(op.getValue());
  auto type = dyn_cast<RankedTensorType>(op.getType());
  std::optional<DType> dtype =
      type ? getDType(type.getElementType()) : std::nullopt;
  if (!dense || !dtype || !type.hasStaticShape())
    return op.emitOpError("the reference interpreter runs dense tensor "
                          "constants of f32, f64, i32 or i64, got ")
           << op.getValue();
  Tensor t(*dtype, type.getShape());
  if (isFloat(*dtype))
    for (auto [i, v] : llvm::enumerate(dense.getValues<APFloat>()))
      t.setDouble(i, v.convertToDouble());
  else
    for (auto [i, v] : llvm::enumerate(dense.getValues<APInt>()))
      t.setInt(i, v.getSExtValue());
  f.set(op.getResult(), std::move(t));
  return success();
}

/// `fn` elementwise on integer tensors of one shape, with two's-complement
/// wrap-around as arith defines it.
template <typename OpTy, typename Fn>
LogicalResult runIntBinary(OpTy op, Frame &f, Fn fn) {
  const Tensor &a = f.get(op.getLhs()), &b = f.get(op.getRhs());
  if (isFloat(a.getDType()) || a.getShape() != b.getShape())
    return op.emitOpError("the reference interpreter runs this op on integer "
                          "tensors of one shape, got ")
           << a.describe() << " and " << b.describe();
  Tensor out(a.getDType(), a.getShape());
  for (int64_t i = 0, e = a.getNumElements(); i < e; ++i)
    out.setInt(i, static_cast<int64_t>(fn(static_cast<uint64_t>(a.getInt(i)),
                                          static_cast<uint64_t>(b.getInt(i)))));
  f.set(op.getResult(), std::move(out));
  return success();
}

LogicalResult runAddI(arith::AddIOp op, Frame &f) {
  return runIntBinary(op, f, [](uint64_t x, uint64_t y) { return x + y; });
}
LogicalResult runMulI(arith::MulIOp op, Frame &f) {
  return runIntBinary(op, f, [](uint64_t x, uint64_t y) { return x * y; });
}
LogicalResult runSubI(arith::SubIOp op, Frame &f) {
  return runIntBinary(op, f, [](uint64_t x, uint64_t y) { return x - y; });
}

/// Float to signed integer, rounding toward zero (the apply step's
/// verdict and its 0/1 masks, which are small integers).
LogicalResult runFPToSI(arith::FPToSIOp op, Frame &f) {
  const Tensor &a = f.get(op.getIn());
  auto type = dyn_cast<RankedTensorType>(op.getType());
  std::optional<DType> dtype =
      type ? getDType(type.getElementType()) : std::nullopt;
  if (!isFloat(a.getDType()) || !dtype || isFloat(*dtype))
    return op.emitOpError("the reference interpreter converts float tensors "
                          "to i32 or i64 tensors, got ")
           << a.describe() << " to " << op.getType();
  Tensor out(*dtype, a.getShape());
  for (int64_t i = 0, e = a.getNumElements(); i < e; ++i) {
    double v = a.getDouble(i);
    if (!(std::fabs(v) < 9.2e18))
      return op.emitOpError("converts ") << v << ", which no i64 holds";
    out.setInt(i, static_cast<int64_t>(v));
  }
  f.set(op.getResult(), std::move(out));
  return success();
}

/// Signed integer to float (the apply step's verdict, a small count).
LogicalResult runSIToFP(arith::SIToFPOp op, Frame &f) {
  const Tensor &a = f.get(op.getIn());
  auto type = dyn_cast<RankedTensorType>(op.getType());
  std::optional<DType> dtype =
      type ? getDType(type.getElementType()) : std::nullopt;
  if (isFloat(a.getDType()) || !dtype || !isFloat(*dtype))
    return op.emitOpError("the reference interpreter converts i32 or i64 "
                          "tensors to float tensors, got ")
           << a.describe() << " to " << op.getType();
  Tensor out(*dtype, a.getShape());
  for (int64_t i = 0, e = a.getNumElements(); i < e; ++i)
    out.setDouble(i, static_cast<double>(a.getInt(i)));
  f.set(op.getResult(), std::move(out));
  return success();
}

} // namespace

void kernels::registerTrainKernels(KernelTable &t) {
  t.add<train::LoadOp, runLoad>();
  t.add<train::StoreOp, runStore>();
  t.add<train::AccumulateOp, runAccumulate>();
  t.add<train::WindowSumOp, runWindowSum>();
  t.add<train::CrossRankReduceOp, runCrossRankReduce>();
  t.add<train::ReduceScatterOp, runReduceScatter>();
  t.add<train::AllGatherOp, runAllGather>();
  t.add<train::ShardOp, runShard>();
  t.add<train::SgdOp, runSgd>();
  t.add<train::MomentumOp, runMomentum>();
  t.add<train::AdamOp, runAdam>();
  t.add<train::RmspropOp, runRmsprop>();
  t.add<train::AdagradOp, runAdagrad>();
  t.add<train::LambOp, runLamb>();
  t.add<train::LarsOp, runLars>();
  t.add<train::ClipByGlobalNormOp, runClipByGlobalNorm>();
  t.add<train::CheckFiniteOp, runCheckFinite>();
  t.add<arith::ConstantOp, runConstant>();
  t.add<arith::AddIOp, runAddI>();
  t.add<arith::MulIOp, runMulI>();
  t.add<arith::SubIOp, runSubI>();
  t.add<arith::FPToSIOp, runFPToSI>();
  t.add<arith::SIToFPOp, runSIToFP>();
}
