//===- Runner.cpp - cleave-run: one entry of an artifact on given inputs --===//

#include "Runner.h"

#include "CommandLine.h"
#include "Error.h"

#include "cleave/runtime.hpp"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>

namespace cleave::run {

using tools::ArgumentReader;
using tools::Flag;
using tools::UsageError;

const char *runUsage() {
  return R"(usage: cleave-run MODEL.cleave [options]

Runs one entry of a Cleave artifact on inputs given on the command line and
prints the results as text.

  --entry=NAME           eval_step (default) or micro_step
  --input NAME=VALUES    a data input (repeatable); inputs not given are zeros
  --samples=K            real samples in the batch, 1..B (default B); inputs
                         hold K rows, the runtime pads the rest
  --global NAME=VALUES   overwrite a global before running (repeatable)
  --hyper NAME=X         set a hyperparameter (repeatable)
  --seed=S               seed of the initial parameters (default 0)
  --accumulate=N         micro-steps per optimizer step (default: artifact's)
  --checkpoint=FILE      load a checkpoint before anything else
  --repeat=R             run the entry R times, printing after each (default 1)
  --flush                after the runs, apply a partial window
  --print=WHAT           output, output:NAME, loss, global:NAME, step or
                         micro_steps (repeatable; default: output for
                         eval_step, loss for micro_step)
  --precision=P          significant digits of printed numbers (default 6)
  --threads=T            OpenMP threads of the kernels
  --help                 this text

VALUES is a comma-separated list of numbers (one number fills the whole
tensor) or the name of a file of raw little-endian values of the tensor's
type. Reference: docs/user/cleave-train.md
)";
}

RunOptions parseRunOptions(int argc, char **argv) {
  RunOptions o;
  ArgumentReader args(argc, argv);
  std::vector<std::string> positional;
  auto nameSpec = [](const std::string &flag, const std::string &text) {
    size_t eq = text.find('=');
    if (eq == std::string::npos || eq == 0)
      throw UsageError("invalid value '" + text + "' for " + flag +
                       " (expected NAME=VALUES)");
    return std::make_pair(text.substr(0, eq), text.substr(eq + 1));
  };
  while (args.more()) {
    if (!args.nextIsFlag()) {
      positional.push_back(args.positional());
      continue;
    }
    Flag f = args.flag();
    const std::string &n = f.name;
    if (n == "--help") {
      o.help = true;
      return o;
    } else if (n == "--entry") {
      o.entry = args.value(f);
      if (o.entry != "eval_step" && o.entry != "micro_step")
        throw UsageError("invalid value '" + o.entry +
                         "' for --entry (expected eval_step or micro_step)");
    } else if (n == "--input") {
      o.inputs.push_back(nameSpec(n, args.value(f)));
    } else if (n == "--global") {
      o.globals.push_back(nameSpec(n, args.value(f)));
    } else if (n == "--hyper") {
      o.hyperparameters.push_back(tools::parseNameValue(n, args.value(f)));
    } else if (n == "--samples") {
      o.samples = tools::parseInt(n, args.value(f), 1);
    } else if (n == "--seed") {
      o.seed = tools::parseUnsigned(n, args.value(f));
    } else if (n == "--accumulate") {
      o.accumulate = tools::parseInt(n, args.value(f), 1);
    } else if (n == "--checkpoint") {
      o.checkpoint = args.value(f);
    } else if (n == "--repeat") {
      o.repeat = tools::parseInt(n, args.value(f), 1, 1000000);
    } else if (n == "--flush") {
      if (f.value)
        throw UsageError("option --flush takes no value");
      o.flush = true;
    } else if (n == "--print") {
      o.prints.push_back(args.value(f));
    } else if (n == "--precision") {
      o.precision = int(tools::parseInt(n, args.value(f), 1, 17));
    } else if (n == "--threads") {
      o.threads = int32_t(tools::parseInt(n, args.value(f), 1, 4096));
    } else {
      throw UsageError("unknown option '" + n +
                       "' (cleave-run --help lists the options)");
    }
  }
  if (positional.size() != 1)
    throw UsageError(positional.empty()
                         ? "no model given (usage: cleave-run MODEL.cleave "
                           "[options]; --help for more)"
                         : "unexpected argument '" + positional[1] + "'");
  o.artifact = positional[0];
  if (o.prints.empty())
    o.prints.push_back(o.entry == "eval_step" ? "output" : "loss");
  return o;
}

namespace {

size_t dtypeSize(cleave_dtype dtype) { return cleave_dtype_size(dtype); }
const char *dtypeName(cleave_dtype dtype) { return cleave_dtype_name(dtype); }

bool isInteger(cleave_dtype dtype) {
  switch (dtype) {
  case CLEAVE_DTYPE_F32:
  case CLEAVE_DTYPE_F64:
  case CLEAVE_DTYPE_F16:
  case CLEAVE_DTYPE_BF16:
    return false;
  default:
    return true;
  }
}

/// The range of an integer dtype.
std::pair<long long, long long> integerRange(cleave_dtype dtype) {
  switch (dtype) {
  case CLEAVE_DTYPE_I8:
    return {INT8_MIN, INT8_MAX};
  case CLEAVE_DTYPE_U8:
    return {0, UINT8_MAX};
  case CLEAVE_DTYPE_I16:
    return {INT16_MIN, INT16_MAX};
  case CLEAVE_DTYPE_U16:
    return {0, UINT16_MAX};
  case CLEAVE_DTYPE_I32:
    return {INT32_MIN, INT32_MAX};
  case CLEAVE_DTYPE_U32:
    return {0, UINT32_MAX};
  default:
    return {LLONG_MIN, LLONG_MAX};
  }
}

/// The binary interchange formats narrower than f32, by their field widths.
struct SmallFloat {
  int mantissaBits, exponentBits;
};
constexpr SmallFloat kF16 = {10, 5}, kBF16 = {7, 8};

/// `v` rounded to nearest even in `f`, as its bits.
uint16_t encodeSmallFloat(double v, SmallFloat f) {
  const int bias = (1 << (f.exponentBits - 1)) - 1;
  const uint32_t sign =
      std::signbit(v) ? 1u << (f.mantissaBits + f.exponentBits) : 0;
  const uint32_t infinity = uint32_t((1 << f.exponentBits) - 1)
                            << f.mantissaBits;
  if (std::isnan(v))
    return uint16_t(sign | infinity | 1u << (f.mantissaBits - 1));
  const double a = std::fabs(v);
  if (std::isinf(a))
    return uint16_t(sign | infinity);
  // Below the smallest normal the step is fixed: 2^(1 - bias - mantissa).
  // nearbyint rounds to nearest even; a result of 2^mantissa is the
  // smallest normal's encoding.
  if (a < std::ldexp(1.0, 1 - bias))
    return uint16_t(sign | uint32_t(std::nearbyint(
                               std::ldexp(a, f.mantissaBits + bias - 1))));
  int e;
  std::frexp(a, &e); // a = m 2^e, m in [0.5, 1)
  --e;               // a = m' 2^e, m' in [1, 2)
  double q = std::nearbyint(std::ldexp(a, f.mantissaBits - e));
  if (q == std::ldexp(1.0, f.mantissaBits + 1)) {
    q /= 2;
    ++e;
  }
  if (e > bias)
    return uint16_t(sign | infinity);
  return uint16_t(sign | uint32_t(e + bias) << f.mantissaBits |
                  (uint32_t(q) - (1u << f.mantissaBits)));
}

/// The value of the bits `bits` of `f` (exact in a double).
double decodeSmallFloat(uint16_t bits, SmallFloat f) {
  const int bias = (1 << (f.exponentBits - 1)) - 1;
  const uint32_t mantissa = bits & ((1u << f.mantissaBits) - 1);
  const int exponent =
      int(bits >> f.mantissaBits) & ((1 << f.exponentBits) - 1);
  const double sign = bits >> (f.mantissaBits + f.exponentBits) ? -1.0 : 1.0;
  if (exponent == (1 << f.exponentBits) - 1)
    return mantissa ? std::nan("") : sign * INFINITY;
  if (exponent == 0)
    return sign * std::ldexp(double(mantissa), 1 - bias - f.mantissaBits);
  return sign * std::ldexp(double(mantissa | 1u << f.mantissaBits),
                           exponent - bias - f.mantissaBits);
}

/// Parses `text` as a comma-separated list of numbers; nullopt if any item
/// is not one (then `text` names a file).
std::optional<std::vector<std::string>> splitNumbers(const std::string &text) {
  std::vector<std::string> items;
  size_t start = 0;
  while (true) {
    size_t comma = text.find(',', start);
    std::string item = text.substr(
        start, comma == std::string::npos ? std::string::npos : comma - start);
    char *end = nullptr;
    errno = 0;
    std::strtod(item.c_str(), &end);
    if (item.empty() || *end != '\0')
      return std::nullopt;
    items.push_back(item);
    if (comma == std::string::npos)
      return items;
    start = comma + 1;
  }
}

void storeValue(const std::string &what, const std::string &item,
                cleave_dtype dtype, unsigned char *dst) {
  if (isInteger(dtype)) {
    errno = 0;
    char *end = nullptr;
    long long v = std::strtoll(item.c_str(), &end, 10);
    auto [lo, hi] = integerRange(dtype);
    if (*end != '\0' || errno == ERANGE || v < lo || v > hi)
      throw tools::Error(what + ": '" + item + "' is not a " +
                         dtypeName(dtype) + " integer");
    // Little-endian two's complement: the low bytes are the narrow value.
    std::memcpy(dst, &v, dtypeSize(dtype));
    return;
  }
  double v = std::strtod(item.c_str(), nullptr);
  switch (dtype) {
  case CLEAVE_DTYPE_F32: {
    float f = float(v);
    std::memcpy(dst, &f, 4);
    return;
  }
  case CLEAVE_DTYPE_F16:
  case CLEAVE_DTYPE_BF16: {
    uint16_t bits =
        encodeSmallFloat(v, dtype == CLEAVE_DTYPE_F16 ? kF16 : kBF16);
    std::memcpy(dst, &bits, 2);
    return;
  }
  default:
    std::memcpy(dst, &v, 8);
  }
}

template <typename T> T load(const unsigned char *p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

std::string formatNumber(const unsigned char *p, cleave_dtype dtype,
                         int precision) {
  char buf[64];
  auto real = [&](double d) {
    std::snprintf(buf, sizeof(buf), "%.*g", precision, d);
  };
  auto integer = [&](long long i) {
    std::snprintf(buf, sizeof(buf), "%lld", i);
  };
  switch (dtype) {
  case CLEAVE_DTYPE_F32:
    real(load<float>(p));
    break;
  case CLEAVE_DTYPE_F64:
    real(load<double>(p));
    break;
  case CLEAVE_DTYPE_F16:
    real(decodeSmallFloat(load<uint16_t>(p), kF16));
    break;
  case CLEAVE_DTYPE_BF16:
    real(decodeSmallFloat(load<uint16_t>(p), kBF16));
    break;
  case CLEAVE_DTYPE_I8:
    integer(load<int8_t>(p));
    break;
  case CLEAVE_DTYPE_U8:
    integer(load<uint8_t>(p));
    break;
  case CLEAVE_DTYPE_I16:
    integer(load<int16_t>(p));
    break;
  case CLEAVE_DTYPE_U16:
    integer(load<uint16_t>(p));
    break;
  case CLEAVE_DTYPE_I32:
    integer(load<int32_t>(p));
    break;
  case CLEAVE_DTYPE_U32:
    integer(load<uint32_t>(p));
    break;
  case CLEAVE_DTYPE_I64:
    integer(load<int64_t>(p));
    break;
  }
  return buf;
}

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

/// Prints `label: dtype [shape]` and then the values: a scalar on the same
/// line, a vector on one line, anything else one line per index of the
/// first dimension (at most `rows` of them).
void printTensor(std::FILE *out, const std::string &label,
                 const cleave::TensorInfo &info, const unsigned char *data,
                 int64_t rows, int precision) {
  const size_t elem = dtypeSize(info.dtype);
  if (info.shape.empty()) {
    std::fprintf(out, "%s = %s\n", label.c_str(),
                 formatNumber(data, info.dtype, precision).c_str());
    return;
  }
  std::fprintf(out, "%s: %s %s\n", label.c_str(), dtypeName(info.dtype),
               shapeString(info.shape).c_str());
  int64_t perRow = 1;
  for (size_t i = 1; i < info.shape.size(); ++i)
    perRow *= info.shape[i];
  if (info.shape.size() == 1) {
    std::string line;
    for (int64_t i = 0; i < info.shape[0]; ++i)
      line +=
          (i ? " " : "") + formatNumber(data + i * elem, info.dtype, precision);
    std::fprintf(out, "  %s\n", line.c_str());
    return;
  }
  for (int64_t r = 0; r < std::min(rows, info.shape[0]); ++r) {
    std::string line;
    for (int64_t i = 0; i < perRow; ++i)
      line += (i ? " " : "") + formatNumber(data + (r * perRow + i) * elem,
                                            info.dtype, precision);
    std::fprintf(out, "  [%lld] %s\n", (long long)r, line.c_str());
  }
}

} // namespace

std::vector<unsigned char> parseValues(const std::string &what,
                                       const std::string &spec,
                                       cleave_dtype dtype, size_t elements) {
  const size_t elem = dtypeSize(dtype);
  std::vector<unsigned char> bytes(elements * elem);
  if (auto items = splitNumbers(spec)) {
    if (items->size() != 1 && items->size() != elements)
      throw tools::Error(what + ": " + std::to_string(items->size()) +
                         " values, expected " + std::to_string(elements) +
                         " (or one for all)");
    for (size_t i = 0; i < elements; ++i)
      storeValue(what, (*items)[items->size() == 1 ? 0 : i], dtype,
                 bytes.data() + i * elem);
    return bytes;
  }
  std::ifstream file(spec, std::ios::binary);
  if (!file)
    throw tools::Error(what + ": '" + spec +
                       "' is neither a list of numbers nor a readable file (" +
                       std::strerror(errno) + ")");
  // At most one byte more than expected is read: enough to tell a file that
  // is too long, and bounded for one that never ends (/dev/zero, a FIFO).
  file.read(reinterpret_cast<char *>(bytes.data()),
            std::streamsize(bytes.size()));
  const size_t got = size_t(file.gcount());
  const bool longer = got == bytes.size() && file.peek() != EOF;
  if (got != bytes.size() || longer)
    throw tools::Error(what + ": " + spec + " has " +
                       (longer ? "more than " + std::to_string(got)
                               : std::to_string(got)) +
                       " bytes, expected " + std::to_string(elements) + " " +
                       dtypeName(dtype) + " values = " +
                       std::to_string(bytes.size()) + " bytes");
  return bytes;
}

void run(const RunOptions &o, std::FILE *out) {
  cleave::Artifact artifact = cleave::Artifact::load(o.artifact);
  if (!artifact.hasEntry(o.entry))
    throw tools::Error(o.artifact + " has no " + o.entry + " entry");
  const int64_t b = artifact.microBatch();
  const int64_t k = o.samples.value_or(b);
  if (k > b)
    throw tools::Error("--samples=" + std::to_string(k) + " exceeds " +
                       o.artifact + "'s micro-batch size " + std::to_string(b));

  cleave::SessionOptions sessionOptions;
  sessionOptions.seed = o.seed;
  sessionOptions.numThreads = o.threads;
  cleave::Session session(artifact, sessionOptions);
  if (!o.checkpoint.empty())
    session.loadCheckpoint(o.checkpoint);
  if (o.accumulate)
    session.setAccumulation(*o.accumulate);
  for (const auto &[name, value] : o.hyperparameters)
    session.setHyperparameter(name, value);

  const std::vector<cleave::GlobalInfo> globals = artifact.globals();
  auto findGlobal = [&](const std::string &name) -> const cleave::GlobalInfo & {
    for (const auto &g : globals)
      if (g.tensor.name == name)
        return g;
    throw tools::Error(o.artifact + " has no global '" + name + "'");
  };
  for (const auto &[name, spec] : o.globals) {
    const cleave::GlobalInfo &g = findGlobal(name);
    std::vector<unsigned char> bytes =
        parseValues("--global " + name, spec, g.tensor.dtype,
                    g.tensor.bytes / dtypeSize(g.tensor.dtype));
    cleave::check(cleave_session_write_global(session.get(), name.c_str(),
                                              bytes.data(), bytes.size()));
  }

  // The batch: k rows of every user input, zeros unless given.
  const std::vector<cleave::TensorInfo> inputs = artifact.inputs();
  std::vector<std::vector<unsigned char>> storage(inputs.size());
  // Not a structured binding: before C++20 a lambda cannot capture one
  // (Clang refuses; the sanitizer build compiles with Clang).
  for (const auto &input : o.inputs) {
    const std::string &name = input.first;
    if (std::none_of(inputs.begin(), inputs.end(),
                     [&](const auto &in) { return in.name == name; })) {
      std::string list;
      for (const auto &in : inputs)
        list += (list.empty() ? "" : ", ") + in.name;
      throw tools::Error(o.artifact + " has no data input '" + name +
                         "' (its inputs: " + list + ")");
    }
  }
  cleave::Batch batch(k);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const size_t rowElements =
        inputs[i].bytes / dtypeSize(inputs[i].dtype) / size_t(b);
    storage[i].assign(size_t(k) * rowElements * dtypeSize(inputs[i].dtype), 0);
    for (const auto &[name, spec] : o.inputs)
      if (name == inputs[i].name)
        storage[i] = parseValues("--input " + name, spec, inputs[i].dtype,
                                 size_t(k) * rowElements);
    batch.add(storage[i].data(), storage[i].size());
  }

  const std::vector<cleave::TensorInfo> outputs = artifact.outputs(o.entry);
  auto print = [&](const std::string &what) {
    if (what == "loss") {
      std::fprintf(out, "loss = %.*g\n", o.precision, session.lastLoss());
    } else if (what == "step") {
      std::fprintf(out, "step = %lld\n", (long long)session.step());
    } else if (what == "micro_steps") {
      std::fprintf(out, "micro_steps = %lld\n",
                   (long long)session.microSteps());
    } else if (what.rfind("global:", 0) == 0) {
      const cleave::GlobalInfo &g = findGlobal(what.substr(7));
      std::vector<unsigned char> bytes(g.tensor.bytes);
      cleave::check(cleave_session_read_global(
          session.get(), g.tensor.name.c_str(), bytes.data(), bytes.size()));
      printTensor(out, g.tensor.name, g.tensor, bytes.data(),
                  std::numeric_limits<int64_t>::max(), o.precision);
    } else if (what == "output" || what.rfind("output:", 0) == 0) {
      std::string only = what == "output" ? "" : what.substr(7);
      for (const cleave::TensorInfo &info : outputs) {
        if (!only.empty() && info.name != only)
          continue;
        const void *data = nullptr;
        size_t bytes = 0;
        cleave::check(cleave_session_output(session.get(), o.entry.c_str(),
                                            info.name.c_str(), &data, &bytes));
        // Of a batch output, only the k real rows.
        int64_t rows = info.shape.empty() ? 0 : info.shape[0];
        if (rows == b)
          rows = k;
        printTensor(out, o.entry + "." + info.name, info,
                    static_cast<const unsigned char *>(data), rows,
                    o.precision);
      }
    }
  };

  // Check every --print before running anything.
  for (const std::string &what : o.prints) {
    if (what == "loss" || what == "step" || what == "micro_steps" ||
        what == "output")
      continue;
    if (what.rfind("global:", 0) == 0) {
      findGlobal(what.substr(7));
    } else if (what.rfind("output:", 0) == 0) {
      if (std::none_of(outputs.begin(), outputs.end(), [&](const auto &info) {
            return info.name == what.substr(7);
          }))
        throw tools::Error(o.entry + " has no output '" + what.substr(7) + "'");
    } else {
      throw tools::Error("invalid --print value '" + what +
                         "' (expected output, output:NAME, loss, global:NAME, "
                         "step or micro_steps)");
    }
  }

  for (int64_t r = 0; r < o.repeat; ++r) {
    if (o.entry == "eval_step")
      session.eval(batch);
    else
      session.microStep(batch);
    for (const std::string &what : o.prints)
      print(what);
  }
  if (o.flush) {
    session.flush();
    std::fprintf(out, "flushed: step = %lld\n", (long long)session.step());
    for (const std::string &what : o.prints)
      if (what.rfind("global:", 0) == 0 || what == "step" ||
          what == "micro_steps")
        print(what);
  }
  std::fflush(out);
}

int runMain(int argc, char **argv) {
  return tools::runTool("cleave-run", [&] {
    RunOptions options = parseRunOptions(argc, argv);
    if (options.help) {
      std::fputs(runUsage(), stdout);
      return 0;
    }
    run(options, stdout);
    return 0;
  });
}

} // namespace cleave::run
