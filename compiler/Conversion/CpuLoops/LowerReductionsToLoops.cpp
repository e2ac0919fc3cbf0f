//===- LowerReductionsToLoops.cpp - Reductions in registers ---------------===//
//
// Upstream's linalg-to-loops lowering loads and stores the output element in
// every iteration of a reduction. When the reduction is the innermost loop
// (a layer norm's statistics, softmax's max and sum, a log-sum-exp: a row
// reduced along its contiguous dimension) LLVM cannot keep the element in a
// register, because it cannot prove that the output does not alias the
// inputs, and it may not reorder the adds; the loop stays a scalar chain of
// dependent adds, each stored back. Here such nests become loops that carry
// the output elements as `scf.for` iteration arguments, with the adds that
// fold into them marked reassociative, so that LLVM vectorises them.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/Passes.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::cleave {
#define GEN_PASS_DEF_CLEAVELOWERREDUCTIONSTOLOOPS
#include "compiler/Conversion/Passes.h.inc"
} // namespace mlir::cleave

using namespace mlir;

namespace {

/// The indices `map` gives for the loop indices `ivs`.
SmallVector<Value> applyMap(OpBuilder &b, Location loc, AffineMap map,
                            ValueRange ivs) {
  return llvm::map_to_vector(map.getResults(), [&](AffineExpr e) -> Value {
    return affine::AffineApplyOp::create(
        b, loc, AffineMap::get(map.getNumDims(), 0, e), ivs);
  });
}

/// Lowers a bufferized `linalg.generic` whose loops are parallel and then
/// reduction (at least one, the innermost among them) to an `scf.for` nest:
/// the parallel loops outside, each output element loaded once before the
/// reduction loops, carried through them as iteration arguments and stored
/// once after them.
struct InnerReductionToLoops : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::GenericOp op,
                                PatternRewriter &rw) const override {
    if (!op.hasPureBufferSemantics())
      return rw.notifyMatchFailure(op, "expected buffer semantics");
    SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
    unsigned numParallel = op.getNumParallelLoops();
    if (numParallel == iterators.size())
      return rw.notifyMatchFailure(op, "no reduction loop");
    if (!llvm::all_of(ArrayRef(iterators).take_front(numParallel),
                      [](utils::IteratorType t) {
                        return t == utils::IteratorType::parallel;
                      }))
      return rw.notifyMatchFailure(
          op, "a reduction loop is outside a parallel one");
    for (OpOperand &init : op.getDpsInitsMutable()) {
      // Carried in a register, an output read as an input would be seen
      // with its old value.
      if (llvm::is_contained(op.getDpsInputs(), init.get()))
        return rw.notifyMatchFailure(op, "an output is also an input");
      AffineMap map = op.getMatchingIndexingMap(&init);
      for (unsigned d = numParallel; d < iterators.size(); ++d)
        if (map.isFunctionOfDim(d))
          return rw.notifyMatchFailure(
              op, "an output is indexed by a reduction loop");
    }

    Location loc = op.getLoc();
    SmallVector<Range> ranges =
        cast<linalg::LinalgOp>(op.getOperation()).createLoopRanges(rw, loc);
    auto values = [&](auto field, unsigned from, unsigned to) {
      SmallVector<Value> out;
      for (unsigned d = from; d < to; ++d)
        out.push_back(
            getValueOrCreateConstantIndexOp(rw, loc, field(ranges[d])));
      return out;
    };
    auto lbs = [](const Range &r) { return r.offset; };
    auto ubs = [](const Range &r) { return r.size; };
    auto steps = [](const Range &r) { return r.stride; };
    unsigned rank = iterators.size();
    Block &body = op.getRegion().front();
    unsigned numInputs = op.getNumDpsInputs();

    scf::buildLoopNest(
        rw, loc, values(lbs, 0, numParallel), values(ubs, 0, numParallel),
        values(steps, 0, numParallel),
        [&](OpBuilder &b, Location l, ValueRange outerIvs) {
          SmallVector<Value> inits;
          SmallVector<SmallVector<Value>> outIndices;
          for (OpOperand &init : op.getDpsInitsMutable()) {
            // Outputs do not depend on the reduction loops: pad with any
            // index for them.
            SmallVector<Value> ivs(outerIvs);
            ivs.resize(rank, outerIvs.empty()
                                 ? arith::ConstantIndexOp::create(b, l, 0)
                                 : outerIvs.front());
            outIndices.push_back(
                applyMap(b, l, op.getMatchingIndexingMap(&init), ivs));
            inits.push_back(
                memref::LoadOp::create(b, l, init.get(), outIndices.back()));
          }
          scf::LoopNest inner = scf::buildLoopNest(
              b, l, values(lbs, numParallel, rank),
              values(ubs, numParallel, rank), values(steps, numParallel, rank),
              inits,
              [&](OpBuilder &ib, Location il, ValueRange innerIvs,
                  ValueRange accs) -> scf::ValueVector {
                SmallVector<Value> ivs(outerIvs);
                llvm::append_range(ivs, innerIvs);
                IRMapping map;
                for (OpOperand *input : op.getDpsInputOperands()) {
                  BlockArgument arg =
                      body.getArgument(input->getOperandNumber());
                  if (!isa<ShapedType>(input->get().getType())) {
                    map.map(arg, input->get());
                    continue;
                  }
                  map.map(arg,
                          memref::LoadOp::create(
                              ib, il, input->get(),
                              applyMap(ib, il, op.getMatchingIndexingMap(input),
                                       ivs)));
                }
                for (auto [i, acc] : llvm::enumerate(accs))
                  map.map(body.getArgument(numInputs + i), acc);
                for (Operation &inner : body.without_terminator()) {
                  if (auto index = dyn_cast<linalg::IndexOp>(inner)) {
                    map.map(index.getResult(), ivs[index.getDim()]);
                    continue;
                  }
                  ib.clone(inner, map);
                }
                scf::ValueVector yielded;
                for (auto [i, v] :
                     llvm::enumerate(body.getTerminator()->getOperands())) {
                  Value folded = map.lookupOrDefault(v);
                  reassociate(folded, accs[i]);
                  yielded.push_back(folded);
                }
                return yielded;
              });
          for (auto [i, init] : llvm::enumerate(op.getDpsInitsMutable()))
            memref::StoreOp::create(b, l, inner.results[i], init.get(),
                                    outIndices[i]);
        });
    rw.eraseOp(op);
    return success();
  }

  /// Marks `folded = acc + x` (either order) reassociative: the sum may be
  /// computed in any order, which is what lets LLVM split it across vector
  /// lanes. Other combiners (max, min) are exact in any order already.
  static void reassociate(Value folded, Value acc) {
    auto add = folded.getDefiningOp<arith::AddFOp>();
    if (!add || (add.getLhs() != acc && add.getRhs() != acc))
      return;
    add.setFastmath(add.getFastmath() | arith::FastMathFlags::reassoc);
  }
};

struct LowerReductionsToLoopsPass
    : cleave::impl::CleaveLowerReductionsToLoopsBase<
          LowerReductionsToLoopsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<InnerReductionToLoops>(&getContext());
    // One rewrite per op; the loops it creates hold no linalg op.
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
