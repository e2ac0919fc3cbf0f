//===- SchemaRead.h - A manifest read by its schema -------------*- C++ -*-===//
//
// The reader artifact_schema.def generates (docs/design/artifact-schema.md,
// step 2): manifest text to the value structs of Schema.h, every field
// checked against its row. Only std types cross this header, so that the
// compiler (-fno-exceptions, no nlohmann) can call it; the implementation
// is in cleave_manifest.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_SCHEMA_SCHEMAREAD_H
#define CLEAVE_RUNTIME_SCHEMA_SCHEMAREAD_H

#include "Schema.h"

#include <string>
#include <string_view>

namespace cleave::abi {

/// Reads manifest `text` into `out`. Every key a row lists is checked for
/// its object's case (the discriminator's value, or its default): present
/// when required, of its type, passing its check; a key the case does not
/// allow, or a key no row lists, is refused in a Strict object (a kernel
/// entry) and ignored in a Lenient one, as the runtime's parser does. Rules
/// that read two fields are the parser's, not this reader's. False, with
/// `error` ("manifest: <key path> <what is wrong>"), at the first fault.
bool readManifestText(std::string_view text, Manifest &out, std::string &error);

} // namespace cleave::abi

#endif // CLEAVE_RUNTIME_SCHEMA_SCHEMAREAD_H
