//===- DataTest.cpp - The trainer's data loading (runtime/src/data) -------===//
//
// The idx reader (gzipped and plain, every validation), the dataset loader,
// the normalisation, the reproducible shuffle and the micro-batcher.
//
//===----------------------------------------------------------------------===//

#include "E2ETestUtil.h"

#include "data/Dataset.h"
#include "data/Idx.h"
#include "data/MicroBatcher.h"
#include "data/Shuffle.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <set>

namespace cleave::e2e {
namespace {

/// `text` contains `part`.
::testing::AssertionResult contains(const std::string &text,
                                    const std::string &part) {
  if (text.find(part) != std::string::npos)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "'" << text << "' does not contain '" << part << "'";
}

std::vector<uint8_t> bytesOf(const std::string &s) {
  return std::vector<uint8_t>(s.begin(), s.end());
}

std::string idxError(const std::string &content, uint32_t magic) {
  data::IdxArray out;
  rt::Status s = data::parseIdx("f.idx", bytesOf(content), magic, out);
  EXPECT_FALSE(s.ok());
  return s.message();
}

std::string readError(const std::string &path, uint32_t magic) {
  data::IdxArray out;
  rt::Status s = data::readIdx(path, magic, out);
  EXPECT_FALSE(s.ok()) << path;
  return s.message();
}

TEST(IdxTest, PlainAndGzipReadTheSame) {
  TempDir dir;
  IdxFiles f = makeIdx(5, 3, 4);
  writeFile(dir / "a", f.images);
  writeFile(dir / "a.gz", gzipBytes(f.images));
  // Two gzip members, as `cat a.gz b.gz` makes, are one file.
  writeFile(dir / "two.gz",
            gzipBytes(f.images.substr(0, 21)) + gzipBytes(f.images.substr(21)));
  for (const std::string name : {"a", "a.gz", "two.gz"}) {
    data::IdxArray out;
    rt::Status s = data::readIdx(dir / name, data::kIdxImagesMagic, out);
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_EQ(out.dims, (std::vector<uint32_t>{5, 3, 4})) << name;
    EXPECT_EQ(out.data, bytesOf(f.images.substr(16))) << name;
  }
}

TEST(IdxTest, RejectsMalformedFiles) {
  IdxFiles f = makeIdx(4, 2, 2);
  EXPECT_TRUE(contains(idxError(f.labels, data::kIdxImagesMagic),
                       "bad idx magic 0x00000801, expected 0x00000803"));
  EXPECT_TRUE(
      contains(idxError(std::string("\x00\x00", 2), data::kIdxImagesMagic),
               "shorter than the 4-byte magic"));
  EXPECT_TRUE(contains(idxError(f.images.substr(0, 10), data::kIdxImagesMagic),
                       "shorter than its 16-byte header"));
  EXPECT_TRUE(contains(
      idxError(f.images.substr(0, f.images.size() - 1), data::kIdxImagesMagic),
      "truncated idx file (images of shape 4x2x2 need 32 "
      "bytes, the file has 31)"));
  EXPECT_TRUE(contains(idxError(f.images + "x", data::kIdxImagesMagic),
                       "1 unexpected bytes after the images"));
  std::string zero = f.labels;
  zero[7] = 0; // count 0
  EXPECT_TRUE(contains(idxError(zero.substr(0, 8), data::kIdxLabelsMagic),
                       "idx dimension 0 is 0"));
  std::string huge = f.images;
  for (int i = 4; i < 16; ++i)
    huge[i] = char(0xff);
  EXPECT_TRUE(
      contains(idxError(huge, data::kIdxImagesMagic), "describe more than"));
}

TEST(IdxTest, RejectsBadGzip) {
  TempDir dir;
  IdxFiles f = makeIdx(50, 28, 28);
  std::string gz = gzipBytes(f.images);

  std::string corrupt = gz;
  for (size_t i = gz.size() / 2; i < gz.size() / 2 + 16; ++i)
    corrupt[i] = char(~corrupt[i]);
  writeFile(dir / "corrupt.gz", corrupt);
  EXPECT_TRUE(contains(readError(dir / "corrupt.gz", data::kIdxImagesMagic),
                       "corrupt.gz: corrupt gzip data ("));

  std::string badCrc = gz;
  badCrc[gz.size() - 6] = char(~badCrc[gz.size() - 6]); // inside the CRC-32
  writeFile(dir / "crc.gz", badCrc);
  EXPECT_TRUE(contains(readError(dir / "crc.gz", data::kIdxImagesMagic),
                       "crc.gz: corrupt gzip data (incorrect data check)"));

  writeFile(dir / "short.gz", gz.substr(0, gz.size() / 2));
  EXPECT_TRUE(contains(readError(dir / "short.gz", data::kIdxImagesMagic),
                       "short.gz: truncated gzip data"));
  writeFile(dir / "trailer.gz", gz.substr(0, gz.size() - 3));
  EXPECT_TRUE(contains(readError(dir / "trailer.gz", data::kIdxImagesMagic),
                       "trailer.gz: truncated gzip data"));

  writeFile(dir / "garbage.gz", gz + "junk");
  EXPECT_TRUE(contains(readError(dir / "garbage.gz", data::kIdxImagesMagic),
                       "4 bytes of garbage after the gzip data"));

  writeFile(dir / "plain.gz", f.images);
  EXPECT_TRUE(contains(readError(dir / "plain.gz", data::kIdxImagesMagic),
                       "plain.gz: not gzip data"));

  EXPECT_TRUE(contains(readError(dir / "absent.gz", data::kIdxImagesMagic),
                       "absent.gz: cannot open (No such file or directory)"));
}

TEST(DatasetTest, LoadsBothSplitsAndLimits) {
  TempDir dir;
  writeDataset(dir.path(), 30, 12, 6, 5, /*gzip=*/true);
  data::Dataset train, test;
  data::DatasetOptions options;
  ASSERT_TRUE(
      data::loadIdxDataset(dir.path(), data::Split::Train, options, train)
          .ok());
  EXPECT_EQ(train.format, "idx");
  EXPECT_EQ(train.size(), 30);
  EXPECT_EQ(train.inputs.sampleShape, (std::vector<int64_t>{6, 5}));
  EXPECT_EQ(train.inputs.type, data::ElementType::U8);
  EXPECT_EQ(train.numClasses, 10);
  EXPECT_EQ(train.targets.row(13)[0], 3);
  EXPECT_EQ(train.targets.count, 30);
  EXPECT_TRUE(contains(train.inputs.source, "train-images-idx3-ubyte.gz"));

  options.limit = 7;
  ASSERT_TRUE(
      data::loadIdxDataset(dir.path(), data::Split::Test, options, test).ok());
  EXPECT_EQ(test.size(), 7);
  EXPECT_EQ(test.targets.count, 7);
  EXPECT_TRUE(contains(test.targets.source, "t10k-labels-idx1-ubyte.gz"));

  // A plain file is preferred to its .gz (no inflating).
  IdxFiles plain = makeIdx(3, 6, 5);
  writeFile(dir / "t10k-images-idx3-ubyte", plain.images);
  writeFile(dir / "t10k-labels-idx1-ubyte", plain.labels);
  options.limit = 0;
  ASSERT_TRUE(
      data::loadIdxDataset(dir.path(), data::Split::Test, options, test).ok());
  EXPECT_EQ(test.size(), 3);
}

TEST(DatasetTest, ReportsMissingAndInconsistentFiles) {
  TempDir dir;
  data::Dataset out;
  data::DatasetOptions options;
  auto load = [&](data::Split split) {
    rt::Status s = data::loadIdxDataset(dir.path(), split, options, out);
    EXPECT_FALSE(s.ok());
    return s.message();
  };
  EXPECT_TRUE(contains(
      data::loadIdxDataset(dir / "nope", data::Split::Train, options, out)
          .message(),
      "nope: cannot open the data directory (No such file"));
  EXPECT_TRUE(contains(load(data::Split::Train),
                       "train-images-idx3-ubyte[.gz]: no such file"));

  IdxFiles f = makeIdx(20, 4, 4);
  writeFile(dir / "train-images-idx3-ubyte", f.images);
  writeFile(dir / "train-labels-idx1-ubyte", makeIdx(19, 4, 4).labels);
  EXPECT_TRUE(
      contains(load(data::Split::Train), "19 labels for the 20 samples"));

  std::string labels = f.labels;
  labels[8 + 13] = 10;
  writeFile(dir / "train-labels-idx1-ubyte", labels);
  EXPECT_TRUE(contains(load(data::Split::Train),
                       "label 10 of sample 13 is out of range (expected 0 "
                       "to 9)"));
  options.numClasses = 11;
  rt::Status s =
      data::loadIdxDataset(dir.path(), data::Split::Train, options, out);
  EXPECT_TRUE(s.ok()) << s.message();
}

TEST(DatasetTest, NormalisationIsToTensors) {
  EXPECT_EQ(data::pixelToFloat(0), 0.0f);
  EXPECT_EQ(data::pixelToFloat(255), 1.0f);
  for (int p = 0; p < 256; ++p)
    EXPECT_EQ(data::pixelToFloat(uint8_t(p)), float(p) / 255.0f);
}

TEST(ShuffleTest, SplitMix64MatchesTheReference) {
  // Vigna's splitmix64.c from state 0: the first three outputs.
  EXPECT_EQ(data::splitmix64(0), 0xe220a8397b1dcdafull);
  EXPECT_EQ(data::splitmix64(0x9e3779b97f4a7c15ull), 0x6e789e6aa1b965f4ull);
  EXPECT_EQ(data::splitmix64(2 * 0x9e3779b97f4a7c15ull), 0x06c45d188009454full);
}

TEST(ShuffleTest, OrdersArePermutationsFixedBySeedAndEpoch) {
  const uint32_t n = 1000;
  std::vector<uint32_t> a = data::epochOrder(42, 0, n);
  std::vector<uint32_t> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  std::vector<uint32_t> identity(n);
  std::iota(identity.begin(), identity.end(), 0u);
  EXPECT_EQ(sorted, identity);
  EXPECT_NE(a, identity);
  EXPECT_EQ(a, data::epochOrder(42, 0, n));
  EXPECT_NE(a, data::epochOrder(42, 1, n));
  EXPECT_NE(a, data::epochOrder(43, 0, n));
  EXPECT_EQ(data::epochOrder(5, 3, 1), std::vector<uint32_t>{0});
  EXPECT_TRUE(data::epochOrder(5, 3, 0).empty());
  // The documented generator, pinned: a change would silently change every
  // run's data order (and break resuming runs started before it).
  EXPECT_EQ(data::epochOrder(0, 0, 10),
            (std::vector<uint32_t>{6, 1, 2, 4, 7, 5, 3, 0, 9, 8}));
}

TEST(ShuffleTest, UniformBelowIsInRangeAndCoversIt) {
  std::mt19937_64 engine(1);
  EXPECT_EQ(data::uniformBelow(engine, 1), 0u);
  std::vector<int> counts(7, 0);
  for (int i = 0; i < 7000; ++i)
    ++counts[data::uniformBelow(engine, 7)];
  for (int c : counts) {
    EXPECT_GT(c, 850); // expected 1000 each; 5 sigma is about 150
    EXPECT_LT(c, 1150);
  }
  // Near 2^64 the rejection threshold is large; draws stay in range.
  const uint64_t big = (uint64_t(1) << 63) + 12345;
  for (int i = 0; i < 100; ++i)
    EXPECT_LT(data::uniformBelow(engine, big), big);
}

TEST(MicroBatcherTest, GathersNormalisedAlignedRows) {
  std::vector<uint8_t> pixels, labels;
  for (int i = 0; i < 4; ++i) {
    for (int p = 0; p < 6; ++p)
      pixels.push_back(uint8_t(i * 50 + p));
    labels.push_back(uint8_t(9 - i));
  }
  data::Dataset ds;
  ds.inputs.type = data::ElementType::U8;
  ds.inputs.sampleShape = {2, 3};
  ds.inputs.count = 4;
  ds.inputs.data = pixels.data();
  ds.targets.type = data::ElementType::U8;
  ds.targets.count = 4;
  ds.targets.data = labels.data();
  ds.numClasses = 10;
  std::unique_ptr<data::MicroBatcher> b;
  ASSERT_TRUE(data::MicroBatcher::create(ds, 3, b).ok());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b->inputs()) % 64, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b->targets()) % 64, 0u);

  const uint32_t order[] = {3, 0};
  ASSERT_TRUE(b->gather(order, 2).ok());
  EXPECT_EQ(b->samples(), 2);
  EXPECT_EQ(b->inputBytes(), 2u * 6u * sizeof(float));
  EXPECT_EQ(b->targetBytes(), 2u * sizeof(int64_t));
  EXPECT_EQ(b->inputs()[0], 150.0f / 255.0f);
  EXPECT_EQ(b->inputs()[6 + 5], 5.0f / 255.0f);
  EXPECT_EQ(b->labels()[0], 6);
  EXPECT_EQ(b->labels()[1], 9);

  ASSERT_TRUE(b->gatherRange(1, 3).ok());
  EXPECT_EQ(b->labels()[2], 6);
  EXPECT_EQ(b->inputs()[0], 50.0f / 255.0f);

  const uint32_t bad[] = {4};
  EXPECT_TRUE(
      contains(b->gather(bad, 1).message(), "sample index 4 is out of range"));
  EXPECT_FALSE(b->gather(order, 4).ok());
  EXPECT_FALSE(b->gatherRange(2, 3).ok());
  EXPECT_FALSE(data::MicroBatcher::create(ds, 0, b).ok());
}

} // namespace
} // namespace cleave::e2e
