//===- ShardCollectivesTest.cpp - The ZeRO-1 layout of the communicator ---===//
//
// Communicator::reduceScatterShards and allGatherShards on every rank of an
// mpirun job (R = 1 to 4) against a local reference: tensors of sizes that
// divide by R, that do not, that are shorter than R and that are empty; the
// shards' zero padding; the exact byte counts, which do not depend on the
// fusion buffer. Every rank generates every rank's inputs
// (seeded by rank), so each can compute the expected sums itself.
//
//===----------------------------------------------------------------------===//

#include "collectives/Communicator.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace cleave::rt {
namespace {

Communicator &world() {
  static std::unique_ptr<Communicator> comm = [] {
    CommunicatorOptions options;
    options.timeoutSeconds = 60;
    std::string error;
    std::unique_ptr<Communicator> c = Communicator::world(options, error);
    if (!c) {
      std::fprintf(stderr, "cannot create the world communicator: %s\n",
                   error.c_str());
      std::abort();
    }
    return c;
  }();
  return *comm;
}

/// Rank `rank`'s tensor `index` of `size` floats: small integers, so that
/// sums over ranks are exact in any order.
std::vector<float> input(int rank, size_t index, int64_t size) {
  std::mt19937 engine(uint32_t(rank * 1000 + index));
  std::vector<float> v(size);
  for (float &x : v)
    x = float(int(engine() % 201) - 100);
  return v;
}

const std::vector<int64_t> kSizes = {12, 7, 1, 0, 2, 5, 64, 3};

TEST(ShardCollectivesTest, ReduceScatterGivesEachRankItsShardOfTheSum) {
  Communicator &comm = world();
  const int rank = comm.rank(), ranks = comm.size();
  std::vector<std::vector<float>> in, out;
  std::vector<const float *> inPtrs;
  std::vector<float *> outPtrs;
  int64_t perRank = 0;
  for (size_t i = 0; i < kSizes.size(); ++i) {
    in.push_back(input(rank, i, kSizes[i]));
    const int64_t s = comm.paddedShardSize(kSizes[i]);
    EXPECT_EQ(s, (kSizes[i] + ranks - 1) / ranks);
    perRank += s;
    out.emplace_back(s, -1.0f); // poison: every element must be written
  }
  for (size_t i = 0; i < kSizes.size(); ++i) {
    inPtrs.push_back(in[i].data());
    outPtrs.push_back(out[i].data());
  }
  const std::vector<std::vector<float>> before = in;
  comm.resetByteCount();
  comm.reduceScatterShards(int64_t(kSizes.size()), inPtrs.data(), kSizes.data(),
                           outPtrs.data());
  EXPECT_EQ(comm.bytesSent(), 4 * uint64_t(ranks - 1) * uint64_t(perRank));
  EXPECT_EQ(in, before) << "the inputs were modified";

  for (size_t i = 0; i < kSizes.size(); ++i) {
    const int64_t n = kSizes[i], s = comm.paddedShardSize(n);
    std::vector<float> sum(n, 0.0f);
    for (int q = 0; q < ranks; ++q) {
      std::vector<float> v = input(q, i, n);
      for (int64_t e = 0; e < n; ++e)
        sum[e] += v[e];
    }
    for (int64_t e = 0; e < s; ++e) {
      const int64_t global = rank * s + e;
      EXPECT_EQ(out[i][e], global < n ? sum[global] : 0.0f)
          << "tensor " << i << " (" << n << " elements), shard element " << e;
    }
  }
}

TEST(ShardCollectivesTest, AllGatherRebuildsTheTensors) {
  Communicator &comm = world();
  const int rank = comm.rank(), ranks = comm.size();
  // Smaller than the packed vector: it bounds the pieces of sum and mean
  // only, so neither the result nor the byte count may change.
  const int64_t savedFusion = comm.fusionBufferBytes();
  comm.setFusionBufferBytes(64);
  std::vector<std::vector<float>> shards, out;
  std::vector<const float *> inPtrs;
  std::vector<float *> outPtrs;
  int64_t perRank = 0;
  for (size_t i = 0; i < kSizes.size(); ++i) {
    const int64_t n = kSizes[i], s = comm.paddedShardSize(n);
    perRank += s;
    // This rank's shard of the tensor input(0, i, n), zero-padded.
    std::vector<float> whole = input(0, i, n), shard(s, 0.0f);
    for (int64_t e = 0; e < s && rank * s + e < n; ++e)
      shard[e] = whole[rank * s + e];
    shards.push_back(shard);
    out.emplace_back(n, -1.0f);
  }
  for (size_t i = 0; i < kSizes.size(); ++i) {
    inPtrs.push_back(shards[i].data());
    outPtrs.push_back(out[i].data());
  }
  comm.resetByteCount();
  comm.allGatherShards(int64_t(kSizes.size()), inPtrs.data(), kSizes.data(),
                       outPtrs.data());
  EXPECT_EQ(comm.bytesSent(), 4 * uint64_t(ranks - 1) * uint64_t(perRank));
  comm.setFusionBufferBytes(savedFusion);
  for (size_t i = 0; i < kSizes.size(); ++i)
    EXPECT_EQ(out[i], input(0, i, kSizes[i])) << "tensor " << i;
}

TEST(ShardCollectivesTest, ReduceScatterThenAllGatherIsAnAllReduce) {
  Communicator &comm = world();
  const int rank = comm.rank();
  const std::vector<int64_t> sizes = {1001, 3};
  std::vector<std::vector<float>> in, shard, whole;
  for (size_t i = 0; i < sizes.size(); ++i) {
    in.push_back(input(rank, 10 + i, sizes[i]));
    shard.emplace_back(comm.paddedShardSize(sizes[i]));
    whole.emplace_back(sizes[i]);
  }
  const float *ins[] = {in[0].data(), in[1].data()};
  float *shards[] = {shard[0].data(), shard[1].data()};
  const float *cshards[] = {shard[0].data(), shard[1].data()};
  float *wholes[] = {whole[0].data(), whole[1].data()};
  comm.reduceScatterShards(2, ins, sizes.data(), shards);
  comm.allGatherShards(2, cshards, sizes.data(), wholes);

  std::vector<std::vector<float>> reduced = in;
  float *buffers[] = {reduced[0].data(), reduced[1].data()};
  comm.reduceInPlace(ReduceKind::Sum, 2, buffers, sizes.data());
  EXPECT_EQ(whole, reduced);
}

} // namespace
} // namespace cleave::rt
