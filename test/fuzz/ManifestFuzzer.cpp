//===- ManifestFuzzer.cpp - Fuzzing the manifest parser -------------------===//
//
// Feeds arbitrary text to parseManifest, which validates every field of an
// artifact's manifest before a session or an executable trusts it, then
// gives an accepted manifest's kernel table to KernelContext::create, as
// session creation does. A manifest parseManifest accepts must be one the
// rest of the runtime can rely on: the checks below are the invariants the
// session indexes with. Its document, written by the schema's writer, must
// read back the same (R(W(R(T))) = R(T), docs/design/artifact-schema.md).
//
//===----------------------------------------------------------------------===//

#include "Manifest.h"
#include "kernels/KernelContext.h"
#include "schema/SchemaWriteJson.h"

#include <cstdint>
#include <cstdlib>
#include <string_view>

using namespace cleave::rt;

namespace {

void require(bool condition) {
  if (!condition)
    std::abort();
}

void checkTensor(const TensorDesc &t) {
  int64_t elements = 1;
  for (int64_t d : t.shape) {
    require(d >= 0);
    elements *= d;
  }
  require(elements == t.numElements);
  require(t.bytes == size_t(t.numElements) * dtypeSize(t.dtype));
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view text(reinterpret_cast<const char *>(data), size);
  Manifest manifest;
  Status status = parseManifest(text, manifest);
  if (!status.ok())
    return 0;
  // What the parser accepted, written by the schema and parsed again, is
  // accepted as the same document.
  Manifest again;
  require(parseManifest(cleave::abi::toJson(manifest.doc).dump(), again).ok());
  require(again.doc == manifest.doc);
  for (const GlobalDesc &g : manifest.globals)
    checkTensor(g);
  for (const InputDesc &in : manifest.inputs)
    checkTensor(in);
  if (manifest.kind == ArtifactKind::training) {
    require(manifest.stepGlobal < manifest.globals.size());
    require(manifest.microStepsGlobal < manifest.globals.size());
    for (const EntryDesc &entry : manifest.entries) {
      if (!entry.present)
        continue;
      for (const ArgDesc &arg : entry.args) {
        switch (arg.role) {
        case ArgRole::input:
          require(arg.index < manifest.inputs.size());
          break;
        case ArgRole::output:
          require(arg.index < entry.outputs.size());
          break;
        case ArgRole::global:
          require(arg.index < manifest.globals.size());
          break;
        case ArgRole::hyper:
          require(arg.index < manifest.hypers.size());
          break;
        case ArgRole::scratch:
          break;
        }
      }
    }
  }
  for (const GraphEntryDesc &entry : manifest.graphEntries)
    for (const GraphArgDesc &arg : entry.args)
      if (arg.role != ArgRole::scratch)
        checkTensor(arg.tensor);
  // A refused kernel table says why.
  std::string error;
  if (!KernelContext::create(manifest.kernels, error))
    require(!error.empty());
  return 0;
}
