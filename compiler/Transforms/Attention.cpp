//===- Attention.cpp - nn.attention from and back to its parts ------------===//
//
// cleave-recompose-attention finds scaled dot-product attention in the ops an
// ONNX export spells it with and replaces it by one nn.attention;
// cleave-decompose-attention spells it out again. Each part of the match is
// one predicate; a chain that fails any of them is left as it is.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/Passes.h"
#include "dialects/NN/IR/NNBuilders.h"
#include "dialects/NN/IR/NNOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/Sequence.h"

#include <cmath>

namespace mlir::cleave {
#define GEN_PASS_DEF_CLEAVERECOMPOSEATTENTION
#define GEN_PASS_DEF_CLEAVEDECOMPOSEATTENTION
#include "compiler/Transforms/Passes.h.inc"
} // namespace mlir::cleave

using namespace mlir;
using namespace mlir::cleave;

namespace {

ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

/// `v`'s defining op as an `OpTy` when `v` has no other user.
template <typename OpTy> OpTy soleDef(Value v) {
  return v.hasOneUse() ? v.getDefiningOp<OpTy>() : OpTy();
}

/// The value of a splat float constant, if `v` is one whose shape does not
/// enlarge `like` under broadcasting (all its dimensions are 1).
std::optional<double> splatValue(Value v) {
  DenseFPElementsAttr attr;
  if (!matchPattern(v, m_Constant(&attr)) || !attr.isSplat())
    return std::nullopt;
  if (llvm::any_of(shapeOf(v), [](int64_t d) { return d != 1; }))
    return std::nullopt;
  return attr.getSplatValue<APFloat>().convertToDouble();
}

/// Whether `v` is a constant whose last two dimensions are [t, s], whose
/// other dimensions are 1, and that is non-zero exactly where j > i: the
/// causal mask a GPT export fills with -inf.
bool isCausalCondition(Value v, int64_t t, int64_t s) {
  DenseElementsAttr attr;
  if (!matchPattern(v, m_Constant(&attr)))
    return false;
  ArrayRef<int64_t> shape = shapeOf(v);
  if (shape.size() < 2 || shape[shape.size() - 2] != t || shape.back() != s ||
      llvm::any_of(shape.drop_back(2), [](int64_t d) { return d != 1; }))
    return false;
  // Non-zero exactly where j > i, element by element in row-major order.
  auto isAboveDiagonal = [&](auto values, auto isZero) {
    int64_t flat = 0;
    for (const auto &value : values) {
      bool above = flat % s > flat / s;
      if (isZero(value) == above)
        return false;
      ++flat;
    }
    return true;
  };
  if (isa<FloatType>(attr.getElementType()))
    return isAboveDiagonal(attr.getValues<APFloat>(),
                           [](const APFloat &x) { return x.isZero(); });
  if (isa<IntegerType>(attr.getElementType()))
    return isAboveDiagonal(attr.getValues<APInt>(),
                           [](const APInt &x) { return x.isZero(); });
  return false;
}

/// Whether `mask` broadcasts to `scores` without enlarging it.
bool broadcastsInto(ArrayRef<int64_t> mask, ArrayRef<int64_t> scores) {
  FailureOr<SmallVector<int64_t>> shape = nn::broadcastShapes(mask, scores);
  return succeeded(shape) && ArrayRef<int64_t>(*shape) == scores;
}

/// What the match found between the product q @ k^T and the softmax.
struct Parts {
  Value query, key, value, mask;
  std::optional<double> scale;
  bool scaleIsDivisor = false, causal = false;
  /// `key` is K^T, `[..., D, S]`: the product had no `transpose_b`.
  bool keyTransposed = false;
  /// Dropout on the probabilities, when the product's lhs is one.
  nn::DropoutOp dropout;
};

/// Matches `scores` = scale(matmul(q, k, transpose_b)), the scale optional.
bool matchScaledProduct(Value scores, Parts &parts) {
  Value product = scores;
  if (auto div = soleDef<nn::DivOp>(scores)) {
    parts.scale = splatValue(div.getRhs());
    parts.scaleIsDivisor = true;
    product = div.getLhs();
  } else if (auto mul = soleDef<nn::MulOp>(scores)) {
    if ((parts.scale = splatValue(mul.getRhs())))
      product = mul.getLhs();
    else if ((parts.scale = splatValue(mul.getLhs())))
      product = mul.getRhs();
    else
      return false;
  }
  if (product != scores &&
      (!parts.scale || !std::isfinite(*parts.scale) || *parts.scale == 0 ||
       shapeOf(product) != shapeOf(scores)))
    return false;
  auto matmul = soleDef<nn::MatmulOp>(product);
  if (!matmul || matmul.getTransposeA())
    return false;
  parts.query = matmul.getLhs();
  parts.key = matmul.getRhs();
  parts.keyTransposed = !matmul.getTransposeB();
  return shapeOf(parts.query).size() == shapeOf(parts.key).size();
}

/// Matches the softmax's input: the scaled product, with a causal or an
/// additive mask or neither.
bool matchMaskedScores(Value logits, Parts &parts) {
  ArrayRef<int64_t> scores = shapeOf(logits);
  int64_t rank = scores.size();
  if (auto where = soleDef<nn::WhereOp>(logits)) {
    std::optional<double> fill = splatValue(where.getLhs());
    if (!fill || !std::isinf(*fill) || *fill > 0 ||
        shapeOf(where.getRhs()) != scores ||
        !isCausalCondition(where.getCondition(), scores[rank - 2],
                           scores[rank - 1]))
      return false;
    parts.causal = true;
    return matchScaledProduct(where.getRhs(), parts);
  }
  if (auto add = soleDef<nn::AddOp>(logits)) {
    for (auto [s, m] : {std::pair(add.getLhs(), add.getRhs()),
                        std::pair(add.getRhs(), add.getLhs())}) {
      Parts tried = parts;
      if (shapeOf(s) != scores || !broadcastsInto(shapeOf(m), scores) ||
          !matchScaledProduct(s, tried))
        continue;
      tried.mask = m;
      parts = tried;
      return true;
    }
    return false;
  }
  return matchScaledProduct(logits, parts);
}

/// Whether the op `parts` describe infers `type` and verifies, by the op's
/// own rules (checked before it is built: a failed inference is a fatal
/// error in a builder). The matmuls of the chain check their own operand
/// pairs only, so the query, key and value may still disagree in a batch
/// dimension, and the mask may have fixed a dimension the query leaves
/// dynamic.
bool isValidAttention(const Parts &parts, RankedTensorType type) {
  auto typeOf = [](Value v) { return cast<RankedTensorType>(v.getType()); };
  RankedTensorType key = typeOf(parts.key);
  if (parts.keyTransposed) {
    SmallVector<int64_t> shape(key.getShape());
    std::swap(shape[shape.size() - 2], shape[shape.size() - 1]);
    key = key.clone(shape);
  }
  FailureOr<SmallVector<int64_t>> result = nn::attentionResultShape(
      std::nullopt, typeOf(parts.query), key, typeOf(parts.value));
  if (failed(result) || type.getShape() != ArrayRef<int64_t>(*result))
    return false;
  if (!parts.mask)
    return true;
  SmallVector<int64_t> scores(result->begin(), result->end() - 1);
  scores.push_back(key.getShape()[key.getRank() - 2]);
  return succeeded(nn::verifyAttentionMask(scores, type.getElementType(),
                                           typeOf(parts.mask), nullptr));
}

/// nn.matmul(softmax(...), v) → nn.attention.
struct RecomposeAttention : OpRewritePattern<nn::MatmulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(nn::MatmulOp op,
                                PatternRewriter &rewriter) const override {
    if (op.getTransposeA() || op.getTransposeB())
      return rewriter.notifyMatchFailure(op, "transposed operand");
    Parts parts;
    // Dropout on the probabilities (nn.MultiheadAttention in training).
    Value probs = op.getLhs();
    if ((parts.dropout = soleDef<nn::DropoutOp>(probs)))
      probs = parts.dropout.getInput();
    auto softmax = soleDef<nn::SoftmaxOp>(probs);
    if (!softmax)
      return rewriter.notifyMatchFailure(op, "lhs is not a softmax");
    int64_t rank = softmax.getType().getRank();
    if (nn::normalizeAxis(softmax.getAxis(), rank) != rank - 1)
      return rewriter.notifyMatchFailure(op, "softmax not over the last axis");
    parts.value = op.getRhs();
    if (static_cast<int64_t>(shapeOf(parts.value).size()) != rank ||
        !matchMaskedScores(softmax.getInput(), parts))
      return rewriter.notifyMatchFailure(op, "not scaled dot-product scores");
    if (!isValidAttention(parts, op.getType()))
      return rewriter.notifyMatchFailure(op, "not an nn.attention of its type");
    Value key = parts.key;
    if (parts.keyTransposed) {
      // K from K^T; cleave-decompose-attention multiplies K^T again.
      auto perm = llvm::to_vector(llvm::seq<int64_t>(0, rank));
      std::swap(perm[rank - 2], perm[rank - 1]);
      key = nn::TransposeOp::create(rewriter, op.getLoc(), key, perm);
    }
    nn::DropoutOp dropout = parts.dropout;
    auto attention = nn::AttentionOp::create(
        rewriter, op.getLoc(), parts.query, key, parts.value, parts.mask,
        dropout ? dropout.getSeed() : Value(),
        parts.scale ? rewriter.getF64FloatAttr(*parts.scale) : FloatAttr(),
        parts.scaleIsDivisor ? rewriter.getUnitAttr() : UnitAttr(),
        parts.causal ? rewriter.getUnitAttr() : UnitAttr(),
        dropout ? dropout.getRatioAttr() : FloatAttr(),
        dropout ? dropout.getStreamAttr() : rewriter.getI64IntegerAttr(0));
    rewriter.replaceOp(op, attention.getResult());
    return success();
  }
};

struct RecomposeAttentionPass
    : cleave::impl::CleaveRecomposeAttentionBase<RecomposeAttentionPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<RecomposeAttention>(&getContext());
    // Nothing is folded or merged; what the rewrites leave dead is erased,
    // as by every greedy rewrite.
    GreedyRewriteConfig config;
    config.setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled)
        .enableFolding(false)
        .enableConstantCSE(false);
    if (failed(
            applyPatternsGreedily(getOperation(), std::move(patterns), config)))
      signalPassFailure();
  }
};

/// Whether `v` is computed from constants alone: no block argument of the
/// function (a parameter or an input) reaches it, so it carries no gradient.
bool dependsOnConstantsOnly(Value v) {
  SmallVector<Value> work = {v};
  llvm::SmallPtrSet<Value, 16> seen;
  while (!work.empty()) {
    Value x = work.pop_back_val();
    if (!seen.insert(x).second)
      continue;
    Operation *def = x.getDefiningOp();
    if (!def || def->getNumRegions() != 0)
      return false;
    llvm::append_range(work, def->getOperands());
  }
  return true;
}

/// Why cuda's fused attention kernel (cuDNN's SDPA) does not take `op`, or
/// empty. The limits are those cuDNN 9 documents for every GPU Cleave
/// compiles bf16 for (sm_80 and newer): docs/design/attention.md.
std::string whyNotFusable(nn::AttentionOp op) {
  auto q = cast<RankedTensorType>(op.getQuery().getType());
  auto k = cast<RankedTensorType>(op.getKey().getType());
  auto v = cast<RankedTensorType>(op.getValue().getType());
  if (!q.hasStaticShape() || !k.hasStaticShape() || !v.hasStaticShape())
    return "dynamic shapes";
  if (!q.getElementType().isF32())
    return "not f32";
  int64_t d = q.getShape().back();
  if (d % 8 != 0 || d > 128)
    return "head dimension " + std::to_string(d) +
           " is not a multiple of 8 up to 128";
  if (v.getShape().back() != d)
    return "value dimension differs from the head dimension";
  if (Value mask = op.getMask()) {
    ArrayRef<int64_t> m = shapeOf(mask);
    if (m.size() > 2 &&
        llvm::any_of(m.drop_back(2), [](int64_t n) { return n != 1; }))
      return "a mask that differs across the batch";
    if (!dependsOnConstantsOnly(mask))
      return "a mask that is not a constant";
  }
  return {};
}

/// For attention with dropout, what nn.fused_attention multiplies the
/// probabilities by before 1 / (1 - r): `[..., T, S]`, 1 where nn.dropout's
/// mask (the op's seed and stream, over the scores' row-major indices, as
/// the decomposition draws it) keeps a probability and 0 where it drops it.
/// cuDNN's SDPA would draw its own mask (Philox) instead, which the CPU, the
/// interpreter and a resumed run could not reproduce. Null without dropout.
Value keepMask(OpBuilder &b, nn::AttentionOp op) {
  Value seed = op.getSeed();
  if (!seed)
    return Value();
  Location loc = op.getLoc();
  Type elt = op.getType().getElementType();
  Value ones = nn::splat(b, loc, 1.0, elt, op.getScoresShape());
  Value drawn = nn::DropoutOp::create(
      b, loc, ones, seed, op.getDropoutRatioAttr(), op.getDropoutStreamAttr());
  return nn::WhereOp::create(b, loc, drawn, nn::splat(b, loc, 1.0, elt),
                             nn::splat(b, loc, 0.0, elt));
}

struct DecomposeAttentionPass
    : cleave::impl::CleaveDecomposeAttentionBase<DecomposeAttentionPass> {
  using CleaveDecomposeAttentionBase::CleaveDecomposeAttentionBase;

  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    getOperation().walk([&](nn::AttentionOp op) {
      rewriter.setInsertionPoint(op);
      std::string why = fuse ? whyNotFusable(op) : std::string();
      if (fuse && why.empty()) {
        auto fused = nn::FusedAttentionOp::create(
            rewriter, op.getLoc(), op.getQuery(), op.getKey(), op.getValue(),
            op.getMask(), keepMask(rewriter, op), op.getScaleAttr(),
            op.getScaleIsDivisorAttr(), op.getCausalAttr(),
            op.getDropoutRatioAttr());
        rewriter.replaceOp(op, fused.getResult());
        return;
      }
      // Spelt out, its T x S probabilities are held for the backward pass:
      // say why, since that can decide whether a model fits.
      if (fuse)
        op.emitWarning("attention is spelt out as matmuls and a softmax, "
                       "not cuDNN's fused kernel: ")
            << why;
      Operation *key = op.getKey().getDefiningOp();
      rewriter.replaceOp(op, nn::decomposeAttention(rewriter, op).result);
      // The K of a K^T (recomposed nn.MultiheadAttention) is dead again.
      if (isa_and_nonnull<nn::TransposeOp>(key) && key->use_empty())
        rewriter.eraseOp(key);
    });
  }
};

} // namespace
