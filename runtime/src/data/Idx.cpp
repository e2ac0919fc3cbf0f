//===- Idx.cpp - Reading idx files (MNIST's format), gzipped or plain -----===//
//
// The compressed file is read into memory and inflated with zlib's stream API
// rather than gzread, because gzread accepts a truncated stream silently (it
// returns what it has) and reports corruption only through a separate call:
// inflate says exactly what is wrong, and a gzip stream (format 16 + 15)
// checks the trailer's CRC-32 and length itself.
//
//===----------------------------------------------------------------------===//

#include "Idx.h"
#include "MappedFile.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <limits>
#include <sys/stat.h>
#include <unistd.h>

namespace cleave::data {

using rt::makeError;
using rt::Status;

namespace {

std::string hex32(uint32_t v) {
  char buf[11];
  std::snprintf(buf, sizeof(buf), "0x%08" PRIx32, v);
  return buf;
}

bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

Status readFile(const std::string &path, std::vector<uint8_t> &out) {
  int fd = -1;
  uint64_t size = 0;
  CLEAVE_RETURN_IF_ERROR(openRegularFile(path, fd, size));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  if (size > kMaxIdxBytes)
    return makeError(CLEAVE_INVALID_ARGUMENT, path, ": ", size,
                     " bytes is too large for an idx file");
  out.resize(size_t(size));
  size_t done = 0;
  while (done < out.size()) {
    ssize_t n = ::read(fd, out.data() + done, out.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return makeError(CLEAVE_IO_ERROR, path, ": read error (",
                       std::strerror(errno), ")");
    if (n == 0)
      break; // Shrunk while reading: parse what is there.
    done += size_t(n);
  }
  out.resize(done);
  return Status::success();
}

bool isGzip(const std::vector<uint8_t> &bytes, size_t at = 0) {
  return bytes.size() >= at + 2 && bytes[at] == 0x1f && bytes[at + 1] == 0x8b;
}

/// Inflates every gzip member of `in` (concatenated members are one file, as
/// for gunzip).
Status inflateGzip(const std::string &path, const std::vector<uint8_t> &in,
                   std::vector<uint8_t> &out) {
  z_stream zs;
  std::memset(&zs, 0, sizeof(zs));
  // 16 + MAX_WBITS: gzip wrapper only; inflate verifies the CRC-32 and the
  // length stored in each member's trailer.
  if (::inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK)
    return makeError(CLEAVE_OUT_OF_MEMORY, path,
                     ": cannot initialise zlib's inflate");
  struct End {
    z_stream *zs;
    ~End() { ::inflateEnd(zs); }
  } end{&zs};

  // The last member's trailer holds its length mod 2^32: a good first guess,
  // bounded because a truncated or corrupt file's last bytes are anything.
  size_t guess = in.size() * 4;
  if (in.size() >= 4) {
    size_t n = in.size();
    guess = size_t(in[n - 4]) | size_t(in[n - 3]) << 8 |
            size_t(in[n - 2]) << 16 | size_t(in[n - 1]) << 24;
  }
  guess = std::min<size_t>(guess, in.size() * 16);
  out.resize(std::max<size_t>(guess, 1 << 16));

  size_t consumed = 0, produced = 0;
  while (true) {
    size_t inLeft = in.size() - consumed;
    zs.next_in = const_cast<Bytef *>(in.data() + consumed);
    zs.avail_in =
        uInt(std::min<size_t>(inLeft, std::numeric_limits<uInt>::max()));
    if (produced == out.size()) {
      if (out.size() >= kMaxIdxBytes)
        return makeError(CLEAVE_INVALID_ARGUMENT, path,
                         ": inflates to more than ", kMaxIdxBytes,
                         " bytes, too large for an idx file");
      out.resize(std::min<uint64_t>(uint64_t(out.size()) * 2, kMaxIdxBytes));
    }
    zs.next_out = out.data() + produced;
    zs.avail_out = uInt(std::min<size_t>(out.size() - produced,
                                         std::numeric_limits<uInt>::max()));
    uInt availIn = zs.avail_in, availOut = zs.avail_out;
    int rc = ::inflate(&zs, Z_NO_FLUSH);
    consumed += availIn - zs.avail_in;
    produced += availOut - zs.avail_out;
    if (rc == Z_STREAM_END) {
      if (consumed == in.size())
        break;
      if (!isGzip(in, consumed))
        return makeError(CLEAVE_INVALID_ARGUMENT, path, ": ",
                         in.size() - consumed,
                         " bytes of garbage after the gzip data");
      ::inflateReset(&zs);
      continue;
    }
    if (rc == Z_DATA_ERROR)
      return makeError(CLEAVE_INVALID_ARGUMENT, path, ": corrupt gzip data (",
                       zs.msg ? zs.msg : "invalid deflate stream", ")");
    if (rc == Z_MEM_ERROR)
      return makeError(CLEAVE_OUT_OF_MEMORY, path,
                       ": out of memory while inflating");
    if (rc != Z_OK && rc != Z_BUF_ERROR)
      return makeError(CLEAVE_INVALID_ARGUMENT, path,
                       ": cannot inflate (zlib error ", rc, ")");
    // No progress with all input consumed and room to write: the stream ends
    // before its end-of-stream marker and trailer.
    if (consumed == in.size() && zs.avail_out > 0)
      return makeError(CLEAVE_INVALID_ARGUMENT, path,
                       ": truncated gzip data (the stream ends after ",
                       in.size(), " bytes, before its end marker)");
  }
  out.resize(produced);
  return Status::success();
}

uint32_t bigEndian32(const uint8_t *p) {
  return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 |
         uint32_t(p[3]);
}

} // namespace

Status readMaybeGzip(const std::string &path, std::vector<uint8_t> &out) {
  std::vector<uint8_t> raw;
  CLEAVE_RETURN_IF_ERROR(readFile(path, raw));
  if (isGzip(raw))
    return inflateGzip(path, raw, out);
  if (endsWith(path, ".gz"))
    return makeError(CLEAVE_INVALID_ARGUMENT, path,
                     ": not gzip data (the name ends in .gz but the file does "
                     "not start with the gzip magic bytes 1f 8b)");
  out = std::move(raw);
  return Status::success();
}

Status parseIdx(const std::string &path, std::vector<uint8_t> bytes,
                uint32_t expectedMagic, IdxArray &out) {
  const uint32_t rank = expectedMagic & 0xff;
  const char *what = expectedMagic == kIdxImagesMagic   ? "images"
                     : expectedMagic == kIdxLabelsMagic ? "labels"
                                                        : "data";
  if (bytes.size() < 4)
    return makeError(CLEAVE_INVALID_ARGUMENT, path, ": truncated idx file (",
                     bytes.size(), " bytes, shorter than the 4-byte magic)");
  uint32_t magic = bigEndian32(bytes.data());
  if (magic != expectedMagic)
    return makeError(CLEAVE_INVALID_ARGUMENT, path, ": bad idx magic ",
                     hex32(magic), ", expected ", hex32(expectedMagic),
                     " (unsigned-byte ", what, " with ", rank, " dimension",
                     rank == 1 ? "" : "s", ")");
  const uint64_t header = 4 + 4 * uint64_t(rank);
  if (bytes.size() < header)
    return makeError(CLEAVE_INVALID_ARGUMENT, path, ": truncated idx file (",
                     bytes.size(), " bytes, shorter than its ", header,
                     "-byte header)");
  out.dims.assign(rank, 0);
  uint64_t elements = 1;
  std::string shape;
  for (uint32_t i = 0; i < rank; ++i) {
    out.dims[i] = bigEndian32(bytes.data() + 4 + 4 * i);
    shape += (i ? "x" : "") + std::to_string(out.dims[i]);
    if (out.dims[i] == 0)
      return makeError(CLEAVE_INVALID_ARGUMENT, path, ": idx dimension ", i,
                       " is 0 (", what, " of shape ", shape, "...)");
    // Dimensions are 32-bit, so the product of three fits in 96 bits: check
    // against the size limit as it grows to stay in range.
    elements *= out.dims[i];
    if (elements > kMaxIdxBytes)
      return makeError(CLEAVE_INVALID_ARGUMENT, path, ": idx dimensions ",
                       shape, "... describe more than ", kMaxIdxBytes,
                       " bytes");
  }
  const uint64_t expected = header + elements;
  if (bytes.size() < expected)
    return makeError(CLEAVE_INVALID_ARGUMENT, path, ": truncated idx file (",
                     what, " of shape ", shape, " need ", expected,
                     " bytes, the file has ", bytes.size(), ")");
  if (bytes.size() > expected)
    return makeError(CLEAVE_INVALID_ARGUMENT, path, ": ",
                     bytes.size() - expected, " unexpected bytes after the ",
                     what, " of shape ", shape, " (expected exactly ", expected,
                     " bytes)");
  bytes.erase(bytes.begin(), bytes.begin() + header);
  out.data = std::move(bytes);
  return Status::success();
}

Status readIdx(const std::string &path, uint32_t expectedMagic, IdxArray &out) {
  std::vector<uint8_t> bytes;
  CLEAVE_RETURN_IF_ERROR(readMaybeGzip(path, bytes));
  return parseIdx(path, std::move(bytes), expectedMagic, out);
}

} // namespace cleave::data
