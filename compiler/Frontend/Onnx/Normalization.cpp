//===- Normalization.cpp - Normalisations, reductions and dropout ---------===//
//
// BatchNormalization keeps the mode it was exported in: a training-mode
// node normalises with batch statistics and returns the new running
// statistics as buffer updates; an inference-mode node normalises with its
// (then frozen) running statistics. Dropout is imported as nn.dropout in
// both modes: the compiler removes it from the evaluation graph.
//
//===----------------------------------------------------------------------===//

#include "compiler/Frontend/Onnx/Importer.h"

#include "dialects/NN/IR/NNOps.h"

#include <cstdio>
#include <cstdlib>

using namespace mlir;
using namespace mlir::cleave;
using namespace mlir::cleave::importer;

namespace {

/// nn's momentum is PyTorch's (the weight of the batch statistic), ONNX's
/// is its complement, stored in single precision. Returns the shortest
/// decimal whose complement rounds to the ONNX value, so PyTorch's 0.1
/// comes back as 0.1 rather than 0.100000024.
double momentumFromOnnx(float onnxMomentum) {
  char buffer[32];
  double exact = 1.0 - static_cast<double>(onnxMomentum);
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(buffer, sizeof(buffer), "%.*g", digits, exact);
    double candidate = std::strtod(buffer, nullptr);
    if (static_cast<float>(1.0 - candidate) == onnxMomentum)
      return candidate;
  }
  return exact;
}

LogicalResult importBatchNormalization(NodeImporter &n) {
  if (failed(n.checkAttrs({"epsilon", "momentum", "training_mode"})))
    return failure();
  FailureOr<double> epsilon = n.getFloat("epsilon", 1e-5);
  FailureOr<double> momentum = n.getFloat("momentum", 0.9);
  FailureOr<int64_t> trainingMode = n.getInt("training_mode", 0);
  if (failed(epsilon) || failed(momentum) || failed(trainingMode))
    return failure();
  // Before opset 14 a node is in training mode when it has the statistics
  // outputs; from 14 on an attribute says so.
  bool training = n.getOpset() >= 14
                      ? *trainingMode != 0
                      : n.getNumOutputs() > 1 && !n.getNode().output(1).empty();
  if (failed(n.requireUnused(3, "saved statistics")))
    return failure();
  SmallVector<Value, 5> operands;
  for (unsigned i = 0; i < 5; ++i) {
    FailureOr<Value> v = n.floatTensor(i);
    if (failed(v))
      return failure();
    operands.push_back(*v);
  }
  auto op = n.create<nn::BatchNormOp>(
      operands[0], operands[1], operands[2], operands[3], operands[4],
      /*sample_weights=*/Value(), APFloat(*epsilon),
      APFloat(momentumFromOnnx(static_cast<float>(*momentum))), training);
  if (failed(op))
    return failure();
  n.setOutput(0, op->getResult());
  if (!training)
    return success();
  GraphImporter &g = n.getGraph();
  if (failed(g.recordBufferUpdate(operands[3], op->getRunningMeanOut(),
                                  n.getLoc())) ||
      failed(g.recordBufferUpdate(operands[4], op->getRunningVarOut(),
                                  n.getLoc())))
    return failure();
  n.setOutput(1, op->getRunningMeanOut());
  n.setOutput(2, op->getRunningVarOut());
  return success();
}

/// Whether input `i` is a compile-time constant whose every element is
/// `expected`.
bool isConstantSplat(NodeImporter &n, unsigned i, double expected) {
  if (!n.isConstant(i))
    return false;
  FailureOr<DenseElementsAttr> attr = n.constant(i, "");
  if (failed(attr) || !isa<FloatType>(attr->getElementType()))
    return false;
  return llvm::all_of(attr->getValues<APFloat>(), [&](const APFloat &v) {
    return v.convertToDouble() == expected;
  });
}

/// Reshapes the per-channel `v` `[C]` to `[C, 1, ..., 1]`, which broadcasts
/// over the spatial dimensions of `x` `[N, C, ...]`.
FailureOr<Value> perChannel(NodeImporter &n, Value v, RankedTensorType x) {
  auto type = cast<RankedTensorType>(v.getType());
  if (type.getShape() != x.getShape().slice(1, 1))
    return n.emitError() << n.getOpType() << " scale and bias must be ["
                         << x.getDimSize(1) << "] for the input " << x
                         << ", got " << type;
  SmallVector<int64_t> shape(x.getRank() - 1, 1);
  shape[0] = x.getDimSize(1);
  auto op = n.create<nn::ReshapeOp>(v, shape);
  if (failed(op))
    return failure();
  return op->getResult();
}

/// InstanceNormalization normalises each (sample, channel) over its spatial
/// positions: nn.layer_norm over the dimensions from 2 on, then the
/// per-channel affine map. torch.onnx exports nn.GroupNorm as this op on
/// `[N, G, -1]` with a constant scale of ones and bias of zeros, which are
/// left out rather than multiplied in.
LogicalResult importInstanceNormalization(NodeImporter &n) {
  if (failed(n.checkAttrs({"epsilon"})))
    return failure();
  FailureOr<double> epsilon = n.getFloat("epsilon", 1e-5);
  FailureOr<Value> x = n.floatTensor(0);
  if (failed(epsilon) || failed(x))
    return failure();
  auto type = cast<RankedTensorType>(x->getType());
  if (type.getRank() < 3)
    return n.emitError() << "InstanceNormalization needs an input [N, C, D1, "
                            "...] of rank >= 3, got "
                         << type;
  auto normalized =
      n.create<nn::LayerNormOp>(*x, /*scale=*/Value(), /*bias=*/Value(),
                                static_cast<uint64_t>(2), APFloat(*epsilon));
  if (failed(normalized))
    return failure();
  Value y = normalized->getResult();
  bool unitScale = isConstantSplat(n, 1, 1.0);
  bool zeroBias = isConstantSplat(n, 2, 0.0);
  if (!unitScale) {
    FailureOr<Value> scale = n.floatTensor(1);
    if (failed(scale))
      return failure();
    FailureOr<Value> s = perChannel(n, *scale, type);
    if (failed(s))
      return failure();
    auto mul = n.create<nn::MulOp>(y, *s);
    if (failed(mul))
      return failure();
    y = mul->getResult();
  }
  if (!zeroBias) {
    FailureOr<Value> bias = n.floatTensor(2);
    if (failed(bias))
      return failure();
    FailureOr<Value> b = perChannel(n, *bias, type);
    if (failed(b))
      return failure();
    auto add = n.create<nn::AddOp>(y, *b);
    if (failed(add))
      return failure();
    y = add->getResult();
  }
  n.setOutput(0, y);
  return success();
}

/// GroupNormalization normalises each (sample, group of channels) over the
/// group's channels and positions: nn.layer_norm of x reshaped to
/// `[N, G, C/G * D1 * ...]`, then the affine map, per group in opset 18 (the
/// form opset 21 deprecated) and per channel from 21 (nn.GroupNorm's).
LogicalResult importGroupNormalization(NodeImporter &n) {
  if (failed(n.checkAttrs({"epsilon", "num_groups", "stash_type"})))
    return failure();
  FailureOr<double> epsilon = n.getFloat("epsilon", 1e-5);
  FailureOr<int64_t> groups = n.getInt("num_groups", 0);
  FailureOr<int64_t> stashType = n.getInt("stash_type", 1);
  FailureOr<Value> x = n.floatTensor(0);
  if (failed(epsilon) || failed(groups) || failed(stashType) || failed(x))
    return failure();
  if (*stashType != onnx::TensorProto::FLOAT)
    return n.emitError() << "GroupNormalization stash_type " << *stashType
                         << " is not supported";
  auto type = cast<RankedTensorType>(x->getType());
  if (type.getRank() < 3 || type.isDynamicDim(1) ||
      llvm::any_of(type.getShape().drop_front(2), ShapedType::isDynamic))
    return n.emitError() << "GroupNormalization needs an input [N, C, D1, "
                            "...] with static C and D, got "
                         << type;
  int64_t channels = type.getDimSize(1);
  if (*groups <= 0 || channels % *groups != 0)
    return n.emitError() << "GroupNormalization num_groups " << *groups
                         << " does not divide the " << channels
                         << " channels";
  int64_t perGroup = channels / *groups;
  for (int64_t d : type.getShape().drop_front(2))
    perGroup *= d;
  auto grouped = n.create<nn::ReshapeOp>(
      *x, SmallVector<int64_t>{-1, *groups, perGroup});
  if (failed(grouped))
    return failure();
  auto normalized = n.create<nn::LayerNormOp>(
      grouped->getResult(), /*scale=*/Value(), /*bias=*/Value(),
      static_cast<uint64_t>(2), APFloat(*epsilon));
  if (failed(normalized))
    return failure();
  Value y = normalized->getResult();
  // The affine operands broadcast against y: [G, 1] over the grouped form
  // (opset 18), [C, 1, ...] over the image (21).
  bool perChannelAffine = n.getOpset() >= 21;
  SmallVector<int64_t> imageShape(type.getShape());
  imageShape[0] = -1;
  auto broadcastable = [&](unsigned input) -> FailureOr<Value> {
    FailureOr<Value> v = n.floatTensor(input);
    if (failed(v))
      return failure();
    if (perChannelAffine)
      return perChannel(n, *v, type);
    auto vType = cast<RankedTensorType>(v->getType());
    if (vType.getShape() != ArrayRef<int64_t>{*groups})
      return n.emitError() << "GroupNormalization (opset " << n.getOpset()
                           << ") scale and bias must be [" << *groups
                           << "], one per group, got " << vType;
    auto op = n.create<nn::ReshapeOp>(*v, SmallVector<int64_t>{*groups, 1});
    if (failed(op))
      return failure();
    return op->getResult();
  };
  auto toImage = [&]() -> LogicalResult {
    auto op = n.create<nn::ReshapeOp>(y, imageShape);
    if (failed(op))
      return failure();
    y = op->getResult();
    return success();
  };
  if (perChannelAffine && failed(toImage()))
    return failure();
  if (!isConstantSplat(n, 1, 1.0)) {
    FailureOr<Value> scale = broadcastable(1);
    if (failed(scale))
      return failure();
    auto mul = n.create<nn::MulOp>(y, *scale);
    if (failed(mul))
      return failure();
    y = mul->getResult();
  }
  if (!isConstantSplat(n, 2, 0.0)) {
    FailureOr<Value> bias = broadcastable(2);
    if (failed(bias))
      return failure();
    auto add = n.create<nn::AddOp>(y, *bias);
    if (failed(add))
      return failure();
    y = add->getResult();
  }
  if (!perChannelAffine && failed(toImage()))
    return failure();
  n.setOutput(0, y);
  return success();
}

/// LayerNormalization's optional outputs: the mean and the inverse standard
/// deviation over the normalised axes (`axis` to the last), with those axes
/// kept as 1. Composed of nn ops (the normalisation itself stays one
/// nn.layer_norm): `mean(x)`, `(mean((x - mean)^2) + epsilon)^-1/2`.
LogicalResult importLayerNormStatistics(NodeImporter &n, Value x, int64_t axis,
                                        double epsilon) {
  auto type = cast<RankedTensorType>(x.getType());
  int64_t rank = type.getRank();
  if (axis < -rank || axis >= rank)
    return n.emitError() << "LayerNormalization axis " << axis
                         << " is out of range for rank " << rank;
  if (axis < 0)
    axis += rank;
  auto axes = llvm::to_vector(llvm::seq<int64_t>(axis, rank));
  auto mean = n.create<nn::ReduceMeanOp>(x, axes, /*keepdims=*/true);
  if (failed(mean))
    return failure();
  n.setOutput(1, mean->getResult());
  if (!n.isOutputUsed(2))
    return success();
  auto centered = n.create<nn::SubOp>(x, mean->getResult());
  if (failed(centered))
    return failure();
  auto squares =
      n.create<nn::MulOp>(centered->getResult(), centered->getResult());
  if (failed(squares))
    return failure();
  auto variance =
      n.create<nn::ReduceMeanOp>(squares->getResult(), axes, /*keepdims=*/true);
  if (failed(variance))
    return failure();
  auto scalar = RankedTensorType::get({}, type.getElementType());
  APFloat eps(epsilon);
  bool lost;
  eps.convert(cast<FloatType>(type.getElementType()).getFloatSemantics(),
              APFloat::rmNearestTiesToEven, &lost);
  Value epsValue =
      n.getGraph().materialize(DenseElementsAttr::get(scalar, eps), n.getLoc());
  auto shifted = n.create<nn::AddOp>(variance->getResult(), epsValue);
  if (failed(shifted))
    return failure();
  auto invStdDev = n.create<nn::PowOp>(shifted->getResult(), APFloat(-0.5));
  if (failed(invStdDev))
    return failure();
  n.setOutput(2, invStdDev->getResult());
  return success();
}

LogicalResult importLayerNormalization(NodeImporter &n) {
  if (failed(n.checkAttrs({"axis", "epsilon", "stash_type"})))
    return failure();
  FailureOr<int64_t> axis = n.getInt("axis", -1);
  FailureOr<double> epsilon = n.getFloat("epsilon", 1e-5);
  FailureOr<int64_t> stashType = n.getInt("stash_type", 1);
  if (failed(axis) || failed(epsilon) || failed(stashType))
    return failure();
  if (*stashType != onnx::TensorProto::FLOAT)
    return n.emitError() << "LayerNormalization stash_type " << *stashType
                         << " is not supported";
  FailureOr<Value> x = n.floatTensor(0);
  FailureOr<Value> scale = n.floatTensor(1);
  if (failed(x) || failed(scale))
    return failure();
  Value bias;
  if (n.hasInput(2)) {
    FailureOr<Value> b = n.floatTensor(2);
    if (failed(b))
      return failure();
    bias = *b;
  }
  if (failed(n.createOutput<nn::LayerNormOp>(
          *x, *scale, bias, static_cast<uint64_t>(*axis), APFloat(*epsilon))))
    return failure();
  if (!n.isOutputUsed(1) && !n.isOutputUsed(2))
    return success();
  return importLayerNormStatistics(n, *x, *axis, *epsilon);
}

enum class Reduction {
  Sum,
  Mean,
  Max,
  Min,
  L1,
  L2,
  SumSquare,
  LogSum,
  LogSumExp
};

/// log(sum(exp(x - m))) + m over `axes`, m the maximum (0 where it is
/// infinite, as PyTorch's `logsumexp`): no exponential overflows. The two
/// maxima (one kept for the subtraction, one shaped as the result) route
/// opposite cotangents to the same elements, so the gradient is softmax(x).
FailureOr<Value> logSumExp(NodeImporter &n, Value x, ArrayRef<int64_t> axes,
                           bool keepdims) {
  Composer c(n);
  // The maximum, or 0 where it is infinite (every element -inf, or one +inf).
  auto finiteMax = [&](bool keep) {
    Value max = c.op<nn::ReduceMaxOp>(x, axes, keep);
    Value infinite =
        c.compare(nn::ComparePredicate::eq, c.abs(max),
                  c.scalar(x, std::numeric_limits<double>::infinity()));
    return c.op<nn::WhereOp>(infinite, c.scalar(x, 0.0), max);
  };
  Value kept = finiteMax(true);
  Value e = c.op<nn::ExpOp>(c.op<nn::SubOp>(x, kept));
  Value log = c.op<nn::LogOp>(c.op<nn::ReduceSumOp>(e, axes, keepdims));
  Value max = keepdims ? kept : finiteMax(false);
  return c.value(c.op<nn::AddOp>(log, max));
}

/// `kind` over `axes` of `x`. ReduceMin and ReduceL2 are composed exactly
/// of nn ops, and so are their gradients: `-max(-x)` routes the cotangent
/// to the minimal elements (split between ties, as reduce_max's), and
/// `sqrt(sum(x * x))` gives `x / norm` (NaN where the norm is 0, where
/// PyTorch's `linalg.vector_norm` gives 0).
FailureOr<Value> reduce(NodeImporter &n, Reduction kind, Value x,
                        ArrayRef<int64_t> axes, bool keepdims) {
  if (kind == Reduction::LogSumExp)
    return logSumExp(n, x, axes, keepdims);
  Composer c(n);
  auto sum = [&](Value v) { return c.op<nn::ReduceSumOp>(v, axes, keepdims); };
  Value y;
  switch (kind) {
  case Reduction::Sum:
    y = sum(x);
    break;
  case Reduction::Mean:
    y = c.op<nn::ReduceMeanOp>(x, axes, keepdims);
    break;
  case Reduction::Max:
    y = c.op<nn::ReduceMaxOp>(x, axes, keepdims);
    break;
  case Reduction::Min:
    y = c.op<nn::NegOp>(
        c.op<nn::ReduceMaxOp>(c.op<nn::NegOp>(x), axes, keepdims));
    break;
  case Reduction::L1:
    y = sum(c.abs(x));
    break;
  case Reduction::L2:
    y = c.op<nn::SqrtOp>(sum(c.op<nn::MulOp>(x, x)));
    break;
  case Reduction::SumSquare:
    y = sum(c.op<nn::MulOp>(x, x));
    break;
  case Reduction::LogSum:
    y = c.op<nn::LogOp>(sum(x));
    break;
  case Reduction::LogSumExp:
    llvm_unreachable("handled above");
  }
  return c.value(y);
}

/// ReduceMean, ReduceSum, ReduceMax, ReduceMin and ReduceL2. The axes are
/// an attribute, or an input that must fold to a constant (ReduceSum from
/// opset 13, every reduction from opset 18); without axes every dimension
/// is reduced, or none with noop_with_empty_axes.
template <Reduction kind> LogicalResult importReduce(NodeImporter &n) {
  if (failed(n.checkAttrs({"axes", "keepdims", "noop_with_empty_axes"})))
    return failure();
  FailureOr<int64_t> keepdims = n.getInt("keepdims", 1);
  FailureOr<int64_t> noop = n.getInt("noop_with_empty_axes", 0);
  FailureOr<Value> x = n.floatTensor(0);
  if (failed(keepdims) || failed(noop) || failed(x))
    return failure();
  SmallVector<int64_t> axes;
  if (n.hasAttr("axes")) {
    if (n.hasInput(1))
      return n.emitError() << n.getOpType()
                           << " has axes both as an attribute and an input";
    FailureOr<SmallVector<int64_t>> given = n.getInts("axes");
    if (failed(given))
      return failure();
    axes = *given;
  } else if (n.hasInput(1)) {
    FailureOr<SmallVector<int64_t>> given = n.constantInts(1, "axes");
    if (failed(given))
      return failure();
    axes = *given;
  }
  if (axes.empty() && *noop) {
    n.setOutput(0, *x);
    return success();
  }
  FailureOr<Value> y = reduce(n, kind, *x, axes, *keepdims != 0);
  if (failed(y))
    return failure();
  n.setOutput(0, *y);
  return success();
}

/// MeanVarianceNormalization: (x - mean) / (std + 1e-9) over `axes`, the
/// variance as the mean of squared deviations (ONNX's function subtracts
/// the squared mean from the mean square, which can round below 0).
LogicalResult importMeanVarianceNormalization(NodeImporter &n) {
  if (failed(n.checkAttrs({"axes"})))
    return failure();
  FailureOr<SmallVector<int64_t>> axes =
      n.getInts("axes", ArrayRef<int64_t>{0, 2, 3});
  FailureOr<Value> x = n.floatTensor(0);
  if (failed(axes) || failed(x))
    return failure();
  Composer c(n);
  Value mean = c.op<nn::ReduceMeanOp>(*x, *axes, /*keepdims=*/true);
  Value centered = c.op<nn::SubOp>(*x, mean);
  Value squares = c.op<nn::MulOp>(centered, centered);
  Value variance = c.op<nn::ReduceMeanOp>(squares, *axes, true);
  Value deviation = c.op<nn::SqrtOp>(variance);
  Value divisor = c.op<nn::AddOp>(deviation, c.scalar(*x, 1e-9));
  return c.output(c.op<nn::DivOp>(centered, divisor));
}

/// LRN: x / (bias + alpha / size * s)^beta, s the sum of squares over the
/// `size` channels around each one. The window sum is a product with a
/// constant band matrix along the channels (moved last and back by
/// transposes), so it and its gradient are ops nn has.
LogicalResult importLRN(NodeImporter &n) {
  if (failed(n.checkAttrs({"alpha", "beta", "bias", "size"})))
    return failure();
  FailureOr<double> alpha = n.getFloat("alpha", 1e-4);
  FailureOr<double> beta = n.getFloat("beta", 0.75);
  FailureOr<double> bias = n.getFloat("bias", 1.0);
  FailureOr<int64_t> size = n.getInt("size");
  FailureOr<Value> x = n.floatTensor(0);
  if (failed(alpha) || failed(beta) || failed(bias) || failed(size) ||
      failed(x))
    return failure();
  auto type = cast<RankedTensorType>(x->getType());
  int64_t rank = type.getRank();
  if (rank < 3 || type.isDynamicDim(1))
    return n.emitError() << "LRN needs an input [N, C, D1, ...] of rank >= 3 "
                            "with a static C, got "
                         << type;
  if (*size < 1)
    return n.emitError() << "LRN size " << *size << " must be positive";
  int64_t channels = type.getDimSize(1);
  int64_t before = (*size - 1) / 2, after = *size - 1 - before;
  SmallVector<APFloat> band;
  const llvm::fltSemantics &semantics =
      cast<FloatType>(type.getElementType()).getFloatSemantics();
  for (int64_t from = 0; from < channels; ++from)
    for (int64_t to = 0; to < channels; ++to) {
      APFloat one(1.0), zero(0.0);
      bool lost;
      APFloat v = from >= to - before && from <= to + after ? one : zero;
      v.convert(semantics, APFloat::rmNearestTiesToEven, &lost);
      band.push_back(v);
    }
  Value window = n.getGraph().materialize(
      DenseElementsAttr::get(
          RankedTensorType::get({channels, channels}, type.getElementType()),
          band),
      n.getLoc());
  SmallVector<int64_t> last = {0}, back = {0, rank - 1};
  for (int64_t i = 2; i < rank; ++i)
    last.push_back(i);
  last.push_back(1);
  for (int64_t i = 1; i < rank - 1; ++i)
    back.push_back(i);
  Composer c(n);
  Value squares = c.op<nn::MulOp>(*x, *x);
  Value moved = c.op<nn::TransposeOp>(squares, ArrayRef(last));
  Value summed = c.op<nn::MatmulOp>(moved, window);
  Value sums = c.op<nn::TransposeOp>(summed, ArrayRef(back));
  Value scaled = c.op<nn::MulOp>(sums, c.scalar(*x, *alpha / *size));
  Value base = c.op<nn::AddOp>(scaled, c.scalar(*x, *bias));
  Value divisor = c.op<nn::PowOp>(base, APFloat(*beta));
  return c.output(c.op<nn::DivOp>(*x, divisor));
}

LogicalResult importDropout(NodeImporter &n) {
  if (failed(n.checkAttrs({"seed"})))
    return failure();
  double ratio = 0.5;
  if (n.hasInput(1)) {
    FailureOr<double> given = n.constantScalar(1, "ratio");
    if (failed(given))
      return failure();
    ratio = *given;
  }
  // training_mode (input 2) only says whether the exporter ran the model in
  // training: the compiler keeps dropout in the training step and drops it
  // from the evaluation graph either way. It must still be a constant.
  if (n.hasInput(2) && failed(n.constant(2, "training_mode")))
    return failure();
  FailureOr<Value> x = n.floatTensor(0);
  if (failed(x))
    return failure();
  GraphImporter &g = n.getGraph();
  auto stream = static_cast<uint64_t>(g.nextDropoutStream());
  if (failed(n.createOutput<nn::DropoutOp>(*x, g.getRngSeed(), APFloat(ratio),
                                           stream)))
    return failure();
  if (!n.isOutputUsed(1))
    return success();
  // The mask: the same stream's dropout of ones, nonzero where x is kept
  // (all ones where dropout is the identity, as in evaluation), as the
  // importer's f32 boolean.
  FailureOr<Value> ones = filledLike(n, *x, 1.0);
  if (failed(ones))
    return failure();
  Composer c(n);
  Value kept =
      c.op<nn::DropoutOp>(*ones, g.getRngSeed(), APFloat(ratio), stream);
  Value mask = c.boolean(nn::ComparePredicate::ne, kept, c.scalar(kept, 0.0));
  return c.output(1, mask);
}

} // namespace

void importer::populateNormalizationImporters(ImporterTable &table) {
  // The notes are the operator table of docs/user/onnx.md (cleave-opt
  // --list-onnx-ops).
  addImporter(table, "BatchNormalization", importBatchNormalization)
      .state(0b11000)
      .describe(
          "training mode (statistics outputs below opset 14, `training_mode=1` "
          "from 14) or inference mode; the saved-statistics outputs must be "
          "unused");
  addImporter(table, "LayerNormalization", importLayerNormalization)
      .since(17)
      .describe(
          "`stash_type=1`; the opset-13 decomposition is recomposed. The mean "
          "and inverse standard deviation outputs are composed of nn ops");
  addImporter(table, "InstanceNormalization", importInstanceNormalization)
      .describe(
          "rank >= 3; a layer norm over the dimensions from 2 on, then the "
          "per-channel scale and bias. `nn.GroupNorm` as torch 1.13 exports it "
          "(`InstanceNormalization` of x reshaped to `[N, G, -1]` with "
          "constant unit scale and zero bias, reshaped back, then `Mul`/`Add`) "
          "imports");
  addImporter(table, "GroupNormalization", importGroupNormalization)
      .since(18)
      .describe("static C and spatial sizes; a layer norm of x reshaped to "
                "`[N, G, -1]`, then scale and bias per group (opset 18) or per "
                "channel (21, `stash_type=1`)");
  // The axes input exists from opset 13 (ReduceSum) or 18 (the others).
  constexpr unsigned axes = 1u << 1;
  const char *reduceNotes =
      "`axes` as an attribute, or as a constant input (`ReduceSum` from "
      "opset 13, every reduction from 18); `keepdims`, "
      "`noop_with_empty_axes`";
  addImporter(table, "ReduceMean", importReduce<Reduction::Mean>)
      .constants(axes)
      .describe(reduceNotes);
  addImporter(table, "ReduceSum", importReduce<Reduction::Sum>)
      .constants(axes)
      .describe(reduceNotes);
  addImporter(table, "ReduceMax", importReduce<Reduction::Max>)
      .constants(axes)
      .describe(reduceNotes);
  addImporter(table, "ReduceMin", importReduce<Reduction::Min>)
      .constants(axes)
      .describe(
          "`axes` as an attribute, or as a constant input (`ReduceSum` from "
          "opset 13, every reduction from 18); `keepdims`, "
          "`noop_with_empty_axes`; `-max(-x)`, whose gradient reaches the "
          "minimal elements");
  addImporter(table, "ReduceL2", importReduce<Reduction::L2>)
      .constants(axes)
      .describe(
          "`axes` as an attribute, or as a constant input (`ReduceSum` from "
          "opset 13, every reduction from 18); `keepdims`, "
          "`noop_with_empty_axes`; `sqrt(sum(x * x))`, whose gradient is "
          "`x / norm` (NaN where the norm is 0)");
  addImporter(table, "ReduceL1", importReduce<Reduction::L1>)
      .constants(axes)
      .describe(
          "`axes` as an attribute, or as a constant input (from opset 18); "
          "`keepdims`, `noop_with_empty_axes`; `sum(abs(x))`");
  addImporter(table, "ReduceSumSquare", importReduce<Reduction::SumSquare>)
      .constants(axes)
      .describe(
          "`axes` as an attribute, or as a constant input (from opset 18); "
          "`keepdims`, `noop_with_empty_axes`; `sum(x * x)`");
  addImporter(table, "ReduceLogSum", importReduce<Reduction::LogSum>)
      .constants(axes)
      .describe(
          "`axes` as an attribute, or as a constant input (from opset 18); "
          "`keepdims`, `noop_with_empty_axes`; `log(sum(x))`");
  addImporter(table, "ReduceLogSumExp", importReduce<Reduction::LogSumExp>)
      .constants(axes)
      .describe(
          "`axes` as an attribute, or as a constant input (from opset 18); "
          "`keepdims`, `noop_with_empty_axes`; `log(sum(exp(x - max))) + max`, "
          "which cannot overflow");
  addImporter(table, "MeanVarianceNormalization",
              importMeanVarianceNormalization)
      .describe("`axes`; the variance is the mean of squared deviations");
  addImporter(table, "LRN", importLRN)
      .describe(
          "rank >= 3 with static channels; the window sum is a product with a "
          "band matrix along the channels");
  addImporter(table, "Dropout", importDropout)
      .constants(0b110)
      .describe(
          "constant `ratio` and `training_mode`; the `mask` output is the same "
          "stream's dropout of ones, nonzero (all true in evaluation, where "
          "dropout is the identity)");
}
