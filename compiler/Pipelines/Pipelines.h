//===- Pipelines.h - Cleave's compilation pipelines -------------*- C++ -*-===//
//
// The pass pipelines from a model to an artifact, with the phases
// `cleave-compile --compile-to` can stop after.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_COMPILER_PIPELINES_PIPELINES_H
#define CLEAVE_COMPILER_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassManager.h"
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
  LLVM,      // LLVM dialect with the artifact's exported symbols
};

/// Parses a phase name (`loss`, `grad`, `step`, `split`, `linalg`,
/// `bufferize`, `llvm`).
std::optional<Phase> parsePhase(llvm::StringRef name);
/// The names `parsePhase` accepts, for help texts.
llvm::StringRef phaseNames();

/// What to train and how; every value here except `model` has a pass
/// option of the same meaning.
struct TrainingOptions {
  std::string model = "forward";
  std::string loss = "cross-entropy";
  int64_t microBatch = 0;
  std::string optimizer = "sgd";
  double lr = 0.01, momentum = 0.9, beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  double weightDecay = 0.0, clipNorm = 0.0;
  int64_t accumulate = 1;
  std::string reduce = "none";
  /// Data-parallel ranks the artifact is for; 0 runs on any number.
  int64_t ranks = 0;
  /// ZeRO-1: each rank updates a shard of the parameters and keeps only
  /// that shard of the optimizer state (needs reduce = "mean" and ranks).
  bool shardOptimizerState = false;
  /// Reduce the gradients in every micro-step rather than once per window
  /// (a benchmark baseline; needs reduce = "mean").
  bool reduceEveryMicroStep = false;
};

/// Model function to the two graphs of a step.
void buildTrainingPipeline(OpPassManager &pm, const TrainingOptions &options,
                           Phase stopAfter = Phase::Split);

/// Model function to LLVM dialect ready for `emitObject`.
void buildCpuPipeline(OpPassManager &pm, const TrainingOptions &options,
                      Phase stopAfter = Phase::LLVM);

/// Split-level IR (entry functions marked `train.entry`, state as
/// `train.global`s) to LLVM dialect: the back half of `buildCpuPipeline`,
/// also used by frontends that emit entry points directly (the tracer).
void buildCpuBackendPipeline(OpPassManager &pm, Phase stopAfter = Phase::LLVM);

/// Registers `cleave-train-pipeline` and `cleave-cpu-pipeline`.
void registerPipelines();

} // namespace mlir::cleave

#endif // CLEAVE_COMPILER_PIPELINES_PIPELINES_H
