//===- BuildTrainStep.cpp - State, gradients and optimizer in one step ----===//
//
// Builds @train_step, one complete training step over one batch, with a
// train.window_sum where the micro-step/apply cut will go, and @eval_step.
// Everything the optimizer is tuned by is an argument, so the runtime can
// change it without recompiling.
//
//===----------------------------------------------------------------------===//

#include "compiler/Artifact/SchemaDict.h"
#include "compiler/Transforms/Passes.h"
#include "compiler/Transforms/Utils.h"
#include "dialects/NN/IR/NNBuilders.h"
#include "dialects/NN/IR/NNOps.h"
#include "dialects/Train/IR/TrainOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/StringSwitch.h"
#include <cmath>
#include <cstdio>
#include <optional>
#include <tuple>

namespace mlir::cleave {
#define GEN_PASS_DEF_CLEAVEBUILDTRAINSTEP
#include "compiler/Transforms/Passes.h.inc"
} // namespace mlir::cleave

using namespace mlir;
using namespace mlir::cleave;
using train::GlobalKind;
using train::OptimizerKind;
using train::TrainDialect;

LogicalResult
mlir::cleave::verifyOptions(const CleaveBuildTrainStepOptions &options,
                            function_ref<void(const Twine &)> error) {
  // PyTorch's optimizers' rules: every default is finite and >= 0, and the
  // Adam/LAMB betas and the RMSprop alpha are < 1 (PyTorch allows alpha = 1,
  // which never updates the square average from zero: every step divides
  // by eps). The runtime checks the values it is given the same
  // way.
  for (auto [name, value, below] :
       {std::tuple{"lr", options.lr, HUGE_VAL},
        std::tuple{"momentum", options.momentum, HUGE_VAL},
        std::tuple{"beta1", options.beta1, 1.0},
        std::tuple{"beta2", options.beta2, 1.0},
        std::tuple{"eps", options.eps, HUGE_VAL},
        std::tuple{"alpha", options.alpha, 1.0},
        std::tuple{"lr-decay", options.lrDecay, HUGE_VAL},
        std::tuple{"eta", options.eta, HUGE_VAL},
        std::tuple{"weight-decay", options.weightDecay, HUGE_VAL},
        std::tuple{"clip-norm", options.clipNorm, HUGE_VAL}}) {
    if (value >= 0 && value < below)
      continue;
    char text[32];
    std::snprintf(text, sizeof(text), "%g", value);
    error(Twine(name) + "=" + text + " is out of range; " +
          (below == 1.0 ? "expected 0 <= value < 1"
                        : "expected a finite value >= 0"));
    return failure();
  }
  return success();
}

namespace {

/// What an argument of the loss or model function is.
struct ArgRole {
  enum Kind { Data, Param, Buffer, Rng } kind = Data;
  std::string name;
};

ArgRole classify(func::FuncOp f, unsigned i) {
  if (auto p = f.getArgAttrOfType<StringAttr>(i, TrainDialect::kParamAttr))
    return {ArgRole::Param, p.str()};
  if (auto p = f.getArgAttrOfType<StringAttr>(i, TrainDialect::kBufferAttr))
    return {ArgRole::Buffer, p.str()};
  if (f.getArgAttr(i, TrainDialect::kRngAttr))
    return {ArgRole::Rng, TrainDialect::kRngGlobal.str()};
  return {};
}

/// The exclusion rule of the layer-wise optimizers (lamb, lars): tensors of
/// rank <= 1 (biases, normalisation scales and shifts) take no weight decay
/// and no trust ratio, the common large-batch practice
/// (docs/design/optimizers.md); the rank is what the graph knows without
/// layer names.
bool isExcludedFromAdaptation(Type type) {
  return cast<RankedTensorType>(type).getRank() <= 1;
}

/// The optimizer's per-parameter state slots and hyperparameters, with
/// their defaults.
struct StepSpec {
  SmallVector<StringRef> state;
  SmallVector<std::pair<StringRef, double>> hypers;
};

struct BuildTrainStepPass
    : mlir::cleave::impl::CleaveBuildTrainStepBase<BuildTrainStepPass> {
  using CleaveBuildTrainStepBase::CleaveBuildTrainStepBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (failed(verifyOptions(options(), [&](const Twine &message) {
          module.emitError(message);
        })))
      return signalPassFailure();
    if (inference)
      return buildInference(module);
    StepSpec spec = optimizerSpec();
    func::FuncOp grad, model = module.lookupSymbol<func::FuncOp>(this->model);
    for (auto f : module.getOps<func::FuncOp>())
      if (auto of = f->getAttrOfType<FlatSymbolRefAttr>(
              TrainDialect::kGradientOfAttr))
        if (of.getValue() == "loss")
          grad = f;
    if (!grad) {
      module.emitError("no gradient of @loss; run cleave-attach-loss and "
                       "cleave-autodiff first");
      return signalPassFailure();
    }
    if (!model) {
      module.emitError("no model function @") << this->model;
      return signalPassFailure();
    }
    if (failed(requireStraightLine(grad, "cleave-build-train-step")) ||
        failed(requireStraightLine(model, "cleave-build-train-step")))
      return signalPassFailure();

    OpBuilder b(module.getBodyRegion());
    b.setInsertionPointToStart(module.getBody());
    if (failed(createGlobals(b, grad, spec, /*training=*/true)))
      return signalPassFailure();
    b.setInsertionPoint(grad);
    if (failed(buildStep(b, grad, spec)) ||
        failed(buildEval(b, model, /*allOutputs=*/false)))
      return signalPassFailure();
    if (auto loss = module.lookupSymbol<func::FuncOp>("loss"))
      loss.erase();
    grad.erase();
    model.erase();
  }

  /// A forward-only module: the globals of the parameters and buffers and
  /// @eval_step returning every output of the model.
  void buildInference(ModuleOp module) {
    auto model = module.lookupSymbol<func::FuncOp>(this->model);
    if (!model) {
      module.emitError("no model function @") << this->model;
      return signalPassFailure();
    }
    if (failed(requireStraightLine(model, "cleave-build-train-step")))
      return signalPassFailure();
    OpBuilder b(module.getBodyRegion());
    b.setInsertionPointToStart(module.getBody());
    if (failed(createGlobals(b, model, StepSpec(), /*training=*/false)))
      return signalPassFailure();
    b.setInsertionPoint(model);
    if (failed(buildEval(b, model, /*allOutputs=*/true)))
      return signalPassFailure();
    model.erase();
    ::cleave::abi::Manifest manifest;
    manifest.kind = ::cleave::abi::ArtifactKind::inference;
    module->setAttr(TrainDialect::kManifestAttr,
                    ::cleave::abi::toDict(b, manifest, {/*carriedOnly=*/true}));
  }

  CleaveBuildTrainStepOptions options() const {
    CleaveBuildTrainStepOptions o;
    o.model = model;
    o.optimizer = optimizer;
    o.lr = lr;
    o.momentum = momentum;
    o.beta1 = beta1;
    o.beta2 = beta2;
    o.eps = eps;
    o.alpha = alpha;
    o.lrDecay = lrDecay;
    o.eta = eta;
    o.weightDecay = weightDecay;
    o.clipNorm = clipNorm;
    o.inference = inference;
    o.checkFinite = checkFinite;
    return o;
  }

  /// The default of one of an optimizer's own hyperparameters: the pass's
  /// option of that name (--momentum, --beta1, ...).
  double hyperDefault(StringRef name) {
    std::optional<double> value =
        llvm::StringSwitch<std::optional<double>>(name)
            .Case("momentum", double(momentum))
            .Case("beta1", double(beta1))
            .Case("beta2", double(beta2))
            .Case("eps", double(eps))
            .Case("alpha", double(alpha))
            .Case("lr_decay", double(lrDecay))
            .Case("eta", double(eta))
            .Default(std::nullopt);
    if (!value)
      llvm::report_fatal_error(llvm::Twine("optimizer hyperparameter '") +
                               name + "' has no option for its default");
    return *value;
  }

  /// The state and hyperparameters of the optimizer (its op's interface),
  /// lr first, then its own, weight_decay, and clip_norm when clipping.
  StepSpec optimizerSpec() {
    train::OptimizerSpec optimizer = train::getOptimizerSpec(this->optimizer);
    StepSpec s;
    s.state.assign(optimizer.stateSlots.begin(), optimizer.stateSlots.end());
    s.hypers.push_back({"lr", lr});
    for (StringRef name : optimizer.ownHyperparameters)
      s.hypers.push_back({name, hyperDefault(name)});
    s.hypers.push_back({"weight_decay", weightDecay});
    if (clipNorm > 0)
      s.hypers.push_back({"clip_norm", clipNorm});
    return s;
  }

  /// The globals of `grad`'s state arguments; for training also the
  /// optimizer state, the dropout seed and the step counter.
  LogicalResult createGlobals(OpBuilder &b, func::FuncOp grad,
                              const StepSpec &spec, bool training) {
    Location loc = grad.getLoc();
    MLIRContext *ctx = b.getContext();
    auto add = [&](StringRef name, GlobalKind kind, Type type, Attribute init,
                   FlatSymbolRefAttr of) -> LogicalResult {
      if (SymbolTable::lookupSymbolIn(getOperation(), name))
        return grad.emitError("two pieces of state are named '") << name << "'";
      auto tensorType = dyn_cast<RankedTensorType>(type);
      if (!tensorType)
        return grad.emitError("state '")
               << name << "' must be a ranked tensor, got " << type;
      train::GlobalOp::create(b, loc, name, kind, tensorType, init, of);
      return success();
    };
    for (unsigned i = 0; i < grad.getNumArguments(); ++i) {
      ArgRole role = classify(grad, i);
      Type type = grad.getArgumentTypes()[i];
      Attribute init = grad.getArgAttr(i, TrainDialect::kInitAttr);
      if (role.kind == ArgRole::Param) {
        if (!init)
          return grad.emitError("parameter '")
                 << role.name << "' has no initializer (train.init)";
        if (failed(add(role.name, GlobalKind::param, type, init, {})))
          return failure();
        auto of = FlatSymbolRefAttr::get(ctx, role.name);
        for (StringRef slot : spec.state)
          if (failed(add(role.name + "." + slot.str(), GlobalKind::state, type,
                         {}, of)))
            return failure();
      } else if (role.kind == ArgRole::Buffer) {
        if (failed(add(role.name, GlobalKind::buffer, type, init, {})))
          return failure();
      } else if (role.kind == ArgRole::Rng && training) {
        // The seed is advanced with integer arithmetic on a tensor<i64>.
        if (type != RankedTensorType::get({}, b.getI64Type()))
          return grad.emitError("the train.rng argument must be tensor<i64>, "
                                "got ")
                 << type;
        if (failed(add(TrainDialect::kRngGlobal, GlobalKind::counter, type, {},
                       {})))
          return failure();
      }
    }
    if (!training)
      return success();
    auto counterType = RankedTensorType::get({}, b.getI64Type());
    if (failed(add(TrainDialect::kStepGlobal, GlobalKind::counter, counterType,
                   {}, {})))
      return failure();
    if (!checkFinite)
      return success();
    if (failed(add(TrainDialect::kNonfiniteGlobal, GlobalKind::counter,
                   counterType, {}, {})))
      return failure();
    return add(TrainDialect::kSkippedStepsGlobal, GlobalKind::counter,
               counterType, {}, {});
  }

  /// Loads state for the arguments of `src` and maps data arguments to the
  /// matching arguments of `dst` (by train.input name).
  LogicalResult mapArguments(OpBuilder &b, func::FuncOp src, func::FuncOp dst,
                             IRMapping &map, bool advanceRng) {
    Location loc = src.getLoc();
    for (unsigned i = 0; i < src.getNumArguments(); ++i) {
      ArgRole role = classify(src, i);
      Value arg = src.getArgument(i);
      switch (role.kind) {
      case ArgRole::Param:
      case ArgRole::Buffer:
        map.map(arg, train::LoadOp::create(b, loc, arg.getType(), role.name));
        break;
      case ArgRole::Rng: {
        if (!advanceRng) {
          map.map(arg, arith::ConstantOp::create(
                           b, loc,
                           DenseElementsAttr::get(
                               cast<ShapedType>(arg.getType()),
                               b.getI64IntegerAttr(0).getValue())));
          break;
        }
        Value seed = train::LoadOp::create(b, loc, arg.getType(),
                                           TrainDialect::kRngGlobal);
        Value one = arith::ConstantOp::create(
            b, loc,
            DenseElementsAttr::get(cast<ShapedType>(arg.getType()),
                                   b.getI64IntegerAttr(1).getValue()));
        train::StoreOp::create(b, loc, arith::AddIOp::create(b, loc, seed, one),
                               TrainDialect::kRngGlobal);
        map.map(arg, seed);
        break;
      }
      case ArgRole::Data: {
        // Without a name, a null attribute would match any unnamed argument.
        auto name =
            src.getArgAttrOfType<StringAttr>(i, TrainDialect::kInputAttr);
        if (!name)
          return src.emitError("data input #") << i << " has no train.input";
        unsigned j = 0;
        while (j < dst.getNumArguments() &&
               dst.getArgAttr(j, TrainDialect::kInputAttr) != name)
          ++j;
        if (j == dst.getNumArguments())
          return src.emitError("data input #")
                 << i << " ('" << name.getValue()
                 << "') has no matching entry input";
        map.map(arg, dst.getArgument(j));
        break;
      }
      }
    }
    return success();
  }

  LogicalResult buildStep(OpBuilder &b, func::FuncOp grad,
                          const StepSpec &spec) {
    MLIRContext *ctx = b.getContext();
    Location loc = grad.getLoc();

    // Signature: data inputs, then hyperparameters.
    SmallVector<Type> argTypes;
    SmallVector<DictionaryAttr> argAttrs;
    Type elt;
    for (unsigned i = 0; i < grad.getNumArguments(); ++i) {
      ArgRole role = classify(grad, i);
      if (role.kind == ArgRole::Data) {
        if (!grad.getArgAttr(i, TrainDialect::kInputAttr))
          return grad.emitError("data input #")
                 << i
                 << " of @loss has no train.input name; run "
                    "cleave-attach-loss";
        argTypes.push_back(grad.getArgumentTypes()[i]);
        NamedAttrList attrs;
        attrs.set(TrainDialect::kInputAttr,
                  grad.getArgAttr(i, TrainDialect::kInputAttr));
        for (StringRef name :
             {TrainDialect::kIgnoreIndexAttr, TrainDialect::kUnsignedAttr,
              TrainDialect::kSampleWeightsAttr})
          if (Attribute a = grad.getArgAttr(i, name))
            attrs.set(name, a);
        argAttrs.push_back(attrs.getDictionary(ctx));
      } else if (role.kind == ArgRole::Param) {
        Type t = getElementTypeOrSelf(grad.getArgumentTypes()[i]);
        if (elt && t != elt)
          return grad.emitError("parameters mix element types (")
                 << elt << " and " << t << " for '" << role.name
                 << "'); a training step has one float type";
        elt = t;
      }
    }
    if (!elt)
      return grad.emitError("@loss has no parameter");
    // The window's sums, the normalisation and the update mix the
    // parameters' type with that of the data, the sample weights and the
    // loss (an f64 prediction gets f64 weights): one float type throughout.
    for (unsigned i = 0; i < grad.getNumArguments(); ++i) {
      Type t = getElementTypeOrSelf(grad.getArgumentTypes()[i]);
      if (classify(grad, i).kind != ArgRole::Data || !isa<FloatType>(t) ||
          t == elt)
        continue;
      auto name =
          grad.getArgAttrOfType<StringAttr>(i, TrainDialect::kInputAttr);
      return grad.emitError("input '")
             << (name ? name.getValue() : StringRef("?")) << "' is " << t
             << " but the parameters are " << elt
             << "; a training step has one float type (the prediction, the "
                "float inputs and the parameters must agree)";
    }
    if (Type t = getElementTypeOrSelf(grad.getResultTypes()[0]); t != elt)
      return grad.emitError("the loss is ")
             << t << " but the parameters are " << elt
             << "; a training step has one float type";
    unsigned firstHyper = argTypes.size();
    auto scalarType = RankedTensorType::get({}, elt);
    for (auto [name, value] : spec.hypers) {
      argTypes.push_back(scalarType);
      argAttrs.push_back(DictionaryAttr::get(
          ctx, {NamedAttribute(StringAttr::get(ctx, TrainDialect::kHyperAttr),
                               StringAttr::get(ctx, name)),
                NamedAttribute(StringAttr::get(ctx, TrainDialect::kDefaultAttr),
                               b.getF64FloatAttr(value))}));
    }
    auto lossType = grad.getResultTypes()[0];
    auto step = func::FuncOp::create(
        b, loc, "train_step", FunctionType::get(ctx, argTypes, {lossType}));
    step.setAllArgAttrs(argAttrs);
    step.setResultAttr(0, TrainDialect::kOutputAttr,
                       StringAttr::get(ctx, "loss"));
    step->setAttr(TrainDialect::kEntryAttr, StringAttr::get(ctx, "step"));
    auto hyper = [&](StringRef name) -> Value {
      for (unsigned i = firstHyper; i < step.getNumArguments(); ++i)
        if (step.getArgAttrOfType<StringAttr>(i, TrainDialect::kHyperAttr)
                .getValue() == name)
          return step.getArgument(i);
      return {};
    };

    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(step.addEntryBlock());

    // Forward and backward, per micro-batch.
    IRMapping map;
    if (failed(mapArguments(b, grad, step, map, /*advanceRng=*/true)))
      return failure();
    for (Operation &op : grad.getBody().front().without_terminator())
      b.clone(op, map);
    auto ret = cast<func::ReturnOp>(grad.getBody().front().getTerminator());
    Value loss = map.lookup(ret.getOperand(0));
    SmallVector<Value> grads;
    SmallVector<Attribute> targets;
    for (unsigned i = 1; i < ret.getNumOperands(); ++i) {
      Value v = map.lookup(ret.getOperand(i));
      if (auto buf = grad.getResultAttrOfType<StringAttr>(
              i, TrainDialect::kBufferAttr)) {
        train::StoreOp::create(b, loc, v, buf.getValue());
      } else if (auto of = grad.getResultAttrOfType<StringAttr>(
                     i, TrainDialect::kGradOfAttr)) {
        grads.push_back(v);
        targets.push_back(FlatSymbolRefAttr::get(ctx, of.getValue()));
      }
    }
    // cleave-attach-loss's weights, which it marks; at this level the name
    // is reserved for them, so an unmarked one (hand-written IR) gets the
    // mark that makes the runtime fill it.
    Value weights;
    for (unsigned i = 0; i < firstHyper; ++i)
      if (step.getArgAttrOfType<StringAttr>(i, TrainDialect::kInputAttr)
              .getValue() == "weights") {
        weights = step.getArgument(i);
        step.setArgAttr(i, TrainDialect::kSampleWeightsAttr,
                        UnitAttr::get(ctx));
      }
    if (!weights)
      return grad.emitError("@loss has no 'weights' input; run "
                            "cleave-attach-loss");
    Value count =
        nn::ReduceSumOp::create(b, loc, weights, ArrayRef<int64_t>{}, false);

    // The cut: everything below runs once per window.
    SmallVector<Value> sums(grads);
    if (checkFinite) {
      sums.push_back(loss);
      targets.push_back(StringAttr::get(ctx, "loss"));
    }
    sums.push_back(count);
    targets.push_back(StringAttr::get(ctx, "samples"));
    auto window = train::WindowSumOp::create(
        b, loc, ValueRange(sums).getTypes(), sums, b.getArrayAttr(targets));
    Value samples = window.getResults().back();
    SmallVector<Value> normalised;
    for (Value g : window.getResults().take_front(grads.size()))
      normalised.push_back(nn::DivOp::create(b, loc, g, samples));
    if (Value maxNorm = hyper("clip_norm")) {
      auto clip = train::ClipByGlobalNormOp::create(
          b, loc, ValueRange(normalised).getTypes(), maxNorm.getType(),
          normalised, maxNorm);
      normalised.assign(clip.getResults().begin(), clip.getResults().end());
    }

    auto counterType = RankedTensorType::get({}, b.getI64Type());
    Value t =
        train::LoadOp::create(b, loc, counterType, TrainDialect::kStepGlobal);
    Value one = arith::ConstantOp::create(
        b, loc,
        DenseElementsAttr::get(counterType, b.getI64IntegerAttr(1).getValue()));
    // 1 when the update is taken, 0 when the window is skipped.
    Value ok;
    Value advance = one;
    if (checkFinite) {
      ok = checkWindow(b, loc, window.getResults(), elt);
      advance = arith::FPToSIOp::create(b, loc, counterType, ok);
      Value skipped = train::LoadOp::create(b, loc, counterType,
                                            TrainDialect::kSkippedStepsGlobal);
      train::StoreOp::create(
          b, loc,
          arith::AddIOp::create(b, loc, skipped,
                                arith::SubIOp::create(b, loc, one, advance)),
          TrainDialect::kSkippedStepsGlobal);
    }
    Value t1 = arith::AddIOp::create(b, loc, t, advance);
    train::StoreOp::create(b, loc, t1, TrainDialect::kStepGlobal);
    // Parameters and optimizer state keep their values in a skipped window.
    auto store = [&](Value updated, Value old, StringRef global) {
      if (ok)
        updated = nn::WhereOp::create(b, loc, ok, updated, old);
      train::StoreOp::create(b, loc, updated, global);
    };

    const train::OptimizerSpec optimizerOp = train::getOptimizerSpec(optimizer);
    for (auto [g, target] : llvm::zip(normalised, targets)) {
      StringRef name = cast<FlatSymbolRefAttr>(target).getValue();
      Type type = g.getType();
      Value p = train::LoadOp::create(b, loc, type, name);
      auto slot = [&](StringRef s) { return (name + "." + s).str(); };
      SmallVector<Value> state;
      for (StringRef s : spec.state)
        state.push_back(train::LoadOp::create(b, loc, type, slot(s)));
      train::OptimizerUpdate update{
          p, g, state, t1, hyper, optimizer, isExcludedFromAdaptation(type)};
      SmallVector<Value> updated = optimizerOp.buildUpdate(b, loc, update);
      store(updated[0], p, name);
      for (auto [s, old, value] :
           llvm::zip_equal(spec.state, state, ArrayRef(updated).drop_front()))
        store(value, old, slot(s));
    }
    func::ReturnOp::create(b, loc, loss);
    return success();
  }

  /// The window's verdict, in `elt`: 1 when every element of every window
  /// sum is finite, else 0. `train.nonfinite` gets 1 + the position of the
  /// first sum that is not (0 if none). cleave-split-step makes the check
  /// span all ranks where their sums differ (Adasum, ZeRO-1).
  Value checkWindow(OpBuilder &b, Location loc, ValueRange windowSums,
                    Type elt) {
    Value first = train::CheckFiniteOp::create(b, loc, windowSums,
                                               /*across_ranks=*/false);
    train::StoreOp::create(b, loc, first, TrainDialect::kNonfiniteGlobal);
    auto scalarType = RankedTensorType::get({}, elt);
    Value zero = arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(scalarType, FloatAttr::get(elt, 0.0)));
    return nn::CompareOp::create(
        b, loc, nn::ComparePredicate::eq,
        arith::SIToFPOp::create(b, loc, scalarType, first), zero, elt);
  }

  /// @eval_step: the model's prediction (its first result that is not a
  /// buffer), or with `allOutputs` every such result, each named by its
  /// `train.output` (the first one "prediction" if it has none).
  LogicalResult buildEval(OpBuilder &b, func::FuncOp model, bool allOutputs) {
    MLIRContext *ctx = b.getContext();
    Location loc = model.getLoc();
    SmallVector<Type> argTypes;
    SmallVector<DictionaryAttr> argAttrs;
    for (unsigned i = 0; i < model.getNumArguments(); ++i)
      if (classify(model, i).kind == ArgRole::Data) {
        argTypes.push_back(model.getArgumentTypes()[i]);
        argAttrs.push_back(model.getArgAttrDict(i));
      }
    SmallVector<unsigned> outputs;
    for (unsigned i = 0; i < model.getNumResults(); ++i)
      if (!model.getResultAttr(i, TrainDialect::kBufferAttr) &&
          (allOutputs || outputs.empty()))
        outputs.push_back(i);
    if (outputs.empty())
      return model.emitError("@")
             << model.getSymName() << " returns no prediction";
    SmallVector<Type> resultTypes;
    for (unsigned i : outputs)
      resultTypes.push_back(model.getResultTypes()[i]);
    auto eval = func::FuncOp::create(
        b, loc, "eval_step", FunctionType::get(ctx, argTypes, resultTypes));
    eval.setAllArgAttrs(argAttrs);
    llvm::StringSet<> names;
    for (auto [n, i] : llvm::enumerate(outputs)) {
      auto name =
          model.getResultAttrOfType<StringAttr>(i, TrainDialect::kOutputAttr);
      if (!allOutputs || !name)
        name = StringAttr::get(ctx, n == 0 ? std::string("prediction")
                                           : "output" + std::to_string(n));
      if (!names.insert(name.getValue()).second)
        return model.emitError("two outputs are named '")
               << name.getValue() << "'";
      eval.setResultAttr(n, TrainDialect::kOutputAttr, name);
      if (Attribute u = model.getResultAttr(i, TrainDialect::kUnsignedAttr))
        eval.setResultAttr(n, TrainDialect::kUnsignedAttr, u);
    }
    eval->setAttr(TrainDialect::kEntryAttr, StringAttr::get(ctx, "eval_step"));

    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(eval.addEntryBlock());
    IRMapping map;
    if (failed(mapArguments(b, model, eval, map, /*advanceRng=*/false)))
      return failure();
    for (Operation &op : model.getBody().front().without_terminator()) {
      // Inference semantics: no dropout, running batch-norm statistics.
      if (auto d = dyn_cast<nn::DropoutOp>(op)) {
        map.map(d.getResult(), map.lookup(d.getInput()));
        continue;
      }
      if (auto a = dyn_cast<nn::AttentionOp>(op); a && a.getSeed()) {
        Value mask = a.getMask() ? map.lookup(a.getMask()) : Value();
        auto plain = nn::AttentionOp::create(
            b, a.getLoc(), map.lookup(a.getQuery()), map.lookup(a.getKey()),
            map.lookup(a.getValue()), mask, /*seed=*/Value(), a.getScaleAttr(),
            a.getScaleIsDivisorAttr(), a.getCausalAttr(),
            /*dropout_ratio=*/FloatAttr(), /*dropout_stream=*/IntegerAttr());
        map.map(a.getResult(), plain.getResult());
        continue;
      }
      Operation *clone = b.clone(op, map);
      if (auto bn = dyn_cast<nn::BatchNormOp>(clone))
        bn.setTraining(false);
    }
    auto ret = cast<func::ReturnOp>(model.getBody().front().getTerminator());
    SmallVector<Value> results;
    for (unsigned i : outputs)
      results.push_back(map.lookup(ret.getOperand(i)));
    func::ReturnOp::create(b, loc, results);
    return success();
  }
};

} // namespace
