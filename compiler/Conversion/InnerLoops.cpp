//===- InnerLoops.cpp - Innermost loops are left to the vectoriser --------===//
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
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMAttrs.h"

namespace mlir::cleave {
#define GEN_PASS_DEF_CLEAVEANNOTATEINNERLOOPS
#include "compiler/Conversion/Passes.h.inc"
} // namespace mlir::cleave

using namespace mlir;

namespace {

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
    MLIRContext *ctx = &getContext();
    auto annotation = LLVM::LoopAnnotationAttr::get(
        ctx, /*disableNonforced=*/{}, /*vectorize=*/{}, /*interleave=*/{},
        LLVM::LoopUnrollAttr::get(ctx, /*disable=*/BoolAttr::get(ctx, true),
                                  {}, {}, {}, {}, {}, {}),
        {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {});
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
      // convert-scf-to-cf copies the loop's attributes onto its back edge,
      // and convert-cf-to-llvm onto the `llvm.br`, where this one is the
      // branch's `loop_annotation`: `!llvm.loop` metadata in LLVM IR.
      loop->setAttr("loop_annotation", annotation);
    });
  }
};

} // namespace
