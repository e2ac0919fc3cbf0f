//===- ExpandBFloat16.cpp - bf16 conversions without libgcc helpers -------===//
//
// A model's bf16 inputs and outputs are widened to f32 and narrowed back in
// the generated loops. On CPUs without AVX512-BF16 LLVM lowers the
// narrowing to a call of `__truncsfbf2`, which Debian 12's libgcc (GCC 12)
// lacks; the conversions become integer arithmetic on the bits instead.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::cleave {
#define GEN_PASS_DEF_CLEAVEEXPANDBFLOAT16
#include "compiler/Conversion/Passes.h.inc"
} // namespace mlir::cleave

using namespace mlir;

namespace {

struct ExpandBFloat16Pass
    : cleave::impl::CleaveExpandBFloat16Base<ExpandBFloat16Pass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    arith::populateExpandBFloat16Patterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
