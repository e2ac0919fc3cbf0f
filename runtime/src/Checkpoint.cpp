//===- Checkpoint.cpp - Session checkpoint files --------------------------===//
//
// Layout (all integers little-endian):
//
//   offset 0   header, 64 bytes:
//                char     magic[8]        "CLEAVECK"
//                uint32   format version  3 (kCheckpointFormatVersion)
//                uint32   reserved        0
//                uint64   index bytes
//                uint64   data bytes
//                uint32   CRC32 of the index
//                uint32   CRC32 of header bytes [0, 36)
//                         zero padding to 64
//   offset 64  index: UTF-8 JSON (see docs/design/runtime.md)
//   then       zero padding to a multiple of 64
//   data       the blobs the index points to, each at a 64-byte aligned offset
//              relative to the start of the data section
//
//===----------------------------------------------------------------------===//

#include "Checkpoint.h"

#include "Checksum.h"
#include "LrSchedule.h"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>

using nlohmann::json;

namespace cleave::rt {

namespace {

constexpr char kMagic[8] = {'C', 'L', 'E', 'A', 'V', 'E', 'C', 'K'};
constexpr size_t kHeaderBytes = 64;
constexpr size_t kHeaderCrcOffset = 36;
constexpr uint64_t kAlign = 64;

uint64_t alignUp(uint64_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

void putU32(unsigned char *p, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    p[i] = static_cast<unsigned char>(v >> (8 * i));
}
void putU64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    p[i] = static_cast<unsigned char>(v >> (8 * i));
}
uint32_t getU32(const unsigned char *p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i)
    v |= uint32_t(p[i]) << (8 * i);
  return v;
}
uint64_t getU64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i)
    v |= uint64_t(p[i]) << (8 * i);
  return v;
}

std::string hashHex(uint64_t hash) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016" PRIx64, hash);
  return buf;
}

Status ioError(const std::string &path, const char *what, int err) {
  return makeError(CLEAVE_IO_ERROR, path, ": cannot ", what, " (",
                   std::strerror(err), ")");
}

/// Writes all of `bytes`, retrying short writes and EINTR.
bool writeAll(int fd, const void *data, size_t bytes) {
  const char *p = static_cast<const char *>(data);
  while (bytes > 0) {
    ssize_t n = ::write(fd, p, bytes);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return false;
    }
    p += n;
    bytes -= size_t(n);
  }
  return true;
}

/// The temporary file of one save; removed unless committed.
class TempFile {
public:
  explicit TempFile(std::string path) : path_(std::move(path)) {}
  ~TempFile() {
    if (fd_ >= 0)
      ::close(fd_);
    if (!committed_)
      ::unlink(path_.c_str());
  }
  bool open() {
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    return fd_ >= 0;
  }
  int fd() const { return fd_; }
  /// Closes the descriptor, reporting a deferred write error if any.
  bool close() {
    int fd = fd_;
    fd_ = -1;
    return ::close(fd) == 0;
  }
  void commit() { committed_ = true; }

private:
  std::string path_;
  int fd_ = -1;
  bool committed_ = false;
};

/// Flushes the directory entry of a rename to disk. Filesystems that cannot
/// fsync a directory (EINVAL) give no stronger guarantee to ask for.
Status syncDirectory(const std::string &path) {
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  std::string dirName = dir.empty() ? std::string(".") : dir.string();
  int fd = ::open(dirName.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return ioError(dirName, "open directory to sync it", errno);
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0 && err != EINVAL && err != ENOTSUP)
    return ioError(dirName, "fsync directory", err);
  return Status::success();
}

} // namespace

namespace {

/// A checkpoint laid out for writing: the header, the index and the blobs
/// at their offsets in the data section (pointing into the contents).
struct Layout {
  struct Blob {
    const void *data;
    size_t bytes;
    uint64_t offset;
  };
  unsigned char header[kHeaderBytes] = {};
  std::string index;
  std::vector<Blob> blobs;
  uint64_t dataBytes = 0;
};

/// Lays out `contents`; `name` (a path) prefixes errors.
Status layOut(const std::string &name, const CheckpointContents &contents,
              Layout &out) {
  // The index records where each blob goes and its CRC32.
  json index;
  index["manifest_hash"] = hashHex(contents.manifestHash);
  index["seed"] = contents.seed;
  index["accumulate"] = contents.accumulate;
  json hypers = json::array();
  for (const auto &[hyper, value] : contents.hyperparameters)
    hypers.push_back({{"name", hyper}, {"value", value}});
  index["hyperparameters"] = std::move(hypers);
  if (const std::optional<cleave_lr_schedule> &s = contents.lrSchedule)
    index["lr_schedule"] = {{"kind", lrScheduleKindName(s->kind)},
                            {"lr", s->lr},
                            {"min_lr", s->min_lr},
                            {"warmup_steps", s->warmup_steps},
                            {"warmup_start_factor", s->warmup_start_factor},
                            {"total_steps", s->total_steps},
                            {"step_size", s->step_size},
                            {"gamma", s->gamma},
                            {"power", s->power}};

  uint64_t offset = 0;
  auto place = [&](const void *data, size_t bytes, json &entry) {
    entry["offset"] = offset;
    entry["bytes"] = bytes;
    entry["crc32"] = crc32(data, bytes);
    out.blobs.push_back({data, bytes, offset});
    offset = alignUp(offset + bytes);
  };
  json globals = json::array();
  for (const CheckpointTensor &t : contents.globals) {
    json entry = {
        {"name", t.name}, {"dtype", abi::name(t.dtype)}, {"shape", t.shape}};
    place(t.data, t.bytes, entry);
    globals.push_back(std::move(entry));
  }
  index["globals"] = std::move(globals);
  json userState = json::array();
  for (const auto &[key, value] : contents.userState) {
    json entry = {{"key", key}};
    place(value.data(), value.size(), entry);
    userState.push_back(std::move(entry));
  }
  index["user_state"] = std::move(userState);

  try {
    out.index = index.dump();
  } catch (const json::exception &) {
    // dump() refuses strings that are not UTF-8: names come from a validated
    // manifest, so this can only be a user-state key.
    return makeError(CLEAVE_INVALID_ARGUMENT, name,
                     ": a user-state key is not valid UTF-8");
  }
  out.dataBytes = offset;
  std::memcpy(out.header, kMagic, sizeof(kMagic));
  putU32(out.header + 8, kCheckpointFormatVersion);
  putU64(out.header + 16, out.index.size());
  putU64(out.header + 24, out.dataBytes);
  putU32(out.header + 32, crc32(out.index.data(), out.index.size()));
  putU32(out.header + kHeaderCrcOffset, crc32(out.header, kHeaderCrcOffset));
  return Status::success();
}

/// Passes the bytes of the file `layout` describes, in order, to `write`;
/// false as soon as `write` fails.
bool emit(const Layout &layout,
          const std::function<bool(const void *, size_t)> &write) {
  static const char kZeros[kAlign] = {};
  uint64_t written = kHeaderBytes + layout.index.size();
  if (!write(layout.header, kHeaderBytes) ||
      !write(layout.index.data(), layout.index.size()) ||
      !write(kZeros, alignUp(written) - written))
    return false;
  uint64_t position = 0; // within the data section
  for (const Layout::Blob &blob : layout.blobs) {
    for (uint64_t gap = blob.offset - position; gap > 0;) {
      size_t n = size_t(std::min<uint64_t>(gap, kAlign));
      if (!write(kZeros, n))
        return false;
      gap -= n;
    }
    if (!write(blob.data, blob.bytes))
      return false;
    position = blob.offset + blob.bytes;
  }
  return write(kZeros, layout.dataBytes - position);
}

} // namespace

Status encodeCheckpoint(const CheckpointContents &contents, std::string &out) {
  Layout layout;
  CLEAVE_RETURN_IF_ERROR(layOut("checkpoint", contents, layout));
  out.clear();
  out.reserve(
      size_t(alignUp(kHeaderBytes + layout.index.size()) + layout.dataBytes));
  emit(layout, [&](const void *data, size_t bytes) {
    out.append(static_cast<const char *>(data), bytes);
    return true;
  });
  return Status::success();
}

Status writeCheckpoint(const std::string &path,
                       const CheckpointContents &contents) {
  if (path.empty())
    return makeError(CLEAVE_INVALID_ARGUMENT, "checkpoint path is empty");
  Layout layout;
  CLEAVE_RETURN_IF_ERROR(layOut(path, contents, layout));

  std::string tmpPath = path + ".tmp";
  TempFile tmp(tmpPath);
  if (!tmp.open())
    return ioError(tmpPath, "create", errno);
  if (!emit(layout, [&](const void *data, size_t bytes) {
        return writeAll(tmp.fd(), data, bytes);
      }))
    return ioError(tmpPath, "write", errno);
  if (::fsync(tmp.fd()) != 0)
    return ioError(tmpPath, "fsync", errno);
  if (!tmp.close())
    return ioError(tmpPath, "close", errno);
  if (::rename(tmpPath.c_str(), path.c_str()) != 0)
    return ioError(path, ("rename " + tmpPath + " to").c_str(), errno);
  tmp.commit();
  return syncDirectory(path);
}

namespace {

Status corrupt(const std::string &path, const std::string &why) {
  return makeError(CLEAVE_INVALID_CHECKPOINT, path, ": corrupt checkpoint (",
                   why, ")");
}

Status readFile(const std::string &path, std::string &out) {
  // O_NONBLOCK: opening a FIFO would otherwise wait for a writer; it is
  // refused below as not a regular file.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return ioError(path, "open", errno);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return ioError(path, "stat", err);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return makeError(CLEAVE_IO_ERROR, path, ": not a regular file");
  }
  out.resize(size_t(st.st_size));
  size_t done = 0;
  while (done < out.size()) {
    ssize_t n = ::read(fd, out.data() + done, out.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      return ioError(path, "read", err);
    }
    if (n == 0)
      break;
    done += size_t(n);
  }
  ::close(fd);
  out.resize(done);
  return Status::success();
}

/// `v` as an integer; false if it is not one. nlohmann's get<int64_t>() and
/// get<uint64_t>() also convert floating-point numbers, with a cast that is
/// undefined behaviour when the value is out of range (1e300 in a forged
/// index).
bool integerOf(const json &v, uint64_t &out) {
  if (!v.is_number_unsigned())
    return false;
  out = v.get<uint64_t>();
  return true;
}
bool integerOf(const json &v, int64_t &out) {
  if (!v.is_number_integer() ||
      (v.is_number_unsigned() &&
       v.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max())))
    return false;
  out = v.get<int64_t>();
  return true;
}

/// Reads the `offset`/`bytes`/`crc32` of a blob and checks its CRC.
Status locateBlob(const std::string &path, const json &entry,
                  const std::string &what, const std::string &data,
                  uint64_t dataStart, const char *&ptr, size_t &bytes) {
  auto u64 = [&](const char *key, uint64_t &v) {
    auto it = entry.find(key);
    if (it == entry.end() || !it->is_number_unsigned())
      return false;
    v = it->get<uint64_t>();
    return true;
  };
  uint64_t offset, size, crc;
  if (!u64("offset", offset) || !u64("bytes", size) || !u64("crc32", crc))
    return corrupt(path, what + " has no valid offset, bytes and crc32");
  uint64_t dataBytes = data.size() - dataStart;
  if (offset > dataBytes || size > dataBytes - offset)
    return corrupt(path, what + " lies outside the data section");
  ptr = data.data() + dataStart + offset;
  bytes = size_t(size);
  if (crc32(ptr, bytes) != crc)
    return corrupt(path, what + " fails its CRC32 check");
  return Status::success();
}

} // namespace

Status readCheckpoint(const std::string &path, LoadedCheckpoint &out) {
  if (path.empty())
    return makeError(CLEAVE_INVALID_ARGUMENT, "checkpoint path is empty");
  std::string file;
  CLEAVE_RETURN_IF_ERROR(readFile(path, file));
  return parseCheckpoint(path, std::move(file), out);
}

Status parseCheckpoint(const std::string &path, std::string image,
                       LoadedCheckpoint &out) {
  out.contents_ = CheckpointContents();
  out.bytes_ = std::move(image);
  const std::string &file = out.bytes_;
  const auto *bytes = reinterpret_cast<const unsigned char *>(file.data());

  if (file.size() < sizeof(kMagic) ||
      std::memcmp(bytes, kMagic, sizeof(kMagic)) != 0)
    return makeError(CLEAVE_INVALID_CHECKPOINT, path,
                     ": not a Cleave checkpoint (bad magic)");
  if (file.size() < kHeaderBytes)
    return makeError(CLEAVE_INVALID_CHECKPOINT, path,
                     ": truncated checkpoint (", file.size(),
                     " bytes, the header alone has ", kHeaderBytes, ")");
  if (getU32(bytes + kHeaderCrcOffset) != crc32(bytes, kHeaderCrcOffset))
    return corrupt(path, "the header fails its CRC32 check");
  uint32_t version = getU32(bytes + 8);
  if (version != kCheckpointFormatVersion)
    return makeError(CLEAVE_INVALID_CHECKPOINT, path,
                     ": checkpoint format version ", version,
                     ", this runtime reads version ", kCheckpointFormatVersion);
  uint64_t indexBytes = getU64(bytes + 16);
  uint64_t dataBytes = getU64(bytes + 24);
  constexpr uint64_t kLimit = uint64_t(1) << 62;
  if (indexBytes > kLimit || dataBytes > kLimit)
    return corrupt(path, "the header gives impossible section sizes");
  uint64_t dataStart = alignUp(kHeaderBytes + indexBytes);
  uint64_t expected = dataStart + dataBytes;
  if (file.size() < expected)
    return makeError(CLEAVE_INVALID_CHECKPOINT, path,
                     ": truncated checkpoint (", file.size(),
                     " bytes, the header says ", expected, ")");
  if (file.size() > expected)
    return corrupt(path, "the file has " + std::to_string(file.size()) +
                             " bytes, the header says " +
                             std::to_string(expected));
  const char *indexText = file.data() + kHeaderBytes;
  if (crc32(indexText, indexBytes) != getU32(bytes + 32))
    return corrupt(path, "the index fails its CRC32 check");

  // The CRC matched, so a malformed index means a writer bug or a forged
  // file; either way it is reported, never trusted.
  json index = json::parse(indexText, indexText + indexBytes, nullptr,
                           /*allow_exceptions=*/false);
  if (!index.is_object())
    return corrupt(path, "the index is not a JSON object");
  CheckpointContents &c = out.contents_;
  try {
    std::string hash = index.at("manifest_hash").get<std::string>();
    // Checked digit by digit: strtoull alone would also take a sign, spaces
    // or a "0x" prefix.
    if (hash.size() != 16 ||
        !std::all_of(hash.begin(), hash.end(),
                     [](unsigned char ch) { return std::isxdigit(ch) != 0; }))
      return corrupt(path, "manifest_hash is not 16 hex digits");
    c.manifestHash = std::strtoull(hash.c_str(), nullptr, 16);
    if (!integerOf(index.at("seed"), c.seed))
      return corrupt(path, "seed is not a non-negative integer");
    if (!integerOf(index.at("accumulate"), c.accumulate))
      return corrupt(path, "accumulate is not an integer");
    for (const json &h : index.at("hyperparameters"))
      c.hyperparameters.emplace_back(h.at("name").get<std::string>(),
                                     h.at("value").get<double>());
    if (auto it = index.find("lr_schedule"); it != index.end()) {
      std::optional<cleave_lr_schedule_kind> kind =
          parseLrScheduleKind(it->at("kind").get<std::string>());
      if (!kind)
        return corrupt(path, "lr_schedule has an unknown kind");
      cleave_lr_schedule s;
      s.kind = *kind;
      s.lr = it->at("lr").get<double>();
      s.min_lr = it->at("min_lr").get<double>();
      s.warmup_steps = it->at("warmup_steps").get<int64_t>();
      s.warmup_start_factor = it->at("warmup_start_factor").get<double>();
      s.total_steps = it->at("total_steps").get<int64_t>();
      s.step_size = it->at("step_size").get<int64_t>();
      s.gamma = it->at("gamma").get<double>();
      s.power = it->at("power").get<double>();
      if (Status valid = validateLrSchedule(s); !valid.ok())
        return corrupt(path, valid.message());
      c.lrSchedule = s;
    }
    for (const json &g : index.at("globals")) {
      CheckpointTensor t;
      t.name = g.at("name").get<std::string>();
      std::optional<DType> dtype =
          abi::parse<DType>(g.at("dtype").get<std::string>());
      if (!dtype)
        return corrupt(path, "global '" + t.name + "' has an unknown dtype");
      t.dtype = *dtype;
      const json &shape = g.at("shape");
      if (!shape.is_array())
        return corrupt(path, "global '" + t.name + "' has no shape list");
      for (const json &d : shape) {
        int64_t dim;
        if (!integerOf(d, dim))
          return corrupt(path, "global '" + t.name +
                                   "' has a shape that is not integers");
        t.shape.push_back(dim);
      }
      const char *data;
      CLEAVE_RETURN_IF_ERROR(locateBlob(path, g, "global '" + t.name + "'",
                                        file, dataStart, data, t.bytes));
      t.data = data;
      c.globals.push_back(std::move(t));
    }
    for (const json &u : index.at("user_state")) {
      std::string key = u.at("key").get<std::string>();
      const char *data;
      size_t size;
      CLEAVE_RETURN_IF_ERROR(locateBlob(path, u, "user state '" + key + "'",
                                        file, dataStart, data, size));
      c.userState[key] = std::string(data, size);
    }
  } catch (const json::exception &e) {
    return corrupt(path, std::string("malformed index: ") + e.what());
  }
  return Status::success();
}

} // namespace cleave::rt
