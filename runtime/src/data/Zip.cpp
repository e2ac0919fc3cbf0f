//===- Zip.cpp - The zip archives of NumPy's .npz format ------------------===//
//
// Layout (PKWARE's APPNOTE.TXT): members (a local header, then the data),
// the central directory (one entry per member), optionally the zip64 end
// record and its locator, and the end-of-central-directory record with an
// archive comment of up to 65535 bytes. Sizes and offsets of 0xffffffff
// (0xffff for counts) mean "see the zip64 record": the end record's in the
// zip64 end record, an entry's in its zip64 extra field.
//
//===----------------------------------------------------------------------===//

#include "Zip.h"

#include <zlib.h>

#include <algorithm>
#include <limits>
#include <new>

namespace cleave::data {

using rt::makeError;
using rt::Status;

namespace {

constexpr uint32_t kLocalHeaderSig = 0x04034b50;
constexpr uint32_t kCentralEntrySig = 0x02014b50;
constexpr uint32_t kEndSig = 0x06054b50;
constexpr uint32_t kZip64EndSig = 0x06064b50;
constexpr uint32_t kZip64LocatorSig = 0x07064b50;
constexpr size_t kLocalHeaderSize = 30, kCentralEntrySize = 46, kEndSize = 22,
                 kZip64EndSize = 56, kZip64LocatorSize = 20;
/// Deflate cannot compress better than about 1032:1; a member claiming more
/// is corrupt (or a zip bomb), and is refused before any allocation.
constexpr uint64_t kMaxDeflateRatio = 1032;
/// Inflated members are held in memory: larger ones are refused.
constexpr uint64_t kMaxInflatedBytes = uint64_t(1) << 40;

uint64_t le(const uint8_t *p, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i)
    v |= uint64_t(p[i]) << (8 * i);
  return v;
}

Status corrupt(const std::string &path, const std::string &what) {
  return makeError(CLEAVE_INVALID_ARGUMENT, path, ": corrupt zip archive (",
                   what, ")");
}

/// Replaces the fields of a central directory entry that are saturated
/// (0xffffffff) by the values of its zip64 extra field, in the field's
/// order: size, compressed size, local header offset.
Status applyZip64Extra(const std::string &path, const std::string &member,
                       const uint8_t *extra, size_t extraSize, uint64_t &size,
                       uint64_t &compressedSize, uint64_t &offset) {
  uint64_t *fields[] = {&size, &compressedSize, &offset};
  size_t at = 0;
  while (at + 4 <= extraSize) {
    const uint64_t id = le(extra + at, 2), length = le(extra + at + 2, 2);
    if (at + 4 + length > extraSize)
      return corrupt(path, "the extra field of '" + member +
                               "' overruns its central directory entry");
    if (id == 0x0001) {
      size_t pos = 0;
      for (uint64_t *field : fields) {
        if (*field != 0xffffffffu)
          continue;
        if (pos + 8 > length)
          return corrupt(path, "the zip64 extra field of '" + member +
                                   "' is too short");
        *field = le(extra + at + 4 + pos, 8);
        pos += 8;
      }
      return Status::success();
    }
    at += 4 + size_t(length);
  }
  for (uint64_t *field : fields)
    if (*field == 0xffffffffu)
      return corrupt(path, "'" + member +
                               "' has zip64 sizes but no zip64 extra field");
  return Status::success();
}

} // namespace

Status parseZip(const std::string &path, const uint8_t *bytes, size_t size,
                std::vector<ZipMember> &out) {
  out.clear();
  if (size < kEndSize)
    return makeError(CLEAVE_INVALID_ARGUMENT, path, ": not a zip archive (",
                     size,
                     " bytes, shorter than the end-of-central-directory "
                     "record)");
  // The end record is the last 22 bytes unless a comment follows it: search
  // backwards over at most the longest comment.
  size_t end = size - kEndSize;
  const size_t lowest = size - kEndSize > 0xffff ? size - kEndSize - 0xffff : 0;
  while (true) {
    if (le(bytes + end, 4) == kEndSig &&
        end + kEndSize + le(bytes + end + 20, 2) == size)
      break;
    if (end == lowest)
      return makeError(CLEAVE_INVALID_ARGUMENT, path,
                       ": not a zip archive (no end-of-central-directory "
                       "record; an .npz file is one, as np.savez writes it)");
    --end;
  }
  const uint8_t *e = bytes + end;
  uint64_t disk = le(e + 4, 2), cdDisk = le(e + 6, 2);
  uint64_t diskEntries = le(e + 8, 2), entries = le(e + 10, 2);
  uint64_t cdSize = le(e + 12, 4), cdOffset = le(e + 16, 4);
  if (entries == 0xffff || cdSize == 0xffffffffu || cdOffset == 0xffffffffu ||
      diskEntries == 0xffff) {
    if (end < kZip64LocatorSize ||
        le(bytes + end - kZip64LocatorSize, 4) != kZip64LocatorSig)
      return corrupt(path, "saturated end record without a zip64 locator");
    const uint64_t z = le(bytes + end - kZip64LocatorSize + 8, 8);
    if (z > end - kZip64LocatorSize ||
        end - kZip64LocatorSize - z < kZip64EndSize ||
        le(bytes + z, 4) != kZip64EndSig)
      return corrupt(path, "the zip64 end record is not where its locator "
                           "points");
    const uint8_t *r = bytes + z;
    disk = le(r + 16, 4);
    cdDisk = le(r + 20, 4);
    diskEntries = le(r + 24, 8);
    entries = le(r + 32, 8);
    cdSize = le(r + 40, 8);
    cdOffset = le(r + 48, 8);
    end = size_t(z);
  }
  if (disk != 0 || cdDisk != 0 || diskEntries != entries)
    return makeError(CLEAVE_INVALID_ARGUMENT, path,
                     ": multi-disk zip archives are not supported");
  if (cdOffset > end || cdSize > end - cdOffset)
    return corrupt(path, "the central directory (" + std::to_string(cdSize) +
                             " bytes at offset " + std::to_string(cdOffset) +
                             ") lies outside the archive");
  // Each entry takes at least 46 bytes: a count above that is corrupt, and
  // is refused before it sizes anything.
  if (entries > cdSize / kCentralEntrySize)
    return corrupt(path, std::to_string(entries) +
                             " members cannot fit in a central directory "
                             "of " +
                             std::to_string(cdSize) + " bytes");

  std::vector<ZipMember> members;
  members.reserve(size_t(entries));
  uint64_t at = cdOffset;
  const uint64_t cdEnd = cdOffset + cdSize;
  for (uint64_t i = 0; i < entries; ++i) {
    if (cdEnd - at < kCentralEntrySize || le(bytes + at, 4) != kCentralEntrySig)
      return corrupt(path, "central directory entry " + std::to_string(i) +
                               " is missing or damaged");
    const uint8_t *c = bytes + at;
    const uint64_t flags = le(c + 8, 2), nameLength = le(c + 28, 2),
                   extraLength = le(c + 30, 2), commentLength = le(c + 32, 2);
    if (cdEnd - at - kCentralEntrySize <
        nameLength + extraLength + commentLength)
      return corrupt(path, "central directory entry " + std::to_string(i) +
                               " overruns the directory");
    ZipMember m;
    m.name.assign(reinterpret_cast<const char *>(c + kCentralEntrySize),
                  size_t(nameLength));
    m.method = uint16_t(le(c + 10, 2));
    m.crc32 = uint32_t(le(c + 16, 4));
    m.compressedSize = le(c + 20, 4);
    m.size = le(c + 24, 4);
    uint64_t localOffset = le(c + 42, 4);
    CLEAVE_RETURN_IF_ERROR(applyZip64Extra(
        path, m.name, c + kCentralEntrySize + nameLength, size_t(extraLength),
        m.size, m.compressedSize, localOffset));
    if (flags & 1)
      return makeError(CLEAVE_INVALID_ARGUMENT, path, ":", m.name,
                       ": encrypted zip members are not supported");
    if (m.method != 0 && m.method != 8)
      return makeError(CLEAVE_INVALID_ARGUMENT, path, ":", m.name,
                       ": zip compression method ", m.method,
                       " is not supported (expected 0, stored, as np.savez "
                       "writes, or 8, deflate, as np.savez_compressed)");
    if (m.method == 0 && m.compressedSize != m.size)
      return corrupt(path, "stored member '" + m.name + "' has " +
                               std::to_string(m.compressedSize) +
                               " bytes in the archive but a size of " +
                               std::to_string(m.size));
    // The local header repeats the name and may carry another extra field:
    // its own lengths say where the data starts.
    if (localOffset > cdOffset || cdOffset - localOffset < kLocalHeaderSize ||
        le(bytes + localOffset, 4) != kLocalHeaderSig)
      return corrupt(path, "the local header of '" + m.name +
                               "' is not at offset " +
                               std::to_string(localOffset));
    const uint8_t *l = bytes + localOffset;
    m.dataOffset =
        localOffset + kLocalHeaderSize + le(l + 26, 2) + le(l + 28, 2);
    if (m.dataOffset > cdOffset || cdOffset - m.dataOffset < m.compressedSize)
      return corrupt(path, "the data of '" + m.name + "' (" +
                               std::to_string(m.compressedSize) +
                               " bytes) runs past the start of the central "
                               "directory");
    members.push_back(std::move(m));
    at += kCentralEntrySize + nameLength + extraLength + commentLength;
  }
  out = std::move(members);
  return Status::success();
}

Status inflateZipMember(const std::string &path, const uint8_t *bytes,
                        const ZipMember &member, std::vector<uint8_t> &out) {
  const std::string name = path + ":" + member.name;
  if (member.size > kMaxInflatedBytes ||
      member.size >
          std::max<uint64_t>(member.compressedSize, 1) * kMaxDeflateRatio)
    return makeError(CLEAVE_INVALID_ARGUMENT, name, ": a deflated size of ",
                     member.compressedSize, " bytes cannot inflate to ",
                     member.size, " (corrupt archive)");
  try {
    out.assign(size_t(member.size), 0);
  } catch (const std::bad_alloc &) {
    return makeError(CLEAVE_OUT_OF_MEMORY, name, ": cannot allocate ",
                     member.size, " bytes to inflate it into");
  }
  z_stream zs{};
  // Negative window bits: a raw deflate stream, as zip stores it.
  if (::inflateInit2(&zs, -MAX_WBITS) != Z_OK)
    return makeError(CLEAVE_OUT_OF_MEMORY, name,
                     ": cannot initialise zlib's inflate");
  struct End {
    z_stream *zs;
    ~End() { ::inflateEnd(zs); }
  } endGuard{&zs};
  uint64_t consumed = 0, produced = 0;
  constexpr uint64_t kChunk = std::numeric_limits<uInt>::max();
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    zs.next_in = const_cast<Bytef *>(bytes + member.dataOffset + consumed);
    zs.avail_in = uInt(std::min(member.compressedSize - consumed, kChunk));
    zs.next_out = out.data() + produced;
    zs.avail_out = uInt(std::min(member.size - produced, kChunk));
    const uInt inBefore = zs.avail_in, outBefore = zs.avail_out;
    rc = ::inflate(&zs, Z_NO_FLUSH);
    consumed += inBefore - zs.avail_in;
    produced += outBefore - zs.avail_out;
    if (rc == Z_DATA_ERROR)
      return makeError(CLEAVE_INVALID_ARGUMENT, name,
                       ": corrupt deflate data (",
                       zs.msg ? zs.msg : "invalid stream", ")");
    if (rc == Z_MEM_ERROR)
      return makeError(CLEAVE_OUT_OF_MEMORY, name,
                       ": out of memory while inflating");
    if (rc == Z_STREAM_END)
      break;
    if (rc != Z_OK && rc != Z_BUF_ERROR)
      return makeError(CLEAVE_INVALID_ARGUMENT, name,
                       ": cannot inflate (zlib error ", rc, ")");
    if (inBefore == zs.avail_in && outBefore == zs.avail_out) {
      if (produced == member.size)
        return makeError(CLEAVE_INVALID_ARGUMENT, name,
                         ": inflates to more than the ", member.size,
                         " bytes its directory entry says");
      return makeError(CLEAVE_INVALID_ARGUMENT, name,
                       ": truncated deflate data (the stream ends before its "
                       "end marker)");
    }
  }
  if (produced != member.size)
    return makeError(CLEAVE_INVALID_ARGUMENT, name, ": inflates to ", produced,
                     " bytes, its directory entry says ", member.size);
  uLong crc = ::crc32(0L, Z_NULL, 0);
  for (uint64_t done = 0; done < produced;) {
    uInt n = uInt(std::min(produced - done, kChunk));
    crc = ::crc32(crc, out.data() + done, n);
    done += n;
  }
  if (uint32_t(crc) != member.crc32)
    return makeError(CLEAVE_INVALID_ARGUMENT, name,
                     ": CRC-32 mismatch (the inflated data is corrupt)");
  return Status::success();
}

} // namespace cleave::data
