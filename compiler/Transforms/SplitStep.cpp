//===- SplitStep.cpp - Cleave a step into micro-step and apply graphs -----===//
//
// The mark_step pass. train.window_sum is the cut, in program order, as a
// mark_step call is in a LazyTensor training loop: what comes before it runs
// per micro-batch and accumulates, what comes after runs once per window.
// The ZeRO-1 form of the apply graph is built by SplitStepSharding.cpp.
//
//===----------------------------------------------------------------------===//

#include "compiler/Artifact/SchemaAttr.h"
#include "compiler/Artifact/SchemaDict.h"
#include "compiler/Transforms/Passes.h"
#include "compiler/Transforms/SplitStepSharding.h"
#include "compiler/Transforms/Utils.h"
#include "dialects/NN/IR/NNBuilders.h"
#include "dialects/NN/IR/NNOps.h"
#include "dialects/Train/IR/TrainOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::cleave {
#define GEN_PASS_DEF_CLEAVESPLITSTEP
#include "compiler/Transforms/Passes.h.inc"
} // namespace mlir::cleave

using namespace mlir;
using namespace mlir::cleave;
using train::GlobalKind;
using train::RankReduction;
using train::TrainDialect;

LogicalResult
mlir::cleave::verifyOptions(const CleaveSplitStepOptions &options,
                            function_ref<void(const Twine &)> error) {
  if (options.accumulate < 1) {
    error("accumulate must be >= 1, got " + Twine(options.accumulate));
    return failure();
  }
  if (options.windowSamples < 0) {
    error("window-samples must be >= 0 (0: accumulate whole micro-batches), "
          "got " +
          Twine(options.windowSamples));
    return failure();
  }
  if (options.ranks < 0) {
    error("ranks must be >= 0 (0: any number), got " + Twine(options.ranks));
    return failure();
  }
  if (options.shardOptimizerState &&
      (options.reduce != RankReduction::mean || options.ranks < 1)) {
    // Adasum combines each rank's own optimizer update, which needs the
    // whole optimizer state on every rank; the shards' size depends on R.
    error("shard-optimizer-state needs reduce=mean and ranks >= 1, got "
          "reduce=" +
          stringifyEnum(options.reduce) + " ranks=" + Twine(options.ranks));
    return failure();
  }
  if (options.reduceEveryMicroStep &&
      (options.reduce != RankReduction::mean || options.shardOptimizerState)) {
    error("reduce-every-micro-step needs reduce=mean without "
          "shard-optimizer-state");
    return failure();
  }
  return success();
}

namespace {

constexpr StringLiteral kMicroStepsCounter = TrainDialect::kMicroStepsGlobal;

/// Returns a short description of a value for diagnostics.
std::string describe(func::FuncOp f, Value v) {
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    for (StringRef attr : {TrainDialect::kInputAttr, TrainDialect::kHyperAttr})
      if (auto name = f.getArgAttrOfType<StringAttr>(arg.getArgNumber(), attr))
        return "argument '" + name.str() + "'";
    return "argument #" + std::to_string(arg.getArgNumber());
  }
  return "the result of '" + v.getDefiningOp()->getName().getStringRef().str() +
         "'";
}

/// The global `op` writes (train.store, train.accumulate), if any.
FlatSymbolRefAttr writtenGlobal(Operation *op) {
  if (auto store = dyn_cast<train::StoreOp>(op))
    return store.getGlobalAttr();
  if (auto acc = dyn_cast<train::AccumulateOp>(op))
    return acc.getGlobalAttr();
  return {};
}

/// The writes to globals the split has to order loads against: those before
/// the cut, which @micro_step runs once per micro-batch, and those after it
/// already cloned into @apply_step. The first write of each global.
struct GlobalWrites {
  llvm::DenseMap<StringAttr, Operation *> beforeCut;
  llvm::DenseMap<StringAttr, Operation *> inApply;
};

struct SplitStepPass : mlir::cleave::impl::CleaveSplitStepBase<SplitStepPass> {
  using CleaveSplitStepBase::CleaveSplitStepBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (failed(verifyOptions(options(), [&](const Twine &message) {
          module.emitError(message);
        })))
      return signalPassFailure();
    func::FuncOp step;
    for (auto f : module.getOps<func::FuncOp>())
      if (auto e = f->getAttrOfType<StringAttr>(TrainDialect::kEntryAttr))
        if (e.getValue() == "step")
          step = f;
    if (!step) {
      module.emitError("no training step (a function with train.entry = "
                       "\"step\"); run cleave-build-train-step first");
      return signalPassFailure();
    }
    if (failed(requireStraightLine(step, "cleave-split-step")) ||
        failed(split(step)))
      return signalPassFailure();
    step.erase();
  }

  CleaveSplitStepOptions options() const {
    CleaveSplitStepOptions o;
    o.accumulate = accumulate;
    o.windowSamples = windowSamples;
    o.reduce = reduce;
    o.ranks = ranks;
    o.shardOptimizerState = shardOptimizerState;
    o.reduceEveryMicroStep = reduceEveryMicroStep;
    return o;
  }

  LogicalResult split(func::FuncOp step) {
    Block &body = step.getBody().front();
    SmallVector<train::WindowSumOp> cuts(body.getOps<train::WindowSumOp>());
    if (cuts.size() != 1)
      return step.emitError("expected exactly one train.window_sum in @")
             << step.getSymName() << ", found " << cuts.size();
    train::WindowSumOp cut = cuts.front();

    llvm::DenseSet<Operation *> before;
    GlobalWrites writes;
    for (Operation &op : body) {
      if (&op == cut.getOperation())
        break;
      before.insert(&op);
      if (FlatSymbolRefAttr global = writtenGlobal(&op))
        writes.beforeCut.try_emplace(global.getAttr(), &op);
    }
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    for (Value v : ret.getOperands())
      if (!isa<BlockArgument>(v) && !before.contains(v.getDefiningOp()))
        return ret.emitOpError("returns ")
               << describe(step, v)
               << ", which is computed after the cut; a step returns "
                  "per-micro-batch values";

    OpBuilder b(step);
    SmallVector<FlatSymbolRefAttr> accumulators;
    if (failed(createAccumulators(b, cut, accumulators)))
      return failure();
    std::optional<ShardedApplyBuilder> sharding;
    if (shardOptimizerState) {
      sharding.emplace(getOperation(), ranks);
      if (failed(sharding->shardStateGlobals(cut)))
        return failure();
    }
    b.setInsertionPoint(step);
    if (failed(buildMicro(b, step, cut, before, accumulators)) ||
        failed(buildApply(b, step, cut, before, writes, accumulators,
                          sharding ? &*sharding : nullptr)))
      return failure();
    writeManifest(step);
    return success();
  }

  LogicalResult createAccumulators(OpBuilder &b, train::WindowSumOp cut,
                                   SmallVectorImpl<FlatSymbolRefAttr> &out) {
    ModuleOp module = getOperation();
    MLIRContext *ctx = b.getContext();
    // Accumulators go after the last global so state stays grouped.
    Operation *last = nullptr;
    for (auto g : module.getOps<train::GlobalOp>())
      last = g;
    if (last)
      b.setInsertionPointAfter(last);
    else
      b.setInsertionPointToStart(module.getBody());
    Location loc = cut.getLoc();
    for (auto [i, v] : llvm::enumerate(cut.getValues())) {
      std::string name;
      FlatSymbolRefAttr of;
      Attribute target =
          cut.getTargetsAttr() ? cut.getTargetsAttr()[i] : Attribute();
      if (auto sym = dyn_cast_or_null<FlatSymbolRefAttr>(target)) {
        name = (sym.getValue() + ".grad").str();
        of = sym;
      } else if (auto str = dyn_cast_or_null<StringAttr>(target)) {
        name = ("train." + str.getValue()).str();
      } else {
        name = "train.window_sum." + std::to_string(i);
      }
      if (module.lookupSymbol(name))
        return cut.emitOpError("accumulator name '") << name << "' is taken";
      train::GlobalOp::create(b, loc, name, GlobalKind::accumulator,
                              cast<RankedTensorType>(v.getType()), Attribute(),
                              of);
      out.push_back(FlatSymbolRefAttr::get(ctx, name));
    }
    if (!module.lookupSymbol(kMicroStepsCounter))
      train::GlobalOp::create(b, loc, kMicroStepsCounter, GlobalKind::counter,
                              RankedTensorType::get({}, b.getI64Type()),
                              Attribute(), FlatSymbolRefAttr());
    return success();
  }

  /// Builds an entry function with the arguments of `step` numbered in
  /// `args`, keeping their attributes. Maps them in `map`.
  func::FuncOp makeEntry(OpBuilder &b, func::FuncOp step, StringRef name,
                         ArrayRef<unsigned> args, TypeRange results,
                         IRMapping &map) {
    MLIRContext *ctx = b.getContext();
    SmallVector<Type> types;
    SmallVector<DictionaryAttr> attrs;
    for (unsigned i : args) {
      types.push_back(step.getArgumentTypes()[i]);
      attrs.push_back(step.getArgAttrDict(i));
    }
    auto f = func::FuncOp::create(b, step.getLoc(), name,
                                  FunctionType::get(ctx, types, results));
    f.setAllArgAttrs(attrs);
    f->setAttr(TrainDialect::kEntryAttr, StringAttr::get(ctx, name));
    Block *entry = f.addEntryBlock();
    for (auto [i, arg] : llvm::enumerate(args))
      map.map(step.getArgument(arg), entry->getArgument(i));
    return f;
  }

  LogicalResult buildMicro(OpBuilder &b, func::FuncOp step,
                           train::WindowSumOp cut,
                           const llvm::DenseSet<Operation *> &before,
                           ArrayRef<FlatSymbolRefAttr> accumulators) {
    SmallVector<unsigned> args;
    for (BlockArgument a : step.getArguments()) {
      bool usedBefore = llvm::any_of(a.getUsers(), [&](Operation *u) {
        return before.contains(u) || u == cut.getOperation() ||
               isa<func::ReturnOp>(u);
      });
      if (!usedBefore)
        continue;
      if (step.getArgAttr(a.getArgNumber(), TrainDialect::kHyperAttr))
        return step.emitError("hyperparameter ")
               << describe(step, a)
               << " is used before the cut; hyperparameters belong to the "
                  "apply step";
      args.push_back(a.getArgNumber());
    }
    IRMapping map;
    auto ret = cast<func::ReturnOp>(step.getBody().front().getTerminator());
    func::FuncOp micro =
        makeEntry(b, step, "micro_step", args, ret.getOperandTypes(), map);
    for (unsigned i = 0; i < ret.getNumOperands(); ++i)
      micro.setResultAttrs(i, step.getResultAttrDict(i));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&micro.getBody().front());
    for (Operation &op : step.getBody().front()) {
      if (&op == cut.getOperation())
        break;
      b.clone(op, map);
    }
    Location loc = cut.getLoc();
    SmallVector<Value> values;
    for (Value v : cut.getValues())
      values.push_back(map.lookup(v));
    if (reduceEveryMicroStep) {
      auto r = train::CrossRankReduceOp::create(b, loc,
                                                ValueRange(values).getTypes(),
                                                train::ReduceKind::sum, values);
      values.assign(r.getResults().begin(), r.getResults().end());
    }
    for (auto [v, acc] : llvm::zip(values, accumulators))
      train::AccumulateOp::create(b, loc, v, acc);
    incrementCounter(b, loc, kMicroStepsCounter);
    SmallVector<Value> results;
    for (Value v : ret.getOperands())
      results.push_back(map.lookup(v));
    func::ReturnOp::create(b, ret.getLoc(), results);
    return success();
  }

  void incrementCounter(OpBuilder &b, Location loc, StringRef name) {
    auto type = RankedTensorType::get({}, b.getI64Type());
    Value c = train::LoadOp::create(b, loc, type, name);
    Value one = arith::ConstantOp::create(
        b, loc,
        DenseElementsAttr::get(type, b.getI64IntegerAttr(1).getValue()));
    train::StoreOp::create(b, loc, arith::AddIOp::create(b, loc, c, one), name);
  }

  /// Whether `op`, defined before the cut, may be recomputed after it.
  bool isRematerializable(Operation *op) {
    if (isa<train::LoadOp>(op))
      return true;
    return isPure(op) && op->getNumRegions() == 0 &&
           !isa<train::WindowSumOp>(op);
  }

  /// Refuses a load that @apply_step would run where it reads another value
  /// than in the step: a global written before the cut holds, in
  /// @apply_step, what the last micro-step wrote, not the value of the one
  /// step that the load reads (nor a value of the window); and a load
  /// rematerialised after a write in @apply_step reads the updated value
  /// where the step read the old one.
  LogicalResult checkLoadInApply(train::LoadOp load, bool rematerialised,
                                 const GlobalWrites &writes, Operation *user) {
    StringAttr global = load.getGlobalAttr().getAttr();
    if (Operation *write = writes.beforeCut.lookup(global)) {
      InFlightDiagnostic diag = load.emitOpError("reads @")
                                << global.getValue();
      if (rematerialised)
        diag << ", which '" << write->getName()
             << "' writes before the cut, and its value is used after the "
                "cut: cleave-split-step would rematerialise the load in "
                "@apply_step, where it reads what the last micro-step wrote "
                "rather than this micro-batch's value; route the value "
                "through train.window_sum";
      else
        diag << " after the cut, but '" << write->getName()
             << "' writes it before the cut: in @apply_step the load would "
                "read what the last micro-step wrote, not a value of the "
                "whole window";
      diag.attachNote(write->getLoc()) << "written here, before the cut";
      if (rematerialised)
        diag.attachNote(user->getLoc()) << "used here, after the cut";
      return diag;
    }
    if (!rematerialised)
      return success();
    if (Operation *write = writes.inApply.lookup(global)) {
      InFlightDiagnostic diag =
          load.emitOpError("reads @")
          << global.getValue() << " before the cut, and its value is used "
          << "after '" << write->getName()
          << "' updates it: cleave-split-step would rematerialise the load in "
             "@apply_step after that write, where it reads the updated value "
             "instead of the one the step read; use the value before the "
             "write";
      diag.attachNote(write->getLoc()) << "written here, after the cut";
      diag.attachNote(user->getLoc()) << "used here, after the write";
      return diag;
    }
    return success();
  }

  /// Maps a value that `user`, after the cut, depends on: rematerialises
  /// what it can. Errors are reported at `user`, the op after the cut.
  LogicalResult remap(OpBuilder &b, func::FuncOp step, Value v,
                      const llvm::DenseSet<Operation *> &before,
                      const GlobalWrites &writes, IRMapping &map,
                      Operation *user) {
    if (map.contains(v))
      return success();
    if (isa<BlockArgument>(v))
      return user->emitOpError("depends on ")
             << describe(step, v)
             << " after the cut; data inputs belong to the micro-step";
    Operation *def = v.getDefiningOp();
    if (!before.contains(def))
      return success();
    if (!isRematerializable(def)) {
      InFlightDiagnostic diag = user->emitOpError("depends on ")
                                << describe(step, v)
                                << ", which is computed per micro-batch; "
                                   "route it through train.window_sum";
      diag.attachNote(def->getLoc()) << "computed here, before the cut";
      return diag;
    }
    if (auto load = dyn_cast<train::LoadOp>(def))
      if (failed(checkLoadInApply(load, /*rematerialised=*/true, writes, user)))
        return failure();
    for (Value operand : def->getOperands())
      if (failed(remap(b, step, operand, before, writes, map, user)))
        return failure();
    b.clone(*def, map);
    return success();
  }

  /// Builds @apply_step from the ops after the cut; `sharding` is set for
  /// ZeRO-1.
  LogicalResult buildApply(OpBuilder &b, func::FuncOp step,
                           train::WindowSumOp cut,
                           const llvm::DenseSet<Operation *> &before,
                           GlobalWrites &writes,
                           ArrayRef<FlatSymbolRefAttr> accumulators,
                           ShardedApplyBuilder *sharding) {
    SmallVector<unsigned> args;
    for (BlockArgument a : step.getArguments())
      if (step.getArgAttr(a.getArgNumber(), TrainDialect::kHyperAttr))
        args.push_back(a.getArgNumber());
    IRMapping map;
    func::FuncOp apply = makeEntry(b, step, "apply_step", args, {}, map);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&apply.getBody().front());
    Location loc = cut.getLoc();

    SmallVector<Value> sums;
    for (auto [v, acc] : llvm::zip(cut.getValues(), accumulators))
      sums.push_back(train::LoadOp::create(b, loc, v.getType(), acc));
    if (sharding) {
      sharding->reduceScatter(b, loc, cut, sums);
    } else if (reduce == RankReduction::mean && !reduceEveryMicroStep) {
      // Summing both the gradient sums and the sample counts keeps the
      // window exact across ranks: the division that follows is by the
      // number of samples all ranks saw.
      auto r = train::CrossRankReduceOp::create(
          b, loc, ValueRange(sums).getTypes(), train::ReduceKind::sum, sums);
      sums.assign(r.getResults().begin(), r.getResults().end());
    }
    for (auto [res, sum] : llvm::zip(cut.getResults(), sums))
      map.map(res, sum);

    SmallVector<train::StoreOp> paramStores;
    bool after = false;
    for (Operation &op : step.getBody().front()) {
      if (&op == cut.getOperation()) {
        after = true;
        continue;
      }
      if (!after || isa<func::ReturnOp>(op))
        continue;
      for (Value operand : op.getOperands())
        if (failed(remap(b, step, operand, before, writes, map, &op)))
          return failure();
      if (auto load = dyn_cast<train::LoadOp>(op))
        if (failed(
                checkLoadInApply(load, /*rematerialised=*/false, writes, &op)))
          return failure();
      if (FlatSymbolRefAttr global = writtenGlobal(&op))
        writes.inApply.try_emplace(global.getAttr(), &op);
      if (sharding) {
        if (failed(sharding->cloneSharded(b, op, map)))
          return failure();
        continue;
      }
      Operation *clone = b.clone(op, map);
      // Under Adasum each rank checks its own window; all ranks skip a
      // window that is not finite on one of them.
      if (auto check = dyn_cast<train::CheckFiniteOp>(clone))
        check.setAcrossRanks(reduce == RankReduction::adasum);
      if (auto store = dyn_cast<train::StoreOp>(clone))
        if (isParamGlobal(getOperation(), store.getGlobalAttr()))
          paramStores.push_back(store);
    }
    if (reduce == RankReduction::adasum &&
        failed(adasumDeltas(b, loc, paramStores)))
      return failure();
    if (sharding)
      sharding->allGatherParams(b, loc);

    // Start the next window from zero.
    for (auto [v, acc] : llvm::zip(cut.getValues(), accumulators))
      train::StoreOp::create(b, loc, nn::splatLike(b, loc, 0.0, v), acc);
    auto counterType = RankedTensorType::get({}, b.getI64Type());
    train::StoreOp::create(
        b, loc,
        arith::ConstantOp::create(
            b, loc,
            DenseElementsAttr::get(counterType,
                                   b.getI64IntegerAttr(0).getValue())),
        kMicroStepsCounter);
    func::ReturnOp::create(b, loc);
    return success();
  }

  /// Replaces `store new, @p` by `store old + adasum(new - old), @p`, with
  /// one collective for all parameters.
  LogicalResult adasumDeltas(OpBuilder &b, Location loc,
                             ArrayRef<train::StoreOp> stores) {
    if (stores.empty())
      return success();
    Block *entry = stores.front()->getBlock();
    OpBuilder::InsertionGuard guard(b);
    SmallVector<Value> olds, deltas;
    for (train::StoreOp s : stores) {
      b.setInsertionPointToStart(entry);
      Value old = train::LoadOp::create(b, loc, s.getValue().getType(),
                                        s.getGlobalAttr());
      olds.push_back(old);
      b.setInsertionPoint(s);
      deltas.push_back(nn::SubOp::create(b, loc, s.getValue(), old));
    }
    b.setInsertionPointAfter(stores.back());
    auto combined =
        train::CrossRankReduceOp::create(b, loc, ValueRange(deltas).getTypes(),
                                         train::ReduceKind::adasum, deltas);
    for (auto [store, old, d] :
         llvm::zip(stores, olds, combined.getResults())) {
      train::StoreOp s = store;
      train::StoreOp::create(b, loc, nn::AddOp::create(b, loc, old, d),
                             s.getGlobalAttr());
      s.erase();
    }
    return success();
  }

  /// The train.manifest entries: the defaults, the data-parallel settings
  /// that are not their defaults, and the warnings.
  DictionaryAttr manifestEntries(Builder &b,
                                 std::vector<::cleave::abi::Warning> warnings) {
    ::cleave::abi::Manifest m;
    m.accumulate = accumulate;
    m.reduce = toWire(RankReduction(reduce));
    if (windowSamples > 0)
      m.windowSamples = windowSamples;
    if (ranks > 0)
      m.ranks = ranks;
    if (shardOptimizerState)
      m.shardOptimizerState = true;
    if (reduceEveryMicroStep)
      m.reduceEveryMicroStep = true;
    m.warnings = std::move(warnings);
    return ::cleave::abi::toDict(b, m, {/*carriedOnly=*/true});
  }

  /// Records the defaults and what depends on the micro-batch split.
  void writeManifest(func::FuncOp step) {
    MLIRContext *ctx = &getContext();
    Builder b(ctx);
    std::vector<::cleave::abi::Warning> warnings;
    // A VJP may rebuild a forward op at the same location (dropout's mask):
    // report each source op once.
    llvm::DenseSet<std::pair<OperationName, Location>> reported;
    step.walk([&](Operation *op) {
      StringRef why;
      if (auto bn = dyn_cast<nn::BatchNormOp>(op); bn && bn.getTraining())
        why = "batch normalisation in training mode uses the statistics of "
              "each micro-batch, not of the whole window";
      else if (auto a = dyn_cast<nn::AttentionOp>(op);
               isa<nn::DropoutOp>(op) || (a && a.getSeed()))
        why = "dropout draws a new mask for each micro-batch, so the masks "
              "differ from one large batch";
      if (why.empty() || !reported.insert({op->getName(), op->getLoc()}).second)
        return;
      op->emitWarning(why);
      std::string loc;
      llvm::raw_string_ostream os(loc);
      op->getLoc().print(os);
      warnings.push_back(::cleave::abi::Warning{
          op->getName().getStringRef().str(), loc, why.str()});
    });
    getOperation()->setAttr(TrainDialect::kManifestAttr,
                            manifestEntries(b, std::move(warnings)));
  }
};

} // namespace
