//===- DeduplicateKernels.cpp - Launches of one code share a kernel -------===//
//
// Outlining makes one GPU module per launch; two that are the same code
// (compiler/Conversion/SameCode.h) become one, and their launches name it.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/Passes.h"
#include "compiler/Conversion/SameCode.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

namespace mlir::cleave {
#define GEN_PASS_DEF_CLEAVEDEDUPLICATEKERNELS
#include "compiler/Conversion/Passes.h.inc"
} // namespace mlir::cleave

using namespace mlir;
using namespace mlir::cleave;

namespace {

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

} // namespace
