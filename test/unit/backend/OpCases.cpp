//===- OpCases.cpp - The models the back-end op tests compile -------------===//
//
// One case per artifact; each batches a family of ops, with shapes drawn at
// random (from the case's seed) and the configurations the lowering
// distinguishes: broadcasting, transposes, batched and shared operands,
// keepdims and negative axes, strides, padding, dilation, groups, ceil mode,
// fused and unfused activations, training and inference. Every data-derived
// operand of an op under test goes through a parameter first (`scaled`), so
// that the op's input gradient is computed and compared as well. The
// optimizers are spread over the cases so that each updates parameters of
// many shapes. The two example models close the list.
//
//===----------------------------------------------------------------------===//

#include "BackendHarness.h"

#include "dialects/NN/IR/NNOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

#include "llvm/Support/MemoryBuffer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "test/unit/compiler/TestSupport.h"

using namespace mlir;
using namespace mlir::cleave;
using namespace mlir::cleave::backend_test;

namespace {

using nn::GeluApproximation;
using nn::Reduction;
RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// Short builders over a ModelBuilder; every result type is inferred.
struct Ops {
  ModelBuilder &m;
  OpBuilder &b() { return m.b(); }
  Location l() { return m.loc(); }

  Value add(Value x, Value y) { return nn::AddOp::create(b(), l(), x, y); }
  Value sub(Value x, Value y) { return nn::SubOp::create(b(), l(), x, y); }
  Value mul(Value x, Value y) { return nn::MulOp::create(b(), l(), x, y); }
  Value div(Value x, Value y) { return nn::DivOp::create(b(), l(), x, y); }
  Value powf(Value x, Value y) { return nn::PowFOp::create(b(), l(), x, y); }
  template <typename OpTy> Value unary(Value x) {
    return OpTy::create(b(), l(), x);
  }
  Value pow(Value x, double e) {
    return nn::PowOp::create(b(), l(), x, llvm::APFloat(e));
  }
  Value leakyRelu(Value x, double alpha) {
    return nn::LeakyReluOp::create(b(), l(), x, llvm::APFloat(alpha));
  }
  Value clamp(Value x, double lo, double hi) {
    return nn::ClampOp::create(b(), l(), x, llvm::APFloat(lo),
                               llvm::APFloat(hi));
  }
  Value gelu(Value x, GeluApproximation a) {
    return nn::GeluOp::create(b(), l(), x, a);
  }
  Value matmul(Value x, Value y, bool ta = false, bool tb = false) {
    return nn::MatmulOp::create(b(), l(), x, y, ta, tb);
  }
  Value linear(Value x, Value w, Value bias = {}) {
    return nn::LinearOp::create(b(), l(), x, w, bias);
  }
  Value reshape(Value x, ArrayRef<int64_t> shape) {
    return nn::ReshapeOp::create(b(), l(), x, shape);
  }
  Value flatten(Value x, int64_t axis) {
    return nn::FlattenOp::create(b(), l(), x, b().getI64IntegerAttr(axis));
  }
  Value transpose(Value x, ArrayRef<int64_t> perm) {
    return nn::TransposeOp::create(b(), l(), x, perm);
  }
  Value concat(ValueRange xs, int64_t axis) {
    return nn::ConcatOp::create(b(), l(), xs, b().getI64IntegerAttr(axis));
  }
  Value slice(Value x, ArrayRef<int64_t> starts, ArrayRef<int64_t> sizes,
              ArrayRef<int64_t> strides) {
    return nn::SliceOp::create(b(), l(), x, starts, sizes, strides);
  }
  Value pad(Value x, ArrayRef<int64_t> starts, ArrayRef<int64_t> strides,
            ArrayRef<int64_t> shape) {
    return nn::PadOp::create(b(), l(), x, starts, strides, shape);
  }
  Value where(Value c, Value x, Value y) {
    return nn::WhereOp::create(b(), l(), c, x, y);
  }
  Value broadcastTo(Value x, ArrayRef<int64_t> shape) {
    return nn::BroadcastToOp::create(b(), l(), x, shape);
  }
  template <typename OpTy>
  Value reduce(Value x, ArrayRef<int64_t> axes, bool keepdims = false) {
    return OpTy::create(b(), l(), x, axes, keepdims);
  }
  Value attention(Value q, Value k, Value v, Value mask,
                  std::optional<double> scale, bool divides, bool causal,
                  Value seed = Value(), double ratio = 0, int64_t stream = 0) {
    auto unit = [&](bool set) { return set ? b().getUnitAttr() : UnitAttr(); };
    return nn::AttentionOp::create(
        b(), l(), q, k, v, mask, seed,
        scale ? b().getF64FloatAttr(*scale) : FloatAttr(), unit(divides),
        unit(causal), seed ? b().getF64FloatAttr(ratio) : FloatAttr(),
        b().getI64IntegerAttr(stream));
  }
  template <typename OpTy> Value softmax(Value x, int64_t axis) {
    return OpTy::create(b(), l(), x, b().getI64IntegerAttr(axis));
  }
  Value crossEntropy(Value x, Value labels, Reduction r) {
    return nn::CrossEntropyOp::create(b(), l(), x, labels, r);
  }
  Value mse(Value x, Value t, Reduction r) {
    return nn::MseLossOp::create(b(), l(), x, t, r);
  }
  Value oneHot(Value labels, int64_t classes) {
    return nn::OneHotOp::create(b(), l(), labels,
                                b().getI64IntegerAttr(classes),
                                TypeAttr::get(b().getF32Type()));
  }
  Value conv(Value x, Value w, Value bias, ArrayRef<int64_t> strides,
             ArrayRef<int64_t> padding, ArrayRef<int64_t> dilations,
             int64_t groups) {
    return nn::Conv2DOp::create(b(), l(), x, w, bias, strides, padding,
                                dilations, groups);
  }
  Value maxPool(Value x, ArrayRef<int64_t> k, ArrayRef<int64_t> s,
                ArrayRef<int64_t> p, ArrayRef<int64_t> d, bool ceil) {
    return nn::MaxPool2DOp::create(b(), l(), x, k, s, p, d, ceil);
  }
  Value avgPool(Value x, ArrayRef<int64_t> k, ArrayRef<int64_t> s,
                ArrayRef<int64_t> p, bool ceil, bool includePad) {
    return nn::AvgPool2DOp::create(b(), l(), x, k, s, p,
                                   ArrayRef<int64_t>{1, 1}, ceil, includePad);
  }
  nn::BatchNormOp batchNorm(Value x, Value g, Value beta, Value mean,
                            Value var, double eps, double momentum,
                            bool training) {
    return nn::BatchNormOp::create(b(), l(), x, g, beta, mean, var,
                                   /*sample_weights=*/Value(),
                                   llvm::APFloat(eps), llvm::APFloat(momentum),
                                   training);
  }
  Value layerNorm(Value x, Value g, Value beta, int64_t axis, double eps) {
    return nn::LayerNormOp::create(b(), l(), x, g, beta,
                                   b().getI64IntegerAttr(axis),
                                   b().getF64FloatAttr(eps));
  }
  Value dropout(Value x, Value seed, double ratio, int64_t stream) {
    return nn::DropoutOp::create(b(), l(), x, seed, llvm::APFloat(ratio),
                                 stream);
  }
  Value embedding(Value ids, Value table) {
    return nn::EmbeddingOp::create(b(), l(), ids, table);
  }
};

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

/// Binary arithmetic with every broadcasting shape: equal, lower-rank lhs,
/// size-1 dimensions on one and on both sides, rank 0, parameter with
/// parameter. Denominators are kept away from zero on the padding rows too
/// (which are zero data): a NaN there would poison the weighted loss sum,
/// since 0 * NaN is NaN.
Model binary(MLIRContext *ctx, std::mt19937_64 &rng) {
  ModelBuilder m(ctx, rng, randomDim(rng, 3, 6));
  Ops o{m};
  int64_t a = m.dim(2, 4), c = m.dim(2, 5);
  Value x = m.input("x", {a, c});
  Value x1 = m.input("x1", {1, c});
  Value pos = o.add(m.scaled("pos.s", m.input("xp", {a, c}, 0.5, 2), {a, c}),
                    m.param("pos.offset", {c}, 0.5, 1));
  m.observe("add", o.add(x, m.param("add.p", {a, c})));
  m.observe("sub", o.sub(m.param("sub.p", {c}), x));
  m.observe("sub_both_bcast", o.sub(x1, m.param("sbb.p", {a, 1})));
  m.observe("mul", o.mul(x1, m.param("mul.p", {a, 1})));
  m.observe("mul_scalar", o.mul(x, m.param("mul_scalar.s", {})));
  m.observe("div_by_param", o.div(x, m.param("div.p", {a, 1}, 0.5, 2)));
  m.observe("div_param_by", o.div(m.param("div.q", {1, c}), pos));
  m.observe("div_both_bcast",
            o.div(m.scaled("dbb.s", x1, {c}), m.param("dbb.p", {a, 1}, 0.5, 2)));
  m.observe("div_same", o.div(m.scaled("div_same.s", x, {c}), pos));
  // A mask with zeros (a relu of data) selects between a broadcast
  // parameter and data, and between two parameters.
  Value mask = o.unary<nn::ReluOp>(m.input("mask", {a, c}, -1, 1));
  m.observe("where", o.where(mask, m.param("where.p", {c}), x));
  m.observe("where_params",
            o.where(mask, m.param("wp.p", {a, 1}), m.param("wp.q", {1, c})));
  m.observeGlobal("add_params",
                  o.add(m.param("ap.p", {a, 1}), m.param("ap.q", {1, c})));
  // ONNX Max and Min, broadcasting; continuous random values, so ties
  // (where the cotangent's side is a convention) have probability zero.
  m.observe("maximum",
            nn::MaximumOp::create(o.b(), o.l(), x, m.param("max.p", {c})));
  m.observe("minimum_both_bcast",
            nn::MinimumOp::create(o.b(), o.l(), x1, m.param("min.p", {a, 1})));
  // Comparisons give 0/1 masks: integer ids against a broadcast reference
  // (a padding mask; small ids, so both outcomes occur), and data against a
  // parameter, whose mask carries no gradient to it (autodiff treats it as
  // a constant) while nn.where routes the cotangent by it.
  auto compare = [&](nn::ComparePredicate pred, Value lhs, Value rhs) {
    return nn::CompareOp::create(
        o.b(), o.l(), nn::ComparePredicateAttr::get(o.b().getContext(), pred),
        lhs, rhs, TypeAttr::get(o.b().getF32Type()));
  };
  Value ids = m.indexInput("cmp.ids", {a, c}, 3);
  Value pad = compare(nn::ComparePredicate::eq, ids,
                      m.indexInput("cmp.ref", {1, 1}, 3));
  m.observe("compare_eq_ids", pad);
  m.observe("where_padding", o.where(pad, m.param("pad.fill", {}), x));
  Value above = compare(nn::ComparePredicate::gt, x, m.param("cmp.p", {c}));
  m.observe("compare_gt_param", above);
  m.observe("where_compared", o.where(above, x, m.param("wc.p", {a, 1})));
  // Powers with a tensor exponent: a positive base (also on the padding
  // rows, for log) with a broadcast parameter exponent, a broadcast
  // parameter base with a data exponent, and negative bases with integral
  // exponents (0 to 3, constant: the floor of data) whose base gradient
  // only is needed. Exponents 0 on the zero padding rows make 0^0 = 1,
  // whose base cotangent is 0, not 0 * 0^-1.
  m.observe("powf_param_exponent", o.powf(pos, m.param("powf.e", {c}, -1, 1)));
  m.observe("powf_param_base", o.powf(m.param("powf.b", {a, 1}, 0.5, 2),
                                      m.scaled("powf.s", x, {c})));
  m.observe("powf_negative_base",
            o.powf(m.scaled("powf.n", x, {c}),
                   o.unary<nn::FloorOp>(m.input("powf.k", {a, c}, 0, 4))));
  return m.finish();
}

/// Every unary op, on inputs in its domain, and the activation gradients.
/// The relu here follows an add, so it is lowered on its own (not fused).
Model unary(MLIRContext *ctx, std::mt19937_64 &rng) {
  ModelBuilder m(ctx, rng, randomDim(rng, 3, 6));
  Ops o{m};
  int64_t n = m.dim(3, 8);
  Value x = m.input("x", {n}, -2, 2);
  Value xp = m.input("xp", {n}, 0.5, 2);
  Value z = o.add(x, m.param("shift", {n}, -0.5, 0.5));
  // Positive also on the (zero) padding rows: log, sqrt and negative powers
  // of 0 would make the padding rows' losses, and so the weighted sum, NaN.
  Value pz = o.add(m.scaled("scale", xp, {n}), m.param("offset", {n}, 0.5, 1));
  m.observe("neg", o.unary<nn::NegOp>(z));
  m.observe("exp", o.unary<nn::ExpOp>(z));
  m.observe("log", o.unary<nn::LogOp>(pz));
  m.observe("sqrt", o.unary<nn::SqrtOp>(pz));
  m.observe("erf", o.unary<nn::ErfOp>(z));
  m.observe("relu", o.unary<nn::ReluOp>(z));
  m.observe("sigmoid", o.unary<nn::SigmoidOp>(z));
  m.observe("tanh", o.unary<nn::TanhOp>(z));
  m.observe("pow2", o.pow(z, 2.0));
  m.observe("pow3", o.pow(z, 3.0));
  m.observe("pow_half", o.pow(pz, 0.5));
  m.observe("pow_rsqrt", o.pow(pz, -0.5));
  m.observe("pow_1_7", o.pow(pz, 1.7));
  m.observe("leaky_relu", o.leakyRelu(z, 0.2));
  m.observe("leaky_relu_default", o.leakyRelu(z, 0.01));
  m.observe("clamp", o.clamp(z, -0.2, 0.3));
  m.observe("clamp_lower_only",
            o.clamp(z, -0.1, std::numeric_limits<double>::infinity()));
  m.observe("gelu", o.gelu(z, GeluApproximation::none));
  m.observe("gelu_tanh", o.gelu(z, GeluApproximation::tanh));
  m.observe("sin", o.unary<nn::SinOp>(z));
  m.observe("cos", o.unary<nn::CosOp>(z));
  // Far from 0, where an argument reduction coarser than libm's shows.
  // Data only: a parameter there would turn rounding differences in its
  // update into phase differences of the result.
  Value far = m.input("far", {n}, -300, 300);
  m.observe("sin_far", o.unary<nn::SinOp>(far));
  m.observe("cos_far", o.unary<nn::CosOp>(far));
  // Rounding carries no gradient (the shift reaches the loss through the
  // other ops); the probes compare the values. floor(4z) / 2 is a multiple
  // of 0.5, computed exactly, so round meets exact halves too.
  m.observe("floor", o.unary<nn::FloorOp>(z));
  m.observe("ceil", o.unary<nn::CeilOp>(z));
  m.observe("round", o.unary<nn::RoundOp>(z));
  Value z4 = o.add(o.add(z, z), o.add(z, z));
  auto f32 = RankedTensorType::get({}, o.b().getF32Type());
  Value half = arith::ConstantOp::create(o.b(), o.l(),
                                         DenseElementsAttr::get(f32, 0.5f));
  m.observe("round_halves",
            o.unary<nn::RoundOp>(o.mul(o.unary<nn::FloorOp>(z4), half)));
  // Casts, observed as f32. Through f64 and back, with a square in f64
  // between: the gradient is cast back at each step. To integers and back,
  // truncating toward zero (4z is exact, negative half the time; no
  // gradient, as rounding); index inputs to floats, and i64 to i32.
  auto castTo = [&](Value v, Type elt) -> Value {
    return nn::CastOp::create(o.b(), o.l(), v, elt);
  };
  Type f32t = o.b().getF32Type(), f64t = o.b().getF64Type();
  Type i32t = o.b().getI32Type(), i64t = o.b().getI64Type();
  Value wide = castTo(z, f64t);
  m.observe("cast_f64_square", castTo(o.mul(wide, wide), f32t));
  m.observe("cast_trunc_i64", castTo(castTo(z4, i64t), f32t));
  m.observe("cast_trunc_i32", castTo(castTo(z4, i32t), f32t));
  m.observe("cast_f64_trunc_i32", castTo(castTo(castTo(z4, f64t), i32t), f32t));
  m.observe("cast_i64_ids", castTo(m.indexInput("cast.ids", {n}, 1000), f32t));
  m.observe("cast_i32_ids",
            castTo(m.indexInput("cast.ids32", {n}, 1000, /*i32=*/true), f32t));
  // Ids up to 2^40 keep their low 32 bits as i32 (negative half the time),
  // then round to f32; scaled by 2^-31 (exactly) into [-1, 1).
  auto scale = RankedTensorType::get({}, f32t);
  Value pow2m31 = arith::ConstantOp::create(
      o.b(), o.l(), DenseElementsAttr::get(scale, std::ldexp(1.0f, -31)));
  m.observe("cast_i64_wraps_to_i32",
            o.mul(castTo(castTo(m.indexInput("cast.big", {n}, int64_t(1) << 40),
                                i32t),
                         f32t),
                  pow2m31));

  // Integer arithmetic (no gradient; observed cast to f32, exact at these
  // magnitudes), in i64 and i32: values in (-1000, 1000), divisors in
  // [-3, 3] so that truncation toward zero of negative quotients, division
  // by zero (0) and by -1 all occur, products that wrap in i32.
  auto intCases = [&](StringRef tag, bool i32) {
    Type it = i32 ? i32t : i64t;
    auto name = [&](StringRef what) { return (tag + what).str(); };
    auto splat = [&](int64_t v) -> Value {
      return arith::ConstantOp::create(
          o.b(), o.l(),
          DenseElementsAttr::get(RankedTensorType::get({}, it),
                                 APInt(it.getIntOrFloatBitWidth(), v, true)));
    };
    Value a = o.sub(m.indexInput(name(".a"), {n}, 1000, i32),
                    m.indexInput(name(".a2"), {n}, 1000, i32));
    Value d = o.sub(m.indexInput(name(".d"), {n}, 7, i32), splat(3));
    Value big =
        o.mul(m.indexInput(name(".big"), {n}, 1 << 20, i32), splat(1 << 16));
    auto observe = [&](StringRef what, Value v) {
      m.observe(name(what), castTo(v, f32t));
    };
    observe("_add", o.add(a, d));
    observe("_sub", o.sub(d, a));
    observe("_mul", o.mul(a, d));
    observe("_div", o.div(a, d));
    observe("_maximum", nn::MaximumOp::create(o.b(), o.l(), a, d));
    observe("_minimum", nn::MinimumOp::create(o.b(), o.l(), a, d));
    observe("_neg", o.unary<nn::NegOp>(a));
    // Wraps in i32 (and not in i64); scaled into [-1, 1) as above.
    m.observe(name("_mul_wraps"),
              o.mul(castTo(o.mul(big, splat(3)), f32t), pow2m31));
    Value mask =
        nn::CompareOp::create(o.b(), o.l(),
                              nn::ComparePredicateAttr::get(
                                  o.b().getContext(), nn::ComparePredicate::gt),
                              a, d, TypeAttr::get(f32t));
    observe("_where", nn::WhereOp::create(o.b(), o.l(), mask, a, d));
  };
  intCases("int64", /*i32=*/false);
  intCases("int32", /*i32=*/true);
  return m.finish();
}

//===----------------------------------------------------------------------===//
// Matrix products
//===----------------------------------------------------------------------===//

/// Every transpose combination, rank 2, batched with a shared rhs, batched
/// with a batched rhs, two batch dimensions.
Model matmul(MLIRContext *ctx, std::mt19937_64 &rng) {
  ModelBuilder m(ctx, rng, randomDim(rng, 2, 5));
  Ops o{m};
  int64_t mm = m.dim(2, 5), k = m.dim(2, 6), n = m.dim(2, 5), h = m.dim(2, 3);
  Value a = m.scaled("a.s", m.input("xa", {mm, k}), {k});  // [B, m, k]
  Value at = m.scaled("at.s", m.input("xt", {k, mm}), {mm}); // [B, k, m]
  Value rb = m.scaled("rb.s", m.input("xb", {k, n}), {n});   // [B, k, n]
  Value rbt = m.scaled("rbt.s", m.input("xbt", {n, k}), {k}); // [B, n, k]
  m.observe("shared", o.matmul(a, m.param("shared.w", {k, n})));
  m.observe("shared_tb", o.matmul(a, m.param("shared_tb.w", {n, k}), false, true));
  m.observe("shared_ta", o.matmul(at, m.param("shared_ta.w", {k, n}), true));
  m.observe("shared_tab",
            o.matmul(at, m.param("shared_tab.w", {n, k}), true, true));
  m.observe("batched", o.matmul(a, rb));
  m.observe("batched_tb", o.matmul(a, rbt, false, true));
  m.observe("batched_ta", o.matmul(at, rb, true));
  m.observe("batched_tab", o.matmul(at, rbt, true, true));
  Value a4 = m.scaled("a4.s", m.input("x4", {h, mm, k}), {k});
  Value b4 = m.scaled("b4.s", m.input("y4", {h, k, n}), {n});
  m.observe("batched_rank4", o.matmul(a4, b4));
  m.observe("shared_rank4", o.matmul(a4, m.param("shared_rank4.w", {n, k}),
                                     false, true));
  // Rank 2: [B, k] and its transpose [k, B].
  Value x2 = m.scaled("x2.s", m.input("x2", {k}), {k});
  Value x2t = o.transpose(x2, {1, 0});
  m.observe("rank2", o.matmul(x2, m.param("rank2.w", {k, n})));
  m.observe("rank2_tb", o.matmul(x2, m.param("rank2_tb.w", {n, k}), false, true));
  m.observe("rank2_ta", o.matmul(x2t, m.param("rank2_ta.w", {k, n}), true));
  m.observe("rank2_tab",
            o.matmul(x2t, m.param("rank2_tab.w", {n, k}), true, true));
  return m.finish();
}

/// Linear layers of rank 2 and 3, with and without bias, with a ReLU the
/// lowering fuses into the GEMM and one it cannot fuse (the pre-activation
/// is used elsewhere).
Model linear(MLIRContext *ctx, std::mt19937_64 &rng) {
  ModelBuilder m(ctx, rng, randomDim(rng, 3, 6));
  Ops o{m};
  int64_t in = m.dim(3, 7), out = m.dim(2, 6), s = m.dim(2, 4);
  Value x2 = m.input("x2", {in});
  Value x3 = m.input("x3", {s, in});
  auto w = [&](StringRef name) { return m.param(name, {out, in}); };
  auto bias = [&](StringRef name) { return m.param(name, {out}); };
  m.observe("rank2_bias", o.linear(x2, w("rank2_bias.w"), bias("rank2_bias.b")));
  m.observe("rank2", o.linear(m.scaled("rank2.s", x2, {in}), w("rank2.w")));
  m.observe("rank3", o.linear(x3, w("rank3.w")));
  m.observe("rank3_bias", o.linear(m.scaled("rank3_bias.s", x3, {in}),
                                   w("rank3_bias.w"), bias("rank3_bias.b")));
  m.observe("relu_fused", o.unary<nn::ReluOp>(o.linear(
                              m.scaled("relu_fused.s", x2, {in}),
                              w("relu_fused.w"), bias("relu_fused.b"))));
  m.observe("relu_fused_rank3", o.unary<nn::ReluOp>(o.linear(
                                    m.scaled("relu_fused_rank3.s", x3, {in}),
                                    w("relu_fused_rank3.w"))));
  Value pre = o.linear(m.scaled("pre.s", x2, {in}), w("pre.w"), bias("pre.b"));
  m.observe("pre", pre);
  m.observe("relu_unfused", o.unary<nn::ReluOp>(pre));
  return m.finish();
}

//===----------------------------------------------------------------------===//
// Shapes
//===----------------------------------------------------------------------===//

/// Views, permutations, concatenation, strided slices, padding, broadcasts.
Model shapes(MLIRContext *ctx, std::mt19937_64 &rng) {
  int64_t batch = randomDim(rng, 3, 5);
  ModelBuilder m(ctx, rng, batch);
  Ops o{m};
  int64_t a = m.dim(2, 4), bb = m.dim(3, 5), c = m.dim(2, 5);
  Value x = m.input("x", {a, bb, c});
  Value xs = m.scaled("x.s", x, {bb, c}, -1, 1); // [B, a, b, c]
  m.observe("reshape_collapse", o.reshape(xs, {batch, a * bb, c}));
  m.observe("reshape_infer", o.reshape(xs, {batch, -1}));
  m.observe("reshape_general", o.reshape(xs, {batch, c, a * bb}));
  m.observe("reshape_expand",
            o.reshape(m.scaled("re.s", m.input("x2", {a * c}), {a * c}),
                      {batch, a, 1, c}));
  m.observe("flatten1", o.flatten(xs, 1));
  m.observe("flatten2", o.reshape(o.flatten(xs, 2), {batch, a, bb * c}));
  m.observe("transpose_inner", o.transpose(xs, {0, 2, 1, 3}));
  m.observe("transpose_rotate", o.transpose(xs, {0, 3, 1, 2}));
  m.observeGlobal("transpose_batch", o.transpose(xs, {2, 0, 3, 1}));
  Value other = m.scaled("other.s", x, {a, bb, c}, -1, 1);
  m.observe("concat", o.concat({xs, other, x}, 1));
  m.observe("concat_last", o.concat({other, xs}, -1));
  // Strided slices: every other row of b from 1, c from 0 with stride 2.
  int64_t rows = (bb - 1 - 1) / 2 + 1, cols = (c - 1) / 2 + 1;
  m.observe("slice", o.slice(xs, {0, a - 1, 1, 0}, {batch, 1, rows, cols},
                             {1, 1, 2, 2}));
  m.observe("slice_inner", o.slice(other, {0, 0, 1, 1},
                                   {batch, a, bb - 2, c - 1}, {1, 1, 1, 1}));
  // A strided slice feeding a GEMM: the kernel needs a dense operand.
  m.observe("slice_linear",
            o.linear(o.slice(xs, {0, 0, 0, 0}, {batch, a, bb, cols},
                             {1, 1, 1, 2}),
                     m.param("sl.w", {2, cols})));
  m.observe("pad", o.pad(xs, {0, 1, 0, 2}, {1, 1, 2, 1},
                         {batch, a + 2, 2 * bb, c + 3}));
  m.observe("broadcast_param",
            o.mul(x, o.broadcastTo(m.param("bp.p", {1, c}), {bb, c})));
  Value row = o.slice(xs, {0, 0, 0, 0}, {batch, 1, bb, c}, {1, 1, 1, 1});
  m.observe("broadcast_data", o.broadcastTo(row, {batch, a, bb, c}));
  return m.finish();
}

//===----------------------------------------------------------------------===//
// Reductions, softmax, losses
//===----------------------------------------------------------------------===//

/// Sum, mean and max over single, several, negative and all axes, with and
/// without keepdims (reduce_max's gradient is reduce_max_grad).
Model reductions(MLIRContext *ctx, std::mt19937_64 &rng) {
  ModelBuilder m(ctx, rng, randomDim(rng, 3, 5));
  Ops o{m};
  int64_t a = m.dim(2, 4), bb = m.dim(2, 4), c = m.dim(2, 5);
  Value x = m.scaled("x.s", m.input("x", {a, bb, c}), {bb, c}, -1, 1);
  m.observe("sum1", o.reduce<nn::ReduceSumOp>(x, {1}));
  m.observe("sum13_keep", o.reduce<nn::ReduceSumOp>(x, {1, 3}, true));
  m.observe("sum_neg", o.reduce<nn::ReduceSumOp>(x, {-1}));
  m.observeGlobal("sum_all", o.reduce<nn::ReduceSumOp>(x, {}));
  m.observe("mean2_keep", o.reduce<nn::ReduceMeanOp>(x, {2}, true));
  m.observe("mean12", o.reduce<nn::ReduceMeanOp>(x, {1, 2}));
  m.observe("mean_neg", o.reduce<nn::ReduceMeanOp>(x, {-2, -1}));
  m.observeGlobal("mean_all_keep", o.reduce<nn::ReduceMeanOp>(x, {}, true));
  m.observe("max3", o.reduce<nn::ReduceMaxOp>(x, {3}));
  m.observe("max12_keep", o.reduce<nn::ReduceMaxOp>(x, {1, 2}, true));
  m.observe("max_neg_keep", o.reduce<nn::ReduceMaxOp>(x, {-1}, true));
  m.observe("max_unsorted", o.reduce<nn::ReduceMaxOp>(x, {3, 1}));
  m.observeGlobal("max_all", o.reduce<nn::ReduceMaxOp>(x, {}));
  m.observeGlobal("max_batch_keep", o.reduce<nn::ReduceMaxOp>(x, {0}, true));
  return m.finish();
}

/// Softmax and log-softmax on the last and an inner axis, cross-entropy and
/// MSE with every reduction, one-hot of i64 and i32 labels.
Model softmaxAndLosses(MLIRContext *ctx, std::mt19937_64 &rng) {
  ModelBuilder m(ctx, rng, randomDim(rng, 3, 6));
  Ops o{m};
  int64_t classes = m.dim(3, 6), a = m.dim(2, 3);
  Value logits = o.add(m.scaled("l.s", m.input("x", {classes}, -2, 2),
                                {classes}),
                       m.param("l.b", {classes}));
  Value logits3 = m.scaled("l3.s", m.input("x3", {a, classes}, -2, 2),
                           {a, classes});
  Value labels = m.indexInput("lbl", {}, classes);
  Value labels32 = m.indexInput("lbl32", {a}, classes + 1, /*i32=*/true);
  Value t = m.input("t", {classes});
  Value t3 = m.input("t3", {a, classes});
  m.observe("softmax", o.softmax<nn::SoftmaxOp>(logits, -1));
  m.observe("softmax_inner", o.softmax<nn::SoftmaxOp>(logits3, 1));
  m.observe("log_softmax", o.softmax<nn::LogSoftmaxOp>(logits, 1));
  m.observe("log_softmax_inner", o.softmax<nn::LogSoftmaxOp>(logits3, -2));
  m.observe("ce_none", o.crossEntropy(logits, labels, Reduction::none));
  m.observeGlobal("ce_sum", o.crossEntropy(logits, labels, Reduction::sum));
  m.observeGlobal("ce_mean", o.crossEntropy(logits, labels, Reduction::mean));
  m.observe("mse_none", o.mse(logits, t, Reduction::none));
  m.observe("mse_none3", o.mse(logits3, t3, Reduction::none));
  m.observeGlobal("mse_sum", o.mse(logits3, t3, Reduction::sum));
  m.observeGlobal("mse_mean", o.mse(logits, t, Reduction::mean));
  m.observe("one_hot", o.oneHot(labels, classes));
  m.observe("one_hot_i32", o.mul(o.oneHot(labels32, classes + 1),
                                 m.param("oh.w", {a, classes + 1})));
  return m.finish();
}

/// nn.attention, which the pipeline recomposes and spells out again before
/// autodiff: causal with a divided scale (T = S), an additive mask that is a
/// parameter with a multiplied scale (S != T), a key given as K^T, heads in
/// a dimension of their own, and dropout on the probabilities (which
/// @eval_step drops).
Model attention(MLIRContext *ctx, std::mt19937_64 &rng) {
  ModelBuilder m(ctx, rng, randomDim(rng, 2, 4));
  Ops o{m};
  int64_t t = m.dim(3, 5), s = m.dim(2, 6), d = m.dim(2, 4), dv = m.dim(2, 3),
          h = 2;
  Value q = m.scaled("q.s", m.input("q", {t, d}), {t, d});
  Value k = m.scaled("k.s", m.input("k", {t, d}), {t, d});
  Value v = m.scaled("v.s", m.input("v", {t, dv}), {t, dv});
  m.observe("causal",
            o.attention(q, k, v, Value(), std::sqrt(double(d)), true, true));
  Value ks = m.scaled("ks.s", m.input("ks", {s, d}), {s, d});
  Value vs = m.scaled("vs.s", m.input("vs", {s, dv}), {s, dv});
  m.observe("masked",
            o.attention(q, ks, vs, m.param("mask", {t, s}), 0.5, false, false));
  // A key given as K^T, [B, D, S] (nn.MultiheadAttention's export), which
  // the decomposition multiplies without transposing.
  Value kt = m.scaled("kt.s", m.input("kt", {d, s}), {d, s});
  m.observe("transposed_key", o.attention(q, o.transpose(kt, {0, 2, 1}), vs,
                                          Value(), 2.0, true, false));
  Value q4 = m.scaled("q4.s", m.input("q4", {h, t, d}), {h, t, d});
  Value k4 = m.scaled("k4.s", m.input("k4", {h, s, d}), {h, s, d});
  Value v4 = m.scaled("v4.s", m.input("v4", {h, s, dv}), {h, s, dv});
  m.observe("heads",
            o.attention(q4, k4, v4, Value(), std::nullopt, false, false));
  m.observe("dropout", o.attention(q4, k4, v4, Value(), 2.0, true, true,
                                   m.seed(), 0.3, 2));
  return m.finish();
}

/// Attention that cuda's fused kernel takes (head dimension 8): causal with
/// a divided scale over heads in a dimension of their own, and a constant
/// additive mask of [T, S] with S != T. The pipeline of target=cuda
/// precision=bf16 keeps both fused (nn.fused_attention and its gradient, the
/// sdpa kernels); every other pipeline spells them out. The same shape with
/// dropout is spelt out on every target.
Model fusedAttention(MLIRContext *ctx, std::mt19937_64 &rng) {
  ModelBuilder m(ctx, rng, randomDim(rng, 2, 3));
  Ops o{m};
  int64_t t = m.dim(3, 5), s = m.dim(2, 6), d = 8, h = 2;
  Value q = m.scaled("q.s", m.input("q", {h, t, d}), {h, t, d});
  Value k = m.scaled("k.s", m.input("k", {h, t, d}), {h, t, d});
  Value v = m.scaled("v.s", m.input("v", {h, t, d}), {h, t, d});
  m.observe("causal",
            o.attention(q, k, v, Value(), std::sqrt(double(d)), true, true));
  Value ks = m.scaled("ks.s", m.input("ks", {h, s, d}), {h, s, d});
  Value vs = m.scaled("vs.s", m.input("vs", {h, s, d}), {h, s, d});
  auto maskType = RankedTensorType::get({t, s}, m.b().getF32Type());
  std::uniform_real_distribution<float> u(-2, 0);
  SmallVector<float> maskValues(t * s);
  for (float &x : maskValues)
    x = u(m.rng());
  Value mask = arith::ConstantOp::create(
      m.b(), m.loc(), maskType,
      DenseElementsAttr::get(maskType, ArrayRef<float>(maskValues)));
  m.observe("masked", o.attention(q, ks, vs, mask, 0.5, false, false));
  m.observe("dropout", o.attention(q, k, v, Value(), std::sqrt(double(d)), true,
                                   true, m.seed(), 0.25, 1));
  return m.finish();
}

//===----------------------------------------------------------------------===//
// Convolution and pooling
//===----------------------------------------------------------------------===//

/// Strides, asymmetric padding, dilation, groups (incl. depthwise), with
/// and without bias, fused ReLU; the input gradient (conv2d_grad_input) and
/// the weight gradient (conv2d_grad_weight) of each.
Model conv(MLIRContext *ctx, std::mt19937_64 &rng) {
  ModelBuilder m(ctx, rng, randomDim(rng, 2, 4));
  Ops o{m};
  int64_t ch = 2 * m.dim(1, 2), h = m.dim(6, 9), w = m.dim(6, 9);
  int64_t out = 2 * m.dim(1, 2);
  Value x = m.scaled("x.s", m.input("x", {ch, h, w}), {ch, 1, 1});
  m.observe("stride2_pad_bias",
            o.conv(x, m.param("c1.w", {out, ch, 3, 3}), m.param("c1.b", {out}),
                   {2, 2}, {1, 0, 2, 1}, {1, 1}, 1));
  m.observe("dilation_groups",
            o.conv(x, m.param("c2.w", {out, ch / 2, 3, 2}), Value(), {1, 1},
                   {2, 2, 2, 2}, {2, 2}, 2));
  m.observe("depthwise", o.conv(x, m.param("c3.w", {ch, 1, 3, 3}),
                                m.param("c3.b", {ch}), {1, 2}, {1, 1, 1, 1},
                                {1, 1}, ch));
  m.observe("relu_fused",
            o.unary<nn::ReluOp>(o.conv(x, m.param("c4.w", {out, ch, 2, 2}),
                                       m.param("c4.b", {out}), {1, 1},
                                       {0, 0, 0, 0}, {1, 1}, 1)));
  m.observe("relu_fused_strided",
            o.unary<nn::ReluOp>(o.conv(x, m.param("c5.w", {out, ch, 3, 2}),
                                       Value(), {2, 1}, {0, 1, 1, 0}, {1, 2},
                                       1)));
  return m.finish();
}

/// Max and average pooling with padding, strides, dilation, ceil mode and
/// count_include_pad, and global average pooling. H is even and W odd so
/// that ceil mode adds a window along H for the 3x3/2 pool (pad 1) and
/// along W for the 2x2/2 pool (no pad).
Model pooling(MLIRContext *ctx, std::mt19937_64 &rng) {
  ModelBuilder m(ctx, rng, randomDim(rng, 2, 4));
  Ops o{m};
  int64_t ch = m.dim(1, 3), h = 2 * m.dim(3, 5), w = 2 * m.dim(3, 4) + 1;
  Value x = m.scaled("x.s", m.input("x", {ch, h, w}), {ch, 1, 1}, -1, 1);
  m.observe("max_k3s2p1_ceil",
            o.maxPool(x, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, true));
  m.observe("max_k2", o.maxPool(x, {2, 2}, {}, {0, 0, 0, 0}, {1, 1}, false));
  m.observe("max_dilated",
            o.maxPool(x, {2, 2}, {1, 1}, {0, 0, 0, 0}, {2, 2}, false));
  m.observe("max_asymmetric",
            o.maxPool(x, {3, 2}, {2, 1}, {1, 0, 0, 1}, {1, 1}, false));
  m.observe("avg_k3s2p1_include_pad",
            o.avgPool(x, {3, 3}, {2, 2}, {1, 1, 1, 1}, false, true));
  m.observe("avg_k3s2p1_exclude_pad",
            o.avgPool(x, {3, 3}, {2, 2}, {1, 1, 1, 1}, false, false));
  m.observe("avg_k2s2_ceil",
            o.avgPool(x, {2, 2}, {2, 2}, {0, 0, 0, 0}, true, false));
  m.observe("avg_k2", o.avgPool(x, {2, 2}, {}, {0, 0, 0, 0}, false, false));
  m.observe("global_avg",
            nn::GlobalAvgPoolOp::create(m.b(), m.loc(), x).getResult());
  return m.finish();
}

//===----------------------------------------------------------------------===//
// Normalisation, dropout, embedding
//===----------------------------------------------------------------------===//

/// Batch normalisation in training mode (4-D and 2-D, running statistics
/// updated and compared) and in inference mode inside the training step;
/// @eval_step runs the training-mode ones in inference mode.
Model batchNorm(MLIRContext *ctx, std::mt19937_64 &rng) {
  // Statistics of 3 or 4 samples make the input gradient a small
  // difference of large terms; 6 to 8 samples keep it well conditioned.
  ModelBuilder m(ctx, rng, randomDim(rng, 6, 8));
  Ops o{m};
  int64_t ch = m.dim(2, 4), h = m.dim(2, 4), w = m.dim(2, 4), f = m.dim(2, 5);
  // Normalisation is invariant to a per-channel affine map of its input,
  // so a per-channel parameter in front of it would get a gradient that is
  // pure cancellation (zero but for epsilon). The parameter varies within
  // each channel instead (4-D), or goes through a nonlinearity (2-D).
  Value x4 = m.scaled("x4.s", m.input("x4", {ch, h, w}), {ch, h, w});
  Value x2 = o.unary<nn::TanhOp>(m.scaled("x2.s", m.input("x2", {f}), {f}));
  auto bn = [&](StringRef name, Value x, int64_t c, double eps, double mom,
                bool training) {
    auto op = o.batchNorm(x, m.param((name + ".weight").str(), {c}, 0.5, 1.5),
                          m.param((name + ".bias").str(), {c}),
                          m.buffer((name + ".running_mean").str(), {c}, -0.5,
                                   0.5),
                          m.buffer((name + ".running_var").str(), {c}, 0.5,
                                   1.5),
                          eps, mom, training);
    // Per-sample weights on the output: with a probe that is the same for
    // every sample, the gradients of a batch statistic's consumers cancel
    // exactly (sum_i xhat_i = 0) and only rounding noise would be compared.
    m.observe(name, o.mul(op.getResult(),
                          m.input((name + ".mix").str(),
                                  typeOf(x).getShape().drop_front())));
    if (training) {
      m.updateBuffer((name + ".running_mean").str(), op.getRunningMeanOut());
      m.updateBuffer((name + ".running_var").str(), op.getRunningVarOut());
    }
  };
  bn("bn4", x4, ch, 1e-5, 0.1, true);
  bn("bn2", x2, f, 1e-3, 0.3, true);
  bn("frozen", x4, ch, 1e-5, 0.1, false);
  return m.finish();
}

/// Layer normalisation over the last and over inner+last dimensions, with
/// scale and bias, scale only, bias only, neither.
Model layerNorm(MLIRContext *ctx, std::mt19937_64 &rng) {
  ModelBuilder m(ctx, rng, randomDim(rng, 3, 5));
  Ops o{m};
  int64_t a = m.dim(2, 4), c = m.dim(3, 6);
  Value x = m.scaled("x.s", m.input("x", {a, c}), {c}, -1.5, 1.5);
  m.observe("last", o.layerNorm(x, m.param("last.g", {c}, 0.5, 1.5),
                                m.param("last.b", {c}), -1, 1e-5));
  m.observe("inner_scale",
            o.layerNorm(x, m.param("inner.g", {a, c}, 0.5, 1.5), Value(), 1,
                        1e-5));
  m.observe("bias_only", o.layerNorm(x, Value(), m.param("bo.b", {c}), 2, 1e-5));
  m.observe("plain", o.layerNorm(x, Value(), Value(), -1, 1e-3));
  return m.finish();
}

/// Rows longer than 512 elements, few of them: the cuda target reduces each
/// row with a block of threads and `gpu.all_reduce` (docs/design/gpu.md),
/// the CPU with one loop. Softmax and log-softmax (maximum, then sum),
/// cross-entropy, layer norm (mean and variance) and, through the training
/// step, their gradients.
Model wideRows(MLIRContext *ctx, std::mt19937_64 &rng) {
  ModelBuilder m(ctx, rng, randomDim(rng, 2, 3));
  Ops o{m};
  int64_t classes = m.dim(513, 700);
  Value logits = o.add(m.scaled("l.s", m.input("x", {classes}, -2, 2),
                                {classes}),
                       m.param("l.b", {classes}));
  Value labels = m.indexInput("lbl", {}, classes);
  m.observe("softmax", o.softmax<nn::SoftmaxOp>(logits, -1));
  m.observe("log_softmax", o.softmax<nn::LogSoftmaxOp>(logits, 1));
  m.observeGlobal("ce_mean", o.crossEntropy(logits, labels, Reduction::mean));
  m.observe("layer_norm",
            o.layerNorm(logits, m.param("ln.g", {classes}, 0.5, 1.5),
                        m.param("ln.b", {classes}), -1, 1e-5));
  return m.finish();
}

/// Dropout with two ratios and streams; @eval_step drops it. The seed
/// advances every micro-step, in both implementations.
Model dropout(MLIRContext *ctx, std::mt19937_64 &rng) {
  int64_t batch = randomDim(rng, 3, 6);
  ModelBuilder m(ctx, rng, batch);
  Ops o{m};
  int64_t a = m.dim(2, 4), c = m.dim(3, 8);
  Value x = m.scaled("x.s", m.input("x", {a, c}), {c}, -1.5, 1.5);
  Value seed = m.seed();
  m.observe("dropout_03", o.dropout(x, seed, 0.3, 0));
  m.observe("dropout_05", o.dropout(o.reshape(x, {batch, a * c}), seed, 0.5, 1));
  return m.finish();
}

/// Lookups with i64 and i32 indices into small tables, so that indices
/// repeat and embedding_grad must add rows up.
Model embedding(MLIRContext *ctx, std::mt19937_64 &rng) {
  ModelBuilder m(ctx, rng, randomDim(rng, 3, 6));
  Ops o{m};
  int64_t v = m.dim(3, 5), d = m.dim(2, 5), s = m.dim(2, 4);
  Value ids = m.indexInput("ids", {s}, v);
  Value ids32 = m.indexInput("ids32", {}, v + 1, /*i32=*/true);
  m.observe("lookup", o.embedding(ids, m.param("emb.weight", {v, d})));
  m.observe("lookup_i32",
            o.embedding(ids32, m.param("emb32.weight", {v + 1, d})));
  return m.finish();
}

/// Gathers on activations at per-sample indices: nn.gather along a middle
/// axis (the result crosses samples, so it is observed globally) and
/// nn.gather_elements along the sequence (`torch.gather`), with small axes
/// so that indices repeat and the scatter-adds must add up.
Model gather(MLIRContext *ctx, std::mt19937_64 &rng) {
  int64_t batch = randomDim(rng, 3, 6);
  ModelBuilder m(ctx, rng, batch);
  int64_t t = m.dim(2, 4), d = m.dim(2, 4), k = m.dim(1, 3);
  Value x = m.scaled("x.s", m.input("x", {t, d}), {d}, -1.5, 1.5);
  Value pos = m.indexInput("pos", {k}, t);
  Value picks = m.indexInput("picks", {k, d}, t, /*i32=*/true);
  OpBuilder &b = m.b();
  m.observeGlobal("gather_axis1",
                  nn::GatherOp::create(b, m.loc(), x, pos, /*axis=*/1));
  m.observe("gather_elements",
            nn::GatherElementsOp::create(b, m.loc(), x, picks, /*axis=*/1));
  // The last row of each sample of the flattened [B * t, d] tensor at float
  // indices iota * t + t - 1 (the importer's `x[torch.arange(B), t - 1]`).
  Ops o{m};
  Value rows = nn::IotaOp::create(b, m.loc(), x, 0, b.getF32Type());
  auto f32 = RankedTensorType::get({}, b.getF32Type());
  Value stride = arith::ConstantOp::create(
      b, m.loc(), DenseElementsAttr::get(f32, float(t)));
  Value last = arith::ConstantOp::create(
      b, m.loc(), DenseElementsAttr::get(f32, float(t - 1)));
  m.observe("gather_last_rows",
            nn::GatherOp::create(b, m.loc(), o.reshape(x, {batch * t, d}),
                                 o.add(o.mul(rows, stride), last),
                                 /*axis=*/0));
  return m.finish();
}

//===----------------------------------------------------------------------===//
// Whole models
//===----------------------------------------------------------------------===//

Model example(MLIRContext *ctx, StringRef file, int64_t batch) {
  std::string path = std::string(CLEAVE_SOURCE_DIR) + "/examples/" + file.str();
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer) {
    ADD_FAILURE() << "cannot read " << path;
    return {};
  }
  std::string errors;
  Model m;
  m.module = test::parseModule(ctx, (*buffer)->getBuffer(), &errors);
  if (!m.module)
    ADD_FAILURE() << path << ":\n" << errors;
  m.batch = batch;
  m.inputs = {{"image", interp::DType::f32, {1, 28, 28}, 0, 1},
              {"labels", interp::DType::i64, {}, 0, 10}};
  return m;
}

} // namespace

const std::vector<Case> &backend_test::allCases() {
  static const std::vector<Case> cases = [] {
    std::vector<Case> c;
    c.reserve(32); // add() returns pointers into it
    auto add = [&](std::string name,
                   std::function<Model(MLIRContext *, std::mt19937_64 &)> build,
                   std::string optimizer) {
      Case k;
      k.name = std::move(name);
      k.build = std::move(build);
      k.optimizer = std::move(optimizer);
      // The adaptive rules move each element by about lr a step.
      if (k.optimizer == "adam" || k.optimizer == "adamw" ||
          k.optimizer == "rmsprop" || k.optimizer == "adagrad" ||
          k.optimizer == "lamb")
        k.lr = 0.01;
      else if (k.optimizer != "sgd")
        k.lr = 0.05;
      c.push_back(std::move(k));
      return &c.back();
    };
    add("binary", binary, "sgd");
    add("unary", unary, "momentum");
    add("matmul", matmul, "nesterov");
    add("linear", linear, "adam");
    add("shapes", shapes, "adamw")->clipNorm = 1e-3;
    add("reductions", reductions, "sgd")->clipNorm = 1e-3;
    add("softmax_losses", softmaxAndLosses, "momentum");
    add("attention", attention, "adam");
    add("fused_attention", fusedAttention, "adam");
    add("conv", conv, "adam");
    add("pooling", pooling, "sgd");
    // A 2-D training batch norm of one real sample has one value per
    // channel: an error in the reference (as in PyTorch), while compiled
    // code cannot fail at run time and normalises with variance 0.
    add("batch_norm", batchNorm, "momentum")->minShortBatch = 2;
    add("layer_norm", layerNorm, "nesterov");
    add("wide_rows", wideRows, "adam")->clipNorm = 1e-3;
    add("dropout", dropout, "adamw");
    add("embedding", embedding, "sgd");
    add("gather", gather, "momentum");
    // The other optimizers on models with weights and rank-1 parameters
    // (which lamb and lars exempt from weight decay and the trust ratio).
    add("linear_rmsprop", linear, "rmsprop");
    add("conv_adagrad", conv, "adagrad");
    add("layer_norm_lamb", layerNorm, "lamb");
    add("batch_norm_lars", batchNorm, "lars")->minShortBatch = 2;
    Case *mlp = add(
        "mlp", [](MLIRContext *ctx, std::mt19937_64 &) {
          return example(ctx, "mlp.mlir", 6);
        },
        "momentum");
    mlp->loss = "cross-entropy";
    // One rank: the cross-rank reduction is the identity, but it is
    // compiled, called and must leave the window exact.
    mlp->reduce = "mean";
    Case *lenet = add(
        "lenet", [](MLIRContext *ctx, std::mt19937_64 &) {
          return example(ctx, "lenet.mlir", 4);
        },
        "adam");
    lenet->loss = "cross-entropy";
    lenet->clipNorm = 1e-3;
    return c;
  }();
  return cases;
}
