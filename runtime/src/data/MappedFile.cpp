//===- MappedFile.cpp - Read-only memory-mapped files ---------------------===//

#include "MappedFile.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace cleave::data {

using rt::makeError;
using rt::Status;

Status MappedFile::open(const std::string &path,
                        std::shared_ptr<const MappedFile> &out) {
  // O_NONBLOCK: opening a FIFO would otherwise wait for a writer; it is
  // refused below as not a regular file.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return makeError(CLEAVE_IO_ERROR, path, ": cannot open (",
                     std::strerror(errno), ")");
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st;
  if (::fstat(fd, &st) != 0)
    return makeError(CLEAVE_IO_ERROR, path, ": cannot stat (",
                     std::strerror(errno), ")");
  if (S_ISDIR(st.st_mode))
    return makeError(CLEAVE_IO_ERROR, path,
                     ": is a directory, expected a file");
  if (!S_ISREG(st.st_mode))
    return makeError(CLEAVE_IO_ERROR, path, ": not a regular file");
  const size_t size = size_t(st.st_size);
  // mmap refuses a length of 0; an empty file is no dataset, and the
  // parsers say so.
  if (size == 0) {
    out.reset(new MappedFile(path, nullptr, 0));
    return Status::success();
  }
  void *p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (p == MAP_FAILED)
    return makeError(CLEAVE_IO_ERROR, path, ": cannot map ", size,
                     " bytes into memory (", std::strerror(errno), ")");
  out.reset(new MappedFile(path, static_cast<const uint8_t *>(p), size));
  return Status::success();
}

MappedFile::~MappedFile() {
  if (data_)
    ::munmap(const_cast<uint8_t *>(data_), size_);
}

} // namespace cleave::data
