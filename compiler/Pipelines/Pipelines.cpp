//===- Pipelines.cpp - Cleave's compilation pipelines ---------------------===//
//
// One place that orders the passes; each line says why a pass is there.
//
//===----------------------------------------------------------------------===//

#include "compiler/Pipelines/Pipelines.h"

#include "compiler/Artifact/GpuTarget.h"
#include "compiler/Artifact/Passes.h"
#include "compiler/Artifact/Target.h"
#include "compiler/Conversion/Passes.h"
#include "compiler/Conversion/Precision/Bf16Rule.h"
#include "compiler/Transforms/Passes.h"
#include "dialects/Train/IR/OptimizerOpInterface.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
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
      .Case("gpu", Phase::Gpu)
      .Case("nvvm", Phase::Nvvm)
      .Case("llvm", Phase::LLVM)
      .Default(std::nullopt);
}

StringRef cleave::phaseNames() {
  return "loss, grad, step, split, linalg, bufferize, gpu (cuda), nvvm "
         "(cuda), llvm";
}

bool cleave::phaseExists(Phase phase, rt::Device device) {
  return device == rt::Device::cuda ||
         (phase != Phase::Gpu && phase != Phase::Nvvm);
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
  o.inference = inference;
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
  o.inference = inference;
  // A window whose sums are not finite is skipped, the same way on every
  // rank (docs/design/numerics.md).
  o.checkFinite = true;
  return o;
}

CleaveSplitStepOptions TrainingPipelineOptions::splitStepOptions() const {
  CleaveSplitStepOptions o;
  o.accumulate = accumulate;
  // A window of whole micro-batches is the default and is not recorded.
  o.windowSamples =
      windowSamples == accumulate * microBatch ? 0 : windowSamples;
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
  o.device = target;
  o.gpuArches = gpuArch;
  return o;
}

CleaveLowerRuntimeCallsOptions
TrainingPipelineOptions::lowerRuntimeCallsOptions() const {
  CleaveLowerRuntimeCallsOptions o;
  o.precision = precision;
  // cuDNN's bf16 convolutions take and give bf16 tensors only: every
  // operand, the result included, is stored in bf16 (cleave-store-bf16).
  o.bf16ConvolutionResults = target == rt::Device::cuda;
  // Matmuls with a short reduction stay f32 (Bf16Rule.h).
  o.bf16MinMatmulK = kMinBf16MatmulK;
  return o;
}

FailureOr<RematBudget> cleave::parseRematBudget(StringRef text,
                                                std::string &message) {
  StringRef number = text.trim();
  double scale = 1;
  bool percent = number.consume_back("%");
  if (!percent)
    for (auto [suffix, factor] : {std::pair<StringRef, double>{"KiB", 1024.0},
                                  {"MiB", 1024.0 * 1024},
                                  {"GiB", 1024.0 * 1024 * 1024},
                                  {"B", 1}})
      if (number.consume_back(suffix)) {
        scale = factor;
        break;
      }
  double value;
  if (number.trim().getAsDouble(value) || !(value >= 0) ||
      (percent && value > 100) || value * scale > 9.2e18) {
    message = ("remat-budget: '" + text +
               "' is not a size (bytes, or with KiB, MiB, GiB) or a "
               "percentage from 0% to 100%")
                  .str();
    return failure();
  }
  RematBudget budget;
  if (percent)
    budget.fraction = value / 100;
  else
    budget.bytes = int64_t(value * scale);
  return budget;
}

std::optional<CleaveRematerializeOptions>
TrainingPipelineOptions::rematerializeOptions() const {
  if (remat == Remat::none && rematBudget.empty())
    return std::nullopt;
  CleaveRematerializeOptions o;
  std::string message;
  if (!rematBudget.empty())
    if (FailureOr<RematBudget> budget = parseRematBudget(rematBudget, message);
        succeeded(budget)) {
      o.budget = budget->bytes.value_or(-1);
      o.budgetFraction = budget->fraction.value_or(-1);
    }
  // The CPU runtime's layout cache keeps a weight copy per kernel call.
  o.convWeightCopies = target == rt::Device::cpu;
  o.bf16WeightCopies =
      target == rt::Device::cpu && precision == rt::KernelPrecision::bf16;
  return o;
}

LogicalResult
TrainingPipelineOptions::verify(function_ref<void(const Twine &)> error) const {
  if (failed(verifyOptions(attachLossOptions(), error)) ||
      failed(verifyOptions(buildTrainStepOptions(), error)) ||
      failed(verifyOptions(splitStepOptions(), error)))
    return failure();
  // A short last micro-batch: the window needs N = ceil(W / B) micro-steps.
  if (windowSamples > 0 && microBatch > 0 &&
      (windowSamples > accumulate * microBatch ||
       windowSamples <= (accumulate - 1) * microBatch)) {
    error("window-samples=" + Twine(windowSamples) + " needs accumulate=" +
          Twine((windowSamples + microBatch - 1) / microBatch) +
          " micro-batches of " + Twine(microBatch) + " (the last one short), " +
          "got accumulate=" + Twine(accumulate));
    return failure();
  }
  if (windowSamples > 0 && inference) {
    error("window-samples is for a training step; an inference artifact has "
          "none");
    return failure();
  }
  // The one choice that spans two passes: layer-wise trust ratios need the
  // norms of whole parameters, which ZeRO-1 splits across ranks
  // (docs/design/optimizers.md). cleave-split-step refuses the ops too;
  // this names the options before anything is compiled.
  if (shardOptimizerState &&
      !train::getOptimizerSpec(optimizer).shardsElementwise) {
    error(Twine("optimizer=") + train::stringifyOptimizerKind(optimizer) +
          " cannot run with shard-optimizer-state (ZeRO-1): its layer-wise "
          "trust ratio needs the norms of whole parameters, which are "
          "sharded across ranks; use adam, adamw, rmsprop, adagrad, sgd or "
          "momentum with ZeRO-1");
    return failure();
  }
  if (inference && (reduce != train::RankReduction::none || ranks > 0 ||
                    shardOptimizerState || reduceEveryMicroStep)) {
    error("inference (a forward-only artifact) has no gradients to reduce "
          "across ranks: drop reduce, ranks, shard-optimizer-state and "
          "reduce-every-micro-step");
    return failure();
  }
  std::string message;
  FailureOr<CpuTarget> cpu =
      resolveCpuTarget(targetCpu, targetFeatures, message);
  if (failed(cpu)) {
    error(message);
    return failure();
  }
  // oneDNN 2.6 has bf16 matmul and convolution kernels only for AVX512-BF16
  // (and AMX); without them it would fall back to reference code tens of
  // times slower than f32, which is no use for a speed option.
  if (precision == rt::KernelPrecision::bf16 && target == rt::Device::cpu &&
      !llvm::is_contained(cpu->features, "avx512bf16")) {
    error(Twine("precision=bf16 needs AVX512-BF16, which the target CPU '") +
          cpu->cpu +
          "' does not have; compile for a CPU that has it (--target-cpu="
          "znver4, sapphirerapids, cooperlake, or "
          "--target-features=+avx512bf16) and run it on one");
    return failure();
  }
  if (!rematBudget.empty() && failed(parseRematBudget(rematBudget, message))) {
    error(message);
    return failure();
  }
  if (!(initNormalStd >= 0)) {
    error("init-normal-std must be >= 0 (0 keeps the parameters' values), "
          "got " +
          std::to_string(double(initNormalStd)));
    return failure();
  }
  if (inference && (remat != Remat::none || !rematBudget.empty())) {
    error("inference (a forward-only artifact) holds no activations for a "
          "backward pass: drop remat and remat-budget");
    return failure();
  }
  FailureOr<SmallVector<std::string>> arches;
  if (target == rt::Device::cuda &&
      failed(arches = parseGpuArches(gpuArch, message))) {
    error(message);
    return failure();
  }
  // bf16 operands (CUDA_R_16BF) need bf16 tensor cores: sm_80 and newer.
  if (target == rt::Device::cuda && precision == rt::KernelPrecision::bf16)
    for (const std::string &arch : *arches)
      if (smNumber(arch) < 80) {
        error("precision=bf16 on cuda needs sm_80 or newer (cuBLASLt "
              "multiplies bf16 operands on Ampere's and later tensor "
              "cores); gpu-arch has " +
              arch);
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
  // Values the runtime draws rather than values the artifact embeds.
  if (o.initNormalStd != 0) {
    CleaveReinitializeParamsOptions reinit;
    reinit.function = o.model;
    reinit.normalStd = o.initNormalStd;
    pm.addPass(createCleaveReinitializeParams(reinit));
  }
  // Fix the batch to the micro-batch and sum the weighted per-sample loss.
  pm.addPass(createCleaveAttachLoss(o.attachLossOptions()));
  // Attention as one op, then as its parts again, which autodiff
  // differentiates one by one; on cuda in bf16, as one fused kernel where
  // cuDNN's takes it (docs/design/attention.md). A model written with
  // nn.attention compiles the same way.
  pm.addPass(createCleaveRecomposeAttention());
  CleaveDecomposeAttentionOptions decompose;
  decompose.fuse = o.fusedAttention && o.target == rt::Device::cuda &&
                   o.precision == rt::KernelPrecision::bf16;
  pm.addPass(createCleaveDecomposeAttention(decompose));
  if (stopAfter == Phase::Loss)
    return;
  // Forward only: the state and @eval_step; nothing to differentiate or
  // split.
  if (o.inference) {
    pm.addPass(createCleaveBuildTrainStep(o.buildTrainStepOptions()));
    cleanup(pm);
    return;
  }
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
                          o.lowerRuntimeCallsOptions(),
                          o.rematerializeOptions());
}

/// Split-level IR to bufferized entry points with runtime calls, a memory
/// plan and the manifest: common to both back ends.
static void buildBufferizedPipeline(
    OpPassManager &pm, const CleaveWriteManifestOptions &target,
    Phase stopAfter, const CleaveLowerRuntimeCallsOptions &kernels,
    bool gpuKernels, const std::optional<CleaveRematerializeOptions> &remat) {
  // Compute-bound ops to library kernels, everything else to linalg.
  pm.addPass(createCleaveConvertNNToLinalg());
  // Counter arithmetic (arith on i64 tensors) becomes linalg as well.
  pm.addPass(createConvertElementwiseToLinalgPass());
  // Entry points take the session's buffers; state becomes SSA.
  pm.addPass(createCleaveLowerEntryAbi());
  cleanup(pm);
  // Producer-consumer fusion of elementwise generics (one loop nest each).
  pm.addPass(createLinalgElementwiseOpFusionPass());
  cleanup(pm);
  // bf16 kernels read their activation inputs stored in bf16, narrowed in
  // the loops that compute them; on cuda the parameters too, once per
  // entry point (mixed-precision.md, "bf16 storage").
  if (kernels.precision == rt::KernelPrecision::bf16) {
    CleaveStoreBf16Options storeBf16;
    storeBf16.convolutions = kernels.bf16Convolutions;
    storeBf16.minMatmulK = kernels.bf16MinMatmulK;
    storeBf16.parameters = gpuKernels;
    storeBf16.convolutionResults = kernels.bf16ConvolutionResults;
    pm.addPass(createCleaveStoreBf16(storeBf16));
    cleanup(pm);
  }
  // A guarded update (a skipped window keeps its parameters) selects in the
  // optimizer's in-place loop rather than into a copy.
  pm.addPass(createCleaveFoldGuardedUpdates());
  // On a GPU the host cannot read the tensors scalars come from: each
  // loop nest computes the scalars it uses itself.
  if (gpuKernels) {
    pm.addNestedPass<func::FuncOp>(createCleaveSinkScalarsIntoLinalg());
    cleanup(pm);
  }
  // Held activations recomputed in the backward pass, after the last CSE
  // (which would merge a clone back into its original).
  if (remat)
    pm.addPass(createCleaveRematerialize(*remat));
  if (stopAfter <= Phase::Linalg)
    return;
  // Tensors to buffers, in place where possible.
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = false;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  cleanup(pm);
  // Kernels become ABI calls with ids into the kernel table.
  pm.addPass(createCleaveLowerRuntimeCalls(kernels));
  // A constant a library call reads must be in device memory.
  if (gpuKernels)
    pm.addNestedPass<func::FuncOp>(createCleaveCopyConstantsToDevice());
  // Every temporary lives in the session's scratch arena.
  pm.addPass(createCleavePlanMemory());
  // The runtime's view of the artifact.
  pm.addPass(createCleaveWriteManifest(target));
}

/// Host code's memrefs, arithmetic, functions and branches to the LLVM
/// dialect. Entry points take one raw pointer per buffer (static shapes).
static void addHostToLlvmConversions(OpPassManager &pm) {
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  ConvertFuncToLLVMPassOptions func;
  func.useBarePtrCallConv = true;
  pm.addPass(createConvertFuncToLLVMPass(func));
  pm.addPass(createConvertControlFlowToLLVMPass());
}

/// Host loops (scf, memref, arith, math) to the LLVM dialect and the
/// artifact's ABI: the end of the CPU back end.
static void buildHostLoopsToLlvmPipeline(OpPassManager &pm) {
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createConvertMathToLLVMPass());
  // What has no LLVM intrinsic (erf, tanh) calls libm.
  pm.addPass(createConvertMathToLibmPass());
  // bf16 conversions need no library helper.
  pm.addPass(createCleaveExpandBFloat16());
  addHostToLlvmConversions(pm);
  pm.addPass(createReconcileUnrealizedCastsPass());
  // cleave_entry_*, cleave_manifest, cleave_init_data, cleave_abi_version.
  pm.addPass(createCleaveEmitArtifactAbi());
}

void cleave::buildCpuBackendPipeline(
    OpPassManager &pm, const CleaveWriteManifestOptions &target,
    Phase stopAfter, const CleaveLowerRuntimeCallsOptions &kernels,
    const std::optional<CleaveRematerializeOptions> &remat) {
  buildBufferizedPipeline(pm, target, stopAfter, kernels,
                          /*gpuKernels=*/false, remat);
  if (stopAfter <= Phase::Bufferize)
    return;
  // One small function per loop nest: LLVM's O3 is not linear in the size
  // of a function, and an entry point holds every nest of the model.
  pm.addPass(createCleaveOutlineKernels());
  // Loops, then the LLVM dialect. LLVM's O3 vectorises the loops later,
  // transcendentals included once they are arithmetic.
  // Inner reductions accumulate in registers, in an order LLVM may choose,
  // so that they vectorise; the rest are plain loops.
  pm.addPass(createCleaveLowerReductionsToLoops());
  pm.addPass(createConvertLinalgToLoopsPass());
  // Innermost loops stay rolled for LLVM's loop vectoriser.
  pm.addPass(createCleaveAnnotateInnerLoops());
  pm.addPass(createCleaveApproximateMath());
  buildHostLoopsToLlvmPipeline(pm);
}

/// Bufferized loop nests to `gpu.launch` regions: parallel loops tiled into
/// blocks of threads.
static void buildGpuLaunchesPipeline(OpPassManager &pm) {
  OpPassManager &entry = pm.nest<func::FuncOp>();
  entry.addPass(createCleaveLinalgToGpuLoops());
  entry.addPass(createConvertParallelLoopToGpuPass());
  pm.addPass(createLowerAffinePass());
  cleanup(pm);
}

void cleave::buildGpuKernelsOnHostPipeline(
    OpPassManager &pm, const CleaveWriteManifestOptions &target,
    const CleaveLowerRuntimeCallsOptions &kernels) {
  buildBufferizedPipeline(pm, target, Phase::LLVM, kernels,
                          /*gpuKernels=*/true, std::nullopt);
  buildGpuLaunchesPipeline(pm);
  pm.addPass(createCleaveRunGpuLaunchesOnHost());
  buildHostLoopsToLlvmPipeline(pm);
}

void cleave::buildCudaBackendPipeline(
    OpPassManager &pm, const CleaveWriteManifestOptions &target,
    Phase stopAfter, const CleaveLowerRuntimeCallsOptions &kernels,
    const std::optional<CleaveRematerializeOptions> &remat) {
  // Library calls (cuBLASLt, cuDNN in the runtime) stay host calls on
  // device pointers; everything else becomes linalg on buffers, as for the
  // CPU.
  buildBufferizedPipeline(pm, target, stopAfter, kernels, /*gpuKernels=*/true,
                          remat);
  if (stopAfter <= Phase::Bufferize)
    return;
  buildGpuLaunchesPipeline(pm);
  // Constants into the kernels (folded there, not passed as parameters).
  pm.addPass(createGpuLaunchSinkIndexComputationsPass());
  // Constant globals into the kernels' modules (device memory), never a host
  // address passed as a kernel argument.
  pm.addNestedPass<func::FuncOp>(createCleaveSinkConstantsIntoKernels());
  pm.addPass(createGpuKernelOutliningPass());
  // The host's copies of the globals moved into kernels.
  pm.addPass(createSymbolDCEPass());
  // One kernel for all launches of the same code.
  pm.addPass(createCleaveDeduplicateKernels());
  // The host only launches and calls: it never dereferences a buffer.
  pm.addPass(createCleaveVerifyDeviceOnly());
  // One NVVM target per architecture, in the order given; the fatbin pass
  // makes a cubin of each.
  // (cleave-write-manifest has already refused an invalid list, naming it.)
  std::string invalid;
  FailureOr<SmallVector<std::string>> arches =
      parseGpuArches(target.gpuArches, invalid);
  if (succeeded(arches)) {
    for (const std::string &arch : *arches) {
      GpuNVVMAttachTargetOptions nvvm;
      nvvm.chip = arch;
      nvvm.optLevel = 3;
      pm.addPass(createGpuNVVMAttachTarget(nvvm));
    }
  }
  if (stopAfter == Phase::Gpu)
    return;
  // Kernels to the NVVM dialect (math to libdevice calls).
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  OpPassManager &kernelModules = pm.nest<gpu::GPUModuleOp>();
  kernelModules.addPass(createConvertGpuOpsToNVVMOps());
  kernelModules.addPass(createCanonicalizerPass());
  kernelModules.addPass(createCSEPass());
  kernelModules.addPass(createReconcileUnrealizedCastsPass());
  if (stopAfter == Phase::Nvvm)
    return;
  // Host code to the LLVM dialect as for the CPU (bare pointers at the
  // entry ABI); launches keep memref descriptors, matching the kernels.
  addHostToLlvmConversions(pm);
  pm.addPass(createGpuToLLVMConversionPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  // cleave_gpu_stream(ctx) as every launch's stream.
  pm.addPass(createCleaveLaunchOnRuntimeStream());
  // Cubins for every architecture and the lowest one's PTX, one fatbin per
  // module.
  pm.addPass(createCleaveGpuModuleToFatbin());
  pm.addPass(createCleaveEmitArtifactAbi());
}

void cleave::buildTargetPipeline(OpPassManager &pm,
                                 const TrainingPipelineOptions &o,
                                 Phase stopAfter) {
  if (o.target == rt::Device::cpu)
    return buildCpuPipeline(pm, o, stopAfter);
  buildTrainingPipeline(pm, o, std::min(stopAfter, Phase::Split));
  if (stopAfter <= Phase::Split)
    return;
  buildCudaBackendPipeline(pm, o.writeManifestOptions(), stopAfter,
                           o.lowerRuntimeCallsOptions(),
                           o.rematerializeOptions());
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
  PassPipelineRegistration<TrainingPipelineOptions>(
      "cleave-cuda-pipeline",
      "Model function to host LLVM dialect with CUDA kernels (target=cuda "
      "is implied)",
      [](OpPassManager &pm, const TrainingPipelineOptions &o) {
        TrainingPipelineOptions cuda;
        cuda.copyOptionValuesFrom(o);
        cuda.target = rt::Device::cuda;
        buildTargetPipeline(pm, cuda);
      });
}
