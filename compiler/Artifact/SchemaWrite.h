//===- SchemaWrite.h - The manifest's bytes from its schema -----*- C++ -*-===//
//
// The schema's writer (runtime/src/schema/SchemaWrite.h) on llvm::json,
// whose printing (objects with sorted keys, no whitespace, integers as
// integers, doubles as %.17g) is the manifest's byte form: what
// WriteManifestPass writes today and checkpoints name models by.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_COMPILER_ARTIFACT_SCHEMAWRITE_H
#define CLEAVE_COMPILER_ARTIFACT_SCHEMAWRITE_H

#include "runtime/src/schema/SchemaWrite.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace mlir::cleave {

/// The JSON library SchemaWrite.h writes with.
struct LlvmJson {
  using Value = llvm::json::Value;
  static Value object() { return llvm::json::Object(); }
  static Value array() { return llvm::json::Array(); }
  static void set(Value &object, const std::string &key, Value value) {
    (*object.getAsObject())[key] = std::move(value);
  }
  static void push(Value &array, Value value) {
    array.getAsArray()->push_back(std::move(value));
  }
  static Value integer(int64_t v) { return v; }
  static Value number(double v) { return v; }
  static Value boolean(bool v) { return v; }
  static Value string(const std::string &v) { return v; }
};

/// `manifest` as the text an artifact embeds.
inline std::string writeManifestText(const ::cleave::abi::Manifest &manifest) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << ::cleave::abi::writeStruct<LlvmJson>(manifest);
  os.flush();
  return text;
}

} // namespace mlir::cleave

#endif // CLEAVE_COMPILER_ARTIFACT_SCHEMAWRITE_H
