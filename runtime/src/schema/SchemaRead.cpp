//===- SchemaRead.cpp - A manifest read by its schema ---------------------===//
//
// readStruct<S> is generated per struct of artifact_schema.def: for each row
// in order, the field's descriptor (presence for the object's case, type,
// check) says what to accept. The values' types each have a Read<T>, whose
// messages are the runtime's ("micro_batch must be a positive integer"),
// which it has always given for these checks.
//
//===----------------------------------------------------------------------===//

#include "schema/SchemaRead.h"
#include "schema/SchemaReadJson.h"

#include "cleave/kernel_abi.h"

#include <cmath>
#include <cstdint>
#include <limits>

namespace cleave::abi {

namespace {

using json = nlohmann::json;

std::string join(const std::string &path, std::string_view key) {
  return path.empty() ? std::string(key) : path + "." + std::string(key);
}

std::string at(const std::string &path, size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

/// What one read carries besides the value: the first fault, and what to do
/// with the kernel table.
struct Reader {
  std::string &error;
  Kernels kernels;

  /// Records "manifest: <path> <what>" (the root: no path) and returns
  /// false.
  bool fail(const std::string &path, const std::string &what) {
    error = "manifest: " + (path.empty() ? what : path + " " + what);
    return false;
  }
};

bool readInteger(const json &j, int64_t &out) {
  if (j.is_number_unsigned()) {
    if (j.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
      return false;
    out = int64_t(j.get<uint64_t>());
    return true;
  }
  if (!j.is_number_integer())
    return false;
  out = j.get<int64_t>();
  return true;
}

/// What an integer field must be, in the words of a check.
std::string integerWanted(const Check &check) {
  if (check.kind != CheckKind::Min)
    return "must be an integer";
  if (check.min == 0)
    return "must be a non-negative integer";
  if (check.min == 1)
    return "must be a positive integer";
  return "must be an integer >= " + std::to_string(check.min);
}

/// "must be one of a, b, c (got 'x')"; a value that is not a string is
/// shown as JSON.
std::string oneOfMessage(const EnumDesc &e, const json &got) {
  return "must be one of " + oneOf(e) + " (got " +
         (got.is_string() ? "'" + got.get<std::string>() + "'" : got.dump()) +
         ")";
}

template <class S>
bool readStruct(const json &j, const std::string &path, S &out, Reader &r);

/// Reads a value of field type T.
template <class T> struct Read;

template <> struct Read<Int> {
  static bool read(const json &j, const std::string &path, const Check &check,
                   int64_t &out, Reader &r) {
    if (!readInteger(j, out) ||
        (check.kind == CheckKind::Min && out < check.min))
      return r.fail(path, integerWanted(check));
    return true;
  }
};

template <> struct Read<KInt> {
  static bool read(const json &j, const std::string &path, const Check &check,
                   int64_t &out, Reader &r) {
    if (!Read<Int>::read(j, path, check, out, r))
      return false;
    if (out > std::numeric_limits<int32_t>::max())
      return r.fail(path, "must be at most 2^31-1");
    return true;
  }
};

template <> struct Read<Number> {
  static bool read(const json &j, const std::string &path, const Check &check,
                   double &out, Reader &r) {
    if (!j.is_number() || !std::isfinite(j.get<double>()))
      return r.fail(path, "must be a finite number");
    out = j.get<double>();
    if (check.kind == CheckKind::Min && out < double(check.min))
      return r.fail(path, check.min == 0 ? std::string("must be non-negative")
                                         : "must be at least " +
                                               std::to_string(check.min));
    return true;
  }
};

template <> struct Read<Bool> {
  static bool read(const json &j, const std::string &path, const Check &,
                   bool &out, Reader &r) {
    if (!j.is_boolean())
      return r.fail(path, "must be true or false");
    out = j.get<bool>();
    return true;
  }
};

template <> struct Read<String> {
  static bool read(const json &j, const std::string &path, const Check &check,
                   std::string &out, Reader &r) {
    if (check.kind == CheckKind::SmArch) {
      if (!j.is_string() || !isSmArch(j.get<std::string>()))
        return r.fail(path,
                      "must be an SM architecture such as \"sm_80\" (got " +
                          j.dump() + ")");
    } else if (!j.is_string() || (check.kind == CheckKind::NonEmpty &&
                                  j.get_ref<const std::string &>().empty())) {
      return r.fail(path, check.kind == CheckKind::NonEmpty
                              ? "must be a non-empty string"
                              : "must be a string");
    }
    out = j.get<std::string>();
    return true;
  }
};

template <class E> struct Read<Enum<E>> {
  static bool read(const json &j, const std::string &path, const Check &,
                   E &out, Reader &r) {
    std::optional<E> value =
        j.is_string() ? parse<E>(j.get<std::string>()) : std::nullopt;
    if (!value)
      return r.fail(path, oneOfMessage(enumDesc<E>(), j));
    out = *value;
    return true;
  }
};

template <> struct Read<Shape> {
  static bool read(const json &j, const std::string &path, const Check &,
                   std::vector<int64_t> &out, Reader &r) {
    out.clear();
    if (j.is_array())
      for (const json &d : j) {
        int64_t v = 0;
        if (!readInteger(d, v) || v < 0)
          break;
        out.push_back(v);
      }
    if (!j.is_array() || out.size() != j.size())
      return r.fail(path, "must be a list of non-negative integers");
    return true;
  }
};

template <int N> struct Read<Ints<N>> {
  static bool read(const json &j, const std::string &path, const Check &check,
                   std::vector<int64_t> &out, Reader &r) {
    if (!j.is_array() || (N != 0 && j.size() != size_t(N)))
      return r.fail(path,
                    N ? "must be a list of " + std::to_string(N) + " integers"
                      : std::string("must be a list of integers"));
    out.clear();
    for (size_t i = 0; i < j.size(); ++i) {
      int64_t v = 0;
      if (!Read<Int>::read(j[i], at(path, i), check, v, r))
        return false;
      out.push_back(v);
    }
    return true;
  }
};

/// A list of SM architectures (SmArch) is refused as a whole unless it has
/// one at least, and an element by its index; other lists of strings as a
/// whole.
template <> struct Read<Strings> {
  static bool read(const json &j, const std::string &path, const Check &check,
                   std::vector<std::string> &out, Reader &r) {
    const bool arches = check.kind == CheckKind::SmArch;
    if (!j.is_array() || (arches && j.empty()))
      return r.fail(path, arches ? "must be a non-empty list of SM "
                                   "architectures (\"sm_80\", \"sm_90a\", ...)"
                                 : "must be a list of strings");
    out.clear();
    for (size_t i = 0; i < j.size(); ++i) {
      if (!arches && !j[i].is_string())
        return r.fail(path, "must be a list of strings");
      std::string s;
      if (!Read<String>::read(j[i], at(path, i), check, s, r))
        return false;
      out.push_back(std::move(s));
    }
    return true;
  }
};

/// A list of objects of struct S.
template <class S>
bool readStructs(const json &j, const std::string &path, std::vector<S> &out,
                 Reader &r) {
  if (!j.is_array())
    return r.fail(path, "must be a list");
  out.clear();
  out.resize(j.size());
  for (size_t i = 0; i < j.size(); ++i)
    if (!readStruct(j[i], at(path, i), out[i], r))
      return false;
  return true;
}

template <class S> struct Read<List<S>> {
  static bool read(const json &j, const std::string &path, const Check &,
                   std::vector<S> &out, Reader &r) {
    return readStructs(j, path, out, r);
  }
};

/// The kernel table, unless its reading is deferred to the session (which
/// reads the raw entries with KernelSpec): then only a list of objects.
template <> struct Read<List<Kernel>> {
  static bool read(const json &j, const std::string &path, const Check &,
                   std::vector<Kernel> &out, Reader &r) {
    if (r.kernels == Kernels::Read || !j.is_array())
      return readStructs(j, path, out, r);
    out.clear();
    for (size_t i = 0; i < j.size(); ++i)
      if (!j[i].is_object())
        return r.fail(at(path, i), "must be an object");
    return true;
  }
};

template <class S> struct Read<Map<S>> {
  static bool read(const json &j, const std::string &path, const Check &,
                   std::vector<std::pair<std::string, S>> &out, Reader &r) {
    if (!j.is_object())
      return r.fail(path, "must be an object");
    out.clear();
    for (auto it = j.begin(); it != j.end(); ++it) {
      out.emplace_back(it.key(), S());
      if (!readStruct(it.value(), join(path, it.key()), out.back().second, r))
        return false;
    }
    return true;
  }
};

template <class S> struct Read<Object<S>> {
  static bool read(const json &j, const std::string &path, const Check &,
                   S &out, Reader &r) {
    return readStruct(j, path, out, r);
  }
};

template <class V> V &emplace(V &member) { return member; }
template <class V> V &emplace(std::optional<V> &member) {
  return member.emplace();
}

/// Reads `key` of `j` into `member` as `field` says for the object's case
/// `column` (named `caseName` in errors).
template <class T, class M>
bool readField(const json &j, const std::string &path, const FieldDesc &field,
               size_t column, const char *caseName, bool strict, M &member,
               Reader &r) {
  const Presence presence = field.presence.codes[column];
  auto it = j.find(field.key);
  if (it == j.end()) {
    if (presence.kind == PresenceKind::Required)
      return r.fail(join(path, field.key), "is missing");
    return true;
  }
  if (presence.kind == PresenceKind::Forbidden) {
    if (strict)
      return r.fail(join(path, field.key),
                    std::string("is not allowed") +
                        (caseName ? std::string(" for ") + caseName : ""));
    return true; // ignored, as keys no row lists are
  }
  return Read<T>::read(*it, join(path, field.key), field.check, emplace(member),
                       r);
}

/// Checks that `j` is an object, finds its case of the struct's
/// discriminator (`column`, named `caseName`), and in a Strict struct
/// refuses keys no row lists.
bool prepare(const StructDesc &s, const json &j, const std::string &path,
             size_t &column, const char *&caseName, Reader &r) {
  if (!j.is_object())
    return r.fail(path,
                  path.empty() ? "must be a JSON object" : "must be an object");
  column = 0;
  caseName = nullptr;
  if (const FieldDesc *f = discriminatorField(s)) {
    const EnumDesc *e = s.columns();
    auto it = j.find(f->key);
    if (it == j.end() && f->presence.codes[0].kind == PresenceKind::Required)
      return r.fail(join(path, f->key), "is missing");
    json spelling =
        it != j.end() ? *it : json(f->presence.codes[0].defaultText);
    column = e->count;
    for (size_t c = 0; c < e->count; ++c)
      if (spelling.is_string() &&
          spelling.get_ref<const std::string &>() == e->cases[c].spelling)
        column = c;
    if (column == e->count)
      return r.fail(join(path, f->key), oneOfMessage(*e, spelling));
    caseName = e->cases[column].spelling;
  }
  if (s.strictness == Strictness::Strict)
    for (auto it = j.begin(); it != j.end(); ++it) {
      bool known = false;
      for (size_t i = 0; i < s.count && !known; ++i)
        known = it.key() == s.fields[i].key;
      if (!known)
        return r.fail(join(path, it.key()), "is not a known field");
    }
  return true;
}

// One readStruct per struct, leaf first (each defined before the one that
// holds it), each closed by the next.
[[maybe_unused]] bool schemaFirstRead_() {
#define CLEAVE_STRUCT(Struct_, path_, Discriminator_, Strictness_, doc_)       \
  return true;                                                                 \
  }                                                                            \
  template <>                                                                  \
  bool readStruct<Struct_>(const json &j, const std::string &path,             \
                           Struct_ &out, Reader &r) {                          \
    using Info = StructInfo<Struct_>;                                          \
    static constexpr StructDesc desc = {                                       \
        Info::name, Info::path,   Info::discriminator,    Info::strictness,    \
        Info::doc,  Info::fields, std::size(Info::fields)};                    \
    size_t column = 0, field = 0;                                              \
    const char *caseName = nullptr;                                            \
    const bool strict = desc.strictness == Strictness::Strict;                 \
    if (!prepare(desc, j, path, column, caseName, r))                          \
      return false;
#define CLEAVE_FIELD(Struct_, member_, key_, Type_, check_, origin_, doc_,     \
                     ...)                                                      \
  if (!readField<Type_>(j, path, desc.fields[field++], column, caseName,       \
                        strict, out.member_, r))                               \
    return false;
#define CLEAVE_SCHEMA_DEF_READ "../../include/cleave/artifact_schema.def"
#include CLEAVE_SCHEMA_DEF_READ
  return true;
}

} // namespace

bool parseJson(std::string_view text, json &root, std::string &error) {
  try {
    root = json::parse(text.begin(), text.end());
    return true;
  } catch (const json::exception &e) {
    // Drop nlohmann's "[json.exception.parse_error.101] " tag.
    std::string what = e.what();
    size_t tagEnd = what.find("] ");
    if (tagEnd != std::string::npos)
      what = what.substr(tagEnd + 2);
    error = "manifest: is not valid JSON (" + what + ")";
    return false;
  }
}

bool readManifest(const json &root, Manifest &out, Kernels kernels,
                  std::string &error) {
  Reader r{error, kernels};
  out = Manifest();
  try {
    // The version first: a manifest of another version may mean anything
    // by its other keys.
    if (!root.is_object())
      return r.fail("", "must be a JSON object");
    auto version = root.find("abi_version");
    if (version == root.end())
      return r.fail("abi_version", "is missing");
    if (!Read<Int>::read(*version, "abi_version", Min(0), out.abiVersion, r))
      return false;
    if (out.abiVersion != CLEAVE_KERNEL_ABI_VERSION)
      return r.fail("abi_version",
                    "is " + std::to_string(out.abiVersion) +
                        ", this runtime supports " +
                        std::to_string(CLEAVE_KERNEL_ABI_VERSION));
    return readStruct(root, "", out, r);
  } catch (const std::exception &e) {
    return r.fail("", e.what());
  }
}

bool readManifestText(std::string_view text, Manifest &out, std::string &error,
                      Kernels kernels) {
  json root;
  return parseJson(text, root, error) &&
         readManifest(root, out, kernels, error);
}

} // namespace cleave::abi
