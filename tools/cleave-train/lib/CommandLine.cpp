//===- CommandLine.cpp - Flag parsing for cleave-train and cleave-run -----===//

#include "CommandLine.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <thread>

namespace cleave::tools {

ArgumentReader::ArgumentReader(int argc, char **argv) {
  for (int i = 1; i < argc; ++i)
    args_.emplace_back(argv[i]);
}

bool ArgumentReader::nextIsFlag() const {
  if (flagsEnded_ || !more())
    return false;
  const std::string &arg = args_[next_];
  return arg.size() > 2 && arg.compare(0, 2, "--") == 0;
}

Flag ArgumentReader::flag() {
  std::string arg = args_[next_++];
  size_t eq = arg.find('=');
  if (eq == std::string::npos)
    return {arg, std::nullopt};
  return {arg.substr(0, eq), arg.substr(eq + 1)};
}

std::string ArgumentReader::positional() {
  while (!flagsEnded_ && more() && args_[next_] == "--") {
    flagsEnded_ = true;
    ++next_;
  }
  if (!more())
    throw UsageError("missing argument");
  return args_[next_++];
}

std::string ArgumentReader::value(const Flag &flag) {
  if (flag.value)
    return *flag.value;
  if (!more() || nextIsFlag() || args_[next_] == "--")
    throw UsageError("option " + flag.name + " needs a value (" + flag.name +
                     "=VALUE)");
  return args_[next_++];
}

int runTool(const char *tool, const std::function<int()> &body) {
  auto fail = [&](const char *message, int code) {
    // One line, whatever a dependency put in its message.
    std::string line = message;
    std::replace(line.begin(), line.end(), '\n', ' ');
    std::fprintf(stderr, "%s: error: %s\n", tool, line.c_str());
    return code;
  };
  try {
    return body();
  } catch (const UsageError &e) {
    // Under mpirun every rank parses the same command line and fails the
    // same way: rank 0 says it once. The others fail too (a rank whose
    // files differ must not leave its peers waiting for it), but a moment
    // later: mpirun aborts the job at the first non-zero exit, which could
    // kill rank 0 before it has said why.
    const char *rank = std::getenv("OMPI_COMM_WORLD_RANK");
    if (rank && std::string(rank) != "0") {
      std::this_thread::sleep_for(std::chrono::seconds(1));
      return 2;
    }
    return fail(e.what(), 2);
  } catch (const std::bad_alloc &) {
    return fail("out of memory", 1);
  } catch (const std::exception &e) {
    return fail(e.what(), 1);
  }
}

int64_t parseInt(const std::string &what, const std::string &text, int64_t min,
                 int64_t max) {
  errno = 0;
  char *end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE)
    throw UsageError("invalid value '" + text + "' for " + what +
                     " (expected an integer)");
  if (v < min)
    throw UsageError(what + " must be at least " + std::to_string(min) +
                     " (got " + text + ")");
  if (v > max)
    throw UsageError(what + " must be at most " + std::to_string(max) +
                     " (got " + text + ")");
  return v;
}

uint64_t parseUnsigned(const std::string &what, const std::string &text) {
  errno = 0;
  char *end = nullptr;
  unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  // strtoull skips leading spaces and accepts a sign, negating: " -1" would
  // be 2^64 - 1. Only digits are taken.
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0])) ||
      *end != '\0' || errno == ERANGE)
    throw UsageError("invalid value '" + text + "' for " + what +
                     " (expected a non-negative integer)");
  return v;
}

double parseDouble(const std::string &what, const std::string &text) {
  errno = 0;
  char *end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(v))
    throw UsageError("invalid value '" + text + "' for " + what +
                     " (expected a finite number)");
  return v;
}

std::pair<std::string, double> parseNameValue(const std::string &what,
                                              const std::string &text) {
  size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    throw UsageError("invalid value '" + text + "' for " + what +
                     " (expected NAME=NUMBER)");
  std::string name = text.substr(0, eq);
  return {name, parseDouble(what + " " + name, text.substr(eq + 1))};
}

} // namespace cleave::tools
