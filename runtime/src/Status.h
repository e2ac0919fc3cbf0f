//===- Status.h - Error values of the runtime -------------------*- C++ -*-===//
//
// The runtime reports every error as a value: a cleave_status code and a
// one-line message. The C API hands both to the caller; nothing is thrown
// across it.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_STATUS_H
#define CLEAVE_RUNTIME_STATUS_H

#include "cleave/runtime.h"

#include <sstream>
#include <string>
#include <utility>

namespace cleave::rt {

/// The result of an operation that can fail: CLEAVE_OK, or an error code with
/// a message saying what failed, where, and what was expected.
class [[nodiscard]] Status {
public:
  Status() = default;
  Status(cleave_status code, std::string message)
      : code_(code), message_(std::move(message)) {}

  static Status success() { return Status(); }

  bool ok() const { return code_ == CLEAVE_OK; }
  cleave_status code() const { return code_; }
  const std::string &message() const { return message_; }

  /// Returns a copy whose message is prefixed by `context` and ": ".
  Status withContext(const std::string &context) const {
    if (ok())
      return *this;
    return Status(code_, context + ": " + message_);
  }

private:
  cleave_status code_ = CLEAVE_OK;
  std::string message_;
};

/// Builds an error whose message is the concatenation of `parts`.
template <typename... Parts>
Status makeError(cleave_status code, const Parts &...parts) {
  std::ostringstream os;
  (os << ... << parts);
  return Status(code, os.str());
}

} // namespace cleave::rt

/// Returns from the enclosing function if `expr` yields an error Status.
#define CLEAVE_RETURN_IF_ERROR(expr)                                           \
  do {                                                                         \
    ::cleave::rt::Status cleaveStatus_ = (expr);                               \
    if (!cleaveStatus_.ok())                                                   \
      return cleaveStatus_;                                                    \
  } while (false)

#endif // CLEAVE_RUNTIME_STATUS_H
