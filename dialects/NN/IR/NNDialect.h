//===- NNDialect.h - The nn dialect -----------------------------*- C++ -*-===//
//
// Declares the nn dialect, its enums and attributes.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_NN_IR_NNDIALECT_H
#define CLEAVE_NN_IR_NNDIALECT_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/Dialect.h"

#include "dialects/NN/IR/NNDialect.h.inc"
#include "dialects/NN/IR/NNEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/NN/IR/NNAttrs.h.inc"

#endif // CLEAVE_NN_IR_NNDIALECT_H
