//===- SplitStepSharding.h - ZeRO-1 for cleave-split-step -------*- C++ -*-===//
//
// With `shard-optimizer-state`, cleave-split-step builds @apply_step so that
// each rank updates one shard of every parameter and keeps only that shard
// of the optimizer state. Private to the CleaveTransforms library.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_COMPILER_TRANSFORMS_SPLITSTEPSHARDING_H
#define CLEAVE_COMPILER_TRANSFORMS_SPLITSTEPSHARDING_H

#include "dialects/Train/IR/TrainOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseMap.h"

namespace mlir::cleave {

/// Whether `name` refers to a `param` global of `module`.
bool isParamGlobal(ModuleOp module, FlatSymbolRefAttr name);

/// Builds the ZeRO-1 form of an apply graph for `ranks` ranks, op by op, as
/// cleave-split-step clones the ops after the cut: the gradient accumulators
/// are reduce-scattered, every gradient, parameter (`train.shard` of it) and
/// optimizer state from there on is this rank's shard of `ceil(n / ranks)`
/// elements, clipping sums its squared norm across ranks, and one
/// `train.all_gather` rebuilds the updated parameters at the end.
class ShardedApplyBuilder {
public:
  ShardedApplyBuilder(ModuleOp module, int64_t ranks)
      : module(module), ranks(ranks) {}

  /// Declares the optimizer state of every parameter whose gradient `cut`
  /// accumulates as this rank's shard of it.
  LogicalResult shardStateGlobals(train::WindowSumOp cut);

  /// Replaces the loaded accumulators `sums` (one per `cut` value) by what
  /// the optimizer reads: one reduce-scatter of the parameters' gradients,
  /// one sum of the rest (the sample count).
  void reduceScatter(OpBuilder &b, Location loc, train::WindowSumOp cut,
                     SmallVectorImpl<Value> &sums);

  /// Clones `op`, which follows the cut, into the sharded apply graph. Fails,
  /// naming the op, if it is not elementwise on a shard.
  LogicalResult cloneSharded(OpBuilder &b, Operation &op, IRMapping &map);

  /// Rebuilds every updated parameter from its shards, in one collective,
  /// and stores it.
  void allGatherParams(OpBuilder &b, Location loc);

private:
  /// The shard of `v` for an op whose sharded operands are shards of
  /// `whole`; null if `v` has another shape.
  Value toShard(OpBuilder &b, Value v, RankedTensorType whole);
  bool isShardedState(FlatSymbolRefAttr name);

  ModuleOp module;
  int64_t ranks;
  /// Values that hold this rank's shard, with the type of the whole.
  llvm::DenseMap<Value, RankedTensorType> wholeTypes;
  /// train.shard of values that every rank holds whole, made once each.
  llvm::DenseMap<Value, Value> shardOf;
  /// Sharded values to gather into parameters, in program order.
  SmallVector<std::pair<Value, FlatSymbolRefAttr>> paramUpdates;
};

} // namespace mlir::cleave

#endif // CLEAVE_COMPILER_TRANSFORMS_SPLITSTEPSHARDING_H
