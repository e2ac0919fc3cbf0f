//===- AnnotateInnerLoops.cpp - Innermost loops are left to the vectoriser ===//
//
// LLVM's O3 fully unrolls short innermost loops (up to a few dozen
// iterations) before its loop vectoriser runs. The unrolled body is then
// vectorised along the enclosing loop, with gathers and scatters at the
// stride of the unrolled dimension, or not at all when the unrolled copies
// may alias: the attention nests of a transformer (32 or 64 elements per
// row) ran as scalar or scatter code. Marking the innermost loops of the
// generated nests `unroll disable` leaves them for the vectoriser, which
// vectorises them along their contiguous dimension and interleaves on its
// own.
//
// A loop that converts between f32 and bf16 is also given its vector width.
// LLVM 22's X86 cost model prices `fptrunc <8 x float> to <8 x bfloat>` (and
// the `fpext` back) as eight scalar conversions, although with AVX512-BF16 it
// selects one VCVTNEPS2BF16 (a shift for the widening): the vectoriser then
// picks 4 lanes, an xmm register, for the loops that narrow activations.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMAttrs.h"
#include "mlir/IR/Matchers.h"

namespace mlir::cleave {
#define GEN_PASS_DEF_CLEAVEANNOTATEINNERLOOPS
#include "compiler/Conversion/Passes.h.inc"
} // namespace mlir::cleave

using namespace mlir;

namespace {

/// Whether `v` is an affine function of `loop`'s induction variable (with
/// values from outside the loop as symbols): an address the vectoriser can
/// turn into a contiguous or strided vector access.
bool isAffineIn(scf::ForOp loop, Value v) {
  if (v == loop.getInductionVar())
    return true;
  Operation *def = v.getDefiningOp();
  if (!def)
    return !loop->isAncestor(cast<BlockArgument>(v).getOwner()->getParentOp());
  if (!loop->isAncestor(def) || isa<arith::ConstantOp>(def))
    return true;
  if (isa<arith::AddIOp, arith::SubIOp, affine::AffineApplyOp>(def))
    return llvm::all_of(def->getOperands(),
                        [&](Value o) { return isAffineIn(loop, o); });
  if (auto mul = dyn_cast<arith::MulIOp>(def))
    return (matchPattern(mul.getLhs(), m_Constant()) &&
            isAffineIn(loop, mul.getRhs())) ||
           (matchPattern(mul.getRhs(), m_Constant()) &&
            isAffineIn(loop, mul.getLhs()));
  return false;
}

/// Whether `loop` converts between f32 and bf16 (an `arith.truncf` to or an
/// `arith.extf` from bf16; `cleave-expand-bf16` has left them only where the
/// target converts natively).
bool convertsBf16(scf::ForOp loop) {
  WalkResult r = loop.getBody()->walk([&](Operation *op) {
    Type from =
        op->getNumOperands() ? getElementTypeOrSelf(op->getOperand(0)) : Type();
    Type to =
        op->getNumResults() ? getElementTypeOrSelf(op->getResult(0)) : Type();
    if ((isa<arith::TruncFOp>(op) && to && to.isBF16()) ||
        (isa<arith::ExtFOp>(op) && from && from.isBF16()))
      return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return r.wasInterrupted();
}

/// Whether every memory access of `loop` is at an affine address.
bool hasAffineAccesses(scf::ForOp loop) {
  WalkResult r = loop.getBody()->walk([&](Operation *op) {
    ValueRange indices;
    if (auto load = dyn_cast<memref::LoadOp>(op))
      indices = load.getIndices();
    else if (auto store = dyn_cast<memref::StoreOp>(op))
      indices = store.getIndices();
    for (Value i : indices)
      if (!isAffineIn(loop, i))
        return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return !r.wasInterrupted();
}

struct AnnotateInnerLoopsPass
    : cleave::impl::CleaveAnnotateInnerLoopsBase<AnnotateInnerLoopsPass> {
  using CleaveAnnotateInnerLoopsBase::CleaveAnnotateInnerLoopsBase;

  void runOnOperation() override {
    if (minTripCount < 1) {
      getOperation()->emitError()
          << "min-trip-count=" << static_cast<int64_t>(minTripCount)
          << " is out of range; expected at least 1";
      return signalPassFailure();
    }
    if (bf16VectorWidth < 1) {
      getOperation()->emitError()
          << "bf16-vector-width=" << static_cast<int64_t>(bf16VectorWidth)
          << " is out of range; expected at least 1";
      return signalPassFailure();
    }
    MLIRContext *ctx = &getContext();
    auto unroll = LLVM::LoopUnrollAttr::get(
        ctx, /*disable=*/BoolAttr::get(ctx, true), {}, {}, {}, {}, {}, {});
    auto annotate = [&](LLVM::LoopVectorizeAttr vectorize) {
      return LLVM::LoopAnnotationAttr::get(
          ctx, /*disableNonforced=*/{}, vectorize, /*interleave=*/{}, unroll,
          {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {});
    };
    LLVM::LoopAnnotationAttr annotation = annotate({});
    LLVM::LoopAnnotationAttr bf16Annotation =
        annotate(LLVM::LoopVectorizeAttr::get(
            ctx, /*disable=*/{}, /*predicateEnable=*/{}, /*scalableEnable=*/{},
            IntegerAttr::get(IntegerType::get(ctx, 32), bf16VectorWidth), {},
            {}, {}));
    getOperation()->walk([&](scf::ForOp loop) {
      bool innermost = true;
      loop.getBody()->walk([&](LoopLikeOpInterface) {
        innermost = false;
        return WalkResult::interrupt();
      });
      if (!innermost)
        return;
      // Loops shorter than a vector are better unrolled; so are loops
      // whose trip count is not known here.
      std::optional<APInt> trips = loop.getStaticTripCount();
      if (!trips || trips->getSExtValue() < minTripCount)
        return;
      // Gathers (clamped or computed indices: slices, padding,
      // concatenation) vectorise no better rolled; LLVM's unrolling at
      // least overlaps their scalar loads.
      if (!hasAffineAccesses(loop))
        return;
      // convert-scf-to-cf copies the loop's attributes onto its back edge,
      // and convert-cf-to-llvm onto the `llvm.br`, where this one is the
      // branch's `loop_annotation`: `!llvm.loop` metadata in LLVM IR.
      loop->setAttr("loop_annotation",
                    convertsBf16(loop) ? bf16Annotation : annotation);
    });
  }
};

} // namespace
