//===- ExpandBFloat16.cpp - bf16 conversions without libgcc helpers -------===//
//
// A model's bf16 inputs and outputs are widened to f32 and narrowed back in
// the generated loops. On CPUs without AVX512-BF16 LLVM lowers the
// narrowing to a call of `__truncsfbf2`, which Debian 12's libgcc (GCC 12)
// lacks; the conversions become integer arithmetic on the bits instead.
// With AVX512-BF16 in the module's recorded target LLVM narrows with
// VCVTNEPS2BF16 (the instruction oneDNN's reorders use: one instruction for
// the dozen of the expansion), and nothing is expanded. It rounds as the
// expansion does but flushes f32 denormals (|x| < 2^-126) to zero, as
// oneDNN's own bf16 conversions on that CPU do.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/CpuLoops/Bf16Target.h"
#include "compiler/Conversion/Passes.h"
#include "dialects/Runtime/IR/RtOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::cleave {
#define GEN_PASS_DEF_CLEAVEEXPANDBFLOAT16
#include "compiler/Conversion/Passes.h.inc"
} // namespace mlir::cleave

using namespace mlir;

bool mlir::cleave::targetConvertsBf16Natively(Operation *op) {
  auto module = dyn_cast<ModuleOp>(op);
  if (!module)
    module = op->getParentOfType<ModuleOp>();
  auto target = module ? module->getAttrOfType<DictionaryAttr>(
                             cleave::rt::RtDialect::kTargetAttr)
                       : DictionaryAttr();
  auto features = target ? target.getAs<ArrayAttr>("features") : ArrayAttr();
  return features && llvm::any_of(features, [](Attribute f) {
           auto name = dyn_cast<StringAttr>(f);
           return name && name.getValue() == "avx512bf16";
         });
}

namespace {

struct ExpandBFloat16Pass
    : cleave::impl::CleaveExpandBFloat16Base<ExpandBFloat16Pass> {
  void runOnOperation() override {
    if (cleave::targetConvertsBf16Natively(getOperation()))
      return;
    RewritePatternSet patterns(&getContext());
    arith::populateExpandBFloat16Patterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
