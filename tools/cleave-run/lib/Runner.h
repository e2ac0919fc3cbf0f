//===- Runner.h - cleave-run: one entry of an artifact ----------*- C++ -*-===//
//
// Loads an artifact, creates a session, optionally overwrites globals, sets
// hyperparameters or loads a checkpoint, runs eval_step or micro_step on the
// inputs given on the command line (inline numbers or raw files) and prints
// what was asked as text, for FileCheck tests and quick experiments.
// docs/user/cleave-train.md is the reference.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_TOOLS_RUNNER_H
#define CLEAVE_TOOLS_RUNNER_H

#include "cleave/runtime.h"

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace cleave::run {

struct RunOptions {
  std::string artifact;
  /// "eval_step" or "micro_step".
  std::string entry = "eval_step";
  /// (name, VALUES) as given: inline numbers or a file.
  std::vector<std::pair<std::string, std::string>> inputs;
  std::vector<std::pair<std::string, std::string>> globals;
  std::vector<std::pair<std::string, double>> hyperparameters;
  /// Real samples of the batch; unset: the micro-batch size.
  std::optional<int64_t> samples;
  uint64_t seed = 0;
  std::optional<int64_t> accumulate;
  std::string checkpoint;
  int64_t repeat = 1;
  bool flush = false;
  /// What to print after each run; empty: the entry's default.
  std::vector<std::string> prints;
  int precision = 6;
  int32_t threads = 0;
  bool help = false;
};

/// Parses cleave-run's arguments. Throws tools::UsageError.
RunOptions parseRunOptions(int argc, char **argv);
const char *runUsage();

/// The bytes of `elements` values of `dtype` described by `spec`: a
/// comma-separated list of numbers (exactly `elements` of them, or one that
/// fills them all) or the name of a file of exactly that many raw
/// little-endian values. `what` names the flag in errors. Throws tools::Error.
std::vector<unsigned char> parseValues(const std::string &what,
                                       const std::string &spec,
                                       cleave_dtype dtype, size_t elements);

/// Runs as `options` say, printing to `out`. Throws tools::Error or
/// cleave::Error.
void run(const RunOptions &options, std::FILE *out);

/// cleave-run's main(): errors are one line on stderr
/// ("cleave-run: error: ..."); 0 on success, 2 for a bad command line, 1
/// otherwise.
int runMain(int argc, char **argv);

} // namespace cleave::run

#endif // CLEAVE_TOOLS_RUNNER_H
