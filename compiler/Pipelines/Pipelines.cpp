//===- Pipelines.cpp - Cleave's compilation pipelines ---------------------===//
//
// One place that orders the passes; each line says why a pass is there.
//
//===----------------------------------------------------------------------===//

#include "compiler/Pipelines/Pipelines.h"

#include "compiler/Artifact/Passes.h"
#include "compiler/Artifact/Target.h"
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

CleaveAttachLossOptions TrainingPipelineOptions::attachLossOptions() const {
  CleaveAttachLossOptions o;
  o.function = model;
  o.loss = loss;
  o.microBatch = microBatch;
  o.ignoreIndex = ignoreIndex;
  return o;
}

CleaveBuildTrainStepOptions
TrainingPipelineOptions::buildTrainStepOptions() const {
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
  return o;
}

CleaveSplitStepOptions TrainingPipelineOptions::splitStepOptions() const {
  CleaveSplitStepOptions o;
  o.accumulate = accumulate;
  o.reduce = reduce;
  o.ranks = ranks;
  o.shardOptimizerState = shardOptimizerState;
  o.reduceEveryMicroStep = reduceEveryMicroStep;
  return o;
}

CleaveWriteManifestOptions
TrainingPipelineOptions::writeManifestOptions() const {
  CleaveWriteManifestOptions o;
  o.targetCpu = targetCpu;
  o.targetFeatures = targetFeatures;
  return o;
}

CleaveLowerRuntimeCallsOptions
TrainingPipelineOptions::lowerRuntimeCallsOptions() const {
  CleaveLowerRuntimeCallsOptions o;
  o.precision = precision;
  return o;
}

LogicalResult
TrainingPipelineOptions::verify(function_ref<void(const Twine &)> error) const {
  if (failed(verifyOptions(attachLossOptions(), error)) ||
      failed(verifyOptions(buildTrainStepOptions(), error)) ||
      failed(verifyOptions(splitStepOptions(), error)))
    return failure();
  // The one choice that spans two passes: layer-wise trust ratios need the
  // norms of whole parameters, which ZeRO-1 splits across ranks
  // (docs/design/optimizers.md). cleave-split-step refuses the ops too;
  // this names the options before anything is compiled.
  if (shardOptimizerState && (optimizer == train::OptimizerKind::lamb ||
                              optimizer == train::OptimizerKind::lars)) {
    error(Twine("optimizer=") + train::stringifyOptimizerKind(optimizer) +
          " cannot run with shard-optimizer-state (ZeRO-1): its layer-wise "
          "trust ratio needs the norms of whole parameters, which are "
          "sharded across ranks; use adam, adamw, rmsprop, adagrad, sgd or "
          "momentum with ZeRO-1");
    return failure();
  }
  std::string message;
  FailureOr<CpuTarget> target =
      resolveCpuTarget(targetCpu, targetFeatures, message);
  if (failed(target)) {
    error(message);
    return failure();
  }
  // oneDNN 2.6 has bf16 matmul and convolution kernels only for AVX512-BF16
  // (and AMX); without them it would fall back to reference code tens of
  // times slower than f32, which is no use for a speed option.
  if (precision == rt::KernelPrecision::bf16 &&
      !llvm::is_contained(target->features, "avx512bf16")) {
    error(Twine("precision=bf16 needs AVX512-BF16, which the target CPU '") +
          target->cpu +
          "' does not have; compile for a CPU that has it (--target-cpu="
          "znver4, sapphirerapids, cooperlake, or "
          "--target-features=+avx512bf16) and run it on one");
    return failure();
  }
  return success();
}

// Each option is registered in this struct's own `cl::SubCommand` (the
// pipeline's option-string parser). Registering it in the top-level
// subcommand as well lets a tool's parser set it: one definition of every
// option, its default and its help, for `cleave-opt` and `cleave-compile`.
void TrainingPipelineOptions::addToCommandLine(
    llvm::cl::OptionCategory &category) {
  // Re-registering edits OptionsMap: collect first.
  SmallVector<llvm::cl::Option *> options;
  for (auto &entry : OptionsMap)
    options.push_back(entry.second);
  for (llvm::cl::Option *option : options) {
    option->removeArgument();
    option->addSubCommand(llvm::cl::SubCommand::getTopLevel());
    option->addCategory(category);
    option->addArgument();
  }
}

void TrainingPipelineOptions::removeFromCommandLine() {
  SmallVector<llvm::cl::Option *> options;
  for (auto &entry : OptionsMap)
    options.push_back(entry.second);
  for (llvm::cl::Option *option : options) {
    option->removeArgument();
    option->Subs.erase(&llvm::cl::SubCommand::getTopLevel());
    option->addArgument();
  }
}

void cleave::buildTrainingPipeline(OpPassManager &pm,
                                   const TrainingPipelineOptions &o,
                                   Phase stopAfter) {
  // Fix the batch to the micro-batch and sum the weighted per-sample loss.
  pm.addPass(createCleaveAttachLoss(o.attachLossOptions()));
  if (stopAfter == Phase::Loss)
    return;
  // Reverse mode through every op's VJP.
  CleaveAutodiffOptions autodiff;
  autodiff.function = "loss";
  pm.addPass(createCleaveAutodiff(autodiff));
  cleanup(pm);
  if (stopAfter == Phase::Grad)
    return;
  // State, the window_sum cut, normalisation, clipping and the optimizer.
  pm.addPass(createCleaveBuildTrainStep(o.buildTrainStepOptions()));
  cleanup(pm);
  if (stopAfter == Phase::Step)
    return;
  // The cleave: @micro_step accumulates, @apply_step updates.
  pm.addPass(createCleaveSplitStep(o.splitStepOptions()));
  cleanup(pm);
}

void cleave::buildCpuPipeline(OpPassManager &pm,
                              const TrainingPipelineOptions &o,
                              Phase stopAfter) {
  buildTrainingPipeline(pm, o, std::min(stopAfter, Phase::Split));
  if (stopAfter <= Phase::Split)
    return;
  buildCpuBackendPipeline(pm, o.writeManifestOptions(), stopAfter,
                          o.lowerRuntimeCallsOptions());
}

void cleave::buildCpuBackendPipeline(
    OpPassManager &pm, const CleaveWriteManifestOptions &target,
    Phase stopAfter, const CleaveLowerRuntimeCallsOptions &kernels) {
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
  pm.addPass(createCleaveLowerRuntimeCalls(kernels));
  // Every temporary lives in the session's scratch arena.
  pm.addPass(createCleavePlanMemory());
  // The runtime's view of the artifact.
  pm.addPass(createCleaveWriteManifest(target));
  if (stopAfter == Phase::Bufferize)
    return;
  // One small function per loop nest: LLVM's O3 is not linear in the size
  // of a function, and an entry point holds every nest of the model.
  pm.addPass(createCleaveOutlineKernels());
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

void cleave::registerPipelines() {
  PassPipelineRegistration<TrainingPipelineOptions>(
      "cleave-train-pipeline",
      "Model function to @micro_step and @apply_step (attach-loss, autodiff, "
      "build-train-step, split-step)",
      [](OpPassManager &pm, const TrainingPipelineOptions &o) {
        buildTrainingPipeline(pm, o);
      });
  PassPipelineRegistration<TrainingPipelineOptions>(
      "cleave-cpu-pipeline",
      "Model function to LLVM dialect for the CPU back end",
      [](OpPassManager &pm, const TrainingPipelineOptions &o) {
        buildCpuPipeline(pm, o);
      });
}
