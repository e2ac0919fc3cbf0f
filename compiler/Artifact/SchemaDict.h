//===- SchemaDict.h - The schema's structs as MLIR dictionaries -*- C++ -*-===//
//
// The compiler carries parts of the manifest as attributes before
// WriteManifestPass writes it: the kernel table (`rt.kernels`, one
// dictionary per kernel, from LowerRuntimeCallsPass), each entry point's
// argument list (`rt.abi`) and what earlier passes record (`train.manifest`).
// This header moves the value structs of Schema.h to and from such
// dictionaries, generated from artifact_schema.def as the JSON reader and
// writer are: a key without a row, a value of the wrong type or a field its
// object's case does not allow is refused where it is made, not when a
// session loads the artifact (docs/design/artifact-schema.md).
//
// Header only, so that the dialects' verifiers use it without depending on
// the artifact library.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_COMPILER_ARTIFACT_SCHEMADICT_H
#define CLEAVE_COMPILER_ARTIFACT_SCHEMADICT_H

#include "runtime/src/schema/Schema.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

namespace cleave::abi {

/// How a dictionary is read.
struct DictMode {
  /// Only rows of origin Carried are keys of the top-level struct (what
  /// `train.manifest` may hold); nested structs take every row.
  bool carriedOnly = false;
  /// A field of the top-level struct required for the object's case must be
  /// present; off for dictionaries that hold part of a struct (what
  /// `train.manifest` carries) or that WriteManifestPass completes (`rt.abi`).
  /// Nested structs are always complete.
  bool requireAll = true;
};

/// Why a dictionary was refused: the first fault, by key path
/// (`warnings[0].op`).
struct DictFault {
  enum Kind { Unknown, Type, Missing, Forbidden };
  Kind kind = Type;
  std::string path;
  /// Type: what the value must be ("a positive integer"); Unknown: the keys
  /// the struct has ("a, b or c"); Missing, Forbidden: the object's case
  /// (empty for a struct of one case).
  std::string expected;
  /// Type: the value refused.
  mlir::Attribute got;

  /// `'<path>' must be <expected>, got <value>` and the like.
  std::string message() const {
    std::string text;
    llvm::raw_string_ostream os(text);
    std::string inCase = expected.empty() ? "" : " for " + expected;
    switch (kind) {
    case Unknown:
      os << "unknown key '" << path << "'; expected " << expected;
      break;
    case Type:
      os << "'" << path << "' must be " << expected << ", got " << got;
      break;
    case Missing:
      os << "'" << path << "' is missing" << inCase;
      break;
    case Forbidden:
      os << "'" << path << "' is not allowed" << inCase;
      break;
    }
    return text;
  }
};

/// The spellings of `e` as MLIR diagnostics quote values: `"a", "b" or "c"`.
inline std::string quotedOneOf(const EnumDesc &e) {
  std::string out;
  for (size_t i = 0; i < e.count; ++i) {
    if (i > 0)
      out += i + 1 == e.count ? " or " : ", ";
    out += '"';
    out += e.cases[i].spelling;
    out += '"';
  }
  return out;
}

namespace dict_detail {

#define CLEAVE_SCHEMA_DEF_DICT "runtime/include/cleave/artifact_schema.def"

inline std::string join(const std::string &path, llvm::StringRef key) {
  return path.empty() ? key.str() : path + "." + key.str();
}
inline std::string at(const std::string &path, size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

inline bool refuse(DictFault &fault, const std::string &path,
                   std::string expected, mlir::Attribute got) {
  fault = DictFault{DictFault::Type, path, std::move(expected), got};
  return false;
}

/// What an integer must be, in words.
inline std::string integerWords(const Check &check) {
  if (check.kind != CheckKind::Min)
    return "an integer";
  if (check.min == 0)
    return "a non-negative integer";
  if (check.min == 1)
    return "a positive integer";
  return "an integer of at least " + std::to_string(check.min);
}

inline bool readInteger(mlir::Attribute a, const Check &check, int64_t max,
                        int64_t &out) {
  auto i = llvm::dyn_cast_if_present<mlir::IntegerAttr>(a);
  // BoolAttr is an i1 IntegerAttr, not an integer here.
  if (!i || llvm::isa<mlir::BoolAttr>(a) ||
      !llvm::isa<mlir::IntegerType>(i.getType()) ||
      i.getValue().getSignificantBits() > 64)
    return false;
  out = i.getValue().getSExtValue();
  return out <= max && (check.kind != CheckKind::Min || out >= check.min);
}

inline mlir::Attribute ints(mlir::Builder &b, const std::vector<int64_t> &v) {
  return b.getDenseI64ArrayAttr(v);
}

/// A list of integers, `size` of them unless 0, each passing `check`;
/// written as a DenseI64ArrayAttr, read from that or an array of integers.
inline bool readInts(mlir::Attribute a, const Check &check, size_t size,
                     std::vector<int64_t> &out) {
  out.clear();
  if (auto dense = llvm::dyn_cast_if_present<mlir::DenseI64ArrayAttr>(a)) {
    out.assign(dense.asArrayRef().begin(), dense.asArrayRef().end());
  } else if (auto array = llvm::dyn_cast_if_present<mlir::ArrayAttr>(a)) {
    for (mlir::Attribute e : array) {
      int64_t v = 0;
      if (!readInteger(e, None, std::numeric_limits<int64_t>::max(), v))
        return false;
      out.push_back(v);
    }
  } else {
    return false;
  }
  if (size != 0 && out.size() != size)
    return false;
  for (int64_t v : out)
    if (check.kind == CheckKind::Min && v < check.min)
      return false;
  return true;
}

inline std::string intsWords(const Check &check, size_t size) {
  std::string count = size ? std::to_string(size) + " " : "";
  std::string bound = check.kind == CheckKind::Min
                          ? " of at least " + std::to_string(check.min)
                          : "";
  return "an array of " + count + "integers" + bound;
}

template <class S> struct StructDict;

/// Moves a value of field type T between its member and an attribute.
template <class T> struct Value;

template <> struct Value<Int> {
  static mlir::Attribute write(mlir::Builder &b, int64_t v) {
    return b.getI64IntegerAttr(v);
  }
  static bool read(mlir::Attribute a, const std::string &path,
                   const Check &check, const DictMode &, int64_t &out,
                   DictFault &fault) {
    if (!readInteger(a, check, std::numeric_limits<int64_t>::max(), out))
      return refuse(fault, path, integerWords(check), a);
    return true;
  }
};

template <> struct Value<KInt> {
  static mlir::Attribute write(mlir::Builder &b, int64_t v) {
    return b.getI64IntegerAttr(v);
  }
  static bool read(mlir::Attribute a, const std::string &path,
                   const Check &check, const DictMode &, int64_t &out,
                   DictFault &fault) {
    if (!readInteger(a, check, std::numeric_limits<int32_t>::max(), out))
      return refuse(fault, path, integerWords(check) + " of at most 2^31-1", a);
    return true;
  }
};

template <> struct Value<Number> {
  static mlir::Attribute write(mlir::Builder &b, double v) {
    return b.getF64FloatAttr(v);
  }
  static bool read(mlir::Attribute a, const std::string &path,
                   const Check &check, const DictMode &, double &out,
                   DictFault &fault) {
    if (auto f = llvm::dyn_cast_if_present<mlir::FloatAttr>(a))
      out = f.getValueAsDouble();
    else if (int64_t i = 0;
             readInteger(a, None, std::numeric_limits<int64_t>::max(), i))
      out = double(i);
    else
      return refuse(fault, path, "a finite number", a);
    if (!std::isfinite(out) ||
        (check.kind == CheckKind::Min && out < double(check.min)))
      return refuse(fault, path,
                    check.kind == CheckKind::Min
                        ? "a finite number of at least " +
                              std::to_string(check.min)
                        : std::string("a finite number"),
                    a);
    return true;
  }
};

template <> struct Value<Bool> {
  static mlir::Attribute write(mlir::Builder &b, bool v) {
    return b.getBoolAttr(v);
  }
  static bool read(mlir::Attribute a, const std::string &path, const Check &,
                   const DictMode &, bool &out, DictFault &fault) {
    auto v = llvm::dyn_cast_if_present<mlir::BoolAttr>(a);
    if (!v)
      return refuse(fault, path, "a bool", a);
    out = v.getValue();
    return true;
  }
};

template <> struct Value<String> {
  static mlir::Attribute write(mlir::Builder &b, const std::string &v) {
    return b.getStringAttr(v);
  }
  static std::string words(const Check &check) {
    if (check.kind == CheckKind::NonEmpty)
      return "a non-empty string";
    if (check.kind == CheckKind::SmArch)
      return "an SM architecture (\"sm_80\")";
    return "a string";
  }
  static bool read(mlir::Attribute a, const std::string &path,
                   const Check &check, const DictMode &, std::string &out,
                   DictFault &fault) {
    auto s = llvm::dyn_cast_if_present<mlir::StringAttr>(a);
    if (!s || (check.kind == CheckKind::NonEmpty && s.getValue().empty()) ||
        (check.kind == CheckKind::SmArch && !isSmArch(s.getValue())))
      return refuse(fault, path, words(check), a);
    out = s.str();
    return true;
  }
};

template <class E> struct Value<Enum<E>> {
  static mlir::Attribute write(mlir::Builder &b, E v) {
    return b.getStringAttr(name(v));
  }
  static bool read(mlir::Attribute a, const std::string &path, const Check &,
                   const DictMode &, E &out, DictFault &fault) {
    auto s = llvm::dyn_cast_if_present<mlir::StringAttr>(a);
    std::optional<E> v =
        s ? parse<E>(std::string_view(s.getValue())) : std::nullopt;
    if (!v)
      return refuse(fault, path, quotedOneOf(enumDesc<E>()), a);
    out = *v;
    return true;
  }
};

template <> struct Value<Shape> {
  static mlir::Attribute write(mlir::Builder &b,
                               const std::vector<int64_t> &v) {
    return ints(b, v);
  }
  static bool read(mlir::Attribute a, const std::string &path, const Check &,
                   const DictMode &, std::vector<int64_t> &out,
                   DictFault &fault) {
    if (!readInts(a, Min(0), 0, out))
      return refuse(fault, path, intsWords(Min(0), 0), a);
    return true;
  }
};

template <int N> struct Value<Ints<N>> {
  static mlir::Attribute write(mlir::Builder &b,
                               const std::vector<int64_t> &v) {
    return ints(b, v);
  }
  static bool read(mlir::Attribute a, const std::string &path,
                   const Check &check, const DictMode &,
                   std::vector<int64_t> &out, DictFault &fault) {
    if (!readInts(a, check, size_t(N), out))
      return refuse(fault, path, intsWords(check, size_t(N)), a);
    return true;
  }
};

template <> struct Value<Strings> {
  static mlir::Attribute write(mlir::Builder &b,
                               const std::vector<std::string> &v) {
    llvm::SmallVector<mlir::Attribute> out;
    for (const std::string &s : v)
      out.push_back(b.getStringAttr(s));
    return b.getArrayAttr(out);
  }
  static bool read(mlir::Attribute a, const std::string &path,
                   const Check &check, const DictMode &mode,
                   std::vector<std::string> &out, DictFault &fault) {
    auto array = llvm::dyn_cast_if_present<mlir::ArrayAttr>(a);
    if (!array)
      return refuse(fault, path, "an array of strings", a);
    out.clear();
    for (auto [i, e] : llvm::enumerate(array))
      if (!Value<String>::read(e, at(path, i), check, mode, out.emplace_back(),
                               fault))
        return false;
    return true;
  }
};

template <class S> struct Value<List<S>> {
  static mlir::Attribute write(mlir::Builder &b, const std::vector<S> &v) {
    llvm::SmallVector<mlir::Attribute> out;
    for (const S &s : v)
      out.push_back(StructDict<S>::write(b, s));
    return b.getArrayAttr(out);
  }
  static bool read(mlir::Attribute a, const std::string &path, const Check &,
                   const DictMode &mode, std::vector<S> &out,
                   DictFault &fault) {
    auto array = llvm::dyn_cast_if_present<mlir::ArrayAttr>(a);
    if (!array || !llvm::all_of(array, llvm::IsaPred<mlir::DictionaryAttr>))
      return refuse(fault, path, "an array of dictionaries", a);
    out.assign(array.size(), S());
    for (auto [i, e] : llvm::enumerate(array))
      if (!StructDict<S>::read(llvm::cast<mlir::DictionaryAttr>(e), at(path, i),
                               mode, out[i], fault))
        return false;
    return true;
  }
};

template <class S> struct Value<Map<S>> {
  static mlir::Attribute
  write(mlir::Builder &b, const std::vector<std::pair<std::string, S>> &v) {
    llvm::SmallVector<mlir::NamedAttribute> out;
    for (const auto &[key, s] : v)
      out.push_back(b.getNamedAttr(key, StructDict<S>::write(b, s)));
    return b.getDictionaryAttr(out);
  }
  static bool read(mlir::Attribute a, const std::string &path, const Check &,
                   const DictMode &mode,
                   std::vector<std::pair<std::string, S>> &out,
                   DictFault &fault) {
    auto d = llvm::dyn_cast_if_present<mlir::DictionaryAttr>(a);
    if (!d || !llvm::all_of(d.getValue(), [](mlir::NamedAttribute n) {
          return llvm::isa<mlir::DictionaryAttr>(n.getValue());
        }))
      return refuse(fault, path, "a dictionary of dictionaries", a);
    out.clear();
    for (mlir::NamedAttribute n : d) {
      out.emplace_back(n.getName().str(), S());
      if (!StructDict<S>::read(llvm::cast<mlir::DictionaryAttr>(n.getValue()),
                               join(path, n.getName().getValue()), mode,
                               out.back().second, fault))
        return false;
    }
    return true;
  }
};

template <class S> struct Value<Object<S>> {
  static mlir::Attribute write(mlir::Builder &b, const S &s) {
    return StructDict<S>::write(b, s);
  }
  static bool read(mlir::Attribute a, const std::string &path, const Check &,
                   const DictMode &mode, S &out, DictFault &fault) {
    auto d = llvm::dyn_cast_if_present<mlir::DictionaryAttr>(a);
    if (!d)
      return refuse(fault, path, "a dictionary", a);
    return StructDict<S>::read(d, path, mode, out, fault);
  }
};

template <class V> V &emplace(V &member) { return member; }
template <class V> V &emplace(std::optional<V> &member) {
  return member.emplace();
}
template <class V> const V *present(const V &member) { return &member; }
template <class V> const V *present(const std::optional<V> &member) {
  return member ? &*member : nullptr;
}

/// Whether `field` is a key of the struct read with `mode` (`top`: the
/// struct is the one read, not a nested one).
inline bool isKey(const FieldDesc &field, const DictMode &mode, bool top) {
  return !(top && mode.carriedOnly && field.origin != Origin::Carried);
}

/// Checks the keys of `d` against `s`'s rows: each a row's (of the rows
/// `mode` takes), allowed for the object's case, and with `requireAll`
/// every required one present.
inline bool checkKeys(const StructDesc &s, mlir::DictionaryAttr d,
                      const std::string &path, const DictMode &mode, bool top,
                      DictFault &fault) {
  size_t column = 0;
  std::string caseName;
  if (const FieldDesc *f = discriminatorField(s)) {
    const EnumDesc *e = s.columns();
    std::string spelling = f->presence.codes[0].defaultText;
    if (auto v = d.getAs<mlir::StringAttr>(f->key))
      spelling = v.str();
    else if (d.get(f->key))
      spelling.clear();
    column = e->count;
    for (size_t c = 0; c < e->count; ++c)
      if (spelling == e->cases[c].spelling)
        column = c;
    if (column == e->count)
      return refuse(fault, join(path, f->key), quotedOneOf(*e), d.get(f->key));
    caseName = e->cases[column].spelling;
  }
  for (mlir::NamedAttribute n : d) {
    const FieldDesc *row = nullptr;
    for (size_t i = 0; i < s.count && !row; ++i)
      if (n.getName().getValue() == s.fields[i].key &&
          isKey(s.fields[i], mode, top))
        row = &s.fields[i];
    if (!row) {
      std::string keys;
      size_t count = 0, total = 0;
      for (size_t i = 0; i < s.count; ++i)
        total += isKey(s.fields[i], mode, top);
      for (size_t i = 0; i < s.count; ++i) {
        if (!isKey(s.fields[i], mode, top))
          continue;
        if (count++)
          keys += count == total ? " or " : ", ";
        keys += s.fields[i].key;
      }
      fault = DictFault{
          DictFault::Unknown, join(path, n.getName().getValue()), keys, {}};
      return false;
    }
    if (row->presence.codes[column].kind == PresenceKind::Forbidden) {
      fault = DictFault{DictFault::Forbidden,
                        join(path, n.getName().getValue()),
                        caseName,
                        {}};
      return false;
    }
  }
  if (mode.requireAll || !top)
    for (size_t i = 0; i < s.count; ++i)
      if (isKey(s.fields[i], mode, top) &&
          s.fields[i].presence.codes[column].kind == PresenceKind::Required &&
          !d.get(s.fields[i].key)) {
        fault = DictFault{
            DictFault::Missing, join(path, s.fields[i].key), caseName, {}};
        return false;
      }
  return true;
}

// One StructDict per struct, leaf first, each closed by the next: `write`
// sets every present field, `read` checks the keys, then reads each field
// present in row order.
struct SchemaFirstDict_ {
  static bool first_() {
#define CLEAVE_STRUCT(Struct_, path_, Discriminator_, Strictness_, doc_)       \
  return true;                                                                 \
  }                                                                            \
  }                                                                            \
  ;                                                                            \
  template <> struct StructDict<Struct_> {                                     \
    static constexpr StructDesc desc() {                                       \
      using Info = StructInfo<Struct_>;                                        \
      return {                                                                 \
          Info::name, Info::path,   Info::discriminator,    Info::strictness,  \
          Info::doc,  Info::fields, std::size(Info::fields)};                  \
    }                                                                          \
    static mlir::DictionaryAttr write(mlir::Builder &b, const Struct_ &s);     \
    static bool read(mlir::DictionaryAttr d, const std::string &path,          \
                     const DictMode &mode, Struct_ &out, DictFault &fault,     \
                     bool top = false) {                                       \
      (void)out;                                                               \
      if (!checkKeys(desc(), d, path, mode, top, fault))                       \
        return false;
#define CLEAVE_FIELD(Struct_, member_, key_, Type_, check_, origin_, doc_,     \
                     ...)                                                      \
  if (mlir::Attribute a = d.get(key_))                                         \
    if (!Value<Type_>::read(a, join(path, key_), check_, mode,                 \
                            emplace(out.member_), fault))                      \
      return false;
#include CLEAVE_SCHEMA_DEF_DICT
    return true;
  }
};

// The writers, defined once every StructDict is declared, each closed by
// the next.
inline mlir::DictionaryAttr schemaFirstDictWrite_(mlir::Builder &b) {
  llvm::SmallVector<mlir::NamedAttribute> out;
#define CLEAVE_STRUCT(Struct_, path_, Discriminator_, Strictness_, doc_)       \
  return b.getDictionaryAttr(out);                                             \
  }                                                                            \
  inline mlir::DictionaryAttr StructDict<Struct_>::write(mlir::Builder &b,     \
                                                         const Struct_ &s) {   \
    llvm::SmallVector<mlir::NamedAttribute> out;                               \
    (void)s;
#define CLEAVE_FIELD(Struct_, member_, key_, Type_, check_, origin_, doc_,     \
                     ...)                                                      \
  if (const auto *v = present(s.member_))                                      \
    out.push_back(b.getNamedAttr(key_, Value<Type_>::write(b, *v)));
#include CLEAVE_SCHEMA_DEF_DICT
  return b.getDictionaryAttr(out);
}

#undef CLEAVE_SCHEMA_DEF_DICT

} // namespace dict_detail

/// `s` as a dictionary: every present field under its key (with
/// `mode.carriedOnly`, of the top-level rows only the Carried ones).
template <class S>
mlir::DictionaryAttr toDict(mlir::Builder &b, const S &s, DictMode mode = {}) {
  mlir::DictionaryAttr all = dict_detail::StructDict<S>::write(b, s);
  if (!mode.carriedOnly)
    return all;
  llvm::SmallVector<mlir::NamedAttribute> carried;
  for (const FieldDesc &f : StructInfo<S>::fields)
    if (f.origin == Origin::Carried)
      if (mlir::Attribute a = all.get(f.key))
        carried.push_back(b.getNamedAttr(f.key, a));
  return b.getDictionaryAttr(carried);
}

/// Reads `d` into `out` (see DictMode); false, with `fault`, at the first
/// fault.
template <class S>
bool fromDict(mlir::DictionaryAttr d, S &out, DictFault &fault,
              DictMode mode = {}) {
  out = S();
  return dict_detail::StructDict<S>::read(d, "", mode, out, fault,
                                          /*top=*/true);
}

} // namespace cleave::abi

#endif // CLEAVE_COMPILER_ARTIFACT_SCHEMADICT_H
