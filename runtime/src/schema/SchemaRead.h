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

#include <cstdint>
#include <string>
#include <string_view>

namespace cleave::abi {

/// What a reader does with the kernel table.
enum class Kernels : uint8_t {
  /// Reads every entry by its row, as the compiler's checks do.
  Read,
  /// Checks only that it is a list of objects and leaves `kernels` empty: a
  /// session reads the entries when it is created (KernelContext::create),
  /// as the runtime's parser does.
  Defer
};

/// Reads manifest `text` into `out`: `abi_version` first (any other than
/// this runtime's stops there), then, for the case of `kind`, every key a
/// row lists, checked for its object's case (the discriminator's value, or
/// its default): present when required, of its type, passing its check; a
/// key the case does not allow, or a key no row lists, is refused in a
/// Strict object (a kernel entry) and ignored in a Lenient one, as the
/// runtime's parser does. Rules that read two fields are the parser's
/// (ManifestRules, Manifest.cpp), not this reader's. False, with `error`
/// ("manifest: <key path> <what is wrong>", in the runtime's words), at the
/// first fault.
bool readManifestText(std::string_view text, Manifest &out, std::string &error,
                      Kernels kernels = Kernels::Read);

} // namespace cleave::abi

#endif // CLEAVE_RUNTIME_SCHEMA_SCHEMAREAD_H
