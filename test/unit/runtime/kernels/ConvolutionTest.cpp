//===- ConvolutionTest.cpp - The conv2d kernels against naive loops -------===//
//
// Forward (bias, ReLU), backward data and backward weights (overwrite and
// accumulate) with strides, asymmetric padding, dilation and groups, through
// both layout policies of the kernel (oneDNN's blocked layouts with staging
// reorders, and plain NCHW).
//
//===----------------------------------------------------------------------===//

#include "KernelTestUtils.h"

#include "cleave/kernel_abi.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>

using namespace cleave::rt;
using namespace cleave::rt::test;

namespace {

struct ConvCase {
  int64_t n, c, h, w, o, kh, kw;
  int64_t sh, sw, pt, pl, pb, pr, dh, dw, groups;
  int64_t oh() const { return (h + pt + pb - dh * (kh - 1) - 1) / sh + 1; }
  int64_t ow() const { return (w + pl + pr - dw * (kw - 1) - 1) / sw + 1; }
  int64_t cg() const { return c / groups; }
  int64_t og() const { return o / groups; }
  size_t srcSize() const { return n * c * h * w; }
  size_t weiSize() const { return o * cg() * kh * kw; }
  size_t dstSize() const { return n * o * oh() * ow(); }

  nlohmann::json entry(int64_t id, const char *op) const {
    return {{"id", id},
            {"op", op},
            {"n", n},
            {"c", c},
            {"h", h},
            {"w", w},
            {"o", o},
            {"kh", kh},
            {"kw", kw},
            {"oh", oh()},
            {"ow", ow()},
            {"strides", {sh, sw}},
            {"padding", {pt, pl, pb, pr}},
            {"dilations", {dh, dw}},
            {"groups", groups}};
  }

  /// Calls `fn(srcIndex, weiIndex, dstIndex)` for every multiply of the
  /// convolution: the one loop nest all three references share.
  template <typename Fn> void forEachTap(Fn &&fn) const {
    for (int64_t b = 0; b < n; ++b)
      for (int64_t oc = 0; oc < o; ++oc) {
        int64_t g = oc / og();
        for (int64_t y = 0; y < oh(); ++y)
          for (int64_t x = 0; x < ow(); ++x)
            for (int64_t ci = 0; ci < cg(); ++ci)
              for (int64_t ky = 0; ky < kh; ++ky)
                for (int64_t kx = 0; kx < kw; ++kx) {
                  int64_t iy = y * sh - pt + ky * dh;
                  int64_t ix = x * sw - pl + kx * dw;
                  if (iy < 0 || iy >= h || ix < 0 || ix >= w)
                    continue;
                  int64_t ic = g * cg() + ci;
                  fn(((b * c + ic) * h + iy) * w + ix,
                     ((oc * cg() + ci) * kh + ky) * kw + kx,
                     ((b * o + oc) * oh() + y) * ow() + x);
                }
      }
  }
};

/// A random valid convolution; `c`/`o` per group and `groups` as given.
ConvCase randomConv(std::mt19937 &rng, int64_t groups, int64_t cg, int64_t og) {
  ConvCase t;
  t.n = randomInt(rng, 1, 3);
  t.groups = groups;
  t.c = groups * cg;
  t.o = groups * og;
  t.kh = randomInt(rng, 1, 4);
  t.kw = randomInt(rng, 1, 4);
  t.sh = randomInt(rng, 1, 3);
  t.sw = randomInt(rng, 1, 3);
  t.dh = randomInt(rng, 1, 2);
  t.dw = randomInt(rng, 1, 2);
  t.pt = randomInt(rng, 0, t.kh - 1);
  t.pb = randomInt(rng, 0, t.kh - 1);
  t.pl = randomInt(rng, 0, t.kw - 1);
  t.pr = randomInt(rng, 0, t.kw - 1);
  t.h = randomInt(rng, t.dh * (t.kh - 1) + 1, 13);
  t.w = randomInt(rng, t.dw * (t.kw - 1) + 1, 13);
  return t;
}

/// (groups, channels per group in, out) covering plain layouts (1 input
/// channel), blocked layouts (multiples of 16) and odd sizes in between.
const int64_t kChannelConfigs[][3] = {{1, 1, 8},  {1, 3, 5},  {1, 16, 16},
                                      {2, 8, 16}, {3, 2, 3},  {4, 4, 4},
                                      {16, 1, 1}, {1, 32, 24}};

TEST(Convolution, ForwardWithBiasAndRelu) {
  std::mt19937 rng(11);
  int variant = 0;
  for (const auto &cfg : kChannelConfigs)
    for (int repeat = 0; repeat < 2; ++repeat, ++variant) {
      ConvCase t = randomConv(rng, cfg[0], cfg[1], cfg[2]);
      bool bias = variant % 2 == 0, relu = variant % 3 != 1;
      nlohmann::json entry = t.entry(0, "conv2d_fwd");
      entry["bias"] = bias;
      entry["activation"] = relu ? "relu" : "none";
      SCOPED_TRACE(entry.dump());
      auto ctx = makeContext(nlohmann::json::array({entry}));
      ASSERT_NE(ctx, nullptr);
      auto src = randomVector(t.srcSize(), rng);
      auto wei = randomVector(t.weiSize(), rng);
      auto b = randomVector(t.o, rng);
      std::vector<float> dst(t.dstSize(), 123.f);
      Reference ref(t.dstSize());
      t.forEachTap([&](size_t s, size_t wi, size_t d) {
        ref.add(d, double(src[s]) * wei[wi]);
      });
      if (bias)
        for (size_t d = 0; d < dst.size(); ++d)
          ref.add(d, b[(d / (t.oh() * t.ow())) % t.o]);
      if (relu)
        applyRelu(ref);
      cleave_kernel_conv2d_fwd(ctx.get(), 0, src.data(), wei.data(),
                               bias ? b.data() : nullptr, dst.data());
      EXPECT_TRUE(matches(dst, ref)) << ctx->describeKernel(0);
    }
}

TEST(Convolution, BackwardData) {
  std::mt19937 rng(12);
  for (const auto &cfg : kChannelConfigs)
    for (int repeat = 0; repeat < 2; ++repeat) {
      ConvCase t = randomConv(rng, cfg[0], cfg[1], cfg[2]);
      nlohmann::json entry = t.entry(0, "conv2d_bwd_data");
      SCOPED_TRACE(entry.dump());
      auto ctx = makeContext(nlohmann::json::array({entry}));
      ASSERT_NE(ctx, nullptr);
      auto diffDst = randomVector(t.dstSize(), rng);
      auto wei = randomVector(t.weiSize(), rng);
      // Overwritten, including elements no window reads (they get 0).
      std::vector<float> diffSrc(t.srcSize(), 123.f);
      Reference ref(t.srcSize());
      t.forEachTap([&](size_t s, size_t wi, size_t d) {
        ref.add(s, double(diffDst[d]) * wei[wi]);
      });
      cleave_kernel_conv2d_bwd_data(ctx.get(), 0, diffDst.data(), wei.data(),
                                    diffSrc.data());
      EXPECT_TRUE(matches(diffSrc, ref)) << ctx->describeKernel(0);
    }
}

TEST(Convolution, BackwardWeightsOverwriteAndAccumulate) {
  std::mt19937 rng(13);
  for (const auto &cfg : kChannelConfigs)
    for (bool accumulate : {false, true}) {
      ConvCase t = randomConv(rng, cfg[0], cfg[1], cfg[2]);
      nlohmann::json entry = t.entry(0, "conv2d_bwd_weights");
      entry["accumulate"] = accumulate;
      SCOPED_TRACE(entry.dump());
      auto ctx = makeContext(nlohmann::json::array({entry}));
      ASSERT_NE(ctx, nullptr);
      auto src = randomVector(t.srcSize(), rng);
      auto diffDst = randomVector(t.dstSize(), rng);
      auto diffWei = randomVector(t.weiSize(), rng, 1.f, 3.f);
      Reference ref(t.weiSize());
      if (accumulate)
        for (size_t i = 0; i < diffWei.size(); ++i)
          ref.add(i, diffWei[i]);
      t.forEachTap([&](size_t s, size_t wi, size_t d) {
        ref.add(wi, double(src[s]) * diffDst[d]);
      });
      cleave_kernel_conv2d_bwd_weights(ctx.get(), 0, src.data(), diffDst.data(),
                                       diffWei.data());
      EXPECT_TRUE(matches(diffWei, ref)) << ctx->describeKernel(0);
    }
}

/// The layout policy: oneDNN's blocked layouts (staged through reorders) for
/// 16-channel tensors, plain NCHW when blocking would pad a 1-channel
/// gradient 16-fold. Both paths are the ones the numeric tests above run.
TEST(Convolution, LayoutPolicy) {
  ConvCase wide{2, 16, 10, 10, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  ConvCase image{2, 1, 10, 10, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  nlohmann::json kernels = {wide.entry(0, "conv2d_bwd_data"),
                            image.entry(1, "conv2d_bwd_data")};
  auto ctx = makeContext(kernels);
  ASSERT_NE(ctx, nullptr);
  EXPECT_NE(ctx->describeKernel(0).find("oneDNN's layouts, 3 of 3"),
            std::string::npos)
      << ctx->describeKernel(0);
  EXPECT_NE(ctx->describeKernel(1).find("plain layouts, 0 of 3"),
            std::string::npos)
      << ctx->describeKernel(1);
  // The staging copies live in the shared arena.
  EXPECT_GE(ctx->arenaBytes(), (wide.srcSize() + wide.dstSize()) * 4);
}

/// A forward, its data gradient and its accumulated weight gradient in one
/// context, called in training order several times: kernels share the arena,
/// so each must leave nothing behind that another relies on.
TEST(Convolution, TrainingSequenceSharesArena) {
  std::mt19937 rng(14);
  ConvCase t{2, 16, 9, 9, 32, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1};
  nlohmann::json fwd = t.entry(0, "conv2d_fwd");
  fwd["bias"] = false;
  fwd["activation"] = "none";
  nlohmann::json bwdW = t.entry(2, "conv2d_bwd_weights");
  bwdW["accumulate"] = true;
  auto ctx = makeContext({fwd, t.entry(1, "conv2d_bwd_data"), bwdW});
  ASSERT_NE(ctx, nullptr);
  std::vector<float> diffWei(t.weiSize(), 0.f);
  Reference refWei(t.weiSize());
  for (int step = 0; step < 3; ++step) {
    auto src = randomVector(t.srcSize(), rng);
    auto wei = randomVector(t.weiSize(), rng);
    auto diffDst = randomVector(t.dstSize(), rng);
    std::vector<float> dst(t.dstSize()), diffSrc(t.srcSize());
    Reference refDst(t.dstSize()), refSrc(t.srcSize());
    t.forEachTap([&](size_t s, size_t wi, size_t d) {
      refDst.add(d, double(src[s]) * wei[wi]);
      refSrc.add(s, double(diffDst[d]) * wei[wi]);
      refWei.add(wi, double(src[s]) * diffDst[d]);
    });
    cleave_kernel_conv2d_fwd(ctx.get(), 0, src.data(), wei.data(), nullptr,
                             dst.data());
    cleave_kernel_conv2d_bwd_data(ctx.get(), 1, diffDst.data(), wei.data(),
                                  diffSrc.data());
    cleave_kernel_conv2d_bwd_weights(ctx.get(), 2, src.data(), diffDst.data(),
                                     diffWei.data());
    EXPECT_TRUE(matches(dst, refDst)) << "step " << step;
    EXPECT_TRUE(matches(diffSrc, refSrc)) << "step " << step;
    EXPECT_TRUE(matches(diffWei, refWei)) << "step " << step;
  }
}

/// The bf16 tests' cases: {batch, input channels, output channels} of a
/// random convolution, with a 3x3 window, padding 1, on 8x8 inputs (blocked
/// layouts at 16 channels, plain ones below).
constexpr int64_t kBf16Configs[][3] = {{1, 16, 16}, {1, 3, 8}, {2, 8, 16}};

ConvCase bf16Conv(std::mt19937 &rng, const int64_t (&cfg)[3]) {
  ConvCase t = randomConv(rng, cfg[0], cfg[1], cfg[2]);
  t.kh = t.kw = 3;
  t.dh = t.dw = 1;
  t.pt = t.pl = t.pb = t.pr = 1;
  t.h = t.w = 8;
  return t;
}

/// `t`'s three directions multiplying in bf16, ids 0 to 2: forward with a
/// bias and `activation`, backward-data, accumulating backward-weights.
std::vector<nlohmann::json> bf16Entries(const ConvCase &t,
                                        const char *activation) {
  nlohmann::json fwd = t.entry(0, "conv2d_fwd");
  fwd["bias"] = true;
  fwd["activation"] = activation;
  nlohmann::json bwdData = t.entry(1, "conv2d_bwd_data");
  nlohmann::json bwdW = t.entry(2, "conv2d_bwd_weights");
  bwdW["accumulate"] = true;
  std::vector<nlohmann::json> entries = {fwd, bwdData, bwdW};
  for (nlohmann::json &e : entries)
    e["math"] = "bf16";
  return entries;
}

/// Random operands of `t`'s three directions, and the weight gradient they
/// accumulate into.
struct ConvOperands {
  std::vector<float> src, wei, bias, diffDst, diffWei;
};
ConvOperands randomOperands(const ConvCase &t, std::mt19937 &rng) {
  return {randomVector(t.srcSize(), rng), randomVector(t.weiSize(), rng),
          randomVector(t.o, rng), randomVector(t.dstSize(), rng),
          randomVector(t.weiSize(), rng, 1.f, 3.f)};
}

/// `ref` allowing for the result being rounded once to bf16 (2^-8
/// relative), as a kernel that writes a bf16 result rounds it.
Reference roundedOnceToBf16(Reference ref) {
  for (size_t i = 0; i < ref.value.size(); ++i)
    ref.magnitude[i] += std::ldexp(std::fabs(ref.value[i]), -8) / kRelTol;
  return ref;
}

/// `"math": "bf16"` in all three directions, blocked and plain layouts:
/// the result is (to f32 accumulation error) the convolution of the
/// bf16-rounded inputs, the accumulated weight gradient adds into the f32
/// buffer, and the result is within kBf16RelTol of the exact one but not
/// within f32 tolerance of it.
TEST(Convolution, Bf16RoundsInputsAndAccumulatesInF32) {
  CLEAVE_SKIP_WITHOUT_BF16();
  std::mt19937 rng(15);
  for (const auto &cfg : kBf16Configs) {
    ConvCase t = bf16Conv(rng, cfg);
    std::vector<nlohmann::json> entries = bf16Entries(t, "none");
    SCOPED_TRACE(entries[0].dump());
    auto ctx = makeContext(entries);
    ASSERT_NE(ctx, nullptr);
    for (int64_t id = 0; id < 3; ++id)
      EXPECT_NE(ctx->describeKernel(id).find("bf16 inputs"), std::string::npos)
          << ctx->describeKernel(id);

    auto [src, wei, bias, diffDst, diffWei] = randomOperands(t, rng);
    std::vector<float> rSrc = roundedToBf16(src), rWei = roundedToBf16(wei),
                       rDiffDst = roundedToBf16(diffDst);
    // [0]: from the rounded inputs, [1]: exact.
    Reference dst[2] = {Reference(t.dstSize()), Reference(t.dstSize())};
    Reference dSrc[2] = {Reference(t.srcSize()), Reference(t.srcSize())};
    Reference dWei[2] = {Reference(t.weiSize()), Reference(t.weiSize())};
    for (int r = 0; r < 2; ++r) {
      const std::vector<float> &s = r ? src : rSrc, &w = r ? wei : rWei,
                               &dd = r ? diffDst : rDiffDst;
      for (size_t i = 0; i < diffWei.size(); ++i)
        dWei[r].add(i, diffWei[i]);
      for (size_t d = 0; d < t.dstSize(); ++d)
        dst[r].add(d, bias[(d / (t.oh() * t.ow())) % t.o]);
      t.forEachTap([&](size_t si, size_t wi, size_t di) {
        dst[r].add(di, double(s[si]) * w[wi]);
        dSrc[r].add(si, double(dd[di]) * w[wi]);
        dWei[r].add(wi, double(s[si]) * dd[di]);
      });
    }
    std::vector<float> out(t.dstSize()), outSrc(t.srcSize());
    cleave_kernel_conv2d_fwd(ctx.get(), 0, src.data(), wei.data(), bias.data(),
                             out.data());
    cleave_kernel_conv2d_bwd_data(ctx.get(), 1, diffDst.data(), wei.data(),
                                  outSrc.data());
    cleave_kernel_conv2d_bwd_weights(ctx.get(), 2, src.data(), diffDst.data(),
                                     diffWei.data());
    for (auto [got, refs, name] :
         {std::tuple{&out, dst, "fwd"}, std::tuple{&outSrc, dSrc, "bwd_data"},
          std::tuple{&diffWei, dWei, "bwd_weights"}}) {
      EXPECT_TRUE(matches(*got, refs[0])) << name;
      EXPECT_TRUE(matches(*got, refs[1], kBf16RelTol)) << name;
      EXPECT_FALSE(matches(*got, refs[1])) << name;
    }
  }
}

/// `"src_type"`/`"diff_dst_type": "bf16"`: the three directions read those
/// inputs as the bf16 buffers they are (blocked and plain layouts) and
/// compute the convolutions of the bf16-rounded values in f32.
TEST(Convolution, Bf16StoredInputsAreReadAsStored) {
  CLEAVE_SKIP_WITHOUT_BF16();
  std::mt19937 rng(16);
  for (const auto &cfg : kBf16Configs) {
    ConvCase t = bf16Conv(rng, cfg);
    std::vector<nlohmann::json> entries = bf16Entries(t, "relu");
    entries[0]["src_type"] = "bf16";
    entries[1]["diff_dst_type"] = "bf16";
    entries[2]["src_type"] = "bf16";
    entries[2]["diff_dst_type"] = "bf16";
    SCOPED_TRACE(entries[0].dump());
    auto ctx = makeContext(entries);
    ASSERT_NE(ctx, nullptr);
    for (int64_t id = 0; id < 3; ++id)
      EXPECT_NE(ctx->describeKernel(id).find("stored in bf16"),
                std::string::npos)
          << ctx->describeKernel(id);

    auto [src, wei, bias, diffDst, diffWei] = randomOperands(t, rng);
    std::vector<float> rSrc = roundedToBf16(src), rWei = roundedToBf16(wei),
                       rDiffDst = roundedToBf16(diffDst);
    Reference dst(t.dstSize()), dSrc(t.srcSize()), dWei(t.weiSize());
    for (size_t i = 0; i < diffWei.size(); ++i)
      dWei.add(i, diffWei[i]);
    for (size_t d = 0; d < t.dstSize(); ++d)
      dst.add(d, bias[(d / (t.oh() * t.ow())) % t.o]);
    t.forEachTap([&](size_t si, size_t wi, size_t di) {
      dst.add(di, double(rSrc[si]) * rWei[wi]);
      dSrc.add(si, double(rDiffDst[di]) * rWei[wi]);
      dWei.add(wi, double(rSrc[si]) * rDiffDst[di]);
    });
    applyRelu(dst);
    const std::vector<uint16_t> src16 = bf16Buffer(src),
                                diffDst16 = bf16Buffer(diffDst);
    std::vector<float> out(t.dstSize()), outSrc(t.srcSize());
    cleave_kernel_conv2d_fwd(ctx.get(), 0, src16.data(), wei.data(),
                             bias.data(), out.data());
    cleave_kernel_conv2d_bwd_data(ctx.get(), 1, diffDst16.data(), wei.data(),
                                  outSrc.data());
    cleave_kernel_conv2d_bwd_weights(ctx.get(), 2, src16.data(),
                                     diffDst16.data(), diffWei.data());
    EXPECT_FALSE(ctx->failed()) << ctx->error().message();
    EXPECT_TRUE(matches(out, dst)) << "fwd";
    EXPECT_TRUE(matches(outSrc, dSrc)) << "bwd_data";
    EXPECT_TRUE(matches(diffWei, dWei)) << "bwd_weights";
  }
}

/// Every operand stored in bf16, as cleave-compile makes a cuda artifact's
/// convolutions (`wei_type` and `dst_type` too; run here by the cuda
/// pipeline's host tests): the weights are read as stored and the result is
/// written in bf16, the f32 sum of the bf16 products rounded once. So the
/// result is within a bf16 rounding (2^-8 relative) of the convolution of
/// the rounded inputs, but not within f32 tolerance of it everywhere.
TEST(Convolution, Bf16StoredWeightsAndResults) {
  CLEAVE_SKIP_WITHOUT_BF16();
  std::mt19937 rng(17);
  for (const auto &cfg : kBf16Configs) {
    ConvCase t = bf16Conv(rng, cfg);
    std::vector<nlohmann::json> entries = bf16Entries(t, "none");
    entries[0]["bias"] = false;
    entries[2]["accumulate"] = false;
    for (nlohmann::json &e : entries)
      e["dst_type"] = "bf16";
    entries[0]["src_type"] = entries[0]["wei_type"] = "bf16";
    entries[1]["diff_dst_type"] = entries[1]["wei_type"] = "bf16";
    entries[2]["src_type"] = entries[2]["diff_dst_type"] = "bf16";
    SCOPED_TRACE(entries[0].dump());
    auto ctx = makeContext(entries);
    ASSERT_NE(ctx, nullptr);

    auto [src, wei, bias, diffDst, diffWei] = randomOperands(t, rng);
    std::vector<float> rSrc = roundedToBf16(src), rWei = roundedToBf16(wei),
                       rDiffDst = roundedToBf16(diffDst);
    Reference dst(t.dstSize()), dSrc(t.srcSize()), dWei(t.weiSize());
    t.forEachTap([&](size_t si, size_t wi, size_t di) {
      dst.add(di, double(rSrc[si]) * rWei[wi]);
      dSrc.add(si, double(rDiffDst[di]) * rWei[wi]);
      dWei.add(wi, double(rSrc[si]) * rDiffDst[di]);
    });
    const std::vector<uint16_t> src16 = bf16Buffer(src),
                                wei16 = bf16Buffer(wei),
                                diffDst16 = bf16Buffer(diffDst);
    std::vector<uint16_t> out(t.dstSize()), outSrc(t.srcSize()),
        outWei(t.weiSize());
    cleave_kernel_conv2d_fwd(ctx.get(), 0, src16.data(), wei16.data(), nullptr,
                             out.data());
    cleave_kernel_conv2d_bwd_data(ctx.get(), 1, diffDst16.data(), wei16.data(),
                                  outSrc.data());
    cleave_kernel_conv2d_bwd_weights(ctx.get(), 2, src16.data(),
                                     diffDst16.data(), outWei.data());
    EXPECT_FALSE(ctx->failed()) << ctx->error().message();
    for (auto [got, ref, name] :
         {std::tuple{widened(out), &dst, "fwd"},
          std::tuple{widened(outSrc), &dSrc, "bwd_data"},
          std::tuple{widened(outWei), &dWei, "bwd_weights"}}) {
      EXPECT_TRUE(matches(got, roundedOnceToBf16(*ref))) << name;
      EXPECT_FALSE(matches(got, *ref)) << name << ": not rounded to bf16";
    }
  }
}

/// A result stored in bf16 would round an accumulated sum, and the bias and
/// activation belong to the loop that widens it: such entries are refused,
/// as is a bf16 weight or result in an f32-math kernel.
TEST(Convolution, Bf16ResultsTakeNoAccumulateBiasOrActivation) {
  ConvCase t{1, 2, 5, 5, 2, 3, 3, 1, 1, 0, 0, 0, 0, 1, 1, 1};
  nlohmann::json fwd = t.entry(0, "conv2d_fwd");
  fwd["bias"] = false;
  fwd["activation"] = "relu";
  fwd["math"] = "bf16";
  fwd["dst_type"] = "bf16";
  nlohmann::json bwdW = t.entry(0, "conv2d_bwd_weights");
  bwdW["accumulate"] = true;
  bwdW["math"] = "bf16";
  bwdW["dst_type"] = "bf16";
  nlohmann::json f32 = t.entry(0, "conv2d_bwd_data");
  f32["wei_type"] = "bf16";
  for (auto [entry, message] :
       {std::pair{fwd, "a result stored in bf16 ('dst_type') cannot take the "
                       "entry's bias or activation"},
        std::pair{bwdW, "cannot take the entry's 'accumulate' (the sum would "
                        "be rounded)"},
        std::pair{f32, "needs 'math': 'bf16'"}}) {
    std::string error;
    EXPECT_EQ(KernelContext::create(nlohmann::json::array({entry}), error),
              nullptr);
    EXPECT_NE(error.find(message), std::string::npos) << error;
  }
}

/// Convolutions whose kernel has taps that meet only padding, whichever
/// output is computed: the kernel convolves with the live taps alone
/// (Convolution.cpp, "Dead taps"). Each case: the three directions against
/// the naive loops, the weight gradient both overwritten (a dead tap's is
/// written 0) and accumulated (a dead tap's is left as it was).
const ConvCase kCroppedCases[] = {
    // n  c  h  w   o kh kw sh sw pt pl pb pr dh dw groups
    // The centre tap alone, resnet18's last 3x3 convolutions on 32x32
    // images (blocked layouts).
    {2, 16, 1, 1, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},
    // Stride 2 from a 2x2 map: the bottom-right 2x2 taps.
    {2, 16, 2, 2, 32, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1},
    // Rows only, plain layouts (8 channels).
    {1, 3, 1, 5, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},
    // Asymmetric padding and groups: rows 1-4 of 5, the middle column.
    {2, 4, 2, 1, 6, 5, 3, 1, 1, 3, 1, 2, 1, 1, 1, 2},
    // A corner tap, all the padding on one side in each dimension.
    {1, 16, 1, 1, 16, 3, 3, 1, 1, 2, 0, 0, 2, 1, 1, 1},
    // Dilation 2 over 2 rows: taps 1 and 2 of 3 reach rows 0 and 2 of the
    // padded input (padding 2), and tap 0 only padding.
    {1, 2, 2, 3, 4, 3, 1, 1, 1, 2, 0, 2, 0, 2, 1, 1},
};

/// "taps RxC of KHxKW": the live taps' rectangle, from the reference loops
/// (the taps any multiply goes through).
std::string cropOf(const ConvCase &t) {
  int64_t rows[2] = {t.kh, -1}, cols[2] = {t.kw, -1};
  t.forEachTap([&](size_t, size_t wi, size_t) {
    int64_t ky = (wi / t.kw) % t.kh, kx = wi % t.kw;
    rows[0] = std::min(rows[0], ky);
    rows[1] = std::max(rows[1], ky);
    cols[0] = std::min(cols[0], kx);
    cols[1] = std::max(cols[1], kx);
  });
  return "taps " + std::to_string(rows[1] - rows[0] + 1) + "x" +
         std::to_string(cols[1] - cols[0] + 1) + " of " + std::to_string(t.kh) +
         "x" + std::to_string(t.kw);
}

TEST(Convolution, DeadTapsAreCropped) {
  std::mt19937 rng(18);
  for (const ConvCase &t : kCroppedCases) {
    nlohmann::json fwd = t.entry(0, "conv2d_fwd");
    fwd["bias"] = true;
    fwd["activation"] = "none";
    nlohmann::json bwdData = t.entry(1, "conv2d_bwd_data");
    nlohmann::json overwrite = t.entry(2, "conv2d_bwd_weights");
    overwrite["accumulate"] = false;
    nlohmann::json accumulate = t.entry(3, "conv2d_bwd_weights");
    accumulate["accumulate"] = true;
    SCOPED_TRACE(fwd.dump());
    auto ctx = makeContext({fwd, bwdData, overwrite, accumulate});
    ASSERT_NE(ctx, nullptr);
    const std::string crop = cropOf(t);
    ASSERT_NE(crop, "taps " + std::to_string(t.kh) + "x" +
                        std::to_string(t.kw) + " of " + std::to_string(t.kh) +
                        "x" + std::to_string(t.kw))
        << "not a case with dead taps";
    for (int64_t id = 0; id < 4; ++id)
      EXPECT_NE(ctx->describeKernel(id).find(crop), std::string::npos)
          << ctx->describeKernel(id) << " (want " << crop << ")";

    // Named references: a lambda may not capture structured bindings in
    // C++17 (clang refuses).
    const ConvOperands ops = randomOperands(t, rng);
    const std::vector<float> &src = ops.src, &wei = ops.wei, &bias = ops.bias,
                             &diffDst = ops.diffDst, &diffWei = ops.diffWei;
    Reference dst(t.dstSize()), dSrc(t.srcSize()), dWei(t.weiSize()),
        dWeiAcc(t.weiSize());
    for (size_t d = 0; d < t.dstSize(); ++d)
      dst.add(d, bias[(d / (t.oh() * t.ow())) % t.o]);
    for (size_t i = 0; i < diffWei.size(); ++i)
      dWeiAcc.add(i, diffWei[i]);
    t.forEachTap([&](size_t si, size_t wi, size_t di) {
      dst.add(di, double(src[si]) * wei[wi]);
      dSrc.add(si, double(diffDst[di]) * wei[wi]);
      dWei.add(wi, double(src[si]) * diffDst[di]);
      dWeiAcc.add(wi, double(src[si]) * diffDst[di]);
    });
    std::vector<float> out(t.dstSize(), 123.f), outSrc(t.srcSize(), 123.f),
        outWei(t.weiSize(), 123.f), accWei = diffWei;
    cleave_kernel_conv2d_fwd(ctx.get(), 0, src.data(), wei.data(), bias.data(),
                             out.data());
    cleave_kernel_conv2d_bwd_data(ctx.get(), 1, diffDst.data(), wei.data(),
                                  outSrc.data());
    cleave_kernel_conv2d_bwd_weights(ctx.get(), 2, src.data(), diffDst.data(),
                                     outWei.data());
    cleave_kernel_conv2d_bwd_weights(ctx.get(), 3, src.data(), diffDst.data(),
                                     accWei.data());
    ASSERT_FALSE(ctx->failed()) << ctx->error().message();
    EXPECT_TRUE(matches(out, dst)) << "fwd";
    EXPECT_TRUE(matches(outSrc, dSrc)) << "bwd_data";
    EXPECT_TRUE(matches(outWei, dWei)) << "bwd_weights, overwritten";
    EXPECT_TRUE(matches(accWei, dWeiAcc)) << "bwd_weights, accumulated";
  }
}

/// The same with bf16 operands stored as such (`wei_type`, `dst_type`): the
/// view of the live taps steps over 2-byte elements, and an overwritten bf16
/// weight gradient gets bf16 zeros at its dead taps.
TEST(Convolution, DeadTapsOfBf16WeightsAreCropped) {
  CLEAVE_SKIP_WITHOUT_BF16();
  std::mt19937 rng(19);
  for (const ConvCase &t : kCroppedCases) {
    if (t.c / t.groups < 2)
      continue; // oneDNN's bf16 convolutions want channel pairs
    nlohmann::json fwd = t.entry(0, "conv2d_fwd");
    fwd["bias"] = false;
    fwd["activation"] = "none";
    nlohmann::json bwdData = t.entry(1, "conv2d_bwd_data");
    nlohmann::json bwdW = t.entry(2, "conv2d_bwd_weights");
    bwdW["accumulate"] = false;
    std::vector<nlohmann::json> entries = {fwd, bwdData, bwdW};
    for (nlohmann::json &e : entries)
      e["math"] = "bf16";
    entries[0]["wei_type"] = entries[1]["wei_type"] = "bf16";
    entries[2]["dst_type"] = "bf16";
    SCOPED_TRACE(fwd.dump());
    auto ctx = makeContext(entries);
    ASSERT_NE(ctx, nullptr);
    for (int64_t id = 0; id < 3; ++id)
      EXPECT_NE(ctx->describeKernel(id).find(cropOf(t)), std::string::npos)
          << ctx->describeKernel(id);

    auto [src, wei, bias, diffDst, diffWei] = randomOperands(t, rng);
    std::vector<float> rSrc = roundedToBf16(src), rWei = roundedToBf16(wei),
                       rDiffDst = roundedToBf16(diffDst);
    Reference dst(t.dstSize()), dSrc(t.srcSize()), dWei(t.weiSize());
    t.forEachTap([&](size_t si, size_t wi, size_t di) {
      dst.add(di, double(rSrc[si]) * rWei[wi]);
      dSrc.add(si, double(rDiffDst[di]) * rWei[wi]);
      dWei.add(wi, double(rSrc[si]) * rDiffDst[di]);
    });
    const std::vector<uint16_t> wei16 = bf16Buffer(wei);
    std::vector<float> out(t.dstSize()), outSrc(t.srcSize());
    std::vector<uint16_t> outWei(t.weiSize(), 0x4000); // 2.0
    cleave_kernel_conv2d_fwd(ctx.get(), 0, src.data(), wei16.data(), nullptr,
                             out.data());
    cleave_kernel_conv2d_bwd_data(ctx.get(), 1, diffDst.data(), wei16.data(),
                                  outSrc.data());
    cleave_kernel_conv2d_bwd_weights(ctx.get(), 2, src.data(), diffDst.data(),
                                     outWei.data());
    ASSERT_FALSE(ctx->failed()) << ctx->error().message();
    EXPECT_TRUE(matches(out, dst)) << "fwd";
    EXPECT_TRUE(matches(outSrc, dSrc)) << "bwd_data";
    EXPECT_TRUE(matches(widened(outWei), roundedOnceToBf16(dWei)))
        << "bwd_weights";
  }
}

/// Only activations' padding sends a convolution to plain layouts: LeNet's
/// second convolution's backward data in bf16 (6 channels) keeps oneDNN's
/// layouts, though on AMX oneDNN pads the weights' 6 channels to 32 (there
/// the plain GEMM convolution was 5x slower), and computes the gradient of
/// the rounded inputs.
TEST(Convolution, PaddedWeightsAloneKeepBlockedLayouts) {
  CLEAVE_SKIP_WITHOUT_BF16();
  std::mt19937 rng(20);
  ConvCase t{4, 6, 14, 14, 16, 5, 5, 1, 1, 0, 0, 0, 0, 1, 1, 1};
  nlohmann::json entry = t.entry(0, "conv2d_bwd_data");
  entry["math"] = "bf16";
  auto ctx = makeContext(nlohmann::json::array({entry}));
  ASSERT_NE(ctx, nullptr);
  EXPECT_NE(ctx->describeKernel(0).find("oneDNN's layouts"), std::string::npos)
      << ctx->describeKernel(0);
  auto diffDst = randomVector(t.dstSize(), rng);
  auto wei = randomVector(t.weiSize(), rng);
  std::vector<float> rDiffDst = roundedToBf16(diffDst),
                     rWei = roundedToBf16(wei);
  Reference ref(t.srcSize());
  t.forEachTap([&](size_t si, size_t wi, size_t di) {
    ref.add(si, double(rDiffDst[di]) * rWei[wi]);
  });
  std::vector<float> diffSrc(t.srcSize(), 123.f);
  cleave_kernel_conv2d_bwd_data(ctx.get(), 0, diffDst.data(), wei.data(),
                                diffSrc.data());
  ASSERT_FALSE(ctx->failed()) << ctx->error().message();
  EXPECT_TRUE(matches(diffSrc, ref));
}

} // namespace
