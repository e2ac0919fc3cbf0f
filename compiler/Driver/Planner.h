//===- Planner.h - The micro-batch, N and recomputation for a budget -*- C++
//-*-===//
//
// cleave-compile --global-batch=G --memory-budget=SIZE: the plan that fits a
// memory budget with the best modelled throughput (docs/design/memory.md,
// "The planner").
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_COMPILER_DRIVER_PLANNER_H
#define CLEAVE_COMPILER_DRIVER_PLANNER_H

#include "compiler/Pipelines/Pipelines.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace mlir::cleave {

/// The micro-batch at which the modelled rate per sample is half the rate of
/// large micro-batches: rate(B) = B / (B + kHalfRateMicroBatch). Calibrated
/// on cleave-bench measurements (docs/design/memory.md).
inline constexpr double kHalfRateMicroBatch = 8;

/// Searches the micro-batches B = ceil(W / N) of one rank's window W (every
/// divisor of W, and those whose last micro-batch per window is short) at
/// three recomputation levels (none, `remat=auto`, `remat-budget=0`),
/// lowering `model` to the memory plan for each measured candidate (no code
/// is generated): at a level the largest B that fits is found by bisection,
/// since the peak grows with B. Prints every candidate on `os` as it is
/// measured and the choice. On success sets `options`' micro-batch,
/// accumulate, window samples, remat and remat-budget to the plan whose
/// peak (the memory report plus the runtime's fixed overhead) fits `budget`
/// with the best modelled throughput. On failure `error` says why: nothing
/// fits (the smallest plan's need, by kind), or a candidate did not compile
/// (diagnostics already reported).
LogicalResult planForMemoryBudget(ModuleOp model,
                                  TrainingPipelineOptions &options,
                                  int64_t globalBatch, int64_t budget,
                                  llvm::raw_ostream &os, std::string &error);

/// One rank's window, W = G / R (R: `options.ranks` when the ranks reduce,
/// else 1). Fails, with `error`, when `options` reduce across ranks without
/// a number of ranks or R does not divide G.
FailureOr<int64_t> windowOfOneRank(const TrainingPipelineOptions &options,
                                   int64_t globalBatch, std::string &error);

/// `bytes` for people: B, KiB, MiB or GiB with three significant digits.
std::string humanBytes(int64_t bytes);

} // namespace mlir::cleave

#endif // CLEAVE_COMPILER_DRIVER_PLANNER_H
