//===- ErrorRecorder.h - The fuzzers' diagnostic contract -------*- C++ -*-===//
//
// The compiler's fuzz targets hold it to one contract: a failure comes with
// an error diagnostic. A crash is a finding, and so is a failure that
// reports nothing.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_TEST_FUZZ_ERRORRECORDER_H
#define CLEAVE_TEST_FUZZ_ERRORRECORDER_H

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include <cstdlib>

namespace mlir::cleave::fuzz {

/// Swallows the diagnostics of `context` while it lives, remembering whether
/// one was an error.
class ErrorRecorder {
public:
  explicit ErrorRecorder(mlir::MLIRContext &context)
      : handler(&context, [this](mlir::Diagnostic &diag) {
          reported |= diag.getSeverity() == mlir::DiagnosticSeverity::Error;
          return mlir::success();
        }) {}

  /// A finding (abort) when `failed` and no error was reported.
  void requireErrorIf(bool failed) const {
    if (failed && !reported)
      std::abort();
  }

private:
  bool reported = false;
  mlir::ScopedDiagnosticHandler handler;
};

} // namespace mlir::cleave::fuzz

#endif // CLEAVE_TEST_FUZZ_ERRORRECORDER_H
