//===- SinkScalarsIntoLinalg.cpp - Host scalars into linalg ops -----------===//
//
// On a GPU the host cannot read the tensors a scalar comes from (they are in
// device memory), so each linalg op recomputes the scalars it uses in its
// own body, from the tensors as extra (broadcast) inputs.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/Passes.h"

#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::cleave {
#define GEN_PASS_DEF_CLEAVESINKSCALARSINTOLINALG
#include "compiler/Conversion/Passes.h.inc"
} // namespace mlir::cleave

using namespace mlir;
using namespace mlir::cleave;

namespace {

/// A scalar the host would have to compute: not a tensor, not a constant.
bool isHostScalar(Value v) {
  return !isa<ShapedType>(v.getType()) && !matchPattern(v, m_Constant());
}

/// Adds the computation of `v` in `block` to `slice` (operands first);
/// fails on anything that cannot move into a loop body: block arguments,
/// ops with effects or regions, `tensor.extract` at dynamic indices.
LogicalResult collect(Value v, Block *block,
                      llvm::SetVector<Operation *> &slice) {
  Operation *def = v.getDefiningOp();
  if (!def || def->getBlock() != block)
    return failure();
  if (slice.contains(def))
    return success();
  if (auto extract = dyn_cast<tensor::ExtractOp>(def)) {
    if (!llvm::all_of(extract.getIndices(), [](Value i) {
          return getConstantIntValue(i).has_value();
        }))
      return failure();
    slice.insert(def);
    return success();
  }
  if (def->getNumRegions() != 0 || !isMemoryEffectFree(def))
    return failure();
  for (Value operand : def->getOperands())
    if (failed(collect(operand, block, slice)))
      return failure();
  slice.insert(def);
  return success();
}

struct SinkScalarsIntoLinalgPass
    : cleave::impl::CleaveSinkScalarsIntoLinalgBase<SinkScalarsIntoLinalgPass> {
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    SmallVector<linalg::LinalgOp> ops;
    getOperation().walk([&](linalg::LinalgOp op) { ops.push_back(op); });
    for (linalg::LinalgOp op : ops)
      sink(rewriter, op);
  }

  void sink(IRRewriter &rewriter, linalg::LinalgOp op) {
    // The host scalars the op uses: captured by its body or scalar inputs.
    llvm::SetVector<Value> used;
    getUsedValuesDefinedAbove(op->getRegions(), used);
    SmallVector<Value> scalars;
    for (Value v : used)
      if (isHostScalar(v))
        scalars.push_back(v);
    for (OpOperand *in : op.getDpsInputOperands())
      if (isHostScalar(in->get()))
        scalars.push_back(in->get());
    if (scalars.empty())
      return;
    llvm::SetVector<Operation *> slice;
    for (Value v : scalars)
      if (failed(collect(v, op->getBlock(), slice)))
        return;
    SmallVector<Operation *> ordered(slice.begin(), slice.end());
    llvm::sort(ordered, [](Operation *a, Operation *b) {
      return a->isBeforeInBlock(b);
    });
    SmallVector<tensor::ExtractOp> extracts;
    for (Operation *o : ordered)
      if (auto e = dyn_cast<tensor::ExtractOp>(o))
        extracts.push_back(e);

    rewriter.setInsertionPoint(op);
    auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
    if (!generic) {
      FailureOr<linalg::GenericOp> g = linalg::generalizeNamedOp(rewriter, op);
      if (failed(g))
        return;
      generic = *g;
    }
    MLIRContext *ctx = &getContext();
    unsigned numLoops = generic.getNumLoops();
    SmallVector<Value> inputs;
    SmallVector<AffineMap> maps;
    SmallVector<bool> kept;
    for (OpOperand *in : generic.getDpsInputOperands()) {
      kept.push_back(!isHostScalar(in->get()));
      if (kept.back()) {
        inputs.push_back(in->get());
        maps.push_back(generic.getMatchingIndexingMap(in));
      }
    }
    unsigned firstExtract = inputs.size();
    // Every thread reads the element the host would have read.
    for (tensor::ExtractOp e : extracts) {
      SmallVector<AffineExpr> at;
      for (Value i : e.getIndices())
        at.push_back(getAffineConstantExpr(*getConstantIntValue(i), ctx));
      inputs.push_back(e.getTensor());
      maps.push_back(AffineMap::get(numLoops, 0, at, ctx));
    }
    for (OpOperand &out : generic.getDpsInitsMutable())
      maps.push_back(generic.getMatchingIndexingMap(&out));

    Block &old = generic.getRegion().front();
    unsigned numOldInputs = generic.getNumDpsInputs();
    auto rebuilt = linalg::GenericOp::create(
        rewriter, generic.getLoc(), generic.getResultTypes(), inputs,
        generic.getDpsInits(), maps, generic.getIteratorTypesArray(),
        [&](OpBuilder &b, Location loc, ValueRange args) {
          IRMapping map;
          for (auto [k, e] : llvm::enumerate(extracts))
            map.map(e.getResult(), args[firstExtract + k]);
          for (Operation *o : ordered)
            if (!isa<tensor::ExtractOp>(o))
              b.clone(*o, map);
          unsigned next = 0;
          for (unsigned i = 0; i < numOldInputs; ++i) {
            Value replacement =
                kept[i] ? args[next++]
                        : map.lookupOrDefault(
                              generic.getDpsInputOperand(i)->get());
            map.map(old.getArgument(i), replacement);
          }
          for (unsigned j = 0; j < generic.getNumDpsInits(); ++j)
            map.map(old.getArgument(numOldInputs + j),
                    args[inputs.size() + j]);
          for (Operation &o : old.without_terminator())
            b.clone(o, map);
          SmallVector<Value> yielded;
          for (Value v : old.getTerminator()->getOperands())
            yielded.push_back(map.lookupOrDefault(v));
          linalg::YieldOp::create(b, loc, yielded);
        });
    rebuilt->setDiscardableAttrs(generic->getDiscardableAttrDictionary());
    rewriter.replaceOp(generic, rebuilt.getResults());
  }
};

} // namespace
