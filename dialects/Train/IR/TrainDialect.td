//===- TrainDialect.td - The train dialect ---------------*- tablegen -*-===//
//
// The structure of a training step: state, accumulation, optimizers,
// clipping and cross-rank reduction.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_TRAIN_DIALECT
#define CLEAVE_TRAIN_DIALECT

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def Train_Dialect : Dialect {
  let name = "train";
  let cppNamespace = "::mlir::cleave::train";
  let summary = "Training-step structure: state, accumulation, optimizers";
  let description = [{
    The `train` dialect describes what a training step does around the model:

    - persistent state as module-level `train.global` symbols of a kind
      (`param`, `buffer`, `accumulator`, `state`, `counter`), read with
      `train.load`, written with `train.store` and added into in place with
      `train.accumulate`;
    - `train.window_sum`, the cut between per-micro-batch work and per-window
      work: in a single step it is the identity, and `cleave-split-step`
      replaces it by accumulation buffers;
    - optimizer updates (`train.sgd`, `train.momentum`, `train.adam`,
      `train.rmsprop`, `train.adagrad`, `train.lamb`, `train.lars`) as pure
      functions of parameter, gradient, state and hyperparameter values
      (elementwise but for the per-tensor norms of `train.lamb` and
      `train.lars`);
    - `train.clip_by_global_norm` and `train.cross_rank_reduce`.

    Attributes tie the graphs to the runtime; the dialect verifies each and
    refuses any other `train.*` name:

    - on a function, `train.entry` names an entry point (`step`,
      `micro_step`, `apply_step`, `eval_step`, or any identifier in a traced
      graph module) and `train.gradient_of` the function it differentiates;
    - on a function argument, `train.input` (with `train.index_bound` on
      integer inputs, and `train.unsigned` on unsigned ones), `train.hyper`
      (with `train.default`), `train.param`
      and `train.buffer` (with `train.init`) say what the argument is, and
      `train.rng` marks the random seed;
    - on a function result, `train.output` names an output, `train.buffer`
      the buffer it updates and `train.grad_of` the parameter it is the
      gradient of; `train.unsigned` says an integer output is unsigned;
    - on the module, `train.manifest` holds what the artifact's manifest
      records beside the graphs (accumulation, reduction, warnings).
  }];
  let useDefaultAttributePrinterParser = 1;
  let dependentDialects = ["::mlir::cleave::nn::NNDialect",
                           "::mlir::arith::ArithDialect"];
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let extraClassDeclaration = [{
    // Every train.* attribute, named once for passes, tools and the artifact
    // writer; TrainDialect.cpp verifies each where it may appear.

    // Function attributes.
    static constexpr ::llvm::StringLiteral kEntryAttr = "train.entry";
    static constexpr ::llvm::StringLiteral kGradientOfAttr =
        "train.gradient_of";
    // Function argument attributes.
    static constexpr ::llvm::StringLiteral kInputAttr = "train.input";
    /// On an integer input: every element must lie in [0, bound) (class
    /// labels, embedding indices); the runtime checks it.
    static constexpr ::llvm::StringLiteral kIndexBoundAttr =
        "train.index_bound";
    /// On token labels ([batch, tokens...] integers): elements equal to this
    /// value are not predicted (padding); the runtime gives them weight 0.
    static constexpr ::llvm::StringLiteral kIgnoreIndexAttr =
        "train.ignore_index";
    /// On the per-sample (or per-token) weights cleave-attach-loss adds:
    /// the runtime fills them (1 for a real sample, 0 for padding) rather
    /// than reading them from the caller; the manifest's `sample_weights`
    /// role. A model's own input is never one, whatever its name.
    static constexpr ::llvm::StringLiteral kSampleWeightsAttr =
        "train.sample_weights";
    /// On an integer data input or output: its elements are unsigned (the
    /// manifest's u8, u16, u32), which only the runtime's reading and
    /// printing of it distinguish; the model widens such an input before
    /// computing with it.
    static constexpr ::llvm::StringLiteral kUnsignedAttr = "train.unsigned";
    static constexpr ::llvm::StringLiteral kHyperAttr = "train.hyper";
    static constexpr ::llvm::StringLiteral kDefaultAttr = "train.default";
    static constexpr ::llvm::StringLiteral kParamAttr = "train.param";
    static constexpr ::llvm::StringLiteral kBufferAttr = "train.buffer";
    static constexpr ::llvm::StringLiteral kInitAttr = "train.init";
    static constexpr ::llvm::StringLiteral kRngAttr = "train.rng";
    // Function result attributes (and kBufferAttr).
    static constexpr ::llvm::StringLiteral kOutputAttr = "train.output";
    static constexpr ::llvm::StringLiteral kGradOfAttr = "train.grad_of";
    // Module attributes.
    static constexpr ::llvm::StringLiteral kManifestAttr = "train.manifest";
    /// The micro-batch the model was specialised to (cleave-attach-loss):
    /// the manifest's `micro_batch` when no data input carries it.
    static constexpr ::llvm::StringLiteral kMicroBatchAttr =
        "train.micro_batch";

    // Globals whose names the runtime knows (runtime/src/Manifest.cpp).
    static constexpr ::llvm::StringLiteral kStepGlobal = "train.step";
    static constexpr ::llvm::StringLiteral kMicroStepsGlobal =
        "train.micro_steps";
    static constexpr ::llvm::StringLiteral kRngGlobal = "train.rng";
    // The apply step's verdict on the window (1 + the position among the
    // accumulators of its first sum that is not finite; 0: all finite) and
    // the number of windows it skipped for that.
    static constexpr ::llvm::StringLiteral kNonfiniteGlobal =
        "train.nonfinite";
    static constexpr ::llvm::StringLiteral kSkippedStepsGlobal =
        "train.skipped_steps";

    /// Whether `name` is an entry point of a training artifact.
    static bool isTrainingEntry(::llvm::StringRef name);
  }];
}

class Train_Op<string mnemonic, list<Trait> traits = []>
    : Op<Train_Dialect, mnemonic, traits>;

def Train_GlobalKind : I32EnumAttr<"GlobalKind", "what a global holds", [
  I32EnumAttrCase<"param", 0>,
  I32EnumAttrCase<"buffer", 1>,
  I32EnumAttrCase<"accumulator", 2>,
  I32EnumAttrCase<"state", 3>,
  I32EnumAttrCase<"counter", 4>
]> {
  let cppNamespace = "::mlir::cleave::train";
  let genSpecializedAttr = 0;
}
def Train_GlobalKindAttr : EnumAttr<Train_Dialect, Train_GlobalKind, "kind"> {
  let assemblyFormat = "`<` $value `>`";
}

def Train_ReduceKind : I32EnumAttr<"ReduceKind", "cross-rank reduction", [
  I32EnumAttrCase<"sum", 0>,
  I32EnumAttrCase<"mean", 1>,
  I32EnumAttrCase<"adasum", 2>
]> {
  let cppNamespace = "::mlir::cleave::train";
  let genSpecializedAttr = 0;
}
def Train_ReduceKindAttr : EnumAttr<Train_Dialect, Train_ReduceKind, "reduce"> {
  let assemblyFormat = "`<` $value `>`";
}

// Not attributes: the choices of `cleave-build-train-step` and
// `cleave-split-step` (their options and cleave-compile's).
def Train_OptimizerKind : I32EnumAttr<"OptimizerKind",
    "the update rule the apply graph runs", [
  I32EnumAttrCase<"sgd", 0>,
  I32EnumAttrCase<"momentum", 1>,
  I32EnumAttrCase<"nesterov", 2>,
  I32EnumAttrCase<"adam", 3>,
  I32EnumAttrCase<"adamw", 4>,
  I32EnumAttrCase<"rmsprop", 5>,
  I32EnumAttrCase<"adagrad", 6>,
  I32EnumAttrCase<"lamb", 7>,
  I32EnumAttrCase<"lars", 8>
]> {
  let cppNamespace = "::mlir::cleave::train";
  let genSpecializedAttr = 0;
}

def Train_RankReduction : I32EnumAttr<"RankReduction",
    "how data-parallel ranks combine their windows", [
  I32EnumAttrCase<"none", 0>,
  I32EnumAttrCase<"mean", 1>,
  I32EnumAttrCase<"adasum", 2>
]> {
  let cppNamespace = "::mlir::cleave::train";
  let genSpecializedAttr = 0;
}

def Train_InitKind : I32EnumAttr<"InitKind", "how a global is initialised", [
  I32EnumAttrCase<"zeros", 0>,
  I32EnumAttrCase<"ones", 1>,
  I32EnumAttrCase<"constant", 2>,
  I32EnumAttrCase<"uniform", 3>,
  I32EnumAttrCase<"normal", 4>,
  I32EnumAttrCase<"kaiming_uniform", 5>,
  I32EnumAttrCase<"fan_in_uniform", 6>
]> {
  let cppNamespace = "::mlir::cleave::train";
  let genSpecializedAttr = 0;
}

def Train_InitializerAttr : AttrDef<Train_Dialect, "Initializer"> {
  let mnemonic = "init";
  let summary = "a random or constant initialiser";
  let description = [{
    - `#train.init<zeros>`, `#train.init<ones>`, `#train.init<constant, v>`;
    - `#train.init<uniform, lo, hi>` and `#train.init<normal, mean, std>`;
    - `#train.init<kaiming_uniform>`: PyTorch's default for `Linear` and
      `Conv2d` weights (`kaiming_uniform_(a=sqrt(5))`), i.e. uniform in
      `±1/sqrt(fan_in)` with `fan_in` the product of all but the first
      dimension;
    - `#train.init<fan_in_uniform, fan_in>`: uniform in `±1/sqrt(fan_in)`,
      PyTorch's default for their biases.

    The runtime draws random initialisers from a seeded generator.
  }];
  let parameters = (ins "InitKind":$kind, ArrayRefParameter<"::llvm::APFloat">:$params);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Parameter `i` as a double.
    double getParam(unsigned i) const {
      return getParams()[i].convertToDouble();
    }
  }];
}

#endif // CLEAVE_TRAIN_DIALECT
