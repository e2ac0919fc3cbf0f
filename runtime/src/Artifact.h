//===- Artifact.h - A loaded Cleave artifact --------------------*- C++ -*-===//
//
// An artifact is a shared object exporting the symbols of
// docs/design/runtime-abi.md. Loading it dlopens the file, checks the ABI
// version, validates the manifest and resolves every entry point, so that a
// session never meets a half-valid artifact.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_ARTIFACT_H
#define CLEAVE_RUNTIME_ARTIFACT_H

#include "Manifest.h"
#include "Status.h"

#include <array>
#include <memory>
#include <string>
#include <vector>

namespace cleave::rt {

/// The checks Artifact::load makes before dlopen maps the file: the `size`
/// bytes of `fd` (the file `path`, named in errors) are an ELF shared object
/// for this machine whose headers and segments lie inside the file, and its
/// checksum seal, if it ends with one, matches (`sealed` says whether it
/// does). Separate so that the fuzz target can run them on any bytes.
Status checkArtifactFile(const std::string &path, int fd, uint64_t size,
                         bool &sealed);

/// `void cleave_entry_<name>(void *ctx, void **args)`.
using EntryFn = cleave_entry_fn;

/// A loaded, validated artifact. Immutable, so it can be shared by sessions
/// and threads; the shared object stays loaded until the last reference goes.
class Artifact {
public:
  /// Loads the artifact at `path`, which must be of kind `expected` (a
  /// Session needs a training or inference artifact, an Executable a graph
  /// artifact).
  /// Errors start with the path, e.g. "model.cleave: not a Cleave artifact
  /// (missing symbol cleave_manifest)".
  static Status load(const std::string &path, std::shared_ptr<Artifact> &out,
                     ArtifactKind expected = ArtifactKind::training);

  ~Artifact();
  Artifact(const Artifact &) = delete;
  Artifact &operator=(const Artifact &) = delete;

  const std::string &path() const { return path_; }
  const Manifest &manifest() const { return manifest_; }
  /// The entry point, or null if the manifest does not declare it.
  EntryFn entry(EntryKind kind) const {
    return entries_[static_cast<size_t>(kind)];
  }
  /// The entry point of `Manifest::graphEntries[index]` (graph artifacts).
  EntryFn graphEntry(size_t index) const { return graphEntries_[index]; }
  /// `cleave_init_data()`: the bytes `"init": {"kind": "data"}` refers to.
  const unsigned char *initData() const { return initData_; }
  /// Tells the kernel that a session has copied the initial values into its
  /// globals (MADV_PAGEOUT): their pages in the artifact's read-only mapping
  /// are reclaimed and stop counting as resident (they are read from the
  /// file again if another session needs them). A model imported from ONNX
  /// keeps all its initial parameters there, as much memory as the
  /// parameters themselves. Advice only: the memory's contents never
  /// change, so sessions on other threads may read it meanwhile.
  void releaseInitData() const;

private:
  Artifact() = default;

  std::string path_;
  void *handle_ = nullptr;
  Manifest manifest_;
  std::array<EntryFn, kNumEntryKinds> entries_{};
  std::vector<EntryFn> graphEntries_;
  const unsigned char *initData_ = nullptr;
  /// The bytes of initData_ that `data` initialisers read: [begin, end).
  size_t initDataBegin_ = 0, initDataEnd_ = 0;
};

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_ARTIFACT_H
