//===- VerifyDeviceOnly.cpp - Host code touches no device memory ----------===//
//
// Host code of a `cuda` artifact only enqueues work on the runtime's stream:
// it must never dereference a (device) buffer, read a host global into a
// kernel or a library call, or hand a kernel host stack memory.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/Gpu/GpuUtils.h"
#include "compiler/Conversion/Passes.h"

#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir::cleave {
#define GEN_PASS_DEF_CLEAVEVERIFYDEVICEONLY
#include "compiler/Conversion/Passes.h.inc"
} // namespace mlir::cleave

using namespace mlir;
using namespace mlir::cleave;

namespace {

struct VerifyDeviceOnlyPass
    : cleave::impl::CleaveVerifyDeviceOnlyBase<VerifyDeviceOnlyPass> {
  void runOnOperation() override {
    bool failed = false;
    getOperation()->walk<WalkOrder::PreOrder>([&](Operation *op) {
      if (isa<gpu::GPUModuleOp>(op))
        return WalkResult::skip();
      // Loops and linalg ops the GPU mapping left behind, and any access
      // (loads and stores of any dialect, copies, allocations) that
      // declares its effects. Reported once at the outermost op.
      if (isa<linalg::LinalgOp, scf::ParallelOp, scf::ForOp, scf::WhileOp>(
              op) ||
          touchesDeviceMemory(op)) {
        op->emitError() << "'" << op->getName()
                        << "' would access device memory from the host: "
                           "every access in a cuda artifact must run in a "
                           "GPU kernel (a lowering left it outside one)";
        failed = true;
        return WalkResult::skip();
      }
      // A host address handed to a kernel or a library call.
      if (auto get = dyn_cast<memref::GetGlobalOp>(op);
          get && !get->use_empty()) {
        // Named by its consumer, past the views of it.
        Operation *user = *get->user_begin();
        while (isa<ViewLikeOpInterface>(user) && user->getNumResults() == 1 &&
               !user->use_empty())
          user = *user->getResult(0).user_begin();
        get.emitError() << "reads global @" << get.getName()
                        << " from host code, where it is an address in the "
                           "artifact's host memory, and passes it to '"
                        << user->getName()
                        << "': kernels and library calls read device memory";
        failed = true;
        return WalkResult::advance();
      }
      // Host stack arrays are for the runtime's calls, never for kernels.
      if (auto launch = dyn_cast<gpu::LaunchFuncOp>(op))
        for (Value arg : launch.getKernelOperands())
          if (isa<MemRefType>(arg.getType()) && isHostStackMemory(arg)) {
            launch.emitError("passes host stack memory to a kernel");
            failed = true;
          }
      return WalkResult::advance();
    });
    if (failed)
      signalPassFailure();
  }
};

} // namespace
