//===- KernelSpec.cpp - Reading manifest kernel entries -------------------===//
//
// Field readers and shape checks for manifest kernel entries.
//
//===----------------------------------------------------------------------===//

#include "kernels/KernelSpec.h"

#include <cmath>
#include <limits>
#include <string_view>
#include <type_traits>

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

KernelSpec::KernelSpec(const nlohmann::json &entry, const KernelHeader &header)
    : entry_(entry), id_(header.id), kernelOp_(header.op),
      op_(abi::name(header.op)) {
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

double KernelSpec::number(const char *key) {
  const nlohmann::json &value = field(key);
  if (!value.is_number())
    fail(std::string("field '") + key + "' must be a number, got " +
         jsonTypeName(value));
  double v = value.get<double>();
  if (!std::isfinite(v))
    fail(std::string("field '") + key + "' must be finite");
  return v;
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
  return choice(key, std::vector<const char *>(allowed));
}

std::string KernelSpec::choice(const char *key,
                               const std::vector<const char *> &allowed) {
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

KernelHeader readKernelHeader(const nlohmann::json &entry, size_t index,
                              size_t count) {
  std::string where = "kernels[" + std::to_string(index) + "]";
  if (!entry.is_object())
    throw KernelSpecError(where + ": must be an object, got " +
                          jsonTypeName(entry));
  auto id = entry.find("id");
  if (id == entry.end())
    throw KernelSpecError(where + ": missing field 'id'");
  if (!id->is_number_integer())
    throw KernelSpecError(where + ": field 'id' must be an integer, got " +
                          jsonTypeName(*id));
  bool negative = !id->is_number_unsigned() && id->get<int64_t>() < 0;
  if (negative || id->get<uint64_t>() >= count)
    throw KernelSpecError(
        where + ": id " + id->dump() + " is out of range: the manifest has " +
        std::to_string(count) + " kernels, so ids must be 0.." +
        std::to_string(count - 1));
  KernelHeader header{id->get<int64_t>(), abi::KernelOp()};
  where = "kernel " + std::to_string(header.id);
  auto op = entry.find("op");
  if (op == entry.end())
    throw KernelSpecError(where + ": missing field 'op'");
  if (!op->is_string())
    throw KernelSpecError(where + ": field 'op' must be a string, got " +
                          jsonTypeName(*op));
  std::optional<abi::KernelOp> parsed =
      abi::parse<abi::KernelOp>(op->get<std::string>());
  if (!parsed) {
    std::string known;
    for (const abi::CaseDesc &c : abi::EnumInfo<abi::KernelOp>::cases)
      known += (known.empty() ? "" : ", ") + std::string(c.spelling);
    throw KernelSpecError(where + ": unknown op '" + op->get<std::string>() +
                          "' (expected one of " + known + ")");
  }
  header.op = *parsed;
  return header;
}

namespace detail {

/// Reads a field of type T with KernelSpec's checks (and so its messages),
/// and spells an O(v) row's default.
template <class T> struct SpecField;

template <> struct SpecField<abi::KInt> {
  static int64_t read(KernelSpec &spec, const abi::FieldDesc &f) {
    return spec.integer(f.key, f.check.kind == abi::CheckKind::Min
                                   ? f.check.min
                                   : std::numeric_limits<int64_t>::min());
  }
  static int64_t fallback(const char *text) { return std::stoll(text); }
};
template <> struct SpecField<abi::Int> : SpecField<abi::KInt> {};

template <> struct SpecField<abi::Bool> {
  static bool read(KernelSpec &spec, const abi::FieldDesc &f) {
    return spec.boolean(f.key);
  }
  static bool fallback(const char *text) {
    return std::string_view(text) == "true";
  }
};

template <> struct SpecField<abi::Number> {
  static double read(KernelSpec &spec, const abi::FieldDesc &f) {
    return spec.number(f.key);
  }
};

template <class E> struct SpecField<abi::Enum<E>> {
  static E read(KernelSpec &spec, const abi::FieldDesc &f) {
    std::vector<const char *> spellings;
    for (const abi::CaseDesc &c : abi::EnumInfo<E>::cases)
      spellings.push_back(c.spelling);
    return *abi::parse<E>(spec.choice(f.key, spellings));
  }
  static E fallback(const char *text) { return *abi::parse<E>(text); }
};

template <int N> struct SpecField<abi::Ints<N>> {
  static std::vector<int64_t> read(KernelSpec &spec, const abi::FieldDesc &f) {
    std::array<int64_t, N> v =
        spec.integers<N>(f.key, f.check.kind == abi::CheckKind::Min
                                    ? f.check.min
                                    : std::numeric_limits<int64_t>::min());
    return std::vector<int64_t>(v.begin(), v.end());
  }
};

/// Only `entry`, which no kernel reads: the constructor checked it.
template <> struct SpecField<abi::String> {
  static std::string read(KernelSpec &spec, const abi::FieldDesc &f) {
    spec.accept(f.key);
    return std::string();
  }
};

/// Whether an O(v) row of type T can spell its default (lists cannot).
template <class T, class = void> inline constexpr bool hasFallback = false;
template <class T>
inline constexpr bool
    hasFallback<T, std::void_t<decltype(SpecField<T>::fallback(""))>> = true;

template <class V> void assign(V &member, V value) {
  member = std::move(value);
}
template <class V> void assign(std::optional<V> &member, V value) {
  member = std::move(value);
}

template <class T, class M>
void readKernelField(KernelSpec &spec, const abi::FieldDesc &f, size_t column,
                     M &member) {
  const abi::Presence presence = f.presence.codes[column];
  switch (presence.kind) {
  case abi::PresenceKind::Forbidden:
    return; // finish() names it if present
  case abi::PresenceKind::Ignored:
    spec.accept(f.key);
    return;
  case abi::PresenceKind::Optional:
    if (!spec.has(f.key)) {
      spec.accept(f.key);
      if constexpr (hasFallback<T>)
        if (*presence.defaultText)
          assign(member, SpecField<T>::fallback(presence.defaultText));
      return;
    }
    [[fallthrough]];
  case abi::PresenceKind::Required:
    assign(member, SpecField<T>::read(spec, f));
    return;
  }
}

} // namespace detail

} // namespace cleave::rt

namespace cleave::abi::spec_detail {

// One reader per struct of the table, each closed by the next; a class
// template, so that only the Kernel one, the one used, is instantiated.
template <class S, class = void> struct ReadRows;
template <class Dummy> struct ReadRows<void, Dummy> {
  template <class Out> static void read(rt::KernelSpec &, size_t, Out &) {
#define CLEAVE_STRUCT(Struct_, path_, Discriminator_, Strictness_, doc_)       \
  }                                                                            \
  }                                                                            \
  ;                                                                            \
  template <class Dummy> struct ReadRows<Struct_, Dummy> {                     \
    template <class Out>                                                       \
    static void read(rt::KernelSpec &spec, size_t column, Out &out) {          \
      [[maybe_unused]] size_t field = 0;                                       \
      [[maybe_unused]] const FieldDesc *fields = StructInfo<Struct_>::fields;
#define CLEAVE_FIELD(Struct_, member_, key_, Type_, check_, origin_, doc_,     \
                     ...)                                                      \
  rt::detail::readKernelField<Type_>(spec, fields[field++], column,            \
                                     out.member_);
#define CLEAVE_SCHEMA_DEF_KERNEL "../../include/cleave/artifact_schema.def"
#include CLEAVE_SCHEMA_DEF_KERNEL
#undef CLEAVE_SCHEMA_DEF_KERNEL
  }
};

} // namespace cleave::abi::spec_detail

namespace cleave::rt {

abi::Kernel readKernel(KernelSpec &spec, abi::KernelOp op) {
  abi::Kernel out;
  abi::spec_detail::ReadRows<abi::Kernel>::read(spec, static_cast<size_t>(op),
                                                out);
  spec.finish();
  return out;
}

std::string checkKernelTable(const nlohmann::json &kernels) {
  if (!kernels.is_array())
    return std::string("manifest field 'kernels' must be an array, got ") +
           jsonTypeName(kernels);
  std::vector<bool> seen(kernels.size());
  try {
    for (size_t i = 0; i < kernels.size(); ++i) {
      KernelHeader header = readKernelHeader(kernels[i], i, kernels.size());
      if (seen[header.id])
        throw KernelSpecError("kernel " + std::to_string(header.id) +
                              ": duplicate id (kernels[" + std::to_string(i) +
                              "] reuses it)");
      seen[header.id] = true;
      KernelSpec spec(kernels[i], header);
      switch (header.op) {
      case abi::KernelOp::matmul:
        readMatmulEntry(spec);
        break;
      case abi::KernelOp::conv2d_fwd:
      case abi::KernelOp::conv2d_bwd_data:
      case abi::KernelOp::conv2d_bwd_weights:
        readConvEntry(spec);
        break;
      case abi::KernelOp::max_pool2d_fwd:
      case abi::KernelOp::avg_pool2d_fwd:
      case abi::KernelOp::max_pool2d_bwd:
      case abi::KernelOp::avg_pool2d_bwd:
        readPoolEntry(spec);
        break;
      case abi::KernelOp::sdpa_fwd:
      case abi::KernelOp::sdpa_bwd:
        readSdpaEntry(spec);
        break;
      }
    }
  } catch (const KernelSpecError &e) {
    return e.what();
  }
  return std::string();
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
  const abi::Kernel k = readKernel(spec, spec.kernelOp());
  MatmulEntry e;
  e.batch = *k.batch, e.m = *k.m, e.k = *k.k, e.n = *k.n;
  e.transA = *k.transA, e.transB = *k.transB, e.bBatched = *k.bBatched;
  e.bias = *k.bias;
  e.relu = *k.activation == abi::Activation::relu;
  e.accumulate = *k.accumulate;
  e.bf16 = *k.math == abi::Math::bf16;
  e.aBf16 = *k.aType == abi::Storage::bf16;
  e.bBf16 = *k.bType == abi::Storage::bf16;
  if ((e.aBf16 || e.bBf16) && !e.bf16)
    spec.fail("a bf16 operand ('a_type' or 'b_type') needs 'math': 'bf16'");
  // C += act(AB + bias) is not what accumulation means for any gradient, and
  // ruling it out keeps the post-op chain a plain sum.
  if (e.accumulate && (e.relu || e.bias))
    spec.fail("'accumulate' requires 'activation': 'none' and 'bias': false");
  spec.elementCount("a", {e.batch, e.m, e.k});
  spec.elementCount("b", {e.bBatched ? e.batch : 1, e.k, e.n});
  spec.elementCount("c", {e.batch, e.m, e.n});
  return e;
}

template <size_t N>
std::array<int64_t, N> pairs(const std::vector<int64_t> &v) {
  std::array<int64_t, N> out{};
  std::copy(v.begin(), v.end(), out.begin());
  return out;
}

ConvEntry readConvEntry(KernelSpec &spec) {
  const abi::Kernel k = readKernel(spec, spec.kernelOp());
  ConvEntry e;
  e.n = *k.n, e.c = *k.c, e.h = *k.h, e.w = *k.w, e.o = *k.o;
  e.kh = *k.kh, e.kw = *k.kw, e.oh = *k.oh, e.ow = *k.ow;
  e.strides = pairs<2>(*k.strides);
  e.padding = pairs<4>(*k.padding);
  e.dilations = pairs<2>(*k.dilations);
  e.groups = *k.groups;
  e.bias = k.bias.value_or(false);
  e.relu = k.activation == abi::Activation::relu;
  e.accumulate = k.accumulate.value_or(false);
  e.bf16 = *k.math == abi::Math::bf16;
  e.srcBf16 = k.srcType == abi::Storage::bf16;
  e.diffDstBf16 = k.diffDstType == abi::Storage::bf16;
  e.weiBf16 = k.weiType == abi::Storage::bf16;
  e.dstBf16 = k.dstType == abi::Storage::bf16;
  if ((e.srcBf16 || e.diffDstBf16 || e.weiBf16 || e.dstBf16) && !e.bf16)
    spec.fail("a bf16 operand ('src_type', 'diff_dst_type', 'wei_type' or "
              "'dst_type') needs 'math': 'bf16'");
  if (e.dstBf16 && (e.bias || e.relu || e.accumulate))
    spec.fail(std::string("a result stored in bf16 ('dst_type') cannot take "
                          "the entry's ") +
              (e.accumulate ? "'accumulate' (the sum would be rounded)"
                            : "bias or activation") +
              "; the loop that widens the result applies it");
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

PoolEntry readPoolEntry(KernelSpec &spec) {
  const abi::Kernel k = readKernel(spec, spec.kernelOp());
  PoolEntry e;
  e.n = *k.n, e.c = *k.c, e.h = *k.h, e.w = *k.w, e.oh = *k.oh, e.ow = *k.ow;
  e.kernel = pairs<2>(*k.kernel);
  e.strides = pairs<2>(*k.strides);
  e.padding = pairs<4>(*k.padding);
  e.dilations = pairs<2>(*k.dilations);
  // Meaningless for max pooling, where the manifest may still carry it.
  e.includePad = *k.countIncludePad;
  checkWindowedShape(spec, e.h, e.w, e.oh, e.ow, e.kernel, e.strides,
                     e.padding, e.dilations);
  spec.elementCount("src", {e.n, e.c, e.h, e.w});
  spec.elementCount("dst", {e.n, e.c, e.oh, e.ow});
  return e;
}

SdpaEntry readSdpaEntry(KernelSpec &spec) {
  const abi::Kernel k = readKernel(spec, spec.kernelOp());
  SdpaEntry e;
  e.batch = *k.batch, e.seqQ = *k.seqQ, e.seqKv = *k.seqKv;
  e.headDim = *k.headDim, e.valueDim = *k.valueDim;
  e.scale = *k.scale;
  e.causal = *k.causal, e.mask = *k.mask;
  e.dropout = k.dropout.value_or(0);
  e.bf16 = *k.math == abi::Math::bf16;
  bool ioBf16 = *k.ioType == abi::Storage::bf16;
  // The kernel multiplies in the type its tensors are stored in: rounding
  // f32 tensors on the fly is a mode no library offers for attention.
  if (ioBf16 != e.bf16)
    spec.fail(std::string("'math' and 'io_type' must agree (attention "
                          "multiplies in the type it stores), got 'math': '") +
              abi::name(*k.math) + "' and 'io_type': '" + abi::name(*k.ioType) +
              "'");
  if (e.scale == 0)
    spec.fail("field 'scale' must not be 0");
  if (!(e.dropout >= 0 && e.dropout < 1))
    spec.fail("field 'dropout' must be in [0, 1), got " +
              std::to_string(e.dropout));
  spec.elementCount("q", {e.batch, e.seqQ, e.headDim});
  spec.elementCount("k", {e.batch, e.seqKv, e.headDim});
  spec.elementCount("v", {e.batch, e.seqKv, e.valueDim});
  spec.elementCount("o", {e.batch, e.seqQ, e.valueDim});
  spec.elementCount("scores", {e.seqQ, e.seqKv});
  return e;
}

} // namespace cleave::rt
