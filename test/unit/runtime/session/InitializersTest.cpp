//===- InitializersTest.cpp - The seeded generator and initialisers -------===//

#include "Initializers.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

using namespace cleave::rt;

namespace {

TEST(InitializersTest, UniformDrawsAreTheStandardEngineOutput) {
  // The C++ standard fixes the 10000th output of a default-seeded
  // std::mt19937_64 (seed 5489) to 9981545732273789042.
  Generator gen(5489);
  for (int i = 0; i < 9999; ++i)
    gen.uniform01();
  EXPECT_EQ(gen.uniform01(), double(9981545732273789042ull >> 11) * 0x1.0p-53);
}

TEST(InitializersTest, NormalDrawsHaveTheRequestedMoments) {
  Generator gen(1);
  const int n = 20000;
  double sum = 0, sumSq = 0;
  for (int i = 0; i < n; ++i) {
    double v = gen.normal(3.0, 0.5);
    sum += v;
    sumSq += v * v;
  }
  double mean = sum / n;
  double std = std::sqrt(sumSq / n - mean * mean);
  EXPECT_NEAR(mean, 3.0, 0.02);
  EXPECT_NEAR(std, 0.5, 0.02);
}

GlobalDesc makeGlobal(DType dtype, std::vector<int64_t> shape, InitSpec init) {
  GlobalDesc g;
  g.name = "g";
  g.dtype = dtype;
  g.shape = std::move(shape);
  g.numElements = 1;
  for (int64_t d : g.shape)
    g.numElements *= d;
  g.bytes = size_t(g.numElements) * dtypeSize(dtype);
  g.init = init;
  return g;
}

TEST(InitializersTest, DeterministicKinds) {
  Generator gen(0);
  InitSpec zeros;
  zeros.kind = InitKind::zeros;
  float f[4] = {1, 2, 3, 4};
  initializeGlobal(makeGlobal(DType::f32, {4}, zeros), f, gen, nullptr);
  for (float v : f)
    EXPECT_EQ(v, 0.0f);

  InitSpec ones;
  ones.kind = InitKind::ones;
  double d[3] = {};
  initializeGlobal(makeGlobal(DType::f64, {3}, ones), d, gen, nullptr);
  for (double v : d)
    EXPECT_EQ(v, 1.0);

  InitSpec constant;
  constant.kind = InitKind::constant;
  constant.value = -7;
  int32_t i32[2] = {};
  initializeGlobal(makeGlobal(DType::i32, {2}, constant), i32, gen, nullptr);
  EXPECT_EQ(i32[0], -7);
  EXPECT_EQ(i32[1], -7);
  constant.value = 4294967296.0; // 2^32 fits i64 exactly
  int64_t i64 = 0;
  initializeGlobal(makeGlobal(DType::i64, {}, constant), &i64, gen, nullptr);
  EXPECT_EQ(i64, int64_t(1) << 32);

  InitSpec data;
  data.kind = InitKind::data;
  data.offset = 3;
  data.bytes = 8;
  const unsigned char blob[11] = {9, 9, 9, 1, 2, 3, 4, 5, 6, 7, 8};
  unsigned char out[8] = {};
  initializeGlobal(makeGlobal(DType::i32, {2}, data), out, gen, blob);
  EXPECT_EQ(std::memcmp(out, blob + 3, 8), 0);

  // None of these consumed random numbers.
  Generator fresh(0);
  EXPECT_EQ(gen.uniform01(), fresh.uniform01());
}

TEST(InitializersTest, RandomKindsDrawInRowMajorOrderFromOneStream) {
  InitSpec uniform;
  uniform.kind = InitKind::uniform;
  uniform.lo = -0.25;
  uniform.hi = 0.75;
  Generator gen(42), check(42);
  float a[6], b[2];
  initializeGlobal(makeGlobal(DType::f32, {2, 3}, uniform), a, gen, nullptr);
  initializeGlobal(makeGlobal(DType::f32, {2}, uniform), b, gen, nullptr);
  for (float v : a)
    EXPECT_EQ(v, float(check.uniform(-0.25, 0.75)));
  for (float v : b)
    EXPECT_EQ(v, float(check.uniform(-0.25, 0.75)));

  InitSpec normal;
  normal.kind = InitKind::normal;
  normal.mean = 1;
  normal.std = 0; // a degenerate normal is its mean
  double n[3];
  initializeGlobal(makeGlobal(DType::f64, {3}, normal), n, gen, nullptr);
  for (double v : n)
    EXPECT_EQ(v, 1.0);
}

} // namespace
