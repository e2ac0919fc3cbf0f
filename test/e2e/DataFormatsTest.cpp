//===- DataFormatsTest.cpp - NumPy and CIFAR-10 datasets ------------------===//
//
// The .npy parser, the zip reader of .npz archives, the CIFAR-10 batch
// parser, the dataset layouts and format detection, memory mapping, the
// per-channel standardisation, every error path, files written by NumPy
// itself, and cleave-train training from an .npz, a .npy directory (a
// regression) and a CIFAR-10 directory.
//
// The files are written here: .npy headers and zip archives (stored and
// deflated members, zip64 extra fields) by small writers below, whose
// output the NumPy test shows is what NumPy writes and reads.
//
//===----------------------------------------------------------------------===//

#include "E2ETestUtil.h"

#include "Trainer.h"
#include "data/Cifar.h"
#include "data/Dataset.h"
#include "data/MicroBatcher.h"
#include "data/Npy.h"
#include "data/Zip.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace cleave::e2e {
namespace {

::testing::AssertionResult contains(const std::string &text,
                                    const std::string &part) {
  if (text.find(part) != std::string::npos)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "'" << text << "' does not contain '" << part << "'";
}

//===----------------------------------------------------------------------===//
// Writers
//===----------------------------------------------------------------------===//

template <typename T> std::string raw(const std::vector<T> &values) {
  return std::string(reinterpret_cast<const char *>(values.data()),
                     values.size() * sizeof(T));
}

std::string le(uint64_t v, int bytes) {
  std::string s;
  for (int i = 0; i < bytes; ++i)
    s.push_back(char((v >> (8 * i)) & 0xff));
  return s;
}

/// A .npy file as numpy.save writes it: the header padded with spaces and a
/// newline so that the data starts at a multiple of 64.
std::string npy(const std::string &descr, const std::vector<int64_t> &shape,
                const std::string &data, bool fortran = false,
                int version = 1) {
  std::string tuple = "(";
  for (size_t i = 0; i < shape.size(); ++i)
    tuple += (i ? ", " : "") + std::to_string(shape[i]);
  tuple += shape.size() == 1 ? ",)" : ")";
  std::string header = "{'descr': '" + descr +
                       "', 'fortran_order': " + (fortran ? "True" : "False") +
                       ", 'shape': " + tuple + ", }";
  const size_t prefix = version == 1 ? 10 : 12;
  while ((prefix + header.size() + 1) % 64 != 0)
    header += ' ';
  header += '\n';
  return std::string("\x93NUMPY", 6) + char(version) + char(0) +
         le(header.size(), version == 1 ? 2 : 4) + header + data;
}

std::string f32npy(const std::vector<int64_t> &shape,
                   const std::vector<float> &v) {
  return npy("<f4", shape, raw(v));
}

struct Member {
  std::string name, data;
  bool deflate = false;
  /// Write the sizes and offset as zip64 (0xffffffff and an extra field in
  /// the central directory), as zip tools do for large members.
  bool zip64 = false;
};

std::string deflateRaw(const std::string &in) {
  z_stream zs{};
  EXPECT_EQ(deflateInit2(&zs, 6, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY),
            Z_OK);
  std::string out(deflateBound(&zs, uLong(in.size())), '\0');
  zs.next_in = reinterpret_cast<Bytef *>(const_cast<char *>(in.data()));
  zs.avail_in = uInt(in.size());
  zs.next_out = reinterpret_cast<Bytef *>(out.data());
  zs.avail_out = uInt(out.size());
  EXPECT_EQ(deflate(&zs, Z_FINISH), Z_STREAM_END);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

/// A zip archive of `members`, as Python's zipfile writes it.
std::string zip(const std::vector<Member> &members) {
  std::string body, directory;
  for (const Member &m : members) {
    const std::string data = m.deflate ? deflateRaw(m.data) : m.data;
    const uint32_t crc =
        uint32_t(crc32(0, reinterpret_cast<const Bytef *>(m.data.data()),
                       uInt(m.data.size())));
    const uint16_t method = m.deflate ? 8 : 0;
    const uint64_t offset = body.size();
    body += le(0x04034b50, 4) + le(20, 2) + le(0, 2) + le(method, 2) +
            le(0, 4) + le(crc, 4) + le(data.size(), 4) + le(m.data.size(), 4) +
            le(m.name.size(), 2) + le(0, 2) + m.name + data;
    std::string extra;
    if (m.zip64)
      extra = le(1, 2) + le(24, 2) + le(m.data.size(), 8) + le(data.size(), 8) +
              le(offset, 8);
    const uint64_t sat = 0xffffffffu;
    directory += le(0x02014b50, 4) + le(20, 2) + le(20, 2) + le(0, 2) +
                 le(method, 2) + le(0, 4) + le(crc, 4) +
                 le(m.zip64 ? sat : data.size(), 4) +
                 le(m.zip64 ? sat : m.data.size(), 4) + le(m.name.size(), 2) +
                 le(extra.size(), 2) + le(0, 2) + le(0, 2) + le(0, 2) +
                 le(0, 4) + le(m.zip64 ? sat : offset, 4) + m.name + extra;
  }
  return body + directory + le(0x06054b50, 4) + le(0, 2) + le(0, 2) +
         le(members.size(), 2) + le(members.size(), 2) +
         le(directory.size(), 4) + le(body.size(), 4) + le(0, 2);
}

/// Sample i of a learnable synthetic task with `classes` classes: its class
/// is i % classes, and it lights up a band of rows that depends on the class.
std::vector<uint8_t> bandImages(int64_t count, int64_t rows, int64_t cols,
                                int64_t classes, int64_t channels = 1) {
  std::vector<uint8_t> pixels(size_t(count * channels * rows * cols));
  uint32_t noise = 12345;
  for (int64_t i = 0; i < count; ++i) {
    const int64_t c = i % classes;
    for (int64_t ch = 0; ch < channels; ++ch)
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t k = 0; k < cols; ++k) {
          noise = noise * 1103515245u + 12345u;
          const bool lit = r * classes / rows == c && ch == c % channels;
          pixels[size_t(((i * channels + ch) * rows + r) * cols + k)] =
              uint8_t((lit ? 160 : 0) + (noise >> 16) % 64);
        }
  }
  return pixels;
}

std::vector<int64_t> cyclicLabels(int64_t count, int64_t classes) {
  std::vector<int64_t> labels(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i)
    labels[size_t(i)] = i % classes;
  return labels;
}

/// CIFAR-10 records of `bandImages` (3 channels of 32x32).
std::string cifarBatch(int64_t count, int64_t first = 0) {
  std::vector<uint8_t> pixels = bandImages(first + count, 32, 32, 10, 3);
  std::string out;
  for (int64_t i = first; i < first + count; ++i) {
    out.push_back(char(i % 10));
    out.append(reinterpret_cast<const char *>(pixels.data()) + i * 3072, 3072);
  }
  return out;
}

void writeCifar(const std::string &dir, int64_t perBatch, int64_t test) {
  std::filesystem::create_directories(dir);
  for (int b = 1; b <= 5; ++b)
    writeFile(dir + "/data_batch_" + std::to_string(b) + ".bin",
              cifarBatch(perBatch, (b - 1) * perBatch));
  writeFile(dir + "/test_batch.bin", cifarBatch(test, 7));
}

//===----------------------------------------------------------------------===//
// .npy
//===----------------------------------------------------------------------===//

data::NpyArray parse(const std::string &bytes) {
  data::NpyArray a;
  rt::Status s =
      data::parseNpy("a.npy", reinterpret_cast<const uint8_t *>(bytes.data()),
                     bytes.size(), a);
  EXPECT_TRUE(s.ok()) << s.message();
  return a;
}

std::string npyError(const std::string &bytes) {
  data::NpyArray a;
  rt::Status s =
      data::parseNpy("a.npy", reinterpret_cast<const uint8_t *>(bytes.data()),
                     bytes.size(), a);
  EXPECT_FALSE(s.ok());
  return s.message();
}

TEST(NpyTest, ParsesTypesShapesAndVersions) {
  std::vector<float> values = {1.5f, -2, 3, 4, 5, 6};
  std::string f = f32npy({2, 3}, values);
  data::NpyArray a = parse(f);
  EXPECT_EQ(a.type, data::ElementType::F32);
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a.bytes, 24u);
  EXPECT_EQ((a.data - reinterpret_cast<const uint8_t *>(f.data())) % 64, 0);
  EXPECT_EQ(std::memcmp(a.data, values.data(), 24), 0);

  EXPECT_EQ(parse(npy("|u1", {4}, "abcd")).type, data::ElementType::U8);
  EXPECT_EQ(parse(npy("<i8", {1}, raw(std::vector<int64_t>{7}))).type,
            data::ElementType::I64);
  EXPECT_EQ(parse(npy("<i4", {1}, raw(std::vector<int32_t>{7}))).type,
            data::ElementType::I32);
  EXPECT_EQ(parse(npy("<f4", {2, 3}, raw(values), false, 2)).shape,
            (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(parse(npy("<f4", {2, 3}, raw(values), false, 3)).shape,
            (std::vector<int64_t>{2, 3}));
  EXPECT_TRUE(parse(npy("<f4", {}, raw(std::vector<float>{1}))).shape.empty());
  EXPECT_EQ(parse(npy("<f4", {0, 5}, "")).bytes, 0u);
  // Double quotes, no trailing comma, Python 2 longs.
  std::string header = "{\"descr\": \"<f4\", \"shape\": (2L, 1L), "
                       "\"fortran_order\": False}\n";
  EXPECT_EQ(parse(std::string("\x93NUMPY\x01\x00", 8) + le(header.size(), 2) +
                  header + raw(values).substr(0, 8))
                .shape,
            (std::vector<int64_t>{2, 1}));
}

TEST(NpyTest, RefusesWhatItDoesNotRead) {
  std::string f = f32npy({2, 3}, std::vector<float>(6, 1.0f));
  EXPECT_TRUE(contains(npyError("PK\x03\x04 not npy"),
                       "a.npy: not a .npy file (it does not start with"));
  EXPECT_TRUE(contains(npyError(""), "a.npy: not a .npy file"));
  std::string v4 = f;
  v4[6] = 4;
  EXPECT_TRUE(contains(npyError(v4), ".npy format version 4.0 (expected 1.0"));
  EXPECT_TRUE(contains(npyError(f.substr(0, 9)), "truncated .npy file (9 "
                                                 "bytes, shorter than its "
                                                 "10-byte preamble)"));
  EXPECT_TRUE(contains(npyError(f.substr(0, 100)),
                       "truncated .npy file (100 bytes, shorter than its "
                       "128-byte header)"));
  EXPECT_TRUE(contains(npyError(f.substr(0, f.size() - 1)),
                       "truncated .npy file (float32 [2, 3] needs 24 bytes of "
                       "data, the file has 23)"));
  EXPECT_TRUE(contains(npyError(f + "xy"),
                       "2 unexpected bytes after the data of float32 [2, 3]"));
  EXPECT_TRUE(contains(npyError(npy("<f4", {2, 3}, "", true)),
                       "a.npy: Fortran-order array of shape [2, 3] (expected "
                       "C order"));
  EXPECT_TRUE(
      contains(npyError(npy(">f4", {1}, "abcd")),
               "a.npy: big-endian dtype '>f4' (expected little-endian"));
  EXPECT_TRUE(contains(npyError(npy("<f8", {1}, "abcdefgh")),
                       "a.npy: unsupported dtype '<f8' (expected uint8 '|u1', "
                       "uint16 '<u2', int32 '<i4', int64 '<i8' or float32 "
                       "'<f4')"));
  EXPECT_TRUE(
      contains(npyError(npy("|O", {1}, "abcdefgh")), "unsupported dtype '|O'"));
  EXPECT_TRUE(contains(npyError(npy("<f4", {1 << 30, 1 << 30, 1 << 30}, "")),
                       "describes more than"));

  auto withHeader = [](const std::string &h) {
    return std::string("\x93NUMPY\x01\x00", 8) + le(h.size(), 2) + h;
  };
  EXPECT_TRUE(contains(npyError(withHeader("{'descr': '<f4', 'shape': (1,)}")),
                       "malformed .npy header (missing key 'fortran_order')"));
  EXPECT_TRUE(
      contains(npyError(withHeader("{'descr': '<f4', 'fortran_order': False, "
                                   "'shape': (1,), 'extra': 1}")),
               "malformed .npy header (unexpected key 'extra')"));
  EXPECT_TRUE(contains(
      npyError(withHeader("{'descr': [('a', '<f4')], 'fortran_order': False, "
                          "'shape': (1,)}")),
      "expected a quoted string at offset 10 of the header (the value of "
      "'descr')"));
  EXPECT_TRUE(
      contains(npyError(withHeader("{'descr': '<f4', 'fortran_order': False, "
                                   "'shape': (-1,)}")),
               "expected a non-negative integer dimension"));
  EXPECT_TRUE(contains(npyError(withHeader("'descr'")),
                       "malformed .npy header (expected '{' at its start)"));
  EXPECT_TRUE(
      contains(npyError(withHeader("{'descr': '<f4', 'fortran_order': Maybe}")),
               "expected True or False"));
}

//===----------------------------------------------------------------------===//
// Zip
//===----------------------------------------------------------------------===//

std::vector<data::ZipMember> members(const std::string &bytes,
                                     rt::Status &status) {
  std::vector<data::ZipMember> out;
  status =
      data::parseZip("a.npz", reinterpret_cast<const uint8_t *>(bytes.data()),
                     bytes.size(), out);
  return out;
}

std::string zipError(const std::string &bytes) {
  rt::Status s;
  members(bytes, s);
  EXPECT_FALSE(s.ok());
  return s.message();
}

std::string inflated(const std::string &archive, const data::ZipMember &m,
                     rt::Status &status) {
  std::vector<uint8_t> out;
  status = data::inflateZipMember(
      "a.npz", reinterpret_cast<const uint8_t *>(archive.data()), m, out);
  return std::string(out.begin(), out.end());
}

TEST(ZipTest, ListsStoredDeflatedAndZip64Members) {
  const std::string a = "stored member", b(5000, 'z'), c = "zip64 sizes";
  std::string archive = zip({{"a.npy", a},
                             {"b.npy", b, /*deflate=*/true},
                             {"c.npy", c, false, /*zip64=*/true}});
  archive += ""; // no comment
  rt::Status s;
  std::vector<data::ZipMember> m = members(archive, s);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[0].name, "a.npy");
  EXPECT_EQ(m[0].method, 0);
  EXPECT_EQ(archive.substr(m[0].dataOffset, m[0].size), a);
  EXPECT_EQ(m[1].method, 8);
  EXPECT_EQ(m[1].size, b.size());
  EXPECT_LT(m[1].compressedSize, 100u);
  EXPECT_EQ(inflated(archive, m[1], s), b);
  EXPECT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(m[2].size, c.size());
  EXPECT_EQ(archive.substr(m[2].dataOffset, m[2].size), c);

  // An archive comment after the end record.
  std::string commented = archive;
  commented[commented.size() - 2] = 7;
  commented += "comment";
  EXPECT_EQ(members(commented, s).size(), 3u);
  EXPECT_TRUE(s.ok()) << s.message();
}

TEST(ZipTest, RefusesCorruptArchives) {
  const std::string payload(3000, 'q');
  std::string archive = zip({{"x.npy", payload, true}});
  EXPECT_TRUE(contains(zipError("short"), "a.npz: not a zip archive (5 bytes"));
  EXPECT_TRUE(contains(zipError(std::string(100, 'a')),
                       "a.npz: not a zip archive (no end-of-central-directory "
                       "record"));
  // Truncated: the end record is gone.
  EXPECT_TRUE(contains(zipError(archive.substr(0, archive.size() - 10)),
                       "no end-of-central-directory record"));
  // Cut in the middle, the end record re-attached: the directory points
  // past the data.
  {
    std::string cut =
        archive.substr(0, 40) + archive.substr(archive.size() - 22);
    EXPECT_TRUE(contains(zipError(cut), "a.npz: corrupt zip archive (the "
                                        "central directory"));
  }
  {
    std::string bad = archive;
    const size_t cd = archive.find("PK\x01\x02");
    bad[cd + 1] = 'X';
    EXPECT_TRUE(contains(zipError(bad), "central directory entry 0 is missing "
                                        "or damaged"));
  }
  {
    std::string bad = archive;
    bad[1] = 'X'; // the local header's signature
    EXPECT_TRUE(contains(zipError(bad), "the local header of 'x.npy' is not "
                                        "at offset 0"));
  }
  {
    std::string bad = archive;
    const size_t cd = archive.find("PK\x01\x02");
    bad[cd + 10] = 12; // bzip2
    EXPECT_TRUE(contains(zipError(bad), "a.npz:x.npy: zip compression method "
                                        "12 is not supported"));
    bad[cd + 10] = 8;
    bad[cd + 8] = 1; // encrypted
    EXPECT_TRUE(contains(zipError(bad), "x.npy: encrypted zip members"));
  }
  {
    std::string bad = archive;
    const size_t cd = archive.find("PK\x01\x02");
    bad[cd + 20] = char(0xff); // a compressed size past the directory
    bad[cd + 21] = char(0xff);
    EXPECT_TRUE(contains(zipError(bad), "the data of 'x.npy' ("));
  }
  {
    std::string bad = archive;
    bad[bad.size() - 14] = char(0x7f); // 127 entries in a tiny directory
    bad[bad.size() - 12] = char(0x7f);
    EXPECT_TRUE(contains(zipError(bad), "127 members cannot fit"));
  }

  rt::Status s;
  std::vector<data::ZipMember> m = members(archive, s);
  ASSERT_TRUE(s.ok()) << s.message();
  {
    std::string bad = archive;
    for (size_t i = 0; i < 4; ++i)
      bad[m[0].dataOffset + 2 + i] = char(~bad[m[0].dataOffset + 2 + i]);
    inflated(bad, m[0], s);
    EXPECT_FALSE(s.ok());
    EXPECT_TRUE(contains(s.message(), "a.npz:x.npy: ")) << s.message();
  }
  {
    data::ZipMember wrongCrc = m[0];
    wrongCrc.crc32 ^= 1;
    inflated(archive, wrongCrc, s);
    EXPECT_TRUE(contains(s.message(), "a.npz:x.npy: CRC-32 mismatch"));
  }
  {
    data::ZipMember longer = m[0];
    longer.size += 1;
    inflated(archive, longer, s);
    EXPECT_TRUE(contains(s.message(), "inflates to 3000 bytes, its directory "
                                      "entry says 3001"));
    data::ZipMember shorter = m[0];
    shorter.size -= 1;
    inflated(archive, shorter, s);
    EXPECT_TRUE(contains(s.message(), "inflates to more than the 2999 bytes"));
    data::ZipMember truncated = m[0];
    truncated.compressedSize -= 3;
    inflated(archive, truncated, s);
    EXPECT_TRUE(contains(s.message(), "truncated deflate data"));
    data::ZipMember bomb = m[0];
    bomb.size = uint64_t(1) << 39;
    inflated(archive, bomb, s);
    EXPECT_TRUE(contains(s.message(), "cannot inflate to 549755813888"));
  }
}

//===----------------------------------------------------------------------===//
// NumPy datasets
//===----------------------------------------------------------------------===//

data::Dataset load(const std::string &path, data::Split split,
                   data::DatasetOptions options = {}) {
  data::Dataset d;
  rt::Status s = data::loadDataset(path, split, options, d);
  EXPECT_TRUE(s.ok()) << s.message();
  return d;
}

std::string loadError(const std::string &path,
                      data::Split split = data::Split::Train,
                      data::DatasetOptions options = {}) {
  data::Dataset d;
  rt::Status s = data::loadDataset(path, split, options, d);
  EXPECT_FALSE(s.ok()) << path;
  return s.message();
}

/// The line of /proc/self/maps that maps `address`, or "".
std::string mappingOf(const void *address) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  const uintptr_t a = reinterpret_cast<uintptr_t>(address);
  while (std::getline(maps, line)) {
    uintptr_t begin = 0, end = 0;
    char dash;
    std::istringstream in(line);
    in >> std::hex >> begin >> dash >> end;
    if (a >= begin && a < end)
      return line;
  }
  return "";
}

TEST(NumpyDatasetTest, ReadsTheThreeLayouts) {
  TempDir dir;
  std::vector<uint8_t> pixels = bandImages(6, 4, 5, 3);
  std::vector<float> floats(6 * 20);
  for (size_t i = 0; i < floats.size(); ++i)
    floats[i] = float(i) * 0.5f;
  const std::string xTrain = npy("|u1", {6, 4, 5}, raw(pixels));
  const std::string yTrain = npy("<i8", {6}, raw(cyclicLabels(6, 3)));
  const std::string xTest = f32npy({2, 4, 5}, std::vector<float>(40, 0.25f));
  const std::string yTest = npy("<i4", {2}, raw(std::vector<int32_t>{2, 1}));

  // Keras's layout: one archive holding both splits.
  writeFile(dir / "keras.npz", zip({{"x_train.npy", xTrain},
                                    {"y_train.npy", yTrain},
                                    {"x_test.npy", xTest},
                                    {"y_test.npy", yTest}}));
  data::Dataset train = load(dir / "keras.npz", data::Split::Train);
  EXPECT_EQ(train.format, "npz");
  EXPECT_EQ(train.size(), 6);
  EXPECT_EQ(train.inputs.type, data::ElementType::U8);
  EXPECT_EQ(train.inputs.sampleShape, (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(train.inputs.source, (dir / "keras.npz") + ":x_train.npy");
  EXPECT_EQ(std::memcmp(train.inputs.row(3), pixels.data() + 60, 20), 0);
  EXPECT_TRUE(train.hasClassLabels());
  EXPECT_EQ(train.numClasses, 10);
  data::Dataset test = load(dir / "keras.npz", data::Split::Test);
  EXPECT_EQ(test.inputs.type, data::ElementType::F32);
  EXPECT_EQ(test.targets.type, data::ElementType::I32);
  EXPECT_EQ(test.size(), 2);

  // A directory of train.npz and test.npz, members x and y; compressed.
  std::filesystem::create_directories(dir / "npzdir");
  writeFile(
      dir / "npzdir/train.npz",
      zip({{"x.npy", f32npy({6, 20}, floats), true},
           {"y.npy", npy("|u1", {6}, std::string("\0\1\2\0\1\2", 6)), true}}));
  writeFile(dir / "npzdir/test.npz",
            zip({{"x.npy", xTest.substr(0), false}, {"y.npy", yTest}}));
  data::DataFormat format;
  ASSERT_TRUE(data::detectFormat(dir / "npzdir", format).ok());
  EXPECT_EQ(format, data::DataFormat::NpzDir);
  train = load(dir / "npzdir", data::Split::Train);
  EXPECT_EQ(train.inputs.sampleShape, (std::vector<int64_t>{20}));
  float v;
  std::memcpy(&v, train.inputs.row(5) + 4 * 3, 4);
  EXPECT_EQ(v, floats[5 * 20 + 3]);
  EXPECT_EQ(train.targets.row(4)[0], 1);

  // A directory of .npy files; float targets of any shape; a limit.
  std::filesystem::create_directories(dir / "npydir");
  writeFile(dir / "npydir/x_train.npy", f32npy({6, 20}, floats));
  writeFile(dir / "npydir/y_train.npy",
            f32npy({6, 2, 1}, std::vector<float>(12, 3.0f)));
  writeFile(dir / "npydir/x_test.npy", f32npy({1, 20}, floats));
  writeFile(dir / "npydir/y_test.npy",
            f32npy({1, 2, 1}, std::vector<float>(2, 3.0f)));
  data::DatasetOptions options;
  options.limit = 4;
  train = load(dir / "npydir", data::Split::Train, options);
  EXPECT_EQ(train.format, "npy");
  EXPECT_EQ(train.size(), 4);
  EXPECT_FALSE(train.hasClassLabels());
  EXPECT_EQ(train.numClasses, 0);
  EXPECT_EQ(train.targets.sampleShape, (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(train.targets.source, dir / "npydir/y_train.npy");
}

TEST(NumpyDatasetTest, MapsStoredArraysInsteadOfReadingThem) {
  TempDir dir;
  const int64_t n = 4096; // 4096 x 256 floats: 4 MiB
  std::vector<float> floats(size_t(n) * 256, 0.5f);
  writeFile(dir / "x_train.npy", f32npy({n, 256}, floats));
  writeFile(dir / "y_train.npy", npy("<i8", {n}, raw(cyclicLabels(n, 10))));
  writeFile(dir / "stored.npz",
            zip({{"x_train.npy", f32npy({n, 256}, floats)},
                 {"y_train.npy", npy("<i8", {n}, raw(cyclicLabels(n, 10)))}}));
  writeFile(
      dir / "deflated.npz",
      zip({{"x_train.npy", f32npy({n, 256}, floats), true},
           {"y_train.npy", npy("<i8", {n}, raw(cyclicLabels(n, 10))), true}}));
  // The rows of a .npy file and of a stored .npz member lie in a mapping of
  // the file itself (no copy was made); a deflated member is inflated into
  // anonymous memory.
  data::Dataset npyData = load(dir.path(), data::Split::Train);
  EXPECT_TRUE(
      contains(mappingOf(npyData.inputs.row(n - 1)), dir / "x_train.npy"));
  data::Dataset stored = load(dir / "stored.npz", data::Split::Train);
  EXPECT_TRUE(
      contains(mappingOf(stored.inputs.row(n / 2)), dir / "stored.npz"));
  EXPECT_TRUE(contains(mappingOf(stored.targets.row(0)), dir / "stored.npz"));
  data::Dataset deflated = load(dir / "deflated.npz", data::Split::Train);
  EXPECT_FALSE(
      contains(mappingOf(deflated.inputs.row(0)), dir / "deflated.npz"));
  float v;
  std::memcpy(&v, deflated.inputs.row(n - 1) + 4 * 255, 4);
  EXPECT_EQ(v, 0.5f);
}

TEST(NumpyDatasetTest, ErrorsNameTheFileMemberAndExpectation) {
  TempDir dir;
  const std::string x = f32npy({4, 3}, std::vector<float>(12, 1.0f));
  const std::string y = npy("<i8", {4}, raw(cyclicLabels(4, 2)));
  auto archive = [&](const std::string &name, const std::string &xs,
                     const std::string &ys) {
    writeFile(dir / name, zip({{"x_train.npy", xs}, {"y_train.npy", ys}}));
    return dir / name;
  };
  EXPECT_TRUE(contains(loadError(archive("ok.npz", x, y), data::Split::Test),
                       "ok.npz: no array 'x_test' (expected a member "
                       "x_test.npy; the archive holds x_train.npy, "
                       "y_train.npy)"));
  EXPECT_TRUE(contains(
      loadError(
          archive("i64x.npz", npy("<i8", {4}, raw(cyclicLabels(4, 2))), y)),
      "i64x.npz:x_train.npy: int64 inputs of shape [4] (expected float32, or "
      "uint8 pixels"));
  EXPECT_TRUE(
      contains(loadError(archive("f64y.npz", x,
                                 npy("<f8", {4}, raw(std::vector<double>(4))))),
               "f64y.npz:y_train.npy: unsupported dtype '<f8'"));
  EXPECT_TRUE(contains(
      loadError(
          archive("count.npz", x, npy("<i8", {3}, raw(cyclicLabels(3, 2))))),
      "count.npz:y_train.npy: 3 labels for the 4 samples of " +
          (dir / "count.npz") + ":x_train.npy (expected one per sample)"));
  EXPECT_TRUE(contains(
      loadError(
          archive("range.npz", x,
                  npy("<i8", {4}, raw(std::vector<int64_t>{0, 1, -1, 2})))),
      "range.npz:y_train.npy: label -1 of sample 2 is out of range (expected "
      "0 to 9)"));
  data::DatasetOptions two;
  two.numClasses = 2;
  EXPECT_TRUE(contains(
      loadError(archive("bound.npz", x,
                        npy("<i8", {4}, raw(std::vector<int64_t>{0, 1, 1, 2}))),
                data::Split::Train, two),
      "label 2 of sample 3 is out of range (expected 0 to 1)"));
  EXPECT_TRUE(contains(
      loadError(
          archive("wide.npz", x, npy("<i8", {4, 2}, raw(cyclicLabels(8, 2))))),
      "wide.npz:y_train.npy: int64 labels of shape [4, 2] (expected one class "
      "index per sample, shape [N])"));
  EXPECT_TRUE(contains(
      loadError(archive("scalar.npz", f32npy({}, {1.0f}), y)),
      "scalar.npz:x_train.npy: a float32 scalar (expected an array with one "
      "row per sample)"));
  EXPECT_TRUE(contains(
      loadError(archive("empty.npz", f32npy({0, 3}, {}), npy("<i8", {0}, ""))),
      "empty.npz:x_train.npy: no samples"));
  EXPECT_TRUE(contains(
      loadError(archive("fortran.npz",
                        npy("<f4", {4, 3}, raw(std::vector<float>(12)), true),
                        y)),
      "fortran.npz:x_train.npy: Fortran-order array of shape [4, 3]"));
  {
    std::string truncated = zip({{"x_train.npy", x}, {"y_train.npy", y}});
    writeFile(dir / "truncated.npz", truncated.substr(0, truncated.size() / 2));
    EXPECT_TRUE(contains(loadError(dir / "truncated.npz"),
                         "truncated.npz: not a zip archive (no "
                         "end-of-central-directory record"));
  }
  // A member whose .npy data is cut short inside a well-formed archive.
  EXPECT_TRUE(
      contains(loadError(archive("short.npz", x.substr(0, x.size() - 4), y)),
               "short.npz:x_train.npy: truncated .npy file (float32 "
               "[4, 3] needs 48 bytes of data, the file has 44)"));

  std::filesystem::create_directories(dir / "npy");
  writeFile(dir / "npy/x_train.npy", x);
  EXPECT_TRUE(contains(loadError(dir / "npy"),
                       "npy/y_train.npy: cannot open (No such file or "
                       "directory)"));
  writeFile(dir / "npy/y_train.npy", "not numpy");
  EXPECT_TRUE(
      contains(loadError(dir / "npy"), "npy/y_train.npy: not a .npy file"));
}

TEST(DatasetTest, DetectsFormatsAndExplainsWhatItFindsNot) {
  TempDir dir;
  EXPECT_TRUE(contains(loadError(dir / "absent.npz"),
                       "absent.npz: cannot open the dataset (No such file"));
  writeFile(dir / "data.txt", "hello");
  EXPECT_TRUE(contains(loadError(dir / "data.txt"),
                       "data.txt: not a dataset (expected an .npz file"));
  EXPECT_TRUE(contains(loadError(dir.path()),
                       ": no dataset found in the directory (expected an .npz "
                       "file holding x_train, y_train, x_test, y_test, or a "
                       "directory holding train.npz"));
  const struct {
    const char *file;
    data::DataFormat format;
  } cases[] = {{"train-images-idx3-ubyte.gz", data::DataFormat::Idx},
               {"x_train.npy", data::DataFormat::NpyDir},
               {"train.npz", data::DataFormat::NpzDir},
               {"data_batch_1.bin", data::DataFormat::Cifar10}};
  // Each file added takes precedence over those before it.
  for (const auto &c : cases) {
    writeFile(dir / c.file, "");
    data::DataFormat format;
    ASSERT_TRUE(data::detectFormat(dir.path(), format).ok());
    EXPECT_EQ(format, c.format) << c.file;
  }
  data::DataFormat format;
  writeFile(dir / "a.npz", "");
  ASSERT_TRUE(data::detectFormat(dir / "a.npz", format).ok());
  EXPECT_EQ(format, data::DataFormat::NpzFile);
}

//===----------------------------------------------------------------------===//
// CIFAR-10
//===----------------------------------------------------------------------===//

TEST(CifarTest, LoadsBothSplitsChannelsFirst) {
  TempDir dir;
  writeCifar(dir.path(), 3, 4);
  data::Dataset train = load(dir.path(), data::Split::Train);
  EXPECT_EQ(train.format, "cifar-10");
  EXPECT_EQ(train.size(), 15);
  EXPECT_EQ(train.inputs.sampleShape, (std::vector<int64_t>{3, 32, 32}));
  EXPECT_EQ(train.numClasses, 10);
  // Record 7 is the second of data_batch_3.bin: label 7, its image as
  // written.
  const std::string batch3 = readFile(dir / "data_batch_3.bin");
  EXPECT_EQ(train.targets.row(7)[0], 7);
  EXPECT_EQ(std::memcmp(train.inputs.row(7), batch3.data() + 3073 + 1, 3072),
            0);
  EXPECT_TRUE(contains(train.inputs.source, "data_batch_1.bin .. "));
  data::Dataset test = load(dir.path(), data::Split::Test);
  EXPECT_EQ(test.size(), 4);
  EXPECT_EQ(test.targets.row(0)[0], 7);

  data::DatasetOptions options;
  options.limit = 5;
  EXPECT_EQ(load(dir.path(), data::Split::Train, options).size(), 5);
}

TEST(CifarTest, RefusesBadBatches) {
  TempDir dir;
  writeCifar(dir.path(), 2, 2);
  std::string batch = cifarBatch(2);
  writeFile(dir / "data_batch_2.bin", batch.substr(0, batch.size() - 1));
  EXPECT_TRUE(contains(loadError(dir.path()),
                       "data_batch_2.bin: 6145 bytes is not a whole number of "
                       "CIFAR-10 records (expected a multiple of 3073"));
  writeFile(dir / "data_batch_2.bin", "");
  EXPECT_TRUE(contains(loadError(dir.path()),
                       "data_batch_2.bin: 0 bytes is not a whole number"));
  batch[3073] = 10;
  writeFile(dir / "data_batch_2.bin", batch);
  EXPECT_TRUE(contains(loadError(dir.path()),
                       "data_batch_2.bin: label 10 of record 1 is out of range "
                       "(expected 0 to 9; CIFAR-100's"));
  std::filesystem::remove(dir / "data_batch_2.bin");
  EXPECT_TRUE(contains(loadError(dir.path()),
                       "data_batch_2.bin: cannot open (No such file or "
                       "directory) (the CIFAR-10 train split is "
                       "data_batch_1.bin .. data_batch_5.bin)"));
  std::filesystem::remove(dir / "test_batch.bin");
  EXPECT_TRUE(contains(loadError(dir.path(), data::Split::Test),
                       "test_batch.bin: cannot open"));
}

//===----------------------------------------------------------------------===//
// Standardisation and micro-batches
//===----------------------------------------------------------------------===//

TEST(NormalizationTest, StandardisesEachChannelOfCifar) {
  TempDir dir;
  writeCifar(dir.path(), 4, 2);
  data::Dataset train = load(dir.path(), data::Split::Train);
  data::Normalization norm;
  ASSERT_TRUE(data::standardization(train, norm).ok());
  ASSERT_EQ(norm.mean.size(), 3u);
  for (int c = 0; c < 3; ++c) {
    double sum = 0, squares = 0, n = 0;
    for (int64_t i = 0; i < train.size(); ++i)
      for (int p = 0; p < 1024; ++p) {
        double v = train.inputs.row(i)[c * 1024 + p] / 255.0;
        sum += v;
        squares += v * v;
        n += 1;
      }
    const double mean = sum / n;
    EXPECT_NEAR(norm.mean[c], mean, 1e-6) << c;
    EXPECT_NEAR(norm.std[c], std::sqrt(squares / n - mean * mean), 1e-6) << c;
  }
  // The band of class c lies in channel c % 3: the channels differ.
  EXPECT_NE(norm.mean[0], norm.mean[1]);

  std::unique_ptr<data::MicroBatcher> b;
  ASSERT_TRUE(data::MicroBatcher::create(train, 4, b, norm).ok());
  const uint32_t order[] = {11, 2};
  ASSERT_TRUE(b->gather(order, 2).ok());
  EXPECT_EQ(b->inputBytes(), 2u * 3072u * sizeof(float));
  EXPECT_EQ(b->targetBytes(), 2u * sizeof(int64_t));
  for (int c = 0; c < 3; ++c) {
    const int p = c * 1024 + 77;
    EXPECT_EQ(b->inputs()[3072 + p],
              (data::pixelToFloat(train.inputs.row(2)[p]) - norm.mean[c]) /
                  norm.std[c]);
  }
  EXPECT_EQ(b->labels()[0], 1);
  EXPECT_EQ(b->labels()[1], 2);
  // A normalisation of the wrong number of channels is refused.
  data::Normalization one;
  one.mean = {0.5f};
  one.std = {0.5f};
  EXPECT_FALSE(data::MicroBatcher::create(train, 4, b, one).ok());
}

TEST(NormalizationTest, FloatInputsAndTargets) {
  TempDir dir;
  // Float inputs far from 0 (a mean of 1000, a std of 0.5): the shifted
  // sums keep the variance accurate.
  std::vector<float> x(8 * 3);
  std::vector<float> y(8 * 2);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = 1000.0f + ((i % 2) ? 0.5f : -0.5f);
  for (size_t i = 0; i < y.size(); ++i)
    y[i] = float(i);
  writeFile(dir / "x_train.npy", f32npy({8, 3}, x));
  writeFile(dir / "y_train.npy", f32npy({8, 2}, y));
  data::Dataset train = load(dir.path(), data::Split::Train);
  data::Normalization norm;
  ASSERT_TRUE(data::standardization(train, norm).ok());
  ASSERT_EQ(norm.mean.size(), 1u);
  EXPECT_FLOAT_EQ(norm.mean[0], 1000.0f);
  EXPECT_FLOAT_EQ(norm.std[0], 0.5f);

  std::unique_ptr<data::MicroBatcher> b;
  ASSERT_TRUE(data::MicroBatcher::create(train, 3, b, norm).ok());
  ASSERT_TRUE(b->gatherRange(5, 3).ok());
  EXPECT_EQ(b->inputs()[0], (x[15] - norm.mean[0]) / norm.std[0]);
  EXPECT_EQ(b->targetBytes(), 3u * 2u * sizeof(float));
  const float *targets = static_cast<const float *>(b->targets());
  EXPECT_EQ(targets[0], 10.0f);
  EXPECT_EQ(targets[5], 15.0f);
  // Without normalisation float inputs are fed as they are.
  ASSERT_TRUE(data::MicroBatcher::create(train, 3, b).ok());
  ASSERT_TRUE(b->gatherRange(0, 1).ok());
  EXPECT_EQ(b->inputs()[1], x[1]);

  // Non-finite values are refused when the split is loaded, whatever the
  // normalisation (cleave-train --normalize=none feeds floats as they are,
  // and a NaN fed to a kernel that drops it would train silently): inputs
  // and regression targets, NaN and infinities; a --limit-train that leaves
  // the bad sample out loads.
  x[7] = std::nanf("");
  writeFile(dir / "x_train.npy", f32npy({8, 3}, x));
  EXPECT_TRUE(contains(loadError(dir.path()),
                       "x_train.npy: input value 1 of sample 2 is nan "
                       "(expected finite values)"));
  data::DatasetOptions firstTwo;
  firstTwo.limit = 2;
  EXPECT_EQ(load(dir.path(), data::Split::Train, firstTwo).size(), 2);
  x[7] = -INFINITY;
  writeFile(dir / "x_train.npy", f32npy({8, 3}, x));
  EXPECT_TRUE(contains(loadError(dir.path()),
                       "x_train.npy: input value 1 of sample 2 is -inf"));
  x[7] = 1000.0f;
  writeFile(dir / "x_train.npy", f32npy({8, 3}, x));
  y[11] = INFINITY;
  writeFile(dir / "y_train.npy", f32npy({8, 2}, y));
  EXPECT_TRUE(contains(loadError(dir.path()),
                       "y_train.npy: target value 1 of sample 5 is inf "
                       "(expected finite values)"));
}

//===----------------------------------------------------------------------===//
// Files written by NumPy
//===----------------------------------------------------------------------===//

/// Runs `script` with /usr/bin/python3; skips the test if NumPy is missing,
/// or fails it under CLEAVE_REQUIRE_TORCH=1 (the setup installs NumPy with
/// torch, so a missing one there is a broken setup).
bool runNumpy(const TempDir &dir, const std::string &script) {
  ProcessResult probe =
      run({"/usr/bin/python3", "-c", "import numpy"}, dir, {}, 60);
  if (!probe.exited || probe.exitCode != 0) {
    const char *require = std::getenv("CLEAVE_REQUIRE_TORCH");
    if (require && std::string(require) == "1")
      ADD_FAILURE() << "numpy cannot be imported: " << probe.describe();
    return false;
  }
  ProcessResult r = run({"/usr/bin/python3", "-c", script}, dir, {}, 120);
  EXPECT_TRUE(r.exited && r.exitCode == 0) << r.describe();
  return r.exited && r.exitCode == 0;
}

TEST(NumpyCompatibilityTest, ReadsWhatNumpyWrites) {
  TempDir dir;
  const std::string script =
      "import numpy as np, os\n"
      "os.chdir('" +
      dir.path() +
      "')\n"
      "x = (np.arange(5 * 16) % 251).astype(np.uint8).reshape(5, 4, 4)\n"
      "y = np.arange(5, dtype=np.int64) % 3\n"
      "xt = np.linspace(-1, 1, 2 * 16, dtype=np.float32).reshape(2, 4, 4)\n"
      "yt = np.array([2, 0], dtype=np.int64)\n"
      "np.savez('keras.npz', x_train=x, y_train=y, x_test=xt, y_test=yt)\n"
      "np.savez_compressed('compressed.npz', x_train=x, y_train=y,\n"
      "                    x_test=xt, y_test=yt)\n"
      "os.mkdir('npy')\n"
      "for name, a in [('x_train', x), ('y_train', y), ('x_test', xt),\n"
      "                ('y_test', yt)]:\n"
      "    np.save('npy/' + name + '.npy', a)\n"
      "np.save('fortran.npy', np.asfortranarray(xt[0]))\n"
      "np.save('big.npy', xt.astype('>f4'))\n"
      "np.save('f64.npy', xt.astype(np.float64))\n";
  if (!runNumpy(dir, script))
    GTEST_SKIP() << "numpy is not installed";
  std::vector<uint8_t> x(5 * 16);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = uint8_t(i % 251);
  for (const std::string &path :
       {dir / "keras.npz", dir / "compressed.npz", dir / "npy"}) {
    data::Dataset train = load(path, data::Split::Train);
    ASSERT_EQ(train.size(), 5) << path;
    EXPECT_EQ(train.inputs.sampleShape, (std::vector<int64_t>{4, 4}));
    EXPECT_EQ(std::memcmp(train.inputs.data, x.data(), x.size()), 0) << path;
    EXPECT_EQ(train.targets.type, data::ElementType::I64);
    int64_t label;
    std::memcpy(&label, train.targets.row(4), 8);
    EXPECT_EQ(label, 1) << path;
    data::Dataset test = load(path, data::Split::Test);
    ASSERT_EQ(test.size(), 2) << path;
    float first, last;
    std::memcpy(&first, test.inputs.row(0), 4);
    std::memcpy(&last, test.inputs.row(1) + 4 * 15, 4);
    EXPECT_EQ(first, -1.0f) << path;
    EXPECT_EQ(last, 1.0f) << path;
  }
  auto npyError = [&](const std::string &name) {
    std::shared_ptr<const void> keep;
    std::string bytes = readFile(dir / name);
    data::NpyArray a;
    return data::parseNpy(name, reinterpret_cast<const uint8_t *>(bytes.data()),
                          bytes.size(), a)
        .message();
  };
  EXPECT_TRUE(contains(npyError("fortran.npy"), "Fortran-order array"));
  EXPECT_TRUE(contains(npyError("big.npy"), "big-endian dtype '>f4'"));
  EXPECT_TRUE(contains(npyError("f64.npy"), "unsupported dtype '<f8'"));
}

//===----------------------------------------------------------------------===//
// Token datasets
//===----------------------------------------------------------------------===//

/// Byte-level sequences of `t` tokens that walk the 8 letters a..h (the next
/// token a function of the current one): ids x [n, t] and next-token labels
/// y [n, t], the last `padded` labels of every third sequence the ignore
/// index (a padded tail).
struct Sequences {
  std::vector<int64_t> x, y;
};
Sequences letterWalks(int64_t n, int64_t t, int64_t padded = 0) {
  Sequences s;
  for (int64_t r = 0; r < n; ++r)
    for (int64_t i = 0; i < t; ++i) {
      const int64_t letter = (r * 5 + i) % 8;
      s.x.push_back('a' + letter);
      const bool pad = r % 3 == 0 && i >= t - padded;
      s.y.push_back(pad ? -100 : 'a' + (letter + 1) % 8);
    }
  return s;
}

data::DatasetOptions tokenOptions(int64_t t = 8, int64_t idBound = 256,
                                  int64_t vocabulary = 256) {
  data::DatasetOptions o;
  o.numClasses = vocabulary;
  o.tokens = data::TokenOptions{t, idBound, -100};
  return o;
}

std::string tokenNpz(const TempDir &dir, const std::string &name,
                     const std::string &x, const std::string &y) {
  writeFile(dir / name, zip({{"x_train.npy", x}, {"y_train.npy", y}}));
  return dir / name;
}

TEST(TokenDatasetTest, LoadsIdsAndLabelsOfAnyIntegerType) {
  TempDir dir;
  const Sequences s = letterWalks(5, 8, 3);
  const std::string y = npy("<i8", {5, 8}, raw(s.y));
  std::vector<int32_t> x32(s.x.begin(), s.x.end());
  std::vector<uint16_t> x16(s.x.begin(), s.x.end());
  std::vector<uint8_t> x8(s.x.begin(), s.x.end());
  for (const std::string &x :
       {npy("<i8", {5, 8}, raw(s.x)), npy("<i4", {5, 8}, raw(x32)),
        npy("<u2", {5, 8}, raw(x16)), npy("|u1", {5, 8}, raw(x8))}) {
    const std::string path = tokenNpz(dir, "tokens.npz", x, y);
    data::Dataset d = load(path, data::Split::Train, tokenOptions());
    EXPECT_TRUE(d.tokens);
    EXPECT_FALSE(d.hasClassLabels());
    EXPECT_EQ(d.numClasses, 256);
    EXPECT_EQ(d.ignoreIndex, -100);
    EXPECT_EQ(d.size(), 5);
    // Ids and labels become i64 [k, T], neither converted nor standardised.
    std::unique_ptr<data::MicroBatcher> b;
    ASSERT_TRUE(data::MicroBatcher::create(d, 4, b).ok());
    const uint32_t rows[] = {3, 0};
    ASSERT_TRUE(b->gather(rows, 2).ok());
    EXPECT_EQ(b->inputBytes(), 2u * 8 * sizeof(int64_t));
    EXPECT_EQ(b->targetBytes(), 2u * 8 * sizeof(int64_t));
    for (int64_t r = 0; r < 2; ++r)
      for (int64_t i = 0; i < 8; ++i) {
        EXPECT_EQ(b->tokenIds()[r * 8 + i], s.x[size_t(rows[r] * 8 + i)]);
        EXPECT_EQ(b->labels()[r * 8 + i], s.y[size_t(rows[r] * 8 + i)]);
      }
    // The padded tail of sequence 0 keeps its ignore index.
    EXPECT_EQ(b->labels()[8 + 7], -100);
    // Token ids index an embedding: they are never standardised.
    data::Normalization n;
    EXPECT_TRUE(contains(data::standardization(d, n).message(),
                         "token ids are not standardised"));
    EXPECT_FALSE(data::MicroBatcher::create(d, 4, b, {{0.5f}, {2.0f}}).ok());
  }
  // --limit-train applies to sequences.
  data::DatasetOptions limited = tokenOptions();
  limited.limit = 2;
  EXPECT_EQ(load(tokenNpz(dir, "tokens.npz", npy("<i8", {5, 8}, raw(s.x)), y),
                 data::Split::Train, limited)
                .size(),
            2);
}

TEST(TokenDatasetTest, SequenceClassifiersTakeOneLabelPerSequence) {
  TempDir dir;
  const Sequences s = letterWalks(5, 8);
  const std::vector<int64_t> classes = {2, 0, 1, 1, 0};
  data::DatasetOptions options = tokenOptions(8, 256, 3);
  options.tokens->labelPerToken = false;
  std::vector<int32_t> labels32(classes.begin(), classes.end());
  data::Dataset d =
      load(tokenNpz(dir, "seq.npz", npy("<i8", {5, 8}, raw(s.x)),
                    npy("<i4", {5}, raw(labels32))),
           data::Split::Train, options);
  EXPECT_TRUE(d.tokens);
  EXPECT_FALSE(d.labelPerToken);
  EXPECT_TRUE(d.hasClassLabels());
  EXPECT_EQ(d.numClasses, 3);
  // Ids i64 [k, T], labels i64 [k].
  std::unique_ptr<data::MicroBatcher> b;
  ASSERT_TRUE(data::MicroBatcher::create(d, 4, b).ok());
  const uint32_t rows[] = {4, 0, 2};
  ASSERT_TRUE(b->gather(rows, 3).ok());
  EXPECT_EQ(b->inputBytes(), 3u * 8 * sizeof(int64_t));
  EXPECT_EQ(b->targetBytes(), 3u * sizeof(int64_t));
  for (int64_t r = 0; r < 3; ++r) {
    EXPECT_EQ(b->labels()[r], classes[rows[r]]);
    for (int64_t i = 0; i < 8; ++i)
      EXPECT_EQ(b->tokenIds()[r * 8 + i], s.x[size_t(rows[r] * 8 + i)]);
  }

  auto error = [&](const std::string &name, const std::string &ys) {
    return loadError(tokenNpz(dir, name, npy("<i8", {5, 8}, raw(s.x)), ys),
                     data::Split::Train, options);
  };
  EXPECT_TRUE(contains(
      error("per-token.npz", npy("<i8", {5, 8}, raw(s.y))),
      "per-token.npz:y_train.npy: int64 labels of shape [5, 8] (expected one "
      "integer class label per sequence of " +
          (dir / "per-token.npz") + ":x_train.npy, shape [5])"));
  std::vector<int64_t> bad = classes;
  bad[3] = 3;
  EXPECT_TRUE(contains(error("class.npz", npy("<i8", {5}, raw(bad))),
                       "class.npz:y_train.npy: label 3 of sequence 3 is out "
                       "of range (expected 0 to 2)"));
}

TEST(TokenDatasetTest, ErrorsNameTheFileAndWhatTheModelTakes) {
  TempDir dir;
  const Sequences s = letterWalks(4, 8);
  const std::string x = npy("<i8", {4, 8}, raw(s.x));
  const std::string y = npy("<i8", {4, 8}, raw(s.y));
  auto error = [&](const std::string &name, const std::string &xs,
                   const std::string &ys,
                   data::DatasetOptions options = tokenOptions()) {
    return loadError(tokenNpz(dir, name, xs, ys), data::Split::Train, options);
  };
  EXPECT_TRUE(contains(
      error("float.npz", f32npy({4, 8}, std::vector<float>(32)), y),
      "float.npz:x_train.npy: float32 inputs of shape [4, 8] (expected token "
      "ids of shape [N, 8], int64, int32, uint16 or uint8)"));
  EXPECT_TRUE(contains(
      error("long.npz", npy("<i8", {2, 16}, raw(s.x)),
            npy("<i8", {2, 16}, raw(s.y))),
      "long.npz:x_train.npy: sequences of 16 tokens, shape [2, 16] (expected "
      "[N, 8]: the model's sequence length is 8)"));
  EXPECT_TRUE(contains(
      error("shapes.npz", x,
            npy("<i8", {4, 7}, raw(std::vector<int64_t>(28, 97)))),
      "shapes.npz:y_train.npy: int64 labels of shape [4, 7] (expected one "
      "integer label per token of " +
          (dir / "shapes.npz") + ":x_train.npy, shape [4, 8])"));
  EXPECT_TRUE(
      contains(error("floaty.npz", x, f32npy({4, 8}, std::vector<float>(32))),
               "floaty.npz:y_train.npy: float32 labels of shape [4, 8]"));
  EXPECT_TRUE(
      contains(error("count.npz", x,
                     npy("<i8", {3, 8}, raw(std::vector<int64_t>(24, 97)))),
               "count.npz:y_train.npy: 3 labels for the 4 samples of"));
  std::vector<int64_t> bad = s.x;
  bad[8 + 2] = 128;
  EXPECT_TRUE(contains(
      error("id.npz", npy("<i8", {4, 8}, raw(bad)), y, tokenOptions(8, 128)),
      "id.npz:x_train.npy: token id 128 of sequence 1, position 2 is out of "
      "range (expected 0 to 127: the model's embedding has 128 rows)"));
  bad[8 + 2] = -1;
  EXPECT_TRUE(contains(
      error("negative.npz", npy("<i8", {4, 8}, raw(bad)), y,
            tokenOptions(8, 0, 256)),
      "token id -1 of sequence 1, position 2 is out of range (expected a "
      "non-negative id)"));
  std::vector<int64_t> labels = s.y;
  labels[3 * 8 + 5] = 300;
  EXPECT_TRUE(contains(
      error("label.npz", x, npy("<i8", {4, 8}, raw(labels))),
      "label.npz:y_train.npy: label 300 of sequence 3, position 5 is out of "
      "range (expected 0 to 255 or the ignore index -100)"));
  EXPECT_TRUE(
      contains(error("ignored.npz", x,
                     npy("<i8", {4, 8}, raw(std::vector<int64_t>(32, -100)))),
               "ignored.npz:y_train.npy: every label is the ignore index -100 "
               "(expected at least one token to predict)"));
  // Of the sequences kept: a limit that keeps only padding is refused too.
  std::vector<int64_t> tail = s.y;
  std::fill(tail.begin(), tail.begin() + 16, -100);
  data::DatasetOptions limited = tokenOptions();
  limited.limit = 2;
  EXPECT_TRUE(contains(
      error("limited.npz", x, npy("<i8", {4, 8}, raw(tail)), limited),
      "limited.npz:y_train.npy: every label of the first 2 sequences is the "
      "ignore index -100"));
  limited.limit = 3;
  EXPECT_EQ(load(tokenNpz(dir, "limited.npz", x, npy("<i8", {4, 8}, raw(tail))),
                 data::Split::Train, limited)
                .size(),
            3);
  // Image datasets hold no token sequences; without the token options,
  // integer inputs are refused as before.
  writeCifar(dir / "cifar", 4, 4);
  EXPECT_TRUE(contains(
      loadError(dir / "cifar", data::Split::Train, tokenOptions()),
      "a cifar-10 dataset of images (expected token sequences: an .npz or "
      ".npy dataset whose x and y are integer [N, 8])"));
  EXPECT_TRUE(contains(error("plain.npz", x, y, data::DatasetOptions{}),
                       "int64 inputs of shape [4, 8] (expected float32, or "
                       "uint8 pixels that become p / 255; integer token ids "
                       "need a model that takes them: i64 [B, T] ids)"));
}

//===----------------------------------------------------------------------===//
// cleave-train
//===----------------------------------------------------------------------===//

/// Trains `artifact` on `data` for `epochs` epochs; the epoch lines go to
/// `out` if given.
train::TrainSummary trainOn(const std::string &artifact,
                            const std::string &data, int64_t epochs, double lr,
                            std::string *out = nullptr) {
  train::TrainOptions options;
  options.artifact = artifactPath(artifact);
  options.dataDir = data;
  options.epochs = epochs;
  options.lr = lr;
  options.threads = 1;
  options.quiet = true;
  options.progress = train::ProgressMode::None;
  std::FILE *file = std::tmpfile();
  train::TrainSummary summary = train::train(options, file, stderr);
  if (out) {
    std::rewind(file);
    char buffer[4096];
    size_t n;
    while ((n = std::fread(buffer, 1, sizeof(buffer), file)) > 0)
      out->append(buffer, n);
  }
  std::fclose(file);
  return summary;
}

std::string trainError(const std::string &artifact, const std::string &data) {
  try {
    trainOn(artifact, data, 1, 0.01);
  } catch (const std::exception &e) {
    return e.what();
  }
  ADD_FAILURE() << "training " << artifact << " on " << data << " succeeded";
  return "";
}

TEST(TrainOnNewFormatsTest, MlpFromAnNpzArchive) {
  TempDir dir;
  // Float inputs [N, 1, 28, 28] in train.npz/test.npz (deflated), int64
  // labels; a band of rows per class makes the task learnable.
  auto write = [&](const std::string &name, int64_t n) {
    std::vector<uint8_t> pixels = bandImages(n, 28, 28, 10);
    std::vector<float> x(pixels.size());
    for (size_t i = 0; i < x.size(); ++i)
      x[i] = float(pixels[i]) / 255.0f;
    writeFile(
        dir / name,
        zip({{"x.npy", f32npy({n, 1, 28, 28}, x), true},
             {"y.npy", npy("<i8", {n}, raw(cyclicLabels(n, 10))), true}}));
  };
  write("train.npz", 320);
  write("test.npz", 64);
  std::string out;
  train::TrainSummary s = trainOn("mlp_b32_n2_sgd", dir.path(), 3, 0.05, &out);
  std::printf("%s", out.c_str());
  ASSERT_EQ(s.epochs.size(), 3u);
  EXPECT_LT(s.epochs[2].trainLoss, 0.5 * s.epochs[0].trainLoss);
  EXPECT_GE(s.epochs[2].testAccuracy, 0.9);
}

TEST(TrainOnNewFormatsTest, CnnFromCifar10Batches) {
  TempDir dir;
  writeCifar(dir.path(), 40, 40);
  std::string out;
  train::TrainSummary s =
      trainOn("cifar_cnn_b8_n2_sgd", dir.path(), 5, 0.05, &out);
  std::printf("%s", out.c_str());
  ASSERT_EQ(s.epochs.size(), 5u);
  EXPECT_LT(s.epochs[4].trainLoss, 0.5 * s.epochs[0].trainLoss);
  EXPECT_GE(s.epochs[4].testAccuracy, 0.8);
  EXPECT_TRUE(contains(out, "epoch 5/5: loss ")) << out;
  EXPECT_TRUE(contains(out, "test accuracy ")) << out;
}

TEST(TrainOnNewFormatsTest, RegressionOnFloatTargets) {
  TempDir dir;
  // y = A x for a fixed A (2x8), x uniform in [-1, 1].
  auto write = [&](const std::string &split, int64_t n, uint32_t seed) {
    std::vector<float> x(size_t(n) * 8), y(size_t(n) * 2);
    for (float &v : x) {
      seed = seed * 1664525u + 1013904223u;
      v = float(seed >> 8) / float(1 << 24) * 2.0f - 1.0f;
    }
    for (int64_t i = 0; i < n; ++i)
      for (int t = 0; t < 2; ++t) {
        float sum = 0;
        for (int k = 0; k < 8; ++k)
          sum += x[size_t(i * 8 + k)] * float((k + t) % 3) * 0.5f;
        y[size_t(i * 2 + t)] = sum;
      }
    writeFile(dir / ("x_" + split + ".npy"), f32npy({n, 8}, x));
    writeFile(dir / ("y_" + split + ".npy"), f32npy({n, 2}, y));
  };
  write("train", 512, 1);
  write("test", 128, 2);
  std::string out;
  train::TrainSummary s =
      trainOn("regression_b16_n1_sgd", dir.path(), 5, 0.05, &out);
  std::printf("%s", out.c_str());
  ASSERT_EQ(s.epochs.size(), 5u);
  EXPECT_LT(s.epochs[4].trainLoss, 0.25 * s.epochs[0].trainLoss);
  EXPECT_LT(s.epochs[4].testLoss, s.epochs[4].trainLoss * 2);
  EXPECT_TRUE(std::isnan(s.epochs[4].testAccuracy));
  EXPECT_TRUE(contains(out, "epoch 5/5: loss ")) << out;
  EXPECT_TRUE(contains(out, ", test loss ")) << out;
  EXPECT_FALSE(contains(out, "accuracy")) << out;
}

TEST(TrainOnNewFormatsTest, RefusesDataTheModelDoesNotTake) {
  TempDir dir;
  auto archive = [&](const std::string &name, const std::string &x,
                     const std::string &y) {
    writeFile(dir / name, zip({{"x_train.npy", x},
                               {"y_train.npy", y},
                               {"x_test.npy", x},
                               {"y_test.npy", y}}));
    return dir / name;
  };
  const std::string labels = npy("<i8", {4}, raw(cyclicLabels(4, 10)));
  EXPECT_TRUE(contains(
      trainError("mlp_b32_n2_sgd",
                 archive("size.npz",
                         npy("|u1", {4, 32, 32}, std::string(4096, '\0')),
                         labels)),
      "mlp_b32_n2_sgd.cleave: input 'image' takes samples of [1, 28, 28], the "
      "data has [32, 32] (" +
          (dir / "size.npz") + ":x_train.npy)"));
  // [784] feeds [1, 28, 28] (flat data), [28, 28] too (a unit dimension).
  EXPECT_EQ(
      trainOn("mlp_b32_n2_sgd",
              archive("flat.npz",
                      npy("|u1", {4, 784}, std::string(4 * 784, '\0')), labels),
              1, 0.01)
          .epochs.size(),
      1u);
  EXPECT_TRUE(contains(
      trainError(
          "cifar_cnn_b8_n2_sgd",
          archive("nhwc.npz",
                  npy("|u1", {4, 32, 32, 3}, std::string(4 * 3072, '\0')),
                  labels)),
      "takes samples of [3, 32, 32], the data has [32, 32, 3] (" +
          (dir / "nhwc.npz") +
          ":x_train.npy); channels-last data must be transposed to "
          "channels-first"));
  EXPECT_TRUE(contains(
      trainError("mlp_b32_n2_sgd",
                 archive("floaty.npz",
                         npy("|u1", {4, 784}, std::string(4 * 784, '\0')),
                         f32npy({4}, std::vector<float>(4)))),
      "mlp_b32_n2_sgd.cleave is a classifier (i64 labels), the data has "
      "float32 targets of shape [4]"));
  EXPECT_TRUE(contains(
      trainError("regression_b16_n1_sgd",
                 archive("labels.npz", f32npy({4, 8}, std::vector<float>(32)),
                         labels)),
      "regression_b16_n1_sgd.cleave regresses f32 targets of [2] per sample, "
      "the data has int64 labels"));
  EXPECT_TRUE(contains(
      trainError("regression_b16_n1_sgd",
                 archive("targets.npz", f32npy({4, 8}, std::vector<float>(32)),
                         f32npy({4, 3}, std::vector<float>(12)))),
      "input 'targets' takes targets of [2] per sample, the data has [3]"));
  // NumPy labels are checked against the model's classes.
  EXPECT_TRUE(contains(
      trainError(
          "mlp_b32_n2_sgd",
          archive("classes.npz",
                  npy("|u1", {4, 784}, std::string(4 * 784, '\0')),
                  npy("<i8", {4}, raw(std::vector<int64_t>{0, 10, 1, 2})))),
      "classes.npz:y_train.npy: label 10 of sample 1 is out of range "
      "(expected 0 to 9)"));
}

TEST(TrainOnTokensTest, ByteLevelLanguageModel) {
  TempDir dir;
  // Letter walks: the next token is a function of the current one, so that
  // the bigram model of examples/tiny_lm.mlir learns it exactly. Padded
  // tails (ignore index) are left out of the loss and of the metrics.
  auto write = [&](const std::string &name, int64_t n) {
    const Sequences s = letterWalks(n, 8, 3);
    std::vector<uint8_t> x(s.x.begin(), s.x.end());
    writeFile(dir / name, zip({{"x.npy", npy("|u1", {n, 8}, raw(x))},
                               {"y.npy", npy("<i8", {n, 8}, raw(s.y))}}));
  };
  write("train.npz", 61);
  write("test.npz", 20);
  std::string out;
  train::TrainSummary s =
      trainOn("tiny_lm_b8_n2_adam", dir.path(), 6, 0.05, &out);
  std::printf("%s", out.c_str());
  ASSERT_EQ(s.epochs.size(), 6u);
  // 8 micro-batches an epoch (the last of 5), windows of 2: 4 steps.
  EXPECT_EQ(s.optimizerSteps, 24);
  // From about ln 256 = 5.5 nats to a near-certain next letter.
  EXPECT_GT(s.epochs[0].trainLoss, 2.0);
  EXPECT_LT(s.epochs[5].trainLoss, 0.2 * s.epochs[0].trainLoss);
  EXPECT_LT(s.epochs[5].testLoss, 0.5);
  EXPECT_GE(s.epochs[5].testAccuracy, 0.99);
  for (const train::EpochResult &e : s.epochs) {
    EXPECT_DOUBLE_EQ(e.testPerplexity, std::exp(e.testLoss));
    EXPECT_DOUBLE_EQ(e.trainPerplexity, std::exp(e.trainLoss));
  }
  EXPECT_TRUE(contains(out, "epoch 6/6: loss ")) << out;
  EXPECT_TRUE(contains(out, ", test perplexity ")) << out;
  EXPECT_TRUE(contains(out, "% (per token)")) << out;
}

TEST(TrainOnTokensTest, RefusesWhatALanguageModelDoesNotTake) {
  TempDir dir;
  const Sequences s = letterWalks(4, 8);
  auto archive = [&](const std::string &name, const std::string &x,
                     const std::string &y) {
    writeFile(dir / name, zip({{"x_train.npy", x},
                               {"y_train.npy", y},
                               {"x_test.npy", x},
                               {"y_test.npy", y}}));
    return dir / name;
  };
  const std::string tokens = archive("tokens.npz", npy("<i8", {4, 8}, raw(s.x)),
                                     npy("<i8", {4, 8}, raw(s.y)));
  // A classifier is not fed token sequences, nor a language model images.
  EXPECT_TRUE(contains(trainError("mlp_b32_n2_sgd", tokens),
                       "int64 inputs of shape [4, 8]"));
  EXPECT_TRUE(contains(
      trainError("tiny_lm_b8_n2_adam",
                 archive("images.npz",
                         npy("|u1", {4, 784}, std::string(4 * 784, '\0')),
                         npy("<i8", {4}, raw(cyclicLabels(4, 10))))),
      "images.npz:x_train.npy: sequences of 784 tokens, shape [4, 784] "
      "(expected [N, 8]: the model's sequence length is 8)"));
  // Token ids are not normalised: an explicit --normalize=standard is an
  // error, the default and --normalize=none train.
  train::TrainOptions options;
  options.artifact = artifactPath("tiny_lm_b8_n2_adam");
  options.dataDir = tokens;
  options.threads = 1;
  options.quiet = true;
  options.progress = train::ProgressMode::None;
  options.normalizeGiven = true;
  std::FILE *sink = std::tmpfile();
  try {
    train::train(options, sink, sink);
    ADD_FAILURE() << "--normalize=standard on token ids was accepted";
  } catch (const std::exception &e) {
    EXPECT_TRUE(contains(e.what(), "--normalize=standard: "));
    EXPECT_TRUE(contains(e.what(), "token ids are not normalised"));
  }
  options.standardize = false;
  EXPECT_EQ(train::train(options, sink, sink).epochs.size(), 1u);
  std::fclose(sink);
}

} // namespace
} // namespace cleave::e2e
