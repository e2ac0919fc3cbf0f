//===- Checkpoint.h - Session checkpoint files ------------------*- C++ -*-===//
//
// The on-disk checkpoint format (docs/design/runtime.md): a fixed header, a
// JSON index and 64-byte aligned data blobs, each covered by a CRC32. Writes
// are atomic (temporary file, fsync, rename, directory fsync); reads verify
// the whole file before the caller changes any state.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_CHECKPOINT_H
#define CLEAVE_RUNTIME_CHECKPOINT_H

#include "Manifest.h"
#include "Status.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace cleave::rt {

/// The checkpoint format version this runtime writes and reads. 3: the
/// model's identity is its manifest's CRC-32 (a 64-bit FNV-1a in 1 and 2),
/// and the index may hold a learning-rate schedule (`lr_schedule`, since 2).
inline constexpr uint32_t kCheckpointFormatVersion = 3;

/// A named tensor in a checkpoint; `data` points into the session (when
/// writing) or into the loaded file (when reading).
struct CheckpointTensor {
  std::string name;
  DType dtype = DType::f32;
  std::vector<int64_t> shape;
  const void *data = nullptr;
  size_t bytes = 0;
};

/// Everything a checkpoint holds.
struct CheckpointContents {
  /// Identity of the model: the CRC-32 of its manifest.
  uint64_t manifestHash = 0;
  uint64_t seed = 0;
  int64_t accumulate = 1;
  std::vector<std::pair<std::string, double>> hyperparameters;
  /// The session's schedule (peak lr resolved), if it has one.
  std::optional<cleave_lr_schedule> lrSchedule;
  std::vector<CheckpointTensor> globals;
  std::map<std::string, std::string> userState;
};

/// Writes `contents` to `path` atomically: `path`.tmp is written and fsync'ed,
/// renamed over `path`, and the directory is fsync'ed. On a failure before
/// the rename the temporary file is removed and `path` is untouched; a
/// failing directory fsync is reported with the new file already in place.
Status writeCheckpoint(const std::string &path,
                       const CheckpointContents &contents);

/// The bytes `writeCheckpoint` would write for `contents` (pointers into
/// `contents` are copied).
Status encodeCheckpoint(const CheckpointContents &contents, std::string &out);

/// A checkpoint read and verified in memory.
class LoadedCheckpoint {
public:
  const CheckpointContents &contents() const { return contents_; }

private:
  friend Status parseCheckpoint(const std::string &path, std::string image,
                                LoadedCheckpoint &out);
  std::string bytes_;
  CheckpointContents contents_;
};

/// Reads `path` and verifies its magic, format version, size and every CRC32.
/// Errors start with the path, e.g. "run.ckpt: truncated checkpoint (...)".
Status readCheckpoint(const std::string &path, LoadedCheckpoint &out);

/// Verifies and decodes the checkpoint `image` (the bytes of a file) in
/// memory; `path` names it in errors.
Status parseCheckpoint(const std::string &path, std::string image,
                       LoadedCheckpoint &out);

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_CHECKPOINT_H
