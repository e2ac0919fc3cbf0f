//===- SchemaWrite.h - A manifest written by its schema ---------*- C++ -*-===//
//
// The writer artifact_schema.def generates (docs/design/artifact-schema.md,
// step 3): the value structs of Schema.h to JSON, each present field under
// its key, absent optional fields left out. It is a template over a JSON
// library `J`, a struct of static functions:
//
//   using Value = ...;
//   Value object(); Value array();
//   void set(Value &object, const std::string &key, Value value);
//   void push(Value &array, Value value);
//   Value integer(int64_t); Value number(double); Value boolean(bool);
//   Value string(const std::string &);
//
// so that the compiler writes with llvm::json (compiler/Artifact/
// SchemaWrite.h), whose compact, key-sorted form is the manifest's bytes.
// Header only, std only.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_SCHEMA_SCHEMAWRITE_H
#define CLEAVE_RUNTIME_SCHEMA_SCHEMAWRITE_H

#include "Schema.h"

namespace cleave::abi {

/// `s` as JSON: one overload per struct, generated below; this declaration
/// lets the value writers name it before them (never defined, and less
/// specialised than every generated overload).
template <class J, class S> typename J::Value writeStruct(const S &s);

namespace write_detail {

/// Writes a value of field type T.
template <class J, class T> struct Write;

template <class J> struct Write<J, Int> {
  static typename J::Value write(int64_t v) { return J::integer(v); }
};
template <class J> struct Write<J, KInt> {
  static typename J::Value write(int64_t v) { return J::integer(v); }
};
template <class J> struct Write<J, Number> {
  static typename J::Value write(double v) { return J::number(v); }
};
template <class J> struct Write<J, Bool> {
  static typename J::Value write(bool v) { return J::boolean(v); }
};
template <class J> struct Write<J, String> {
  static typename J::Value write(const std::string &v) { return J::string(v); }
};
template <class J, class E> struct Write<J, Enum<E>> {
  static typename J::Value write(E v) { return J::string(name(v)); }
};
template <class J> typename J::Value ints(const std::vector<int64_t> &v) {
  typename J::Value out = J::array();
  for (int64_t x : v)
    J::push(out, J::integer(x));
  return out;
}
template <class J> struct Write<J, Shape> {
  static typename J::Value write(const std::vector<int64_t> &v) {
    return ints<J>(v);
  }
};
template <class J, int N> struct Write<J, Ints<N>> {
  static typename J::Value write(const std::vector<int64_t> &v) {
    return ints<J>(v);
  }
};
template <class J> struct Write<J, Strings> {
  static typename J::Value write(const std::vector<std::string> &v) {
    typename J::Value out = J::array();
    for (const std::string &s : v)
      J::push(out, J::string(s));
    return out;
  }
};
template <class J, class S> struct Write<J, List<S>> {
  static typename J::Value write(const std::vector<S> &v) {
    typename J::Value out = J::array();
    for (const S &s : v)
      J::push(out, writeStruct<J>(s));
    return out;
  }
};
template <class J, class S> struct Write<J, Map<S>> {
  static typename J::Value
  write(const std::vector<std::pair<std::string, S>> &v) {
    typename J::Value out = J::object();
    for (const auto &[key, s] : v)
      J::set(out, key, writeStruct<J>(s));
    return out;
  }
};
template <class J, class S> struct Write<J, Object<S>> {
  static typename J::Value write(const S &s) { return writeStruct<J>(s); }
};

template <class V> struct IsOptional : std::false_type {};
template <class V> struct IsOptional<std::optional<V>> : std::true_type {};

/// `member` under `key`; an absent optional one is left out.
template <class J, class T, class V>
void writeField(typename J::Value &object, const char *key, const V &member) {
  if constexpr (IsOptional<V>::value) {
    if (member)
      J::set(object, key, Write<J, T>::write(*member));
  } else {
    J::set(object, key, Write<J, T>::write(member));
  }
}

} // namespace write_detail

// One writeStruct overload per struct, each closed by the next (found by
// argument-dependent lookup from the Write<> of the struct that holds it).
template <class J> typename J::Value schemaFirstWrite_() {
  typename J::Value object = J::object();
#define CLEAVE_STRUCT(Struct_, path_, Discriminator_, Strictness_, doc_)       \
  return object;                                                               \
  }                                                                            \
  template <class J> typename J::Value writeStruct(const Struct_ &s) {         \
    typename J::Value object = J::object();                                    \
    (void)s;
#define CLEAVE_FIELD(Struct_, member_, key_, Type_, check_, origin_, doc_,     \
                     ...)                                                      \
  write_detail::writeField<J, Type_>(object, key_, s.member_);
#define CLEAVE_SCHEMA_DEF_WRITE "../../include/cleave/artifact_schema.def"
#include CLEAVE_SCHEMA_DEF_WRITE
#undef CLEAVE_SCHEMA_DEF_WRITE
  return object;
}

} // namespace cleave::abi

#endif // CLEAVE_RUNTIME_SCHEMA_SCHEMAWRITE_H
