//===- SinkConstantsIntoKernels.cpp - Constants into the kernels ----------===//
//
// The constant globals a `gpu.launch` reads are cloned into its body, so that
// outlining gives each kernel a device copy; host code keeps none.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/Gpu/GpuUtils.h"
#include "compiler/Conversion/Passes.h"

#include "mlir/Dialect/GPU/Utils/GPUUtils.h"

namespace mlir::cleave {
#define GEN_PASS_DEF_CLEAVESINKCONSTANTSINTOKERNELS
#include "compiler/Conversion/Passes.h.inc"
} // namespace mlir::cleave

using namespace mlir;
using namespace mlir::cleave;

namespace {

/// A constant global read, or a view of one: cloned into the kernels that
/// use it.
bool isConstantRead(Operation *op) {
  if (isa<arith::ConstantOp>(op))
    return true;
  if (auto get = dyn_cast<memref::GetGlobalOp>(op))
    return readsConstantGlobal(get);
  return isa<ViewLikeOpInterface>(op) && op->getNumResults() == 1 &&
         constantGlobalSource(op->getResult(0));
}

/// Clones the constant globals each launch reads into its body (see
/// Passes.td).
struct SinkConstantsIntoKernelsPass
    : cleave::impl::CleaveSinkConstantsIntoKernelsBase<
          SinkConstantsIntoKernelsPass> {
  void runOnOperation() override {
    WalkResult walk = getOperation().walk([&](gpu::LaunchOp launch) {
      return failed(sinkOperationsIntoLaunchOp(launch, isConstantRead))
                 ? WalkResult::interrupt()
                 : WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return signalPassFailure();
    // The host's reads the kernels no longer use; users come after their
    // operands, so a backward sweep erases whole chains.
    getOperation().walk([](Block *block) {
      for (Operation &op : llvm::make_early_inc_range(llvm::reverse(*block)))
        if (op.use_empty() && !isa<arith::ConstantOp>(op) &&
            isConstantRead(&op))
          op.erase();
    });
  }
};

} // namespace
