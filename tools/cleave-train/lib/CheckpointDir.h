//===- CheckpointDir.h - The checkpoints of one training run ----*- C++ -*-===//
//
// A directory of session checkpoints named after the run's micro-step count,
// `checkpoint-<10 or more digits>.ckpt`, so that the newest is found by name
// (not by modification time, which copying a directory changes). Other files
// in the directory, such as the runtime's `.tmp` files of interrupted writes,
// are ignored.
//
// A data-parallel run of R > 1 ranks names its checkpoints
// `checkpoint-<digits>.ranks-<R>.ckpt`: rank 0 writes each one, holding every
// rank's state (accumulators and sharded optimizer state differ between
// ranks), and only a run of R ranks can resume from it.
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
  /// The checkpoints of a run of `ranks` ranks.
  CheckpointDir(std::string dir, int64_t keep, int ranks = 1)
      : dir_(std::move(dir)), keep_(keep), ranks_(ranks) {}

  const std::string &path() const { return dir_; }

  /// Creates the directory (and its parents) if needed. Throws tools::Error.
  void create() const;
  /// The run's checkpoints (of its number of ranks), oldest first:
  /// (micro-step count, path). An absent directory has none. Throws
  /// tools::Error if it cannot be read.
  std::vector<std::pair<int64_t, std::string>> list() const;
  /// The run's newest checkpoint, if any.
  std::optional<std::string> newest() const;
  /// Where the checkpoint taken after `microSteps` micro-steps goes.
  std::string pathFor(int64_t microSteps) const;
  /// Removes all but the run's newest `keep` checkpoints. Throws
  /// tools::Error.
  void prune() const;
  /// The rank counts of runs other than this one's size whose checkpoints
  /// the directory holds (e.g. {1} for a single-process run's).
  std::vector<int> otherRunSizes() const;
  /// The newest checkpoint file of any run, if any.
  std::optional<std::string> newestOfAnyRun() const;

  /// The micro-step count in a single-process checkpoint file name, if it
  /// is one.
  static std::optional<int64_t> parseName(const std::string &name);

  /// What a checkpoint file name of any run says.
  struct Name {
    int64_t microSteps = 0;
    int ranks = 1;
  };
  /// Parses `checkpoint-<digits>.ckpt` (one process) and
  /// `checkpoint-<digits>.ranks-<R>.ckpt` (R > 1).
  static std::optional<Name> parseAnyName(const std::string &name);

private:
  /// Every checkpoint file in the directory: (name, path), unsorted.
  std::vector<std::pair<Name, std::string>> scan() const;

  std::string dir_;
  int64_t keep_;
  int ranks_;
};

} // namespace cleave::train

#endif // CLEAVE_TOOLS_CHECKPOINTDIR_H
