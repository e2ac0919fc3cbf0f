//===- StoreBf16.cpp - bf16 kernels read bf16 activations -----------------===//
//
// With precision=bf16 the runtime's matmuls and convolutions multiply in
// bf16. Their activation inputs are narrowed once, in the loop that
// computes them, instead of by the kernel on every call: the kernels read
// the bf16 copy as stored (docs/design/mixed-precision.md, "bf16
// storage"). On the CPU parameters keep the runtime's once-per-generation
// copy; on cuda (`parameters`) they are narrowed at the start of the entry
// point, since cuBLASLt multiplies bf16 only when both operands are bf16.
// cuDNN multiplies bf16 only on bf16 tensors, its result included
// (`convolution-results`): a convolution's result is then stored in bf16 and
// widened by a loop that also applies what the kernel would have (bias,
// ReLU, the sum into an accumulator). Everything else stays f32.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/Abi/EntryAbi.h"
#include "compiler/Conversion/Passes.h"
#include "compiler/Conversion/Precision/Bf16Rule.h"
#include "dialects/Runtime/IR/RtOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::cleave {
#define GEN_PASS_DEF_CLEAVESTOREBF16
#include "compiler/Conversion/Passes.h.inc"
} // namespace mlir::cleave

using namespace mlir;
using namespace mlir::cleave;

namespace {

/// Whether `v` is (a view of) a global the entry point receives: a
/// parameter, whose bf16 copy the runtime makes once per generation.
bool readsGlobal(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (isa<tensor::CollapseShapeOp, tensor::ExpandShapeOp,
            tensor::ExtractSliceOp, bufferization::ToTensorOp>(def)) {
      v = def->getOperand(0);
      continue;
    }
    return false;
  }
  auto f =
      dyn_cast<func::FuncOp>(cast<BlockArgument>(v).getOwner()->getParentOp());
  return f && abiRole(f, v) == "global";
}

/// `v` (f32) narrowed to bf16 by a loop made right after `v` is defined.
Value narrowedCopy(OpBuilder &b, Value v) {
  auto type = cast<RankedTensorType>(v.getType());
  if (Operation *def = v.getDefiningOp())
    b.setInsertionPointAfter(def);
  else
    b.setInsertionPointToStart(cast<BlockArgument>(v).getOwner());
  Location loc = v.getLoc();
  Value init =
      tensor::EmptyOp::create(b, loc, type.getShape(), b.getBF16Type());
  AffineMap id = b.getMultiDimIdentityMap(type.getRank());
  SmallVector<utils::IteratorType> parallel(type.getRank(),
                                            utils::IteratorType::parallel);
  auto op = linalg::GenericOp::create(
      b, loc, TypeRange{init.getType()}, ValueRange{v}, ValueRange{init},
      ArrayRef<AffineMap>{id, id}, parallel,
      [](OpBuilder &nb, Location l, ValueRange args) {
        Value t = arith::TruncFOp::create(nb, l, nb.getBF16Type(), args[0]);
        linalg::YieldOp::create(nb, l, t);
      });
  return op.getResult(0);
}

/// Fuses the narrowing `op` into the elementwise loop that computes its
/// input, where there is one: the loop then yields the bf16 result too (and
/// keeps yielding the f32 one only for its other readers).
void fuseIntoProducer(RewriterBase &rewriter, linalg::GenericOp op) {
  OpOperand *operand = op.getDpsInputOperand(0);
  auto producer = operand->get().getDefiningOp<linalg::GenericOp>();
  if (!producer || !linalg::areElementwiseOpsFusable(operand))
    return;
  FailureOr<linalg::ElementwiseOpFusionResult> fused =
      linalg::fuseElementwiseOps(rewriter, operand);
  if (failed(fused))
    return;
  for (auto [original, replacement] : fused->replacements)
    rewriter.replaceUsesWithIf(original, replacement, [&](OpOperand &use) {
      return use.getOwner() != producer.getOperation();
    });
  rewriter.eraseOp(op);
  if (producer->use_empty())
    rewriter.eraseOp(producer);
}

/// The bf16 twin of `x` that shows its sign: a result of an elementwise
/// loop reading `x` alone that yields `x` or `max(x, 0)` rounded to bf16 (a
/// narrowing, or a ReLU fused with its narrowing). `x > 0` exactly where
/// the twin is, but for 0 < x < 2^-133, which rounds to zero (0 < x <
/// 2^-126 where VCVTNEPS2BF16 narrows, flushing denormals: ExpandBFloat16);
/// NaN is neither. Null if there is none.
Value signTwin(Value x) {
  for (OpOperand &use : x.getUses()) {
    auto g = dyn_cast<linalg::GenericOp>(use.getOwner());
    if (!g || !g.hasPureTensorSemantics() || g.getNumDpsInputs() != 1 ||
        use.getOperandNumber() != 0 ||
        !llvm::all_of(g.getIndexingMapsArray(),
                      [](AffineMap m) { return m.isIdentity(); }))
      continue;
    Value arg = g.getBody()->getArgument(0);
    auto yield = cast<linalg::YieldOp>(g.getBody()->getTerminator());
    for (auto [i, y] : llvm::enumerate(yield.getOperands())) {
      auto trunc = y.getDefiningOp<arith::TruncFOp>();
      if (!trunc || !trunc.getType().isBF16())
        continue;
      Value in = trunc.getIn();
      auto relu = in.getDefiningOp<arith::MaximumFOp>();
      if (in == arg ||
          (relu && ((relu.getLhs() == arg &&
                     matchPattern(relu.getRhs(), m_AnyZeroFloat())) ||
                    (relu.getRhs() == arg &&
                     matchPattern(relu.getLhs(), m_AnyZeroFloat())))))
        return g.getResult(i);
    }
  }
  return {};
}

/// A ReLU's backward mask (`x > 0`, the only use `op`'s loop makes of
/// input `x`) reads `x`'s bf16 sign twin instead, so that the f32 `x` need
/// not be held from the forward pass to the backward one: the ReLU's
/// output is held, in bf16, for the weight gradient anyway.
void maskFromTwin(linalg::GenericOp op) {
  Block *body = op.getBody();
  for (OpOperand *input : op.getDpsInputOperands()) {
    Value x = input->get();
    auto type = dyn_cast<RankedTensorType>(x.getType());
    if (!type || !type.getElementType().isF32() ||
        !op.getMatchingIndexingMap(input).isIdentity())
      continue;
    BlockArgument arg = op.getMatchingBlockArgument(input);
    if (arg.use_empty() || !llvm::all_of(arg.getUsers(), [&](Operation *u) {
          auto cmp = dyn_cast<arith::CmpFOp>(u);
          return cmp && cmp.getPredicate() == arith::CmpFPredicate::OGT &&
                 cmp.getLhs() == arg &&
                 matchPattern(cmp.getRhs(), m_AnyZeroFloat());
        }))
      continue;
    Value twin = signTwin(x);
    Operation *def = twin ? twin.getDefiningOp() : nullptr;
    if (!def || def->getBlock() != op->getBlock() || !def->isBeforeInBlock(op))
      continue;
    input->set(twin);
    arg.setType(cast<RankedTensorType>(twin.getType()).getElementType());
    OpBuilder b = OpBuilder::atBlockBegin(body);
    Value wide = arith::ExtFOp::create(b, op.getLoc(), b.getF32Type(), arg);
    arg.replaceAllUsesExcept(wide, wide.getDefiningOp());
  }
}

bool isAttention(rt::KernelOp k) {
  return k.getKind() == rt::KernelKind::sdpa_fwd ||
         k.getKind() == rt::KernelKind::sdpa_bwd;
}

/// Whether every operand of `k` that may be bf16 (a convolution's
/// multiplied ones and result, all of attention's but its log-sum-exp) can
/// be stored in bf16: f32 or bf16 tensors of static shape.
bool storableThroughout(rt::KernelOp k) {
  auto storable = [](Value v) {
    auto type = dyn_cast<RankedTensorType>(v.getType());
    return type && type.hasStaticShape() &&
           (type.getElementType().isF32() || type.getElementType().isBF16());
  };
  for (auto [i, v] : llvm::enumerate(k.getInputs()))
    if (k.isStorableInBf16(i) && !storable(v))
      return false;
  for (auto [i, v] : llvm::enumerate(k.getOutputs()))
    if (k.isResultStorableInBf16(i) && !storable(v))
      return false;
  return true;
}

/// Makes attention kernel `k` write its results in bf16 (all but the
/// log-sum-exp, cuDNN's fused attention writes no other type) and widens
/// each in a loop of its own, which fuseWideningsIntoReaders may fuse into
/// its reader.
void storeAttentionResultsInBf16(RewriterBase &rewriter, rt::KernelOp k) {
  Location loc = k.getLoc();
  rewriter.setInsertionPoint(k);
  SmallVector<Type> types;
  SmallVector<Value> inits;
  for (auto [i, result] : llvm::enumerate(k.getResults())) {
    auto type = cast<RankedTensorType>(result.getType());
    Type element = k.isResultStorableInBf16(i) ? rewriter.getBF16Type()
                                               : type.getElementType();
    inits.push_back(
        tensor::EmptyOp::create(rewriter, loc, type.getShape(), element));
    types.push_back(inits.back().getType());
  }
  auto narrow = rt::KernelOp::create(rewriter, loc, types, k.getKindAttr(),
                                     k.getInputs(), inits, k.getConfig());
  SmallVector<Value> replacements;
  for (auto [i, result] : llvm::enumerate(narrow.getResults())) {
    auto type = cast<RankedTensorType>(k.getResult(i).getType());
    if (!k.isResultStorableInBf16(i)) {
      replacements.push_back(result);
      continue;
    }
    AffineMap id = rewriter.getMultiDimIdentityMap(type.getRank());
    SmallVector<utils::IteratorType> parallel(type.getRank(),
                                              utils::IteratorType::parallel);
    Value out = tensor::EmptyOp::create(rewriter, loc, type.getShape(),
                                        type.getElementType());
    auto widen = linalg::GenericOp::create(
        rewriter, loc, TypeRange{type}, ValueRange{result}, ValueRange{out},
        ArrayRef<AffineMap>{id, id}, parallel,
        [](OpBuilder &nb, Location l, ValueRange args) {
          linalg::YieldOp::create(
              nb, l,
              arith::ExtFOp::create(nb, l, nb.getF32Type(), args[0])
                  .getResult());
        });
    replacements.push_back(widen.getResult(0));
  }
  rewriter.replaceOp(k, replacements);
}

/// Makes convolution `k` write its result in bf16, rounded once by the
/// kernel, and replaces the f32 result with a loop that widens it and does
/// what `k` did after the products: adds the bias, applies the ReLU, and
/// adds into `k`'s accumulator (its init, which the loop then writes, so the
/// sum stays in place and f32).
void storeResultInBf16(RewriterBase &rewriter, rt::KernelOp k) {
  Location loc = k.getLoc();
  MLIRContext *ctx = k.getContext();
  auto type = cast<RankedTensorType>(k.getResult(0).getType());
  Value acc = k.getOutputs()[0];
  const bool accumulate = k.getFlag("accumulate");
  auto activation = k.getConfig().getAs<StringAttr>("activation");
  const bool relu = activation && activation.getValue() == "relu";
  Value bias =
      k.getKind() == rt::KernelKind::conv2d_fwd && k.getInputs().size() > 2
          ? k.getInputs()[2]
          : Value();

  rewriter.setInsertionPoint(k);
  NamedAttrList config(k.getConfig());
  if (config.get("activation"))
    config.set("activation", StringAttr::get(ctx, "none"));
  if (config.get("accumulate"))
    config.set("accumulate", BoolAttr::get(ctx, false));
  Value init = tensor::EmptyOp::create(rewriter, loc, type.getShape(),
                                       rewriter.getBF16Type());
  auto narrow = rt::KernelOp::create(
      rewriter, loc, TypeRange{init.getType()}, k.getKindAttr(),
      k.getInputs().take_front(2), ValueRange{init}, config.getDictionary(ctx));

  // The widening loop: ext(r) [+ bias[c]] [relu] [+ acc].
  SmallVector<Value> inputs = {narrow.getResult(0)};
  int64_t rank = type.getRank();
  AffineMap id = rewriter.getMultiDimIdentityMap(rank);
  SmallVector<AffineMap> maps = {id};
  if (bias) {
    inputs.push_back(bias);
    maps.push_back(AffineMap::get(rank, 0, rewriter.getAffineDimExpr(1)));
  }
  maps.push_back(id);
  Value out = accumulate
                  ? acc
                  : tensor::EmptyOp::create(rewriter, loc, type.getShape(),
                                            type.getElementType())
                        .getResult();
  SmallVector<utils::IteratorType> parallel(rank,
                                            utils::IteratorType::parallel);
  Value zero = relu ? arith::ConstantOp::create(rewriter, loc,
                                                rewriter.getF32FloatAttr(0))
                          .getResult()
                    : Value();
  auto widen = linalg::GenericOp::create(
      rewriter, loc, TypeRange{type}, inputs, ValueRange{out}, maps, parallel,
      [&](OpBuilder &nb, Location l, ValueRange args) {
        Value x = arith::ExtFOp::create(nb, l, nb.getF32Type(), args[0]);
        if (bias)
          x = arith::AddFOp::create(nb, l, x, args[1]);
        if (relu)
          x = arith::MaximumFOp::create(nb, l, x, zero);
        if (accumulate)
          x = arith::AddFOp::create(nb, l, args.back(), x);
        linalg::YieldOp::create(nb, l, x);
      });
  rewriter.replaceOp(k, widen.getResults());
}

/// Fuses each loop that widens a bf16 convolution result into the
/// elementwise loop that reads it, where that loop is its only reader (the
/// bias-and-ReLU loop of a convolution whose ReLU is not fused, a ReLU
/// backward's product): the f32 result is then never stored. A widening
/// with several readers stays a loop of its own.
void fuseWideningsIntoReaders(RewriterBase &rewriter, Operation *root) {
  SmallVector<linalg::GenericOp> widenings;
  root->walk([&](linalg::GenericOp op) {
    if (!op.hasPureTensorSemantics() || op.getNumDpsInputs() < 1 ||
        op->getNumResults() != 1)
      return;
    auto result = dyn_cast<OpResult>(op.getDpsInputOperand(0)->get());
    auto k = result ? dyn_cast<rt::KernelOp>(result.getOwner()) : nullptr;
    if (k && k.isResultStorableInBf16(result.getResultNumber()) &&
        cast<ShapedType>(result.getType()).getElementType().isBF16())
      widenings.push_back(op);
  });
  for (linalg::GenericOp producer : widenings) {
    Value result = producer->getResult(0);
    if (!result.hasOneUse())
      continue;
    OpOperand &use = *result.getUses().begin();
    auto reader = dyn_cast<linalg::GenericOp>(use.getOwner());
    if (!reader || !reader.hasPureTensorSemantics() ||
        !linalg::areElementwiseOpsFusable(&use))
      continue;
    rewriter.setInsertionPoint(reader);
    FailureOr<linalg::ElementwiseOpFusionResult> fused =
        linalg::fuseElementwiseOps(rewriter, &use);
    if (failed(fused))
      continue;
    for (auto [original, replacement] : fused->replacements)
      if (original.getDefiningOp() == reader.getOperation())
        rewriter.replaceAllUsesWith(original, replacement);
    rewriter.eraseOp(reader);
    if (producer->use_empty())
      rewriter.eraseOp(producer);
  }
}

struct StoreBf16Pass : cleave::impl::CleaveStoreBf16Base<StoreBf16Pass> {
  using CleaveStoreBf16Base::CleaveStoreBf16Base;

  void runOnOperation() override {
    OpBuilder b(&getContext());
    llvm::DenseMap<Value, Value> narrowed;
    SmallVector<linalg::GenericOp> narrowings;
    SmallVector<rt::KernelOp> kernels;
    getOperation()->walk([&](rt::KernelOp k) { kernels.push_back(k); });
    IRRewriter rewriter(&getContext());
    for (rt::KernelOp k : kernels) {
      if (!k.hasPureTensorSemantics() ||
          !multipliesInBf16(k, convolutions, minMatmulK))
        continue;
      // cuDNN's bf16 convolutions and fused attention: every operand in
      // bf16, or none.
      const bool throughout =
          isAttention(k) || (convolutionResults && k.isResultStorableInBf16());
      if (throughout && !storableThroughout(k))
        continue;
      for (auto [i, input] : llvm::enumerate(k.getInputsMutable())) {
        Value v = input.get();
        auto type = dyn_cast<RankedTensorType>(v.getType());
        if (!k.isStorableInBf16(i) || !type || !type.getElementType().isF32() ||
            !type.hasStaticShape() ||
            (!parameters && !throughout && readsGlobal(v)))
          continue;
        Value &copy = narrowed[v];
        if (!copy) {
          copy = narrowedCopy(b, v);
          narrowings.push_back(copy.getDefiningOp<linalg::GenericOp>());
        }
        input.set(copy);
      }
      if (isAttention(k))
        storeAttentionResultsInBf16(rewriter, k);
      else if (throughout)
        storeResultInBf16(rewriter, k);
    }
    for (linalg::GenericOp op : narrowings) {
      rewriter.setInsertionPoint(op);
      fuseIntoProducer(rewriter, op);
    }
    // Masks read the bf16 twins; an f32 value only masks read dies early.
    if (!narrowings.empty()) {
      SmallVector<linalg::GenericOp> loops;
      getOperation()->walk([&](linalg::GenericOp op) { loops.push_back(op); });
      for (linalg::GenericOp op : loops)
        if (op.hasPureTensorSemantics())
          maskFromTwin(op);
    }
    fuseWideningsIntoReaders(rewriter, getOperation());
  }
};

} // namespace
