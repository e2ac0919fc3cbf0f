//===- FakeCollectives.h - Collectives for kernel tests ---------*- C++ -*-===//
//
// The kernel library reaches the ranks of a job only through the Collectives
// interface (collectives/Collectives.h); these tests link neither MPI nor the
// collectives library, and attach this recorder instead.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_TEST_UNIT_RUNTIME_KERNELS_FAKECOLLECTIVES_H
#define CLEAVE_TEST_UNIT_RUNTIME_KERNELS_FAKECOLLECTIVES_H

#include "collectives/Collectives.h"

#include <cstdint>
#include <vector>

namespace cleave::rt::test {

/// Rank `rank` of a world of `ranks` ranks whose other ranks all hold the
/// same values as this one: a sum multiplies by `ranks`, a mean and Adasum
/// leave the values unchanged. Records every call.
class FakeCollectives final : public Collectives {
public:
  FakeCollectives(int ranks, int rank = 0) : ranks(ranks), myRank(rank) {}

  int rank() const override { return myRank; }
  int size() const override { return ranks; }
  Status reduce(ReduceKind kind, int64_t count, float *const *buffers,
                const int64_t *sizes) override {
    calls.push_back({kind, count, buffers, sizes});
    if (kind == ReduceKind::Sum)
      for (int64_t i = 0; i < count; ++i)
        for (int64_t j = 0; j < sizes[i]; ++j)
          buffers[i][j] *= static_cast<float>(ranks);
    return Status::success();
  }
  Status reduceScatterShards(int64_t count, const float *const *,
                             const int64_t *, float *const *) override {
    shardCalls.push_back({"reduce_scatter", count});
    return Status::success();
  }
  Status allGatherShards(int64_t count, const float *const *, const int64_t *,
                         float *const *) override {
    shardCalls.push_back({"all_gather", count});
    return Status::success();
  }
  uint64_t bytesSent() const override { return 0; }

  struct Call {
    ReduceKind kind;
    int64_t count;
    float *const *buffers;
    const int64_t *sizes;
  };
  struct ShardCall {
    const char *what;
    int64_t count;
  };
  int ranks;
  int myRank;
  std::vector<Call> calls;
  std::vector<ShardCall> shardCalls;
};

} // namespace cleave::rt::test

#endif // CLEAVE_TEST_UNIT_RUNTIME_KERNELS_FAKECOLLECTIVES_H
