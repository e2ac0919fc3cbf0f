//===- SchemaWriteJson.h - The schema's writer, to nlohmann -----*- C++ -*-===//
//
// SchemaWrite.h's JSON library for runtime-side code: nlohmann, so that a
// manifest or a kernel entry is written by the schema (the manifest fuzzer's
// round trip, the benchmarks' hand-made kernel tables) rather than by keys
// spelt again by hand. The compiler writes with llvm::json instead
// (compiler/Artifact/SchemaWrite.h).
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_SCHEMA_SCHEMAWRITEJSON_H
#define CLEAVE_RUNTIME_SCHEMA_SCHEMAWRITEJSON_H

#include "SchemaWrite.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <utility>

namespace cleave::abi {

struct NlohmannJson {
  using Value = nlohmann::json;
  static Value object() { return Value::object(); }
  static Value array() { return Value::array(); }
  static void set(Value &object, const std::string &key, Value value) {
    object[key] = std::move(value);
  }
  static void push(Value &array, Value value) {
    array.push_back(std::move(value));
  }
  static Value integer(int64_t v) { return v; }
  static Value number(double v) { return v; }
  static Value boolean(bool v) { return v; }
  static Value string(const std::string &v) { return v; }
};

/// `s` (a struct of Schema.h) as nlohmann JSON.
template <class S> nlohmann::json toJson(const S &s) {
  return writeStruct<NlohmannJson>(s);
}

} // namespace cleave::abi

#endif // CLEAVE_RUNTIME_SCHEMA_SCHEMAWRITEJSON_H
