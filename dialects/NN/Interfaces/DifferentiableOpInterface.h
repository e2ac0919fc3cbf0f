//===- DifferentiableOpInterface.h - Reverse-mode AD hook -------*- C++ -*-===//
//
// Declares the interface every differentiable nn op implements.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_NN_INTERFACES_DIFFERENTIABLEOPINTERFACE_H
#define CLEAVE_NN_INTERFACES_DIFFERENTIABLEOPINTERFACE_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/TypeUtilities.h"

#include "dialects/NN/Interfaces/DifferentiableOpInterface.h.inc"

#endif // CLEAVE_NN_INTERFACES_DIFFERENTIABLEOPINTERFACE_H
