//===- MatmulTest.cpp - cleave_kernel_matmul against naive loops ----------===//
//
// Every transpose combination, batched and shared B, bias, ReLU and
// accumulation, on random shapes and values.
//
//===----------------------------------------------------------------------===//

#include "KernelTestUtils.h"

#include "cleave/kernel_abi.h"

using namespace cleave::rt;
using namespace cleave::rt::test;

namespace {

struct MatmulCase {
  int64_t batch, m, k, n;
  bool transA, transB, bBatched, bias, relu, accumulate;

  nlohmann::json entry(int64_t id) const {
    return {{"id", id},
            {"op", "matmul"},
            {"batch", batch},
            {"m", m},
            {"k", k},
            {"n", n},
            {"trans_a", transA},
            {"trans_b", transB},
            {"b_batched", bBatched},
            {"bias", bias},
            {"activation", relu ? "relu" : "none"},
            {"accumulate", accumulate}};
  }
};

/// c (+)= act(op(a) op(b) + bias) in double; `c0` is C before the call.
Reference referenceMatmul(const MatmulCase &t, const std::vector<float> &a,
                          const std::vector<float> &b,
                          const std::vector<float> &bias,
                          const std::vector<float> &c0) {
  Reference ref(t.batch * t.m * t.n);
  for (int64_t bi = 0; bi < t.batch; ++bi) {
    const float *A = a.data() + bi * t.m * t.k;
    const float *B = b.data() + (t.bBatched ? bi * t.k * t.n : 0);
    for (int64_t i = 0; i < t.m; ++i)
      for (int64_t j = 0; j < t.n; ++j) {
        size_t out = (bi * t.m + i) * t.n + j;
        for (int64_t p = 0; p < t.k; ++p) {
          double av = t.transA ? A[p * t.m + i] : A[i * t.k + p];
          double bv = t.transB ? B[j * t.k + p] : B[p * t.n + j];
          ref.add(out, av * bv);
        }
        if (t.bias)
          ref.add(out, bias[j]);
        if (t.accumulate)
          ref.add(out, c0[out]);
      }
  }
  if (t.relu)
    applyRelu(ref);
  return ref;
}

/// Runs one case through a fresh context and compares with the reference.
void checkMatmul(const MatmulCase &t, std::mt19937 &rng) {
  nlohmann::json kernels = nlohmann::json::array({t.entry(0)});
  SCOPED_TRACE(kernels.dump());
  auto ctx = makeContext(kernels);
  ASSERT_NE(ctx, nullptr);
  auto a = randomVector(t.batch * t.m * t.k, rng);
  auto b = randomVector((t.bBatched ? t.batch : 1) * t.k * t.n, rng);
  auto bias = randomVector(t.n, rng);
  // Accumulation targets hold values well away from zero so that a kernel
  // that overwrites instead of adding cannot pass.
  auto c = randomVector(t.batch * t.m * t.n, rng, 1.f, 3.f);
  Reference ref = referenceMatmul(t, a, b, bias, c);
  cleave_kernel_matmul(ctx.get(), 0, a.data(), b.data(),
                       t.bias ? bias.data() : nullptr, c.data());
  EXPECT_TRUE(matches(c, ref));
}

TEST(Matmul, TransposeAndBatchCombinations) {
  std::mt19937 rng(1);
  for (bool transA : {false, true})
    for (bool transB : {false, true})
      for (bool bBatched : {false, true})
        for (int64_t batch : {1, 3}) {
          MatmulCase t{batch,
                       randomInt(rng, 1, 40),
                       randomInt(rng, 1, 70),
                       randomInt(rng, 1, 40),
                       transA,
                       transB,
                       bBatched,
                       false,
                       false,
                       false};
          checkMatmul(t, rng);
        }
}

TEST(Matmul, BiasAndRelu) {
  std::mt19937 rng(2);
  for (bool transA : {false, true})
    for (bool transB : {false, true})
      for (bool bBatched : {false, true})
        for (bool relu : {false, true}) {
          MatmulCase t{randomInt(rng, 1, 3),
                       randomInt(rng, 1, 33),
                       randomInt(rng, 1, 80),
                       randomInt(rng, 1, 33),
                       transA,
                       transB,
                       bBatched,
                       /*bias=*/!relu || transB,
                       relu,
                       false};
          checkMatmul(t, rng);
        }
}

TEST(Matmul, AccumulateAddsIntoC) {
  std::mt19937 rng(3);
  for (bool transA : {false, true})
    for (bool transB : {false, true})
      for (bool bBatched : {false, true}) {
        MatmulCase t{randomInt(rng, 1, 3),
                     randomInt(rng, 1, 40),
                     randomInt(rng, 1, 70),
                     randomInt(rng, 1, 40),
                     transA,
                     transB,
                     bBatched,
                     false,
                     false,
                     true};
        checkMatmul(t, rng);
      }
}

/// The weight-gradient GEMM of a linear layer, dW += dY^T X, accumulated over
/// several micro-steps into the same buffer: each call adds, none resets.
TEST(Matmul, WeightGradientAccumulatesAcrossCalls) {
  std::mt19937 rng(4);
  MatmulCase t{1, 48, 16, 56, true, false, false, false, false, true};
  auto ctx = makeContext(nlohmann::json::array({t.entry(0)}));
  ASSERT_NE(ctx, nullptr);
  auto acc = randomVector(t.m * t.n, rng, 1.f, 3.f);
  Reference ref(acc.size());
  for (size_t i = 0; i < acc.size(); ++i)
    ref.add(i, acc[i]);
  for (int step = 0; step < 3; ++step) {
    auto dy = randomVector(t.k * t.m, rng);
    auto x = randomVector(t.k * t.n, rng);
    Reference once =
        referenceMatmul(t, dy, x, {}, std::vector<float>(acc.size()));
    for (size_t i = 0; i < acc.size(); ++i) {
      ref.value[i] += once.value[i];
      ref.magnitude[i] += once.magnitude[i];
    }
    cleave_kernel_matmul(ctx.get(), 0, dy.data(), x.data(), nullptr,
                         acc.data());
  }
  EXPECT_TRUE(matches(acc, ref));
}

/// Several kernels in one context share its arena and stream; each keeps its
/// own primitive.
TEST(Matmul, ManyKernelsInOneContext) {
  std::mt19937 rng(5);
  std::vector<MatmulCase> cases;
  nlohmann::json kernels = nlohmann::json::array();
  for (int64_t id = 0; id < 6; ++id) {
    cases.push_back({randomInt(rng, 1, 2), randomInt(rng, 1, 30),
                     randomInt(rng, 1, 50), randomInt(rng, 1, 30), id % 2 == 1,
                     id % 3 == 1, id % 4 == 3, false, false, id == 5});
    kernels.push_back(cases.back().entry(id));
  }
  auto ctx = makeContext(kernels);
  ASSERT_NE(ctx, nullptr);
  EXPECT_EQ(ctx->numKernels(), cases.size());
  for (int repeat = 0; repeat < 2; ++repeat)
    for (int64_t id = 5; id >= 0; --id) {
      const MatmulCase &t = cases[id];
      auto a = randomVector(t.batch * t.m * t.k, rng);
      auto b = randomVector((t.bBatched ? t.batch : 1) * t.k * t.n, rng);
      auto c = randomVector(t.batch * t.m * t.n, rng, 1.f, 3.f);
      Reference ref = referenceMatmul(t, a, b, {}, c);
      cleave_kernel_matmul(ctx.get(), id, a.data(), b.data(), nullptr,
                           c.data());
      EXPECT_TRUE(matches(c, ref)) << "kernel " << id;
    }
}

/// A random case of the bf16 tests with the given transposes and batching:
/// every third `variant` accumulates, the others have a bias, and every
/// second of those a ReLU.
MatmulCase randomBf16Case(std::mt19937 &rng, bool transA, bool transB,
                          bool bBatched, int variant) {
  const bool accumulate = variant % 3 == 0;
  return {randomInt(rng, 1, 3),
          randomInt(rng, 4, 40),
          randomInt(rng, 16, 90),
          randomInt(rng, 4, 40),
          transA,
          transB,
          bBatched,
          /*bias=*/!accumulate,
          /*relu=*/!accumulate && variant % 2 == 0,
          accumulate};
}

/// Random operands of `t`: a, b, bias, and the c it may accumulate into.
struct Operands {
  std::vector<float> a, b, bias, c;
};
Operands randomOperands(const MatmulCase &t, std::mt19937 &rng) {
  return {randomVector(t.batch * t.m * t.k, rng),
          randomVector((t.bBatched ? t.batch : 1) * t.k * t.n, rng),
          randomVector(t.n, rng),
          randomVector(t.batch * t.m * t.n, rng, 1.f, 3.f)};
}

/// `"math": "bf16"`: the kernel must compute exactly (to f32 accumulation
/// error) the product of the bf16-rounded inputs, with bias, ReLU and the
/// accumulated C in f32; within kBf16RelTol of the exact product; and not
/// within f32 tolerance of it (or the entry was not honoured).
TEST(Matmul, Bf16RoundsInputsAndAccumulatesInF32) {
  CLEAVE_SKIP_WITHOUT_BF16();
  std::mt19937 rng(6);
  int variant = 0;
  for (bool transA : {false, true})
    for (bool transB : {false, true})
      for (bool bBatched : {false, true}) {
        MatmulCase t = randomBf16Case(rng, transA, transB, bBatched, ++variant);
        nlohmann::json entry = t.entry(0);
        entry["math"] = "bf16";
        SCOPED_TRACE(entry.dump());
        auto ctx = makeContext(nlohmann::json::array({entry}));
        ASSERT_NE(ctx, nullptr);
        EXPECT_NE(ctx->describeKernel(0).find("bf16 inputs"), std::string::npos)
            << ctx->describeKernel(0);
        auto [a, b, bias, c] = randomOperands(t, rng);
        Reference rounded =
            referenceMatmul(t, roundedToBf16(a), roundedToBf16(b), bias, c);
        Reference exact = referenceMatmul(t, a, b, bias, c);
        cleave_kernel_matmul(ctx.get(), 0, a.data(), b.data(),
                             t.bias ? bias.data() : nullptr, c.data());
        EXPECT_TRUE(matches(c, rounded));
        EXPECT_TRUE(matches(c, exact, kBf16RelTol));
        EXPECT_FALSE(matches(c, exact));
      }
}

/// `"a_type"`/`"b_type": "bf16"`: the kernel reads the operand as the bf16
/// buffer it is (what the generated loop that computed it stored), for every
/// transpose and batching, and computes what the f32-stored entry computes
/// from the same values: the product of the bf16-rounded inputs, to f32
/// accumulation error.
TEST(Matmul, Bf16StoredOperandsAreReadAsStored) {
  CLEAVE_SKIP_WITHOUT_BF16();
  std::mt19937 rng(9);
  int variant = 0;
  for (bool transA : {false, true})
    for (bool transB : {false, true})
      for (bool bBatched : {false, true})
        for (int stored : {1, 2, 3}) {
          const bool aStored = stored & 1, bStored = stored & 2;
          MatmulCase t =
              randomBf16Case(rng, transA, transB, bBatched, ++variant);
          nlohmann::json entry = t.entry(0);
          entry["math"] = "bf16";
          if (aStored)
            entry["a_type"] = "bf16";
          if (bStored)
            entry["b_type"] = "bf16";
          SCOPED_TRACE(entry.dump());
          auto ctx = makeContext(nlohmann::json::array({entry}));
          ASSERT_NE(ctx, nullptr);
          EXPECT_NE(ctx->describeKernel(0).find("stored in bf16"),
                    std::string::npos)
              << ctx->describeKernel(0);
          auto [a, b, bias, c] = randomOperands(t, rng);
          Reference rounded =
              referenceMatmul(t, roundedToBf16(a), roundedToBf16(b), bias, c);
          const std::vector<uint16_t> a16 = bf16Buffer(a), b16 = bf16Buffer(b);
          cleave_kernel_matmul(ctx.get(), 0,
                               aStored ? (const void *)a16.data() : a.data(),
                               bStored ? (const void *)b16.data() : b.data(),
                               t.bias ? bias.data() : nullptr, c.data());
          EXPECT_FALSE(ctx->failed()) << ctx->error().message();
          EXPECT_TRUE(matches(c, rounded));
        }
}

/// A bf16-stored operand needs a bf16 kernel: an f32 one would read its
/// bytes as floats.
TEST(Matmul, Bf16StoredOperandsNeedBf16Math) {
  MatmulCase t{1, 4, 8, 4, false, false, false, false, false, false};
  for (const char *key : {"a_type", "b_type"}) {
    nlohmann::json entry = t.entry(0);
    entry[key] = "bf16";
    std::string error;
    EXPECT_EQ(KernelContext::create(nlohmann::json::array({entry}), error),
              nullptr);
    EXPECT_NE(error.find("needs 'math': 'bf16'"), std::string::npos) << error;
    entry[key] = "f16";
    EXPECT_EQ(KernelContext::create(nlohmann::json::array({entry}), error),
              nullptr);
    EXPECT_NE(error.find("expected one of 'f32', 'bf16'"), std::string::npos)
        << error;
  }
}

/// In a context whose layout cache is on (a session's), a bf16 operand that
/// is a parameter is converted once per parameter generation, not per call,
/// with the same results: the copy is the same rounding of the same values.
TEST(Matmul, Bf16ParametersAreConvertedOncePerGeneration) {
  CLEAVE_SKIP_WITHOUT_BF16();
  std::mt19937 rng(8);
  for (bool transB : {false, true}) {
    MatmulCase t{1,
                 24,
                 40,
                 16,
                 /*transA=*/false,
                 transB,
                 /*bBatched=*/false,
                 /*bias=*/false,
                 /*relu=*/false,
                 /*accumulate=*/false};
    nlohmann::json entry = t.entry(0);
    entry["math"] = "bf16";
    SCOPED_TRACE(entry.dump());
    auto cached = makeContext(nlohmann::json::array({entry}));
    auto plain = makeContext(nlohmann::json::array({entry}));
    ASSERT_TRUE(cached && plain);
    auto a = randomVector(t.m * t.k, rng);
    auto b = randomVector(t.k * t.n, rng);
    cached->enableLayoutCache({{b.data(), b.size() * sizeof(float)}}, {});
    auto run = [&](KernelContext &ctx) {
      std::vector<float> c(t.m * t.n);
      cleave_kernel_matmul(&ctx, 0, a.data(), b.data(), nullptr, c.data());
      EXPECT_FALSE(ctx.failed()) << ctx.error().message();
      return c;
    };
    const std::vector<float> before = run(*plain);
    EXPECT_EQ(run(*cached), before);
    // One bf16 copy of B; A (not a parameter) is staged per call.
    EXPECT_EQ(cached->layoutCacheBytes(), b.size() * 2);
    // A write the cache is not told about is not seen: the kernel really
    // reads the copy...
    for (float &x : b)
      x = -x;
    EXPECT_EQ(run(*cached), before);
    // ...until the parameters' generation moves on.
    cached->parametersChanged();
    EXPECT_EQ(run(*cached), run(*plain));
    EXPECT_NE(run(*plain), before);
    EXPECT_EQ(cached->layoutCacheBytes(), b.size() * 2);
  }
}

// A weight W [out, in] is B transposed in its forward GEMM (x W^T) and B as
// it is in its backward-data GEMM (dy W): both read one bf16 copy, kept in
// W's own layout, and each computes what it does without the cache.
TEST(Matmul, Bf16ForwardAndBackwardDataShareOneWeightCopy) {
  CLEAVE_SKIP_WITHOUT_BF16();
  std::mt19937 rng(9);
  const int64_t rows = 24, in = 40, out = 32;
  auto entry = [&](int64_t id, int64_t k, int64_t n, bool transB) {
    MatmulCase t{1,      rows,  k,     n,     /*transA=*/false,
                 transB, false, false, false, /*accumulate=*/false};
    nlohmann::json e = t.entry(id);
    e["math"] = "bf16";
    return e;
  };
  // 0: [rows, in] x W^T -> [rows, out]; 1: [rows, out] x W -> [rows, in].
  nlohmann::json entries = nlohmann::json::array(
      {entry(0, in, out, /*transB=*/true), entry(1, out, in, false)});
  auto cached = makeContext(entries);
  auto plain = makeContext(entries);
  ASSERT_TRUE(cached && plain);
  auto x = randomVector(rows * in, rng);
  auto dy = randomVector(rows * out, rng);
  auto w = randomVector(out * in, rng);
  cached->enableLayoutCache({{w.data(), w.size() * sizeof(float)}}, {});
  auto run = [&](KernelContext &ctx, int64_t id) {
    std::vector<float> c(rows * (id == 0 ? out : in));
    cleave_kernel_matmul(&ctx, id, id == 0 ? x.data() : dy.data(), w.data(),
                         nullptr, c.data());
    EXPECT_FALSE(ctx.failed()) << ctx.error().message();
    return c;
  };
  EXPECT_EQ(run(*cached, 0), run(*plain, 0));
  EXPECT_EQ(run(*cached, 1), run(*plain, 1));
  EXPECT_EQ(cached->layoutCacheBytes(), w.size() * 2);
  // Both read the copy: a write the cache is not told about is not seen.
  const std::vector<float> forward = run(*plain, 0), backward = run(*plain, 1);
  for (float &v : w)
    v = 2 * v;
  EXPECT_EQ(run(*cached, 0), forward);
  EXPECT_EQ(run(*cached, 1), backward);
}

} // namespace
