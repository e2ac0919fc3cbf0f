//===- TrainOps.h - train dialect ops ---------------------------*- C++ -*-===//
//
// Declares the train ops.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_TRAIN_IR_TRAINOPS_H
#define CLEAVE_TRAIN_IR_TRAINOPS_H

#include "dialects/Train/IR/OptimizerOpInterface.h"
#include "dialects/Train/IR/TrainDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::cleave::train {
/// The persistent state that `train.global`s live in.
struct StateResource : public SideEffects::Resource::Base<StateResource> {
  StringRef getName() final { return "TrainState"; }
};
} // namespace mlir::cleave::train

#define GET_OP_CLASSES
#include "dialects/Train/IR/TrainOps.h.inc"

#endif // CLEAVE_TRAIN_IR_TRAINOPS_H
