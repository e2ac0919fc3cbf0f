//===- CommandLine.h - Flags of cleave-train and cleave-run -----*- C++ -*-===//
//
// The tools link the runtime, never LLVM, so they parse their own flags:
// `--name=value` or `--name value` for flags with a value, `--name` for
// switches, `--` ends the flags. Numbers are parsed strictly (the whole value,
// in range); every problem is a UsageError whose message is one line naming
// the flag and what was expected.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_TOOLS_COMMANDLINE_H
#define CLEAVE_TOOLS_COMMANDLINE_H

#include "Error.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace cleave::tools {

/// A flag as written: `--name=value`, `--name value` or `--name`.
struct Flag {
  std::string name;
  std::optional<std::string> value;
};

/// Splits argv into flags and positional arguments, in order.
class ArgumentReader {
public:
  ArgumentReader(int argc, char **argv);

  /// True while arguments remain.
  bool more() const { return next_ < args_.size(); }
  /// True if the next argument is a flag (starts with "--" before a "--").
  bool nextIsFlag() const;
  /// Consumes the next flag.
  Flag flag();
  /// Consumes the next argument as a positional one.
  std::string positional();
  /// The value of `flag`: its `=value`, or else the next argument (which must
  /// exist and not be a flag).
  std::string value(const Flag &flag);

private:
  std::vector<std::string> args_;
  size_t next_ = 0;
  bool flagsEnded_ = false;
};

/// A tool's main(): runs `body`, which returns the exit status, and reports
/// what it throws as one line on stderr ("<tool>: error: <message>"),
/// returning 2 for a UsageError and 1 for any other error.
int runTool(const char *tool, const std::function<int()> &body);

/// Strict parsers: the whole `text` must be the number. `what` names the flag
/// in errors ("--epochs").
int64_t parseInt(const std::string &what, const std::string &text,
                 int64_t min = INT64_MIN, int64_t max = INT64_MAX);
uint64_t parseUnsigned(const std::string &what, const std::string &text);
/// A finite double.
double parseDouble(const std::string &what, const std::string &text);
/// `name=value` with a finite double value.
std::pair<std::string, double> parseNameValue(const std::string &what,
                                              const std::string &text);

} // namespace cleave::tools

#endif // CLEAVE_TOOLS_COMMANDLINE_H
