//===- AttentionTest.cpp - The host sdpa kernels against their definition -===//
//
// cleave_kernel_sdpa_fwd and _bwd on the CPU library (kernels/Attention.cpp),
// which the backend tests run as cuda's attention kernels on the host: f32
// and bf16 tensors, causal and with a mask, T != S, with dropout, against
// kernel_abi.h's definition in double; and the entries the library refuses.
//
//===----------------------------------------------------------------------===//

#include "KernelTestUtils.h"

#include "cleave/kernel_abi.h"

#include <limits>

using namespace cleave::rt;
using namespace cleave::rt::test;

namespace {

struct Shape {
  int64_t batch, t, s, d, dv;
  double scale;
  bool causal, mask;
  double dropout = 0;
};

nlohmann::json entry(int64_t id, const char *op, const Shape &x, bool bf16) {
  nlohmann::json e = {{"id", id},           {"op", op},
                      {"batch", x.batch},   {"seq_q", x.t},
                      {"seq_kv", x.s},      {"head_dim", x.d},
                      {"value_dim", x.dv},  {"scale", x.scale},
                      {"causal", x.causal}, {"mask", x.mask}};
  if (bf16)
    e["math"] = e["io_type"] = "bf16";
  if (x.dropout != 0)
    e["dropout"] = x.dropout;
  return e;
}

/// The forward and backward passes in double, from the operands as the
/// kernel reads them (rounded to bf16 where it stores them so). The
/// backward's rowsum(dO o) takes `o` as the forward kernel stored it, as
/// the backward kernel does: in dP - rowsum(dO o) the two nearly cancel.
struct Expected {
  Reference o, lse, dq, dk, dv;
  Expected(const Shape &x)
      : o(x.batch * x.t * x.dv), lse(x.batch * x.t), dq(x.batch * x.t * x.d),
        dk(x.batch * x.s * x.d), dv(x.batch * x.s * x.dv) {}
};

Expected reference(const Shape &x, const std::vector<float> &q,
                   const std::vector<float> &k, const std::vector<float> &v,
                   const std::vector<float> &mask,
                   const std::vector<float> &keep, const std::vector<float> &dO,
                   const std::vector<float> &storedO) {
  Expected r(x);
  std::vector<double> p(x.s);
  for (int64_t b = 0; b < x.batch; ++b)
    for (int64_t i = 0; i < x.t; ++i) {
      const int64_t row = b * x.t + i;
      double max = -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j < x.s; ++j) {
        double dot = 0;
        for (int64_t c = 0; c < x.d; ++c)
          dot += double(q[row * x.d + c]) * k[(b * x.s + j) * x.d + c];
        p[j] = dot * x.scale + (x.mask ? mask[i * x.s + j] : 0.0);
        if (x.causal && j > i)
          p[j] = -std::numeric_limits<double>::infinity();
        max = std::max(max, p[j]);
      }
      double sum = 0;
      for (int64_t j = 0; j < x.s; ++j)
        sum += p[j] = std::exp(p[j] - max);
      // A log-sum-exp is a handful of f32 operations on its row.
      r.lse.value[row] = max + std::log(sum);
      r.lse.magnitude[row] = 1 + std::fabs(r.lse.value[row]);
      // Dropout: the product with v sees p * keep / (1 - r), and dP goes
      // through the same factor.
      std::vector<double> factor(x.s, 1.0);
      for (int64_t j = 0; j < x.s; ++j) {
        p[j] /= sum;
        if (x.dropout != 0)
          factor[j] = keep[row * x.s + j] / (1 - x.dropout);
      }
      for (int64_t c = 0; c < x.dv; ++c)
        for (int64_t j = 0; j < x.s; ++j)
          r.o.add(row * x.dv + c,
                  p[j] * factor[j] * v[(b * x.s + j) * x.dv + c]);
      double delta = 0, deltaMagnitude = 0;
      for (int64_t c = 0; c < x.dv; ++c) {
        delta += double(dO[row * x.dv + c]) * storedO[row * x.dv + c];
        deltaMagnitude +=
            std::fabs(dO[row * x.dv + c] * storedO[row * x.dv + c]);
      }
      for (int64_t j = 0; j < x.s; ++j) {
        double dp = 0, dpMagnitude = 0;
        for (int64_t c = 0; c < x.dv; ++c) {
          r.dv.add((b * x.s + j) * x.dv + c,
                   p[j] * factor[j] * dO[row * x.dv + c]);
          dp += double(dO[row * x.dv + c]) * v[(b * x.s + j) * x.dv + c];
          dpMagnitude +=
              std::fabs(dO[row * x.dv + c] * v[(b * x.s + j) * x.dv + c]);
        }
        // dS's own error is relative to the terms it cancels.
        const double ds = p[j] * (dp * factor[j] - delta) * x.scale;
        const double dsMagnitude = p[j] *
                                   (dpMagnitude * factor[j] + deltaMagnitude) *
                                   std::fabs(x.scale);
        auto add = [](Reference &ref, size_t i, double value, double bound) {
          ref.value[i] += value;
          ref.magnitude[i] += bound;
        };
        for (int64_t c = 0; c < x.d; ++c) {
          const double kc = k[(b * x.s + j) * x.d + c], qc = q[row * x.d + c];
          add(r.dq, row * x.d + c, ds * kc, dsMagnitude * std::fabs(kc));
          add(r.dk, (b * x.s + j) * x.d + c, ds * qc,
              dsMagnitude * std::fabs(qc));
        }
      }
    }
  return r;
}

/// Random operands of `x` (the mask below 0, as a padding mask's; keep 1
/// with probability 1 - dropout, else 0).
struct Operands {
  std::vector<float> q, k, v, mask, keep, dO;
  Operands(const Shape &x, std::mt19937 &rng)
      : q(randomVector(x.batch * x.t * x.d, rng)),
        k(randomVector(x.batch * x.s * x.d, rng)),
        v(randomVector(x.batch * x.s * x.dv, rng)),
        mask(randomVector(x.t * x.s, rng, -2, 0)),
        keep(randomVector(x.batch * x.t * x.s, rng, 0, 1)),
        dO(randomVector(x.batch * x.t * x.dv, rng)) {
    for (float &kept : keep)
      kept = kept >= x.dropout ? 1.0f : 0.0f;
  }
};

const Shape kShapes[] = {
    {3, 5, 5, 8, 8, 0.35, true, false},
    {2, 4, 7, 8, 16, -0.5, false, true},
    {1, 6, 3, 4, 4, 1.25, true, true},
    {2, 5, 6, 8, 4, 0.6, true, true, 0.3},
};

} // namespace

TEST(Attention, F32MatchesItsDefinition) {
  std::mt19937 rng(5);
  for (const Shape &x : kShapes) {
    SCOPED_TRACE(entry(0, "sdpa_fwd", x, false).dump());
    auto ctx = makeContext(nlohmann::json::array(
        {entry(0, "sdpa_fwd", x, false), entry(1, "sdpa_bwd", x, false)}));
    ASSERT_NE(ctx, nullptr);
    const Operands in(x, rng);
    const std::vector<float> &q = in.q, &k = in.k, &v = in.v, &mask = in.mask,
                             &dO = in.dO;
    std::vector<float> o(v.size() / x.s * x.t), lse(x.batch * x.t),
        dq(q.size()), dk(k.size()), dv(v.size());
    const float *m = x.mask ? mask.data() : nullptr;
    const float *keep = x.dropout != 0 ? in.keep.data() : nullptr;
    cleave_kernel_sdpa_fwd(ctx.get(), 0, q.data(), k.data(), v.data(), m, keep,
                           o.data(), lse.data());
    cleave_kernel_sdpa_bwd(ctx.get(), 1, q.data(), k.data(), v.data(), m, keep,
                           o.data(), lse.data(), dO.data(), dq.data(),
                           dk.data(), dv.data());
    ASSERT_FALSE(ctx->failed()) << ctx->error().message();
    Expected r = reference(x, q, k, v, mask, in.keep, dO, o);
    EXPECT_TRUE(matches(o, r.o)) << "o";
    EXPECT_TRUE(matches(lse, r.lse)) << "lse";
    EXPECT_TRUE(matches(dq, r.dq)) << "dq";
    EXPECT_TRUE(matches(dk, r.dk)) << "dk";
    EXPECT_TRUE(matches(dv, r.dv)) << "dv";
  }
}

// bf16 tensors are read as stored and written rounded once; the log-sum-exp
// stays f32. Against the definition on the rounded operands, within 2^-7 of
// each result's terms (the rounding of the result on top of f32 sums).
TEST(Attention, Bf16TensorsAreReadAndWrittenAsStored) {
  std::mt19937 rng(6);
  for (const Shape &x : kShapes) {
    SCOPED_TRACE(entry(0, "sdpa_fwd", x, true).dump());
    auto ctx = makeContext(nlohmann::json::array(
        {entry(0, "sdpa_fwd", x, true), entry(1, "sdpa_bwd", x, true)}));
    ASSERT_NE(ctx, nullptr);
    const Operands in(x, rng);
    const std::vector<float> &q = in.q, &k = in.k, &v = in.v, &mask = in.mask,
                             &dO = in.dO;
    std::vector<uint16_t> q16 = bf16Buffer(q), k16 = bf16Buffer(k),
                          v16 = bf16Buffer(v), mask16 = bf16Buffer(mask),
                          keep16 = bf16Buffer(in.keep), dO16 = bf16Buffer(dO);
    std::vector<uint16_t> o(x.batch * x.t * x.dv), dq(q.size()), dk(k.size()),
        dv(v.size());
    std::vector<float> lse(x.batch * x.t);
    const void *m = x.mask ? mask16.data() : nullptr;
    const void *keep = x.dropout != 0 ? keep16.data() : nullptr;
    cleave_kernel_sdpa_fwd(ctx.get(), 0, q16.data(), k16.data(), v16.data(), m,
                           keep, o.data(), lse.data());
    cleave_kernel_sdpa_bwd(ctx.get(), 1, q16.data(), k16.data(), v16.data(), m,
                           keep, o.data(), lse.data(), dO16.data(), dq.data(),
                           dk.data(), dv.data());
    ASSERT_FALSE(ctx->failed()) << ctx->error().message();
    Expected r =
        reference(x, widened(q16), widened(k16), widened(v16), widened(mask16),
                  widened(keep16), widened(dO16), widened(o));
    EXPECT_TRUE(matches(widened(o), r.o, kBf16RelTol)) << "o";
    EXPECT_TRUE(matches(lse, r.lse)) << "lse";
    EXPECT_TRUE(matches(widened(dq), r.dq, kBf16RelTol)) << "dq";
    EXPECT_TRUE(matches(widened(dk), r.dk, kBf16RelTol)) << "dk";
    EXPECT_TRUE(matches(widened(dv), r.dv, kBf16RelTol)) << "dv";
  }
}

TEST(Attention, EntriesThatDisagreeAreRefused) {
  const Shape x = kShapes[0];
  std::string error;
  nlohmann::json e = entry(0, "sdpa_fwd", x, false);
  e["io_type"] = "bf16";
  EXPECT_EQ(KernelContext::create(nlohmann::json::array({e}), error), nullptr);
  EXPECT_NE(error.find("kernel 0 (sdpa_fwd): 'math' and 'io_type' must agree "
                       "(attention multiplies in the type it stores), got "
                       "'math': 'f32' and 'io_type': 'bf16'"),
            std::string::npos)
      << error;
  e = entry(0, "sdpa_bwd", x, false);
  e["scale"] = 0;
  EXPECT_EQ(KernelContext::create(nlohmann::json::array({e}), error), nullptr);
  EXPECT_NE(error.find("kernel 0 (sdpa_bwd): field 'scale' must not be 0"),
            std::string::npos)
      << error;
  e = entry(0, "sdpa_fwd", x, false);
  e["dropout"] = 1.0;
  EXPECT_EQ(KernelContext::create(nlohmann::json::array({e}), error), nullptr);
  EXPECT_NE(error.find("kernel 0 (sdpa_fwd): field 'dropout' must be in "
                       "[0, 1), got 1"),
            std::string::npos)
      << error;
  e = entry(0, "sdpa_fwd", x, false);
  e["kernel"] = {2, 2};
  EXPECT_EQ(KernelContext::create(nlohmann::json::array({e}), error), nullptr);
  EXPECT_NE(error.find("unexpected field 'kernel'"), std::string::npos)
      << error;
}
