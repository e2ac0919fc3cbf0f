//===- Metrics.cpp - The JSON-lines metrics file --------------------------===//

#include "Metrics.h"

#include "Error.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace cleave::train {

namespace {
std::string errnoText() { return std::strerror(errno); }
} // namespace

MetricsFile::~MetricsFile() {
  if (file_)
    std::fclose(file_);
}

void MetricsFile::openNew(const std::string &path) {
  path_ = path;
  file_ = std::fopen(path.c_str(), "w");
  if (!file_)
    throw tools::Error(path + ": cannot write the metrics file (" +
                       errnoText() + ")");
  bytes_ = 0;
}

bool MetricsFile::openResumed(const std::string &path, uint64_t bytes) {
  path_ = path;
  file_ = std::fopen(path.c_str(), "a");
  if (!file_)
    throw tools::Error(path + ": cannot write the metrics file (" +
                       errnoText() + ")");
  struct stat st;
  if (::fstat(::fileno(file_), &st) != 0)
    throw tools::Error(path + ": cannot stat the metrics file (" + errnoText() +
                       ")");
  uint64_t size = uint64_t(st.st_size);
  if (size < bytes) {
    bytes_ = size;
    return false;
  }
  // Records written after the checkpoint are written again by this run.
  if (::ftruncate(::fileno(file_), off_t(bytes)) != 0)
    throw tools::Error(path + ": cannot truncate the metrics file (" +
                       errnoText() + ")");
  bytes_ = bytes;
  return true;
}

void MetricsFile::write(const nlohmann::json &record) {
  if (!file_)
    return;
  std::string line = record.dump() + "\n";
  if (std::fwrite(line.data(), 1, line.size(), file_) != line.size() ||
      std::fflush(file_) != 0)
    throw tools::Error(path_ + ": cannot write the metrics file (" +
                       errnoText() + ")");
  bytes_ += line.size();
}

} // namespace cleave::train
