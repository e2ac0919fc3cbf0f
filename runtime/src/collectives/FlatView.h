//===- FlatView.h - A list of buffers seen as one vector --------*- C++ -*-===//
//
// The flattened concatenation of the buffers a collective combines, so that
// small tensors share MPI calls, and the staging memory for the parts of it
// that MPI cannot read or write in place. Internal to runtime/src/collectives.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_COLLECTIVES_FLATVIEW_H
#define CLEAVE_RUNTIME_COLLECTIVES_FLATVIEW_H

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

namespace cleave::rt {

/// A list of buffers seen as one flat vector: element i of the view is
/// element i of the concatenation buffers[0] ++ buffers[1] ++ .... Ranges of
/// the view may span several buffers.
template <typename T> class FlatView {
public:
  FlatView(int64_t count, T *const *buffers, const int64_t *sizes) {
    offsets_.push_back(0);
    for (int64_t i = 0; i < count; ++i) {
      if (sizes[i] == 0)
        continue;
      buffers_.push_back(buffers[i]);
      offsets_.push_back(offsets_.back() + sizes[i]);
    }
  }

  int64_t size() const { return offsets_.back(); }

  /// The storage of [begin, end) if it lies in one buffer, else nullptr.
  T *contiguous(int64_t begin, int64_t end) const {
    if (begin >= end)
      return nullptr;
    const size_t i = bufferOf(begin);
    return end > offsets_[i + 1] ? nullptr
                                 : buffers_[i] + (begin - offsets_[i]);
  }

  /// dst[0, end - begin) = view[begin, end).
  void copyOut(int64_t begin, int64_t end, T *dst) const {
    forEachPiece(begin, end, [&](T *piece, int64_t length, int64_t at) {
      std::memcpy(dst + at, piece, length * sizeof(T));
    });
  }
  /// view[begin, end) = src[0, end - begin).
  void copyIn(int64_t begin, int64_t end, const T *src) const {
    forEachPiece(begin, end, [&](T *piece, int64_t length, int64_t at) {
      std::memcpy(piece, src + at, length * sizeof(T));
    });
  }

private:
  /// The buffer holding position `pos`: the last one starting at or before
  /// it.
  size_t bufferOf(int64_t pos) const {
    return std::upper_bound(offsets_.begin(), offsets_.end(), pos) -
           offsets_.begin() - 1;
  }

  /// Calls fn(storage, length, offsetInRange) for each buffer piece of
  /// [begin, end), in order.
  template <typename Fn>
  void forEachPiece(int64_t begin, int64_t end, Fn fn) const {
    if (begin >= end)
      return;
    size_t i = bufferOf(begin);
    for (int64_t pos = begin; pos < end; ++i) {
      const int64_t pieceEnd = std::min(end, offsets_[i + 1]);
      fn(buffers_[i] + (pos - offsets_[i]), pieceEnd - pos, pos - begin);
      pos = pieceEnd;
    }
  }

  // Non-empty buffers only, so that a position maps to exactly one buffer;
  // offsets_[i] is where buffers_[i] starts, offsets_.back() the total.
  std::vector<T *> buffers_;
  std::vector<int64_t> offsets_;
};

/// Send and receive staging of the collectives over a FlatView, kept between
/// calls so that steady-state windows do not allocate.
template <typename T> struct StagingBuffers {
  std::vector<T> send;
  std::vector<T> recv;

  T *sendOf(int64_t elements) { return grow(send, elements); }
  T *recvOf(int64_t elements) { return grow(recv, elements); }

private:
  static T *grow(std::vector<T> &v, int64_t elements) {
    if (v.size() < size_t(elements))
      v.resize(size_t(elements));
    return v.data();
  }
};

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_COLLECTIVES_FLATVIEW_H
