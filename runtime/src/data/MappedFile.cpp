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

Status openRegularFile(const std::string &path, int &fd, uint64_t &size) {
  // O_NONBLOCK: opening a FIFO would otherwise wait for a writer; it is
  // refused below as not a regular file.
  fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return makeError(CLEAVE_IO_ERROR, path, ": cannot open (",
                     std::strerror(errno), ")");
  struct stat st;
  Status status = Status::success();
  if (::fstat(fd, &st) != 0)
    status = makeError(CLEAVE_IO_ERROR, path, ": cannot stat (",
                       std::strerror(errno), ")");
  else if (S_ISDIR(st.st_mode))
    status = makeError(CLEAVE_IO_ERROR, path,
                       ": is a directory, expected a file");
  else if (!S_ISREG(st.st_mode))
    status = makeError(CLEAVE_IO_ERROR, path, ": not a regular file");
  if (!status.ok()) {
    ::close(fd);
    fd = -1;
    return status;
  }
  size = uint64_t(st.st_size);
  return Status::success();
}

Status MappedFile::open(const std::string &path,
                        std::shared_ptr<const MappedFile> &out) {
  int fd = -1;
  uint64_t fileSize = 0;
  CLEAVE_RETURN_IF_ERROR(openRegularFile(path, fd, fileSize));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  const size_t size = size_t(fileSize);
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
