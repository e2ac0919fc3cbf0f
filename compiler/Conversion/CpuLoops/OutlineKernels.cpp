//===- OutlineKernels.cpp - One function per loop nest --------------------===//
//
// After bufferization an entry point is one long function: every fused
// elementwise op, reduction and fill of the forward pass, the backward pass
// and the optimizer becomes a loop nest in it. LLVM's function passes are
// not linear in the size of a function (dominator-tree updates, scalar
// evolution walking predecessor chains, removal of unreachable blocks), so
// a ResNet's micro-step spent most of its compile time in O3 on that one
// function. Moving each linalg op into a small function of its own keeps
// every function LLVM sees small, and the work linear in the model; the
// extra call per loop nest is nothing next to the nest.
//
// A model repeats itself (the blocks of a ResNet stage, the layers of a
// transformer, the same elementwise op forward and backward), so many nests
// are the same code on other buffers. Such a nest calls the kernel already
// made for its twin rather than a copy: resnet18 has 187 distinct kernels
// among 561 nests, and LLVM's time is proportional to the code it is given.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/Passes.h"
#include "compiler/Conversion/SameCode.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::cleave {
#define GEN_PASS_DEF_CLEAVEOUTLINEKERNELS
#include "compiler/Conversion/Passes.h.inc"
} // namespace mlir::cleave

using namespace mlir;
using namespace mlir::cleave;

namespace {

/// Whether a value can cross a call under the bare-pointer calling
/// convention the pipeline lowers functions with: scalars, and memrefs whose
/// shape, strides and offset are all static.
bool passableByBarePointer(Value v) {
  auto memref = dyn_cast<MemRefType>(v.getType());
  if (!memref)
    return v.getType().isIntOrIndexOrFloat();
  if (!memref.hasStaticShape())
    return false;
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(memref.getStridesAndOffset(strides, offset)))
    return false;
  return ShapedType::isStatic(offset) &&
         llvm::all_of(strides, ShapedType::isStatic);
}

/// Whether `op` is cloned into the kernel rather than passed in: constants
/// (so that LLVM sees them) and the view ops that make a memref whose type
/// cannot cross a call (a subview with dynamic offsets).
bool clonedIntoKernel(Operation *op, Value result) {
  if (!op || op->getNumRegions() != 0 || op->getNumResults() != 1)
    return false;
  if (op->hasTrait<OpTrait::ConstantLike>())
    return true;
  return isa<ViewLikeOpInterface>(op) && !passableByBarePointer(result);
}

struct OutlineKernelsPass
    : cleave::impl::CleaveOutlineKernelsBase<OutlineKernelsPass> {
  /// The kernels made so far, by `hashCode`.
  DenseMap<llvm::hash_code, SmallVector<func::FuncOp, 1>> kernelsByHash;

  void runOnOperation() override {
    kernelsByHash.clear();
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    SmallVector<func::FuncOp> functions(module.getOps<func::FuncOp>());
    for (func::FuncOp f : functions) {
      if (f.isExternal())
        continue;
      SmallVector<linalg::LinalgOp> nests;
      f.walk<WalkOrder::PreOrder>([&](linalg::LinalgOp op) {
        nests.push_back(op);
        return WalkResult::skip();
      });
      // Fewer than two nests leave nothing to split.
      if (nests.size() < 2)
        continue;
      unsigned index = 0;
      Operation *anchor = f;
      for (linalg::LinalgOp nest : nests)
        if (failed(outline(nest, f, symbols, index, anchor)))
          return signalPassFailure();
    }
  }

  /// Moves `nest` into a new private function `<f>_kernel<index>` and calls
  /// it, or calls an earlier kernel with the same code instead. The function
  /// takes the memrefs and scalars the nest reads from the
  /// caller, in first-use order, and is placed after `anchor` (then becomes
  /// it), so kernels follow their caller in program order.
  LogicalResult outline(linalg::LinalgOp nest, func::FuncOp f,
                        SymbolTable &symbols, unsigned &index,
                        Operation *&anchor) {
    Operation *op = nest.getOperation();
    // Bufferized linalg ops write their outputs in place and have no
    // results; anything else is not a loop nest to move.
    if (op->getNumResults() != 0)
      return op->emitOpError("expected a bufferized linalg op (no results)");
    // What the kernel recomputes (constants, views that cannot be passed),
    // in an order where each op follows its operands, and what it takes as
    // arguments.
    llvm::SetVector<Operation *> cloned;
    llvm::SetVector<Value> arguments;
    llvm::SetVector<Value> worklist(llvm::from_range, op->getOperands());
    getUsedValuesDefinedAbove(op->getRegions(), worklist);
    // Depth-first over producers; `visit` appends a producer after its own
    // operands so the clones can be made in order.
    std::function<LogicalResult(Value)> visit = [&](Value v) -> LogicalResult {
      Operation *def = v.getDefiningOp();
      if (clonedIntoKernel(def, v)) {
        if (cloned.contains(def))
          return success();
        for (Value operand : def->getOperands())
          if (failed(visit(operand)))
            return failure();
        cloned.insert(def);
        return success();
      }
      if (!passableByBarePointer(v))
        return op->emitOpError("cannot outline a loop nest that uses a value "
                               "of type ")
               << v.getType() << " (no static shape and layout)";
      arguments.insert(v);
      return success();
    };
    for (Value v : worklist)
      if (failed(visit(v)))
        return failure();

    OpBuilder builder(f);
    Operation *previousAnchor = anchor;
    builder.setInsertionPointAfter(anchor);
    SmallVector<Type> types;
    for (Value v : arguments)
      types.push_back(v.getType());
    auto kernel = func::FuncOp::create(
        builder, op->getLoc(),
        (f.getSymName() + "_kernel" + Twine(index++)).str(),
        builder.getFunctionType(types, {}));
    kernel.setPrivate();
    // LLVM would inline a private function called once straight back into
    // the entry point, undoing the split. `passthrough` is what
    // convert-func-to-llvm carries over to the llvm.func (a `no_inline`
    // unit attribute on func.func is dropped there).
    kernel->setAttr("passthrough",
                    builder.getArrayAttr({builder.getStringAttr("noinline")}));
    // Private to the artifact: not exported by the shared object (a
    // private func.func would otherwise get external linkage).
    kernel->setAttr(
        "llvm.linkage",
        LLVM::LinkageAttr::get(builder.getContext(), LLVM::Linkage::Internal));
    // Renames on a clash with an existing symbol.
    symbols.insert(kernel);
    anchor = kernel;

    Block *body = kernel.addEntryBlock();
    builder.setInsertionPointToStart(body);
    IRMapping mapping;
    for (auto [v, arg] : llvm::zip(arguments, body->getArguments()))
      mapping.map(v, arg);
    for (Operation *producer : cloned)
      builder.clone(*producer, mapping);
    builder.clone(*op, mapping);
    func::ReturnOp::create(builder, op->getLoc());

    SmallVector<func::FuncOp, 1> &twins = kernelsByHash[hashCode(kernel)];
    auto twin = llvm::find_if(
        twins, [&](func::FuncOp other) { return isSameCode(kernel, other); });
    if (twin != twins.end()) {
      anchor = previousAnchor;
      symbols.erase(kernel);
      --index;
      kernel = *twin;
    } else {
      twins.push_back(kernel);
    }

    builder.setInsertionPoint(op);
    func::CallOp::create(builder, op->getLoc(), kernel,
                         arguments.getArrayRef());
    op->erase();
    // Constants and views that only the nest used are dead in the caller.
    for (Operation *producer : llvm::reverse(cloned))
      if (isOpTriviallyDead(producer))
        producer->erase();
    return success();
  }
};

} // namespace
