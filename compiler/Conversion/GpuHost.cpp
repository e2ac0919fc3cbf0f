//===- GpuHost.cpp - The host side of a CUDA artifact ---------------------===//
//
// Host code of a `cuda` artifact only enqueues work on the runtime's stream:
// one pass checks that it never dereferences a (device) buffer, the other
// points every kernel launch at the stream `cleave_gpu_stream(ctx)` returns
// (the contract with the runtime, docs/design/gpu.md), and a third makes
// launches of the same code share one kernel.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/GpuUtils.h"
#include "compiler/Conversion/Passes.h"
#include "compiler/Conversion/SameCode.h"
#include "runtime/include/cleave/kernel_abi.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

namespace mlir::cleave {
#define GEN_PASS_DEF_CLEAVEVERIFYDEVICEONLY
#define GEN_PASS_DEF_CLEAVELAUNCHONRUNTIMESTREAM
#define GEN_PASS_DEF_CLEAVEDEDUPLICATEKERNELS
#include "compiler/Conversion/Passes.h.inc"
} // namespace mlir::cleave

using namespace mlir;
using namespace mlir::cleave;

bool cleave::isHostStackMemory(Value value) {
  while (Operation *def = value.getDefiningOp()) {
    if (isa<memref::AllocaOp>(def))
      return true;
    auto view = dyn_cast<ViewLikeOpInterface>(def);
    if (!view)
      return false;
    value = view.getViewSource();
  }
  return false;
}

bool cleave::touchesDeviceMemory(Operation *op) {
  auto effects = dyn_cast<MemoryEffectOpInterface>(op);
  if (!effects)
    return false;
  SmallVector<MemoryEffects::EffectInstance> list;
  effects.getEffects(list);
  return llvm::any_of(list, [](const MemoryEffects::EffectInstance &e) {
    return !e.getValue() || !isHostStackMemory(e.getValue());
  });
}

bool cleave::touchesDeviceMemoryRecursively(Operation *op) {
  return op
      ->walk([](Operation *nested) {
        return touchesDeviceMemory(nested) ? WalkResult::interrupt()
                                           : WalkResult::advance();
      })
      .wasInterrupted();
}

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

/// The kernel of a module that holds nothing else (as `gpu-kernel-outlining`
/// makes them), or null.
gpu::GPUFuncOp onlyKernel(gpu::GPUModuleOp gpuModule) {
  Block &body = gpuModule.getBodyRegion().front();
  if (!llvm::hasSingleElement(body))
    return {};
  auto kernel = dyn_cast<gpu::GPUFuncOp>(body.front());
  return kernel && kernel.isKernel() ? kernel : gpu::GPUFuncOp();
}

/// `@module::@kernel`, as a launch names it.
SymbolRefAttr kernelReference(gpu::GPUFuncOp kernel) {
  auto gpuModule = cast<gpu::GPUModuleOp>(kernel->getParentOp());
  return SymbolRefAttr::get(gpuModule.getNameAttr(),
                            {FlatSymbolRefAttr::get(kernel.getNameAttr())});
}

struct DeduplicateKernelsPass
    : cleave::impl::CleaveDeduplicateKernelsBase<DeduplicateKernelsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    DenseMap<llvm::hash_code, SmallVector<gpu::GPUFuncOp, 1>> kernelsByHash;
    DenseMap<SymbolRefAttr, SymbolRefAttr> twinOf;
    SmallVector<gpu::GPUModuleOp> duplicates;
    for (auto gpuModule : module.getOps<gpu::GPUModuleOp>()) {
      // A module with more than its kernel in it is left as it is.
      gpu::GPUFuncOp kernel = onlyKernel(gpuModule);
      if (!kernel)
        continue;
      // Twins must also be built alike (targets, options).
      DictionaryAttr build = attributesButName(gpuModule);
      SmallVector<gpu::GPUFuncOp, 1> &twins =
          kernelsByHash[llvm::hash_combine(build, hashCode(kernel))];
      auto twin = llvm::find_if(twins, [&](gpu::GPUFuncOp other) {
        return attributesButName(other->getParentOp()) == build &&
               isSameCode(kernel, other);
      });
      if (twin == twins.end()) {
        twins.push_back(kernel);
        continue;
      }
      twinOf[kernelReference(kernel)] = kernelReference(*twin);
      duplicates.push_back(gpuModule);
    }
    if (duplicates.empty())
      return;
    module.walk([&](gpu::LaunchFuncOp launch) {
      auto twin = twinOf.find(launch.getKernel());
      if (twin != twinOf.end())
        launch.setKernelAttr(twin->second);
    });
    // A module something other than a launch still names stays.
    DenseSet<StringAttr> named;
    if (std::optional<SymbolTable::UseRange> uses =
            SymbolTable::getSymbolUses(module))
      for (const SymbolTable::SymbolUse &use : *uses)
        named.insert(use.getSymbolRef().getRootReference());
    for (gpu::GPUModuleOp gpuModule : duplicates)
      if (!named.contains(gpuModule.getNameAttr()))
        gpuModule.erase();
  }
};

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
