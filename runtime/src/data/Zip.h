//===- Zip.h - The zip archives of NumPy's .npz format ----------*- C++ -*-===//
//
// np.savez writes a zip archive of .npy members stored as they are (method
// 0), np.savez_compressed one of deflated members (method 8); both may carry
// zip64 records (numpy forces zip64 local headers). The central directory is
// read to find each member, and the member's local header to find where its
// data starts. A stored member is then a view of the archive's bytes (which
// are memory-mapped: nothing is read until used); a deflated one is inflated
// into memory and checked against its CRC-32.
//
// Refused, with messages naming the archive and the member: multi-disk
// archives, encrypted members, compression methods other than stored and
// deflate, and every size or offset that points outside the archive.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_DATA_ZIP_H
#define CLEAVE_DATA_ZIP_H

#include "Status.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace cleave::data {

/// One member of a zip archive, located and bounds-checked.
struct ZipMember {
  std::string name;
  /// 0: stored, 8: deflate.
  uint16_t method = 0;
  uint32_t crc32 = 0;
  uint64_t compressedSize = 0, size = 0;
  /// Where the member's (compressed) data starts in the archive.
  uint64_t dataOffset = 0;
};

/// Lists the members of the zip archive `bytes[0..size)` read from `path`
/// (named in errors), checking that each one's local header and data lie
/// inside the archive.
rt::Status parseZip(const std::string &path, const uint8_t *bytes, size_t size,
                    std::vector<ZipMember> &out);

/// Inflates the deflated `member` of the archive `bytes` into `out`, checking
/// its length and CRC-32. Errors name "path:member".
rt::Status inflateZipMember(const std::string &path, const uint8_t *bytes,
                            const ZipMember &member, std::vector<uint8_t> &out);

} // namespace cleave::data

#endif // CLEAVE_DATA_ZIP_H
