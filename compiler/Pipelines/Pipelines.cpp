//===- Pipelines.cpp - Cleave's compilation pipelines ---------------------===//
//
// One place that orders the passes; each line says why a pass is there.
//
//===----------------------------------------------------------------------===//

#include "compiler/Pipelines/Pipelines.h"

#include "compiler/Artifact/Passes.h"
#include "compiler/Conversion/Passes.h"
#include "compiler/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringSwitch.h"

using namespace mlir;
using namespace mlir::cleave;

std::optional<Phase> cleave::parsePhase(StringRef name) {
  return llvm::StringSwitch<std::optional<Phase>>(name)
      .Case("loss", Phase::Loss)
      .Case("grad", Phase::Grad)
      .Case("step", Phase::Step)
      .Case("split", Phase::Split)
      .Case("linalg", Phase::Linalg)
      .Case("bufferize", Phase::Bufferize)
      .Case("llvm", Phase::LLVM)
      .Default(std::nullopt);
}

StringRef cleave::phaseNames() {
  return "loss, grad, step, split, linalg, bufferize, llvm";
}

static void cleanup(OpPassManager &pm) {
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

void cleave::buildTrainingPipeline(OpPassManager &pm, const TrainingOptions &o,
                                   Phase stopAfter) {
  // Fix the batch to the micro-batch and sum the weighted per-sample loss.
  pm.addPass(createCleaveAttachLoss(
      CleaveAttachLossOptions{o.model, o.loss, o.microBatch}));
  if (stopAfter == Phase::Loss)
    return;
  // Reverse mode through every op's VJP.
  pm.addPass(createCleaveAutodiff(CleaveAutodiffOptions{"loss"}));
  cleanup(pm);
  if (stopAfter == Phase::Grad)
    return;
  // State, the window_sum cut, normalisation, clipping and the optimizer.
  pm.addPass(createCleaveBuildTrainStep(CleaveBuildTrainStepOptions{
      o.model, o.optimizer, o.lr, o.momentum, o.beta1, o.beta2, o.eps,
      o.weightDecay, o.clipNorm}));
  cleanup(pm);
  if (stopAfter == Phase::Step)
    return;
  // The cleave: @micro_step accumulates, @apply_step updates.
  pm.addPass(createCleaveSplitStep(
      CleaveSplitStepOptions{o.accumulate, o.reduce, o.ranks,
                             o.shardOptimizerState, o.reduceEveryMicroStep}));
  cleanup(pm);
}

void cleave::buildCpuPipeline(OpPassManager &pm, const TrainingOptions &o,
                              Phase stopAfter) {
  buildTrainingPipeline(pm, o, std::min(stopAfter, Phase::Split));
  if (stopAfter <= Phase::Split)
    return;
  buildCpuBackendPipeline(pm, stopAfter);
}

void cleave::buildCpuBackendPipeline(OpPassManager &pm, Phase stopAfter) {
  // Compute-bound ops to oneDNN kernels, everything else to linalg.
  pm.addPass(createCleaveConvertNNToLinalg());
  // Counter arithmetic (arith on i64 tensors) becomes linalg as well.
  pm.addPass(createConvertElementwiseToLinalgPass());
  // Entry points take the session's buffers; state becomes SSA.
  pm.addPass(createCleaveLowerEntryAbi());
  cleanup(pm);
  // Producer-consumer fusion of elementwise generics (one loop nest each).
  pm.addPass(createLinalgElementwiseOpFusionPass());
  cleanup(pm);
  if (stopAfter == Phase::Linalg)
    return;
  // Tensors to buffers, in place where possible.
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = false;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  cleanup(pm);
  // Kernels become ABI calls with ids into the kernel table.
  pm.addPass(createCleaveLowerRuntimeCalls());
  // Every temporary lives in the session's scratch arena.
  pm.addPass(createCleavePlanMemory());
  // The runtime's view of the artifact.
  pm.addPass(createCleaveWriteManifest());
  if (stopAfter == Phase::Bufferize)
    return;
  // Loops, then the LLVM dialect. LLVM's O3 vectorises the loops later.
  pm.addPass(createConvertLinalgToLoopsPass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createConvertMathToLLVMPass());
  // What has no LLVM intrinsic (erf, tanh) calls libm.
  pm.addPass(createConvertMathToLibmPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  ConvertFuncToLLVMPassOptions func;
  // Entry points take one raw pointer per buffer (static shapes).
  func.useBarePtrCallConv = true;
  pm.addPass(createConvertFuncToLLVMPass(func));
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  // cleave_entry_*, cleave_manifest, cleave_init_data, cleave_abi_version.
  pm.addPass(createCleaveEmitArtifactAbi());
}

namespace {
/// Command-line options of the registered pipelines.
struct PipelineOptions : public PassPipelineOptions<PipelineOptions> {
  Option<std::string> model{*this, "model",
                            llvm::cl::desc("The model function"),
                            llvm::cl::init("forward")};
  Option<std::string> loss{*this, "loss",
                           llvm::cl::desc("cross-entropy, mse or none"),
                           llvm::cl::init("cross-entropy")};
  Option<int64_t> microBatch{*this, "micro-batch",
                             llvm::cl::desc("Micro-batch size (0: keep)"),
                             llvm::cl::init(0)};
  Option<std::string> optimizer{
      *this, "optimizer",
      llvm::cl::desc("sgd, momentum, nesterov, adam or adamw"),
      llvm::cl::init("sgd")};
  Option<double> lr{*this, "lr", llvm::cl::desc("Default learning rate"),
                    llvm::cl::init(0.01)};
  Option<double> momentum{*this, "momentum", llvm::cl::desc("Default momentum"),
                          llvm::cl::init(0.9)};
  Option<double> weightDecay{*this, "weight-decay",
                             llvm::cl::desc("Default weight decay"),
                             llvm::cl::init(0.0)};
  Option<double> clipNorm{*this, "clip-norm",
                          llvm::cl::desc("Clip by global norm (0: off)"),
                          llvm::cl::init(0.0)};
  Option<int64_t> accumulate{*this, "accumulate",
                             llvm::cl::desc("Default micro-steps per window"),
                             llvm::cl::init(1)};
  Option<std::string> reduce{*this, "reduce",
                             llvm::cl::desc("none, mean or adasum"),
                             llvm::cl::init("none")};
  Option<int64_t> ranks{*this, "ranks",
                        llvm::cl::desc("Data-parallel ranks (0: any)"),
                        llvm::cl::init(0)};
  Option<bool> shardOptimizerState{
      *this, "shard-optimizer-state",
      llvm::cl::desc("ZeRO-1 sharded optimizer state (needs reduce=mean, "
                     "ranks)"),
      llvm::cl::init(false)};
  Option<bool> reduceEveryMicroStep{
      *this, "reduce-every-micro-step",
      llvm::cl::desc("Reduce gradients in every micro-step (benchmarks)"),
      llvm::cl::init(false)};

  TrainingOptions get() const {
    TrainingOptions o;
    o.model = model;
    o.loss = loss;
    o.microBatch = microBatch;
    o.optimizer = optimizer;
    o.lr = lr;
    o.momentum = momentum;
    o.weightDecay = weightDecay;
    o.clipNorm = clipNorm;
    o.accumulate = accumulate;
    o.reduce = reduce;
    o.ranks = ranks;
    o.shardOptimizerState = shardOptimizerState;
    o.reduceEveryMicroStep = reduceEveryMicroStep;
    return o;
  }
};
} // namespace

void cleave::registerPipelines() {
  PassPipelineRegistration<PipelineOptions>(
      "cleave-train-pipeline",
      "Model function to @micro_step and @apply_step (attach-loss, autodiff, "
      "build-train-step, split-step)",
      [](OpPassManager &pm, const PipelineOptions &o) {
        buildTrainingPipeline(pm, o.get());
      });
  PassPipelineRegistration<PipelineOptions>(
      "cleave-cpu-pipeline",
      "Model function to LLVM dialect for the CPU back end",
      [](OpPassManager &pm, const PipelineOptions &o) {
        buildCpuPipeline(pm, o.get());
      });
}
