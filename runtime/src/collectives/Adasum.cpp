//===- Adasum.cpp - Adaptive summation across ranks -----------------------===//
//
// Implements the Adasum operator and its distributed vector-halving,
// distance-doubling reduction (after Horovod's FusedAllreduce, extended with
// a folding step for rank counts that are not a power of two).
//
//===----------------------------------------------------------------------===//

#include "collectives/Adasum.h"

#include "collectives/Transport.h"

#include <algorithm>
#include <cstring>

using namespace cleave::rt;

namespace {

constexpr const char *kWhat = "adasum";

/// Independent partial sums per quantity. They give the compiler vector
/// lanes to work with (a single double accumulator cannot be reassociated
/// without -ffast-math) and a fixed, platform-independent summation order.
constexpr int kLanes = 8;

} // namespace

DotAndNorms cleave::rt::dotAndNorms(const float *a, const float *b, int64_t n) {
  double dot[kLanes] = {}, normA[kLanes] = {}, normB[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int lane = 0; lane < kLanes; ++lane) {
      const double x = a[i + lane], y = b[i + lane];
      dot[lane] += x * y;
      normA[lane] += x * x;
      normB[lane] += y * y;
    }
  }
  for (int lane = 0; i < n; ++i, ++lane) {
    const double x = a[i], y = b[i];
    dot[lane] += x * y;
    normA[lane] += x * x;
    normB[lane] += y * y;
  }
  DotAndNorms sums;
  for (int lane = 0; lane < kLanes; ++lane) {
    sums.dot += dot[lane];
    sums.normA2 += normA[lane];
    sums.normB2 += normB[lane];
  }
  return sums;
}

AdasumCoefficients cleave::rt::adasumCoefficients(const DotAndNorms &sums) {
  AdasumCoefficients c;
  c.a = sums.normA2 == 0 ? 0.0 : 1.0 - sums.dot / (2.0 * sums.normA2);
  c.b = sums.normB2 == 0 ? 0.0 : 1.0 - sums.dot / (2.0 * sums.normB2);
  return c;
}

void cleave::rt::adasumCombine(float *out, const float *a, const float *b,
                               int64_t n, AdasumCoefficients c) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = static_cast<float>(c.a * static_cast<double>(a[i]) +
                                c.b * static_cast<double>(b[i]));
}

namespace {

/// Adasum of one fusion group: `data` holds `offsets.back()` floats, tensor i
/// being [offsets[i], offsets[i+1]). See adasum.md for the schedule.
void adasumGroup(Transport &transport, float *data,
                 const std::vector<int64_t> &offsets,
                 AdasumWorkspace &workspace) {
  const int size = transport.size();
  const int rank = transport.rank();
  const int64_t length = offsets.back();
  const int64_t bytes = length * static_cast<int64_t>(sizeof(float));
  const size_t tensors = offsets.size() - 1;

  int treeSize = 1;
  while (treeSize * 2 <= size)
    treeSize *= 2;
  const int folded = size - treeSize;

  // Folding: rank P + i hands its vector to rank i, which combines the pair
  // before the tree runs, and gets the final result back afterwards.
  if (rank >= treeSize) {
    transport.send(data, bytes, rank - treeSize, kWhat);
    transport.recv(data, bytes, rank - treeSize, kWhat);
    return;
  }
  std::vector<float> &peer = workspace.peer;
  if (rank < folded) {
    peer.resize(std::max<size_t>(peer.size(), length));
    transport.recv(peer.data(), bytes, rank + treeSize, kWhat);
    for (size_t t = 0; t < tensors; ++t) {
      const int64_t begin = offsets[t], n = offsets[t + 1] - begin;
      const AdasumCoefficients c =
          adasumCoefficients(dotAndNorms(data + begin, peer.data() + begin, n));
      adasumCombine(data + begin, data + begin, peer.data() + begin, n, c);
    }
  }

  // Reduce phase (vector halving, distance doubling). Entering the level of
  // distance d, the block of d ranks containing this one holds the Adasum of
  // its subtree, split over the block; [lo, hi) is this rank's part. The
  // partner r ^ d holds the same range of the neighbouring block's result.
  // The lower rank keeps the first half, the upper one the second, and the
  // 2d ranks of the merged block add up their per-tensor partial sums so
  // that each sees the full dot product and norms.
  std::vector<double> &scalars = workspace.scalars;
  std::vector<double> &peerScalars = workspace.peerScalars;
  std::vector<int64_t> parentLo, parentHi;
  int64_t lo = 0, hi = length;
  for (int d = 1; d < treeSize; d <<= 1) {
    const int partner = rank ^ d;
    const bool isLeft = (rank & d) == 0;
    const int64_t mid = lo + (hi - lo) / 2;
    const int64_t keepLo = isLeft ? lo : mid, keepHi = isLeft ? mid : hi;
    const int64_t giveLo = isLeft ? mid : lo, giveHi = isLeft ? hi : mid;
    peer.resize(std::max<size_t>(peer.size(), keepHi - keepLo));
    transport.exchange(data + giveLo, (giveHi - giveLo) * sizeof(float),
                       partner, peer.data(), (keepHi - keepLo) * sizeof(float),
                       partner, kWhat);

    // "left" is always the lower block's vector, whichever rank holds it, so
    // that the group's sums add like with like.
    scalars.assign(3 * tensors, 0.0);
    for (size_t t = 0; t < tensors; ++t) {
      const int64_t begin = std::max(offsets[t], keepLo);
      const int64_t end = std::min(offsets[t + 1], keepHi);
      if (begin >= end)
        continue;
      const float *mine = data + begin;
      const float *theirs = peer.data() + (begin - keepLo);
      const DotAndNorms s = isLeft ? dotAndNorms(mine, theirs, end - begin)
                                   : dotAndNorms(theirs, mine, end - begin);
      scalars[3 * t] = s.dot;
      scalars[3 * t + 1] = s.normA2;
      scalars[3 * t + 2] = s.normB2;
    }

    // Recursive doubling over the 2d ranks of the merged block. The lower
    // half's sum always goes first, so every rank gets bit-identical
    // coefficients.
    peerScalars.resize(scalars.size());
    const int64_t scalarBytes = scalars.size() * sizeof(double);
    for (int j = 1; j <= d; j <<= 1) {
      transport.exchange(scalars.data(), scalarBytes, rank ^ j,
                         peerScalars.data(), scalarBytes, rank ^ j, kWhat);
      const bool lower = (rank & j) == 0;
      for (size_t k = 0; k < scalars.size(); ++k)
        scalars[k] =
            lower ? scalars[k] + peerScalars[k] : peerScalars[k] + scalars[k];
    }

    for (size_t t = 0; t < tensors; ++t) {
      const int64_t begin = std::max(offsets[t], keepLo);
      const int64_t end = std::min(offsets[t + 1], keepHi);
      if (begin >= end)
        continue;
      DotAndNorms s;
      s.dot = scalars[3 * t];
      s.normA2 = scalars[3 * t + 1];
      s.normB2 = scalars[3 * t + 2];
      const AdasumCoefficients c = adasumCoefficients(s);
      float *mine = data + begin;
      const float *theirs = peer.data() + (begin - keepLo);
      if (isLeft)
        adasumCombine(mine, mine, theirs, end - begin, c);
      else
        adasumCombine(mine, theirs, mine, end - begin, c);
    }
    parentLo.push_back(lo);
    parentHi.push_back(hi);
    lo = keepLo;
    hi = keepHi;
  }

  // Gather phase (vector doubling, distance halving): undo the halving,
  // each pair swapping the parts of their common range, until every tree
  // rank holds the whole result.
  for (int d = treeSize / 2; d >= 1; d >>= 1) {
    const int64_t plo = parentLo.back(), phi = parentHi.back();
    parentLo.pop_back();
    parentHi.pop_back();
    const bool isLeft = (rank & d) == 0;
    const int64_t otherLo = isLeft ? hi : plo, otherHi = isLeft ? phi : lo;
    transport.exchange(data + lo, (hi - lo) * sizeof(float), rank ^ d,
                       data + otherLo, (otherHi - otherLo) * sizeof(float),
                       rank ^ d, kWhat);
    lo = plo;
    hi = phi;
  }

  if (rank < folded)
    transport.send(data, bytes, rank + treeSize, kWhat);
}

} // namespace

void cleave::rt::adasumAllreduce(Transport &transport, int64_t count,
                                 float *const *buffers, const int64_t *sizes,
                                 int64_t fusionElems,
                                 AdasumWorkspace &workspace) {
  std::vector<int64_t> offsets;
  for (int64_t first = 0; first < count;) {
    // The group is [first, last): as many tensors as fit the fusion buffer,
    // and at least one.
    int64_t last = first + 1;
    int64_t total = sizes[first];
    while (last < count && total + sizes[last] <= fusionElems)
      total += sizes[last++];

    offsets.assign(1, 0);
    for (int64_t t = first; t < last; ++t)
      offsets.push_back(offsets.back() + sizes[t]);
    if (total == 0) {
      first = last;
      continue;
    }
    if (last - first == 1) {
      adasumGroup(transport, buffers[first], offsets, workspace);
    } else {
      workspace.fused.resize(std::max<size_t>(workspace.fused.size(), total));
      float *fused = workspace.fused.data();
      for (int64_t t = first; t < last; ++t)
        if (sizes[t] > 0)
          std::memcpy(fused + offsets[t - first], buffers[t],
                      sizes[t] * sizeof(float));
      adasumGroup(transport, fused, offsets, workspace);
      for (int64_t t = first; t < last; ++t)
        if (sizes[t] > 0)
          std::memcpy(buffers[t], fused + offsets[t - first],
                      sizes[t] * sizeof(float));
    }
    first = last;
  }
}
