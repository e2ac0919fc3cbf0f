//===- TestSupport.h - Shared helpers of the compiler unit tests -*- C++
//-*-===//
//
// Parsing MLIR text, running pass pipelines, capturing diagnostics and
// drawing reproducible random tensors for the interpreter-based tests.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_TEST_UNIT_COMPILER_TESTSUPPORT_H
#define CLEAVE_TEST_UNIT_COMPILER_TESTSUPPORT_H

#include "compiler/Interpreter/Interpreter.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"

#include <memory>
#include <random>
#include <string>
#include <vector>

namespace mlir::cleave::test {

/// A context with Cleave's dialects and every dialect its passes use, with
/// Cleave's and the upstream passes registered for pipeline parsing.
std::unique_ptr<MLIRContext> makeContext();

/// Collects every diagnostic emitted while it is alive (nothing is printed).
class DiagnosticCollector {
public:
  explicit DiagnosticCollector(MLIRContext *ctx);
  /// All messages so far, one per line.
  const std::string &str() const { return text; }

private:
  std::string text;
  ScopedDiagnosticHandler handler;
};

/// Parses `source` into a verified module; null (with the diagnostics in
/// `errors` when given) on failure.
OwningOpRef<ModuleOp> parseModule(MLIRContext *ctx, StringRef source,
                                  std::string *errors = nullptr);

/// Runs a textual pass pipeline (the pass list without the
/// `builtin.module(...)` anchor) on `module`; on failure, the diagnostics
/// are returned in `errors` when given.
LogicalResult runPipeline(ModuleOp module, StringRef pipeline,
                          std::string *errors = nullptr);

/// Interprets `@name` of `module`; on failure adds a gtest failure with the
/// diagnostics and returns an empty vector.
std::vector<interp::Tensor> run(ModuleOp module, StringRef name,
                                ArrayRef<interp::Tensor> args,
                                interp::State &state,
                                const interp::InterpretOptions &options = {});

/// `n` values uniform in [lo, hi).
std::vector<double> uniform(std::mt19937_64 &rng, size_t n, double lo,
                            double hi);

/// A tensor of `shape` with elements uniform in [lo, hi).
interp::Tensor randomTensor(std::mt19937_64 &rng, interp::DType dtype,
                            ArrayRef<int64_t> shape, double lo, double hi);

} // namespace mlir::cleave::test

#endif // CLEAVE_TEST_UNIT_COMPILER_TESTSUPPORT_H
