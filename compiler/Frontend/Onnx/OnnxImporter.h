//===- OnnxImporter.h - ONNX models to nn model functions -------*- C++ -*-===//
//
// Reads an ONNX model (opsets 13 to 21) into a module holding one model
// function in the nn dialect, ready for cleave-attach-loss.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_COMPILER_FRONTEND_ONNX_ONNXIMPORTER_H
#define CLEAVE_COMPILER_FRONTEND_ONNX_ONNXIMPORTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/MemoryBufferRef.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::cleave {

/// Imports the ONNX model at `path` (`-` reads standard input).
///
/// The graph becomes `func.func @forward`, the model function
/// cleave-attach-loss expects:
/// - graph inputs that are not initializers are data arguments carrying
///   `train.input = "<name>"`; a symbolic dimension 0 stays dynamic (`?`),
///   any other symbolic dimension is an error;
/// - a floating-point initializer of rank >= 1 that an op consumes as a
///   tensor (a weight, a bias, a scale, an embedding table, an addend),
///   directly, renamed by Identity or through views (Slice, Reshape,
///   Squeeze, Unsqueeze, Flatten), is an argument marked
///   `train.param = "<name>"` with `train.init` holding its exact values;
///   rank-0 initializers are the exporters' scalars and stay constants;
/// - BatchNormalization's running mean and variance are `train.buffer`
///   arguments. A training-mode node returns their new values as results
///   marked `train.buffer`; an inference-mode node normalises with them,
///   and they never change (export with `training=TrainingMode.TRAINING`
///   to train the statistics);
/// - every other initializer, Constant node and Shape-derived value is a
///   compile-time constant: folded into attributes where an op needs one
///   (shapes, axes, exponents, ratios) and an `arith.constant` otherwise. A
///   dynamic batch size inside shape computations is tracked symbolically so
///   `x.view(x.size(0), -1)` becomes `nn.reshape [-1, ...]`;
/// - Dropout nodes read their seed from a trailing `tensor<i64>` argument
///   marked `train.rng`, each with its own stream;
/// - the graph outputs are the results, the first being the prediction;
/// - what exporters decompose is recomposed when it matches exactly: the
///   opset-13 layer-norm chain into `nn.layer_norm`, the erf form of GELU
///   into `nn.gelu`, `MatMul(x, Transpose(W)) + b` into `nn.linear`.
///
/// Errors (unreadable or malformed files, unsupported opsets, ops, dtypes or
/// shape computations) are emitted through the context's diagnostics, at
/// locations named after the ONNX node, and yield a null module.
OwningOpRef<ModuleOp> importOnnx(MLIRContext &context, llvm::StringRef path);

/// Imports the ONNX model held in `buffer`, named by its identifier in
/// diagnostics; otherwise as importOnnx of a path.
OwningOpRef<ModuleOp> importOnnx(MLIRContext &context,
                                 llvm::MemoryBufferRef buffer);

/// Prints the supported default-domain ops as a markdown table (op, the
/// opset it is supported from, notes), sorted by name: the operator table of
/// docs/user/onnx.md, generated from the importer's own registry.
void printOnnxOperatorTable(llvm::raw_ostream &os);

} // namespace mlir::cleave

#endif // CLEAVE_COMPILER_FRONTEND_ONNX_ONNXIMPORTER_H
