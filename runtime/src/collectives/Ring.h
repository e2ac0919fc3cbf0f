//===- Ring.h - Ring reduce-scatter and all-gather --------------*- C++ -*-===//
//
// The bandwidth-optimal ring algorithms behind sum and mean reductions and
// the ZeRO-1 reduce-scatter / all-gather, over the flattened concatenation
// of a list of buffers. Internal to runtime/src/collectives.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_COLLECTIVES_RING_H
#define CLEAVE_RUNTIME_COLLECTIVES_RING_H

#include <cstdint>
#include <vector>

namespace cleave::rt {

class Transport;

/// A list of buffers seen as one flat vector: element i of the view is
/// element i of the concatenation buffers[0] ++ buffers[1] ++ .... Ranges of
/// the view may span several buffers; the helpers below walk the pieces.
template <typename T> class FlatView {
public:
  FlatView(int64_t count, T *const *buffers, const int64_t *sizes);

  int64_t size() const { return offsets_.back(); }

  /// The storage of [begin, end) if it lies in one buffer, else nullptr.
  T *contiguous(int64_t begin, int64_t end) const;

  /// dst[0, end - begin) = view[begin, end).
  void copyOut(int64_t begin, int64_t end, T *dst) const;
  /// view[begin, end) = src[0, end - begin).
  void copyIn(int64_t begin, int64_t end, const T *src) const;
  /// view[begin, end) += src[0, end - begin).
  void addIn(int64_t begin, int64_t end, const T *src) const;
  /// view[begin, end) /= divisor.
  void divide(int64_t begin, int64_t end, T divisor) const;

private:
  /// Calls fn(storage, length, offsetInRange) for each buffer piece of
  /// [begin, end), in order.
  template <typename Fn>
  void forEachPiece(int64_t begin, int64_t end, Fn fn) const;

  // Non-empty buffers only, so that a position maps to exactly one buffer;
  // offsets_[i] is where buffers_[i] starts, offsets_.back() the total.
  std::vector<T *> buffers_;
  std::vector<int64_t> offsets_;
};

/// Staging memory for ranges that are not contiguous in one buffer and for
/// received pieces that are added rather than copied.
template <typename T> struct RingStaging {
  std::vector<T> send;
  std::vector<T> recv;
};

/// Ring reduce-scatter over `view`, sharded by shardOf(view.size(), r, R):
/// afterwards rank r's shard holds the sum over ranks (divided by `divisor`
/// unless it is 1); the rest of the view holds partial sums. In step s
/// (0 <= s < R-1) rank r sends shard (r-s-1) mod R to r+1 and adds shard
/// (r-s-2) mod R received from r-1, so it sends every shard but its own:
/// view.size() - |shard r| elements. Each step moves at most `pieceElems`
/// elements per message. Every element's sum is formed on one rank in a
/// fixed order, so results do not depend on timing.
template <typename T>
void ringReduceScatter(Transport &transport, const FlatView<T> &view, T divisor,
                       int64_t pieceElems, RingStaging<T> &staging,
                       const char *what);

/// Ring all-gather over `view`: on entry rank r's shard holds its values; on
/// return every rank holds every shard. In step s rank r sends shard (r-s)
/// mod R to r+1 and receives shard (r-s-1) mod R from r-1, so it sends every
/// shard but shard (r+1) mod R: view.size() - |shard r+1| elements.
template <typename T>
void ringAllGather(Transport &transport, const FlatView<T> &view,
                   int64_t pieceElems, RingStaging<T> &staging,
                   const char *what);

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_COLLECTIVES_RING_H
