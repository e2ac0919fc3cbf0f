//===- TrainDialect.h - The train dialect -----------------------*- C++ -*-===//
//
// Declares the train dialect, its enums and attributes.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_TRAIN_IR_TRAINDIALECT_H
#define CLEAVE_TRAIN_IR_TRAINDIALECT_H

#include "dialects/NN/IR/NNDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Dialect.h"

#include "dialects/Train/IR/TrainDialect.h.inc"
#include "dialects/Train/IR/TrainEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/Train/IR/TrainAttrs.h.inc"

#endif // CLEAVE_TRAIN_IR_TRAINDIALECT_H
