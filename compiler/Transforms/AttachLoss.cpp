//===- AttachLoss.cpp - Specialise the batch and append the loss ----------===//
//
// Turns a model function into @loss, the sum over real samples of the
// per-sample loss: the quantity whose gradient a micro-step accumulates.
// Summing (not averaging) here is what makes accumulation exact for ragged
// micro-batches; the apply step divides once by the window's sample count.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/Passes.h"
#include "compiler/Transforms/Utils.h"
#include "dialects/NN/IR/NNOps.h"
#include "dialects/Train/IR/TrainDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::cleave {
#define GEN_PASS_DEF_CLEAVEATTACHLOSS
#include "compiler/Transforms/Passes.h.inc"
} // namespace mlir::cleave

using namespace mlir;
using namespace mlir::cleave;
using train::TrainDialect;

LogicalResult cleave::verifyOptions(const CleaveAttachLossOptions &options,
                                    function_ref<void(const Twine &)> error) {
  if (options.microBatch < 0) {
    error("micro-batch must be >= 0 (0 keeps the model's batch), got " +
          Twine(options.microBatch));
    return failure();
  }
  return success();
}

namespace {

bool isStateArg(func::FuncOp f, unsigned i) {
  return f.getArgAttr(i, TrainDialect::kParamAttr) ||
         f.getArgAttr(i, TrainDialect::kBufferAttr) ||
         f.getArgAttr(i, TrainDialect::kRngAttr);
}

struct AttachLossPass : cleave::impl::CleaveAttachLossBase<AttachLossPass> {
  using CleaveAttachLossBase::CleaveAttachLossBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto model = module.lookupSymbol<func::FuncOp>(function);
    if (!model) {
      module.emitError("no model function @") << function;
      return signalPassFailure();
    }
    if (failed(verifyOptions(options(), [&](const Twine &message) {
          module.emitError(message);
        })))
      return signalPassFailure();
    if (failed(requireStraightLine(model, "cleave-attach-loss")) ||
        failed(nameInputs(model)))
      return signalPassFailure();
    // Forward only: no loss is per sample along the prediction, so any
    // output shape will do.
    if (inference) {
      if (failed(specialise(model)))
        return signalPassFailure();
      return;
    }
    if (failed(checkBatchFirst(model)) || failed(specialise(model)))
      return signalPassFailure();
    if (module.lookupSymbol("loss")) {
      module.emitError("the module already has a @loss function");
      return signalPassFailure();
    }
    auto lossFn = cast<func::FuncOp>(model->clone());
    lossFn.setSymName("loss");
    SymbolTable(module).insert(lossFn, std::next(Block::iterator(model)));
    if (failed(appendLoss(lossFn)))
      return signalPassFailure();
  }

  /// Gives every data input a `train.input` name. A forward-only model may
  /// have none (a constant, a window function of a constant size): its
  /// evaluation computes the same rows for every batch.
  LogicalResult nameInputs(func::FuncOp f) {
    SmallVector<unsigned> data;
    for (unsigned i = 0; i < f.getNumArguments(); ++i)
      if (!isStateArg(f, i))
        data.push_back(i);
    if (data.empty() && !inference)
      return f.emitError("@") << f.getSymName()
                              << " has no data input (a model without "
                                 "one can be compiled forward only, with "
                                 "--inference)";
    for (auto [n, i] : llvm::enumerate(data))
      if (!f.getArgAttr(i, TrainDialect::kInputAttr))
        f.setArgAttr(
            i, TrainDialect::kInputAttr,
            StringAttr::get(f.getContext(), data.size() == 1
                                                ? std::string("x")
                                                : "x" + std::to_string(n)));
    return success();
  }

  /// Before the batch is fixed: a prediction whose first dimension is
  /// static while another one is dynamic, in a model whose inputs have a
  /// dynamic batch, carries the batch elsewhere (ONNX exports mark the
  /// batch dynamic). After it, appendLoss compares the sizes.
  LogicalResult checkBatchFirst(func::FuncOp f) {
    bool dynamicBatch =
        llvm::any_of(llvm::seq(f.getNumArguments()), [&](unsigned i) {
          auto t = dyn_cast<RankedTensorType>(f.getArgumentTypes()[i]);
          return !isStateArg(f, i) && t && t.getRank() >= 1 &&
                 t.isDynamicDim(0);
        });
    if (!dynamicBatch)
      return success();
    // The prediction is the first result that is not a buffer.
    auto results = llvm::seq(f.getNumResults());
    auto prediction = llvm::find_if(results, [&](unsigned i) {
      return !f.getResultAttr(i, TrainDialect::kBufferAttr);
    });
    if (prediction == results.end())
      return success(); // appendLoss reports it
    auto t = dyn_cast<RankedTensorType>(f.getResultTypes()[*prediction]);
    if (t && t.getRank() >= 2 && !t.isDynamicDim(0) &&
        ShapedType::isDynamicShape(t.getShape()))
      return f.emitError("the prediction ")
             << t << " does not start with the batch dimension (its "
             << "dynamic dimension is elsewhere); the loss is per sample "
                "along the prediction's first dimension (put the batch "
                "first, for example by transposing the model's output)";
    return success();
  }

  CleaveAttachLossOptions options() const {
    CleaveAttachLossOptions o;
    o.function = function;
    o.loss = loss;
    o.microBatch = microBatch;
    o.ignoreIndex = ignoreIndex;
    o.inference = inference;
    return o;
  }

  /// Sets the batch dimension of every data input and re-infers types. A
  /// model without data inputs records the micro-batch on the module
  /// instead, for the manifest.
  LogicalResult specialise(func::FuncOp f) {
    if (microBatch == 0)
      return success();
    if (llvm::all_of(llvm::seq(f.getNumArguments()),
                     [&](unsigned i) { return isStateArg(f, i); }))
      getOperation()->setAttr(
          TrainDialect::kMicroBatchAttr,
          IntegerAttr::get(IntegerType::get(f.getContext(), 64), microBatch));
    Block &body = f.getBody().front();
    for (unsigned i = 0; i < f.getNumArguments(); ++i) {
      if (isStateArg(f, i))
        continue;
      auto t = dyn_cast<RankedTensorType>(f.getArgumentTypes()[i]);
      if (!t || t.getRank() < 1)
        return f.emitError("data input #")
               << i << " must be a tensor with a batch dimension, got "
               << f.getArgumentTypes()[i];
      SmallVector<int64_t> shape(t.getShape());
      shape[0] = microBatch;
      body.getArgument(i).setType(t.clone(shape));
    }
    return reinferTypes(f);
  }

  LogicalResult appendLoss(func::FuncOp f) {
    MLIRContext *ctx = f.getContext();
    Block &body = f.getBody().front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    int prediction = -1;
    SmallVector<unsigned> bufferResults;
    for (unsigned i = 0; i < ret.getNumOperands(); ++i) {
      if (f.getResultAttr(i, TrainDialect::kBufferAttr))
        bufferResults.push_back(i);
      else if (prediction < 0)
        prediction = i;
    }
    if (prediction < 0)
      return f.emitError("@") << function << " returns no prediction";
    for (unsigned i = 0; i < f.getNumArguments(); ++i)
      if (auto name =
              f.getArgAttrOfType<StringAttr>(i, TrainDialect::kInputAttr))
        if (llvm::is_contained({"labels", "targets", "weights"},
                               name.getValue()))
          return f.emitError("model input #")
                 << i << " is named '" << name.getValue()
                 << "', a name cleave-attach-loss reserves for the inputs it "
                    "adds; rename it";
    Value pred = ret.getOperand(prediction);
    auto predType = dyn_cast<RankedTensorType>(pred.getType());
    if (!predType || predType.getRank() < 1 ||
        !isa<FloatType>(predType.getElementType()))
      return f.emitError("the prediction must be a float tensor with a batch "
                         "dimension, got ")
             << pred.getType();
    // A half-precision output (an ONNX model's float16) is data, not what
    // a loss is computed in.
    if (!predType.getElementType().isF32() &&
        !predType.getElementType().isF64())
      return f.emitError("the prediction is ")
             << pred.getType()
             << "; a loss is computed on f32 or f64 predictions (export the "
                "model with a float32 output)";
    Type elt = predType.getElementType();
    int64_t batch = predType.getDimSize(0);
    // The runtime feeds every input, the targets included, by rows of the
    // micro-batch: the loss is per sample along dimension 0 of the
    // prediction, which must be the inputs' batch dimension (every data
    // input has it as its dimension 0; specialise fixed it).
    for (unsigned i = 0; i < f.getNumArguments(); ++i) {
      auto name = f.getArgAttrOfType<StringAttr>(i, TrainDialect::kInputAttr);
      auto type = dyn_cast<RankedTensorType>(f.getArgumentTypes()[i]);
      if (!name || !type || type.getRank() < 1 || type.isDynamicDim(0) ||
          ShapedType::isDynamic(batch) || type.getDimSize(0) == batch)
        continue;
      return f.emitError("the prediction ")
             << predType << " does not start with the batch dimension of "
             << "input '" << name.getValue() << "' " << type
             << "; the loss is per sample along the prediction's first "
                "dimension (put the batch first, for example by "
                "transposing the model's output)";
    }
    Location loc = ret.getLoc();
    OpBuilder b(ret);

    auto addInput = [&](Type type, StringRef name) -> Value {
      unsigned idx = f.getNumArguments();
      NamedAttribute attr(StringAttr::get(ctx, TrainDialect::kInputAttr),
                          StringAttr::get(ctx, name));
      if (failed(
              f.insertArgument(idx, type, DictionaryAttr::get(ctx, attr), loc)))
        return {};
      return f.getArgument(idx);
    };

    Value perSample;
    // The shape of the weights: one per sample, or one per token.
    SmallVector<int64_t> weightShape = {batch};
    if (loss == nn::LossKind::cross_entropy && predType.getRank() > 2) {
      // Token-level: flatten the tokens into rows for nn.cross_entropy and
      // fold the per-token losses back into the labels' shape.
      ArrayRef<int64_t> logitShape = predType.getShape();
      weightShape.assign(logitShape.begin(), logitShape.end() - 1);
      if (ShapedType::isDynamicShape(logitShape))
        return f.emitError("token-level cross-entropy needs static logits "
                           "(set --micro-batch), got ")
               << predType;
      int64_t rows = ShapedType::getNumElements(weightShape);
      int64_t classes = logitShape.back();
      auto i64 = IntegerType::get(ctx, 64);
      NamedAttribute attrs[] = {
          NamedAttribute(StringAttr::get(ctx, TrainDialect::kInputAttr),
                         StringAttr::get(ctx, "labels")),
          NamedAttribute(StringAttr::get(ctx, TrainDialect::kIgnoreIndexAttr),
                         IntegerAttr::get(i64, ignoreIndex))};
      unsigned idx = f.getNumArguments();
      if (failed(f.insertArgument(idx, RankedTensorType::get(weightShape, i64),
                                  DictionaryAttr::get(ctx, attrs), loc)))
        return failure();
      Value labels = f.getArgument(idx);
      Value flatLogits = nn::ReshapeOp::create(
          b, loc, RankedTensorType::get({rows, classes}, elt), pred,
          ArrayRef<int64_t>{rows, classes});
      Value flatLabels = nn::ReshapeOp::create(
          b, loc, RankedTensorType::get({rows}, i64), labels,
          ArrayRef<int64_t>{rows});
      Value perToken = nn::CrossEntropyOp::create(b, loc, flatLogits,
                                                  flatLabels,
                                                  nn::Reduction::none);
      perSample = nn::ReshapeOp::create(
          b, loc, RankedTensorType::get(weightShape, elt), perToken,
          weightShape);
    } else if (loss == nn::LossKind::cross_entropy) {
      if (predType.getRank() != 2)
        return f.emitError("cross-entropy needs [batch, classes] logits "
                           "(or [batch, tokens, classes] for a loss per "
                           "token), the prediction is ")
               << predType;
      Value labels = addInput(
          RankedTensorType::get({batch}, IntegerType::get(ctx, 64)), "labels");
      perSample =
          nn::CrossEntropyOp::create(b, loc, pred, labels, nn::Reduction::none);
    } else if (loss == nn::LossKind::mse) {
      Value targets = addInput(predType, "targets");
      perSample =
          nn::MseLossOp::create(b, loc, pred, targets, nn::Reduction::none);
    } else {
      if (predType.getRank() != 1)
        return f.emitError("with loss=none the prediction must be the "
                           "per-sample loss [batch], got ")
               << predType;
      perSample = pred;
    }
    Value weights = addInput(RankedTensorType::get(weightShape, elt), "weights");
    if (!weights)
      return failure();
    f.setArgAttr(cast<BlockArgument>(weights).getArgNumber(),
                 TrainDialect::kSampleWeightsAttr, UnitAttr::get(ctx));
    // Batch statistics must not see the padding of a short micro-batch.
    WalkResult bnWalk = f.walk([&](nn::BatchNormOp bn) {
      if (!bn.getTraining() || bn.getSampleWeights())
        return WalkResult::advance();
      if (weightShape.size() != 1) {
        bn.emitError("batch normalisation needs one weight per sample, but "
                     "a loss per token weighs tokens; token-level "
                     "cross-entropy does not support training-mode batch "
                     "normalisation");
        return WalkResult::interrupt();
      }
      bn.getSampleWeightsMutable().assign(weights);
      return WalkResult::advance();
    });
    if (bnWalk.wasInterrupted())
      return failure();
    Value weighted = nn::MulOp::create(b, loc, perSample, weights);
    Value total =
        nn::ReduceSumOp::create(b, loc, weighted, ArrayRef<int64_t>{}, false);

    SmallVector<Value> results = {total};
    SmallVector<DictionaryAttr> attrs = {DictionaryAttr::get(
        ctx, {NamedAttribute(StringAttr::get(ctx, TrainDialect::kOutputAttr),
                             StringAttr::get(ctx, "loss"))})};
    for (unsigned i : bufferResults) {
      results.push_back(ret.getOperand(i));
      attrs.push_back(f.getResultAttrDict(i));
    }
    ret->setOperands(results);
    f.setFunctionType(FunctionType::get(ctx, f.getArgumentTypes(),
                                        ValueRange(results).getTypes()));
    f.setAllResultAttrs(attrs);
    return success();
  }
};

} // namespace
