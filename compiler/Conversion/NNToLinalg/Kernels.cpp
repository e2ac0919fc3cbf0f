//===- Kernels.cpp - Matmul, convolution and pooling to rt.kernel ---------===//
//
// The compute-bound ops go to oneDNN through rt.kernel. Their operands are
// reshaped to the forms the kernel ABI describes (2-D or batched 3-D GEMMs,
// NCHW convolutions) without copies.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/LinalgBuilders.h"
#include "compiler/Conversion/NNToLinalg/Patterns.h"
#include "dialects/NN/IR/NNOps.h"
#include "dialects/Runtime/IR/RtOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

#include <array>
#include <limits>

using namespace mlir;
using namespace mlir::cleave;
using namespace mlir::cleave::nn;

namespace {

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// An `rt.kernel` of `kind` computing `outType` from `inputs` into a fresh
/// destination.
Value kernel(PatternRewriter &rw, Location loc, rt::KernelKind kind,
             ValueRange inputs, RankedTensorType outType,
             ArrayRef<NamedAttribute> config) {
  Value init = empty(rw, loc, outType);
  auto op = rt::KernelOp::create(rw, loc, TypeRange{outType}, kind, inputs,
                                 ValueRange{init},
                                 rw.getDictionaryAttr(config));
  return op.getResult(0);
}

/// The first operand type of `op` that the runtime's f32 kernels cannot
/// take (a float tensor of another width), or null.
RankedTensorType nonF32Operand(Operation *op) {
  for (Type t : op->getOperandTypes())
    if (auto rt = dyn_cast<RankedTensorType>(t);
        rt && isa<FloatType>(rt.getElementType()) &&
        !rt.getElementType().isF32())
      return rt;
  return {};
}

/// The runtime's kernels are f32; checkKernelOperands reports the others.
LogicalResult requireF32(PatternRewriter &rw, Operation *op) {
  if (nonF32Operand(op))
    return rw.notifyMatchFailure(op, "the CPU back end supports f32 only");
  return success();
}

/// Lowers `nn.matmul` to a 2-D or batched 3-D matmul kernel, folding the
/// batch into the rows when the right-hand side is one shared matrix.
struct MatmulLowering : OpRewritePattern<MatmulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MatmulOp op,
                                PatternRewriter &rw) const override {
    if (failed(requireF32(rw, op)))
      return failure();
    Location loc = op.getLoc();
    RankedTensorType at = typeOf(op.getLhs()), bt = typeOf(op.getRhs()),
                     ct = cast<RankedTensorType>(op.getType());
    bool ta = op.getTransposeA(), tb = op.getTransposeB();
    SmallVector<NamedAttribute> config = {
        rw.getNamedAttr("trans_a", rw.getBoolAttr(ta)),
        rw.getNamedAttr("trans_b", rw.getBoolAttr(tb))};
    Value a = op.getLhs(), b = op.getRhs();
    int64_t rank = at.getRank();
    int64_t m = ct.getDimSize(rank - 2), n = ct.getDimSize(rank - 1);
    if (rank == 2) {
      rw.replaceOp(op, kernel(rw, loc, rt::KernelKind::matmul, {a, b}, ct,
                              config));
      return success();
    }
    int64_t batch = 1;
    for (int64_t d = 0; d + 2 < rank; ++d)
      batch *= at.getDimSize(d);
    Type elt = ct.getElementType();
    Value r;
    if (bt.getRank() == 2 && !ta) {
      // A shared right-hand side: one GEMM over all rows.
      int64_t k = at.getShape().back();
      a = reshape(rw, loc, a, {batch * m, k});
      r = kernel(rw, loc, rt::KernelKind::matmul, {a, b},
                 RankedTensorType::get({batch * m, n}, elt), config);
    } else {
      a = reshape(rw, loc, a,
                  {batch, at.getDimSize(rank - 2), at.getDimSize(rank - 1)});
      if (bt.getRank() != 2)
        b = reshape(rw, loc, b,
                    {batch, bt.getDimSize(rank - 2), bt.getDimSize(rank - 1)});
      r = kernel(rw, loc, rt::KernelKind::matmul, {a, b},
                 RankedTensorType::get({batch, m, n}, elt), config);
    }
    rw.replaceOp(op, reshape(rw, loc, r, ct.getShape()));
    return success();
  }
};

/// `linear` as one GEMM `x[rows, in] @ W^T (+ b)` over all leading
/// dimensions, with `extra` config entries (a fused activation).
Value linearKernel(PatternRewriter &rw, LinearOp op,
                   ArrayRef<NamedAttribute> extra = {}) {
  Location loc = op.getLoc();
  RankedTensorType xt = typeOf(op.getInput()),
                   yt = cast<RankedTensorType>(op.getType());
  int64_t in = xt.getShape().back(), out = yt.getShape().back();
  int64_t rows = xt.getNumElements() / in;
  SmallVector<Value> inputs = {reshape(rw, loc, op.getInput(), {rows, in}),
                               op.getWeight()};
  if (op.getBias())
    inputs.push_back(op.getBias());
  SmallVector<NamedAttribute> config = {
      rw.getNamedAttr("trans_a", rw.getBoolAttr(false)),
      rw.getNamedAttr("trans_b", rw.getBoolAttr(true))};
  config.append(extra.begin(), extra.end());
  Value r = kernel(rw, loc, rt::KernelKind::matmul, inputs,
                   RankedTensorType::get({rows, out}, yt.getElementType()),
                   config);
  return reshape(rw, loc, r, yt.getShape());
}

/// Lowers `nn.linear` to a matmul kernel with the weight transposed.
struct LinearLowering : OpRewritePattern<LinearOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LinearOp op,
                                PatternRewriter &rw) const override {
    if (failed(requireF32(rw, op)))
      return failure();
    rw.replaceOp(op, linearKernel(rw, op));
    return success();
  }
};

/// The window attributes every convolution and pooling kernel takes.
SmallVector<NamedAttribute> windowConfig(OpBuilder &b, ArrayRef<int64_t> strides,
                                         ArrayRef<int64_t> padding,
                                         ArrayRef<int64_t> dilations) {
  return {b.getNamedAttr("strides", b.getDenseI64ArrayAttr(strides)),
          b.getNamedAttr("padding", b.getDenseI64ArrayAttr(padding)),
          b.getNamedAttr("dilations", b.getDenseI64ArrayAttr(dilations))};
}

/// The configuration of a convolution kernel (forward or backward).
template <typename OpTy>
SmallVector<NamedAttribute> convConfig(OpBuilder &b, OpTy op) {
  auto config = windowConfig(b, op.getStrides(), op.getPadding(),
                             op.getDilations());
  config.push_back(b.getNamedAttr("groups", b.getI64IntegerAttr(op.getGroups())));
  return config;
}

/// `conv2d` as a forward convolution kernel, with `extra` config entries (a
/// fused activation).
Value conv2dKernel(PatternRewriter &rw, Conv2DOp op,
                   ArrayRef<NamedAttribute> extra = {}) {
  SmallVector<Value> inputs = {op.getInput(), op.getWeight()};
  if (op.getBias())
    inputs.push_back(op.getBias());
  SmallVector<NamedAttribute> config = convConfig(rw, op);
  config.append(extra.begin(), extra.end());
  return kernel(rw, op.getLoc(), rt::KernelKind::conv2d_fwd, inputs,
                cast<RankedTensorType>(op.getType()), config);
}

/// Lowers `nn.conv2d` to the forward convolution kernel.
struct Conv2DLowering : OpRewritePattern<Conv2DOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(Conv2DOp op,
                                PatternRewriter &rw) const override {
    if (failed(requireF32(rw, op)))
      return failure();
    rw.replaceOp(op, conv2dKernel(rw, op));
    return success();
  }
};

/// Lowers `nn.conv2d_grad_input` to the backward-data kernel.
struct Conv2DGradInputLowering : OpRewritePattern<Conv2DGradInputOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(Conv2DGradInputOp op,
                                PatternRewriter &rw) const override {
    if (failed(requireF32(rw, op)))
      return failure();
    rw.replaceOp(op, kernel(rw, op.getLoc(), rt::KernelKind::conv2d_bwd_data,
                            {op.getGrad(), op.getWeight()},
                            cast<RankedTensorType>(op.getType()),
                            convConfig(rw, op)));
    return success();
  }
};

/// Lowers `nn.conv2d_grad_weight` to the backward-weights kernel.
struct Conv2DGradWeightLowering : OpRewritePattern<Conv2DGradWeightOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(Conv2DGradWeightOp op,
                                PatternRewriter &rw) const override {
    if (failed(requireF32(rw, op)))
      return failure();
    rw.replaceOp(op, kernel(rw, op.getLoc(),
                            rt::KernelKind::conv2d_bwd_weights,
                            {op.getInput(), op.getGrad()},
                            cast<RankedTensorType>(op.getType()),
                            convConfig(rw, op)));
    return success();
  }
};

/// How far the last window of a pooling op reaches past the end of its
/// padded input along each spatial axis (ceil mode; 0 when it does not).
template <typename OpTy>
std::array<int64_t, 2> windowOverhang(OpTy op, ArrayRef<int64_t> inShape,
                                      ArrayRef<int64_t> outShape) {
  SmallVector<int64_t> strides = op.getEffectiveStrides();
  ArrayRef<int64_t> padding = op.getPadding(), kernelSize = op.getKernelSize(),
                    dilations = op.getDilations();
  std::array<int64_t, 2> extra;
  for (int i = 0; i < 2; ++i) {
    int64_t span = (outShape[2 + i] - 1) * strides[i] +
                   dilations[i] * (kernelSize[i] - 1) + 1;
    extra[i] = std::max<int64_t>(
        0, span - (inShape[2 + i] + padding[i] + padding[i + 2]));
  }
  return extra;
}

/// oneDNN counts a ceil-mode overhang as padding: with count_include_pad
/// the divisor of the last windows would be wrong.
bool overhangsCountedPadding(AvgPool2DOp op) {
  std::array<int64_t, 2> extra =
      windowOverhang(op, typeOf(op.getInput()).getShape(),
                     cast<RankedTensorType>(op.getType()).getShape());
  return op.getCountIncludePad() && (extra[0] > 0 || extra[1] > 0);
}
bool overhangsCountedPadding(AvgPool2DGradOp op) {
  std::array<int64_t, 2> extra =
      windowOverhang(op, cast<RankedTensorType>(op.getType()).getShape(),
                     typeOf(op.getGrad()).getShape());
  return op.getCountIncludePad() && (extra[0] > 0 || extra[1] > 0);
}

/// Pooling attributes for the kernel. oneDNN has no ceil mode: the extra
/// output row/column of ceil mode becomes extra end padding.
template <typename OpTy>
FailureOr<SmallVector<NamedAttribute>>
poolConfig(PatternRewriter &rw, OpTy op, ArrayRef<int64_t> inShape,
           ArrayRef<int64_t> outShape, bool countIncludePad) {
  SmallVector<int64_t> strides = op.getEffectiveStrides();
  SmallVector<int64_t> padding(op.getPadding());
  ArrayRef<int64_t> kernelSize = op.getKernelSize(),
                    dilations = op.getDilations();
  std::array<int64_t, 2> extra = windowOverhang(op, inShape, outShape);
  for (int i = 0; i < 2; ++i) {
    if (extra[i] > 0 && countIncludePad)
      return rw.notifyMatchFailure(
          op, "average pooling with ceil_mode and count_include_pad whose "
              "last window overhangs the padding (checkKernelOperands "
              "reports it)");
    padding[i + 2] += extra[i];
  }
  auto config = windowConfig(rw, strides, padding, dilations);
  config.push_back(rw.getNamedAttr("kernel", rw.getDenseI64ArrayAttr(kernelSize)));
  config.push_back(
      rw.getNamedAttr("count_include_pad", rw.getBoolAttr(countIncludePad)));
  return config;
}

/// Lowers `nn.max_pool2d` to the forward max-pooling kernel.
struct MaxPoolLowering : OpRewritePattern<MaxPool2DOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MaxPool2DOp op,
                                PatternRewriter &rw) const override {
    if (failed(requireF32(rw, op)))
      return failure();
    auto out = cast<RankedTensorType>(op.getType());
    auto config = poolConfig(rw, op, typeOf(op.getInput()).getShape(),
                             out.getShape(), false);
    if (failed(config))
      return failure();
    Location loc = op.getLoc();
    Value x = op.getInput();
    Value y =
        kernel(rw, loc, rt::KernelKind::max_pool2d_fwd, {x}, out, *config);
    // oneDNN's max skips NaN; PyTorch's max pooling (like its ReLU, clamp
    // and maximum) returns NaN for a window that holds one. Pooling +inf
    // where x is NaN and -inf elsewhere, with the same kernel and so the
    // same windows and padding, marks those windows.
    Value marks = elementwise(
        rw, loc, typeOf(x), {x},
        [](OpBuilder &b, Location l, ValueRange a) -> Value {
          Type t = a[0].getType();
          Value nan = arith::CmpFOp::create(b, l, arith::CmpFPredicate::UNO,
                                            a[0], a[0]);
          double inf = std::numeric_limits<double>::infinity();
          return arith::SelectOp::create(b, l, nan, scalar(b, l, inf, t),
                                         scalar(b, l, -inf, t));
        });
    Value hit =
        kernel(rw, loc, rt::KernelKind::max_pool2d_fwd, {marks}, out, *config);
    rw.replaceOp(
        op, elementwise(
                rw, loc, out, {y, hit},
                [](OpBuilder &b, Location l, ValueRange a) -> Value {
                  Type t = a[0].getType();
                  Value has =
                      arith::CmpFOp::create(b, l, arith::CmpFPredicate::OGT,
                                            a[1], scalar(b, l, 0.0, t));
                  return arith::SelectOp::create(
                      b, l, has,
                      scalar(b, l, std::numeric_limits<double>::quiet_NaN(), t),
                      a[0]);
                }));
    return success();
  }
};

/// Lowers `nn.max_pool2d_grad` to the backward max-pooling kernel.
struct MaxPoolGradLowering : OpRewritePattern<MaxPool2DGradOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MaxPool2DGradOp op,
                                PatternRewriter &rw) const override {
    if (failed(requireF32(rw, op)))
      return failure();
    auto config = poolConfig(rw, op, typeOf(op.getInput()).getShape(),
                             typeOf(op.getGrad()).getShape(), false);
    if (failed(config))
      return failure();
    rw.replaceOp(op, kernel(rw, op.getLoc(), rt::KernelKind::max_pool2d_bwd,
                            {op.getInput(), op.getGrad()},
                            cast<RankedTensorType>(op.getType()), *config));
    return success();
  }
};

/// Lowers `nn.avg_pool2d` to the forward average-pooling kernel.
struct AvgPoolLowering : OpRewritePattern<AvgPool2DOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AvgPool2DOp op,
                                PatternRewriter &rw) const override {
    if (failed(requireF32(rw, op)))
      return failure();
    auto out = cast<RankedTensorType>(op.getType());
    auto config = poolConfig(rw, op, typeOf(op.getInput()).getShape(),
                             out.getShape(), op.getCountIncludePad());
    if (failed(config))
      return failure();
    rw.replaceOp(op, kernel(rw, op.getLoc(), rt::KernelKind::avg_pool2d_fwd,
                            {op.getInput()}, out, *config));
    return success();
  }
};

/// Lowers `nn.avg_pool2d_grad` to the backward average-pooling kernel.
struct AvgPoolGradLowering : OpRewritePattern<AvgPool2DGradOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AvgPool2DGradOp op,
                                PatternRewriter &rw) const override {
    if (failed(requireF32(rw, op)))
      return failure();
    auto in = cast<RankedTensorType>(op.getType());
    auto config = poolConfig(rw, op, in.getShape(),
                             typeOf(op.getGrad()).getShape(),
                             op.getCountIncludePad());
    if (failed(config))
      return failure();
    rw.replaceOp(op, kernel(rw, op.getLoc(), rt::KernelKind::avg_pool2d_bwd,
                            {op.getGrad()}, in, *config));
    return success();
  }
};

/// The shapes of fused attention over `query` ([..., T, D]), `key` and
/// `value`, as the sdpa kernels take them: the leading dimensions flattened
/// into one batch.
struct AttentionShape {
  int64_t batch = 1, t, s, d, dv;
  SmallVector<int64_t> leading;

  AttentionShape(Value query, Value key, Value value) {
    ArrayRef<int64_t> q = typeOf(query).getShape();
    int64_t rank = q.size();
    leading.assign(q.begin(), q.end() - 2);
    for (int64_t n : leading)
      batch *= n;
    t = q[rank - 2], d = q[rank - 1];
    s = typeOf(key).getDimSize(rank - 2);
    dv = typeOf(value).getDimSize(rank - 1);
  }
  /// `query`, `key` and `value` as the kernels take them ([batch, T, D],
  /// [batch, S, D], [batch, S, Dv]), followed by `extra` (each reshaped to
  /// `[batch, its dimensions past the leading ones]`).
  SmallVector<Value> flattened(PatternRewriter &rw, Location loc, Value query,
                               Value key, Value value,
                               ValueRange extra = {}) const {
    SmallVector<Value> out = {reshape(rw, loc, query, {batch, t, d}),
                              reshape(rw, loc, key, {batch, s, d}),
                              reshape(rw, loc, value, {batch, s, dv})};
    for (Value v : extra) {
      ArrayRef<int64_t> shape = typeOf(v).getShape().drop_front(leading.size());
      SmallVector<int64_t> flat = {batch};
      flat.append(shape.begin(), shape.end());
      out.push_back(reshape(rw, loc, v, flat));
    }
    return out;
  }
  /// `leading` followed by `tail`: the nn op's shapes.
  SmallVector<int64_t> unflattened(ArrayRef<int64_t> tail) const {
    SmallVector<int64_t> out(leading);
    out.append(tail.begin(), tail.end());
    return out;
  }
};

/// The additive mask as the one [T, S] matrix the sdpa kernels add to every
/// slice: its leading dimensions are 1 (cleave-decompose-attention fuses no
/// other), a size-1 row or column dimension is broadcast.
Value maskMatrix(PatternRewriter &rw, Location loc, Value mask,
                 const AttentionShape &shape) {
  ArrayRef<int64_t> m = typeOf(mask).getShape();
  int64_t rows = m.size() >= 2 ? m[m.size() - 2] : 1;
  int64_t cols = m.empty() ? 1 : m.back();
  Value matrix = reshape(rw, loc, mask, {rows, cols});
  if (rows == shape.t && cols == shape.s)
    return matrix;
  auto type =
      RankedTensorType::get({shape.t, shape.s}, typeOf(mask).getElementType());
  return elementwise(rw, loc, type, matrix,
                     [](OpBuilder &, Location, ValueRange x) { return x[0]; });
}

/// The attributes of both sdpa kernels: the factor the scores are
/// multiplied by (1/c for a divisor c), `causal`, and `dropout`, the ratio
/// whose `keep` input follows the mask, when the op has one.
template <typename OpTy>
SmallVector<NamedAttribute> attentionConfig(PatternRewriter &rw, OpTy op) {
  std::optional<double> scale = op.getScaleValue();
  double factor = !scale ? 1.0 : op.getScaleIsDivisor() ? 1.0 / *scale : *scale;
  SmallVector<NamedAttribute> config = {
      rw.getNamedAttr("scale", rw.getF64FloatAttr(factor)),
      rw.getNamedAttr("causal", rw.getBoolAttr(op.getCausal()))};
  if (FloatAttr ratio = op.getDropoutRatioAttr())
    config.push_back(rw.getNamedAttr("dropout", ratio));
  return config;
}

/// The inputs after q, k and v (and the backward's o, lse and do): the
/// mask as one [T, S] matrix, then keep as [batch, T, S].
template <typename OpTy>
void appendMaskAndKeep(PatternRewriter &rw, Location loc, OpTy op,
                       const AttentionShape &sh, SmallVectorImpl<Value> &ins) {
  if (Value mask = op.getMask())
    ins.push_back(maskMatrix(rw, loc, mask, sh));
  if (Value keep = op.getKeep())
    ins.push_back(reshape(rw, loc, keep, {sh.batch, sh.t, sh.s}));
}

/// `rt.kernel` of `kind` with one fresh destination per type of `outTypes`.
rt::KernelOp multiKernel(PatternRewriter &rw, Location loc, rt::KernelKind kind,
                         ValueRange inputs, ArrayRef<RankedTensorType> outTypes,
                         ArrayRef<NamedAttribute> config) {
  SmallVector<Value> inits;
  SmallVector<Type> types;
  for (RankedTensorType t : outTypes) {
    inits.push_back(empty(rw, loc, t));
    types.push_back(t);
  }
  return rt::KernelOp::create(rw, loc, types, kind, inputs, inits,
                              rw.getDictionaryAttr(config));
}

/// `nn.fused_attention` to one `sdpa_fwd` kernel on [batch, T, D] views.
struct FusedAttentionLowering : OpRewritePattern<FusedAttentionOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(FusedAttentionOp op,
                                PatternRewriter &rw) const override {
    if (failed(requireF32(rw, op)))
      return failure();
    Location loc = op.getLoc();
    AttentionShape sh(op.getQuery(), op.getKey(), op.getValue());
    SmallVector<Value> ins =
        sh.flattened(rw, loc, op.getQuery(), op.getKey(), op.getValue());
    appendMaskAndKeep(rw, loc, op, sh, ins);
    Type f32 = rw.getF32Type();
    auto k = multiKernel(rw, loc, rt::KernelKind::sdpa_fwd, ins,
                         {RankedTensorType::get({sh.batch, sh.t, sh.dv}, f32),
                          RankedTensorType::get({sh.batch, sh.t}, f32)},
                         attentionConfig(rw, op));
    rw.replaceOp(
        op, {reshape(rw, loc, k.getResult(0), sh.unflattened({sh.t, sh.dv})),
             reshape(rw, loc, k.getResult(1), sh.unflattened(sh.t))});
    return success();
  }
};

/// `nn.fused_attention_grad` to one `sdpa_bwd` kernel.
struct FusedAttentionGradLowering : OpRewritePattern<FusedAttentionGradOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(FusedAttentionGradOp op,
                                PatternRewriter &rw) const override {
    if (failed(requireF32(rw, op)))
      return failure();
    Location loc = op.getLoc();
    AttentionShape sh(op.getQuery(), op.getKey(), op.getValue());
    SmallVector<Value> ins =
        sh.flattened(rw, loc, op.getQuery(), op.getKey(), op.getValue(),
                     {op.getResult(), op.getLse(), op.getResultGrad()});
    appendMaskAndKeep(rw, loc, op, sh, ins);
    Type f32 = rw.getF32Type();
    auto k = multiKernel(rw, loc, rt::KernelKind::sdpa_bwd, ins,
                         {RankedTensorType::get({sh.batch, sh.t, sh.d}, f32),
                          RankedTensorType::get({sh.batch, sh.s, sh.d}, f32),
                          RankedTensorType::get({sh.batch, sh.s, sh.dv}, f32)},
                         attentionConfig(rw, op));
    rw.replaceOp(
        op, {reshape(rw, loc, k.getResult(0), sh.unflattened({sh.t, sh.d})),
             reshape(rw, loc, k.getResult(1), sh.unflattened({sh.s, sh.d})),
             reshape(rw, loc, k.getResult(2), sh.unflattened({sh.s, sh.dv}))});
    return success();
  }
};

} // namespace

LogicalResult mlir::cleave::checkKernelOperands(Operation *root) {
  WalkResult walk = root->walk([](Operation *op) {
    if (!isa<MatmulOp, LinearOp, Conv2DOp, Conv2DGradInputOp,
             Conv2DGradWeightOp, MaxPool2DOp, MaxPool2DGradOp, AvgPool2DOp,
             AvgPool2DGradOp>(op))
      return WalkResult::advance();
    bool overhang = false;
    if (auto avg = dyn_cast<AvgPool2DOp>(op))
      overhang = overhangsCountedPadding(avg);
    else if (auto grad = dyn_cast<AvgPool2DGradOp>(op))
      overhang = overhangsCountedPadding(grad);
    if (overhang) {
      op->emitOpError("with ceil_mode and count_include_pad, whose last "
                      "window reaches past the padding, is not supported: "
                      "the pooling kernels count that overhang as padding "
                      "(pad the input explicitly, or leave out "
                      "count_include_pad)");
      return WalkResult::interrupt();
    }
    RankedTensorType rt = nonF32Operand(op);
    if (!rt)
      return WalkResult::advance();
    op->emitOpError("on ")
        << rt.getElementType()
        << " tensors is not supported: the matrix, convolution and pooling "
           "kernels compute in f32 (cast the operands to f32)";
    return WalkResult::interrupt();
  });
  return failure(walk.wasInterrupted());
}

void mlir::cleave::populateKernelPatterns(RewritePatternSet &patterns) {
  // relu(linear(x)) and relu(conv2d(x)) stay two ops, although the kernels
  // take a ReLU post-op: oneDNN's (and cuBLASLt's) ReLU maps NaN to 0,
  // which PyTorch's does not, and a NaN must reach the loss instead of
  // training silently (docs/design/numerics.md; LeNet pays 5-10%,
  // bench/README.md).
  patterns
      .add<MatmulLowering, LinearLowering, Conv2DLowering,
           Conv2DGradInputLowering, Conv2DGradWeightLowering, MaxPoolLowering,
           MaxPoolGradLowering, AvgPoolLowering, AvgPoolGradLowering,
           FusedAttentionLowering, FusedAttentionGradLowering>(
          patterns.getContext());
}
