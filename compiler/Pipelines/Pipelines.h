//===- Pipelines.h - Cleave's compilation pipelines -------------*- C++ -*-===//
//
// The pass pipelines from a model to an artifact, with the phases
// `cleave-compile --compile-to` can stop after.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_COMPILER_PIPELINES_PIPELINES_H
#define CLEAVE_COMPILER_PIPELINES_PIPELINES_H

#include "compiler/Artifact/Passes.h"
#include "compiler/Conversion/Passes.h"
#include "compiler/Transforms/Passes.h"
#include "dialects/Common/EnumOption.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"
#include "llvm/ADT/StringRef.h"
#include <optional>
#include <string>

namespace mlir::cleave {

/// Where a pipeline can stop, in order.
enum class Phase {
  Loss,      // model specialised to the micro-batch, loss attached
  Grad,      // reverse-mode gradient built
  Step,      // whole training step (state, optimizer)
  Split,     // @micro_step and @apply_step
  Linalg,    // linalg on tensors and rt kernels, entry-point ABI
  Bufferize, // buffers, runtime calls, memory plan, manifest
  Gpu,       // target=cuda: kernels outlined into gpu.modules
  Nvvm,      // target=cuda: kernels in the NVVM dialect
  LLVM,      // LLVM dialect with the artifact's exported symbols
};

/// Parses a phase name (`loss`, `grad`, `step`, `split`, `linalg`,
/// `bufferize`, `gpu`, `nvvm`, `llvm`).
std::optional<Phase> parsePhase(llvm::StringRef name);
/// The names `parsePhase` accepts, for help texts.
llvm::StringRef phaseNames();

/// What `remat` recomputes (docs/design/memory.md).
enum class Remat {
  /// Every activation the backward pass reads is held from the forward pass.
  none,
  /// The cost model recomputes what is worth it: loop nests over values held
  /// anyway, and with a budget whatever fits it, cheapest first.
  automatic,
};

/// A `remat-budget`: bytes, or a fraction of the held bytes without
/// recomputation.
struct RematBudget {
  std::optional<int64_t> bytes;
  std::optional<double> fraction;
};
/// Parses `123456`, `64KiB`, `1.5MiB`, `2GiB`, `1e6` (bytes) or `25%`;
/// `message` says what is wrong otherwise.
FailureOr<RematBudget> parseRematBudget(llvm::StringRef text,
                                        std::string &message);

/// What to train and how: the one definition of the training options. The
/// registered pipelines parse them from their option string, cleave-compile
/// from its command line (`addToCommandLine`), and each pass gets its own
/// options from them by name.
struct TrainingPipelineOptions
    : public PassPipelineOptions<TrainingPipelineOptions> {
  Option<std::string> model{*this, "model",
                            llvm::cl::desc("The model function (MLIR input)"),
                            llvm::cl::init("forward")};
  Option<nn::LossKind> loss{
      *this, "loss", llvm::cl::desc("The per-sample loss"),
      llvm::cl::init(nn::LossKind::cross_entropy), enumValues<nn::LossKind>()};
  Option<int64_t> microBatch{
      *this, "micro-batch",
      llvm::cl::desc("Samples per micro-step (0 keeps the model's batch)"),
      llvm::cl::init(0)};
  Option<int64_t> ignoreIndex{
      *this, "ignore-index",
      llvm::cl::desc("Cross-entropy per token ([batch, tokens, classes] "
                     "logits): the label of tokens that are not predicted, "
                     "such as padding; they count for nothing, and the window "
                     "is normalised by its number of real tokens"),
      llvm::cl::init(-100)};
  Option<double> initNormalStd{
      *this, "init-normal-std",
      llvm::cl::desc("Draw every parameter whose initial values the model "
                     "carries (an ONNX export's initializers) from N(0, std^2) "
                     "when a session starts, instead of embedding them in the "
                     "artifact; one whose values are all equal keeps that "
                     "constant (layer-norm scales, zero biases). 0 keeps the "
                     "values"),
      llvm::cl::init(0.0)};
  Option<bool> inference{
      *this, "inference",
      llvm::cl::desc("Forward only: an artifact with eval_step alone (every "
                     "output of the model; no loss, gradients, optimizer or "
                     "accumulation). Implied by loss=none on a model without "
                     "trainable parameters"),
      llvm::cl::init(false)};
  Option<train::OptimizerKind> optimizer{
      *this, "optimizer", llvm::cl::desc("The update rule"),
      llvm::cl::init(train::OptimizerKind::sgd),
      enumValues<train::OptimizerKind>()};
  Option<double> lr{*this, "lr", llvm::cl::desc("Default learning rate"),
                    llvm::cl::init(0.01)};
  Option<double> momentum{*this, "momentum", llvm::cl::desc("Default momentum"),
                          llvm::cl::init(0.9)};
  Option<double> beta1{*this, "beta1",
                       llvm::cl::desc("Default Adam/LAMB beta1"),
                       llvm::cl::init(0.9)};
  Option<double> beta2{*this, "beta2",
                       llvm::cl::desc("Default Adam/LAMB beta2"),
                       llvm::cl::init(0.999)};
  Option<double> eps{
      *this, "eps",
      llvm::cl::desc("Default epsilon (adam, adamw, rmsprop, adagrad, lamb)"),
      llvm::cl::init(1e-8)};
  Option<double> alpha{*this, "alpha",
                       llvm::cl::desc("Default RMSprop smoothing constant"),
                       llvm::cl::init(0.99)};
  Option<double> lrDecay{*this, "lr-decay",
                         llvm::cl::desc("Default Adagrad learning-rate decay"),
                         llvm::cl::init(0.0)};
  Option<double> eta{*this, "eta",
                     llvm::cl::desc("Default LARS trust coefficient"),
                     llvm::cl::init(0.001)};
  Option<double> weightDecay{*this, "weight-decay",
                             llvm::cl::desc("Default weight decay"),
                             llvm::cl::init(0.0)};
  Option<double> clipNorm{
      *this, "clip-norm",
      llvm::cl::desc("Compile in clipping by global norm with this default "
                     "max norm (0: no clipping)"),
      llvm::cl::init(0.0)};
  Option<int64_t> accumulate{
      *this, "accumulate",
      llvm::cl::desc("Default micro-steps per optimizer step (changeable at "
                     "run time)"),
      llvm::cl::init(1)};
  Option<int64_t> windowSamples{
      *this, "window-samples",
      llvm::cl::desc("Samples in one rank's window when it is not accumulate "
                     "whole micro-batches: the last micro-batch of each "
                     "window is short, accumulate = ceil(W / micro-batch) "
                     "(0: accumulate x micro-batch)"),
      llvm::cl::init(0)};
  Option<train::RankReduction> reduce{
      *this, "reduce",
      llvm::cl::desc(
          "How data-parallel ranks combine their windows: none (one "
          "process), mean (sum the gradients and sample counts once per "
          "window: R ranks give the update of one batch of all their "
          "samples) or adasum (each rank steps on its own window, the "
          "parameter deltas are Adasum-combined)"),
      llvm::cl::init(train::RankReduction::none),
      enumValues<train::RankReduction>()};
  Option<int64_t> ranks{
      *this, "ranks",
      llvm::cl::desc("Number of data-parallel ranks the artifact runs on "
                     "(0: any); the runtime refuses another job size"),
      llvm::cl::init(0)};
  Option<bool> shardOptimizerState{
      *this, "shard-optimizer-state",
      llvm::cl::desc("ZeRO-1: each rank keeps 1/R of the optimizer state and "
                     "updates 1/R of the parameters (needs reduce=mean and "
                     "ranks=R)"),
      llvm::cl::init(false)};
  Option<bool> reduceEveryMicroStep{
      *this, "reduce-every-micro-step",
      llvm::cl::desc("Reduce the gradients across ranks in every micro-step "
                     "instead of once per window (N times the traffic; a "
                     "baseline for benchmarks, needs reduce=mean)"),
      llvm::cl::init(false)};

  Option<std::string> targetCpu{
      *this, "target-cpu",
      llvm::cl::desc("The CPU to generate code for: an LLVM CPU name "
                     "(x86-64-v3, skylake-avx512, znver4, ...) or host; the "
                     "manifest records it and the runtime refuses the artifact "
                     "on a machine that lacks its features"),
      llvm::cl::init("host")};
  Option<std::string> targetFeatures{
      *this, "target-features",
      llvm::cl::desc("Features to add or remove on top of the target CPU's, "
                     "in LLVM's syntax (+avx512f,-avx512fp16)"),
      llvm::cl::init("")};
  Option<rt::Device> target{
      *this, "target",
      llvm::cl::desc("The device the step runs on: cpu (oneDNN and "
                     "vectorised loops) or cuda (GPU kernels, cuBLASLt and "
                     "cuDNN; every buffer in device memory)"),
      llvm::cl::init(rt::Device::cpu), enumValues<rt::Device>()};
  Option<std::string> gpuArch{
      *this, "gpu-arch",
      llvm::cl::desc("With target=cuda: the SM architectures to build cubins "
                     "for, comma-separated; the lowest is embedded as PTX "
                     "too, for newer GPUs"),
      llvm::cl::init("sm_80,sm_90")};

  Option<rt::KernelPrecision> precision{
      *this, "precision",
      llvm::cl::desc("What matmuls and convolutions (forward and backward) "
                     "multiply in: f32, or bf16 (bfloat16 inputs, f32 "
                     "accumulation; parameters, gradient accumulators, "
                     "optimizer state and everything else stay f32). On the "
                     "cpu target bf16 needs a CPU with AVX512-BF16; on cuda "
                     "(sm_80 and newer) matmuls and convolutions multiply "
                     "on tensor cores, a convolution's result rounded to "
                     "bf16 as cuDNN writes it"),
      llvm::cl::init(rt::KernelPrecision::f32),
      enumValues<rt::KernelPrecision>()};

  Option<bool> fusedAttention{
      *this, "fused-attention",
      llvm::cl::desc("With target=cuda and precision=bf16: scaled "
                     "dot-product attention that cuDNN's fused kernel takes "
                     "(head dimension a multiple of 8 up to 128, a constant "
                     "mask or none) runs as one kernel forward and one "
                     "backward, holding no T x S scores; false spells it "
                     "out as matmuls and a softmax, as on the cpu"),
      llvm::cl::init(true)};

  Option<Remat> remat{
      *this, "remat",
      llvm::cl::desc("Activations held from the forward to the backward pass "
                     "of a micro-step: none, or auto: recompute in the "
                     "backward pass what the cost model takes (loop nests "
                     "over values held anyway; with remat-budget also "
                     "reductions, pooling, GEMMs and convolutions, cheapest "
                     "first, until the held bytes fit). The step computes "
                     "the same bits either way"),
      llvm::cl::init(Remat::none),
      llvm::cl::values(clEnumValN(Remat::none, "none", "hold everything"),
                       clEnumValN(Remat::automatic, "auto",
                                  "recompute what the cost model takes"))};
  Option<std::string> rematBudget{
      *this, "remat-budget",
      llvm::cl::desc("Held activations to aim for (implies remat=auto): "
                     "bytes (1048576, 64KiB, 1.5MiB, 1GiB) or a percentage "
                     "of what is held without recomputation (25%)"),
      llvm::cl::init("")};

  /// The options of each training pass.
  CleaveAttachLossOptions attachLossOptions() const;
  CleaveBuildTrainStepOptions buildTrainStepOptions() const;
  CleaveSplitStepOptions splitStepOptions() const;
  CleaveWriteManifestOptions writeManifestOptions() const;
  CleaveLowerRuntimeCallsOptions lowerRuntimeCallsOptions() const;
  /// None when nothing is recomputed.
  std::optional<CleaveRematerializeOptions> rematerializeOptions() const;

  /// Runs the passes' own option checks, so that a tool can refuse bad
  /// options before it reads a model; `error` gets the first problem.
  LogicalResult
  verify(llvm::function_ref<void(const llvm::Twine &)> error) const;

  /// Makes every option a flag of the tool's own command line as well (in
  /// `category`), so that `llvm::cl::ParseCommandLineOptions` sets them.
  /// Call `removeFromCommandLine` before this struct dies.
  void addToCommandLine(llvm::cl::OptionCategory &category);
  void removeFromCommandLine();
};

/// Model function to the two graphs of a step.
void buildTrainingPipeline(OpPassManager &pm,
                           const TrainingPipelineOptions &options,
                           Phase stopAfter = Phase::Split);

/// Model function to LLVM dialect ready for `emitObject`.
void buildCpuPipeline(OpPassManager &pm, const TrainingPipelineOptions &options,
                      Phase stopAfter = Phase::LLVM);

/// Split-level IR (entry functions marked `train.entry`, state as
/// `train.global`s) to LLVM dialect: the back half of `buildCpuPipeline`,
/// also used by frontends that emit entry points directly (the tracer).
void buildCpuBackendPipeline(
    OpPassManager &pm, const CleaveWriteManifestOptions &target = {},
    Phase stopAfter = Phase::LLVM,
    const CleaveLowerRuntimeCallsOptions &kernels = {},
    const std::optional<CleaveRematerializeOptions> &remat = std::nullopt);

/// Model function to LLVM dialect for `target` (cpu or cuda).
void buildTargetPipeline(OpPassManager &pm,
                         const TrainingPipelineOptions &options,
                         Phase stopAfter = Phase::LLVM);

/// Split-level IR to host LLVM dialect with embedded CUDA fatbins: the
/// CPU back end's front half (linalg, bufferization, runtime calls, memory
/// plan, manifest), then every loop nest as a GPU kernel
/// (docs/design/gpu.md). `target.device` must be cuda.
void buildCudaBackendPipeline(
    OpPassManager &pm, const CleaveWriteManifestOptions &target,
    Phase stopAfter = Phase::LLVM,
    const CleaveLowerRuntimeCallsOptions &kernels = {},
    const std::optional<CleaveRematerializeOptions> &remat = std::nullopt);

/// Testing aid, never a real artifact: split-level IR to a CPU artifact
/// whose loop nests are lowered as `buildCudaBackendPipeline` lowers them
/// (scalars sunk into the nests, the GPU loop mapping, block reductions),
/// each `gpu.launch` then run on the host by `cleave-run-gpu-launches-on-host`.
/// The op tests compare it with the reference interpreter, which checks
/// the cuda target's kernels on a machine without a GPU. `target.device`
/// must be cpu (the library calls run on the CPU); `kernels` as cuda's
/// (with precision=bf16, `bf16ConvolutionResults`: the CPU kernels then
/// read and write what cuda's would, both matmul operands and every
/// convolution operand stored in bf16).
void buildGpuKernelsOnHostPipeline(
    OpPassManager &pm, const CleaveWriteManifestOptions &target = {},
    const CleaveLowerRuntimeCallsOptions &kernels = {});

/// Whether `phase` exists for `device` (`gpu` and `nvvm` only for cuda).
bool phaseExists(Phase phase, rt::Device device);

/// Registers `cleave-train-pipeline`, `cleave-cpu-pipeline` and
/// `cleave-cuda-pipeline`.
void registerPipelines();

} // namespace mlir::cleave

#endif // CLEAVE_COMPILER_PIPELINES_PIPELINES_H
