//===- LowerEntryAbi.cpp - Entry points take the runtime ABI --------------===//
//
// Entry points receive the session's buffers. State is threaded through the
// function as SSA values (loads and stores become def-use edges) and written
// back once at the end, which is what lets one-shot bufferization update
// parameters, optimizer state and accumulators in place.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/Abi/EntryAbi.h"
#include "compiler/Conversion/LinalgBuilders.h"
#include "compiler/Conversion/Passes.h"
#include "dialects/Train/IR/TrainOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/MapVector.h"

namespace mlir::cleave {
#define GEN_PASS_DEF_CLEAVELOWERENTRYABI
#include "compiler/Conversion/Passes.h.inc"
} // namespace mlir::cleave

using namespace mlir;
using namespace mlir::cleave;

BlockArgument cleave::abiArgument(func::FuncOp f, StringRef role,
                                  StringRef name) {
  auto abi = f->getAttrOfType<ArrayAttr>(rt::RtDialect::kAbiAttr);
  if (!abi)
    return {};
  for (auto [i, a] : llvm::enumerate(abi)) {
    auto d = dyn_cast<DictionaryAttr>(a);
    auto r = d ? d.getAs<StringAttr>("role") : StringAttr();
    auto n = d ? d.getAs<StringAttr>("name") : StringAttr();
    // Argument 0 is the kernel context.
    if (r && r.getValue() == role && n && n.getValue() == name &&
        i + 1 < f.getNumArguments())
      return f.getArgument(i + 1);
  }
  return {};
}

StringRef cleave::abiRole(func::FuncOp f, Value arg) {
  auto a = dyn_cast<BlockArgument>(arg);
  auto abi = f->getAttrOfType<ArrayAttr>(rt::RtDialect::kAbiAttr);
  if (!a || !abi || a.getOwner() != &f.getBody().front() ||
      a.getArgNumber() == 0 || a.getArgNumber() > abi.size())
    return "";
  // Argument 0 is the kernel context.
  auto d = dyn_cast<DictionaryAttr>(abi[a.getArgNumber() - 1]);
  auto r = d ? d.getAs<StringAttr>("role") : StringAttr();
  return r ? r.getValue() : StringRef();
}
using train::TrainDialect;

namespace {

MemRefType memrefFor(Type tensor) {
  auto t = cast<RankedTensorType>(tensor);
  return MemRefType::get(t.getShape(), t.getElementType());
}

/// Folds `acc + v` into the kernel producing `v` when the kernel can add into
/// its destination: the destination becomes the accumulator.
Value foldIntoKernel(OpBuilder &b, Value v, Value acc) {
  auto kernel = v.getDefiningOp<rt::KernelOp>();
  if (!kernel || !v.hasOneUse() || kernel.getFlag("accumulate"))
    return {};
  if (kernel.getKind() != rt::KernelKind::matmul &&
      kernel.getKind() != rt::KernelKind::conv2d_bwd_weights)
    return {};
  if (kernel.getKind() == rt::KernelKind::matmul &&
      (kernel.getInputs().size() > 2 ||
       kernel.getConfig().get("activation")))
    return {};
  // The accumulator must be available where the kernel runs.
  if (auto def = acc.getDefiningOp())
    if (def->getBlock() == kernel->getBlock() && !def->isBeforeInBlock(kernel))
      return {};
  NamedAttrList config(kernel.getConfig());
  config.set("accumulate", b.getBoolAttr(true));
  kernel.setConfigAttr(config.getDictionary(b.getContext()));
  kernel.getOutputsMutable()[0].set(acc);
  return kernel.getResult(0);
}

/// Folds `acc + v` into a reduction producing `v` from zeros: the reduction
/// then starts from the accumulator (bias gradients reduce straight into
/// their accumulation buffers).
Value foldIntoReduction(Value v, Value acc) {
  auto generic = v.getDefiningOp<linalg::GenericOp>();
  if (!generic || !v.hasOneUse() || generic.getNumDpsInits() != 1 ||
      generic.getNumReductionLoops() == 0)
    return {};
  auto fill = generic.getDpsInits()[0].getDefiningOp<linalg::FillOp>();
  if (!fill || !matchPattern(fill.getInputs()[0], m_AnyZeroFloat()))
    return {};
  // The combiner must be a plain sum: acc' = x + acc.
  Block &body = generic.getRegion().front();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  auto add = yield.getOperand(0).getDefiningOp<arith::AddFOp>();
  BlockArgument out = body.getArguments().back();
  if (!add || (add.getLhs() != out && add.getRhs() != out))
    return {};
  for (Operation &op : body.without_terminator())
    for (Value operand : op.getOperands())
      if (operand == out && &op != add.getOperation())
        return {};
  if (auto def = acc.getDefiningOp())
    if (def->getBlock() == generic->getBlock() && !def->isBeforeInBlock(generic))
      return {};
  generic.getDpsInitsMutable()[0].set(acc);
  return generic.getResult(0);
}

struct LowerEntryAbiPass
    : cleave::impl::CleaveLowerEntryAbiBase<LowerEntryAbiPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> entries;
    for (auto f : module.getOps<func::FuncOp>())
      if (auto e = f->getAttrOfType<StringAttr>(TrainDialect::kEntryAttr)) {
        if (e.getValue() == "step") {
          f.emitError("@") << f.getSymName()
                           << " is an unsplit step; run cleave-split-step "
                              "before lowering";
          return signalPassFailure();
        }
        entries.push_back(f);
      }
    for (func::FuncOp f : entries)
      if (failed(lower(f)))
        return signalPassFailure();
  }

  LogicalResult lower(func::FuncOp f) {
    MLIRContext *ctx = f.getContext();
    if (!f.getBody().hasOneBlock())
      return f.emitError("entry points must be a single block");
    Block &body = f.getBody().front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    Builder attrs(ctx);

    // Globals this entry touches, in module order.
    llvm::MapVector<StringAttr, train::GlobalOp> globals;
    bool failedLookup = false;
    f.walk([&](Operation *op) {
      FlatSymbolRefAttr sym;
      if (auto l = dyn_cast<train::LoadOp>(op))
        sym = l.getGlobalAttr();
      else if (auto s = dyn_cast<train::StoreOp>(op))
        sym = s.getGlobalAttr();
      else if (auto a = dyn_cast<train::AccumulateOp>(op))
        sym = a.getGlobalAttr();
      if (!sym)
        return;
      auto g = SymbolTable::lookupNearestSymbolFrom<train::GlobalOp>(op, sym);
      if (!g) {
        op->emitOpError("refers to an unknown global ") << sym;
        failedLookup = true;
        return;
      }
      globals.insert({g.getSymNameAttr(), g});
    });
    if (failedLookup)
      return failure();
    SmallVector<train::GlobalOp> ordered;
    for (auto g : getOperation().getOps<train::GlobalOp>())
      if (globals.count(g.getSymNameAttr()))
        ordered.push_back(g);

    // Every argument and result becomes a buffer of the runtime's.
    auto isTensor = [](Type t) { return isa<RankedTensorType>(t); };
    if (!llvm::all_of(f.getArgumentTypes(), isTensor) ||
        !llvm::all_of(ret.getOperandTypes(), isTensor))
      return f.emitError("entry points take and return ranked tensors only");

    // New arguments: ctx, inputs/hypers, outputs, globals.
    SmallVector<Attribute> abi;
    unsigned numOld = f.getNumArguments();
    SmallVector<Type> newTypes = {LLVM::LLVMPointerType::get(ctx)};
    for (unsigned i = 0; i < numOld; ++i) {
      newTypes.push_back(memrefFor(f.getArgumentTypes()[i]));
      if (auto h =
              f.getArgAttrOfType<StringAttr>(i, TrainDialect::kHyperAttr)) {
        NamedAttrList entry;
        entry.set("role", attrs.getStringAttr("hyper"));
        entry.set("name", h);
        if (Attribute d = f.getArgAttr(i, TrainDialect::kDefaultAttr))
          entry.set("default", d);
        abi.push_back(entry.getDictionary(ctx));
      } else if (auto n = f.getArgAttrOfType<StringAttr>(
                     i, TrainDialect::kInputAttr)) {
        NamedAttrList entry;
        entry.set("role", attrs.getStringAttr("input"));
        entry.set("name", n);
        if (Attribute bound =
                f.getArgAttr(i, TrainDialect::kIndexBoundAttr))
          entry.set("index_bound", bound);
        if (Attribute ignore =
                f.getArgAttr(i, TrainDialect::kIgnoreIndexAttr))
          entry.set("ignore_index", ignore);
        if (f.getArgAttr(i, TrainDialect::kUnsignedAttr))
          entry.set("unsigned", attrs.getBoolAttr(true));
        if (f.getArgAttr(i, TrainDialect::kSampleWeightsAttr))
          entry.set("sample_weights", attrs.getBoolAttr(true));
        abi.push_back(entry.getDictionary(ctx));
      } else {
        return f.emitError("argument #")
               << i << " of an entry point has neither train.input nor "
                       "train.hyper";
      }
    }
    for (unsigned i = 0; i < ret.getNumOperands(); ++i) {
      newTypes.push_back(memrefFor(ret.getOperand(i).getType()));
      auto name = f.getResultAttrOfType<StringAttr>(i, TrainDialect::kOutputAttr);
      NamedAttrList entry;
      entry.set("role", attrs.getStringAttr("output"));
      entry.set("name",
                name ? name
                     : attrs.getStringAttr("output" + std::to_string(i)));
      if (f.getResultAttr(i, TrainDialect::kUnsignedAttr))
        entry.set("unsigned", attrs.getBoolAttr(true));
      abi.push_back(entry.getDictionary(ctx));
    }
    for (train::GlobalOp g : ordered) {
      newTypes.push_back(memrefFor(g.getType()));
      abi.push_back(attrs.getDictionaryAttr(
          {attrs.getNamedAttr("role", attrs.getStringAttr("global")),
           attrs.getNamedAttr("name", g.getSymNameAttr())}));
    }

    // Rebuild the block arguments.
    SmallVector<Location> locs(newTypes.size(), f.getLoc());
    Block *entry = new Block();
    entry->addArguments(newTypes, locs);
    f.getBody().push_front(entry);
    OpBuilder b(ctx);
    b.setInsertionPointToStart(entry);
    for (unsigned i = 0; i < numOld; ++i) {
      Value t = bufferization::ToTensorOp::create(
          b, f.getLoc(), body.getArgument(i).getType(), entry->getArgument(1 + i),
          /*restrict=*/true, /*writable=*/false);
      body.getArgument(i).replaceAllUsesWith(t);
    }
    unsigned firstOutput = 1 + numOld;
    unsigned firstGlobal = firstOutput + ret.getNumOperands();
    // Splice the old body after the argument reads.
    entry->getOperations().splice(entry->end(), body.getOperations());
    body.erase();

    // Which globals are written here.
    llvm::DenseSet<StringAttr> written;
    f.walk([&](Operation *op) {
      if (auto s = dyn_cast<train::StoreOp>(op))
        written.insert(s.getGlobalAttr().getAttr());
      else if (auto a = dyn_cast<train::AccumulateOp>(op))
        written.insert(a.getGlobalAttr().getAttr());
    });

    // Initial values, read at the top.
    llvm::DenseMap<StringAttr, Value> current, initial;
    b.setInsertionPointToStart(entry);
    for (auto [i, g] : llvm::enumerate(ordered)) {
      Value t = bufferization::ToTensorOp::create(
          b, f.getLoc(), g.getType(), entry->getArgument(firstGlobal + i),
          /*restrict=*/true,
          /*writable=*/written.contains(g.getSymNameAttr()));
      current[g.getSymNameAttr()] = initial[g.getSymNameAttr()] = t;
    }

    // Thread state through the body.
    for (Operation &op : llvm::make_early_inc_range(*entry)) {
      if (auto load = dyn_cast<train::LoadOp>(op)) {
        load.replaceAllUsesWith(current[load.getGlobalAttr().getAttr()]);
        load.erase();
      } else if (auto store = dyn_cast<train::StoreOp>(op)) {
        StringAttr name = store.getGlobalAttr().getAttr();
        b.setInsertionPoint(store);
        current[name] = storedValue(b, store.getValue(), current[name]);
        store.erase();
      } else if (auto acc = dyn_cast<train::AccumulateOp>(op)) {
        StringAttr name = acc.getGlobalAttr().getAttr();
        b.setInsertionPoint(acc);
        Value cur = current[name];
        Value folded = foldIntoKernel(b, acc.getValue(), cur);
        if (!folded)
          folded = foldIntoReduction(acc.getValue(), cur);
        current[name] =
            folded ? folded
                   : updateInPlace(b, acc.getLoc(), {acc.getValue()}, {cur},
                                   [](OpBuilder &nb, Location l,
                                      ValueRange a) -> SmallVector<Value> {
                                     return {arith::AddFOp::create(nb, l, a[1],
                                                                   a[0])};
                                   })
                         .front();
        acc.erase();
      }
    }

    // Write back outputs and modified globals.
    b.setInsertionPoint(ret);
    for (auto [i, v] : llvm::enumerate(ret.getOperands()))
      bufferization::MaterializeInDestinationOp::create(
          b, ret.getLoc(), TypeRange{}, v, entry->getArgument(firstOutput + i),
          /*restrict=*/true, /*writable=*/true);
    for (auto [i, g] : llvm::enumerate(ordered)) {
      StringAttr name = g.getSymNameAttr();
      if (!written.contains(name))
        continue;
      bufferization::MaterializeInDestinationOp::create(
          b, ret.getLoc(), TypeRange{}, current[name],
          entry->getArgument(firstGlobal + i), /*restrict=*/true,
          /*writable=*/true);
    }
    func::ReturnOp::create(b, ret.getLoc());
    ret.erase();

    f.setFunctionType(FunctionType::get(ctx, newTypes, {}));
    SmallVector<DictionaryAttr> noAttrs(newTypes.size(),
                                        DictionaryAttr::get(ctx));
    f.setAllArgAttrs(noAttrs);
    f.setAllResultAttrs(ArrayRef<DictionaryAttr>{});
    f->setAttr(rt::RtDialect::kAbiAttr, attrs.getArrayAttr(abi));
    return success();
  }

  /// The new value of a global after `store value`: a constant splat is
  /// filled into the current buffer rather than copied from a constant.
  Value storedValue(OpBuilder &b, Value value, Value cur) {
    auto cst = value.getDefiningOp<arith::ConstantOp>();
    auto splat = cst ? dyn_cast<SplatElementsAttr>(cst.getValue())
                     : SplatElementsAttr();
    if (!splat)
      return value;
    Value scalar = arith::ConstantOp::create(
        b, value.getLoc(), cast<TypedAttr>(splat.getSplatValue<Attribute>()));
    return linalg::FillOp::create(b, value.getLoc(), scalar, cur).getResult(0);
  }
};

} // namespace
