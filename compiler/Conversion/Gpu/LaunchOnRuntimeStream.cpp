//===- LaunchOnRuntimeStream.cpp - Kernels on the runtime's stream --------===//
//
// Every kernel launch of an entry is pointed at the stream
// `cleave_gpu_stream(ctx)` returns: the contract with the runtime
// (docs/design/gpu.md).
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/Passes.h"
#include "runtime/include/cleave/kernel_abi.h"

namespace mlir::cleave {
#define GEN_PASS_DEF_CLEAVELAUNCHONRUNTIMESTREAM
#include "compiler/Conversion/Passes.h.inc"
} // namespace mlir::cleave

using namespace mlir;
using namespace mlir::cleave;

namespace {

struct LaunchOnRuntimeStreamPass
    : cleave::impl::CleaveLaunchOnRuntimeStreamBase<LaunchOnRuntimeStreamPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    auto ptr = LLVM::LLVMPointerType::get(ctx);
    LLVM::LLVMFuncOp getStream;
    for (auto f : module.getOps<LLVM::LLVMFuncOp>()) {
      SmallVector<gpu::LaunchFuncOp> launches;
      f.walk([&](gpu::LaunchFuncOp l) { launches.push_back(l); });
      if (launches.empty())
        continue;
      if (f.getNumArguments() == 0 ||
          !isa<LLVM::LLVMPointerType>(f.getArgument(0).getType())) {
        f.emitError("launches kernels but has no kernel context (a pointer "
                    "first argument) to get the stream from");
        return signalPassFailure();
      }
      for (gpu::LaunchFuncOp l : launches)
        if (l.getAsyncToken() || !l.getAsyncDependencies().empty() ||
            l.getAsyncObject()) {
          l.emitError("expected a synchronous launch without a stream; the "
                      "runtime's stream orders all work of an entry");
          return signalPassFailure();
        }
      if (!getStream) {
        getStream = module.lookupSymbol<LLVM::LLVMFuncOp>(
            CLEAVE_SYMBOL_GPU_STREAM);
        if (!getStream) {
          OpBuilder b(module.getBodyRegion());
          b.setInsertionPointToEnd(module.getBody());
          getStream = LLVM::LLVMFuncOp::create(
              b, module.getLoc(), CLEAVE_SYMBOL_GPU_STREAM,
              LLVM::LLVMFunctionType::get(ptr, {ptr}));
        }
      }
      // Once per entry: the stream does not change while an entry runs.
      OpBuilder b(&f.getBody().front(), f.getBody().front().begin());
      Value stream =
          LLVM::CallOp::create(b, f.getLoc(), getStream,
                               ValueRange{f.getArgument(0)})
              .getResult();
      for (gpu::LaunchFuncOp l : launches)
        l.getAsyncObjectMutable().assign(stream);
    }
  }
};

} // namespace
