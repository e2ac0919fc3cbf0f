//===- StoreBf16.cpp - bf16 kernels read bf16 activations -----------------===//
//
// With precision=bf16 the runtime's matmuls and convolutions multiply in
// bf16. Their activation inputs are narrowed once, in the loop that
// computes them, instead of by the kernel on every call: the kernels read
// the bf16 copy as stored (docs/design/mixed-precision.md, "bf16
// storage"). Parameters keep the runtime's once-per-generation copy, and
// everything else stays f32.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/Abi/EntryAbi.h"
#include "compiler/Conversion/Passes.h"
#include "dialects/Runtime/IR/RtOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
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
/// input, which then yields the bf16 result too (and keeps yielding the f32
/// one only for its other readers). False where it cannot.
bool fuseIntoProducer(RewriterBase &rewriter, linalg::GenericOp op) {
  OpOperand *operand = op.getDpsInputOperand(0);
  auto producer = operand->get().getDefiningOp<linalg::GenericOp>();
  if (!producer || !linalg::areElementwiseOpsFusable(operand))
    return false;
  FailureOr<linalg::ElementwiseOpFusionResult> fused =
      linalg::fuseElementwiseOps(rewriter, operand);
  if (failed(fused))
    return false;
  for (auto [original, replacement] : fused->replacements)
    rewriter.replaceUsesWithIf(original, replacement, [&](OpOperand &use) {
      return use.getOwner() != producer.getOperation();
    });
  rewriter.eraseOp(op);
  if (producer->use_empty())
    rewriter.eraseOp(producer);
  return true;
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
      if (!k.hasPureTensorSemantics())
        continue;
      bool convolution = k.getKind() == rt::KernelKind::conv2d_fwd ||
                         k.getKind() == rt::KernelKind::conv2d_bwd_data ||
                         k.getKind() == rt::KernelKind::conv2d_bwd_weights;
      if (convolution && !convolutions)
        continue;
      for (auto [i, input] : llvm::enumerate(k.getInputsMutable())) {
        Value v = input.get();
        auto type = dyn_cast<RankedTensorType>(v.getType());
        if (!k.isStorableInBf16(i) || !type || !type.getElementType().isF32() ||
            !type.hasStaticShape() || readsGlobal(v))
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
      (void)fuseIntoProducer(rewriter, op);
    }
  }
};

} // namespace
