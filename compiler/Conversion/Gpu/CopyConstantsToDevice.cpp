//===- CopyConstantsToDevice.cpp - Constants for library calls ------------===//
//
// A constant global that reaches a library call (not only loop nests, which
// become kernels) is copied into the arena once per run of the entry: the
// library reads device memory, and the global is in the artifact's host
// memory.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/Gpu/GpuUtils.h"
#include "compiler/Conversion/Passes.h"

namespace mlir::cleave {
#define GEN_PASS_DEF_CLEAVECOPYCONSTANTSTODEVICE
#include "compiler/Conversion/Passes.h.inc"
} // namespace mlir::cleave

using namespace mlir;
using namespace mlir::cleave;

namespace {

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
      if (readsConstantGlobal(get) && type.getLayout().isIdentity() &&
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

} // namespace
