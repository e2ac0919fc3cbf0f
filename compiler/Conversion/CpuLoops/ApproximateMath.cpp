//===- ApproximateMath.cpp - Vectorisable transcendentals -----------------===//
//
// GELU, softmax and sigmoid put erf, exp and tanh in the innermost loop of
// their nests. LLVM lowers those to scalar libm calls, which keep the loop
// from vectorising; MLIR's polynomial approximations are arithmetic that
// vectorises with the loop around it.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::cleave {
#define GEN_PASS_DEF_CLEAVEAPPROXIMATEMATH
#include "compiler/Conversion/Passes.h.inc"
} // namespace mlir::cleave

using namespace mlir;

namespace {

struct ApproximateMathPass
    : cleave::impl::CleaveApproximateMathBase<ApproximateMathPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    // Not sin and cos: MLIR's approximation subtracts multiples of pi/2 in
    // float, an error that grows with |x| (up to 2e-5 absolute for |x| up
    // to 300, against 2e-7 within [-3, 3]); libm's sinf and cosf reduce
    // the argument exactly.
    populateMathPolynomialApproximationPatterns(
        patterns, [](StringRef name) {
          return llvm::is_contained(
              {math::ErfOp::getOperationName(),
               math::ExpOp::getOperationName(),
               math::ExpM1Op::getOperationName(),
               math::LogOp::getOperationName(),
               math::Log1pOp::getOperationName(),
               math::Log2Op::getOperationName(),
               math::TanhOp::getOperationName()},
              name);
        });
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
