//===- MappedFile.h - Read-only memory-mapped files -------------*- C++ -*-===//
//
// A dataset file mapped into memory rather than read: the kernel brings in
// the pages a micro-batch touches and may drop them again under memory
// pressure, so a dataset larger than the machine's memory still trains. The
// mapping is private and read-only; a file that another process truncates
// while it is mapped makes later reads fault (SIGBUS), which is the price of
// not copying it.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_DATA_MAPPEDFILE_H
#define CLEAVE_DATA_MAPPEDFILE_H

#include "Status.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace cleave::data {

/// Opens the regular file at `path` for reading into `fd` (the caller
/// closes it) and gives its `size`. Errors name the file: it cannot be
/// opened or stat'ed, is a directory, or is not a regular file (a FIFO is
/// refused without waiting for a writer).
rt::Status openRegularFile(const std::string &path, int &fd, uint64_t &size);

class MappedFile {
public:
  /// Maps the regular file at `path`. Errors name the file: it cannot be
  /// opened, is a directory or not a regular file, or cannot be mapped.
  static rt::Status open(const std::string &path,
                         std::shared_ptr<const MappedFile> &out);

  ~MappedFile();
  MappedFile(const MappedFile &) = delete;
  MappedFile &operator=(const MappedFile &) = delete;

  const std::string &path() const { return path_; }
  /// The file's bytes (nullptr for an empty file).
  const uint8_t *data() const { return data_; }
  size_t size() const { return size_; }

private:
  MappedFile(std::string path, const uint8_t *data, size_t size)
      : path_(std::move(path)), data_(data), size_(size) {}

  std::string path_;
  const uint8_t *data_;
  size_t size_;
};

} // namespace cleave::data

#endif // CLEAVE_DATA_MAPPEDFILE_H
