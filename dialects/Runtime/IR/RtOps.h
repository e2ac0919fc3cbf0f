//===- RtOps.h - Calls into the Cleave runtime ------------------*- C++ -*-===//
//
// Declares the rt dialect and its bufferization hook.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RT_IR_RTOPS_H
#define CLEAVE_RT_IR_RTOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/Runtime/IR/RtDialect.h.inc"
#include "dialects/Runtime/IR/RtEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/Runtime/IR/RtAttrs.h.inc"

#define GET_OP_CLASSES
#include "dialects/Runtime/IR/RtOps.h.inc"

namespace mlir::cleave::rt {
/// Registers the BufferizableOpInterface models of the rt ops.
void registerBufferizableOpInterfaceExternalModels(DialectRegistry &registry);
} // namespace mlir::cleave::rt

#endif // CLEAVE_RT_IR_RTOPS_H
