//===- CheckpointDir.h - The checkpoints of one training run ----*- C++ -*-===//
//
// A directory of session checkpoints named after the run's micro-step count,
// `checkpoint-<10 or more digits>.ckpt`, so that the newest is found by name
// (not by modification time, which copying a directory changes). Other files
// in the directory, such as the runtime's `.tmp` files of interrupted writes,
// are ignored.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_TOOLS_CHECKPOINTDIR_H
#define CLEAVE_TOOLS_CHECKPOINTDIR_H

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace cleave::train {

class CheckpointDir {
public:
  CheckpointDir(std::string dir, int64_t keep)
      : dir_(std::move(dir)), keep_(keep) {}

  const std::string &path() const { return dir_; }

  /// Creates the directory (and its parents) if needed. Throws tools::Error.
  void create() const;
  /// The checkpoints present, oldest first: (micro-step count, path). An
  /// absent directory has none. Throws tools::Error if it cannot be read.
  std::vector<std::pair<int64_t, std::string>> list() const;
  /// The newest checkpoint's path, if any.
  std::optional<std::string> newest() const;
  /// Where the checkpoint taken after `microSteps` micro-steps goes.
  std::string pathFor(int64_t microSteps) const;
  /// Removes all but the newest `keep` checkpoints. Throws tools::Error.
  void prune() const;

  /// The micro-step count in a checkpoint file name, if it is one.
  static std::optional<int64_t> parseName(const std::string &name);

private:
  std::string dir_;
  int64_t keep_;
};

} // namespace cleave::train

#endif // CLEAVE_TOOLS_CHECKPOINTDIR_H
