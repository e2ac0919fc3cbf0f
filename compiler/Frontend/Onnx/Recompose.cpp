//===- Recompose.cpp - Exporter idioms back into single nn ops ------------===//
//
// Exporters decompose what nn has single ops for: torch.onnx at opset 13
// spells LayerNorm as ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/Div/Mul/Add,
// GELU as x * 0.5 * (1 + erf(x / sqrt(2))), and nn.Linear on 3-D inputs as
// MatMul(x, Transpose(W)) + b. The nodes are imported one by one (each is
// supported on its own); these patterns then put the idioms back together
// when they match exactly, so the back end sees one fused kernel.
//
//===----------------------------------------------------------------------===//

#include "compiler/Frontend/Onnx/Importer.h"

#include "dialects/NN/IR/NNOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

#include <cmath>

using namespace mlir;
using namespace mlir::cleave;
using namespace mlir::cleave::importer;

namespace {

/// The value of a splat floating-point constant, widened as attributes are.
std::optional<double> splatValue(Value v) {
  DenseElementsAttr attr;
  if (!matchPattern(v, m_Constant(&attr)) || !attr.isSplat() ||
      !isa<FloatType>(attr.getElementType()))
    return std::nullopt;
  if (attr.getElementType().isF32())
    return widenFloat(attr.getSplatValue<float>());
  return attr.getSplatValue<APFloat>().convertToDouble();
}

bool isSplat(Value v, double expected, double tolerance = 0.0) {
  std::optional<double> value = splatValue(v);
  return value && std::abs(*value - expected) <= tolerance;
}

/// Whether `axes` are exactly the trailing dimensions [rank - n, rank).
bool isTrailing(ArrayRef<int64_t> axes, int64_t rank) {
  for (auto [i, a] : llvm::enumerate(axes))
    if (a != rank - (int64_t)axes.size() + (int64_t)i)
      return false;
  return !axes.empty();
}

/// `(x - mean(x)) / sqrt(mean((x - mean(x))^2) + eps)` over trailing axes,
/// the normalisation half of the opset-13 LayerNorm chain.
struct RecomposeLayerNorm : OpRewritePattern<nn::DivOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(nn::DivOp div,
                                PatternRewriter &rewriter) const override {
    auto centred = div.getLhs().getDefiningOp<nn::SubOp>();
    auto root = div.getRhs().getDefiningOp<nn::SqrtOp>();
    if (!centred || !root)
      return rewriter.notifyMatchFailure(div, "not (x - m) / sqrt(v)");
    Value x = centred.getLhs();
    auto mean = centred.getRhs().getDefiningOp<nn::ReduceMeanOp>();
    if (!mean || mean.getInput() != x || !mean.getKeepdims())
      return rewriter.notifyMatchFailure(div,
                                         "the centring is not x - mean(x)");
    auto xType = cast<RankedTensorType>(x.getType());
    SmallVector<int64_t> axes = mean.getReducedAxes();
    if (!isTrailing(axes, xType.getRank()) || div.getType() != xType)
      return rewriter.notifyMatchFailure(div, "not over trailing axes");

    auto shifted = root.getInput().getDefiningOp<nn::AddOp>();
    if (!shifted)
      return rewriter.notifyMatchFailure(div, "no variance + eps");
    nn::ReduceMeanOp variance;
    std::optional<double> eps;
    for (auto [v, e] : {std::pair(shifted.getLhs(), shifted.getRhs()),
                        std::pair(shifted.getRhs(), shifted.getLhs())}) {
      if (auto m = v.getDefiningOp<nn::ReduceMeanOp>(); m && splatValue(e)) {
        variance = m;
        eps = splatValue(e);
      }
    }
    if (!variance || !(*eps >= 0) || !variance.getKeepdims() ||
        variance.getReducedAxes() != axes ||
        variance.getType() != shifted.getType())
      return rewriter.notifyMatchFailure(div, "no mean of squares + eps");
    auto square = variance.getInput().getDefiningOp<nn::PowOp>();
    if (!square || square.getInput() != centred.getResult() ||
        square.getExponent().convertToDouble() != 2.0)
      return rewriter.notifyMatchFailure(div, "the variance is not of x - m");

    Location loc = rewriter.getFusedLoc(
        {mean.getLoc(), centred.getLoc(), square.getLoc(), variance.getLoc(),
         shifted.getLoc(), root.getLoc(), div.getLoc()});
    // Counted from the end, as nn.layer_norm's default and PyTorch's
    // normalized_shape are.
    int64_t axis = axes.front() - xType.getRank();
    auto ln = nn::LayerNormOp::create(rewriter, loc, div.getType(), x, Value(),
                                      Value(), static_cast<uint64_t>(axis),
                                      APFloat(*eps));
    rewriter.replaceOp(div, ln);
    return success();
  }
};

/// The normalised shape of a layer norm: its input's trailing dimensions.
ArrayRef<int64_t> normalisedShape(nn::LayerNormOp ln) {
  auto type = cast<RankedTensorType>(ln.getInput().getType());
  int64_t axis = static_cast<int64_t>(ln.getAxis());
  if (axis < 0)
    axis += type.getRank();
  return type.getShape().drop_front(axis);
}

/// Whether `v` can be `ln`'s scale or bias: exactly the normalised shape.
bool fitsAffine(nn::LayerNormOp ln, Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t && t.getElementType() == ln.getType().getElementType() &&
         t.getShape() == normalisedShape(ln);
}

/// `layer_norm(x) * scale` -> `layer_norm(x, scale)`.
struct FoldLayerNormScale : OpRewritePattern<nn::MulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(nn::MulOp mul,
                                PatternRewriter &rewriter) const override {
    for (auto [v, scale] : {std::pair(mul.getLhs(), mul.getRhs()),
                            std::pair(mul.getRhs(), mul.getLhs())}) {
      auto ln = v.getDefiningOp<nn::LayerNormOp>();
      if (!ln || ln.getScale() || ln.getBias() || !ln->hasOneUse() ||
          !fitsAffine(ln, scale) || mul.getType() != ln.getType())
        continue;
      rewriter.replaceOpWithNewOp<nn::LayerNormOp>(
          mul, mul.getType(), ln.getInput(), scale, Value(), ln.getAxis(),
          ln.getEpsilon());
      return success();
    }
    return rewriter.notifyMatchFailure(mul, "not a layer norm times a scale");
  }
};

/// `layer_norm(x[, scale]) + bias` -> `layer_norm(x[, scale], bias)`.
struct FoldLayerNormBias : OpRewritePattern<nn::AddOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(nn::AddOp add,
                                PatternRewriter &rewriter) const override {
    for (auto [v, bias] : {std::pair(add.getLhs(), add.getRhs()),
                           std::pair(add.getRhs(), add.getLhs())}) {
      auto ln = v.getDefiningOp<nn::LayerNormOp>();
      if (!ln || ln.getBias() || !ln->hasOneUse() || !fitsAffine(ln, bias) ||
          add.getType() != ln.getType())
        continue;
      rewriter.replaceOpWithNewOp<nn::LayerNormOp>(
          add, add.getType(), ln.getInput(), ln.getScale(), bias, ln.getAxis(),
          ln.getEpsilon());
      return success();
    }
    return rewriter.notifyMatchFailure(add, "not a layer norm plus a bias");
  }
};

/// `x * 0.5 * (1 + erf(x / sqrt(2)))`, with the products in any order, ->
/// `nn.gelu`.
struct RecomposeGelu : OpRewritePattern<nn::MulOp> {
  using OpRewritePattern::OpRewritePattern;

  /// If `v` is `1 + erf(x / sqrt(2))` (or `x * (1 / sqrt(2))`), returns x.
  static Value matchErfTerm(Value v) {
    auto add = v.getDefiningOp<nn::AddOp>();
    if (!add)
      return {};
    nn::ErfOp erf;
    for (auto [a, b] : {std::pair(add.getLhs(), add.getRhs()),
                        std::pair(add.getRhs(), add.getLhs())})
      if (auto e = a.getDefiningOp<nn::ErfOp>(); e && isSplat(b, 1.0))
        erf = e;
    if (!erf)
      return {};
    // Tolerate the rounding of the constant to single precision.
    constexpr double tolerance = 1e-6;
    Value arg = erf.getInput();
    if (auto d = arg.getDefiningOp<nn::DivOp>();
        d && isSplat(d.getRhs(), M_SQRT2, tolerance))
      return d.getLhs();
    if (auto m = arg.getDefiningOp<nn::MulOp>()) {
      if (isSplat(m.getRhs(), M_SQRT1_2, tolerance))
        return m.getLhs();
      if (isSplat(m.getLhs(), M_SQRT1_2, tolerance))
        return m.getRhs();
    }
    return {};
  }

  LogicalResult matchAndRewrite(nn::MulOp mul,
                                PatternRewriter &rewriter) const override {
    // Flatten the two nested products into their three factors.
    SmallVector<Value, 3> factors;
    for (Value v : {mul.getLhs(), mul.getRhs()}) {
      auto inner = v.getDefiningOp<nn::MulOp>();
      if (inner && inner->hasOneUse()) {
        factors.push_back(inner.getLhs());
        factors.push_back(inner.getRhs());
      } else {
        factors.push_back(v);
      }
    }
    if (factors.size() != 3)
      return rewriter.notifyMatchFailure(mul, "not a product of three");
    for (unsigned half = 0; half < 3; ++half) {
      if (!isSplat(factors[half], 0.5))
        continue;
      for (unsigned term = 0; term < 3; ++term) {
        if (term == half)
          continue;
        Value x = factors[3 - half - term];
        if (matchErfTerm(factors[term]) != x || mul.getType() != x.getType())
          continue;
        rewriter.replaceOpWithNewOp<nn::GeluOp>(mul, x);
        return success();
      }
    }
    return rewriter.notifyMatchFailure(mul, "not the erf form of GELU");
  }
};

/// `matmul(transpose(a), b)` -> `matmul(a, b) {transpose_a}`, and likewise
/// for b, when the transpose swaps the last two dimensions.
struct FoldTransposeIntoMatmul : OpRewritePattern<nn::MatmulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(nn::MatmulOp op,
                                PatternRewriter &rewriter) const override {
    auto lhs = op.getLhs().getDefiningOp<nn::TransposeOp>();
    auto rhs = op.getRhs().getDefiningOp<nn::TransposeOp>();
    bool foldLhs = lhs && nn::swapsLastTwo(lhs.getPermutation());
    bool foldRhs = rhs && nn::swapsLastTwo(rhs.getPermutation());
    if (!foldLhs && !foldRhs)
      return rewriter.notifyMatchFailure(op, "no foldable transpose");
    rewriter.modifyOpInPlace(op, [&] {
      if (foldLhs) {
        op.getLhsMutable().assign(lhs.getInput());
        op.setTransposeA(!op.getTransposeA());
      }
      if (foldRhs) {
        op.getRhsMutable().assign(rhs.getInput());
        op.setTransposeB(!op.getTransposeB());
      }
    });
    return success();
  }
};

/// `matmul(x, W) {transpose_b}` with a matrix W is `linear(x, W)`.
struct MatmulToLinear : OpRewritePattern<nn::MatmulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(nn::MatmulOp op,
                                PatternRewriter &rewriter) const override {
    if (op.getTransposeA() || !op.getTransposeB() ||
        op.getRhs().getType().getRank() != 2)
      return rewriter.notifyMatchFailure(op, "not x @ W^T with a matrix W");
    rewriter.replaceOpWithNewOp<nn::LinearOp>(op, op.getType(), op.getLhs(),
                                              op.getRhs(), Value());
    return success();
  }
};

/// `linear(x, W) + b` with `b` of shape [out] -> `linear(x, W, b)`.
struct FoldLinearBias : OpRewritePattern<nn::AddOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(nn::AddOp add,
                                PatternRewriter &rewriter) const override {
    for (auto [v, bias] : {std::pair(add.getLhs(), add.getRhs()),
                           std::pair(add.getRhs(), add.getLhs())}) {
      auto linear = v.getDefiningOp<nn::LinearOp>();
      if (!linear || linear.getBias() || !linear->hasOneUse() ||
          add.getType() != linear.getType())
        continue;
      auto bt = cast<RankedTensorType>(bias.getType());
      auto wt = linear.getWeight().getType();
      if (bt.getRank() != 1 || bt.getDimSize(0) != wt.getDimSize(0) ||
          bt.getElementType() != wt.getElementType())
        continue;
      rewriter.replaceOpWithNewOp<nn::LinearOp>(
          add, add.getType(), linear.getInput(), linear.getWeight(), bias);
      return success();
    }
    return rewriter.notifyMatchFailure(add, "not a linear plus a bias");
  }
};

} // namespace

void importer::populateRecomposePatterns(RewritePatternSet &patterns) {
  patterns.add<RecomposeLayerNorm, FoldLayerNormScale, FoldLayerNormBias,
               RecomposeGelu, FoldTransposeIntoMatmul, MatmulToLinear,
               FoldLinearBias>(patterns.getContext());
}
