//===- KernelTestUtils.h - Helpers of the kernel unit tests -----*- C++ -*-===//
//
// Random data, context creation and tolerance-aware comparison against naive
// double-precision reference loops.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_TEST_UNIT_RUNTIME_KERNELS_KERNELTESTUTILS_H
#define CLEAVE_TEST_UNIT_RUNTIME_KERNELS_KERNELTESTUTILS_H

#include "kernels/KernelContext.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace cleave::rt::test {

/// Relative tolerance of every comparison: float accumulation error relative
/// to the sum of the magnitudes of the terms (see Reference).
constexpr double kRelTol = 1e-5;

/// Uniform floats in [lo, hi).
inline std::vector<float> randomVector(size_t n, std::mt19937 &rng,
                                       float lo = -1.f, float hi = 1.f) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(rng);
  return v;
}

/// Uniform integer in [lo, hi].
inline int64_t randomInt(std::mt19937 &rng, int64_t lo, int64_t hi) {
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}

/// Expected values computed in double, with, per element, the sum of the
/// absolute values of everything that was added up to make it. Float results
/// may differ from `value` by a few ulps of `magnitude`, not of `value`
/// (cancellation), so the tolerance scales with `magnitude`.
struct Reference {
  explicit Reference(size_t n) : value(n, 0.0), magnitude(n, 0.0) {}
  void add(size_t i, double term) {
    value[i] += term;
    magnitude[i] += std::fabs(term);
  }
  std::vector<double> value;
  std::vector<double> magnitude;
};

/// Compares `got` with `ref` element by element and reports the first few
/// mismatches with their index.
inline ::testing::AssertionResult matches(const std::vector<float> &got,
                                          const Reference &ref,
                                          double relTol = kRelTol) {
  if (got.size() != ref.value.size())
    return ::testing::AssertionFailure()
           << "size " << got.size() << " != " << ref.value.size();
  size_t bad = 0;
  std::string first;
  for (size_t i = 0; i < got.size(); ++i) {
    double tol = relTol * ref.magnitude[i] + 1e-30;
    double err = std::fabs(double(got[i]) - ref.value[i]);
    if (!(err <= tol)) {
      if (bad < 5)
        first += "\n  [" + std::to_string(i) + "] got " +
                 std::to_string(got[i]) + " expected " +
                 std::to_string(ref.value[i]) + " (tolerance " +
                 std::to_string(tol) + ")";
      ++bad;
    }
  }
  if (bad == 0)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << bad << " of " << got.size() << " elements differ:" << first;
}

/// Creates a context for `kernels`, failing the test with the error if it
/// cannot be created.
inline std::unique_ptr<KernelContext>
makeContext(const nlohmann::json &kernels) {
  std::string error;
  std::unique_ptr<KernelContext> ctx = KernelContext::create(kernels, error);
  EXPECT_NE(ctx, nullptr) << error;
  return ctx;
}

/// ReLU applied to a reference in place (magnitudes unchanged: the
/// pre-activation error bound carries over).
inline void applyRelu(Reference &ref) {
  for (double &v : ref.value)
    v = std::max(v, 0.0);
}

/// Relative tolerance of a bf16 kernel against the exact (unrounded) result:
/// each input is rounded to 8 significant bits (relative error <= 2^-9), so
/// each product is off by at most about 2^-8 of its magnitude; 2^-7 leaves
/// room for the f32 accumulation on top.
constexpr double kBf16RelTol = 0x1p-7;

/// `x` rounded to the nearest bfloat16 (ties to even), as a float: what
/// oneDNN's f32-to-bf16 reorder produces for finite values.
inline float roundToBf16(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  bits &= 0xffff0000u;
  std::memcpy(&x, &bits, sizeof bits);
  return x;
}
inline std::vector<float> roundedToBf16(std::vector<float> v) {
  for (float &x : v)
    x = roundToBf16(x);
  return v;
}

/// `v` as the bf16 buffer a generated loop stores: each element rounded to
/// the nearest bfloat16, its upper 16 bits.
inline std::vector<uint16_t> bf16Buffer(const std::vector<float> &v) {
  std::vector<uint16_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    float r = roundToBf16(v[i]);
    uint32_t bits;
    std::memcpy(&bits, &r, sizeof bits);
    out[i] = uint16_t(bits >> 16);
  }
  return out;
}

/// `v`, a bf16 buffer, widened to floats.
inline std::vector<float> widened(const std::vector<uint16_t> &v) {
  std::vector<float> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    uint32_t bits = uint32_t(v[i]) << 16;
    std::memcpy(&out[i], &bits, sizeof bits);
  }
  return out;
}

/// Whether this CPU has AVX512-BF16, which bf16 kernels need.
inline bool hostHasBf16() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("flags", 0) == 0)
      return line.find(" avx512_bf16") != std::string::npos;
  return false;
}

#define CLEAVE_SKIP_WITHOUT_BF16()                                             \
  do {                                                                         \
    if (!::cleave::rt::test::hostHasBf16())                                    \
      GTEST_SKIP() << "this CPU has no AVX512-BF16 (avx512_bf16 in "          \
                      "/proc/cpuinfo), which bf16 kernels need";               \
  } while (false)

} // namespace cleave::rt::test

#endif // CLEAVE_TEST_UNIT_RUNTIME_KERNELS_KERNELTESTUTILS_H
