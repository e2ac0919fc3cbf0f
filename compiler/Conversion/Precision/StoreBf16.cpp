//===- StoreBf16.cpp - bf16 kernels read bf16 activations -----------------===//
//
// With precision=bf16 the runtime's matmuls and convolutions multiply in
// bf16. Their activation inputs are narrowed once, in the loop that
// computes them, instead of by the kernel on every call: the kernels read
// the bf16 copy as stored (docs/design/mixed-precision.md, "bf16
// storage"). On the CPU parameters keep the runtime's once-per-generation
// copy; on cuda (`parameters`) they are narrowed at the start of the entry
// point, since cuBLASLt multiplies bf16 only when both operands are bf16.
// Everything else stays f32.
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
/// the twin is, but for 0 < x < 2^-133, which rounds to zero; NaN is
/// neither. Null if there is none.
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

struct StoreBf16Pass : cleave::impl::CleaveStoreBf16Base<StoreBf16Pass> {
  using CleaveStoreBf16Base::CleaveStoreBf16Base;

  void runOnOperation() override {
    OpBuilder b(&getContext());
    llvm::DenseMap<Value, Value> narrowed;
    SmallVector<linalg::GenericOp> narrowings;
    SmallVector<rt::KernelOp> kernels;
    getOperation()->walk([&](rt::KernelOp k) { kernels.push_back(k); });
    for (rt::KernelOp k : kernels) {
      if (!k.hasPureTensorSemantics() ||
          !multipliesInBf16(k, convolutions, minMatmulK))
        continue;
      for (auto [i, input] : llvm::enumerate(k.getInputsMutable())) {
        Value v = input.get();
        auto type = dyn_cast<RankedTensorType>(v.getType());
        if (!k.isStorableInBf16(i) || !type || !type.getElementType().isF32() ||
            !type.hasStaticShape() || (!parameters && readsGlobal(v)))
          continue;
        Value &copy = narrowed[v];
        if (!copy) {
          copy = narrowedCopy(b, v);
          narrowings.push_back(copy.getDefiningOp<linalg::GenericOp>());
        }
        input.set(copy);
      }
    }
    IRRewriter rewriter(&getContext());
    for (linalg::GenericOp op : narrowings) {
      rewriter.setInsertionPoint(op);
      fuseIntoProducer(rewriter, op);
    }
    if (narrowings.empty())
      return;
    // Masks read the bf16 twins; an f32 value only masks read dies early.
    SmallVector<linalg::GenericOp> loops;
    getOperation()->walk([&](linalg::GenericOp op) { loops.push_back(op); });
    for (linalg::GenericOp op : loops)
      if (op.hasPureTensorSemantics())
        maskFromTwin(op);
  }
};

} // namespace
