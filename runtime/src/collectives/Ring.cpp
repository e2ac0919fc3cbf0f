//===- Ring.cpp - Ring reduce-scatter and all-gather ----------------------===//
//
// Implements the ring algorithms and the flat view they walk, for float
// (tensors) and double (scalars such as losses and counts).
//
//===----------------------------------------------------------------------===//

#include "collectives/Ring.h"

#include "collectives/Sharding.h"
#include "collectives/Transport.h"

#include <algorithm>
#include <cstring>

using namespace cleave::rt;

template <typename T>
FlatView<T>::FlatView(int64_t count, T *const *buffers, const int64_t *sizes) {
  offsets_.push_back(0);
  for (int64_t i = 0; i < count; ++i) {
    if (sizes[i] == 0)
      continue;
    buffers_.push_back(buffers[i]);
    offsets_.push_back(offsets_.back() + sizes[i]);
  }
}

template <typename T>
template <typename Fn>
void FlatView<T>::forEachPiece(int64_t begin, int64_t end, Fn fn) const {
  if (begin >= end)
    return;
  // The buffer holding `begin` is the last one starting at or before it.
  size_t i = std::upper_bound(offsets_.begin(), offsets_.end(), begin) -
             offsets_.begin() - 1;
  for (int64_t pos = begin; pos < end; ++i) {
    int64_t pieceEnd = std::min(end, offsets_[i + 1]);
    fn(buffers_[i] + (pos - offsets_[i]), pieceEnd - pos, pos - begin);
    pos = pieceEnd;
  }
}

template <typename T>
T *FlatView<T>::contiguous(int64_t begin, int64_t end) const {
  if (begin >= end)
    return nullptr;
  size_t i = std::upper_bound(offsets_.begin(), offsets_.end(), begin) -
             offsets_.begin() - 1;
  if (end > offsets_[i + 1])
    return nullptr;
  return buffers_[i] + (begin - offsets_[i]);
}

template <typename T>
void FlatView<T>::copyOut(int64_t begin, int64_t end, T *dst) const {
  forEachPiece(begin, end, [&](T *piece, int64_t length, int64_t at) {
    std::memcpy(dst + at, piece, length * sizeof(T));
  });
}

template <typename T>
void FlatView<T>::copyIn(int64_t begin, int64_t end, const T *src) const {
  forEachPiece(begin, end, [&](T *piece, int64_t length, int64_t at) {
    std::memcpy(piece, src + at, length * sizeof(T));
  });
}

template <typename T>
void FlatView<T>::addIn(int64_t begin, int64_t end, const T *src) const {
  forEachPiece(begin, end, [&](T *piece, int64_t length, int64_t at) {
    const T *from = src + at;
    for (int64_t j = 0; j < length; ++j)
      piece[j] += from[j];
  });
}

template <typename T>
void FlatView<T>::divide(int64_t begin, int64_t end, T divisor) const {
  forEachPiece(begin, end, [&](T *piece, int64_t length, int64_t) {
    for (int64_t j = 0; j < length; ++j)
      piece[j] /= divisor;
  });
}

namespace {

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// One ring step: sends view[sendRange] to `dest` and receives
/// view[recvRange] from `source`, adding it in (`accumulate`) or storing it,
/// in pieces of at most `pieceElems` elements. Sender and receiver split a
/// range identically, so piece p of one is piece p of the other.
template <typename T>
void ringStep(Transport &transport, const FlatView<T> &view,
              ShardRange sendRange, int dest, ShardRange recvRange, int source,
              bool accumulate, int64_t pieceElems, RingStaging<T> &staging,
              const char *what) {
  const int64_t pieces = std::max(ceilDiv(sendRange.size(), pieceElems),
                                  ceilDiv(recvRange.size(), pieceElems));
  for (int64_t p = 0; p < pieces; ++p) {
    const int64_t sendBegin =
        std::min(sendRange.end, sendRange.begin + p * pieceElems);
    const int64_t sendEnd = std::min(sendRange.end, sendBegin + pieceElems);
    const int64_t recvBegin =
        std::min(recvRange.end, recvRange.begin + p * pieceElems);
    const int64_t recvEnd = std::min(recvRange.end, recvBegin + pieceElems);

    const T *sendData = view.contiguous(sendBegin, sendEnd);
    if (!sendData && sendEnd > sendBegin) {
      staging.send.resize(
          std::max<size_t>(staging.send.size(), sendEnd - sendBegin));
      view.copyOut(sendBegin, sendEnd, staging.send.data());
      sendData = staging.send.data();
    }
    // A stored piece that lies in one buffer is received straight into it.
    T *recvData = accumulate ? nullptr : view.contiguous(recvBegin, recvEnd);
    const bool staged = !recvData && recvEnd > recvBegin;
    if (staged) {
      staging.recv.resize(
          std::max<size_t>(staging.recv.size(), recvEnd - recvBegin));
      recvData = staging.recv.data();
    }

    transport.exchange(sendData, (sendEnd - sendBegin) * sizeof(T), dest,
                       recvData, (recvEnd - recvBegin) * sizeof(T), source,
                       what);
    if (!staged)
      continue;
    if (accumulate)
      view.addIn(recvBegin, recvEnd, recvData);
    else
      view.copyIn(recvBegin, recvEnd, recvData);
  }
}

/// The shard of the rank `offset` places after this one around the ring
/// (before it when negative).
template <typename T>
ShardRange ringShard(const FlatView<T> &view, const Transport &transport,
                     int offset) {
  const int size = transport.size();
  const int rank = ((transport.rank() + offset) % size + size) % size;
  return shardOf(view.size(), rank, size);
}

} // namespace

template <typename T>
void cleave::rt::ringReduceScatter(Transport &transport,
                                   const FlatView<T> &view, T divisor,
                                   int64_t pieceElems, RingStaging<T> &staging,
                                   const char *what) {
  const int size = transport.size();
  const int rank = transport.rank();
  for (int step = 0; step + 1 < size; ++step)
    ringStep(transport, view, ringShard(view, transport, -step - 1),
             (rank + 1) % size, ringShard(view, transport, -step - 2),
             (rank + size - 1) % size, /*accumulate=*/true, pieceElems,
             staging, what);
  if (divisor != T(1)) {
    ShardRange own = ringShard(view, transport, 0);
    view.divide(own.begin, own.end, divisor);
  }
}

template <typename T>
void cleave::rt::ringAllGather(Transport &transport, const FlatView<T> &view,
                               int64_t pieceElems, RingStaging<T> &staging,
                               const char *what) {
  const int size = transport.size();
  const int rank = transport.rank();
  for (int step = 0; step + 1 < size; ++step)
    ringStep(transport, view, ringShard(view, transport, -step),
             (rank + 1) % size, ringShard(view, transport, -step - 1),
             (rank + size - 1) % size, /*accumulate=*/false, pieceElems,
             staging, what);
}

namespace cleave::rt {
template class FlatView<float>;
template class FlatView<double>;
template void ringReduceScatter<float>(Transport &, const FlatView<float> &,
                                       float, int64_t, RingStaging<float> &,
                                       const char *);
template void ringReduceScatter<double>(Transport &, const FlatView<double> &,
                                        double, int64_t, RingStaging<double> &,
                                        const char *);
template void ringAllGather<float>(Transport &, const FlatView<float> &,
                                   int64_t, RingStaging<float> &, const char *);
template void ringAllGather<double>(Transport &, const FlatView<double> &,
                                    int64_t, RingStaging<double> &,
                                    const char *);
} // namespace cleave::rt
