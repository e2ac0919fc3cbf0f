//===- AdasumTest.cpp - Adasum operator and distributed conformance -------===//
//
// The operator's numerics on one rank, then the distributed reduction on
// every rank (see MpiGTest.h) against a float64 reference that applies the
// operator in exactly the order docs/design/adasum.md defines. Every rank
// generates every rank's inputs from a seed, so each can compute the
// reference on its own.
//
//===----------------------------------------------------------------------===//

#include "MpiGTest.h"

#include "collectives/Adasum.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

using namespace cleave::rt;
using cleave::rt::test::world;

namespace {

using Vec = std::vector<double>;

/// adasum(a, b) in double, straight from the definition, zero rule included.
Vec referencePair(const Vec &a, const Vec &b) {
  double dot = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    dot += a[i] * b[i];
    aa += a[i] * a[i];
    bb += b[i] * b[i];
  }
  const double ca = aa == 0 ? 0 : 1 - dot / (2 * aa);
  const double cb = bb == 0 ? 0 : 1 - dot / (2 * bb);
  Vec out(a.size());
  for (size_t i = 0; i < a.size(); ++i)
    out[i] = ca * a[i] + cb * b[i];
  return out;
}

/// The documented tree over `perRank[r]` (rank r's vector): with P the
/// largest power of two <= R, rank P + i is first folded into rank i, then
/// the blocks of ranks [i, i + d) and [i + d, i + 2d) are combined for
/// d = 1, 2, 4, ... < P, the lower block on the left.
Vec referenceTree(std::vector<Vec> perRank) {
  const int size = int(perRank.size());
  int tree = 1;
  while (tree * 2 <= size)
    tree *= 2;
  for (int r = tree; r < size; ++r)
    perRank[r - tree] = referencePair(perRank[r - tree], perRank[r]);
  for (int d = 1; d < tree; d *= 2)
    for (int i = 0; i < tree; i += 2 * d)
      perRank[i] = referencePair(perRank[i], perRank[i + d]);
  return perRank[0];
}

/// Rank `rank`'s tensor `tensor`: uniform in [-scale, scale).
std::vector<float> randomTensor(uint64_t seed, int rank, int tensor, int64_t n,
                                double scale) {
  std::mt19937_64 generator(seed * 1000003 + rank * 1009 + tensor);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  std::vector<float> values(n);
  for (float &x : values)
    x = static_cast<float>(uniform(generator) * scale);
  return values;
}

Vec toDouble(const std::vector<float> &values) {
  return Vec(values.begin(), values.end());
}

/// Runs Adasum over this rank's tensors, in place.
void reduceAdasum(std::vector<std::vector<float>> &tensors) {
  std::vector<float *> pointers;
  std::vector<int64_t> sizes;
  for (auto &tensor : tensors) {
    pointers.push_back(tensor.data());
    sizes.push_back(int64_t(tensor.size()));
  }
  world().reduceInPlace(ReduceKind::Adasum, int64_t(tensors.size()),
                        pointers.data(), sizes.data());
}

/// Number of elements that are not finite or differ from the reference by
/// more than `relative` times the reference's largest magnitude.
int64_t countMismatches(const std::vector<float> &got, const Vec &reference,
                        double relative) {
  double scale = 0;
  for (double x : reference)
    scale = std::max(scale, std::fabs(x));
  int64_t wrong = 0;
  for (size_t i = 0; i < got.size(); ++i)
    wrong += !std::isfinite(got[i]) ||
             std::fabs(got[i] - reference[i]) > relative * scale;
  return wrong;
}

/// The reference Adasum of tensor `tensor` over all ranks' random inputs.
Vec randomReference(uint64_t seed, int tensor, int64_t n, double scale) {
  std::vector<Vec> perRank;
  for (int r = 0; r < world().size(); ++r)
    perRank.push_back(toDouble(randomTensor(seed, r, tensor, n, scale)));
  return referenceTree(perRank);
}

/// Bytes rank `rank` of `size` sends for one fusion group of `length`
/// elements in `tensors` tensors, following the schedule in adasum.md.
uint64_t expectedAdasumBytes(int64_t length, int64_t tensors, int rank,
                             int size) {
  if (size == 1 || length == 0)
    return 0;
  int tree = 1;
  while (tree * 2 <= size)
    tree *= 2;
  if (rank >= tree)
    return 4 * uint64_t(length); // Its whole vector, once.
  uint64_t bytes = rank < size - tree ? 4 * uint64_t(length) : 0;
  std::vector<std::pair<int64_t, int64_t>> parents;
  int64_t lo = 0, hi = length;
  int level = 0;
  for (int d = 1; d < tree; d *= 2, ++level) {
    const int64_t mid = lo + (hi - lo) / 2;
    const bool isLeft = (rank & d) == 0;
    bytes += 4 * uint64_t(isLeft ? hi - mid : mid - lo);
    bytes += 24 * uint64_t(tensors) * (level + 1);
    parents.push_back({lo, hi});
    if (isLeft)
      hi = mid;
    else
      lo = mid;
  }
  for (; !parents.empty(); parents.pop_back()) {
    bytes += 4 * uint64_t(hi - lo);
    lo = parents.back().first;
    hi = parents.back().second;
  }
  return bytes;
}

//===----------------------------------------------------------------------===//
// The operator (local).
//===----------------------------------------------------------------------===//

TEST(AdasumOperator, DotAndNormsMatchNaiveDoubleSums) {
  for (int64_t n : {0, 1, 7, 8, 9, 17, 1001}) {
    std::vector<float> a = randomTensor(1, 0, 0, n, 3.0);
    std::vector<float> b = randomTensor(1, 1, 0, n, 0.5);
    double dot = 0, aa = 0, bb = 0;
    for (int64_t i = 0; i < n; ++i) {
      dot += double(a[i]) * b[i];
      aa += double(a[i]) * a[i];
      bb += double(b[i]) * b[i];
    }
    DotAndNorms s = dotAndNorms(a.data(), b.data(), n);
    EXPECT_NEAR(s.dot, dot, 1e-12 * (std::fabs(dot) + 1)) << n;
    EXPECT_NEAR(s.normA2, aa, 1e-12 * (aa + 1)) << n;
    EXPECT_NEAR(s.normB2, bb, 1e-12 * (bb + 1)) << n;
  }
}

TEST(AdasumOperator, ZeroVectorsHaveNoDirection) {
  DotAndNorms zeroA;
  zeroA.normB2 = 4;
  AdasumCoefficients c = adasumCoefficients(zeroA);
  EXPECT_EQ(c.a, 0);
  EXPECT_EQ(c.b, 1);

  DotAndNorms zeroB;
  zeroB.normA2 = 4;
  c = adasumCoefficients(zeroB);
  EXPECT_EQ(c.a, 1);
  EXPECT_EQ(c.b, 0);

  c = adasumCoefficients(DotAndNorms());
  EXPECT_EQ(c.a, 0);
  EXPECT_EQ(c.b, 0);
}

TEST(AdasumOperator, ClassicIdentities) {
  const std::vector<float> a = {1.0f, -2.0f, 3.0f, 0.25f, 5.0f};
  std::vector<float> minusA(a.size()), out(a.size());
  for (size_t i = 0; i < a.size(); ++i)
    minusA[i] = -a[i];

  // adasum(a, a) = a: both coefficients are exactly 1/2.
  adasumCombine(out.data(), a.data(), a.data(), 5,
                adasumCoefficients(dotAndNorms(a.data(), a.data(), 5)));
  EXPECT_EQ(out, a);

  // adasum(a, -a) = 0: both coefficients are exactly 3/2.
  adasumCombine(out.data(), a.data(), minusA.data(), 5,
                adasumCoefficients(dotAndNorms(a.data(), minusA.data(), 5)));
  EXPECT_EQ(out, std::vector<float>(5, 0.0f));

  // Orthogonal vectors add.
  const std::vector<float> x = {1.0f, 0.0f, 2.0f}, y = {0.0f, 3.0f, 0.0f};
  std::vector<float> sum(3);
  adasumCombine(sum.data(), x.data(), y.data(), 3,
                adasumCoefficients(dotAndNorms(x.data(), y.data(), 3)));
  EXPECT_EQ(sum, (std::vector<float>{1.0f, 3.0f, 2.0f}));
}

// The extremes of float32: the double sums neither overflow nor underflow.
TEST(AdasumOperator, ExtremeMagnitudesStayFinite) {
  const float huge = 3.0e38f, tiny = 1.0e-45f; // Near FLT_MAX; a subnormal.
  const std::vector<float> a = {huge, huge, -huge}, b = {tiny, 0.0f, tiny};
  DotAndNorms s = dotAndNorms(a.data(), b.data(), 3);
  EXPECT_TRUE(std::isfinite(s.normA2));
  EXPECT_GT(s.normB2, 0.0);
  AdasumCoefficients c = adasumCoefficients(s);
  EXPECT_TRUE(std::isfinite(c.a) && std::isfinite(c.b));
  std::vector<float> out(3);
  adasumCombine(out.data(), a.data(), b.data(), 3, c);
  for (float x : out)
    EXPECT_TRUE(std::isfinite(x));
}

//===----------------------------------------------------------------------===//
// The distributed reduction (every rank).
//===----------------------------------------------------------------------===//

/// Odd, even, single-element and empty tensors in one call.
const std::vector<int64_t> kSizes = {1, 7, 1001, 64, 0, 2};

TEST(Adasum, MatchesFloat64ReferenceTree) {
  // The default fusion buffer reduces all tensors in one group; 64 bytes
  // splits them into several groups and reduces the 1001-element one alone,
  // in place. The result is the same per-tensor Adasum either way.
  for (int64_t fusionBytes : {int64_t(16) << 20, int64_t(64)}) {
    cleave::rt::test::ScopedFusionBuffer fusion(fusionBytes);
    std::vector<std::vector<float>> tensors;
    for (size_t t = 0; t < kSizes.size(); ++t)
      tensors.push_back(randomTensor(7, world().rank(), int(t), kSizes[t], 1));
    reduceAdasum(tensors);
    for (size_t t = 0; t < kSizes.size(); ++t)
      EXPECT_EQ(countMismatches(tensors[t],
                                randomReference(7, int(t), kSizes[t], 1), 1e-6),
                0)
          << "tensor " << t << " of " << kSizes[t]
          << " elements, fusion buffer " << fusionBytes;
  }
}

TEST(Adasum, OrthogonalInputsGiveTheirSum) {
  const int rank = world().rank(), size = world().size();
  for (int64_t n : {int64_t(1), int64_t(7), int64_t(1001)}) {
    // Rank r owns the elements j with j % R == r: disjoint supports keep
    // every partial result orthogonal to the other subtree's, at every level.
    std::vector<std::vector<float>> tensors(1, std::vector<float>(n, 0.0f));
    for (int64_t j = rank; j < n; j += size)
      tensors[0][j] = float(j % 13) + 0.5f;
    reduceAdasum(tensors);
    int64_t wrong = 0;
    for (int64_t j = 0; j < n; ++j)
      wrong += tensors[0][j] != float(j % 13) + 0.5f;
    EXPECT_EQ(wrong, 0) << n << " elements";
  }
}

TEST(Adasum, IdenticalInputsGiveThemBack) {
  for (int64_t n : {int64_t(1), int64_t(7), int64_t(1001)}) {
    const std::vector<float> shared = randomTensor(11, 0, 0, n, 2.0);
    std::vector<std::vector<float>> tensors(1, shared);
    reduceAdasum(tensors);
    EXPECT_EQ(tensors[0], shared) << n << " elements";
  }
}

// One identical, one orthogonal and one random tensor in one call: a shared
// coefficient could not return both the identical tensor and the orthogonal
// sum.
TEST(Adasum, EachTensorGetsItsOwnCoefficients) {
  const int rank = world().rank(), size = world().size();
  for (int64_t fusionBytes : {int64_t(16) << 20, int64_t(40)}) {
    cleave::rt::test::ScopedFusionBuffer fusion(fusionBytes);
    const std::vector<float> shared = randomTensor(3, 0, 0, 9, 1.0);
    std::vector<float> orthogonal(10, 0.0f);
    for (int64_t j = rank; j < 10; j += size)
      orthogonal[j] = float(j + 1);
    std::vector<std::vector<float>> tensors = {
        shared, orthogonal, randomTensor(3, rank, 2, 33, 1.0)};
    reduceAdasum(tensors);

    EXPECT_EQ(tensors[0], shared) << "fusion buffer " << fusionBytes;
    for (int64_t j = 0; j < 10; ++j)
      EXPECT_EQ(tensors[1][j], float(j + 1)) << "fusion " << fusionBytes;
    EXPECT_EQ(countMismatches(tensors[2], randomReference(3, 2, 33, 1.0), 1e-6),
              0)
        << "fusion buffer " << fusionBytes;
  }
}

TEST(Adasum, TinyAndHugeMagnitudes) {
  for (double scale : {1e-30, 1e30}) {
    std::vector<std::vector<float>> tensors;
    for (size_t t = 0; t < kSizes.size(); ++t)
      tensors.push_back(
          randomTensor(5, world().rank(), int(t), kSizes[t], scale));
    reduceAdasum(tensors);
    for (size_t t = 0; t < kSizes.size(); ++t)
      EXPECT_EQ(countMismatches(tensors[t],
                                randomReference(5, int(t), kSizes[t], scale),
                                1e-6),
                0)
          << "tensor " << t << " at scale " << scale;
  }
}

// Ranks whose deltas differ by 60 orders of magnitude: the coefficient of
// the tiny vector is huge, and must still produce finite, accurate values.
TEST(Adasum, MixedMagnitudesAcrossRanks) {
  const int size = world().size();
  auto scaleOf = [](int rank) { return rank % 2 ? 1e-30 : 1e30; };
  std::vector<std::vector<float>> tensors = {
      randomTensor(9, world().rank(), 0, 101, scaleOf(world().rank()))};
  reduceAdasum(tensors);
  std::vector<Vec> perRank;
  for (int r = 0; r < size; ++r)
    perRank.push_back(toDouble(randomTensor(9, r, 0, 101, scaleOf(r))));
  EXPECT_EQ(countMismatches(tensors[0], referenceTree(perRank), 1e-6), 0);
}

TEST(Adasum, ZeroTensorsGiveNoNaN) {
  const int rank = world().rank(), size = world().size();
  // All zero: the result is zero.
  std::vector<std::vector<float>> zeros(1, std::vector<float>(7, 0.0f));
  reduceAdasum(zeros);
  EXPECT_EQ(zeros[0], std::vector<float>(7, 0.0f));

  // Even ranks zero: they drop out, adasum(0, b) = b.
  std::vector<std::vector<float>> some = {
      rank % 2 ? randomTensor(13, rank, 0, 7, 1.0) : std::vector<float>(7)};
  reduceAdasum(some);
  std::vector<Vec> perRank;
  for (int r = 0; r < size; ++r)
    perRank.push_back(r % 2 ? toDouble(randomTensor(13, r, 0, 7, 1.0))
                            : Vec(7, 0.0));
  EXPECT_EQ(countMismatches(some[0], referenceTree(perRank), 1e-6), 0);
}

TEST(Adasum, BytesFollowTheSchedule) {
  std::vector<std::vector<float>> tensors;
  int64_t total = 0;
  for (size_t t = 0; t < kSizes.size(); ++t) {
    tensors.push_back(randomTensor(17, world().rank(), int(t), kSizes[t], 1));
    total += kSizes[t];
  }
  world().resetByteCount();
  reduceAdasum(tensors);
  const uint64_t sent = world().bytesSent();
  EXPECT_EQ(sent, expectedAdasumBytes(total, int64_t(kSizes.size()),
                                      world().rank(), world().size()));
  // O(data), not O(data log R): at most twice the data (a folding partner
  // sends the whole vector back on top of its tree traffic) plus the
  // scalars, 24 bytes per tensor and level pair (3 pairs for up to 4 ranks).
  EXPECT_LE(sent, 2 * 4 * uint64_t(total) + 24 * kSizes.size() * 3);
}

} // namespace
