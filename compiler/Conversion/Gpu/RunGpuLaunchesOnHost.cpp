//===- RunGpuLaunchesOnHost.cpp - Run gpu.launch regions on the host ------===//
//
// A testing aid: no machine that builds or tests Cleave has a GPU, so the
// kernels the cuda target generates would otherwise first compute anything
// on a user's GPU. This pass turns each `gpu.launch` that the cuda
// lowering makes (before outlining) into host loops over its blocks and
// threads, so that the CPU back end can compile the cuda target's loop
// nests (scalars sunk into them, the GPU loop mapping with its masked
// tails, block reductions) and the op tests can compare what they compute
// with the reference interpreter. It is never part of a real artifact.
//
// Threads of a block run one after another. That is exact for kernels
// whose threads are independent, which all of the cuda lowering's are
// except the block reductions; their one `gpu.all_reduce` is a barrier, so
// such a block runs in two sweeps over its threads: the first computes
// every thread's operand and combines them in thread order, the second
// recomputes what precedes the reduction and runs the rest with the
// total.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

namespace mlir::cleave {
#define GEN_PASS_DEF_CLEAVERUNGPULAUNCHESONHOST
#include "compiler/Conversion/Passes.h.inc"
} // namespace mlir::cleave

using namespace mlir;
using namespace mlir::cleave;

namespace {

/// The arith reduction of a float `gpu.all_reduce`, if there is one.
std::optional<arith::AtomicRMWKind> reductionKind(gpu::AllReduceOp reduce) {
  std::optional<gpu::AllReduceOperation> op = reduce.getOp();
  if (!op || !isa<FloatType>(reduce.getType()))
    return std::nullopt;
  switch (*op) {
  case gpu::AllReduceOperation::ADD:
    return arith::AtomicRMWKind::addf;
  case gpu::AllReduceOperation::MUL:
    return arith::AtomicRMWKind::mulf;
  case gpu::AllReduceOperation::MAXIMUMF:
    return arith::AtomicRMWKind::maximumf;
  case gpu::AllReduceOperation::MINIMUMF:
    return arith::AtomicRMWKind::minimumf;
  case gpu::AllReduceOperation::MAXNUMF:
    return arith::AtomicRMWKind::maxnumf;
  case gpu::AllReduceOperation::MINNUMF:
    return arith::AtomicRMWKind::minnumf;
  default:
    return std::nullopt;
  }
}

struct RunGpuLaunchesOnHostPass
    : cleave::impl::CleaveRunGpuLaunchesOnHostBase<RunGpuLaunchesOnHostPass> {
  void runOnOperation() override {
    SmallVector<gpu::LaunchOp> launches;
    getOperation()->walk([&](gpu::LaunchOp l) { launches.push_back(l); });
    for (gpu::LaunchOp launch : launches)
      if (failed(runOnHost(launch)))
        return signalPassFailure();
  }

  LogicalResult runOnHost(gpu::LaunchOp launch) {
    Region &region = launch.getBody();
    if (!region.hasOneBlock() || launch.getAsyncToken() ||
        !launch.getAsyncDependencies().empty() ||
        launch.getDynamicSharedMemorySize() || launch.hasClusterSize() ||
        region.front().getNumArguments() != 12)
      return launch.emitError(
          "only a synchronous launch of one block with no cluster, shared "
          "memory or attributions can run on the host");
    Block &body = region.front();
    gpu::AllReduceOp reduce;
    WalkResult walk = body.walk([&](Operation *op) {
      if (auto r = dyn_cast<gpu::AllReduceOp>(op)) {
        if (reduce || r->getBlock() != &body || !reductionKind(r)) {
          r.emitError("runs on the host only as the one float reduction "
                      "with an operation, directly in its launch");
          return WalkResult::interrupt();
        }
        reduce = r;
        return WalkResult::skip();
      }
      if (isa<gpu::ThreadIdOp, gpu::BlockIdOp, gpu::BlockDimOp,
              gpu::GridDimOp, gpu::TerminatorOp>(op) ||
          !isa<gpu::GPUDialect>(op->getDialect()))
        return WalkResult::advance();
      op->emitError("cannot run on the host: threads of a block run one "
                    "after another");
      return WalkResult::interrupt();
    });
    if (walk.wasInterrupted())
      return failure();

    // Id and size ops as the region's arguments, which the loops replace.
    SmallVector<Operation *> idOps;
    body.walk([&](Operation *op) {
      auto pick = [&](gpu::KernelDim3 dims, gpu::Dimension d) -> Value {
        return d == gpu::Dimension::x   ? dims.x
               : d == gpu::Dimension::y ? dims.y
                                        : dims.z;
      };
      Value replacement;
      if (auto id = dyn_cast<gpu::ThreadIdOp>(op))
        replacement = pick(launch.getThreadIds(), id.getDimension());
      else if (auto id = dyn_cast<gpu::BlockIdOp>(op))
        replacement = pick(launch.getBlockIds(), id.getDimension());
      else if (auto dim = dyn_cast<gpu::BlockDimOp>(op))
        replacement = pick(launch.getBlockSize(), dim.getDimension());
      else if (auto dim = dyn_cast<gpu::GridDimOp>(op))
        replacement = pick(launch.getGridSize(), dim.getDimension());
      if (replacement) {
        op->getResult(0).replaceAllUsesWith(replacement);
        idOps.push_back(op);
      }
    });
    for (Operation *op : idOps)
      op->erase();

    OpBuilder b(launch);
    Location loc = launch.getLoc();
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    gpu::KernelDim3 grid = launch.getGridSizeOperandValues();
    gpu::KernelDim3 block = launch.getBlockSizeOperandValues();
    IRMapping map;
    map.map(launch.getGridSize().x, grid.x);
    map.map(launch.getGridSize().y, grid.y);
    map.map(launch.getGridSize().z, grid.z);
    map.map(launch.getBlockSize().x, block.x);
    map.map(launch.getBlockSize().y, block.y);
    map.map(launch.getBlockSize().z, block.z);

    // for z, y, x: `build` inside, with the ids mapped to the loops'.
    auto forEach = [&](gpu::KernelDim3 sizes, gpu::KernelDim3 ids,
                       function_ref<void()> build) {
      auto z = scf::ForOp::create(b, loc, zero, sizes.z, one);
      b.setInsertionPointToStart(z.getBody());
      auto y = scf::ForOp::create(b, loc, zero, sizes.y, one);
      b.setInsertionPointToStart(y.getBody());
      auto x = scf::ForOp::create(b, loc, zero, sizes.x, one);
      b.setInsertionPointToStart(x.getBody());
      map.map(ids.z, z.getInductionVar());
      map.map(ids.y, y.getInductionVar());
      map.map(ids.x, x.getInductionVar());
      build();
      b.setInsertionPointAfter(z);
    };
    // Clones into a copy of `map` per thread: a region's block arguments
    // already in a mapping would not be cloned again.
    auto cloneRange = [&](IRMapping &thread, Block::iterator from,
                          Block::iterator to) {
      for (Operation &op : llvm::make_range(from, to))
        if (!isa<gpu::TerminatorOp>(op))
          b.clone(op, thread);
    };

    // The block's running total, outside the loops (an alloca in a loop
    // would grow the stack with every block).
    Value total;
    if (reduce)
      total = memref::AllocaOp::create(
          b, loc, MemRefType::get({}, reduce.getType()));
    forEach(grid, launch.getBlockIds(), [&] {
      if (!reduce) {
        forEach(block, launch.getThreadIds(), [&] {
          IRMapping thread = map;
          cloneRange(thread, body.begin(), body.end());
        });
        return;
      }
      // Sweep 1: every thread's operand, combined in thread order.
      arith::AtomicRMWKind kind = *reductionKind(reduce);
      Value identity =
          arith::getIdentityValue(kind, reduce.getType(), b, loc);
      memref::StoreOp::create(b, loc, identity, total);
      forEach(block, launch.getThreadIds(), [&] {
        IRMapping thread = map;
        cloneRange(thread, body.begin(), reduce->getIterator());
        Value sofar = memref::LoadOp::create(b, loc, total);
        Value combined = arith::getReductionOp(
            kind, b, loc, sofar, thread.lookup(reduce.getValue()));
        memref::StoreOp::create(b, loc, combined, total);
      });
      // Sweep 2: the rest of each thread, with the total.
      forEach(block, launch.getThreadIds(), [&] {
        IRMapping thread = map;
        cloneRange(thread, body.begin(), reduce->getIterator());
        thread.map(reduce.getResult(), memref::LoadOp::create(b, loc, total));
        cloneRange(thread, std::next(reduce->getIterator()), body.end());
      });
    });
    launch.erase();
    return success();
  }
};

} // namespace
