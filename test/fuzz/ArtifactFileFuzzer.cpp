//===- ArtifactFileFuzzer.cpp - Fuzzing the artifact file checks ----------===//
//
// Runs the checks Artifact::load makes before dlopen (ELF header, program
// and section header tables, segment extents, the checksum seal) on
// arbitrary bytes in an in-memory file. dlopen itself is out of reach: those
// checks exist because it crashes on malformed files. Inputs ending with a
// seal run twice, as they are (a seal that almost never matches) and
// re-sealed over the mutated bytes, so the fuzzer also explores what a valid
// seal lets through.
//
//===----------------------------------------------------------------------===//

#include "Artifact.h"
#include "Checksum.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace cleave::rt;

namespace {

// docs/design/runtime-abi.md: "CLVSEAL2", then the number of bytes before
// the seal and their CRC-32, little-endian u64s.
constexpr char kSealMagic[8] = {'C', 'L', 'V', 'S', 'E', 'A', 'L', '2'};
constexpr size_t kSealBytes = 24;

void putLe64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    p[i] = static_cast<uint8_t>(v >> (8 * i));
}

void check(const std::vector<uint8_t> &bytes) {
  int fd = ::memfd_create("artifact", MFD_CLOEXEC);
  if (fd < 0)
    std::abort();
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n <= 0)
      std::abort();
    done += size_t(n);
  }
  bool sealed = false;
  Status status = checkArtifactFile("fuzz.cleave", fd, bytes.size(), sealed);
  ::close(fd);
  // Every refusal names the file, as the loader's errors promise.
  if (!status.ok() && status.message().rfind("fuzz.cleave: ", 0) != 0)
    std::abort();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::vector<uint8_t> bytes(data, data + size);
  check(bytes);
  if (size >= kSealBytes &&
      std::memcmp(data + size - kSealBytes, kSealMagic, sizeof(kSealMagic)) ==
          0) {
    uint64_t covered = size - kSealBytes;
    putLe64(&bytes[covered + 8], covered);
    putLe64(&bytes[covered + 16], crc32(data, covered));
    check(bytes);
  }
  return 0;
}
