//===- SchemaReadJson.h - The schema's reader, on parsed JSON ---*- C++ -*-===//
//
// SchemaRead.h's reader for the runtime's parser (Manifest.cpp), which keeps
// the parsed document: the raw kernel table goes to the session. nlohmann
// crosses this header, so the compiler includes SchemaRead.h instead.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_SCHEMA_SCHEMAREADJSON_H
#define CLEAVE_RUNTIME_SCHEMA_SCHEMAREADJSON_H

#include "SchemaRead.h"

#include <nlohmann/json.hpp>

namespace cleave::abi {

/// Parses `text`; false, with `error` ("manifest: is not valid JSON (...)"),
/// if it is not JSON.
bool parseJson(std::string_view text, nlohmann::json &root, std::string &error);

/// readManifestText on a parsed document.
bool readManifest(const nlohmann::json &root, Manifest &out, Kernels kernels,
                  std::string &error);

} // namespace cleave::abi

#endif // CLEAVE_RUNTIME_SCHEMA_SCHEMAREADJSON_H
