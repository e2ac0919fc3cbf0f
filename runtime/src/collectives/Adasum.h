//===- Adasum.h - Adaptive summation across ranks ---------------*- C++ -*-===//
//
// Adasum (Maleki et al., "Scaling Distributed Training with Adaptive
// Summation", MLSys 2021): the pairwise operator, its numerics, and the
// vector-halving distance-doubling reduction that applies it per tensor over
// a fixed binary tree of ranks. docs/design/adasum.md defines the tree, the
// folding of non-power-of-two rank counts and the numerics.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_COLLECTIVES_ADASUM_H
#define CLEAVE_RUNTIME_COLLECTIVES_ADASUM_H

#include <cstdint>
#include <vector>

namespace cleave::rt {

class Transport;

/// The three reductions Adasum's coefficients need, accumulated in double.
/// Each product of two floats is exact in double and a sum of them cannot
/// overflow or underflow to zero for any float inputs (see adasum.md), so
/// normA2 == 0 exactly when a is all zeros.
struct DotAndNorms {
  double dot = 0;    ///< a . b
  double normA2 = 0; ///< |a|^2
  double normB2 = 0; ///< |b|^2
};

/// a . b, |a|^2 and |b|^2 of two float vectors of `n` elements.
DotAndNorms dotAndNorms(const float *a, const float *b, int64_t n);

/// Coefficients of adasum(a, b) = ca * a + cb * b.
struct AdasumCoefficients {
  double a = 1;
  double b = 1;
};

/// ca = 1 - a.b / (2 |a|^2), cb = 1 - a.b / (2 |b|^2). A zero vector has no
/// direction, so adasum(0, b) = b, adasum(a, 0) = a and adasum(0, 0) = 0: the
/// coefficient of a zero vector is 0 (its value is irrelevant, 0 avoids the
/// 0/0), and the other one is then exactly 1 because the dot product is 0.
AdasumCoefficients adasumCoefficients(const DotAndNorms &sums);

/// out[i] = float(c.a * a[i] + c.b * b[i]), evaluated in double and rounded
/// once. `out` may alias `a` or `b`.
void adasumCombine(float *out, const float *a, const float *b, int64_t n,
                   AdasumCoefficients c);

/// Scratch memory that adasumAllreduce keeps between calls.
struct AdasumWorkspace {
  std::vector<float> fused;        ///< Packed tensors of one fusion group.
  std::vector<float> peer;         ///< The peer's half (or whole vector).
  std::vector<double> scalars;     ///< 3 per tensor: dot, |left|^2, |right|^2.
  std::vector<double> peerScalars; ///< The same, received.
};

/// Replaces each buffer, on every rank, by the Adasum of that buffer over all
/// ranks, each buffer with its own coefficients, over the tree described in
/// adasum.md. Consecutive tensors whose sizes add up to at most `fusionElems`
/// are packed and reduced together; a larger tensor is reduced in place on
/// its own. Every element of the result is computed on one rank and copied to
/// the others, so all ranks end with bit-identical buffers. Each tree rank
/// sends about 2 (P-1)/P of the data plus 24 bytes per tensor and tree level
/// pair (see adasum.md for the exact count).
void adasumAllreduce(Transport &transport, int64_t count, float *const *buffers,
                     const int64_t *sizes, int64_t fusionElems,
                     AdasumWorkspace &workspace);

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_COLLECTIVES_ADASUM_H
