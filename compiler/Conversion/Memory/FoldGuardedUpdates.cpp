//===- FoldGuardedUpdates.cpp - Guarded optimizer updates stay in place ---===//
//
// A window that is not finite keeps its parameters: the apply step stores
// `nn.where(ok, new, old)`. Elementwise fusion folds the select into the
// optimizer's in-place loop but keeps the loop's in-place output and adds
// one for the select, so every parameter would be written twice and copied
// once per window. This pass moves the select onto the in-place output.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::cleave {
#define GEN_PASS_DEF_CLEAVEFOLDGUARDEDUPDATES
#include "compiler/Conversion/Passes.h.inc"
} // namespace mlir::cleave

using namespace mlir;

namespace {

struct YieldSelectInPlace : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::GenericOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.hasPureTensorSemantics())
      return failure();
    Block *body = op.getBody();
    auto yield = cast<linalg::YieldOp>(body->getTerminator());
    unsigned numOutputs = op.getNumDpsInits();
    for (unsigned b = 0; b < numOutputs; ++b) {
      auto select = yield.getOperand(b).getDefiningOp<arith::SelectOp>();
      if (!select || select->getBlock() != body)
        continue;
      for (unsigned a = 0; a < numOutputs; ++a) {
        if (a == b || yield.getOperand(a) != select.getTrueValue() ||
            !op.getResult(a).use_empty())
          continue;
        OpOperand *inPlace = op.getDpsInitOperand(a);
        AffineMap map = op.getMatchingIndexingMap(inPlace);
        if (op.getMatchingIndexingMap(op.getDpsInitOperand(b)) != map)
          continue;
        // The false value reads the in-place tensor at the same element.
        auto old = dyn_cast<BlockArgument>(select.getFalseValue());
        if (!old || old.getOwner() != body)
          continue;
        OpOperand *read = op.getMatchingOpOperand(old);
        if (read->get() != inPlace->get() ||
            op.getMatchingIndexingMap(read) != map)
          continue;
        rewriter.modifyOpInPlace(yield, [&] { yield.setOperand(a, select); });
        rewriter.replaceAllUsesWith(op.getResult(b), op.getResult(a));
        return success();
      }
    }
    return failure();
  }
};

/// The multi-result form (Adam's parameter and moments), which elementwise
/// fusion leaves as separate loops: a consumer that reads result `k` of an
/// in-place producer and the producer's init `k` (the old value) is inlined
/// into the producer, whose output `k` then yields the consumer's value:
///
///   %p:3 = linalg.generic ins(%g) outs(%w, %m, %v) {... yield %a, %b, %c}
///   %s = linalg.generic ins(%ok, %p#0, %w) outs(%e) {
///     ^bb0(%c0, %new, %old, %o): ... yield select(%c0 != 0, %new, %old) }
///
/// becomes one loop with ins(%g, %ok) outs(%w, %m, %v) yielding the select
/// for %w (%old is the loop's own output argument, the value before it).
/// Upstream's linalg::fuseElementwiseOps, allowed to fuse here, keeps the
/// producer for its other results and recomputes them in the fused loop:
/// two loops writing the moments in place, which bufferization copies.
struct FoldConsumerIntoInPlaceProducer
    : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::GenericOp consumer,
                                PatternRewriter &rewriter) const override {
    if (!consumer.hasPureTensorSemantics() || consumer.getNumDpsInits() != 1 ||
        consumer.getNumParallelLoops() != consumer.getNumLoops())
      return failure();
    Block *cBody = consumer.getBody();
    if (!cBody->getArgument(cBody->getNumArguments() - 1).use_empty())
      return failure();
    // The producer's result the consumer reads, beside that result's init
    // (the old value).
    linalg::GenericOp producer;
    unsigned k = 0;
    for (OpOperand *in : consumer.getDpsInputOperands()) {
      auto r = dyn_cast<OpResult>(in->get());
      auto p = r ? dyn_cast<linalg::GenericOp>(r.getOwner()) : nullptr;
      if (!p || !p.hasPureTensorSemantics())
        continue;
      Value old = p.getDpsInitOperand(r.getResultNumber())->get();
      if (llvm::any_of(consumer.getDpsInputOperands(),
                       [&](OpOperand *o) { return o->get() == old; })) {
        producer = p;
        k = r.getResultNumber();
        break;
      }
    }
    if (!producer || !producer.hasPureTensorSemantics() ||
        producer.getNumLoops() != consumer.getNumLoops() ||
        producer.getNumParallelLoops() != producer.getNumLoops() ||
        !producer.getResult(k).hasOneUse())
      return failure();
    OpOperand *init = producer.getDpsInitOperand(k);
    AffineMap map = producer.getMatchingIndexingMap(init);
    if (!map.isPermutation() ||
        consumer.getResult(0).getType() != producer.getResult(k).getType() ||
        consumer.getMatchingIndexingMap(consumer.getDpsInitOperand(0)) != map)
      return failure();

    // Every other consumer input is the old value (the producer's init k)
    // or comes from before the producer.
    SmallVector<OpOperand *> extra;
    for (OpOperand *in : consumer.getDpsInputOperands()) {
      Value v = in->get();
      AffineMap m = consumer.getMatchingIndexingMap(in);
      if (v == producer.getResult(k) || v == init->get()) {
        if (m != map)
          return failure();
        continue;
      }
      Operation *def = v.getDefiningOp();
      if (def && (def->getBlock() != producer->getBlock() ||
                  !def->isBeforeInBlock(producer)))
        return failure();
      extra.push_back(in);
    }

    // The fused loop: the producer's inputs, then the consumer's others.
    SmallVector<Value> inputs(producer.getDpsInputs());
    SmallVector<AffineMap> maps;
    for (OpOperand *in : producer.getDpsInputOperands())
      maps.push_back(producer.getMatchingIndexingMap(in));
    for (OpOperand *in : extra) {
      inputs.push_back(in->get());
      maps.push_back(consumer.getMatchingIndexingMap(in));
    }
    for (OpOperand &out : producer.getDpsInitsMutable())
      maps.push_back(producer.getMatchingIndexingMap(&out));
    // Where the producer is: its other results may be used before the
    // consumer, and the extra inputs are defined before it.
    rewriter.setInsertionPoint(producer);
    auto fused = linalg::GenericOp::create(
        rewriter, producer.getLoc(), producer.getResultTypes(), inputs,
        producer.getDpsInits(), maps, producer.getIteratorTypesArray());
    Block *pBody = producer.getBody();
    Block *body = rewriter.createBlock(&fused.getRegion());
    IRMapping mapping;
    unsigned numIn = producer.getNumDpsInputs();
    for (unsigned i = 0; i < numIn; ++i)
      mapping.map(pBody->getArgument(i),
                  body->addArgument(pBody->getArgument(i).getType(),
                                    producer.getLoc()));
    SmallVector<BlockArgument> extraArgs;
    for (OpOperand *in : extra)
      extraArgs.push_back(body->addArgument(
          consumer.getMatchingBlockArgument(in).getType(), consumer.getLoc()));
    for (unsigned i = numIn; i < pBody->getNumArguments(); ++i)
      mapping.map(pBody->getArgument(i),
                  body->addArgument(pBody->getArgument(i).getType(),
                                    producer.getLoc()));
    rewriter.setInsertionPointToStart(body);
    for (Operation &op : pBody->without_terminator())
      rewriter.clone(op, mapping);
    auto pYield = cast<linalg::YieldOp>(pBody->getTerminator());
    SmallVector<Value> yielded;
    for (Value v : pYield.getOperands())
      yielded.push_back(mapping.lookupOrDefault(v));
    // The consumer's body, on the producer's value k and old value.
    IRMapping cMapping;
    Value oldArg = mapping.lookup(producer.getMatchingBlockArgument(init));
    unsigned e = 0;
    for (OpOperand *in : consumer.getDpsInputOperands()) {
      BlockArgument arg = consumer.getMatchingBlockArgument(in);
      if (in->get() == producer.getResult(k))
        cMapping.map(arg, yielded[k]);
      else if (in->get() == init->get())
        cMapping.map(arg, oldArg);
      else
        cMapping.map(arg, extraArgs[e++]);
    }
    for (Operation &op : cBody->without_terminator())
      rewriter.clone(op, cMapping);
    auto cYield = cast<linalg::YieldOp>(cBody->getTerminator());
    yielded[k] = cMapping.lookupOrDefault(cYield.getOperand(0));
    linalg::YieldOp::create(rewriter, producer.getLoc(), yielded);

    rewriter.replaceOp(consumer, fused.getResult(k));
    SmallVector<Value> replacements(fused.getResults());
    rewriter.replaceOp(producer, replacements);
    return success();
  }
};

/// A fill of a tensor that an elementwise loop reads last (the apply step
/// zeroing each gradient accumulator after the optimizer's loop has read
/// it) becomes an output of that loop, which writes the fill's value where
/// it read the old one:
///
///   %u = linalg.generic ins(%g, ...) outs(%p) {^bb0(%gi, ..., %po): ...}
///   %z = linalg.fill ins(%zero) outs(%g)
///
/// becomes one loop with ins(...) outs(%p, %g) that reads %g through its
/// output argument and yields %zero for it: one pass over the accumulator
/// instead of two (a separate fill is a second sweep of a buffer that has
/// left the cache by then). It applies when the loop is all parallel, reads
/// the tensor with the identity map over its own loops, and every other
/// reader of the tensor comes before the loop (so nothing reads the old
/// value after it is overwritten in place).
struct FoldFillIntoLastReader : OpRewritePattern<linalg::FillOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::FillOp fill,
                                PatternRewriter &rewriter) const override {
    if (!fill.hasPureTensorSemantics())
      return failure();
    Value target = fill.getDpsInitOperand(0)->get();
    auto type = dyn_cast<RankedTensorType>(target.getType());
    if (!type || !type.hasStaticShape())
      return failure();
    Block *block = fill->getBlock();
    // The last user before the fill (every user must come before it) is
    // the loop; the others come before the loop.
    Operation *last = nullptr;
    for (Operation *user : target.getUsers()) {
      if (user == fill)
        continue;
      if (user->getBlock() != block || !user->isBeforeInBlock(fill))
        return failure();
      if (!last || last->isBeforeInBlock(user))
        last = user;
    }
    auto reader = dyn_cast_or_null<linalg::GenericOp>(last);
    if (!reader || !reader.hasPureTensorSemantics() ||
        reader.getNumParallelLoops() != reader.getNumLoops() ||
        reader.getNumLoops() != type.getRank())
      return failure();
    AffineMap identity =
        AffineMap::getMultiDimIdentityMap(type.getRank(), getContext());
    SmallVector<OpOperand *> reads;
    for (OpOperand &operand : reader->getOpOperands())
      if (operand.get() == target) {
        if (!reader.isDpsInput(&operand) ||
            reader.getMatchingIndexingMap(&operand) != identity)
          return failure();
        reads.push_back(&operand);
      }
    // The fill's value must be available where the loop is.
    Value value = fill.getDpsInputOperand(0)->get();
    if (Operation *def = value.getDefiningOp())
      if (def->getBlock() == block && !def->isBeforeInBlock(reader))
        return failure();

    // The loop without those inputs, with the target as a last output.
    SmallVector<Value> inputs;
    SmallVector<AffineMap> maps;
    for (OpOperand *in : reader.getDpsInputOperands())
      if (in->get() != target) {
        inputs.push_back(in->get());
        maps.push_back(reader.getMatchingIndexingMap(in));
      }
    SmallVector<Value> inits(reader.getDpsInits());
    for (OpOperand &out : reader.getDpsInitsMutable())
      maps.push_back(reader.getMatchingIndexingMap(&out));
    inits.push_back(target);
    maps.push_back(identity);
    SmallVector<Type> resultTypes(reader.getResultTypes());
    resultTypes.push_back(type);

    rewriter.setInsertionPoint(reader);
    auto fused = linalg::GenericOp::create(rewriter, reader.getLoc(),
                                           resultTypes, inputs, inits, maps,
                                           reader.getIteratorTypesArray());
    Block *old = reader.getBody();
    Block *body = rewriter.createBlock(&fused.getRegion());
    Location loc = reader.getLoc();
    IRMapping mapping;
    SmallVector<BlockArgument> readArgs;
    for (OpOperand *in : reader.getDpsInputOperands()) {
      BlockArgument arg = reader.getMatchingBlockArgument(in);
      if (in->get() == target)
        readArgs.push_back(arg);
      else
        mapping.map(arg, body->addArgument(arg.getType(), loc));
    }
    for (OpOperand &out : reader.getDpsInitsMutable()) {
      BlockArgument arg = reader.getMatchingBlockArgument(&out);
      mapping.map(arg, body->addArgument(arg.getType(), loc));
    }
    BlockArgument current =
        body->addArgument(type.getElementType(), target.getLoc());
    for (BlockArgument arg : readArgs)
      mapping.map(arg, current);
    rewriter.setInsertionPointToStart(body);
    for (Operation &op : old->without_terminator())
      rewriter.clone(op, mapping);
    SmallVector<Value> yielded;
    for (Value v : cast<linalg::YieldOp>(old->getTerminator()).getOperands())
      yielded.push_back(mapping.lookupOrDefault(v));
    yielded.push_back(value);
    linalg::YieldOp::create(rewriter, loc, yielded);

    rewriter.replaceOp(fill, fused.getResults().back());
    rewriter.replaceOp(reader, fused.getResults().drop_back());
    return success();
  }
};

struct FoldGuardedUpdatesPass
    : cleave::impl::CleaveFoldGuardedUpdatesBase<FoldGuardedUpdatesPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<YieldSelectInPlace, FoldConsumerIntoInPlaceProducer,
                 FoldFillIntoLastReader>(&getContext());
    // The output whose result is no longer used goes (upstream's pattern for
    // unused results whose init the body does not read).
    linalg::populateEraseUnusedOperandsAndResultsPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
