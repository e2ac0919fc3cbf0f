//===- OptimizerOpInterface.h - What an optimizer is ------------*- C++ -*-===//
//
// The optimizer interface of the train update ops, and the spec of an
// optimizer kind (--optimizer) read from its op
// (docs/design/optimizer-interface.md).
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_TRAIN_IR_OPTIMIZEROPINTERFACE_H
#define CLEAVE_TRAIN_IR_OPTIMIZEROPINTERFACE_H

#include "dialects/Train/IR/TrainDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpDefinition.h"
#include "llvm/ADT/STLFunctionalExtras.h"

namespace mlir::cleave::train {

/// What an update is built from: one parameter, its (normalised, clipped)
/// window gradient and its state, at optimizer step `step` (the counter
/// after this step's increment, i64 rank 0).
struct OptimizerUpdate {
  Value param, grad;
  /// The state slots' current values, in getStateSlots() order.
  ValueRange state;
  Value step;
  /// A hyperparameter by name: lr, weight_decay or one of the op's own.
  function_ref<Value(StringRef)> hyper;
  /// The variant within the op: nesterov (train.momentum), adamw
  /// (train.adam's decoupled weight decay).
  OptimizerKind kind;
  /// The parameter is exempt from trust ratios and weight decay (lamb and
  /// lars: biases and normalisation weights, docs/design/optimizers.md).
  bool excludedFromAdaptation = false;
};

} // namespace mlir::cleave::train

#include "dialects/Train/IR/OptimizerOpInterface.h.inc"

namespace mlir::cleave::train {

/// An optimizer kind as its op's interface describes it.
struct OptimizerSpec {
  StringRef opName;
  ArrayRef<StringRef> stateSlots;
  ArrayRef<StringRef> ownHyperparameters;
  bool shardsElementwise = true;
  SmallVector<Value> (*buildUpdate)(OpBuilder &, Location,
                                    const OptimizerUpdate &) = nullptr;
};

/// The spec of `kind`, read from the op that performs its update: the one
/// place that maps --optimizer's values to ops.
OptimizerSpec getOptimizerSpec(OptimizerKind kind);

} // namespace mlir::cleave::train

#endif // CLEAVE_TRAIN_IR_OPTIMIZEROPINTERFACE_H
