//===- LayoutCacheTest.cpp - Blocked copies kept across calls -------------===//
//
// The convolutions of a context whose layout cache is enabled: weights that
// are parameters are reordered once per parameter generation and shared
// between kernels, and accumulated weight gradients are held back in the
// blocked layout until the accumulators are settled. Each result is compared
// with a context without a cache (the per-call staging the kernels did
// before), which the cached copies must reproduce bit for bit.
//
//===----------------------------------------------------------------------===//

#include "KernelTestUtils.h"

#include "cleave/kernel_abi.h"

using namespace cleave::rt;
using namespace cleave::rt::test;
using json = nlohmann::json;

namespace {

/// 16 -> 32 channels, 3x3, padding 1: oneDNN blocks every operand, so every
/// weight and weight gradient is staged.
constexpr int64_t kN = 2, kC = 16, kO = 32, kK = 3;

json conv(int64_t id, const char *op, int64_t hw) {
  return {{"id", id},
          {"op", op},
          {"n", kN},
          {"c", kC},
          {"h", hw},
          {"w", hw},
          {"o", kO},
          {"kh", kK},
          {"kw", kK},
          {"oh", hw},
          {"ow", hw},
          {"strides", {1, 1}},
          {"padding", {1, 1, 1, 1}},
          {"dilations", {1, 1}},
          {"groups", 1}};
}

json forward(int64_t id, int64_t hw) {
  json e = conv(id, "conv2d_fwd", hw);
  e["bias"] = false;
  e["activation"] = "none";
  return e;
}

json backwardWeights(int64_t id, int64_t hw, bool accumulate) {
  json e = conv(id, "conv2d_bwd_weights", hw);
  e["accumulate"] = accumulate;
  return e;
}

size_t activations(int64_t channels, int64_t hw) {
  return size_t(kN * channels * hw * hw);
}
constexpr size_t kWeights = kO * kC * kK * kK;

BufferRange range(const std::vector<float> &v) {
  return {v.data(), v.size() * sizeof(float)};
}

class LayoutCacheTest : public ::testing::Test {
protected:
  void SetUp() override {
    // 0: forward on 8x8, 1: backward data on 8x8, 2: forward on 6x6 (the
    // same weights, another kernel), 3: accumulating backward weights on
    // 8x8, 4: the same overwriting (the reference's gradients).
    json kernels = {forward(0, 8), conv(1, "conv2d_bwd_data", 8), forward(2, 6),
                    backwardWeights(3, 8, true), backwardWeights(4, 8, false)};
    cached_ = makeContext(kernels);
    plain_ = makeContext(kernels);
    ASSERT_TRUE(cached_ && plain_);
    ASSERT_NE(cached_->describeKernel(0).find("3 of 3 operands staged"),
              std::string::npos)
        << cached_->describeKernel(0);
    weights_ = randomVector(kWeights, rng_);
    accumulator_ = randomVector(kWeights, rng_);
    cached_->enableLayoutCache({range(weights_)}, {range(accumulator_)});
  }

  std::vector<float> forwardOf(KernelContext &ctx, int64_t id, int64_t hw,
                               const std::vector<float> &src,
                               const float *weights) {
    std::vector<float> dst(activations(kO, hw));
    cleave_kernel_conv2d_fwd(&ctx, id, src.data(), weights, nullptr,
                             dst.data());
    EXPECT_FALSE(ctx.failed()) << ctx.error().message();
    return dst;
  }
  std::vector<float> backwardDataOf(KernelContext &ctx,
                                    const std::vector<float> &diffDst,
                                    const float *weights) {
    std::vector<float> diffSrc(activations(kC, 8));
    cleave_kernel_conv2d_bwd_data(&ctx, 1, diffDst.data(), weights,
                                  diffSrc.data());
    EXPECT_FALSE(ctx.failed()) << ctx.error().message();
    return diffSrc;
  }
  /// The weight gradient of one micro-batch, from the uncached context.
  std::vector<float> gradientOf(const std::vector<float> &src,
                                const std::vector<float> &diffDst) {
    std::vector<float> grad(kWeights);
    cleave_kernel_conv2d_bwd_weights(plain_.get(), 4, src.data(),
                                     diffDst.data(), grad.data());
    EXPECT_FALSE(plain_->failed()) << plain_->error().message();
    return grad;
  }

  std::mt19937 rng_{21};
  std::unique_ptr<KernelContext> cached_, plain_;
  std::vector<float> weights_, accumulator_;
};

TEST_F(LayoutCacheTest, WeightsAreReorderedOncePerGeneration) {
  auto src = randomVector(activations(kC, 8), rng_);
  auto diffDst = randomVector(activations(kO, 8), rng_);
  const std::vector<float> before = weights_;
  auto fwd = forwardOf(*plain_, 0, 8, src, before.data());
  auto bwd = backwardDataOf(*plain_, diffDst, before.data());
  EXPECT_EQ(forwardOf(*cached_, 0, 8, src, weights_.data()), fwd);
  EXPECT_EQ(backwardDataOf(*cached_, diffDst, weights_.data()), bwd);
  // Two layouts (forward's and backward data's) of one parameter.
  EXPECT_EQ(cached_->layoutCacheBytes(), 2 * kWeights * sizeof(float));

  // A write the cache is not told about is not seen: the kernels really run
  // on the copies made above...
  for (float &w : weights_)
    w = -w;
  EXPECT_EQ(forwardOf(*cached_, 0, 8, src, weights_.data()), fwd);
  EXPECT_EQ(backwardDataOf(*cached_, diffDst, weights_.data()), bwd);
  // ...until the generation moves on.
  cached_->parametersChanged();
  EXPECT_EQ(forwardOf(*cached_, 0, 8, src, weights_.data()),
            forwardOf(*plain_, 0, 8, src, weights_.data()));
  EXPECT_EQ(backwardDataOf(*cached_, diffDst, weights_.data()),
            backwardDataOf(*plain_, diffDst, weights_.data()));
  EXPECT_EQ(cached_->layoutCacheBytes(), 2 * kWeights * sizeof(float));
}

TEST_F(LayoutCacheTest, KernelsReadingOneParameterShareItsCopy) {
  auto src8 = randomVector(activations(kC, 8), rng_);
  auto src6 = randomVector(activations(kC, 6), rng_);
  forwardOf(*cached_, 0, 8, src8, weights_.data());
  for (float &w : weights_)
    w *= 2;
  cached_->parametersChanged();
  // Kernel 2 makes the copy current; kernel 0 then finds it current too.
  EXPECT_EQ(forwardOf(*cached_, 2, 6, src6, weights_.data()),
            forwardOf(*plain_, 2, 6, src6, weights_.data()));
  EXPECT_EQ(forwardOf(*cached_, 0, 8, src8, weights_.data()),
            forwardOf(*plain_, 0, 8, src8, weights_.data()));
  EXPECT_EQ(cached_->layoutCacheBytes(), kWeights * sizeof(float));
}

TEST_F(LayoutCacheTest, OnlyParametersAreCached) {
  // The same values in a buffer that is not a parameter (an activation, a
  // weight computed in the step) are staged on every call.
  std::vector<float> computed = weights_;
  auto src = randomVector(activations(kC, 8), rng_);
  forwardOf(*cached_, 0, 8, src, computed.data());
  for (float &w : computed)
    w += 1;
  EXPECT_EQ(forwardOf(*cached_, 0, 8, src, computed.data()),
            forwardOf(*plain_, 0, 8, src, computed.data()));
  EXPECT_EQ(cached_->layoutCacheBytes(), 0u);
}

TEST_F(LayoutCacheTest, NothingIsCachedDuringAnUpdate) {
  auto src = randomVector(activations(kC, 8), rng_);
  forwardOf(*cached_, 0, 8, src, weights_.data());
  ASSERT_TRUE(cached_->beginParameterUpdate().ok());
  // An entry that writes parameters may read them in between.
  for (float &w : weights_)
    w = 0.5f * w + 0.25f;
  EXPECT_EQ(forwardOf(*cached_, 0, 8, src, weights_.data()),
            forwardOf(*plain_, 0, 8, src, weights_.data()));
  for (float &w : weights_)
    w -= 1;
  cached_->endParameterUpdate();
  EXPECT_EQ(forwardOf(*cached_, 0, 8, src, weights_.data()),
            forwardOf(*plain_, 0, 8, src, weights_.data()));
}

TEST_F(LayoutCacheTest, GradientsAreHeldBackUntilSettled) {
  const std::vector<float> initial = accumulator_;
  Reference want(kWeights);
  for (size_t i = 0; i < kWeights; ++i)
    want.add(i, initial[i]);
  auto microStep = [&] {
    auto src = randomVector(activations(kC, 8), rng_);
    auto diffDst = randomVector(activations(kO, 8), rng_);
    std::vector<float> g = gradientOf(src, diffDst);
    for (size_t i = 0; i < kWeights; ++i)
      want.add(i, g[i]);
    cleave_kernel_conv2d_bwd_weights(cached_.get(), 3, src.data(),
                                     diffDst.data(), accumulator_.data());
    ASSERT_FALSE(cached_->failed()) << cached_->error().message();
  };
  for (int i = 0; i < 3; ++i)
    microStep();
  // Held back: the accumulator has not been touched yet.
  EXPECT_EQ(accumulator_, initial);
  ASSERT_TRUE(cached_->settleAccumulators().ok());
  EXPECT_TRUE(matches(accumulator_, want));
  // Settled sums are empty: the next window starts from the accumulator.
  ASSERT_TRUE(cached_->settleAccumulators().ok());
  EXPECT_TRUE(matches(accumulator_, want));
  microStep();
  ASSERT_TRUE(cached_->beginParameterUpdate().ok());
  EXPECT_TRUE(matches(accumulator_, want));
  cached_->endParameterUpdate();
}

TEST_F(LayoutCacheTest, GradientsIntoOtherBuffersAreAddedAtOnce) {
  std::vector<float> temporary(kWeights, 1.f);
  auto src = randomVector(activations(kC, 8), rng_);
  auto diffDst = randomVector(activations(kO, 8), rng_);
  std::vector<float> g = gradientOf(src, diffDst);
  cleave_kernel_conv2d_bwd_weights(cached_.get(), 3, src.data(), diffDst.data(),
                                   temporary.data());
  Reference want(kWeights);
  for (size_t i = 0; i < kWeights; ++i) {
    want.add(i, 1.0);
    want.add(i, g[i]);
  }
  EXPECT_TRUE(matches(temporary, want));
}

TEST_F(LayoutCacheTest, ReplacedGlobalsDropTheHeldBackGradients) {
  const std::vector<float> initial = accumulator_;
  auto src = randomVector(activations(kC, 8), rng_);
  auto diffDst = randomVector(activations(kO, 8), rng_);
  cleave_kernel_conv2d_bwd_weights(cached_.get(), 3, src.data(), diffDst.data(),
                                   accumulator_.data());
  // A checkpoint's accumulators replace the window's, gradients and all.
  cached_->globalsReplaced();
  ASSERT_TRUE(cached_->settleAccumulators().ok());
  EXPECT_EQ(accumulator_, initial);
}

TEST(LayoutCache, IsOffUntilEnabled) {
  std::mt19937 rng(5);
  auto ctx = makeContext(json::array({forward(0, 8)}));
  ASSERT_NE(ctx, nullptr);
  auto src = randomVector(activations(kC, 8), rng);
  auto weights = randomVector(kWeights, rng);
  std::vector<float> dst(activations(kO, 8));
  cleave_kernel_conv2d_fwd(ctx.get(), 0, src.data(), weights.data(), nullptr,
                           dst.data());
  EXPECT_EQ(ctx->layoutCacheBytes(), 0u);
}

/// A kernel that crops its dead taps (3x3, padding 1, over 1x1 maps: the
/// centre tap alone) asks the cache for the view of its live taps: the
/// parameter's copy holds those alone, made once per generation, and the
/// accumulated gradient is held back and settled into the live taps, the
/// dead ones left as they were.
TEST(LayoutCache, CroppedKernelsCacheTheirLiveTaps) {
  std::mt19937 rng(6);
  json kernels = {forward(0, 1), backwardWeights(1, 1, true),
                  backwardWeights(2, 1, false)};
  auto cached = makeContext(kernels), plain = makeContext(kernels);
  ASSERT_TRUE(cached && plain);
  ASSERT_NE(cached->describeKernel(0).find("taps 1x1 of 3x3"),
            std::string::npos)
      << cached->describeKernel(0);
  std::vector<float> weights = randomVector(kWeights, rng),
                     accumulator = randomVector(kWeights, rng);
  cached->enableLayoutCache({range(weights)}, {range(accumulator)});

  auto src = randomVector(activations(kC, 1), rng);
  auto diffDst = randomVector(activations(kO, 1), rng);
  std::vector<float> want(activations(kO, 1)), got(want.size());
  cleave_kernel_conv2d_fwd(plain.get(), 0, src.data(), weights.data(), nullptr,
                           want.data());
  cleave_kernel_conv2d_fwd(cached.get(), 0, src.data(), weights.data(), nullptr,
                           got.data());
  EXPECT_EQ(got, want);
  // One copy, of the centre taps.
  EXPECT_EQ(cached->layoutCacheBytes(), size_t(kO * kC) * sizeof(float));
  // Not made again within a generation: a write the cache is not told
  // about is not seen.
  for (float &w : weights)
    w = -w;
  cleave_kernel_conv2d_fwd(cached.get(), 0, src.data(), weights.data(), nullptr,
                           got.data());
  EXPECT_EQ(got, want);

  const std::vector<float> initial = accumulator;
  std::vector<float> gradient(kWeights);
  cleave_kernel_conv2d_bwd_weights(plain.get(), 2, src.data(), diffDst.data(),
                                   gradient.data());
  for (int step = 0; step < 2; ++step)
    cleave_kernel_conv2d_bwd_weights(cached.get(), 1, src.data(),
                                     diffDst.data(), accumulator.data());
  ASSERT_FALSE(cached->failed()) << cached->error().message();
  EXPECT_EQ(accumulator, initial) << "held back until settled";
  ASSERT_TRUE(cached->settleAccumulators().ok());
  Reference sum(kWeights);
  for (size_t i = 0; i < kWeights; ++i) {
    sum.add(i, initial[i]);
    sum.add(i, 2.0 * gradient[i]);
    if (i % (kK * kK) != 4) { // a dead tap: no gradient, left as it was
      EXPECT_EQ(accumulator[i], initial[i]) << i;
    }
  }
  EXPECT_TRUE(matches(accumulator, sum));
}

} // namespace
