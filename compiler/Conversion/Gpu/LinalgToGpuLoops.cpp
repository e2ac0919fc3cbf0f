//===- LinalgToGpuLoops.cpp - Bufferized linalg to GPU-mapped loops -------===//
//
// The CUDA back end runs every loop nest of an entry point as a kernel: the
// host only launches (docs/design/gpu.md). This pass turns each bufferized
// linalg op into one `scf.parallel` nest tiled into blocks of threads and
// annotated with the hardware mapping, which upstream
// `convert-parallel-loops-to-gpu` turns into `gpu.launch`.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/Gpu/GpuUtils.h"
#include "compiler/Conversion/Passes.h"

#include "mlir/Dialect/GPU/Transforms/ParallelLoopMapper.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <limits>

namespace mlir::cleave {
#define GEN_PASS_DEF_CLEAVELINALGTOGPULOOPS
#include "compiler/Conversion/Passes.h.inc"
} // namespace mlir::cleave

using namespace mlir;
using namespace mlir::cleave;

namespace {

/// The mapping attribute of each dimension of a loop, from its processors.
SmallVector<gpu::ParallelLoopDimMappingAttr>
mappingOf(MLIRContext *ctx, ArrayRef<gpu::Processor> processors) {
  AffineMap identity = AffineMap::getMultiDimIdentityMap(1, ctx);
  return llvm::map_to_vector(processors, [&](gpu::Processor p) {
    return gpu::ParallelLoopDimMappingAttr::get(ctx, p, identity, identity);
  });
}

/// A reduction body `yield combine(x, out)` that a block of threads can
/// compute together: `combine` is associative and commutative (up to
/// rounding), `out` is used nowhere else.
struct Combiner {
  Operation *op;
  gpu::AllReduceOperation kind;
  double identity;
};

std::optional<Combiner> matchCombiner(linalg::GenericOp op) {
  if (op.getNumDpsInits() != 1 || !op.hasPureBufferSemantics())
    return std::nullopt;
  Block &body = op.getRegion().front();
  BlockArgument out = body.getArguments().back();
  if (!isa<Float32Type, Float64Type>(out.getType()) || !out.hasOneUse())
    return std::nullopt;
  Operation *combine = *out.getUsers().begin();
  if (body.getTerminator()->getOperand(0).getDefiningOp() != combine ||
      !combine->getResult(0).hasOneUse())
    return std::nullopt;
  double inf = std::numeric_limits<double>::infinity();
  if (isa<arith::AddFOp>(combine))
    return Combiner{combine, gpu::AllReduceOperation::ADD, 0.0};
  if (isa<arith::MaximumFOp>(combine))
    return Combiner{combine, gpu::AllReduceOperation::MAXIMUMF, -inf};
  if (isa<arith::MinimumFOp>(combine))
    return Combiner{combine, gpu::AllReduceOperation::MINIMUMF, inf};
  return std::nullopt;
}

/// `linear` as indices into `sizes` (row-major), with unsigned arithmetic.
SmallVector<Value> delinearize(OpBuilder &b, Location loc, Value linear,
                               ArrayRef<int64_t> sizes) {
  SmallVector<Value> indices(sizes.size());
  for (int i = int(sizes.size()) - 1; i >= 0; --i) {
    if (i == 0) {
      indices[i] = linear;
      break;
    }
    Value size = arith::ConstantIndexOp::create(b, loc, sizes[i]);
    indices[i] = arith::RemUIOp::create(b, loc, linear, size);
    linear = arith::DivUIOp::create(b, loc, linear, size);
  }
  return indices;
}

/// The indices `map` gives for the loop indices `ivs`.
SmallVector<Value> applyMap(OpBuilder &b, Location loc, AffineMap map,
                            ValueRange ivs) {
  return llvm::map_to_vector(map.getResults(), [&](AffineExpr e) -> Value {
    return affine::AffineApplyOp::create(
        b, loc, AffineMap::get(map.getNumDims(), 0, e), ivs);
  });
}

struct LinalgToGpuLoopsPass
    : cleave::impl::CleaveLinalgToGpuLoopsBase<LinalgToGpuLoopsPass> {
  using CleaveLinalgToGpuLoopsBase::CleaveLinalgToGpuLoopsBase;

  void runOnOperation() override {
    func::FuncOp f = getOperation();
    if (f.isExternal())
      return;
    // A block holds at most 1024 threads on every CUDA GPU.
    if (blockSize < 1 || blockSize > 1024) {
      f.emitError() << "block-size=" << static_cast<int64_t>(blockSize)
                    << " is out of range; expected 1 to 1024 threads";
      return signalPassFailure();
    }
    IRRewriter rewriter(&getContext());
    // Bufferization's copies are element loops like any other.
    SmallVector<memref::CopyOp> copies;
    f.walk([&](memref::CopyOp copy) { copies.push_back(copy); });
    for (memref::CopyOp copy : copies) {
      rewriter.setInsertionPoint(copy);
      rewriter.replaceOpWithNewOp<linalg::CopyOp>(copy, copy.getSource(),
                                                  copy.getTarget());
    }
    SmallVector<linalg::LinalgOp> ops;
    f.walk([&](linalg::LinalgOp op) { ops.push_back(op); });
    for (linalg::LinalgOp op : ops)
      if (failed(lower(rewriter, op)))
        return signalPassFailure();
    // Loops the lowering to linalg wrote by hand (an embedding's gradient
    // scatters rows with scf.for, in order, because ids repeat) and stores
    // of their own: kernels of one thread, which keep their sequential
    // semantics.
    SmallVector<Operation *> sequential;
    for (Block &block : f.getBody())
      for (Operation &op : block)
        if (op.getNumResults() == 0 &&
            !isa<scf::ParallelOp, gpu::LaunchOp>(op) &&
            (op.getNumRegions() != 0 || isa<memref::StoreOp>(op)) &&
            touchesDeviceMemoryRecursively(&op))
          sequential.push_back(&op);
    for (Operation *op : sequential) {
      rewriter.setInsertionPoint(op);
      scf::ParallelOp single = singleThread(rewriter, op->getLoc());
      rewriter.moveOpBefore(op, single.getBody()->getTerminator());
      if (failed(gpu::setMappingAttr(
              single, mappingOf(&getContext(), gpu::Processor::BlockX))))
        return signalPassFailure();
    }
  }

  /// An empty `scf.parallel` of one iteration at the rewriter's position.
  static scf::ParallelOp singleThread(IRRewriter &rewriter, Location loc) {
    Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
    return scf::ParallelOp::create(rewriter, loc, ValueRange{zero},
                                   ValueRange{one}, ValueRange{one});
  }

  LogicalResult lower(IRRewriter &rewriter, linalg::LinalgOp op) {
    if (!op.hasPureBufferSemantics())
      return op.emitError("expected a bufferized linalg op");
    rewriter.setInsertionPoint(op);
    Location loc = op.getLoc();
    // Parallel dimensions first: linalg's parallel-loop lowering makes one
    // scf.parallel of the leading parallel dimensions only, and a reduction
    // dimension in front would leave a sequential loop of kernel launches
    // on the host.
    SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
    SmallVector<unsigned> order;
    for (unsigned i = 0; i < iterators.size(); ++i)
      if (iterators[i] == utils::IteratorType::parallel)
        order.push_back(i);
    for (unsigned i = 0; i < iterators.size(); ++i)
      if (iterators[i] != utils::IteratorType::parallel)
        order.push_back(i);
    if (!llvm::equal(order, llvm::seq<unsigned>(0, iterators.size()))) {
      auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
      if (!generic) {
        FailureOr<linalg::GenericOp> g =
            linalg::generalizeNamedOp(rewriter, op);
        if (failed(g))
          return op.emitError("cannot generalize for the GPU loop mapping");
        generic = *g;
      }
      FailureOr<linalg::GenericOp> g =
          linalg::interchangeGenericOp(rewriter, generic, order);
      if (failed(g))
        return generic.emitError("cannot move reduction dimensions inside");
      op = *g;
    }

    // Long reductions: a block of threads per output element.
    if (auto generic = dyn_cast<linalg::GenericOp>(op.getOperation()))
      if (std::optional<Combiner> combiner = matchCombiner(generic);
          combiner && worthABlock(generic))
        return lowerToBlockReduction(rewriter, generic, *combiner);

    // No parallel dimension: a kernel of one thread.
    scf::ParallelOp single;
    if (op.getNumParallelLoops() == 0) {
      single = singleThread(rewriter, loc);
      rewriter.moveOpBefore(op, single.getBody()->getTerminator());
      rewriter.setInsertionPoint(op);
    }
    FailureOr<linalg::LinalgLoops> loops =
        linalg::linalgOpToParallelLoops(rewriter, op);
    if (failed(loops))
      return op.emitError("cannot lower to parallel loops for the GPU");
    rewriter.eraseOp(op);
    if (single) {
      return gpu::setMappingAttr(
          single, mappingOf(&getContext(), gpu::Processor::BlockX));
    }
    auto outer = loops->empty()
                     ? scf::ParallelOp()
                     : dyn_cast<scf::ParallelOp>(loops->front());
    if (!outer)
      return emitError(loc, "expected a parallel loop nest");
    return tileAndMap(outer);
  }

  /// Whether a reduction is long enough for a block per output element to
  /// beat a thread per output element: many elements to reduce, and either
  /// few outputs (too few threads otherwise) or a reduction over the
  /// contiguous dimension of the first input (so that a block's threads read
  /// consecutive addresses).
  bool worthABlock(linalg::GenericOp op) {
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    if (op.getNumDpsInputs() == 0 ||
        llvm::any_of(ranges, ShapedType::isDynamic))
      return false;
    unsigned numParallel = op.getNumParallelLoops();
    int64_t outputs = 1, reduced = 1;
    for (auto [d, r] : llvm::enumerate(ranges))
      (d < numParallel ? outputs : reduced) *= r;
    if (reduced < 2 * blockSize)
      return false;
    AffineMap first = op.getMatchingIndexingMap(op.getDpsInputOperand(0));
    bool contiguous = first.getNumResults() != 0 &&
                      first.getResults().back() ==
                          getAffineDimExpr(ranges.size() - 1, op.getContext());
    return outputs < 2048 || contiguous;
  }

  /// One block per output element (the parallel dimensions linearised into
  /// the grid's x): each thread combines a strided share of the reduced
  /// elements in order, `gpu.all_reduce` combines the threads' partial
  /// results, and thread 0 combines that with the output's old value.
  LogicalResult lowerToBlockReduction(IRRewriter &rewriter,
                                      linalg::GenericOp op,
                                      const Combiner &combiner) {
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    unsigned numParallel = op.getNumParallelLoops();
    ArrayRef<int64_t> parallel = ArrayRef(ranges).take_front(numParallel);
    ArrayRef<int64_t> reduction = ArrayRef(ranges).drop_front(numParallel);
    int64_t outputs = 1, reduced = 1;
    for (int64_t r : parallel)
      outputs *= r;
    for (int64_t r : reduction)
      reduced *= r;
    if (outputs > std::numeric_limits<int32_t>::max())
      return op.emitError("too many outputs for one block each");

    auto constant = [&](int64_t v) -> Value {
      return arith::ConstantIndexOp::create(rewriter, loc, v);
    };
    Value one = constant(1);
    auto launch =
        gpu::LaunchOp::create(rewriter, loc, constant(outputs), one, one,
                              constant(blockSize), one, one);
    Block &body = launch.getBody().front();
    rewriter.setInsertionPointToStart(&body);
    Value block = launch.getBlockIds().x, thread = launch.getThreadIds().x;
    SmallVector<Value> parallelIvs =
        delinearize(rewriter, loc, block, parallel);
    Block &old = op.getRegion().front();
    Type type = old.getArguments().back().getType();
    Value identity = arith::ConstantOp::create(
        rewriter, loc, rewriter.getFloatAttr(type, combiner.identity));
    auto partial = scf::ForOp::create(
        rewriter, loc, thread, constant(reduced), constant(blockSize),
        ValueRange{identity},
        [&](OpBuilder &b, Location l, Value k, ValueRange acc) {
          SmallVector<Value> ivs = parallelIvs;
          llvm::append_range(ivs, delinearize(b, l, k, reduction));
          IRMapping map;
          for (OpOperand *in : op.getDpsInputOperands()) {
            BlockArgument arg = old.getArgument(in->getOperandNumber());
            if (!isa<MemRefType>(in->get().getType())) {
              map.map(arg, in->get());
              continue;
            }
            map.map(arg, memref::LoadOp::create(
                             b, l, in->get(),
                             applyMap(b, l, op.getMatchingIndexingMap(in),
                                      ivs)));
          }
          map.map(old.getArguments().back(), acc[0]);
          for (Operation &o : old.without_terminator()) {
            if (auto index = dyn_cast<linalg::IndexOp>(o))
              map.map(index.getResult(), ivs[index.getDim()]);
            else
              b.clone(o, map);
          }
          scf::YieldOp::create(
              b, l, map.lookup(old.getTerminator()->getOperand(0)));
        });
    Value total = gpu::AllReduceOp::create(
        rewriter, loc, partial.getResult(0),
        gpu::AllReduceOperationAttr::get(ctx, combiner.kind),
        rewriter.getUnitAttr());
    Value first = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::eq,
                                        thread, constant(0));
    scf::IfOp::create(rewriter, loc, first, [&](OpBuilder &b, Location l) {
      OpOperand *out = op.getDpsInitOperand(0);
      // The output's map uses only parallel dimensions.
      SmallVector<Value> ivs = parallelIvs;
      ivs.append(reduction.size(), arith::ConstantIndexOp::create(b, l, 0));
      SmallVector<Value> at =
          applyMap(b, l, op.getMatchingIndexingMap(out), ivs);
      Value previous = memref::LoadOp::create(b, l, out->get(), at);
      Operation *combine = b.clone(*combiner.op);
      BlockArgument outArg = old.getArguments().back();
      for (OpOperand &operand : combine->getOpOperands())
        operand.set(combiner.op->getOperand(operand.getOperandNumber()) ==
                            outArg
                        ? previous
                        : total);
      memref::StoreOp::create(b, l, combine->getResult(0), out->get(), at);
      scf::YieldOp::create(b, l);
    });
    gpu::TerminatorOp::create(rewriter, loc);
    rewriter.eraseOp(op);
    return success();
  }

  /// Blocks of up to `blockSize` threads over the innermost dimensions that
  /// have more than one iteration (unit dimensions do not change addresses,
  /// so the first of them is the contiguous one: `x`, for coalescing), then
  /// `y` and `z`. Tiles need not divide the loop (no min/max bounds: the
  /// last block masks its extra threads). The grid's dimensions go to the
  /// dimensions with the most blocks, `x` first (up to 2^31-1 blocks, where
  /// `y` and `z` take 65535); the others run sequentially in each thread.
  LogicalResult tileAndMap(scf::ParallelOp loop) {
    unsigned n = loop.getNumLoops();
    SmallVector<int64_t> trips;
    for (unsigned d = 0; d < n; ++d) {
      std::optional<int64_t> lb = getConstantIntValue(loop.getLowerBound()[d]);
      std::optional<int64_t> ub = getConstantIntValue(loop.getUpperBound()[d]);
      std::optional<int64_t> step = getConstantIntValue(loop.getStep()[d]);
      if (!lb || !ub || !step || *step <= 0)
        return loop.emitError("GPU mapping needs static loop bounds");
      trips.push_back(llvm::divideCeil(std::max<int64_t>(*ub - *lb, 0), *step));
    }
    static constexpr gpu::Processor threadIds[] = {gpu::Processor::ThreadX,
                                                   gpu::Processor::ThreadY,
                                                   gpu::Processor::ThreadZ};
    static constexpr int64_t threadLimits[] = {1024, 1024, 64};
    SmallVector<int64_t> tiles(n, 1);
    SmallVector<gpu::Processor> threadMap(n, gpu::Processor::Sequential);
    int64_t budget = blockSize;
    unsigned mapped = 0;
    for (int d = n - 1; d >= 0 && mapped < 3 && budget > 1; --d) {
      if (trips[d] <= 1)
        continue;
      tiles[d] = std::min({trips[d], budget, threadLimits[mapped]});
      threadMap[d] = threadIds[mapped++];
      budget /= tiles[d];
    }
    SmallVector<int64_t> blockCounts;
    for (unsigned d = 0; d < n; ++d)
      blockCounts.push_back(llvm::divideCeil(trips[d], tiles[d]));
    SmallVector<unsigned> byBlocks;
    for (unsigned d = 0; d < n; ++d)
      if (blockCounts[d] > 1)
        byBlocks.push_back(d);
    llvm::stable_sort(byBlocks, [&](unsigned a, unsigned b) {
      return blockCounts[a] > blockCounts[b];
    });
    SmallVector<gpu::Processor> blockMap(n, gpu::Processor::Sequential);
    static constexpr gpu::Processor blockIds[] = {
        gpu::Processor::BlockX, gpu::Processor::BlockY, gpu::Processor::BlockZ};
    static constexpr int64_t blockLimits[] = {2147483647, 65535, 65535};
    unsigned next = 0;
    for (unsigned d : byBlocks)
      if (next < 3 && blockCounts[d] <= blockLimits[next])
        blockMap[d] = blockIds[next++];
    auto [blocks, threads] =
        scf::tileParallelLoop(loop, tiles, /*noMinMaxBounds=*/true);
    MLIRContext *ctx = &getContext();
    if (failed(gpu::setMappingAttr(blocks, mappingOf(ctx, blockMap))))
      return failure();
    return gpu::setMappingAttr(threads, mappingOf(ctx, threadMap));
  }
};

} // namespace
