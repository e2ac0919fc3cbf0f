//===- IdxFuzzer.cpp - Fuzzing the idx reader -----------------------------===//
//
// Feeds arbitrary bytes to the idx reader the way the trainer does: as a
// file, gzipped or plain (readMaybeGzip), parsed as images and as labels.
// The file is an in-memory one (memfd), read through /proc/self/fd, so the
// fuzzer exercises the same open/read/inflate path as a dataset on disk.
//
//===----------------------------------------------------------------------===//

#include "data/Idx.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

using namespace cleave;

namespace {

/// Writes `bytes` to a fresh memfd; aborts if the kernel refuses (the fuzzer
/// cannot do its job without one).
int memfdWith(const uint8_t *bytes, size_t size) {
  int fd = ::memfd_create("idx", MFD_CLOEXEC);
  if (fd < 0)
    std::abort();
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::write(fd, bytes + done, size - done);
    if (n <= 0)
      std::abort();
    done += size_t(n);
  }
  return fd;
}

void parseAs(const std::string &path, const std::vector<uint8_t> &bytes,
             uint32_t magic) {
  data::IdxArray array;
  rt::Status status = data::parseIdx(path, bytes, magic, array);
  if (!status.ok()) {
    if (status.message().rfind(path + ": ", 0) != 0)
      std::abort();
    return;
  }
  // A parsed array holds exactly the elements its dimensions describe.
  uint64_t elements = 1;
  for (uint32_t d : array.dims)
    elements *= d;
  if (array.dims.size() != (magic & 0xff) || elements != array.data.size())
    std::abort();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int fd = memfdWith(data, size);
  std::string path = "/proc/self/fd/" + std::to_string(fd);
  std::vector<uint8_t> bytes;
  rt::Status status = data::readMaybeGzip(path, bytes);
  ::close(fd);
  if (!status.ok()) {
    if (status.message().rfind(path + ": ", 0) != 0)
      std::abort();
    return 0;
  }
  parseAs(path, bytes, data::kIdxImagesMagic);
  parseAs(path, bytes, data::kIdxLabelsMagic);
  return 0;
}
