//===- GpuHost.cpp - The host side of a CUDA artifact ---------------------===//
//
// Host code of a `cuda` artifact only enqueues work on the runtime's stream:
// one pass checks that it never dereferences a (device) buffer, another
// points every kernel launch at the stream `cleave_gpu_stream(ctx)` returns
// (the contract with the runtime, docs/design/gpu.md), and a third makes
// launches of the same code share one kernel. Two more keep the constants
// the host cannot hand to the device (globals in the artifact's host memory)
// out of host code: into the kernels that read them, or copied to device
// memory for a library call.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/GpuUtils.h"
#include "compiler/Conversion/Passes.h"
#include "compiler/Conversion/SameCode.h"
#include "runtime/include/cleave/kernel_abi.h"

#include "mlir/Dialect/GPU/Utils/GPUUtils.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

namespace mlir::cleave {
#define GEN_PASS_DEF_CLEAVECOPYCONSTANTSTODEVICE
#define GEN_PASS_DEF_CLEAVESINKCONSTANTSINTOKERNELS
#define GEN_PASS_DEF_CLEAVEVERIFYDEVICEONLY
#define GEN_PASS_DEF_CLEAVELAUNCHONRUNTIMESTREAM
#define GEN_PASS_DEF_CLEAVEDEDUPLICATEKERNELS
#include "compiler/Conversion/Passes.h.inc"
} // namespace mlir::cleave

using namespace mlir;
using namespace mlir::cleave;

/// The buffer `value` is a view of (through any number of views), or
/// `value` itself.
static Value viewRoot(Value value) {
  while (auto view = value.getDefiningOp<ViewLikeOpInterface>())
    value = view.getViewSource();
  return value;
}

bool cleave::isHostStackMemory(Value value) {
  return viewRoot(value).getDefiningOp<memref::AllocaOp>() != nullptr;
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

/// Whether `get` reads a `constant` global: one the kernels may each hold a
/// copy of, since nothing writes it.
bool readsConstant(memref::GetGlobalOp get) {
  auto global = SymbolTable::lookupNearestSymbolFrom<memref::GlobalOp>(
      get, get.getNameAttr());
  return global && global.getConstant();
}

/// The `memref.get_global` of a constant that `value` is, or is a view of;
/// null if none.
memref::GetGlobalOp globalSource(Value value) {
  auto get = viewRoot(value).getDefiningOp<memref::GetGlobalOp>();
  return get && readsConstant(get) ? get : memref::GetGlobalOp();
}

/// Whether `value`, or a view of it, is used by anything but a loop nest
/// (which becomes a kernel on the cuda path).
bool usedOutsideLoopNests(Value value) {
  for (Operation *user : value.getUsers()) {
    auto view = dyn_cast<ViewLikeOpInterface>(user);
    if (view && view.getViewSource() == value) {
      if (llvm::any_of(user->getResults(), usedOutsideLoopNests))
        return true;
      continue;
    }
    if (!isa<linalg::LinalgOp, memref::CopyOp>(user))
      return true;
  }
  return false;
}

/// Gives each constant that reaches a library call a copy in the arena
/// (see Passes.td).
struct CopyConstantsToDevicePass
    : cleave::impl::CleaveCopyConstantsToDeviceBase<CopyConstantsToDevicePass> {
  void runOnOperation() override {
    SmallVector<memref::GetGlobalOp> toCopy;
    getOperation().walk([&](memref::GetGlobalOp get) {
      auto type = cast<MemRefType>(get.getType());
      // A global with a layout or a memory space would need a copy of its
      // own kind; bufferization makes none (the verifier refuses it).
      if (readsConstant(get) && type.getLayout().isIdentity() &&
          !type.getMemorySpace() && usedOutsideLoopNests(get.getResult()))
        toCopy.push_back(get);
    });
    for (memref::GetGlobalOp get : toCopy) {
      // Just before the first user: folding hoists the get_global to the
      // top of the entry, and the copy's buffer would be live from there.
      Block *block = get->getBlock();
      Operation *first = nullptr;
      for (Operation *user : get->getUsers())
        if (Operation *inBlock = block->findAncestorOpInBlock(*user))
          if (!first || inBlock->isBeforeInBlock(first))
            first = inBlock;
      OpBuilder b(first);
      // Read once per run of the entry, by a one-kernel copy: constants
      // that feed library calls are few and small (masks, fixed matrices).
      Value copy = memref::AllocOp::create(b, get.getLoc(), get.getType());
      auto copyOp = memref::CopyOp::create(b, get.getLoc(), get, copy);
      get.getResult().replaceAllUsesExcept(copy, copyOp);
    }
  }
};

/// A constant global read, or a view of one: cloned into the kernels that
/// use it.
bool isConstantRead(Operation *op) {
  if (isa<arith::ConstantOp>(op))
    return true;
  if (auto get = dyn_cast<memref::GetGlobalOp>(op))
    return readsConstant(get);
  return isa<ViewLikeOpInterface>(op) && op->getNumResults() == 1 &&
         globalSource(op->getResult(0));
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

/// The kernel of a module that holds nothing else but the globals it reads
/// (as `gpu-kernel-outlining` makes them), or null. The globals are copies
/// of the host module's, names kept, so two kernels that are the same code
/// read the same constants.
gpu::GPUFuncOp onlyKernel(gpu::GPUModuleOp gpuModule) {
  gpu::GPUFuncOp kernel;
  for (Operation &op : gpuModule.getBodyRegion().front()) {
    if (isa<memref::GlobalOp>(op))
      continue;
    auto func = dyn_cast<gpu::GPUFuncOp>(op);
    if (!func || !func.isKernel() || kernel)
      return {};
    kernel = func;
  }
  return kernel;
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
