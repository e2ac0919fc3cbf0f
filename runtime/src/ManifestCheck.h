//===- ManifestCheck.h - The runtime's manifest rules, for the compiler -*- C++
//-*-===//
//
// The one entry point into the runtime that the compiler links
// (cleave_manifest): cleave-write-manifest runs the runtime's own parser on
// the manifest it wrote, so an artifact the runtime would refuse to load is
// refused when it is compiled, with the runtime's message. Only std types and
// the schema's value structs (schema/Schema.h) cross this header, so that
// nlohmann and exceptions stay in cleave_manifest.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_MANIFESTCHECK_H
#define CLEAVE_RUNTIME_MANIFESTCHECK_H

#include "schema/Schema.h"

#include <string>
#include <string_view>

namespace cleave::rt {

/// Whether the runtime accepts `text` as a manifest, its kernel table read
/// as a session's kernel library reads it; if not, `error` says why
/// ("manifest: inputs[0].shape must start with the micro-batch size 8",
/// "kernel 3 (matmul): field 'n' is 0, expected at least 1").
bool checkManifest(std::string_view text, std::string &error);

/// Reads manifest `text` into `doc`, the kernel table included, if the
/// runtime accepts it (checkManifest's rules, and every kernel entry's
/// row); if not, `error` says why, as checkManifest does.
bool readManifestDoc(std::string_view text, abi::Manifest &doc,
                     std::string &error);

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_MANIFESTCHECK_H
