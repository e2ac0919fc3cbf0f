//===- Sharding.h - Which elements each rank owns ---------------*- C++ -*-===//
//
// The block distribution that reduce-scatter and all-gather use, and that
// ZeRO-1 sharded optimizer state must use to know which elements it owns.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_COLLECTIVES_SHARDING_H
#define CLEAVE_RUNTIME_COLLECTIVES_SHARDING_H

#include <algorithm>
#include <cstdint>

namespace cleave::rt {

/// A half-open element range [begin, end).
struct ShardRange {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t size() const { return end - begin; }
};

/// The shard of rank `rank` (0 <= rank < size) of `length` elements.
///
/// Block distribution, the first `length % size` ranks taking one extra
/// element: rank r owns `length / size + (r < length % size)` elements
/// starting at `r * (length / size) + min(r, length % size)`. Shards are
/// contiguous, disjoint, in rank order, cover [0, length) and differ in size
/// by at most one; with length < size the last ranks own nothing.
inline ShardRange shardOf(int64_t length, int rank, int size) {
  const int64_t base = length / size;
  const int64_t extra = length % size;
  ShardRange range;
  range.begin = rank * base + std::min<int64_t>(rank, extra);
  range.end = range.begin + base + (rank < extra ? 1 : 0);
  return range;
}

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_COLLECTIVES_SHARDING_H
