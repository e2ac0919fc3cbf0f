//===- Metrics.h - The JSON-lines metrics file ------------------*- C++ -*-===//
//
// One JSON object per line, flushed as it is written, so that the file can be
// followed while training runs. docs/user/cleave-train.md has the schema.
// A resumed run truncates the file to the length it had when the checkpoint
// was written, so that it holds each record once.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_TOOLS_METRICS_H
#define CLEAVE_TOOLS_METRICS_H

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdio>
#include <string>

namespace cleave::train {

class MetricsFile {
public:
  MetricsFile() = default;
  ~MetricsFile();
  MetricsFile(const MetricsFile &) = delete;
  MetricsFile &operator=(const MetricsFile &) = delete;

  /// Creates or truncates `path`. Throws tools::Error.
  void openNew(const std::string &path);
  /// Opens `path` to continue a run: truncates it to `bytes`, its length at
  /// the checkpoint. Returns false (and appends at its end) if the file is
  /// shorter than that. Throws tools::Error.
  bool openResumed(const std::string &path, uint64_t bytes);

  bool isOpen() const { return file_ != nullptr; }
  /// Writes `record` as one line and flushes it. Throws tools::Error.
  void write(const nlohmann::json &record);
  /// The file's length (everything written is flushed).
  uint64_t bytes() const { return bytes_; }

private:
  std::FILE *file_ = nullptr;
  std::string path_;
  uint64_t bytes_ = 0;
};

} // namespace cleave::train

#endif // CLEAVE_TOOLS_METRICS_H
