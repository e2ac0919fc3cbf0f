//===- Checker.h - N micro-batches against one batch of N*B -----*- C++ -*-===//
//
// The runtime half of cleave-check: given an artifact that accumulates N
// micro-batches of B samples per optimizer step and a reference artifact
// that takes one batch of N*B samples per step, both compiled from the same
// model with the same training options, trains both from the same initial
// state on the same windows of data and measures how far apart they end up.
// docs/user/cleave-check.md describes the measure and the verdicts.
//
// Links only the runtime and the data loaders; the compiling half
// (CheckMain.cpp) is the only part that sees MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_TOOLS_CHECKER_H
#define CLEAVE_TOOLS_CHECKER_H

#include "cleave/runtime.hpp"

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

namespace cleave::checker {

/// The default --rtol. float32 sums the N*B per-sample gradients in another
/// order in the two runs: each window's gradient differs by a few float32
/// rounding errors (~1e-7 of its terms), which K windows of updates
/// compound (the example LeNet with momentum reaches 2e-5 after 10
/// windows). 1e-4 keeps a margin above that for K <= 10 and stays orders
/// of magnitude below what a wrong split produces (a gradient scaled by N,
/// a window applied early, a lost micro-batch: 1e-2 and up).
inline constexpr double kDefaultRtol = 1e-4;

/// What the reference artifact is.
enum class Reference {
  /// Micro-batch N*B, one micro-step per optimizer step: the split checked.
  BigBatch,
  /// The same micro-batch and N, compiled without rematerialisation: the
  /// accumulating artifact recomputes activations, which must give the same
  /// bits (rtol 0).
  WithoutRemat,
};

struct CheckOptions {
  /// The accumulating artifact (micro-batch B, its default N micro-steps per
  /// optimizer step) and the reference (micro-batch N*B, or B without
  /// rematerialisation).
  std::string accumulating, reference;
  Reference kind = Reference::BigBatch;
  /// Windows (optimizer steps) to train and compare.
  int64_t windows = 3;
  /// Seeds the random data (and the sessions' initialisers).
  uint64_t seed = 0;
  double rtol = kDefaultRtol;
  /// A dataset as cleave-train reads it (data/Dataset.h): window k takes
  /// training samples [k*N*B, (k+1)*N*B), standardised as cleave-train
  /// does. Empty: random data.
  std::string data;
};

/// How the two runs compare.
enum class Verdict {
  /// Every difference is within rtol.
  Agree,
  /// Some difference exceeds rtol and the model has no op that makes the
  /// split observable: the accumulated run is not the big-batch run.
  Mismatch,
  /// Some difference exceeds rtol and the compiler reported ops whose
  /// results depend on the split (batch norm in training mode, dropout):
  /// the runs are expected to differ, the check cannot tell more.
  SplitObservable,
};

/// The relative differences of one compared quantity, one per window.
struct Difference {
  std::string name;
  std::vector<double> perWindow;
};

struct CheckResult {
  Reference kind = Reference::BigBatch;
  int64_t microBatch = 0, accumulate = 0;
  /// Where the data came from, for the report.
  std::string data;
  /// The ops the compiler reported as making the split observable.
  std::vector<cleave::WarningInfo> splitObservable;
  /// The windows' mean losses (before each window's update) of the two runs.
  std::vector<double> lossAccumulating, lossReference;
  /// "loss" first, then every parameter and buffer in manifest order.
  std::vector<Difference> differences;
  /// The largest difference (NaN counts as infinite), what and when (0-based
  /// window).
  double largest = 0;
  std::string largestName;
  int64_t largestWindow = 0;
  Verdict verdict = Verdict::Agree;
  /// Whether any parameter or buffer changed at all: two runs that never
  /// move (a learning rate of 0) agree trivially.
  bool parametersMoved = false;
  /// Adam's epsilon and learning rate, if the optimizer has an epsilon
  /// (adam, adamw): the report explains its amplification of rounding.
  std::optional<double> eps, lr;
};

/// The relative difference of two tensors: max |a - b| over
/// max(max |a|, max |b|), 0 if both are zero. Measured against the tensors'
/// scale rather than elementwise, where rounding noise on elements near 0
/// would look large. NaN if either holds a NaN.
double relativeDifference(const std::vector<double> &a,
                          const std::vector<double> &b);

/// Trains both artifacts for options.windows windows and compares the loss
/// and every parameter and buffer after each window. Throws cleave::Error or
/// tools::Error (artifacts that do not form such a pair, data that does not
/// fit the model, a failed step).
CheckResult compareArtifacts(const CheckOptions &options);

/// The report: the split-observable ops, a table of the differences (tensors
/// by windows) and a last line with the verdict.
void printReport(const CheckResult &result, double rtol, std::FILE *out);

/// cleave-check's exit status for `verdict`: 0, 1 or 3 (2 is for a check
/// that could not run).
int exitStatus(Verdict verdict);

/// compareArtifacts and printReport; an error is one line on `err`
/// ("cleave-check: error: ...") and exit status 2.
int runCheck(const CheckOptions &options, std::FILE *out,
             std::FILE *err) noexcept;

} // namespace cleave::checker

#endif // CLEAVE_TOOLS_CHECKER_H
