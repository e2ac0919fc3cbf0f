//===- CommunicatorTest.cpp - Sum, mean, sharding, broadcast --------------===//
//
// Runs on every rank (see MpiGTest.h). Inputs are integers small enough that
// float sums are exact, so results are compared for equality; byte counts
// are compared with the per-rank formulas Communicator::bytesSent() defines,
// recomputed here from the documented sharding rule.
//
//===----------------------------------------------------------------------===//

#include "MpiGTest.h"
#include "collectives/MpiCollectives.h"

#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <vector>

using namespace cleave::rt;
using cleave::rt::test::world;

namespace {

/// The documented block distribution, written out independently of
/// shardOf: the first length % size ranks own one element more.
int64_t expectedShardSize(int64_t length, int rank, int size) {
  return length / size + (rank < length % size ? 1 : 0);
}

/// Bytes rank `rank` sends in a ring all-reduce of `length` elements.
uint64_t ringAllreduceBytes(int64_t length, int rank, int size,
                            int elementBytes) {
  if (size == 1)
    return 0;
  return elementBytes *
         ((length - expectedShardSize(length, rank, size)) +
          (length - expectedShardSize(length, (rank + 1) % size, size)));
}

/// Rank r's value of element j of tensor t: distinct per rank, exact sums.
float inputValue(int rank, int tensor, int64_t j) {
  return float((rank + 1) * 1000 + tensor * 100 + (j % 97)) -
         float(50 * (rank % 2));
}

float expectedSum(int size, int tensor, int64_t j) {
  float sum = 0;
  for (int r = 0; r < size; ++r)
    sum += inputValue(r, tensor, j);
  return sum;
}

/// Tensors of several sizes, including empty and odd ones, filled with this
/// rank's inputs.
struct TensorList {
  explicit TensorList(std::vector<int64_t> tensorSizes)
      : sizes(std::move(tensorSizes)) {
    for (size_t t = 0; t < sizes.size(); ++t) {
      data.emplace_back(sizes[t]);
      for (int64_t j = 0; j < sizes[t]; ++j)
        data[t][j] = inputValue(world().rank(), int(t), j);
    }
    for (auto &tensor : data)
      pointers.push_back(tensor.data());
  }
  int64_t total() const {
    return std::accumulate(sizes.begin(), sizes.end(), int64_t(0));
  }

  std::vector<int64_t> sizes;
  std::vector<std::vector<float>> data;
  std::vector<float *> pointers;
};

const std::vector<int64_t> kMixedSizes = {1, 7, 0, 1001, 3, 64};

TEST(Sharding, BlocksCoverTheRangeInRankOrder) {
  for (int64_t length : {0, 1, 5, 7, 8, 1001}) {
    for (int size : {1, 2, 3, 4, 7}) {
      int64_t next = 0;
      for (int r = 0; r < size; ++r) {
        ShardRange shard = shardOf(length, r, size);
        EXPECT_EQ(shard.begin, next) << length << " over " << size;
        EXPECT_EQ(shard.size(), expectedShardSize(length, r, size));
        next = shard.end;
      }
      EXPECT_EQ(next, length);
    }
  }
}

TEST(Communicator, WorldMatchesLauncher) {
  EXPECT_EQ(world().usesMpi(), cleave::rt::test::launchedByMpi());
  EXPECT_GE(world().rank(), 0);
  EXPECT_LT(world().rank(), world().size());
  if (!world().usesMpi()) {
    EXPECT_EQ(world().size(), 1);
  }
}

TEST(Communicator, SumIsExactAndIdenticalOnAllRanks) {
  TensorList tensors(kMixedSizes);
  world().resetByteCount();
  world().reduceInPlace(ReduceKind::Sum, int64_t(tensors.sizes.size()),
                        tensors.pointers.data(), tensors.sizes.data());
  EXPECT_EQ(
      world().bytesSent(),
      ringAllreduceBytes(tensors.total(), world().rank(), world().size(), 4));
  for (size_t t = 0; t < tensors.sizes.size(); ++t)
    for (int64_t j = 0; j < tensors.sizes[t]; ++j)
      ASSERT_EQ(tensors.data[t][j], expectedSum(world().size(), int(t), j))
          << "tensor " << t << " element " << j;
}

TEST(Communicator, MeanDividesTheExactSumOnce) {
  TensorList tensors(kMixedSizes);
  world().reduceInPlace(ReduceKind::Mean, int64_t(tensors.sizes.size()),
                        tensors.pointers.data(), tensors.sizes.data());
  for (size_t t = 0; t < tensors.sizes.size(); ++t)
    for (int64_t j = 0; j < tensors.sizes[t]; ++j)
      ASSERT_EQ(tensors.data[t][j],
                expectedSum(world().size(), int(t), j) / float(world().size()))
          << "tensor " << t << " element " << j;
}

// A tiny fusion buffer splits the all-reduce into many pieces, several of
// which straddle tensor boundaries; results and byte counts must not change.
TEST(Communicator, SumWithTinyFusionBufferIsUnchanged) {
  cleave::rt::test::ScopedFusionBuffer fusion(40);
  TensorList tensors(kMixedSizes);
  world().resetByteCount();
  world().reduceInPlace(ReduceKind::Sum, int64_t(tensors.sizes.size()),
                        tensors.pointers.data(), tensors.sizes.data());
  EXPECT_EQ(
      world().bytesSent(),
      ringAllreduceBytes(tensors.total(), world().rank(), world().size(), 4));
  for (size_t t = 0; t < tensors.sizes.size(); ++t)
    for (int64_t j = 0; j < tensors.sizes[t]; ++j)
      ASSERT_EQ(tensors.data[t][j], expectedSum(world().size(), int(t), j))
          << "tensor " << t << " element " << j;
}

// The byte count is a property of one call: reducing a buffer that was
// accumulated into many times costs the same as reducing it once.
TEST(Communicator, BytesPerCallDependOnlyOnTheReducedLength) {
  std::vector<float> buffer(4099, 0.0f);
  uint64_t perCall[2];
  for (int call = 0; call < 2; ++call) {
    for (int accumulate = 0; accumulate < 1 + 7 * call; ++accumulate)
      for (float &x : buffer)
        x += 1.0f;
    world().resetByteCount();
    world().reduceInPlace(ReduceKind::Sum, buffer.data(),
                          int64_t(buffer.size()));
    perCall[call] = world().bytesSent();
  }
  EXPECT_EQ(perCall[0], perCall[1]);
  EXPECT_EQ(perCall[0],
            ringAllreduceBytes(4099, world().rank(), world().size(), 4));
  // 2 (R-1)/R of the data, within one element per shard.
  const double data = 4099.0 * 4;
  const double r = world().size();
  EXPECT_NEAR(double(perCall[0]), 2 * (r - 1) / r * data, 8.0);
}

TEST(Communicator, ReduceScatterThenAllGatherOverConcatenation) {
  TensorList tensors(kMixedSizes);
  const int64_t total = tensors.total();
  const int rank = world().rank(), size = world().size();
  const int64_t count = int64_t(tensors.sizes.size());

  world().resetByteCount();
  world().reduceScatterSum(count, tensors.pointers.data(),
                           tensors.sizes.data());
  const uint64_t scatterBytes = world().bytesSent();

  // The flat index of (tensor, element) decides ownership.
  const ShardRange own = world().ownedShard(total);
  int64_t flat = 0;
  for (size_t t = 0; t < tensors.sizes.size(); ++t)
    for (int64_t j = 0; j < tensors.sizes[t]; ++j, ++flat)
      if (flat >= own.begin && flat < own.end) {
        EXPECT_EQ(tensors.data[t][j], expectedSum(size, int(t), j))
            << "owned flat element " << flat;
      }

  // Poison what this rank does not own: all-gather must overwrite it.
  flat = 0;
  for (size_t t = 0; t < tensors.sizes.size(); ++t)
    for (int64_t j = 0; j < tensors.sizes[t]; ++j, ++flat)
      if (flat < own.begin || flat >= own.end)
        tensors.data[t][j] = -1.0f;

  world().resetByteCount();
  world().allGather(count, tensors.pointers.data(), tensors.sizes.data());
  const uint64_t gatherBytes = world().bytesSent();

  if (size > 1) {
    EXPECT_EQ(scatterBytes,
              4 * uint64_t(total - expectedShardSize(total, rank, size)));
    EXPECT_EQ(gatherBytes,
              4 * uint64_t(total -
                           expectedShardSize(total, (rank + 1) % size, size)));
  } else {
    EXPECT_EQ(scatterBytes + gatherBytes, 0u);
  }
  for (size_t t = 0; t < tensors.sizes.size(); ++t)
    for (int64_t j = 0; j < tensors.sizes[t]; ++j)
      ASSERT_EQ(tensors.data[t][j], expectedSum(size, int(t), j))
          << "tensor " << t << " element " << j;
}

TEST(Communicator, ReduceScatterOfFewerElementsThanRanks) {
  const int size = world().size();
  float value = float(world().rank() + 1);
  world().reduceScatterSum(&value, 1);
  if (shardOf(1, world().rank(), size).size() == 1) {
    EXPECT_EQ(value, float(size * (size + 1) / 2));
  }
  world().allGather(&value, 1);
  EXPECT_EQ(value, float(size * (size + 1) / 2));
}

TEST(Communicator, AllreduceSumOfDoubles) {
  const int size = world().size();
  std::vector<double> values = {1.0, 0.5 * world().rank(), 1e300, -3.0, 0.0};
  world().allreduceSum(values.data(), int64_t(values.size()));
  EXPECT_EQ(values[0], double(size));
  EXPECT_EQ(values[1], 0.25 * size * (size - 1));
  EXPECT_EQ(values[2], 1e300 * size);
  EXPECT_EQ(values[3], -3.0 * size);
  EXPECT_EQ(values[4], 0.0);
  EXPECT_EQ(world().allreduceSum(double(world().rank())),
            0.5 * size * (size - 1));
}

TEST(Communicator, BroadcastFromEveryRoot) {
  for (int root = 0; root < world().size(); ++root) {
    std::vector<unsigned char> payload(1000);
    for (size_t i = 0; i < payload.size(); ++i)
      payload[i] = static_cast<unsigned char>(
          world().rank() == root ? (i * 7 + root) : 0xAA);
    world().broadcast(payload.data(), int64_t(payload.size()), root);
    // EXPECT, not ASSERT: returning early would skip the next broadcasts.
    int wrong = 0;
    for (size_t i = 0; i < payload.size(); ++i)
      wrong += payload[i] != static_cast<unsigned char>(i * 7 + root);
    EXPECT_EQ(wrong, 0) << "bytes differing from root " << root;
  }
}

/// The bytes rank `from` hands to rank `to` in a gather or scatter to or
/// from `root`: lengths from 0 to 40, contents that differ per pair.
std::string part(int from, int to, int root) {
  std::string bytes(size_t((from * 13 + to * 7 + root * 3) % 41), '\0');
  for (size_t i = 0; i < bytes.size(); ++i)
    bytes[i] = static_cast<char>(from * 31 + to * 17 + root + int(i) * 7);
  return bytes;
}

// Parts of different lengths, empty ones included, to and from every root;
// with an 8-byte fusion buffer each part travels in many rounds.
TEST(Communicator, GatherAndScatterBytesToAndFromEveryRoot) {
  const int rank = world().rank(), size = world().size();
  for (int64_t fusionBytes : {int64_t(16) << 20, int64_t(8)}) {
    cleave::rt::test::ScopedFusionBuffer fusion(fusionBytes);
    for (int root = 0; root < size; ++root) {
      const std::string mine = part(rank, root, root);
      std::vector<std::string> all = {"stale"};
      world().resetByteCount();
      world().gatherBytes(mine, all, root);
      if (rank == root) {
        EXPECT_EQ(world().bytesSent(), 0u);
        EXPECT_EQ(all.size(), size_t(size));
        for (int q = 0; q < size && q < int(all.size()); ++q)
          EXPECT_EQ(all[size_t(q)], part(q, root, root))
              << "gathered from rank " << q << " to root " << root
              << ", fusion buffer " << fusionBytes;
      } else {
        EXPECT_EQ(world().bytesSent(), uint64_t(mine.size()));
      }

      std::vector<std::string> parts;
      uint64_t scattered = 0;
      if (rank == root)
        for (int q = 0; q < size; ++q) {
          parts.push_back(part(root, q, root));
          scattered += q == root ? 0 : parts.back().size();
        }
      std::string got = "stale";
      world().resetByteCount();
      world().scatterBytes(parts, got, root);
      EXPECT_EQ(got, part(root, rank, root))
          << "scattered from root " << root << ", fusion buffer "
          << fusionBytes;
      EXPECT_EQ(world().bytesSent(), rank == root ? scattered : 0u);
    }
  }
}

TEST(Communicator, KernelAbiCollectives) {
  MpiCollectives collectives(world());
  EXPECT_EQ(collectives.rank(), world().rank());
  EXPECT_EQ(collectives.size(), world().size());
  std::vector<float> a(5, float(world().rank() + 1));
  std::vector<float> b(3, 2.0f);
  float *buffers[] = {a.data(), b.data()};
  const int64_t sizes[] = {5, 3};
  const uint64_t before = collectives.bytesSent();
  ASSERT_TRUE(collectives.reduce(ReduceKind::Mean, 2, buffers, sizes).ok());
  const int size = world().size();
  for (float x : a)
    EXPECT_EQ(x, float(size * (size + 1) / 2) / float(size));
  for (float x : b)
    EXPECT_EQ(x, 2.0f);
  // The communicator's own count: one packed ring all-reduce.
  EXPECT_EQ(collectives.bytesSent() - before,
            allReduceBytes(8, world().rank(), size, sizeof(float)));
  EXPECT_EQ(collectives.bytesSent(), world().bytesSent());
  // One rank: the identity.
  LocalCollectives one;
  std::vector<float> c = {1.5f, -2.0f};
  float *local[] = {c.data()};
  const int64_t localSize[] = {2};
  ASSERT_TRUE(one.reduce(ReduceKind::Adasum, 1, local, localSize).ok());
  EXPECT_EQ(c, (std::vector<float>{1.5f, -2.0f}));
  EXPECT_EQ(one.bytesSent(), 0u);
}

TEST(Communicator, LocalCommunicatorIsTheIdentity) {
  std::unique_ptr<Communicator> local = Communicator::local();
  EXPECT_FALSE(local->usesMpi());
  EXPECT_EQ(local->rank(), 0);
  EXPECT_EQ(local->size(), 1);
  std::vector<float> data = {1.0f, 2.0f, 3.0f};
  for (ReduceKind kind :
       {ReduceKind::Sum, ReduceKind::Mean, ReduceKind::Adasum})
    local->reduceInPlace(kind, data.data(), 3);
  local->reduceScatterSum(data.data(), 3);
  local->allGather(data.data(), 3);
  local->broadcast(data.data(), 12, 0);
  local->barrier();
  EXPECT_EQ(data, (std::vector<float>{1.0f, 2.0f, 3.0f}));
  EXPECT_EQ(local->allreduceSum(2.5), 2.5);
  EXPECT_EQ(local->bytesSent(), 0u);
}

TEST(Communicator, OptionsFromEnvironment) {
  std::string error;
  ASSERT_EQ(setenv("CLEAVE_COLLECTIVE_TIMEOUT_S", "7.5", 1), 0);
  std::optional<CommunicatorOptions> options =
      CommunicatorOptions::fromEnvironment(error);
  ASSERT_TRUE(options.has_value()) << error;
  EXPECT_EQ(options->timeoutSeconds, 7.5);

  for (const char *bad : {"", "abc", "0", "-1", "5s", "inf"}) {
    ASSERT_EQ(setenv("CLEAVE_COLLECTIVE_TIMEOUT_S", bad, 1), 0);
    error.clear();
    EXPECT_FALSE(CommunicatorOptions::fromEnvironment(error).has_value())
        << "accepted '" << bad << "'";
    EXPECT_NE(error.find("CLEAVE_COLLECTIVE_TIMEOUT_S"), std::string::npos);
  }
  ASSERT_EQ(unsetenv("CLEAVE_COLLECTIVE_TIMEOUT_S"), 0);
  options = CommunicatorOptions::fromEnvironment(error);
  ASSERT_TRUE(options.has_value());
  EXPECT_EQ(options->timeoutSeconds, 60.0);
}

} // namespace
