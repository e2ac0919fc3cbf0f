//===- Schema.h - The artifact manifest's schema, expanded ------*- C++ -*-===//
//
// cleave/artifact_schema.def expanded into C++17: the enums on the wire
// (`abi::Device`, ...) with their spellings (`name`, `parse`, `oneOf`), and
// constexpr descriptors of every manifest object and field, from which the
// reader, the writer and the docs are made (docs/design/artifact-schema.md).
// Header only, `std` only and without exceptions, so that the compiler
// (built -fno-exceptions, with LLVM) and the runtime (built without LLVM)
// both include it.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_SCHEMA_SCHEMA_H
#define CLEAVE_RUNTIME_SCHEMA_SCHEMA_H

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

// Relative to this file, so that the runtime (include path runtime/src) and
// the compiler (the project's root) find the same table.
#define CLEAVE_SCHEMA_DEF "../../include/cleave/artifact_schema.def"

namespace cleave::abi {

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

// Each CLEAVE_ENUM closes the enum before it (the first closes a
// placeholder) and opens its own; the last is closed after the table.
enum class SchemaFirstEnum_ : uint8_t {
#define CLEAVE_ENUM(Enum_, doc_)                                               \
  }                                                                            \
  ;                                                                            \
  enum class Enum_ : uint8_t {
#define CLEAVE_CASE(Enum_, ident_, doc_) ident_,
#include CLEAVE_SCHEMA_DEF
};

/// One spelling of an enum on the wire.
struct CaseDesc {
  const char *spelling;
  const char *doc;
};

/// The spellings of enum `E`, in its order: `cases[size_t(e)]` is `e`'s.
template <class E> struct EnumInfo;

struct SchemaFirstEnumInfo_ {
  static constexpr CaseDesc cases[] = {{nullptr, nullptr}
#define CLEAVE_ENUM(Enum_, docText_)                                           \
  }                                                                            \
  ;                                                                            \
  }                                                                            \
  ;                                                                            \
  template <> struct EnumInfo<Enum_> {                                         \
    static constexpr const char *name = #Enum_;                                \
    static constexpr const char *doc = docText_;                               \
    static constexpr CaseDesc cases[] = {
#define CLEAVE_CASE(Enum_, ident_, docText_) {#ident_, docText_},
#include CLEAVE_SCHEMA_DEF
  };
};

/// An enum of the table, for code that does not know it statically.
struct EnumDesc {
  const char *name;
  const char *doc;
  const CaseDesc *cases;
  size_t count;
};

inline constexpr EnumDesc kEnums[] = {
#define CLEAVE_ENUM(Enum_, doc_)                                               \
  {EnumInfo<Enum_>::name, EnumInfo<Enum_>::doc, EnumInfo<Enum_>::cases,        \
   std::size(EnumInfo<Enum_>::cases)},
#include CLEAVE_SCHEMA_DEF
};

template <class E>
inline constexpr size_t kCaseCount = std::size(EnumInfo<E>::cases);

/// `e`'s spelling on the wire.
template <class E> constexpr const char *name(E e) {
  return EnumInfo<E>::cases[static_cast<size_t>(e)].spelling;
}

/// The case spelled `text`, if any.
template <class E> std::optional<E> parse(std::string_view text) {
  for (size_t i = 0; i < kCaseCount<E>; ++i)
    if (text == EnumInfo<E>::cases[i].spelling)
      return static_cast<E>(i);
  return std::nullopt;
}

/// The spellings of `e` for a message: `a, b, c`.
inline std::string oneOf(const EnumDesc &e) {
  std::string out;
  for (size_t i = 0; i < e.count; ++i) {
    if (i > 0)
      out += ", ";
    out += e.cases[i].spelling;
  }
  return out;
}
template <class E> constexpr EnumDesc enumDesc() {
  return EnumDesc{EnumInfo<E>::name, EnumInfo<E>::doc, EnumInfo<E>::cases,
                  kCaseCount<E>};
}
template <class E> std::string oneOf() { return oneOf(enumDesc<E>()); }

namespace detail {
constexpr bool equal(const char *a, const char *b) {
  while (*a && *a == *b)
    ++a, ++b;
  return *a == *b;
}
} // namespace detail

/// The enum named `name` (nullptr if none).
constexpr const EnumDesc *findEnum(const char *name) {
  for (const EnumDesc &e : kEnums)
    if (detail::equal(e.name, name))
      return &e;
  return nullptr;
}

/// The spelling the SmArch check accepts: `sm_<digits>`, with an optional
/// `a` (an architecture-specific target, as `sm_90a`).
inline bool isSmArch(std::string_view s) {
  if (s.size() < 5 || s.substr(0, 3) != "sm_")
    return false;
  size_t end = s.back() == 'a' ? s.size() - 1 : s.size();
  for (size_t i = 3; i < end; ++i)
    if (s[i] < '0' || s[i] > '9')
      return false;
  return end > 4;
}

//===----------------------------------------------------------------------===//
// The vocabulary of the table's rows
//===----------------------------------------------------------------------===//

enum class TypeKind : uint8_t {
  Int,
  KInt,
  Number,
  Bool,
  String,
  Enum,
  Shape,
  Ints,
  Strings,
  List,
  Map,
  Object
};

/// The field types; a row names one, which must exist (a typo does not
/// compile).
struct Int {
  static constexpr TypeKind kind = TypeKind::Int;
};
struct KInt {
  static constexpr TypeKind kind = TypeKind::KInt;
};
struct Number {
  static constexpr TypeKind kind = TypeKind::Number;
};
struct Bool {
  static constexpr TypeKind kind = TypeKind::Bool;
};
struct String {
  static constexpr TypeKind kind = TypeKind::String;
};
template <class E> struct Enum {
  static constexpr TypeKind kind = TypeKind::Enum;
};
struct Shape {
  static constexpr TypeKind kind = TypeKind::Shape;
};
template <int N> struct Ints {
  static constexpr TypeKind kind = TypeKind::Ints;
};
struct Strings {
  static constexpr TypeKind kind = TypeKind::Strings;
};
template <class S> struct List {
  static constexpr TypeKind kind = TypeKind::List;
};
template <class S> struct Map {
  static constexpr TypeKind kind = TypeKind::Map;
};
template <class S> struct Object {
  static constexpr TypeKind kind = TypeKind::Object;
};

enum class CheckKind : uint8_t { None, Min, NonEmpty, SmArch };
struct Check {
  CheckKind kind;
  int64_t min;
};
inline constexpr Check None{CheckKind::None, 0};
constexpr Check Min(int64_t n) { return Check{CheckKind::Min, n}; }
inline constexpr Check NonEmpty{CheckKind::NonEmpty, 0};
inline constexpr Check SmArch{CheckKind::SmArch, 0};

/// Who writes a field: the manifest writer, or an earlier pass through
/// `train.manifest`.
enum class Origin : uint8_t { Written, Carried };
inline constexpr Origin Written = Origin::Written;
inline constexpr Origin Carried = Origin::Carried;

/// What a reader does with keys a struct does not list.
enum class Strictness : uint8_t { Strict, Lenient };
inline constexpr Strictness Strict = Strictness::Strict;
inline constexpr Strictness Lenient = Strictness::Lenient;

enum class PresenceKind : uint8_t { Required, Optional, Ignored, Forbidden };
/// One presence code: R, O(v) (`defaultText` "v", empty for a computed
/// default), I or X.
struct Presence {
  PresenceKind kind;
  const char *defaultText;
};

/// The most cases a discriminator has (the kernel ops).
inline constexpr size_t kMaxColumns = 10;
struct PresenceRow {
  Presence codes[kMaxColumns];
  size_t count;
  /// Required for every case: the value struct holds it plainly, not in a
  /// std::optional.
  constexpr bool allRequired() const {
    for (size_t i = 0; i < count; ++i)
      if (codes[i].kind != PresenceKind::Required)
        return false;
    return true;
  }
};
template <class... P> constexpr PresenceRow presenceRow(P... codes) {
  static_assert(sizeof...(P) <= kMaxColumns, "more presence codes than the "
                                             "widest discriminator has cases");
  return PresenceRow{{codes...}, sizeof...(P)};
}

//===----------------------------------------------------------------------===//
// Structs and fields
//===----------------------------------------------------------------------===//

// A tag per struct of the table; the value structs below define them.
#define CLEAVE_STRUCT(Struct_, path_, Discriminator_, Strictness_, doc_)       \
  struct Struct_;
#include CLEAVE_SCHEMA_DEF

struct FieldDesc {
  const char *member;
  const char *key;
  TypeKind type;
  /// The type as the row spells it: "Enum<Device>", "List<Global>".
  const char *typeText;
  Check check;
  /// The check as the row spells it: "Min(1)".
  const char *checkText;
  Origin origin;
  const char *doc;
  PresenceRow presence;
};

template <class S> struct StructInfo;

struct SchemaFirstStructInfo_ {
  static constexpr FieldDesc fields[] = {FieldDesc{}
// Single letters, defined only while the table is read.
#pragma push_macro("R")
#pragma push_macro("O")
#pragma push_macro("I")
#pragma push_macro("X")
#undef R
#undef O
#undef I
#undef X
#define R                                                                      \
  Presence { PresenceKind::Required, "" }
#define O(...)                                                                 \
  Presence { PresenceKind::Optional, #__VA_ARGS__ }
#define I                                                                      \
  Presence { PresenceKind::Ignored, "" }
#define X                                                                      \
  Presence { PresenceKind::Forbidden, "" }
#define CLEAVE_STRUCT(Struct_, pathText_, Discriminator_, strict_, docText_)   \
  }                                                                            \
  ;                                                                            \
  }                                                                            \
  ;                                                                            \
  template <> struct StructInfo<Struct_> {                                     \
    static constexpr const char *name = #Struct_;                              \
    static constexpr const char *path = pathText_;                             \
    static constexpr const char *discriminator = #Discriminator_;              \
    static constexpr Strictness strictness = strict_;                          \
    static constexpr const char *doc = docText_;                               \
    static constexpr FieldDesc fields[] = {
#define CLEAVE_FIELD(Struct_, member_, key_, Type_, check_, origin_, docText_, \
                     ...)                                                      \
  FieldDesc{#member_, key_,     Type_::kind,                                   \
            #Type_,   check_,   #check_,                                       \
            origin_,  docText_, presenceRow(__VA_ARGS__)},
#include CLEAVE_SCHEMA_DEF
  };
};

/// A struct of the table, for code that does not know it statically.
struct StructDesc {
  const char *name;
  const char *path;
  /// The enum whose cases are the presence columns; "None": one column.
  const char *discriminator;
  Strictness strictness;
  const char *doc;
  const FieldDesc *fields;
  size_t count;

  /// The discriminator's enum, nullptr for "None".
  constexpr const EnumDesc *columns() const { return findEnum(discriminator); }
  constexpr size_t numColumns() const {
    return columns() ? columns()->count : 1;
  }
};

inline constexpr StructDesc kStructs[] = {
#define CLEAVE_STRUCT(Struct_, path_, Discriminator_, Strictness_, doc_)       \
  {StructInfo<Struct_>::name,                                                  \
   StructInfo<Struct_>::path,                                                  \
   StructInfo<Struct_>::discriminator,                                         \
   StructInfo<Struct_>::strictness,                                            \
   StructInfo<Struct_>::doc,                                                   \
   StructInfo<Struct_>::fields,                                                \
   std::size(StructInfo<Struct_>::fields)},
#include CLEAVE_SCHEMA_DEF
};

namespace detail {
template <class S> constexpr bool hasKey(const char *key) {
  for (const FieldDesc &f : StructInfo<S>::fields)
    if (equal(f.key, key))
      return true;
  return false;
}
template <class S> constexpr size_t numColumns() {
  const EnumDesc *e = findEnum(StructInfo<S>::discriminator);
  return e ? e->count : 1;
}
} // namespace detail

// What the rows promise, checked once per row: a field sits under its own
// struct (rows follow their CLEAVE_STRUCT), a discriminator is an enum of
// the table or None, and a row has one presence code per case.
#define CLEAVE_STRUCT(Struct_, path_, Discriminator_, Strictness_, doc_)       \
  static_assert(detail::equal(#Discriminator_, "None") ||                      \
                    findEnum(#Discriminator_) != nullptr,                      \
                "the discriminator of " #Struct_ " is not an enum of the "     \
                "table");
#define CLEAVE_FIELD(Struct_, member_, key_, Type_, check_, origin_, doc_,     \
                     ...)                                                      \
  static_assert(detail::hasKey<Struct_>(key_),                                 \
                "row " #Struct_ "." key_ " is not under its CLEAVE_STRUCT");   \
  static_assert(presenceRow(__VA_ARGS__).count ==                              \
                    detail::numColumns<Struct_>(),                             \
                "row " #Struct_ "." key_                                       \
                " needs one presence code per case of its discriminator");
#include CLEAVE_SCHEMA_DEF

//===----------------------------------------------------------------------===//
// Values: one struct per table, what a manifest says
//===----------------------------------------------------------------------===//

/// The C++ type of a field of type T.
template <class T> struct ValueOf;
template <> struct ValueOf<Int> { using type = int64_t; };
template <> struct ValueOf<KInt> { using type = int64_t; };
template <> struct ValueOf<Number> { using type = double; };
template <> struct ValueOf<Bool> { using type = bool; };
template <> struct ValueOf<String> { using type = std::string; };
template <class E> struct ValueOf<Enum<E>> { using type = E; };
template <> struct ValueOf<Shape> { using type = std::vector<int64_t>; };
template <int N> struct ValueOf<Ints<N>> { using type = std::vector<int64_t>; };
template <> struct ValueOf<Strings> { using type = std::vector<std::string>; };
template <class S> struct ValueOf<List<S>> { using type = std::vector<S>; };
/// Keyed objects, in key order.
template <class S> struct ValueOf<Map<S>> {
  using type = std::vector<std::pair<std::string, S>>;
};
template <class S> struct ValueOf<Object<S>> { using type = S; };

/// A field's member: its value, or, unless every case requires it, an
/// optional one, so that absent and default stay distinct.
template <class T, bool Required>
using Member = std::conditional_t<Required, typename ValueOf<T>::type,
                                  std::optional<typename ValueOf<T>::type>>;

// The structs, leaf first as the table lists them (a member's struct is
// complete before it), each closed by the next.
struct SchemaFirstValue_ {
#define CLEAVE_STRUCT(Struct_, path_, Discriminator_, Strictness_, doc_)       \
  }                                                                            \
  ;                                                                            \
  struct Struct_ {
#define CLEAVE_FIELD(Struct_, member_, key_, Type_, check_, origin_, doc_,     \
                     ...)                                                      \
  Member<Type_, presenceRow(__VA_ARGS__).allRequired()> member_{};
#include CLEAVE_SCHEMA_DEF
};

inline bool schemaFirstEqual_() {
#define CLEAVE_STRUCT(Struct_, path_, Discriminator_, Strictness_, doc_)       \
  return true;                                                                 \
  }                                                                            \
  inline bool operator==(const Struct_ &a, const Struct_ &b) {                 \
    (void)a;                                                                   \
    (void)b;
#define CLEAVE_FIELD(Struct_, member_, key_, Type_, check_, origin_, doc_,     \
                     ...)                                                      \
  if (!(a.member_ == b.member_))                                               \
    return false;
#include CLEAVE_SCHEMA_DEF
  return true;
}

#undef R
#undef O
#undef I
#undef X
#pragma pop_macro("R")
#pragma pop_macro("O")
#pragma pop_macro("I")
#pragma pop_macro("X")

/// Every field's key by struct and member, for code that reads a manifest
/// with a general JSON library (the compiler's memory report):
/// `keys::Memory::kernelCaches` is "kernel_caches". Such a reader follows
/// the table: a key respelt there is read by its new spelling, and a field
/// removed from it no longer compiles instead of reading as absent.
namespace keys {
namespace SchemaFirstKeys_ {
#define CLEAVE_STRUCT(Struct_, path_, Discriminator_, Strictness_, doc_)       \
  }                                                                            \
  namespace Struct_ {
#define CLEAVE_FIELD(Struct_, member_, key_, Type_, check_, origin_, doc_,     \
                     ...)                                                      \
  inline constexpr const char *member_ = key_;
#include CLEAVE_SCHEMA_DEF
} // namespace SchemaFirstKeys_
} // namespace keys

/// The struct named `name` (nullptr if none).
constexpr const StructDesc *findStruct(const char *name) {
  for (const StructDesc &s : kStructs)
    if (detail::equal(s.name, name))
      return &s;
  return nullptr;
}

/// The argument of a field's type as the row spells it: `Global` for
/// `List<Global>`, `Device` for `Enum<Device>`, `2` for `Ints<2>`; the
/// whole spelling for a type without one.
inline std::string typeArgument(const FieldDesc &field) {
  std::string_view text = field.typeText;
  size_t open = text.find('<'), close = text.rfind('>');
  if (open == std::string_view::npos || close == std::string_view::npos)
    return std::string(text);
  return std::string(text.substr(open + 1, close - open - 1));
}

/// The struct a List, Map or Object field holds (nullptr for other types).
inline const StructDesc *nestedStruct(const FieldDesc &field) {
  if (field.type != TypeKind::List && field.type != TypeKind::Map &&
      field.type != TypeKind::Object)
    return nullptr;
  return findStruct(typeArgument(field).c_str());
}

/// The field of `s` whose value picks its case (its discriminator's), or
/// nullptr where `s` has one case.
inline const FieldDesc *discriminatorField(const StructDesc &s) {
  if (!s.columns())
    return nullptr;
  for (size_t i = 0; i < s.count; ++i)
    if (s.fields[i].type == TypeKind::Enum &&
        typeArgument(s.fields[i]) == s.discriminator)
      return &s.fields[i];
  return nullptr;
}

} // namespace cleave::abi

#undef CLEAVE_SCHEMA_DEF

#endif // CLEAVE_RUNTIME_SCHEMA_SCHEMA_H
