//===- AnnotateInnerLoops.cpp - Innermost loops are left to the vectoriser ===//
//
// LLVM's O3 fully unrolls short innermost loops (up to a few dozen
// iterations) before its loop vectoriser runs. The unrolled body is then
// vectorised along the enclosing loop, with gathers and scatters at the
// stride of the unrolled dimension, or not at all when the unrolled copies
// may alias: the attention nests of a transformer (32 or 64 elements per
// row) ran as scalar or scatter code. Marking the innermost loops of the
// generated nests `unroll disable` leaves them for the vectoriser, which
// vectorises them along their contiguous dimension. LLVM also reads
// `unroll disable` as `interleave 1` (LoopVectorizeHints::getInterleave), so
// a reduction keeps one vector of partial sums: giving the long ones four
// (an interleave count, with their nests collapsed into one loop) made no
// difference to the MLP's window check, the GPT decoder or the encoder on
// AMD Zen 5 (bench/README.md, 2026-12-02), so they are left as they are.
//
// A loop that converts between f32 and bf16 on a target with AVX512-BF16 is
// also given its vector width. LLVM 22's X86 cost model prices
// `fptrunc <8 x float> to <8 x bfloat>` (and the `fpext` back) as eight
// scalar conversions, although there it selects one VCVTNEPS2BF16 (a shift
// for the widening): the vectoriser then picked 4 lanes, an xmm register,
// for every loop that narrows an activation. A width given this way also
// overrides the cost model elsewhere in the loop and lets LLVM reorder a
// floating-point reduction, so it is given only to loops where neither can
// hurt: no loop-carried values, every access unit-stride or invariant, at
// least as many iterations as lanes.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/CpuLoops/Bf16Target.h"
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

/// Whether `loop` converts between f32 and bf16: an `arith.truncf` from f32
/// to bf16 or an `arith.extf` back.
bool convertsBf16(scf::ForOp loop) {
  auto isPair = [](Type a, Type b) {
    return getElementTypeOrSelf(a).isF32() && getElementTypeOrSelf(b).isBF16();
  };
  WalkResult r = loop.getBody()->walk([&](Operation *op) {
    if (auto t = dyn_cast<arith::TruncFOp>(op);
        t && isPair(t.getIn().getType(), t.getType()))
      return WalkResult::interrupt();
    if (auto e = dyn_cast<arith::ExtFOp>(op);
        e && isPair(e.getType(), e.getIn().getType()))
      return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return r.wasInterrupted();
}

/// Whether `v` does not depend on `loop`'s iterations.
bool isInvariantIn(scf::ForOp loop, Value v) {
  return !loop->isAncestor(v.getParentRegion()->getParentOp());
}

/// Whether every memory access of `loop` reads or writes consecutive
/// elements from one iteration to the next (its innermost index is the
/// induction variable plus an invariant, its other indices invariant, and
/// its memref's innermost stride 1), or reads one element throughout: a
/// vector access, never a gather or scatter. A store to one element
/// throughout is refused: it may be a reduction through memory, which a
/// forced width would let LLVM reorder.
bool hasUnitStrideAccesses(scf::ForOp loop) {
  Value iv = loop.getInductionVar();
  auto isIvPlusInvariant = [&](Value i) {
    if (i == iv)
      return true;
    auto add = i.getDefiningOp<arith::AddIOp>();
    return add && ((add.getLhs() == iv && isInvariantIn(loop, add.getRhs())) ||
                   (add.getRhs() == iv && isInvariantIn(loop, add.getLhs())));
  };
  WalkResult r = loop.getBody()->walk([&](Operation *op) {
    Value memref;
    ValueRange indices;
    if (auto load = dyn_cast<memref::LoadOp>(op)) {
      memref = load.getMemRef();
      indices = load.getIndices();
    } else if (auto store = dyn_cast<memref::StoreOp>(op)) {
      memref = store.getMemRef();
      indices = store.getIndices();
    } else {
      return WalkResult::advance();
    }
    if (llvm::all_of(indices, [&](Value i) { return isInvariantIn(loop, i); }))
      return isa<memref::StoreOp>(op) ? WalkResult::interrupt()
                                      : WalkResult::advance();
    SmallVector<int64_t> strides;
    int64_t offset;
    if (indices.empty() ||
        !llvm::all_of(indices.drop_back(),
                      [&](Value i) { return isInvariantIn(loop, i); }) ||
        !isIvPlusInvariant(indices.back()) ||
        failed(cast<MemRefType>(memref.getType())
                   .getStridesAndOffset(strides, offset)) ||
        strides.back() != 1)
      return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return !r.wasInterrupted();
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
    // LLVM ignores a width that is not a power of two or is over 64.
    if (bf16VectorWidth < 1 || bf16VectorWidth > 64 ||
        !llvm::isPowerOf2_64(bf16VectorWidth)) {
      getOperation()->emitError()
          << "bf16-vector-width=" << static_cast<int64_t>(bf16VectorWidth)
          << " is out of range; expected a power of two from 1 to 64";
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
    // Without AVX512-BF16, cleave-expand-bf16 turns the conversions into
    // integer arithmetic, which the cost model prices right.
    bool nativeBf16 = cleave::targetConvertsBf16Natively(getOperation());
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
      bool widen = nativeBf16 && loop.getInitArgs().empty() &&
                   trips->getSExtValue() >= bf16VectorWidth &&
                   convertsBf16(loop) && hasUnitStrideAccesses(loop);
      loop->setAttr("loop_annotation", widen ? bf16Annotation : annotation);
    });
  }
};

} // namespace
