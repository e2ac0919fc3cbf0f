//===- CheckpointFuzzer.cpp - Fuzzing the checkpoint loader ---------------===//
//
// Restores arbitrary bytes, as a checkpoint file, into a session of the fake
// SGD artifact of the session tests (CLEAVE_FAKE_SGD), through the C API
// (which the artifact's symbols resolve against): the file checks, the
// JSON index, the blob lookups, then the match against the session's model
// (identity, names, dtypes, shapes, sizes) and the copy into its globals.
// The seeds were written by that session, so mutations keep its identity.
//
// Before loading, the header's and the index's CRC32s are recomputed over
// the mutated bytes: otherwise almost every mutation would stop at a
// checksum, and the fuzzer would never reach what lies behind them. (A
// blob's own CRC32 lives in the index; the fuzzer passes it by keeping the
// blob.)
//
//===----------------------------------------------------------------------===//

#include "cleave/runtime.h"

#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

// The layout of docs/design/runtime.md's header, little-endian.
constexpr size_t kHeaderBytes = 64;
constexpr size_t kIndexBytesOffset = 16;
constexpr size_t kIndexCrcOffset = 32;
constexpr size_t kHeaderCrcOffset = 36;

uint32_t crc32Of(const char *data, size_t bytes) {
  return uint32_t(::crc32_z(::crc32_z(0, Z_NULL, 0),
                            reinterpret_cast<const Bytef *>(data), bytes));
}

void putU32(char *p, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    p[i] = static_cast<char>(v >> (8 * i));
}

uint64_t getU64(const char *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i)
    v |= uint64_t(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // One session for the whole run: a successful restore leaves it in a
  // state the next one overwrites entirely.
  static cleave_session *session = [] {
    cleave_artifact *artifact = nullptr;
    cleave_session *created = nullptr;
    if (cleave_artifact_load(CLEAVE_FAKE_SGD, &artifact) != CLEAVE_OK ||
        cleave_session_create(artifact, nullptr, &created) != CLEAVE_OK)
      std::abort();
    cleave_artifact_release(artifact);
    return created;
  }();

  std::string image(reinterpret_cast<const char *>(data), size);
  if (image.size() >= kHeaderBytes) {
    uint64_t indexBytes = getU64(&image[kIndexBytesOffset]);
    if (indexBytes <= image.size() - kHeaderBytes)
      putU32(&image[kIndexCrcOffset],
             crc32Of(&image[kHeaderBytes], size_t(indexBytes)));
    putU32(&image[kHeaderCrcOffset], crc32Of(image.data(), kHeaderCrcOffset));
  }
  int fd = ::memfd_create("checkpoint", MFD_CLOEXEC);
  if (fd < 0 || ::write(fd, image.data(), image.size()) != ssize_t(size))
    std::abort();
  std::string path = "/proc/self/fd/" + std::to_string(fd);
  cleave_status status = cleave_session_load_checkpoint(session, path.c_str());
  ::close(fd);
  // Every refusal names the file, as the session's errors promise.
  if (status != CLEAVE_OK &&
      std::string(cleave_last_error_message()).find(path + ": ") ==
          std::string::npos)
    std::abort();
  return 0;
}
