//===- GpuUtils.cpp - What host code of a cuda artifact touches -----------===//
//
// The views, constant globals and memory accesses the GPU passes ask about.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/Gpu/GpuUtils.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

using namespace mlir;
using namespace mlir::cleave;

Value cleave::viewRoot(Value value) {
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

bool cleave::readsConstantGlobal(memref::GetGlobalOp get) {
  auto global = SymbolTable::lookupNearestSymbolFrom<memref::GlobalOp>(
      get, get.getNameAttr());
  return global && global.getConstant();
}

memref::GetGlobalOp cleave::constantGlobalSource(Value value) {
  auto get = viewRoot(value).getDefiningOp<memref::GetGlobalOp>();
  return get && readsConstantGlobal(get) ? get : memref::GetGlobalOp();
}
