//===- KernelSpec.cpp - Reading manifest kernel entries -------------------===//
//
// Field readers and shape checks for manifest kernel entries.
//
//===----------------------------------------------------------------------===//

#include "kernels/KernelSpec.h"

#include <limits>

namespace cleave::rt {

namespace {
constexpr int64_t kMaxField = std::numeric_limits<int32_t>::max();
} // namespace

const char *jsonTypeName(const nlohmann::json &value) {
  if (value.is_number_integer())
    return "integer";
  // nlohmann calls every number "number"; say which kind was given since
  // "expected an integer, got number" would read as a contradiction.
  if (value.is_number_float())
    return "non-integer number";
  return value.type_name();
}

KernelSpec::KernelSpec(const nlohmann::json &entry, int64_t id, std::string op)
    : entry_(entry), id_(id), op_(std::move(op)) {
  seen_.insert("id");
  seen_.insert("op");
  // Which entry point calls the kernel: informational (tools use it).
  if (auto it = entry_.find("entry"); it != entry_.end()) {
    seen_.insert("entry");
    if (!it->is_string())
      fail(std::string("field 'entry' must be a string, got ") +
           jsonTypeName(*it));
  }
}

void KernelSpec::fail(const std::string &message) const {
  throw KernelSpecError("kernel " + std::to_string(id_) + " (" + op_ +
                        "): " + message);
}

const nlohmann::json &KernelSpec::field(const char *key) {
  seen_.insert(key);
  auto it = entry_.find(key);
  if (it == entry_.end())
    fail(std::string("missing field '") + key + "'");
  return *it;
}

/// Reads one integer, checking type and range. `what` names it in messages
/// ("field 'n'" or "field 'strides'[1]").
static int64_t readInteger(const KernelSpec &spec, const nlohmann::json &value,
                           const std::string &what, int64_t min) {
  if (!value.is_number_integer())
    spec.fail(what + " must be an integer, got " + jsonTypeName(value));
  if (value.is_number_unsigned() &&
      value.get<uint64_t>() > static_cast<uint64_t>(kMaxField))
    spec.fail(what + " is " + value.dump() + ", expected at most " +
              std::to_string(kMaxField));
  int64_t v = value.get<int64_t>();
  if (v < min || v > kMaxField)
    spec.fail(what + " is " + std::to_string(v) + ", expected " +
              (v < min ? "at least " + std::to_string(min)
                       : "at most " + std::to_string(kMaxField)));
  return v;
}

int64_t KernelSpec::integer(const char *key, int64_t min) {
  return readInteger(*this, field(key), std::string("field '") + key + "'",
                     min);
}

std::vector<int64_t> KernelSpec::integerList(const char *key, int64_t min,
                                             size_t n) {
  const nlohmann::json &value = field(key);
  std::string what = std::string("field '") + key + "'";
  if (!value.is_array())
    fail(what + " must be an array of " + std::to_string(n) +
         " integers, got " + jsonTypeName(value));
  if (value.size() != n)
    fail(what + " has " + std::to_string(value.size()) +
         " elements, expected " + std::to_string(n));
  std::vector<int64_t> out;
  for (size_t i = 0; i < n; ++i)
    out.push_back(readInteger(*this, value[i],
                              what + "[" + std::to_string(i) + "]", min));
  return out;
}

bool KernelSpec::boolean(const char *key) {
  const nlohmann::json &value = field(key);
  if (!value.is_boolean())
    fail(std::string("field '") + key + "' must be a boolean, got " +
         jsonTypeName(value));
  return value.get<bool>();
}

bool KernelSpec::boolean(const char *key, bool fallback) {
  if (!entry_.contains(key)) {
    seen_.insert(key);
    return fallback;
  }
  return boolean(key);
}

std::string KernelSpec::choice(const char *key,
                               std::initializer_list<const char *> allowed) {
  const nlohmann::json &value = field(key);
  std::string expected;
  for (const char *a : allowed)
    expected += (expected.empty() ? "'" : ", '") + std::string(a) + "'";
  if (!value.is_string())
    fail(std::string("field '") + key + "' must be a string (one of " +
         expected + "), got " + jsonTypeName(value));
  std::string s = value.get<std::string>();
  for (const char *a : allowed)
    if (s == a)
      return s;
  fail(std::string("field '") + key + "' is '" + s + "', expected one of " +
       expected);
}

std::string KernelSpec::choice(const char *key,
                               std::initializer_list<const char *> allowed,
                               const char *fallback) {
  if (!entry_.contains(key)) {
    seen_.insert(key);
    return fallback;
  }
  return choice(key, allowed);
}

void KernelSpec::finish() const {
  for (auto it = entry_.begin(); it != entry_.end(); ++it)
    if (!seen_.count(it.key()))
      fail("unexpected field '" + it.key() + "' (not an attribute of " + op_ +
           ")");
}

int64_t KernelSpec::elementCount(const char *tensor,
                                 std::initializer_list<int64_t> dims) const {
  int64_t count = 1;
  for (int64_t d : dims)
    if (__builtin_mul_overflow(count, d, &count))
      fail(std::string("tensor '") + tensor + "' is too large");
  int64_t bytes;
  if (__builtin_mul_overflow(count, int64_t(sizeof(float)), &bytes))
    fail(std::string("tensor '") + tensor + "' is too large");
  return count;
}

int64_t windowedOutputSize(int64_t in, int64_t kernel, int64_t stride,
                           int64_t padBegin, int64_t padEnd, int64_t dilation) {
  int64_t effective = dilation * (kernel - 1) + 1;
  int64_t span = in + padBegin + padEnd - effective;
  return span < 0 ? 0 : span / stride + 1;
}

void checkWindowedShape(const KernelSpec &spec, int64_t h, int64_t w,
                        int64_t oh, int64_t ow,
                        const std::array<int64_t, 2> &kernel,
                        const std::array<int64_t, 2> &strides,
                        const std::array<int64_t, 4> &padding,
                        const std::array<int64_t, 2> &dilations) {
  const char *names[2] = {"oh", "ow"};
  const char *ins[2] = {"h", "w"};
  const char *begins[2] = {"pad_top", "pad_left"};
  const char *ends[2] = {"pad_bottom", "pad_right"};
  int64_t in[2] = {h, w}, out[2] = {oh, ow};
  for (int d = 0; d < 2; ++d) {
    int64_t expected = windowedOutputSize(
        in[d], kernel[d], strides[d], padding[d], padding[d + 2], dilations[d]);
    if (expected == 0)
      spec.fail(std::string("the window (") + std::to_string(kernel[d]) +
                " taps, dilation " + std::to_string(dilations[d]) +
                ") is larger than the padded input along " + ins[d] + " (" +
                std::to_string(in[d] + padding[d] + padding[d + 2]) + ")");
    if (out[d] != expected)
      spec.fail(std::string("field '") + names[d] + "' is " +
                std::to_string(out[d]) + ", expected " +
                std::to_string(expected) + " = (" + ins[d] + " + " + begins[d] +
                " + " + ends[d] +
                " - dilation*(kernel-1) - 1) / "
                "stride + 1");
  }
}

MatmulEntry readMatmulEntry(KernelSpec &spec) {
  MatmulEntry e;
  e.batch = spec.integer("batch", 1);
  e.m = spec.integer("m", 1);
  e.k = spec.integer("k", 1);
  e.n = spec.integer("n", 1);
  e.transA = spec.boolean("trans_a");
  e.transB = spec.boolean("trans_b");
  e.bBatched = spec.boolean("b_batched");
  e.bias = spec.boolean("bias");
  e.relu = spec.choice("activation", {"none", "relu"}) == "relu";
  e.accumulate = spec.boolean("accumulate");
  e.bf16 = spec.bf16Math();
  spec.finish();
  // C += act(AB + bias) is not what accumulation means for any gradient, and
  // ruling it out keeps the post-op chain a plain sum.
  if (e.accumulate && (e.relu || e.bias))
    spec.fail("'accumulate' requires 'activation': 'none' and 'bias': false");
  spec.elementCount("a", {e.batch, e.m, e.k});
  spec.elementCount("b", {e.bBatched ? e.batch : 1, e.k, e.n});
  spec.elementCount("c", {e.batch, e.m, e.n});
  return e;
}

ConvEntry readConvEntry(KernelSpec &spec, ConvDirection direction) {
  ConvEntry e;
  e.n = spec.integer("n", 1), e.c = spec.integer("c", 1);
  e.h = spec.integer("h", 1), e.w = spec.integer("w", 1);
  e.o = spec.integer("o", 1);
  e.kh = spec.integer("kh", 1), e.kw = spec.integer("kw", 1);
  e.oh = spec.integer("oh", 1), e.ow = spec.integer("ow", 1);
  e.strides = spec.integers<2>("strides", 1);
  e.padding = spec.integers<4>("padding", 0);
  e.dilations = spec.integers<2>("dilations", 1);
  e.groups = spec.integer("groups", 1);
  if (direction == ConvDirection::Forward) {
    e.bias = spec.boolean("bias");
    e.relu = spec.choice("activation", {"none", "relu"}) == "relu";
  }
  if (direction == ConvDirection::BackwardWeights)
    e.accumulate = spec.boolean("accumulate");
  e.bf16 = spec.bf16Math();
  spec.finish();
  if (e.c % e.groups != 0 || e.o % e.groups != 0)
    spec.fail("'groups' (" + std::to_string(e.groups) +
              ") must divide both 'c' (" + std::to_string(e.c) +
              ") and 'o' (" + std::to_string(e.o) + ")");
  checkWindowedShape(spec, e.h, e.w, e.oh, e.ow, {e.kh, e.kw}, e.strides,
                     e.padding, e.dilations);
  spec.elementCount("src", {e.n, e.c, e.h, e.w});
  spec.elementCount("wei", {e.o, e.c / e.groups, e.kh, e.kw});
  spec.elementCount("dst", {e.n, e.o, e.oh, e.ow});
  return e;
}

PoolEntry readPoolEntry(KernelSpec &spec, bool max) {
  PoolEntry e;
  e.n = spec.integer("n", 1), e.c = spec.integer("c", 1);
  e.h = spec.integer("h", 1), e.w = spec.integer("w", 1);
  e.oh = spec.integer("oh", 1), e.ow = spec.integer("ow", 1);
  e.kernel = spec.integers<2>("kernel", 1);
  e.strides = spec.integers<2>("strides", 1);
  e.padding = spec.integers<4>("padding", 0);
  e.dilations = spec.integers<2>("dilations", 1);
  // Meaningless for max pooling, where the manifest may still carry it.
  e.includePad = max ? spec.boolean("count_include_pad", false)
                     : spec.boolean("count_include_pad");
  spec.finish();
  checkWindowedShape(spec, e.h, e.w, e.oh, e.ow, e.kernel, e.strides,
                     e.padding, e.dilations);
  spec.elementCount("src", {e.n, e.c, e.h, e.w});
  spec.elementCount("dst", {e.n, e.c, e.oh, e.ow});
  return e;
}

} // namespace cleave::rt
