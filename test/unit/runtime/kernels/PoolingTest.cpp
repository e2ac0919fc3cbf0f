//===- PoolingTest.cpp - The pooling kernels against naive loops ----------===//
//
// Max and average pooling, forward and backward, with strides, asymmetric
// padding, dilation and both count_include_pad settings; and the tie-breaking
// rule of max pooling backward (first maximal element, padding never wins).
//
//===----------------------------------------------------------------------===//

#include "KernelTestUtils.h"

#include "cleave/kernel_abi.h"

#include <limits>

using namespace cleave::rt;
using namespace cleave::rt::test;

namespace {

struct PoolCase {
  int64_t n, c, h, w, kh, kw, sh, sw, pt, pl, pb, pr, dh, dw;
  bool includePad;
  int64_t oh() const { return (h + pt + pb - dh * (kh - 1) - 1) / sh + 1; }
  int64_t ow() const { return (w + pl + pr - dw * (kw - 1) - 1) / sw + 1; }
  size_t srcSize() const { return n * c * h * w; }
  size_t dstSize() const { return n * c * oh() * ow(); }

  nlohmann::json entry(int64_t id, const char *op) const {
    return {{"id", id},
            {"op", op},
            {"n", n},
            {"c", c},
            {"h", h},
            {"w", w},
            {"oh", oh()},
            {"ow", ow()},
            {"kernel", {kh, kw}},
            {"strides", {sh, sw}},
            {"padding", {pt, pl, pb, pr}},
            {"dilations", {dh, dw}},
            {"count_include_pad", includePad}};
  }

  /// Calls `fn(dstIndex, srcIndices)` for every output element with the
  /// source indices of the real (non-padding) taps of its window, in
  /// row-major window order.
  template <typename Fn> void forEachWindow(Fn &&fn) const {
    std::vector<size_t> taps;
    for (int64_t p = 0; p < n * c; ++p)
      for (int64_t y = 0; y < oh(); ++y)
        for (int64_t x = 0; x < ow(); ++x) {
          taps.clear();
          for (int64_t ky = 0; ky < kh; ++ky)
            for (int64_t kx = 0; kx < kw; ++kx) {
              int64_t iy = y * sh - pt + ky * dh, ix = x * sw - pl + kx * dw;
              if (iy >= 0 && iy < h && ix >= 0 && ix < w)
                taps.push_back((p * h + iy) * w + ix);
            }
          fn((p * oh() + y) * ow() + x, taps);
        }
  }

  /// Index of the first maximal tap (the ABI's winner).
  static size_t winner(const std::vector<float> &src,
                       const std::vector<size_t> &taps) {
    size_t best = taps.front();
    for (size_t t : taps)
      if (src[t] > src[best])
        best = t;
    return best;
  }
  /// Average pooling without count_include_pad whose taps are further apart
  /// than the input is long: refused by oneDNN, so by the kernel.
  bool avgExcludeUnsupported() const {
    return (kh > 1 && dh - 1 >= h) || (kw > 1 && dw - 1 >= w);
  }
  double divisor(const std::vector<size_t> &taps) const {
    return includePad ? double(kh * kw) : double(taps.size());
  }
};

/// A random valid pooling: padding up to the window extent minus one, so
/// that windows may hang over both edges, but never a window made only of
/// padding (such entries are rejected, see KernelContextTest).
PoolCase randomPool(std::mt19937 &rng) {
  for (;;) {
    PoolCase t;
    t.n = randomInt(rng, 1, 2);
    t.c = randomInt(rng, 1, 20);
    t.kh = randomInt(rng, 1, 4);
    t.kw = randomInt(rng, 1, 4);
    t.sh = randomInt(rng, 1, 3);
    t.sw = randomInt(rng, 1, 3);
    t.dh = randomInt(rng, 1, 2);
    t.dw = randomInt(rng, 1, 2);
    t.pt = randomInt(rng, 0, t.dh * (t.kh - 1));
    t.pb = randomInt(rng, 0, t.dh * (t.kh - 1));
    t.pl = randomInt(rng, 0, t.dw * (t.kw - 1));
    t.pr = randomInt(rng, 0, t.dw * (t.kw - 1));
    t.h = randomInt(rng, 1, 12);
    t.w = randomInt(rng, 1, 12);
    t.includePad = randomInt(rng, 0, 1) == 1;
    if (t.h + t.pt + t.pb < t.dh * (t.kh - 1) + 1 ||
        t.w + t.pl + t.pr < t.dw * (t.kw - 1) + 1)
      continue;
    bool empty = false;
    t.forEachWindow([&](size_t, const std::vector<size_t> &taps) {
      empty |= taps.empty();
    });
    if (!empty)
      return t;
  }
}

/// Runs the forward and backward kernels of `t` on `src` and checks both
/// against the references.
void checkPool(const PoolCase &t, bool max, const std::vector<float> &src,
               std::mt19937 &rng) {
  nlohmann::json kernels = {
      t.entry(0, max ? "max_pool2d_fwd" : "avg_pool2d_fwd"),
      t.entry(1, max ? "max_pool2d_bwd" : "avg_pool2d_bwd")};
  SCOPED_TRACE(kernels[0].dump());
  auto ctx = makeContext(kernels);
  ASSERT_NE(ctx, nullptr);
  auto diffDst = randomVector(t.dstSize(), rng);
  Reference refDst(t.dstSize()), refSrc(t.srcSize());
  t.forEachWindow([&](size_t d, const std::vector<size_t> &taps) {
    if (max) {
      size_t win = PoolCase::winner(src, taps);
      refDst.add(d, src[win]);
      refSrc.add(win, diffDst[d]);
      return;
    }
    for (size_t s : taps) {
      refDst.add(d, src[s] / t.divisor(taps));
      refSrc.add(s, diffDst[d] / t.divisor(taps));
    }
  });
  std::vector<float> dst(t.dstSize(), 123.f), diffSrc(t.srcSize(), 123.f);
  cleave_kernel_pool_fwd(ctx.get(), 0, src.data(), dst.data());
  cleave_kernel_pool_bwd(ctx.get(), 1, src.data(), diffDst.data(),
                         diffSrc.data());
  EXPECT_TRUE(matches(dst, refDst)) << ctx->describeKernel(0);
  EXPECT_TRUE(matches(diffSrc, refSrc)) << ctx->describeKernel(1);
}

TEST(Pooling, MaxForwardBackward) {
  std::mt19937 rng(21);
  for (int i = 0; i < 16; ++i) {
    PoolCase t = randomPool(rng);
    checkPool(t, /*max=*/true, randomVector(t.srcSize(), rng), rng);
  }
}

TEST(Pooling, AvgForwardBackward) {
  std::mt19937 rng(22);
  for (int i = 0; i < 16; ++i) {
    PoolCase t = randomPool(rng);
    for (bool includePad : {false, true}) {
      t.includePad = includePad;
      if (!includePad && t.avgExcludeUnsupported())
        continue;
      checkPool(t, /*max=*/false, randomVector(t.srcSize(), rng), rng);
    }
  }
}

/// Inputs from {-1, 0, 1} make most windows tie; overlapping windows and
/// padding make the first-maximum rule visible in the gradient.
TEST(Pooling, MaxBackwardTiesGoToFirstMaximum) {
  std::mt19937 rng(23);
  for (int i = 0; i < 16; ++i) {
    PoolCase t = randomPool(rng);
    if (i % 2 == 0)
      t.c = 16; // the jit implementation, beside the NCHW one for odd c
    std::vector<float> src(t.srcSize());
    for (float &v : src)
      v = float(randomInt(rng, -1, 1));
    checkPool(t, /*max=*/true, src, rng);
  }
}

/// The rule spelled out on one 4x4 plane of equal, negative values with a 3x3
/// window, stride 1, padding 1: every window's winner is its first real
/// element, and the padding (which would be 0 > -2) never wins.
TEST(Pooling, MaxTieBreakingExplicit) {
  for (int64_t c : {1, 16}) {
    PoolCase t{1, c, 4, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, false};
    auto ctx = makeContext(
        {t.entry(0, "max_pool2d_fwd"), t.entry(1, "max_pool2d_bwd")});
    ASSERT_NE(ctx, nullptr);
    std::vector<float> src(t.srcSize(), -2.f), dst(t.dstSize());
    std::vector<float> diffDst(t.dstSize(), 0.f), diffSrc(t.srcSize());
    // Output (0,0): window rows/cols -1..1, first real element (0,0).
    // Output (1,1): window rows/cols 0..2, first element (0,0).
    // Output (3,3): window rows/cols 2..4, first element (2,2).
    diffDst[0] = 1.f;
    diffDst[1 * 4 + 1] = 10.f;
    diffDst[3 * 4 + 3] = 100.f;
    cleave_kernel_pool_fwd(ctx.get(), 0, src.data(), dst.data());
    cleave_kernel_pool_bwd(ctx.get(), 1, src.data(), diffDst.data(),
                           diffSrc.data());
    for (int64_t i = 0; i < 16; ++i)
      EXPECT_EQ(dst[i], -2.f) << "padding won output " << i;
    std::vector<float> expected(16, 0.f);
    expected[0] = 11.f;
    expected[2 * 4 + 2] = 100.f;
    for (int64_t i = 0; i < 16; ++i)
      EXPECT_EQ(diffSrc[i], expected[i]) << "c=" << c << " element " << i;
  }
}

/// Average pooling without count_include_pad divides corner windows by their
/// real taps only; with it, by the whole window.
TEST(Pooling, AvgCountIncludePadExplicit) {
  for (bool includePad : {false, true}) {
    PoolCase t{1, 1, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 1, 1, includePad};
    auto ctx =
        makeContext(nlohmann::json::array({t.entry(0, "avg_pool2d_fwd")}));
    ASSERT_NE(ctx, nullptr);
    std::vector<float> src = {1.f, 2.f, 3.f, 4.f}, dst(t.dstSize());
    cleave_kernel_pool_fwd(ctx.get(), 0, src.data(), dst.data());
    // Output (0,0) sees only src[0]; output (1,1) sees all four.
    EXPECT_FLOAT_EQ(dst[0], includePad ? 1.f / 4.f : 1.f);
    EXPECT_FLOAT_EQ(dst[3], 10.f / 4.f);
  }
}

} // namespace
