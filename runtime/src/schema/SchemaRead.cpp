//===- SchemaRead.cpp - A manifest read by its schema ---------------------===//
//
// readStruct<S> is generated per struct of artifact_schema.def: for each row
// in order, the field's descriptor (presence for the object's case, type,
// check) says what to accept. The values' types each have a Read<T>.
//
//===----------------------------------------------------------------------===//

#include "schema/SchemaRead.h"

#include <nlohmann/json.hpp>

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

bool fail(std::string &error, const std::string &path,
          const std::string &what) {
  error = "manifest: " + path + " " + what;
  return false;
}

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

bool checkMin(const Check &check, double value, std::string &error,
              const std::string &path) {
  if (check.kind == CheckKind::Min && value < double(check.min))
    return fail(error, path, "must be at least " + std::to_string(check.min));
  return true;
}

template <class S>
bool readStruct(const json &j, const std::string &path, S &out,
                std::string &error);

/// Reads a value of field type T.
template <class T> struct Read;

template <> struct Read<Int> {
  static bool read(const json &j, const std::string &path, const Check &check,
                   int64_t &out, std::string &error) {
    if (!readInteger(j, out))
      return fail(error, path, "must be an integer");
    return checkMin(check, double(out), error, path);
  }
};

template <> struct Read<KInt> {
  static bool read(const json &j, const std::string &path, const Check &check,
                   int64_t &out, std::string &error) {
    if (!readInteger(j, out) || out > std::numeric_limits<int32_t>::max())
      return fail(error, path, "must be an integer of at most 2^31-1");
    return checkMin(check, double(out), error, path);
  }
};

template <> struct Read<Number> {
  static bool read(const json &j, const std::string &path, const Check &check,
                   double &out, std::string &error) {
    if (!j.is_number() || !std::isfinite(j.get<double>()))
      return fail(error, path, "must be a finite number");
    out = j.get<double>();
    return checkMin(check, out, error, path);
  }
};

template <> struct Read<Bool> {
  static bool read(const json &j, const std::string &path, const Check &,
                   bool &out, std::string &error) {
    if (!j.is_boolean())
      return fail(error, path, "must be true or false");
    out = j.get<bool>();
    return true;
  }
};

template <> struct Read<String> {
  static bool read(const json &j, const std::string &path, const Check &check,
                   std::string &out, std::string &error) {
    if (!j.is_string())
      return fail(error, path, "must be a string");
    out = j.get<std::string>();
    if (check.kind == CheckKind::NonEmpty && out.empty())
      return fail(error, path, "must not be empty");
    if (check.kind == CheckKind::SmArch && !isSmArch(out))
      return fail(error, path,
                  "must be an SM architecture such as \"sm_80\" (got " +
                      j.dump() + ")");
    return true;
  }
};

template <class E> struct Read<Enum<E>> {
  static bool read(const json &j, const std::string &path, const Check &,
                   E &out, std::string &error) {
    std::optional<E> value =
        j.is_string() ? parse<E>(j.get<std::string>()) : std::nullopt;
    if (!value)
      return fail(error, path, "must be one of " + oneOf<E>());
    out = *value;
    return true;
  }
};

/// A list of integers, `size` of them unless 0, each passing `check`
/// (Shape: at least 0).
bool readInts(const json &j, const std::string &path, const Check &check,
              size_t size, std::vector<int64_t> &out, std::string &error) {
  if (!j.is_array() || (size != 0 && j.size() != size))
    return fail(error, path,
                size ? "must be a list of " + std::to_string(size) + " integers"
                     : std::string("must be a list of integers"));
  out.clear();
  for (size_t i = 0; i < j.size(); ++i) {
    int64_t v = 0;
    if (!Read<Int>::read(j[i], at(path, i), check, v, error))
      return false;
    out.push_back(v);
  }
  return true;
}

template <> struct Read<Shape> {
  static bool read(const json &j, const std::string &path, const Check &,
                   std::vector<int64_t> &out, std::string &error) {
    return readInts(j, path, Min(0), 0, out, error);
  }
};

template <int N> struct Read<Ints<N>> {
  static bool read(const json &j, const std::string &path, const Check &check,
                   std::vector<int64_t> &out, std::string &error) {
    return readInts(j, path, check, size_t(N), out, error);
  }
};

template <> struct Read<Strings> {
  static bool read(const json &j, const std::string &path, const Check &check,
                   std::vector<std::string> &out, std::string &error) {
    if (!j.is_array())
      return fail(error, path, "must be a list of strings");
    out.clear();
    for (size_t i = 0; i < j.size(); ++i) {
      std::string s;
      if (!Read<String>::read(j[i], at(path, i), check, s, error))
        return false;
      out.push_back(std::move(s));
    }
    return true;
  }
};

template <class S> struct Read<List<S>> {
  static bool read(const json &j, const std::string &path, const Check &,
                   std::vector<S> &out, std::string &error) {
    if (!j.is_array())
      return fail(error, path, "must be a list");
    out.clear();
    out.resize(j.size());
    for (size_t i = 0; i < j.size(); ++i)
      if (!readStruct(j[i], at(path, i), out[i], error))
        return false;
    return true;
  }
};

template <class S> struct Read<Map<S>> {
  static bool read(const json &j, const std::string &path, const Check &,
                   std::vector<std::pair<std::string, S>> &out,
                   std::string &error) {
    if (!j.is_object())
      return fail(error, path, "must be an object");
    out.clear();
    for (auto it = j.begin(); it != j.end(); ++it) {
      out.emplace_back(it.key(), S());
      if (!readStruct(it.value(), join(path, it.key()), out.back().second,
                      error))
        return false;
    }
    return true;
  }
};

template <class S> struct Read<Object<S>> {
  static bool read(const json &j, const std::string &path, const Check &,
                   S &out, std::string &error) {
    return readStruct(j, path, out, error);
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
               std::string &error) {
  const Presence presence = field.presence.codes[column];
  auto it = j.find(field.key);
  if (it == j.end()) {
    if (presence.kind == PresenceKind::Required)
      return fail(error, join(path, field.key), "is missing");
    return true;
  }
  if (presence.kind == PresenceKind::Forbidden) {
    if (strict)
      return fail(error, join(path, field.key),
                  std::string("is not allowed") +
                      (caseName ? std::string(" for ") + caseName : ""));
    return true; // ignored, as keys no row lists are
  }
  return Read<T>::read(*it, join(path, field.key), field.check, emplace(member),
                       error);
}

/// Checks that `j` is an object, finds its case of the struct's
/// discriminator (`column`, named `caseName`), and in a Strict struct
/// refuses keys no row lists.
bool prepare(const StructDesc &s, const json &j, const std::string &path,
             size_t &column, const char *&caseName, std::string &error) {
  if (!j.is_object())
    return fail(error, path.empty() ? std::string("(the root)") : path,
                "must be an object");
  column = 0;
  caseName = nullptr;
  if (const FieldDesc *f = discriminatorField(s)) {
    const EnumDesc *e = s.columns();
    std::string spelling = f->presence.codes[0].defaultText;
    auto it = j.find(f->key);
    if (it != j.end())
      spelling = it->is_string() ? it->get<std::string>() : "";
    column = e->count;
    for (size_t c = 0; c < e->count; ++c)
      if (spelling == e->cases[c].spelling)
        column = c;
    if (column == e->count)
      return fail(error, join(path, f->key), "must be one of " + oneOf(*e));
    caseName = e->cases[column].spelling;
  }
  if (s.strictness == Strictness::Strict)
    for (auto it = j.begin(); it != j.end(); ++it) {
      bool known = false;
      for (size_t i = 0; i < s.count && !known; ++i)
        known = it.key() == s.fields[i].key;
      if (!known)
        return fail(error, join(path, it.key()), "is not a known field");
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
                           Struct_ &out, std::string &error) {                 \
    using Info = StructInfo<Struct_>;                                          \
    static constexpr StructDesc desc = {                                       \
        Info::name, Info::path,   Info::discriminator,    Info::strictness,    \
        Info::doc,  Info::fields, std::size(Info::fields)};                    \
    size_t column = 0, field = 0;                                              \
    const char *caseName = nullptr;                                            \
    const bool strict = desc.strictness == Strictness::Strict;                 \
    if (!prepare(desc, j, path, column, caseName, error))                      \
      return false;
#define CLEAVE_FIELD(Struct_, member_, key_, Type_, check_, origin_, doc_,     \
                     ...)                                                      \
  if (!readField<Type_>(j, path, desc.fields[field++], column, caseName,       \
                        strict, out.member_, error))                           \
    return false;
#define CLEAVE_SCHEMA_DEF_READ "../../include/cleave/artifact_schema.def"
#include CLEAVE_SCHEMA_DEF_READ
  return true;
}

} // namespace

bool readManifestText(std::string_view text, Manifest &out,
                      std::string &error) {
  json root = json::parse(text.begin(), text.end(), nullptr,
                          /*allow_exceptions=*/false);
  if (root.is_discarded()) {
    error = "manifest: not valid JSON";
    return false;
  }
  out = Manifest();
  try {
    return readStruct(root, "", out, error);
  } catch (const std::exception &e) {
    error = std::string("manifest: ") + e.what();
    return false;
  }
}

} // namespace cleave::abi
