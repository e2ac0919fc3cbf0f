//===- Passes.h - Cleave's lowerings to code --------------------*- C++ -*-===//
//
// Declares the passes from the split graphs to LLVM-ready IR.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_COMPILER_CONVERSION_PASSES_H
#define CLEAVE_COMPILER_CONVERSION_PASSES_H

#include "dialects/Common/EnumOption.h"
#include "dialects/Runtime/IR/RtOps.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"

namespace mlir::cleave {

#define GEN_PASS_DECL
#include "compiler/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "compiler/Conversion/Passes.h.inc"

} // namespace mlir::cleave

#endif // CLEAVE_COMPILER_CONVERSION_PASSES_H
