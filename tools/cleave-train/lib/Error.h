//===- Error.h - Errors of cleave-train and cleave-run ----------*- C++ -*-===//
//
// Inside the tools' libraries a failure is an exception whose message is the
// one line the tool prints after "<tool>: error: ": what failed, the file or
// flag concerned, and what was expected. The runtime's cleave::Error (from
// runtime.hpp) carries such a line too.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_TOOLS_ERROR_H
#define CLEAVE_TOOLS_ERROR_H

#include <stdexcept>

namespace cleave::tools {

/// A failure with a one-line message.
class Error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// A bad command line.
class UsageError : public Error {
public:
  using Error::Error;
};

} // namespace cleave::tools

#endif // CLEAVE_TOOLS_ERROR_H
