//===- SplitStepSharding.cpp - ZeRO-1 apply graphs of cleave-split-step ---===//
//
// A tensor of n elements is cut, flattened, into `ranks` shards of
// ceil(n / ranks) elements (docs/design/distributed.md). Only elementwise
// ops may touch a shard: they compute this rank's part of the update
// without communicating, and the parameters are gathered once at the end.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/SplitStepSharding.h"
#include "dialects/NN/IR/NNOps.h"

#include "llvm/ADT/DenseSet.h"

using namespace mlir;
using namespace mlir::cleave;
using train::GlobalKind;

bool cleave::isParamGlobal(ModuleOp module, FlatSymbolRefAttr name) {
  auto g = module.lookupSymbol<train::GlobalOp>(name);
  return g && g.getKind() == GlobalKind::param;
}

/// The parameters whose gradients the window accumulates.
static llvm::SmallDenseSet<StringAttr> trainedParams(train::WindowSumOp cut) {
  llvm::SmallDenseSet<StringAttr> params;
  if (ArrayAttr targets = cut.getTargetsAttr())
    for (Attribute t : targets)
      if (auto sym = dyn_cast<FlatSymbolRefAttr>(t))
        params.insert(sym.getAttr());
  return params;
}

LogicalResult ShardedApplyBuilder::shardStateGlobals(train::WindowSumOp cut) {
  llvm::SmallDenseSet<StringAttr> params = trainedParams(cut);
  Builder b(module.getContext());
  for (auto g : module.getOps<train::GlobalOp>()) {
    if (g.getKind() != GlobalKind::state || !g.getOfAttr() ||
        !params.contains(g.getOfAttr().getAttr()))
      continue;
    // Every element of a shard must start as it would in the whole.
    if (Attribute init = g.getInitialValueAttr()) {
      auto initializer = dyn_cast<train::InitializerAttr>(init);
      if (!initializer ||
          (initializer.getKind() != train::InitKind::zeros &&
           initializer.getKind() != train::InitKind::ones &&
           initializer.getKind() != train::InitKind::constant))
        return g.emitOpError("cannot be sharded: its initial value is not "
                             "the same for every element");
    }
    g.setType(train::ShardOp::getShardType(g.getTensorType(), ranks));
    g.setShardsAttr(b.getI64IntegerAttr(ranks));
  }
  return success();
}

bool ShardedApplyBuilder::isShardedState(FlatSymbolRefAttr name) {
  auto g = module.lookupSymbol<train::GlobalOp>(name);
  return g && g.getShards();
}

void ShardedApplyBuilder::reduceScatter(OpBuilder &b, Location loc,
                                        train::WindowSumOp cut,
                                        SmallVectorImpl<Value> &sums) {
  llvm::SmallDenseSet<StringAttr> params = trainedParams(cut);
  ArrayAttr targets = cut.getTargetsAttr();
  SmallVector<unsigned> grads, others;
  for (unsigned i = 0; i < sums.size(); ++i) {
    auto sym = targets ? dyn_cast<FlatSymbolRefAttr>(targets[i])
                       : FlatSymbolRefAttr();
    (sym && params.contains(sym.getAttr()) ? grads : others).push_back(i);
  }
  auto select = [&](ArrayRef<unsigned> idx) {
    SmallVector<Value> values;
    for (unsigned i : idx)
      values.push_back(sums[i]);
    return values;
  };
  if (!grads.empty()) {
    SmallVector<Value> full = select(grads);
    SmallVector<Type> shardTypes;
    for (Value v : full)
      shardTypes.push_back(train::ShardOp::getShardType(
          cast<RankedTensorType>(v.getType()), ranks));
    auto rs = train::ReduceScatterOp::create(b, loc, shardTypes, full,
                                             b.getI64IntegerAttr(ranks));
    for (auto [i, r] : llvm::zip(grads, rs.getResults())) {
      wholeTypes[r] = cast<RankedTensorType>(sums[i].getType());
      sums[i] = r;
    }
  }
  if (!others.empty()) {
    SmallVector<Value> values = select(others);
    auto r = train::CrossRankReduceOp::create(b, loc,
                                              ValueRange(values).getTypes(),
                                              train::ReduceKind::sum, values);
    for (auto [i, v] : llvm::zip(others, r.getResults()))
      sums[i] = v;
  }
}

/// `v` itself if it is a shard of `whole` or a scalar (which broadcasts),
/// else train.shard of it, made once, right after `v` is defined. Null if
/// `v` has another shape: broadcasting a shard is not supported.
Value ShardedApplyBuilder::toShard(OpBuilder &b, Value v,
                                   RankedTensorType whole) {
  auto type = cast<RankedTensorType>(v.getType());
  if (auto it = wholeTypes.find(v); it != wholeTypes.end())
    return it->second == whole ? v : Value();
  if (type.getRank() == 0)
    return v;
  if (type != whole)
    return {};
  Value &s = shardOf[v];
  if (!s) {
    OpBuilder::InsertionGuard guard(b);
    if (Operation *def = v.getDefiningOp())
      b.setInsertionPointAfter(def);
    else
      b.setInsertionPointToStart(v.getParentBlock());
    s = train::ShardOp::create(b, v.getLoc(),
                               train::ShardOp::getShardType(whole, ranks), v,
                               b.getI64IntegerAttr(ranks));
    wholeTypes[s] = whole;
  }
  return s;
}

LogicalResult ShardedApplyBuilder::cloneSharded(OpBuilder &b, Operation &op,
                                                IRMapping &map) {
  if (auto load = dyn_cast<train::LoadOp>(op);
      load && isShardedState(load.getGlobalAttr())) {
    auto whole = cast<RankedTensorType>(load.getType());
    Value shard = train::LoadOp::create(
        b, load.getLoc(), train::ShardOp::getShardType(whole, ranks),
        load.getGlobalAttr());
    wholeTypes[shard] = whole;
    map.map(load.getResult(), shard);
    return success();
  }
  if (auto store = dyn_cast<train::StoreOp>(op)) {
    Value v = map.lookup(store.getValue());
    FlatSymbolRefAttr global = store.getGlobalAttr();
    bool shardedValue = wholeTypes.count(v);
    if (isShardedState(global)) {
      Value s = shardedValue
                    ? v
                    : toShard(b, v, cast<RankedTensorType>(v.getType()));
      train::StoreOp::create(b, store.getLoc(), s, global);
      return success();
    }
    if (!shardedValue) {
      b.clone(op, map);
      return success();
    }
    if (!isParamGlobal(module, global))
      return store.emitOpError("stores a shard of a sharded gradient into ")
             << global << ", which is neither a parameter nor its "
             << "optimizer state";
    paramUpdates.push_back({v, global});
    return success();
  }

  // Does the op see a shard?
  RankedTensorType whole;
  for (Value operand : op.getOperands())
    if (auto it = wholeTypes.find(map.lookupOrDefault(operand));
        it != wholeTypes.end())
      whole = it->second;
  if (!whole) {
    if (auto load = dyn_cast<train::LoadOp>(op))
      for (auto &[v, g] : paramUpdates)
        if (g == load.getGlobalAttr())
          return load.emitOpError("reads ")
                 << g << " after its sharded update; it is gathered at "
                 << "the end of the apply step";
    b.clone(op, map);
    return success();
  }

  // The window check: each rank checks its shards (and the values every
  // rank holds whole), and the verdicts are combined across ranks.
  if (isa<train::CheckFiniteOp>(op)) {
    cast<train::CheckFiniteOp>(b.clone(op, map)).setAcrossRanks(true);
    return success();
  }
  // The layer-wise optimizers scale each update by norms of the whole
  // parameter; a shard's norms would give each rank its own trust ratio.
  auto optimizer = dyn_cast<train::OptimizerOpInterface>(&op);
  if (optimizer && !optimizer.shardsElementwise())
    return op.emitOpError("needs the norms of whole parameters (the layer-wise "
                          "trust ratio); the ")
           << op.getName().stripDialect()
           << " optimizer cannot run with shard-optimizer-state (ZeRO-1)";
  auto clip = dyn_cast<train::ClipByGlobalNormOp>(op);
  bool elementwise = clip || optimizer || op.hasTrait<nn::Elementwise>();
  if (!elementwise)
    return op.emitOpError("uses a shard of a gradient or optimizer state "
                          "but is not elementwise; it cannot run on "
                          "sharded optimizer state");
  SmallVector<Value> operands;
  for (Value operand : op.getOperands()) {
    Value v = map.lookupOrDefault(operand);
    RankedTensorType target = whole;
    // Clipping takes several gradients of different shapes.
    if (clip) {
      auto it = wholeTypes.find(v);
      target = it != wholeTypes.end() ? it->second
                                      : cast<RankedTensorType>(v.getType());
    }
    Value s = toShard(b, v, target);
    if (!s)
      return op.emitOpError("combines a shard of ")
             << whole << " with " << v.getType()
             << "; only scalars broadcast against sharded values";
    operands.push_back(s);
  }
  Operation *clone = b.clone(op, map);
  clone->setOperands(operands);
  for (auto [orig, res] : llvm::zip(op.getResults(), clone->getResults())) {
    auto type = cast<RankedTensorType>(orig.getType());
    if (type.getRank() == 0)
      continue;
    if (!clip && type != whole)
      return op.emitOpError("has a result of type ")
             << type << ", not the type " << whole
             << " of the values it shards";
    res.setType(train::ShardOp::getShardType(type, ranks));
    wholeTypes[res] = type;
  }
  if (clip)
    cast<train::ClipByGlobalNormOp>(clone).setAcrossRanks(true);
  return success();
}

void ShardedApplyBuilder::allGatherParams(OpBuilder &b, Location loc) {
  if (paramUpdates.empty())
    return;
  SmallVector<Value> shards;
  SmallVector<Type> types;
  for (auto &[v, global] : paramUpdates) {
    shards.push_back(v);
    types.push_back(wholeTypes.lookup(v));
  }
  auto gathered = train::AllGatherOp::create(b, loc, types, shards,
                                             b.getI64IntegerAttr(ranks));
  for (auto [update, p] : llvm::zip(paramUpdates, gathered.getResults()))
    train::StoreOp::create(b, loc, p, update.second);
}
