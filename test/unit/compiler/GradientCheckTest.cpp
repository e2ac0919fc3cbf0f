//===- GradientCheckTest.cpp - VJPs vs central finite differences ---------===//
//
// Every differentiable nn op, in its attribute variants, is checked the same
// way: a small f64 function f(params..., R) = sum(op(params...) * R), with R
// a fixed random tensor so that every output element matters, goes through
// cleave-autodiff; the interpreter runs @f_grad, and each gradient element
// is compared with a central finite difference of @f.
//
// Criterion. With h = 1e-6 * max(1, |x|), the central difference has a
// truncation error O(h^2) and a round-off error of about eps * |f| / h,
// which is absolute: it does not shrink with the gradient element (a case
// computed partly in f32 sets a larger step, where its function is
// quadratic and so has no truncation error). So an element passes when
//
//   |g - fd| <= 1e-4 * max(|g|, |fd|, 1e-3 * max_k |fd_k|)
//
// where the max over k runs over the whole gradient tensor: relative error
// 1e-4 for every element within three orders of magnitude of the tensor's
// largest, and an absolute error of 1e-7 of that largest below it.
//
// Inputs are drawn away from the kinks of relu, leaky_relu, clamp (at +-0.5)
// and max (|x| in [0.2, 1], continuous values so ties have probability
// zero), and positive where the op needs it (log, sqrt, pow 0.5, running
// variances).
//
//===----------------------------------------------------------------------===//

#include "TestSupport.h"

#include "dialects/NN/IR/NNOps.h"
#include "dialects/Train/IR/TrainDialect.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/xxhash.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <sstream>

using namespace mlir;
using namespace mlir::cleave;
using interp::DType;
using interp::State;
using interp::Tensor;

namespace {

//===----------------------------------------------------------------------===//
// Cases
//===----------------------------------------------------------------------===//

/// How float arguments are drawn.
enum class Draw {
  /// |x| uniform in [0.2, 1], random sign.
  Signed,
  /// x uniform in [0.5, 1.5].
  Positive,
};

struct GradCase {
  std::string name;
  /// `func.func @f` returning the op's result.
  std::string source;
  Draw draw = Draw::Signed;
  /// The values of the integer arguments, in argument order.
  std::vector<std::vector<int64_t>> ints;
  /// The finite-difference step relative to max(1, |x|).
  double step = 1e-6;
};

void PrintTo(const GradCase &c, std::ostream *os) { *os << c.name; }

/// "tensor<3x4xf64>" for "3x4", "tensor<f64>" for "".
std::string T(StringRef shape) {
  return "tensor<" + shape.str() + (shape.empty() ? "" : "x") + "f64>";
}

/// A differentiated argument.
std::string P(StringRef name, StringRef shape) {
  return "%" + name.str() + ": " + T(shape) + " {train.param = \"" +
         name.str() + "\"}";
}

/// A non-differentiated argument of type `type`.
std::string A(StringRef name, StringRef type) {
  return "%" + name.str() + ": " + type.str();
}

/// A function of `args` whose `body` defines %y of type `result`.
GradCase fn(StringRef name, ArrayRef<std::string> args, StringRef body,
            StringRef result, Draw draw = Draw::Signed,
            std::vector<std::vector<int64_t>> ints = {}) {
  std::string src = "func.func @f(" + llvm::join(args, ", ") + ") -> " +
                    result.str() + " {\n  " + body.str() +
                    "\n  return %y : " + result.str() + "\n}\n";
  return GradCase{name.str(), src, draw, std::move(ints)};
}

/// An op of one operand `x` of `shape` with the same result type.
GradCase unary(StringRef name, StringRef op, StringRef shape,
               Draw draw = Draw::Signed, StringRef attrs = "") {
  std::string t = T(shape);
  return fn(name, {P("x", shape)},
            "%y = nn." + op.str() + " %x" + attrs.str() + " : " + t, t, draw);
}

/// A binary op on `a` and `b` with numpy broadcasting.
GradCase binary(StringRef name, StringRef op, StringRef a, StringRef b,
                StringRef out, Draw draw = Draw::Signed) {
  return fn(name, {P("a", a), P("b", b)},
            "%y = nn." + op.str() + " %a, %b : " + T(a) + ", " + T(b) + " -> " +
                T(out),
            T(out), draw);
}

std::vector<GradCase> allCases() {
  std::vector<GradCase> c;
  // Elementwise binary, with every broadcasting pattern.
  c.push_back(binary("add_broadcast_rhs", "add", "3x4", "4", "3x4"));
  c.push_back(binary("add_broadcast_both", "add", "3x1", "1x4", "3x4"));
  c.push_back(binary("sub_broadcast_rank", "sub", "2x3x4", "3x1", "2x3x4"));
  c.push_back(binary("sub_broadcast_lhs", "sub", "4", "3x4", "3x4"));
  c.push_back(binary("mul_broadcast_column", "mul", "3x4", "3x1", "3x4"));
  c.push_back(binary("mul_scalar", "mul", "3x4", "", "3x4"));
  c.push_back(
      binary("div_broadcast_rhs", "div", "3x4", "4", "3x4", Draw::Positive));
  c.push_back(
      binary("div_broadcast_lhs", "div", "1x4", "3x1", "3x4", Draw::Positive));
  c.push_back(
      binary("powf_broadcast_rhs", "powf", "3x4", "4", "3x4", Draw::Positive));
  c.push_back(binary("powf_broadcast_both", "powf", "3x1", "1x4", "3x4",
                     Draw::Positive));
  // Negative bases with integral exponents (a constant: the exponent's
  // cotangent would be NaN), 0 among them.
  c.push_back(fn("powf_negative_base", {P("a", "3x4")},
                 "%e = arith.constant dense<[[3.0, 2.0, 0.0, -1.0]]> : " +
                     T("1x4") + "\n  %y = nn.powf %a, %e : " + T("3x4") + ", " +
                     T("1x4") + " -> " + T("3x4"),
                 T("3x4")));

  // Elementwise unary.
  c.push_back(unary("neg", "neg", "3x4"));
  c.push_back(unary("exp", "exp", "3x4"));
  c.push_back(unary("log", "log", "3x4", Draw::Positive));
  c.push_back(unary("sqrt", "sqrt", "3x4", Draw::Positive));
  c.push_back(unary("erf", "erf", "3x4"));
  c.push_back(unary("relu", "relu", "3x4"));
  c.push_back(unary("sigmoid", "sigmoid", "3x4"));
  c.push_back(unary("tanh", "tanh", "3x4"));
  c.push_back(unary("sin", "sin", "3x4"));
  c.push_back(unary("cos", "cos", "3x4"));
  // Rounding is a constant to autodiff; its derivative is 0 away from the
  // steps (|x| in [0.2, 1] meets none but +-0.5 and +-1, with probability
  // zero), so the gradient of x * (floor + ceil + round)(x) is the sum.
  c.push_back(fn(
      "rounding_is_constant", {P("x", "3x4")},
      "%f = nn.floor %x : " + T("3x4") + "\n  %c = nn.ceil %x : " + T("3x4") +
          "\n  %r = nn.round %x : " + T("3x4") +
          "\n  %s = nn.add %f, %c : " + T("3x4") + ", " + T("3x4") + " -> " +
          T("3x4") + "\n  %t = nn.add %s, %r : " + T("3x4") + ", " + T("3x4") +
          " -> " + T("3x4") + "\n  %y = nn.mul %t, %x : " + T("3x4") + ", " +
          T("3x4") + " -> " + T("3x4"),
      T("3x4")));
  // f32 -> f64 -> f32: the cotangent is cast back at each step. The square
  // in f64 makes the function more than the identity; it is quadratic in
  // x, so the central difference is exact at any step, and a step of 0.1
  // keeps the f32 rounding of x +- h and of the loss (6e-8 relative) far
  // below the criterion, where 1e-6 would magnify it past it.
  {
    std::string t32 = "tensor<3x4xf32>", t64 = "tensor<3x4xf64>";
    c.push_back(fn("cast_f32_f64_f32",
                   {"%x: " + t32 + " {train.param = \"x\"}"},
                   "%d = nn.cast %x : " + t32 + " -> " + t64 +
                       "\n  %s = nn.mul %d, %d : " + t64 + ", " + t64 + " -> " +
                       t64 + "\n  %y = nn.cast %s : " + t64 + " -> " + t32,
                   t32));
    c.back().step = 0.1;
  }
  // A cast to an integer type is a constant to autodiff, as rounding: the
  // gradient of x * trunc(4x), truncated through i64, is trunc(4x) (the
  // steps at multiples of 0.25 are met with probability zero).
  c.push_back(fn("cast_to_integer_is_constant", {P("x", "3x4")},
                 "%k = arith.constant dense<4.0> : " + T("") +
                     "\n  %s = nn.mul %x, %k : " + T("3x4") + ", " + T("") +
                     " -> " + T("3x4") + "\n  %i = nn.cast %s : " + T("3x4") +
                     " -> tensor<3x4xi64>\n  %t = nn.cast %i : "
                     "tensor<3x4xi64> -> " +
                     T("3x4") + "\n  %y = nn.mul %t, %x : " + T("3x4") + ", " +
                     T("3x4") + " -> " + T("3x4"),
                 T("3x4")));
  c.push_back(fn("pow_2", {P("x", "3x4")}, "%y = nn.pow %x, 2.0 : " + T("3x4"),
                 T("3x4")));
  c.push_back(fn("pow_3", {P("x", "3x4")}, "%y = nn.pow %x, 3.0 : " + T("3x4"),
                 T("3x4")));
  c.push_back(fn("pow_half", {P("x", "3x4")},
                 "%y = nn.pow %x, 0.5 : " + T("3x4"), T("3x4"),
                 Draw::Positive));
  c.push_back(unary("leaky_relu", "leaky_relu", "3x4", Draw::Signed,
                    " {alpha = 0.1 : f64}"));
  // Bounds at +-0.5 put some elements inside and some clamped.
  c.push_back(fn("clamp", {P("x", "3x4")},
                 "%y = nn.clamp %x, -0.5, 0.5 : " + T("3x4"), T("3x4")));
  c.push_back(fn("clamp_upper_only", {P("x", "3x4")},
                 "%y = nn.clamp %x, 0xFFF0000000000000, 0.5 : " + T("3x4"),
                 T("3x4")));
  c.push_back(unary("gelu_erf", "gelu", "3x4"));
  c.push_back(unary("gelu_tanh", "gelu", "3x4", Draw::Signed,
                    " {approximate = #nn.gelu_approximation<tanh>}"));

  // Matrix products: every transpose, batched and shared rhs.
  auto matmul = [&](StringRef name, StringRef a, StringRef b, StringRef out,
                    StringRef attrs) {
    c.push_back(fn(name, {P("a", a), P("b", b)},
                   "%y = nn.matmul %a, %b" + attrs.str() + " : " + T(a) + ", " +
                       T(b) + " -> " + T(out),
                   T(out)));
  };
  matmul("matmul", "3x4", "4x5", "3x5", "");
  matmul("matmul_ta", "4x3", "4x5", "3x5", " {transpose_a}");
  matmul("matmul_tb", "3x4", "5x4", "3x5", " {transpose_b}");
  matmul("matmul_ta_tb", "4x3", "5x4", "3x5", " {transpose_a, transpose_b}");
  matmul("matmul_batched", "2x3x4", "2x4x5", "2x3x5", "");
  matmul("matmul_batched_ta_tb", "2x4x3", "2x5x4", "2x3x5",
         " {transpose_a, transpose_b}");
  matmul("matmul_shared_rhs", "2x3x4", "4x5", "2x3x5", "");
  matmul("matmul_shared_rhs_ta", "2x4x3", "4x5", "2x3x5", " {transpose_a}");
  matmul("matmul_shared_rhs_tb", "2x3x4", "5x4", "2x3x5", " {transpose_b}");
  matmul("matmul_rank4_shared_rhs_ta_tb", "2x2x4x3", "5x4", "2x2x3x5",
         " {transpose_a, transpose_b}");
  matmul("matmul_rank4_batched", "2x2x3x4", "2x2x4x5", "2x2x3x5", "");

  auto linear = [&](StringRef name, StringRef x, StringRef out, bool bias) {
    std::vector<std::string> args = {P("x", x), P("w", "5x4")};
    std::string body = "%y = nn.linear %x, %w";
    std::string types = T(x) + ", " + T("5x4");
    if (bias) {
      args.push_back(P("b", "5"));
      body += ", %b";
      types += ", " + T("5");
    }
    c.push_back(fn(name, args, body + " : " + types + " -> " + T(out), T(out)));
  };
  linear("linear_bias", "3x4", "3x5", true);
  linear("linear_no_bias", "3x4", "3x5", false);
  linear("linear_rank3_bias", "2x3x4", "2x3x5", true);
  linear("linear_rank3_no_bias", "2x3x4", "2x3x5", false);
  linear("linear_rank1_bias", "4", "5", true);

  // Shape ops.
  c.push_back(
      fn("reshape", {P("x", "2x3x4")},
         "%y = nn.reshape %x [4, -1] : " + T("2x3x4") + " -> " + T("4x6"),
         T("4x6")));
  c.push_back(fn("flatten_axis1", {P("x", "2x3x4")},
                 "%y = nn.flatten %x : " + T("2x3x4") + " -> " + T("2x12"),
                 T("2x12")));
  c.push_back(
      fn("flatten_axis2", {P("x", "2x3x4")},
         "%y = nn.flatten %x {axis = 2} : " + T("2x3x4") + " -> " + T("6x4"),
         T("6x4")));
  c.push_back(
      fn("transpose", {P("x", "2x3x4")},
         "%y = nn.transpose %x [2, 0, 1] : " + T("2x3x4") + " -> " + T("4x2x3"),
         T("4x2x3")));
  c.push_back(fn("concat", {P("a", "2x3"), P("b", "2x1"), P("c", "2x2")},
                 "%y = nn.concat %a, %b, %c {axis = 1} : " + T("2x3") + ", " +
                     T("2x1") + ", " + T("2x2") + " -> " + T("2x6"),
                 T("2x6")));
  c.push_back(fn("slice_strided", {P("x", "5x7")},
                 "%y = nn.slice %x starts [1, 0] sizes [2, 3] strides [2, 3] "
                 ": " +
                     T("5x7") + " -> " + T("2x3"),
                 T("2x3")));
  // nn.where: the mask (no gradient) broadcasts, each side gets the
  // cotangent where it is selected, summed to its shape.
  c.push_back(fn("where", {P("a", "4"), P("b", "3x4")},
                 "%m = arith.constant dense<[[1.0, 0.0, 1.0, 0.0], [0.0, 0.0, "
                 "1.0, 1.0], [1.0, 1.0, 0.0, 0.0]]> : " +
                     T("3x4") + "\n  %y = nn.where %m, %a, %b : " + T("3x4") +
                     ", " + T("4") + ", " + T("3x4") + " -> " + T("3x4"),
                 T("3x4")));
  // A -1 size runs to the end of the dimension (the importer's whole batch).
  c.push_back(fn("slice_to_end", {P("x", "5x7")},
                 "%y = nn.slice %x starts [0, 2] sizes [-1, -1] strides "
                 "[1, 2] : " +
                     T("5x7") + " -> " + T("5x3"),
                 T("5x3")));
  c.push_back(fn("pad_strided", {P("x", "2x3")},
                 "%y = nn.pad %x starts [1, 1] strides [2, 1] shape [5, 4] : " +
                     T("2x3") + " -> " + T("5x4"),
                 T("5x4")));
  c.push_back(fn("broadcast_to", {P("x", "3x1")},
                 "%y = nn.broadcast_to %x [2, 3, 4] : " + T("3x1") + " -> " +
                     T("2x3x4"),
                 T("2x3x4")));
  // -1 is the batch size, dimension 0 of the (integer) batch source, which
  // takes no gradient.
  c.push_back(
      fn("broadcast_to_batch_of", {P("x", "3x1"), A("ids", "tensor<2x5xi64>")},
         "%y = nn.broadcast_to %x [-1, 3, 4] batch_of %ids : " + T("3x1") +
             ", tensor<2x5xi64> -> " + T("2x3x4"),
         T("2x3x4"), Draw::Signed, {{0, 1, 2, 3, 4, 0, 1, 2, 3, 4}}));

  // Reductions, keepdims on and off.
  auto reduce = [&](StringRef name, StringRef op, StringRef axes,
                    StringRef attrs, StringRef out) {
    c.push_back(fn(name, {P("x", "2x3x4")},
                   "%y = nn." + op.str() + " %x " + axes.str() + attrs.str() +
                       " : " + T("2x3x4") + " -> " + T(out),
                   T(out)));
  };
  reduce("reduce_sum_keepdims", "reduce_sum", "[1]", " {keepdims}", "2x1x4");
  reduce("reduce_sum", "reduce_sum", "[1]", "", "2x4");
  reduce("reduce_sum_all", "reduce_sum", "[]", "", "");
  reduce("reduce_mean_keepdims", "reduce_mean", "[0, 2]", " {keepdims}",
         "1x3x1");
  reduce("reduce_mean", "reduce_mean", "[0, 2]", "", "3");
  reduce("reduce_mean_all_keepdims", "reduce_mean", "[]", " {keepdims}",
         "1x1x1");
  reduce("reduce_max_keepdims", "reduce_max", "[2]", " {keepdims}", "2x3x1");
  reduce("reduce_max", "reduce_max", "[-1]", "", "2x3");
  reduce("reduce_max_all", "reduce_max", "[]", "", "");

  // Softmax and losses.
  c.push_back(
      unary("softmax_axis0", "softmax", "4x5", Draw::Signed, " {axis = 0}"));
  c.push_back(
      unary("softmax_axis1", "softmax", "4x5", Draw::Signed, " {axis = 1}"));
  c.push_back(unary("log_softmax_axis0", "log_softmax", "4x5", Draw::Signed,
                    " {axis = 0}"));
  c.push_back(unary("log_softmax_axis1", "log_softmax", "4x5", Draw::Signed,
                    " {axis = -1}"));
  for (auto [reduction, out] : {std::pair<StringRef, StringRef>{"none", "4"},
                                {"sum", ""},
                                {"mean", ""}})
    c.push_back(fn(("cross_entropy_" + reduction).str(),
                   {P("x", "4x5"), A("l", "tensor<4xi64>")},
                   "%y = nn.cross_entropy %x, %l {reduction = #nn.reduction<" +
                       reduction.str() + ">} : " + T("4x5") +
                       ", tensor<4xi64> -> " + T(out),
                   T(out), Draw::Signed, {{1, 4, 0, 2}}));
  c.push_back(unary("softmax_rank3_axis1", "softmax", "2x3x4", Draw::Signed,
                    " {axis = 1}"));
  // Attention: key and value of another length than the query, heads in
  // their own dimension, a causal mask with a divided scale, and an
  // additive mask that is itself differentiated (a learned bias).
  c.push_back(fn("attention", {P("q", "3x4"), P("k", "5x4"), P("v", "5x2")},
                 "%y = nn.attention %q, %k, %v : " + T("3x4") + ", " +
                     T("5x4") + ", " + T("5x2") + " -> " + T("3x2"),
                 T("3x2")));
  c.push_back(fn("attention_causal_divided_heads",
                 {P("q", "2x2x4x3"), P("k", "2x2x4x3"), P("v", "2x2x4x3")},
                 "%y = nn.attention %q, %k, %v {scale = 1.7 : f64, "
                 "scale_is_divisor, causal} : " +
                     T("2x2x4x3") + ", " + T("2x2x4x3") + ", " + T("2x2x4x3") +
                     " -> " + T("2x2x4x3"),
                 T("2x2x4x3")));
  c.push_back(fn("attention_transposed_key",
                 {P("q", "2x3x4"), P("kt", "2x4x5"), P("v", "2x5x3")},
                 "%k = nn.transpose %kt [0, 2, 1] : " + T("2x4x5") + " -> " +
                     T("2x5x4") +
                     "\n  %y = nn.attention %q, %k, %v : " + T("2x3x4") + ", " +
                     T("2x5x4") + ", " + T("2x5x3") + " -> " + T("2x3x3"),
                 T("2x3x3")));
  c.push_back(fn(
      "attention_mask_scale",
      {P("q", "2x3x4"), P("k", "2x5x4"), P("v", "2x5x3"), P("m", "2x1x5")},
      "%y = nn.attention %q, %k, %v, %m {scale = 0.5 : f64} : " + T("2x3x4") +
          ", " + T("2x5x4") + ", " + T("2x5x3") + ", " + T("2x1x5") + " -> " +
          T("2x3x3"),
      T("2x3x3")));
  // Dropout on the probabilities: a fixed seed draws a fixed mask, so the
  // op is differentiable in q, k and v; dP goes through the same mask.
  c.push_back(fn("attention_dropout_causal",
                 {P("q", "2x2x4x3"), P("k", "2x2x4x3"), P("v", "2x2x4x3")},
                 "%seed = arith.constant dense<11> : tensor<i64>\n"
                 "  %y = nn.attention %q, %k, %v dropout(%seed : tensor<i64>) "
                 "{scale = 1.7 : f64, scale_is_divisor, causal, "
                 "dropout_ratio = 0.4 : f64, dropout_stream = 2 : i64} : " +
                     T("2x2x4x3") + ", " + T("2x2x4x3") + ", " + T("2x2x4x3") +
                     " -> " + T("2x2x4x3"),
                 T("2x2x4x3")));
  // Fused attention (cuda's cuDNN kernels): the VJP is one
  // nn.fused_attention_grad from the forward's log-sum-exp, whose result
  // the check does not read; causal with a divided scale over heads, and a
  // constant additive mask with another key length.
  c.push_back(fn("fused_attention_causal_divided_heads",
                 {P("q", "2x2x4x3"), P("k", "2x2x4x3"), P("v", "2x2x4x3")},
                 "%y, %lse = nn.fused_attention %q, %k, %v {scale = 1.7 : f64, "
                 "scale_is_divisor, causal} : (" +
                     T("2x2x4x3") + ", " + T("2x2x4x3") + ", " + T("2x2x4x3") +
                     ") -> (" + T("2x2x4x3") + ", " + T("2x2x4") + ")",
                 T("2x2x4x3")));
  c.push_back(
      fn("fused_attention_constant_mask",
         {P("q", "2x3x4"), P("k", "2x5x4"), P("v", "2x5x3")},
         "%m = arith.constant dense<[[0.0, -1.0, 0.5, -2.0, 0.0], [1.0, 0.0, "
         "-0.5, 0.0, -1.0], [0.0, 0.0, 0.0, -3.0, 0.25]]> : " +
             T("3x5") +
             "\n  %y, %lse = nn.fused_attention %q, %k, %v, %m "
             "{scale = 0.5 : f64} : (" +
             T("2x3x4") + ", " + T("2x5x4") + ", " + T("2x5x3") + ", " +
             T("3x5") + ") -> (" + T("2x3x3") + ", " + T("2x3") + ")",
         T("2x3x3")));
  // Fused attention with dropout: a constant keep mask (1 kept, 0
  // dropped), the probabilities times keep / (1 - r) forward and dP through
  // the same factor in the gradient kernel.
  c.push_back(fn("fused_attention_dropout",
                 {P("q", "2x3x4"), P("k", "2x3x4"), P("v", "2x3x3")},
                 "%keep = arith.constant dense<[[[1.0, 0.0, 1.0], [1.0, 1.0, "
                 "0.0], [0.0, 1.0, 1.0]], [[1.0, 1.0, 1.0], [0.0, 1.0, 1.0], "
                 "[1.0, 0.0, 1.0]]]> : " +
                     T("2x3x3") +
                     "\n  %y, %lse = nn.fused_attention %q, %k, %v "
                     "keep(%keep) {scale = 0.5 : f64, dropout_ratio = 0.25 : "
                     "f64} : (" +
                     T("2x3x4") + ", " + T("2x3x4") + ", " + T("2x3x3") + ", " +
                     T("2x3x3") + ") -> (" + T("2x3x3") + ", " + T("2x3") + ")",
                 T("2x3x3")));
  c.push_back(fn("cross_entropy_i32_labels",
                 {P("x", "3x4"), A("l", "tensor<3xi32>")},
                 "%y = nn.cross_entropy %x, %l : " + T("3x4") +
                     ", tensor<3xi32> -> " + T(""),
                 T(""), Draw::Signed, {{3, 0, 3}}));
  for (auto [reduction, out] : {std::pair<StringRef, StringRef>{"none", "4"},
                                {"sum", ""},
                                {"mean", ""}})
    c.push_back(fn(("mse_" + reduction).str(), {P("x", "4x3"), P("t", "4x3")},
                   "%y = nn.mse_loss %x, %t {reduction = #nn.reduction<" +
                       reduction.str() + ">} : " + T("4x3") + ", " + T("4x3") +
                       " -> " + T(out),
                   T(out)));
  c.push_back(
      fn("mse_rank3", {P("x", "3x2x2"), P("t", "3x2x2")},
         "%y = nn.mse_loss %x, %t {reduction = #nn.reduction<none>} : " +
             T("3x2x2") + ", " + T("3x2x2") + " -> " + T("3"),
         T("3")));

  // Convolution.
  auto conv = [&](StringRef name, StringRef x, StringRef w, StringRef out,
                  StringRef attrs, bool bias) {
    std::vector<std::string> args = {P("x", x), P("w", w)};
    std::string body = "%y = nn.conv2d %x, %w";
    std::string types = T(x) + ", " + T(w);
    if (bias) {
      StringRef o = w.split('x').first;
      args.push_back(P("b", o));
      body += ", %b";
      types += ", " + T(o);
    }
    c.push_back(fn(name, args,
                   body + " " + attrs.str() + " : " + types + " -> " + T(out),
                   T(out)));
  };
  conv("conv2d_bias", "2x2x5x5", "3x2x3x3", "2x3x3x3", "", true);
  conv("conv2d_stride2_padding", "1x2x6x5", "2x2x3x3", "1x2x4x2",
       "{strides = array<i64: 2, 2>, padding = array<i64: 1, 0, 2, 1>}", false);
  conv("conv2d_dilation2", "1x1x7x7", "2x1x3x3", "1x2x5x5",
       "{padding = array<i64: 1, 1, 1, 1>, dilations = array<i64: 2, 2>}",
       false);
  conv("conv2d_groups2_bias", "1x4x5x5", "4x2x3x3", "1x4x3x3", "{groups = 2}",
       true);
  conv("conv2d_all_attributes", "2x4x7x6", "6x2x2x3", "2x6x4x3",
       "{strides = array<i64: 2, 2>, padding = array<i64: 1, 0, 2, 1>, "
       "dilations = array<i64: 2, 1>, groups = 2}",
       true);

  // Pooling.
  auto pool = [&](StringRef name, StringRef op, StringRef x, StringRef out,
                  StringRef attrs) {
    c.push_back(fn(name, {P("x", x)},
                   "%y = nn." + op.str() + " %x {" + attrs.str() +
                       "} : " + T(x) + " -> " + T(out),
                   T(out)));
  };
  pool("max_pool2d", "max_pool2d", "1x2x4x4", "1x2x2x2",
       "kernel_size = array<i64: 2, 2>");
  pool("max_pool2d_padding_ceil", "max_pool2d", "1x2x6x6", "1x2x4x4",
       "kernel_size = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding "
       "= array<i64: 1, 1, 1, 1>, ceil_mode");
  pool("max_pool2d_dilation", "max_pool2d", "1x1x5x5", "1x1x3x3",
       "kernel_size = array<i64: 2, 2>, strides = array<i64: 1, 1>, "
       "dilations = array<i64: 2, 2>");
  pool("avg_pool2d", "avg_pool2d", "1x2x4x4", "1x2x2x2",
       "kernel_size = array<i64: 2, 2>");
  pool("avg_pool2d_padding", "avg_pool2d", "1x2x5x5", "1x2x3x3",
       "kernel_size = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding "
       "= array<i64: 1, 1, 1, 1>");
  pool("avg_pool2d_padding_count_include_pad", "avg_pool2d", "1x2x5x5",
       "1x2x3x3",
       "kernel_size = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding "
       "= array<i64: 1, 1, 1, 1>, count_include_pad");
  pool("avg_pool2d_ceil", "avg_pool2d", "1x1x6x6", "1x1x4x4",
       "kernel_size = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding "
       "= array<i64: 1, 1, 1, 1>, ceil_mode");
  pool("avg_pool2d_ceil_count_include_pad", "avg_pool2d", "1x1x6x6", "1x1x4x4",
       "kernel_size = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding "
       "= array<i64: 1, 1, 1, 1>, ceil_mode, count_include_pad");
  pool("max_pool2d_asymmetric", "max_pool2d", "1x2x5x6", "1x2x5x3",
       "kernel_size = array<i64: 2, 3>, strides = array<i64: 1, 2>, padding "
       "= array<i64: 1, 0, 0, 1>");
  pool("avg_pool2d_asymmetric", "avg_pool2d", "1x2x5x6", "1x2x5x3",
       "kernel_size = array<i64: 2, 3>, strides = array<i64: 1, 2>, padding "
       "= array<i64: 1, 0, 0, 1>");
  c.push_back(
      fn("global_avg_pool_rank3", {P("x", "2x3x5")},
         "%y = nn.global_avg_pool %x : " + T("2x3x5") + " -> " + T("2x3x1"),
         T("2x3x1")));
  c.push_back(
      fn("global_avg_pool", {P("x", "2x3x3x4")},
         "%y = nn.global_avg_pool %x : " + T("2x3x3x4") + " -> " + T("2x3x1x1"),
         T("2x3x1x1")));

  // ONNX GlobalMaxPool, ConvTranspose, InstanceNormalization and Resize as
  // the importer writes them (compiler/Frontend/Onnx).
  pool("global_max_pool", "max_pool2d", "2x2x3x4", "2x2x1x1",
       "kernel_size = array<i64: 3, 4>, strides = array<i64: 1, 1>");
  // ConvTranspose: the backward-data convolution as a forward op. The
  // second case has ONNX output_padding [1, 0] (input_size 6 where 5 also
  // maps back to 3 rows).
  c.push_back(fn("conv2d_grad_input", {P("x", "2x2x3x3"), P("w", "2x3x2x2")},
                 "%y = nn.conv2d_grad_input %x, %w {input_size = array<i64: "
                 "4, 4>} : " +
                     T("2x2x3x3") + ", " + T("2x3x2x2") + " -> " + T("2x3x4x4"),
                 T("2x3x4x4")));
  c.push_back(fn("conv2d_grad_input_all_attributes",
                 {P("x", "1x4x3x3"), P("w", "4x3x3x2")},
                 "%y = nn.conv2d_grad_input %x, %w {input_size = array<i64: "
                 "6, 6>, strides = array<i64: 2, 2>, padding = array<i64: 1, "
                 "0, 1, 1>, dilations = array<i64: 1, 2>, groups = 2} : " +
                     T("1x4x3x3") + ", " + T("4x3x3x2") + " -> " + T("1x6x6x6"),
                 T("1x6x6x6")));
  {
    // InstanceNormalization: layer norm from axis 2, per-channel affine.
    std::string x = T("2x3x2x3"), ch = T("3"), bc = T("3x1x1");
    std::string body =
        "%n = nn.layer_norm %x {axis = 2, epsilon = 1.0e-3 : f64} : " + x +
        " -> " + x + "\n";
    body += "%gs = nn.reshape %g [3, 1, 1] : " + ch + " -> " + bc + "\n";
    body += "%bs = nn.reshape %b [3, 1, 1] : " + ch + " -> " + bc + "\n";
    body += "%s = nn.mul %n, %gs : " + x + ", " + bc + " -> " + x + "\n";
    body += "%y = nn.add %s, %bs : " + x + ", " + bc + " -> " + x;
    c.push_back(fn("instance_norm",
                   {P("x", "2x3x2x3"), P("g", "3"), P("b", "3")}, body, x));
  }
  {
    // Resize, bilinear (half_pixel) 3x3 -> 6x6: the interpolation matrix
    // of 3 -> 6 on both axes, A_h X A_w^T.
    std::string a = T("6x3"), x = T("1x2x3x3"), z = T("1x2x3x6");
    std::string body =
        "%a = arith.constant dense<[[1.0, 0.0, 0.0], [0.75, 0.25, 0.0], "
        "[0.25, 0.75, 0.0], [0.0, 0.75, 0.25], [0.0, 0.25, 0.75], [0.0, 0.0, "
        "1.0]]> : " +
        a + "\n";
    body += "%z = nn.matmul %x, %a {transpose_a, transpose_b} : " + x + ", " +
            a + " -> " + z + "\n";
    body += "%y = nn.matmul %z, %a {transpose_a, transpose_b} : " + z + ", " +
            a + " -> " + T("1x2x6x6");
    c.push_back(fn("resize_bilinear", {P("x", "1x2x3x3")}, body, T("1x2x6x6")));
  }

  // Normalisation.
  auto batchNorm = [&](StringRef name, StringRef x, StringRef ch,
                       StringRef attrs) {
    c.push_back(fn(
        name, {P("x", x), P("g", ch), P("b", ch), A("m", T(ch)), A("v", T(ch))},
        "%y, %m2, %v2 = nn.batch_norm %x, %g, %b, %m, %v " + attrs.str() +
            " : " + T(x) + ", " + T(ch) + ", " + T(ch) + ", " + T(ch) + ", " +
            T(ch) + " -> " + T(x) + ", " + T(ch) + ", " + T(ch),
        T(x), Draw::Positive));
  };
  batchNorm("batch_norm_training", "4x2x2x2", "2", "{training}");
  batchNorm("batch_norm_training_rank2", "6x3", "3",
            "{training, epsilon = 1.0e-3 : f64}");
  batchNorm("batch_norm_inference", "4x2x2x2", "2", "");
  batchNorm("batch_norm_training_rank3", "3x2x4", "2",
            "{training, momentum = 0.5 : f64}");
  // Sample weights: general positive weights, and the 0/1 mask of a padded
  // micro-batch (padding rows output zero and get no gradient).
  c.push_back(fn(
      "batch_norm_training_weighted",
      {P("x", "4x2x2x2"), P("g", "2"), P("b", "2"), A("m", T("2")),
       A("v", T("2")), A("w", T("4"))},
      "%y, %m2, %v2 = nn.batch_norm %x, %g, %b, %m, %v sample_weights %w "
      "{training} : " +
          T("4x2x2x2") + ", " + T("2") + ", " + T("2") + ", " + T("2") + ", " +
          T("2") + ", " + T("4") + " -> " + T("4x2x2x2") + ", " + T("2") +
          ", " + T("2"),
      T("4x2x2x2"), Draw::Positive));
  c.push_back(fn(
      "batch_norm_training_padding_mask",
      {P("x", "4x3"), P("g", "3"), P("b", "3"), A("m", T("3")), A("v", T("3"))},
      "%w = arith.constant dense<[1.0, 1.0, 0.0, 1.0]> : " + T("4") +
          "\n  %y, %m2, %v2 = nn.batch_norm %x, %g, %b, %m, %v sample_weights "
          "%w {training} : " +
          T("4x3") + ", " + T("3") + ", " + T("3") + ", " + T("3") + ", " +
          T("3") + ", " + T("4") + " -> " + T("4x3") + ", " + T("3") + ", " +
          T("3"),
      T("4x3"), Draw::Positive));
  c.push_back(
      fn("layer_norm_axis1_scale_bias",
         {P("x", "2x3x4"), P("g", "3x4"), P("b", "3x4")},
         "%y = nn.layer_norm %x, %g bias %b {axis = 1} : " + T("2x3x4") + ", " +
             T("3x4") + ", " + T("3x4") + " -> " + T("2x3x4"),
         T("2x3x4")));
  c.push_back(fn("layer_norm_scale_bias",
                 {P("x", "2x3x4"), P("g", "4"), P("b", "4")},
                 "%y = nn.layer_norm %x, %g bias %b : " + T("2x3x4") + ", " +
                     T("4") + ", " + T("4") + " -> " + T("2x3x4"),
                 T("2x3x4")));
  c.push_back(fn("layer_norm_plain", {P("x", "2x3x4")},
                 "%y = nn.layer_norm %x {axis = 1} : " + T("2x3x4") + " -> " +
                     T("2x3x4"),
                 T("2x3x4")));
  c.push_back(fn("layer_norm_scale_only", {P("x", "3x5"), P("g", "5")},
                 "%y = nn.layer_norm %x, %g : " + T("3x5") + ", " + T("5") +
                     " -> " + T("3x5"),
                 T("3x5")));
  c.push_back(fn("layer_norm_bias_only", {P("x", "3x5"), P("b", "5")},
                 "%y = nn.layer_norm %x bias %b : " + T("3x5") + ", " + T("5") +
                     " -> " + T("3x5"),
                 T("3x5")));

  // The ONNX importer's compositions: Abs (leaky_relu with slope -1) and
  // Softplus (relu(x) + log(1 + exp(-|x|)), whose gradient is sigmoid(x)).
  c.push_back(unary("abs_as_leaky_relu", "leaky_relu", "3x4", Draw::Signed,
                    " {alpha = -1.0 : f64}"));
  {
    std::string t = T("3x4");
    std::string body = "%one = arith.constant dense<1.0> : " + T("") + "\n";
    body += "%a = nn.leaky_relu %x {alpha = -1.0 : f64} : " + t + "\n";
    body += "%n = nn.neg %a : " + t + "\n";
    body += "%e = nn.exp %n : " + t + "\n";
    body += "%p = nn.add %one, %e : " + T("") + ", " + t + " -> " + t + "\n";
    body += "%l = nn.log %p : " + t + "\n";
    body += "%r = nn.relu %x : " + t + "\n";
    body += "%y = nn.add %r, %l : " + t + ", " + t + " -> " + t;
    c.push_back(fn("softplus_composition", {P("x", "3x4")}, body, t));
  }

  // Dropout (a fixed seed: the difference quotient sees the same mask) and
  // embedding (repeated indices accumulate).
  c.push_back(fn("dropout", {P("x", "4x5"), A("s", "tensor<i64>")},
                 "%y = nn.dropout %x, %s {ratio = 0.3 : f64, stream = 1} : " +
                     T("4x5") + ", tensor<i64> -> " + T("4x5"),
                 T("4x5"), Draw::Signed, {{42}}));
  c.push_back(fn("embedding", {A("ids", "tensor<2x3xi64>"), P("t", "5x4")},
                 "%y = nn.embedding %ids, %t : tensor<2x3xi64>, " + T("5x4") +
                     " -> " + T("2x3x4"),
                 T("2x3x4"), Draw::Signed, {{1, 4, 1, 0, 2, 4}}));
  // Gathers on activations (ONNX Gather with run-time indices, GatherElements):
  // repeated indices accumulate, negative ones count from the end, and float
  // indices (the importer's run-time integer arithmetic) read like integers.
  c.push_back(fn("gather_axis1",
                 {P("x", "3x4x2"), A("ids", "tensor<2x2xi64>")},
                 "%y = nn.gather %x, %ids {axis = 1} : " + T("3x4x2") +
                     ", tensor<2x2xi64> -> " + T("3x2x2x2"),
                 T("3x2x2x2"), Draw::Signed, {{0, -1, 3, 0}}));
  c.push_back(fn("gather_axis0_float_indices", {P("x", "5x3")},
                 "%ids = arith.constant dense<[4.0, -5.0, 2.0, 4.0]> : " +
                     T("4") + "\n  %y = nn.gather %x, %ids {axis = 0} : " +
                     T("5x3") + ", " + T("4") + " -> " + T("4x3"),
                 T("4x3")));
  c.push_back(fn("gather_elements_axis1",
                 {P("x", "2x4x3"), A("ids", "tensor<2x2x2xi32>")},
                 "%y = nn.gather_elements %x, %ids {axis = 1} : " +
                     T("2x4x3") + ", tensor<2x2x2xi32> -> " + T("2x2x2"),
                 T("2x2x2"), Draw::Signed, {{3, 0, -1, 3, 1, 1, 0, 2}}));
  c.push_back(fn("gather_elements_last_token", {P("x", "3x4x2")},
                 "%ids = arith.constant dense<[[[3.0, 3.0]], [[0.0, 0.0]], "
                 "[[-2.0, -2.0]]]> : " +
                     T("3x1x2") +
                     "\n  %y = nn.gather_elements %x, %ids {axis = 1} : " +
                     T("3x4x2") + ", " + T("3x1x2") + " -> " + T("3x1x2"),
                 T("3x1x2")));

  // ONNX Max/Min (nn.maximum/nn.minimum, broadcasting both ways), and the
  // importer's ReduceMin (-max(-x)) and ReduceL2 (sqrt(sum(x * x))).
  c.push_back(binary("maximum_broadcast", "maximum", "3x4", "4", "3x4"));
  c.push_back(binary("minimum_broadcast", "minimum", "3x1", "1x4", "3x4"));
  {
    std::string t = T("2x3x4");
    std::string body = "%n = nn.neg %x : " + t + "\n";
    body += "%m = nn.reduce_max %n [-1] : " + t + " -> " + T("2x3") + "\n";
    body += "%y = nn.neg %m : " + T("2x3");
    c.push_back(
        fn("reduce_min_composition", {P("x", "2x3x4")}, body, T("2x3")));
    body = "%s = nn.mul %x, %x : " + t + ", " + t + " -> " + t + "\n";
    body += "%r = nn.reduce_sum %s [1] {keepdims} : " + t + " -> " +
            T("2x1x4") + "\n";
    body += "%y = nn.sqrt %r : " + T("2x1x4");
    c.push_back(
        fn("reduce_l2_composition", {P("x", "2x3x4")}, body, T("2x1x4")));
  }
  // The importer's Tile ([2, 3] of a 2x3: reshape, broadcast, reshape; the
  // gradient sums over the copies) and Trilu of a run-time tensor (where
  // against a constant mask: only the kept triangle gets a gradient).
  {
    std::string body = "%r = nn.reshape %x [1, 2, 1, 3] : " + T("2x3") +
                       " -> " + T("1x2x1x3") + "\n";
    body += "%b = nn.broadcast_to %r [2, 2, 3, 3] : " + T("1x2x1x3") + " -> " +
            T("2x2x3x3") + "\n";
    body += "%y = nn.reshape %b [4, 9] : " + T("2x2x3x3") + " -> " + T("4x9");
    c.push_back(fn("tile_composition", {P("x", "2x3")}, body, T("4x9")));
    body = "%m = arith.constant dense<[[1.0, 1.0, 1.0], [0.0, 1.0, 1.0]]> : " +
           T("2x3") + "\n";
    body += "%z = arith.constant dense<0.0> : " + T("") + "\n";
    body += "%y = nn.where %m, %x, %z : " + T("2x3") + ", " + T("2x2x3") +
            ", " + T("") + " -> " + T("2x2x3");
    c.push_back(fn("trilu_composition", {P("x", "2x2x3")}, body, T("2x2x3")));
    // Pad reflect of [2, 1] along a dimension of 4: x2 x1 | x | x2.
    body = "%a = nn.slice %x starts [0, 2] sizes [2, 1] strides [1, 1] : " +
           T("2x4") + " -> " + T("2x1") + "\n";
    body += "%b = nn.slice %x starts [0, 1] sizes [2, 1] strides [1, 1] : " +
            T("2x4") + " -> " + T("2x1") + "\n";
    body += "%y = nn.concat %a, %b, %x, %a {axis = 1} : " + T("2x1") + ", " +
            T("2x1") + ", " + T("2x4") + ", " + T("2x1") + " -> " + T("2x7");
    c.push_back(fn("pad_reflect_composition", {P("x", "2x4")}, body, T("2x7")));
  }
  return c;
}

//===----------------------------------------------------------------------===//
// The check
//===----------------------------------------------------------------------===//

/// Appends an argument `r` of the result type and makes @f return
/// sum(result * r).
void sumAgainstWeights(func::FuncOp f) {
  auto ret = cast<func::ReturnOp>(f.getBody().front().getTerminator());
  Value y = ret.getOperand(0);
  Location loc = ret.getLoc();
  unsigned idx = f.getNumArguments();
  ASSERT_TRUE(succeeded(f.insertArgument(idx, y.getType(), {}, loc)));
  OpBuilder b(ret);
  Value prod = nn::MulOp::create(b, loc, y, f.getArgument(idx));
  Value loss =
      nn::ReduceSumOp::create(b, loc, prod, ArrayRef<int64_t>{}, false);
  ret->setOperands(loss);
  f.setFunctionType(FunctionType::get(f.getContext(), f.getArgumentTypes(),
                                      {loss.getType()}));
}

/// The comparison of one gradient tensor with finite differences.
struct Comparison {
  int64_t failures = 0;
  double maxAbsFd = 0;
  /// The largest |g - fd| / scale (the criterion is <= 1e-4).
  double worst = 0;
  std::string report;
};

/// Applies the criterion of the file comment.
Comparison compare(const Tensor &grad, const std::vector<double> &fd) {
  Comparison c;
  for (double v : fd)
    c.maxAbsFd = std::max(c.maxAbsFd, std::fabs(v));
  double floor = 1e-3 * c.maxAbsFd;
  std::ostringstream os;
  for (size_t i = 0; i < fd.size(); ++i) {
    double g = grad.getDouble(i);
    double scale = std::max({std::fabs(g), std::fabs(fd[i]), floor});
    c.worst = std::max(c.worst, std::fabs(g - fd[i]) / scale);
    if (!(std::fabs(g - fd[i]) <= 1e-4 * scale)) {
      if (++c.failures <= 5)
        os << "  element " << i << ": autodiff " << g << ", finite difference "
           << fd[i] << "\n";
    }
  }
  c.report = os.str();
  return c;
}

/// Parses a case, wraps it, differentiates it and draws its inputs.
struct Prepared {
  OwningOpRef<ModuleOp> module;
  std::vector<Tensor> args;
  /// Argument indices marked train.param, in order.
  std::vector<unsigned> params;
};

void prepare(MLIRContext *ctx, const GradCase &gc, Prepared &p) {
  std::string errors;
  p.module = test::parseModule(ctx, gc.source, &errors);
  ASSERT_TRUE(p.module) << errors << "\n" << gc.source;
  auto f = p.module->lookupSymbol<func::FuncOp>("f");
  ASSERT_TRUE(f);
  sumAgainstWeights(f);
  ASSERT_TRUE(
      succeeded(test::runPipeline(*p.module, "cleave-autodiff", &errors)))
      << errors;

  std::mt19937_64 rng(llvm::xxh3_64bits(gc.name));
  size_t nextInt = 0;
  for (BlockArgument arg : f.getArguments()) {
    auto type = cast<RankedTensorType>(arg.getType());
    std::optional<DType> dtype = interp::getDType(type.getElementType());
    ASSERT_TRUE(dtype);
    if (!interp::isFloat(*dtype)) {
      ASSERT_LT(nextInt, gc.ints.size()) << "missing integer argument values";
      p.args.push_back(
          Tensor::fromInts(*dtype, type.getShape(), gc.ints[nextInt++]));
      continue;
    }
    if (f.getArgAttr(arg.getArgNumber(), train::TrainDialect::kParamAttr))
      p.params.push_back(arg.getArgNumber());
    std::vector<double> v;
    if (gc.draw == Draw::Positive &&
        arg.getArgNumber() + 1 != f.getNumArguments()) {
      v = test::uniform(rng, type.getNumElements(), 0.5, 1.5);
    } else {
      v = test::uniform(rng, type.getNumElements(), 0.2, 1.0);
      std::vector<double> sign = test::uniform(rng, v.size(), 0, 1);
      for (size_t i = 0; i < v.size(); ++i)
        v[i] = sign[i] < 0.5 ? -v[i] : v[i];
    }
    p.args.push_back(Tensor::fromDoubles(*dtype, type.getShape(), v));
  }
  ASSERT_EQ(nextInt, gc.ints.size()) << "unused integer argument values";
  ASSERT_FALSE(p.params.empty()) << "the case differentiates nothing";
}

/// The central difference of @f with respect to every element of argument
/// `param`.
std::vector<double> finiteDifferences(ModuleOp module, std::vector<Tensor> args,
                                      unsigned param, double step) {
  State state;
  std::vector<double> fd(args[param].getNumElements());
  for (size_t i = 0; i < fd.size(); ++i) {
    double x = args[param].getDouble(i);
    double h = step * std::max(1.0, std::fabs(x));
    args[param].setDouble(i, x + h);
    std::vector<Tensor> plus = test::run(module, "f", args, state);
    args[param].setDouble(i, x - h);
    std::vector<Tensor> minus = test::run(module, "f", args, state);
    args[param].setDouble(i, x);
    if (plus.empty() || minus.empty())
      return {};
    fd[i] = (plus[0].getDouble(0) - minus[0].getDouble(0)) / (2 * h);
  }
  return fd;
}

class GradientCheck : public ::testing::TestWithParam<GradCase> {};

TEST_P(GradientCheck, MatchesCentralFiniteDifferences) {
  const GradCase &gc = GetParam();
  auto ctx = test::makeContext();
  Prepared p;
  prepare(ctx.get(), gc, p);
  if (HasFatalFailure())
    return;
  State state;
  std::vector<Tensor> grads = test::run(*p.module, "f_grad", p.args, state);
  ASSERT_EQ(grads.size(), 1 + p.params.size());
  std::vector<Tensor> value = test::run(*p.module, "f", p.args, state);
  ASSERT_EQ(value.size(), 1u);
  EXPECT_EQ(grads[0].getDouble(0), value[0].getDouble(0))
      << "@f_grad must return the loss @f computes";

  double worst = 0;
  for (auto [k, param] : llvm::enumerate(p.params)) {
    std::vector<double> fd =
        finiteDifferences(*p.module, p.args, param, gc.step);
    ASSERT_EQ(static_cast<int64_t>(fd.size()), p.args[param].getNumElements());
    const Tensor &g = grads[1 + k];
    ASSERT_EQ(g.getShape(), p.args[param].getShape());
    Comparison c = compare(g, fd);
    // A zero gradient would pass any comparison: the case must exercise it.
    EXPECT_GT(c.maxAbsFd, 1e-3) << "argument #" << param << " barely matters";
    EXPECT_EQ(c.failures, 0) << "argument #" << param << ": " << c.failures
                             << " of " << fd.size() << " elements differ:\n"
                             << c.report;
    worst = std::max(worst, c.worst);
  }
  std::ostringstream os;
  os << worst;
  RecordProperty("worst_relative_error", os.str());
}

INSTANTIATE_TEST_SUITE_P(Ops, GradientCheck, ::testing::ValuesIn(allCases()),
                         [](const ::testing::TestParamInfo<GradCase> &info) {
                           return info.param.name;
                         });

//===----------------------------------------------------------------------===//
// Coverage, the checker itself, and autodiff's refusals
//===----------------------------------------------------------------------===//

TEST(GradientCheckCoverage, EveryDifferentiableOpHasACase) {
  auto ctx = test::makeContext();
  ctx->getOrLoadDialect<nn::NNDialect>();
  std::set<std::string> covered;
  for (const GradCase &gc : allCases()) {
    std::string errors;
    OwningOpRef<ModuleOp> module =
        test::parseModule(ctx.get(), gc.source, &errors);
    ASSERT_TRUE(module) << gc.name << ": " << errors;
    module->walk([&](nn::DifferentiableOpInterface op) {
      covered.insert(op->getName().getStringRef().str());
    });
  }
  int differentiable = 0;
  for (RegisteredOperationName name : ctx->getRegisteredOperations()) {
    if (name.getDialectNamespace() != "nn" ||
        !name.hasInterface<nn::DifferentiableOpInterface>())
      continue;
    ++differentiable;
    EXPECT_TRUE(covered.count(name.getStringRef().str()))
        << name.getStringRef().str()
        << " implements DifferentiableOpInterface but has no gradient check";
  }
  // Every case op is differentiable, so this also fails if the registry
  // query found nothing.
  EXPECT_EQ(static_cast<size_t>(differentiable), covered.size());
}

TEST(GradientCheckCoverage, TheCriterionRejectsAWrongGradient) {
  // The finite differences of the matmul case against its gradient with one
  // element off by 0.1%: the comparison must catch exactly that element.
  auto ctx = test::makeContext();
  std::vector<GradCase> cases = allCases();
  auto it = llvm::find_if(cases,
                          [](const GradCase &c) { return c.name == "matmul"; });
  ASSERT_NE(it, cases.end());
  Prepared p;
  prepare(ctx.get(), *it, p);
  if (HasFatalFailure())
    return;
  State state;
  std::vector<Tensor> grads = test::run(*p.module, "f_grad", p.args, state);
  ASSERT_EQ(grads.size(), 3u);
  std::vector<double> fd =
      finiteDifferences(*p.module, p.args, p.params[0], it->step);
  EXPECT_EQ(compare(grads[1], fd).failures, 0);
  grads[1].setDouble(5, grads[1].getDouble(5) * 1.001);
  EXPECT_EQ(compare(grads[1], fd).failures, 1);
}

/// Expects cleave-autodiff on `source` to fail with `message`.
void expectAutodiffError(StringRef source, StringRef message) {
  auto ctx = test::makeContext();
  std::string errors;
  OwningOpRef<ModuleOp> module = test::parseModule(ctx.get(), source, &errors);
  ASSERT_TRUE(module) << errors;
  EXPECT_TRUE(failed(test::runPipeline(*module, "cleave-autodiff", &errors)));
  EXPECT_NE(errors.find(message.str()), std::string::npos) << errors;
}

TEST(AutodiffRefusals, OpWithoutGradientOnThePathToTheLoss) {
  // nn.relu_grad has no VJP: differentiating through it must fail, naming
  // the op, rather than silently dropping the contribution.
  expectAutodiffError(R"mlir(
    func.func @f(%x: tensor<3xf64> {train.param = "x"}, %dy: tensor<3xf64>) -> tensor<f64> {
      %0 = nn.relu_grad %dy, %x : tensor<3xf64>
      %1 = nn.reduce_sum %0 [] : tensor<3xf64> -> tensor<f64>
      return %1 : tensor<f64>
    })mlir",
                      "'nn.relu_grad' op is on the path from a train.param "
                      "argument to the loss but has no gradient "
                      "(DifferentiableOpInterface)");
}

TEST(AutodiffRefusals, ParamFlowingIntoANonDifferentiableOperand) {
  expectAutodiffError(R"mlir(
    func.func @f(%x: tensor<2x3xf64>, %g: tensor<3xf64>, %b: tensor<3xf64>,
                 %m: tensor<3xf64> {train.param = "m"}, %v: tensor<3xf64>) -> tensor<f64> {
      %y, %m2, %v2 = nn.batch_norm %x, %g, %b, %m, %v : tensor<2x3xf64>, tensor<3xf64>, tensor<3xf64>, tensor<3xf64>, tensor<3xf64> -> tensor<2x3xf64>, tensor<3xf64>, tensor<3xf64>
      %1 = nn.reduce_sum %y [] : tensor<2x3xf64> -> tensor<f64>
      return %1 : tensor<f64>
    })mlir",
                      "'nn.batch_norm' op operand #3 depends on a train.param "
                      "argument but is not differentiable");
}

} // namespace
