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

/// Tries micro-batches B that divide `globalBatch` (N = G / B), each without
/// recomputation, with `remat=auto` and with `remat-budget=0` where the one
/// before does not fit, lowering `model` to the memory plan for each (no
/// code is generated). Prints every candidate on `os` as it is measured and
/// the choice. On success sets `options`' micro-batch, accumulate, remat and
/// remat-budget to the plan whose peak (the memory report plus the runtime's
/// fixed overhead) fits `budget` with the best modelled throughput. On
/// failure `error` says why: nothing fits (the smallest plan's need, by
/// kind), or a candidate did not compile (diagnostics already reported).
LogicalResult planForMemoryBudget(ModuleOp model,
                                  TrainingPipelineOptions &options,
                                  int64_t globalBatch, int64_t budget,
                                  llvm::raw_ostream &os, std::string &error);

/// `bytes` for people: B, KiB, MiB or GiB with three significant digits.
std::string humanBytes(int64_t bytes);

} // namespace mlir::cleave

#endif // CLEAVE_COMPILER_DRIVER_PLANNER_H
