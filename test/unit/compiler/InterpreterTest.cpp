//===- InterpreterTest.cpp - Reference interpreter vs hand computations ---===//
//
// The interpreter is the oracle of the other numerical tests, so its tricky
// semantics are pinned here against values computed by hand: broadcasting,
// window geometry (padding order, ceil mode, count_include_pad, the max-pool
// tie rule), grouped and dilated convolution, batch-norm running
// statistics, losses, the optimizer formulas and clipping, and the errors
// it reports instead of crashing.
//
//===----------------------------------------------------------------------===//

#include "TestSupport.h"

#include "dialects/NN/IR/NNOps.h"
#include "dialects/Train/IR/TrainOps.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::cleave;
using interp::DType;
using interp::State;
using interp::Tensor;

namespace {

Tensor f64(ArrayRef<int64_t> shape, ArrayRef<double> values) {
  return Tensor::fromDoubles(DType::f64, shape, values);
}
Tensor i64(ArrayRef<int64_t> shape, ArrayRef<int64_t> values) {
  return Tensor::fromInts(DType::i64, shape, values);
}
Tensor scalar(double v) { return Tensor::scalar(DType::f64, v); }

/// Expects `t` to have `shape` and `values` within a relative `tol`.
void expectTensor(const Tensor &t, ArrayRef<int64_t> shape,
                  ArrayRef<double> values, double tol = 1e-14) {
  ASSERT_EQ(std::vector<int64_t>(t.getShape().begin(), t.getShape().end()),
            std::vector<int64_t>(shape.begin(), shape.end()));
  ASSERT_EQ(t.getNumElements(), static_cast<int64_t>(values.size()));
  for (size_t i = 0; i < values.size(); ++i)
    EXPECT_NEAR(t.getDouble(i), values[i],
                tol * std::max(1.0, std::fabs(values[i])))
        << "element " << i;
}

class InterpreterTest : public ::testing::Test {
protected:
  /// Parses `source` and interprets its `@f` on `args`.
  std::vector<Tensor> runF(StringRef source, ArrayRef<Tensor> args) {
    std::string errors;
    module = test::parseModule(ctx.get(), source, &errors);
    if (!module) {
      ADD_FAILURE() << "parse failed:\n" << errors;
      return {};
    }
    return test::run(*module, "f", args, state);
  }

  /// Expects interpreting `@f` of `source` to fail with a diagnostic
  /// containing `message`.
  void expectError(StringRef source, ArrayRef<Tensor> args, StringRef message) {
    std::string errors;
    module = test::parseModule(ctx.get(), source, &errors);
    ASSERT_TRUE(module) << errors;
    test::DiagnosticCollector diags(ctx.get());
    auto f = module->lookupSymbol<func::FuncOp>("f");
    ASSERT_TRUE(f);
    EXPECT_TRUE(failed(interp::interpret(f, args, state)));
    EXPECT_NE(diags.str().find(message.str()), std::string::npos)
        << "diagnostics:\n"
        << diags.str();
  }

  std::unique_ptr<MLIRContext> ctx = test::makeContext();
  OwningOpRef<ModuleOp> module;
  State state;
};

//===----------------------------------------------------------------------===//
// Coverage and driver errors
//===----------------------------------------------------------------------===//

TEST_F(InterpreterTest, EveryNNAndTrainOpHasAKernel) {
  ctx->getOrLoadDialect<nn::NNDialect>();
  ctx->getOrLoadDialect<train::TrainDialect>();
  int checked = 0;
  for (RegisteredOperationName name : ctx->getRegisteredOperations()) {
    StringRef dialect = name.getDialectNamespace();
    if (dialect != "nn" && dialect != "train")
      continue;
    // Globals are module-level declarations that State::fromModule reads.
    if (name.getStringRef() == train::GlobalOp::getOperationName())
      continue;
    EXPECT_TRUE(interp::isSupported(name))
        << "no interpreter kernel for " << name.getStringRef().str();
    ++checked;
  }
  EXPECT_GT(checked, 50);
}

TEST_F(InterpreterTest, UnsupportedOpIsAnErrorNamingIt) {
  expectError(R"mlir(
    func.func @f(%a: tensor<2xf64>) -> tensor<2xf64> {
      %0 = arith.addf %a, %a : tensor<2xf64>
      return %0 : tensor<2xf64>
    })mlir",
              {f64({2}, {1, 2})},
              "the reference interpreter does not support 'arith.addf'");
}

TEST_F(InterpreterTest, ArgumentTypeMismatchIsAnError) {
  expectError(R"mlir(
    func.func @f(%a: tensor<2xf64>) -> tensor<2xf64> {
      return %a : tensor<2xf64>
    })mlir",
              {Tensor::fromDoubles(DType::f32, {2}, {1, 2})},
              "argument #0 of @f has type 'tensor<2xf64>', the interpreter "
              "got tensor<2xf32>");
}

TEST_F(InterpreterTest, DynamicShapesAreCheckedAtRunTime) {
  const char *src = R"mlir(
    func.func @f(%a: tensor<?xf64>, %b: tensor<?xf64>) -> tensor<?xf64> {
      %0 = nn.add %a, %b : tensor<?xf64>, tensor<?xf64> -> tensor<?xf64>
      return %0 : tensor<?xf64>
    })mlir";
  std::vector<Tensor> r = runF(src, {f64({3}, {1, 2, 3}), f64({1}, {10})});
  ASSERT_EQ(r.size(), 1u);
  expectTensor(r[0], {3}, {11, 12, 13});
  expectError(src, {f64({2}, {1, 2}), f64({3}, {1, 2, 3})}, "do not broadcast");
}

//===----------------------------------------------------------------------===//
// Elementwise, matrix products and shape ops
//===----------------------------------------------------------------------===//

TEST_F(InterpreterTest, BinaryOpsBroadcastLikeNumpy) {
  std::vector<Tensor> r =
      runF(R"mlir(
    func.func @f(%a: tensor<2x3xf64>, %b: tensor<3xf64>, %c: tensor<2x1xf64>,
                 %d: tensor<f64>)
        -> (tensor<2x3xf64>, tensor<2x3xf64>, tensor<2x3xf64>, tensor<2x3xf64>) {
      %0 = nn.add %a, %b : tensor<2x3xf64>, tensor<3xf64> -> tensor<2x3xf64>
      %1 = nn.mul %c, %b : tensor<2x1xf64>, tensor<3xf64> -> tensor<2x3xf64>
      %2 = nn.div %a, %d : tensor<2x3xf64>, tensor<f64> -> tensor<2x3xf64>
      %3 = nn.sub %c, %a : tensor<2x1xf64>, tensor<2x3xf64> -> tensor<2x3xf64>
      return %0, %1, %2, %3 : tensor<2x3xf64>, tensor<2x3xf64>, tensor<2x3xf64>, tensor<2x3xf64>
    })mlir",
           {f64({2, 3}, {1, 2, 3, 4, 5, 6}), f64({3}, {10, 20, 30}),
            f64({2, 1}, {2, 3}), scalar(4)});
  ASSERT_EQ(r.size(), 4u);
  expectTensor(r[0], {2, 3}, {11, 22, 33, 14, 25, 36});
  expectTensor(r[1], {2, 3}, {20, 40, 60, 30, 60, 90});
  expectTensor(r[2], {2, 3}, {0.25, 0.5, 0.75, 1, 1.25, 1.5});
  expectTensor(r[3], {2, 3}, {1, 0, -1, -1, -2, -3});
}

TEST_F(InterpreterTest, F32TensorsComputeInFloat) {
  std::vector<Tensor> r =
      runF(R"mlir(
    func.func @f(%a: tensor<2xf32>, %b: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
      %0 = nn.add %a, %b : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
      %1 = nn.sigmoid %a : tensor<2xf32>
      return %0, %1 : tensor<2xf32>, tensor<2xf32>
    })mlir",
           {Tensor::fromDoubles(DType::f32, {2}, {0.1, 0.7}),
            Tensor::fromDoubles(DType::f32, {2}, {0.2, 0.3})});
  ASSERT_EQ(r.size(), 2u);
  ASSERT_EQ(r[0].getDType(), DType::f32);
  EXPECT_EQ(r[0].data<float>()[0], 0.1f + 0.2f);
  EXPECT_EQ(r[0].data<float>()[1], 0.7f + 0.3f);
  EXPECT_EQ(r[1].data<float>()[1], 1.0f / (1.0f + std::exp(-0.7f)));
}

TEST_F(InterpreterTest, Activations) {
  std::vector<Tensor> r = runF(R"mlir(
    func.func @f(%x: tensor<3xf64>) -> (tensor<3xf64>, tensor<3xf64>, tensor<3xf64>, tensor<3xf64>, tensor<3xf64>) {
      %0 = nn.gelu %x : tensor<3xf64>
      %1 = nn.gelu %x {approximate = #nn.gelu_approximation<tanh>} : tensor<3xf64>
      %2 = nn.leaky_relu %x {alpha = 0.2 : f64} : tensor<3xf64>
      %3 = nn.relu %x : tensor<3xf64>
      %4 = nn.pow %x, 3.0 : tensor<3xf64>
      return %0, %1, %2, %3, %4 : tensor<3xf64>, tensor<3xf64>, tensor<3xf64>, tensor<3xf64>, tensor<3xf64>
    })mlir",
                               {f64({3}, {1.0, -0.5, 0.0})});
  ASSERT_EQ(r.size(), 5u);
  expectTensor(r[0], {3}, {0.8413447460685429, -0.15426876936299344, 0});
  expectTensor(r[1], {3}, {0.8411919906082768, -0.15428599017485606, 0});
  expectTensor(r[2], {3}, {1.0, -0.1, 0});
  expectTensor(r[3], {3}, {1.0, 0, 0});
  expectTensor(r[4], {3}, {1.0, -0.125, 0});
}

TEST_F(InterpreterTest, TrigAndRounding) {
  std::vector<Tensor> r =
      runF(R"mlir(
    func.func @f(%x: tensor<8xf64>) -> (tensor<8xf64>, tensor<8xf64>, tensor<8xf64>, tensor<8xf64>, tensor<8xf64>) {
      %0 = nn.sin %x : tensor<8xf64>
      %1 = nn.cos %x : tensor<8xf64>
      %2 = nn.floor %x : tensor<8xf64>
      %3 = nn.ceil %x : tensor<8xf64>
      %4 = nn.round %x : tensor<8xf64>
      return %0, %1, %2, %3, %4 : tensor<8xf64>, tensor<8xf64>, tensor<8xf64>, tensor<8xf64>, tensor<8xf64>
    })mlir",
           {f64({8}, {0.5, 1.5, 2.5, -0.5, -2.5, -1.7, 2.2, 300.25})});
  ASSERT_EQ(r.size(), 5u);
  std::vector<double> x = {0.5, 1.5, 2.5, -0.5, -2.5, -1.7, 2.2, 300.25};
  std::vector<double> sin, cos;
  for (double v : x) {
    sin.push_back(std::sin(v));
    cos.push_back(std::cos(v));
  }
  expectTensor(r[0], {8}, sin);
  expectTensor(r[1], {8}, cos);
  expectTensor(r[2], {8}, {0, 1, 2, -1, -3, -2, 2, 300});
  expectTensor(r[3], {8}, {1, 2, 3, -0.0, -2, -1, 3, 301});
  // Halves to even (ONNX Round, torch.round), not away from zero.
  expectTensor(r[4], {8}, {0, 2, 2, -0.0, -2, -2, 2, 300});
  EXPECT_TRUE(std::signbit(r[4].getDouble(3)));
}

TEST_F(InterpreterTest, CastRoundsToNearestEvenAndTruncatesTowardZero) {
  std::vector<Tensor> r = runF(
      R"mlir(
    func.func @f(%d: tensor<6xf64>, %x: tensor<5xf32>, %i: tensor<4xi32>, %l: tensor<4xi64>)
        -> (tensor<6xf32>, tensor<5xf64>, tensor<4xf32>, tensor<5xi64>, tensor<5xi32>, tensor<4xi32>, tensor<4xi64>) {
      %0 = nn.cast %d : tensor<6xf64> -> tensor<6xf32>
      %1 = nn.cast %x : tensor<5xf32> -> tensor<5xf64>
      %2 = nn.cast %i : tensor<4xi32> -> tensor<4xf32>
      %3 = nn.cast %x : tensor<5xf32> -> tensor<5xi64>
      %4 = nn.cast %x : tensor<5xf32> -> tensor<5xi32>
      %5 = nn.cast %l : tensor<4xi64> -> tensor<4xi32>
      %6 = nn.cast %i : tensor<4xi32> -> tensor<4xi64>
      return %0, %1, %2, %3, %4, %5, %6 : tensor<6xf32>, tensor<5xf64>, tensor<4xf32>, tensor<5xi64>, tensor<5xi32>, tensor<4xi32>, tensor<4xi64>
    })mlir",
      {f64({6},
           {0.1, 1 + std::ldexp(1.0, -24), 1 + 3 * std::ldexp(1.0, -24),
            -(1 + std::ldexp(1.0, -24) + std::ldexp(1.0, -40)), 1e300, -0.0}),
       Tensor::fromDoubles(DType::f32, {5}, {2.75, -2.75, -0.5, 1e10, 0.1}),
       Tensor::fromInts(DType::i32, {4},
                        {16777217, 16777219, -7, -2147483647 - 1}),
       i64({4}, {(int64_t(1) << 32) + 5, -1, int64_t(1) << 31, -3})});
  ASSERT_EQ(r.size(), 7u);

  // f64 -> f32 rounds to nearest, ties to even; beyond the range to inf.
  ArrayRef<float> narrowed = r[0].data<float>();
  EXPECT_EQ(narrowed[0], 0.1f);
  EXPECT_EQ(narrowed[1], 1.0f);                         // a tie: 1 is even
  EXPECT_EQ(narrowed[2], 1 + std::ldexp(1.0f, -22));    // a tie, to even
  EXPECT_EQ(narrowed[3], -(1 + std::ldexp(1.0f, -23))); // past the tie
  EXPECT_EQ(narrowed[4], std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::signbit(narrowed[5]));

  // f32 -> f64 is exact: 0.1f widened, not 0.1.
  ArrayRef<double> widened = r[1].data<double>();
  EXPECT_EQ(widened[4], static_cast<double>(0.1f));
  EXPECT_NE(widened[4], 0.1);
  EXPECT_EQ(widened[3], 1e10f);

  // i32 -> f32 rounds to nearest even above 2^24.
  ArrayRef<float> fromInt = r[2].data<float>();
  EXPECT_EQ(fromInt[0], 16777216.0f);
  EXPECT_EQ(fromInt[1], 16777220.0f);
  EXPECT_EQ(fromInt[2], -7.0f);
  EXPECT_EQ(fromInt[3], -2147483648.0f);

  // f32 -> integers truncate toward zero, negatives included.
  ArrayRef<int64_t> toI64 = r[3].data<int64_t>();
  EXPECT_EQ(toI64[0], 2);
  EXPECT_EQ(toI64[1], -2);
  EXPECT_EQ(toI64[2], 0);
  EXPECT_EQ(toI64[3], 10000000000);
  EXPECT_EQ(toI64[4], 0);
  ArrayRef<int32_t> toI32 = r[4].data<int32_t>();
  EXPECT_EQ(toI32[0], 2);
  EXPECT_EQ(toI32[1], -2);
  EXPECT_EQ(toI32[2], 0);
  // 1e10 is out of i32's range: undefined in C, the interpreter's minimum.
  EXPECT_EQ(toI32[3], std::numeric_limits<int32_t>::min());

  // i64 -> i32 keeps the low 32 bits; i32 -> i64 sign-extends.
  ArrayRef<int32_t> narrowInt = r[5].data<int32_t>();
  EXPECT_EQ(narrowInt[0], 5);
  EXPECT_EQ(narrowInt[1], -1);
  EXPECT_EQ(narrowInt[2], std::numeric_limits<int32_t>::min());
  EXPECT_EQ(narrowInt[3], -3);
  ArrayRef<int64_t> widenInt = r[6].data<int64_t>();
  EXPECT_EQ(widenInt[2], -7);
  EXPECT_EQ(widenInt[3], -2147483648LL);
}

TEST_F(InterpreterTest, IntegerArithmeticWrapsAndDivisionTruncates) {
  constexpr int32_t kMin = std::numeric_limits<int32_t>::min();
  constexpr int32_t kMax = std::numeric_limits<int32_t>::max();
  std::vector<Tensor> r = runF(
      R"mlir(
    func.func @f(%x: tensor<6xi32>, %y: tensor<6xi32>, %l: tensor<2xi64>)
        -> (tensor<6xi32>, tensor<6xi32>, tensor<6xi32>, tensor<6xi32>, tensor<6xi32>, tensor<2xi64>, tensor<2xi64>) {
      %0 = nn.add %x, %y : tensor<6xi32>, tensor<6xi32> -> tensor<6xi32>
      %1 = nn.mul %x, %y : tensor<6xi32>, tensor<6xi32> -> tensor<6xi32>
      %2 = nn.div %x, %y : tensor<6xi32>, tensor<6xi32> -> tensor<6xi32>
      %3 = nn.neg %x : tensor<6xi32>
      %4 = nn.minimum %x, %y : tensor<6xi32>, tensor<6xi32> -> tensor<6xi32>
      %5 = nn.sub %l, %l : tensor<2xi64>, tensor<2xi64> -> tensor<2xi64>
      %6 = nn.concat %l, %l {axis = 0 : i64} : tensor<2xi64>, tensor<2xi64> -> tensor<4xi64>
      %7 = nn.slice %6 starts [1] sizes [2] strides [1] : tensor<4xi64> -> tensor<2xi64>
      return %0, %1, %2, %3, %4, %5, %7 : tensor<6xi32>, tensor<6xi32>, tensor<6xi32>, tensor<6xi32>, tensor<6xi32>, tensor<2xi64>, tensor<2xi64>
    })mlir",
      {Tensor::fromInts(DType::i32, {6}, {7, -7, kMin, kMax, 5, kMin}),
       Tensor::fromInts(DType::i32, {6}, {2, 2, -1, 2, 0, 1}),
       i64({2}, {(int64_t(1) << 60) + 1, -3})});
  ASSERT_EQ(r.size(), 7u);
  auto ints = [](const Tensor &t) {
    std::vector<int64_t> v;
    for (int64_t i = 0; i < t.getNumElements(); ++i)
      v.push_back(t.getInt(i));
    return v;
  };
  // Two's complement: INT_MAX + 2 and INT_MIN - 1 wrap.
  EXPECT_EQ(ints(r[0]),
            (std::vector<int64_t>{9, -5, kMax, kMin + 1, 5, kMin + 1}));
  EXPECT_EQ(ints(r[1]), (std::vector<int64_t>{14, -14, kMin, -2, 0, kMin}));
  // Truncated toward zero; by -1 a wrapping negation; by 0, 0.
  EXPECT_EQ(ints(r[2]), (std::vector<int64_t>{3, -3, kMin, kMax / 2, 0, kMin}));
  EXPECT_EQ(ints(r[3]), (std::vector<int64_t>{-7, 7, kMin, -kMax, -5, kMin}));
  EXPECT_EQ(ints(r[4]), (std::vector<int64_t>{2, -7, kMin, 2, 0, kMin}));
  EXPECT_EQ(ints(r[5]), (std::vector<int64_t>{0, 0}));
  // Moved exactly, beyond double's 2^53.
  EXPECT_EQ(ints(r[6]), (std::vector<int64_t>{-3, (int64_t(1) << 60) + 1}));
}

TEST_F(InterpreterTest, PowfBroadcastsAndTakesNegativeBasesToIntegralPowers) {
  std::vector<Tensor> r =
      runF(R"mlir(
    func.func @f(%x: tensor<2x3xf64>, %e: tensor<3xf64>) -> tensor<2x3xf64> {
      %0 = nn.powf %x, %e : tensor<2x3xf64>, tensor<3xf64> -> tensor<2x3xf64>
      return %0 : tensor<2x3xf64>
    })mlir",
           {f64({2, 3}, {-2, 4, 0, 3, -1, 9}), f64({3}, {3, 0.5, 2})});
  ASSERT_EQ(r.size(), 1u);
  std::vector<double> want = {-8, 2, 0, 27, 0, 81};
  for (int i = 0; i < 6; ++i) {
    if (i != 4) {
      EXPECT_EQ(r[0].getDouble(i), want[i]) << "element " << i;
    }
  }
  // A negative base to a non-integral power has no real value.
  EXPECT_TRUE(std::isnan(r[0].getDouble(4)));
}

TEST_F(InterpreterTest, ActivationGradientsTakeTheNegativeBranchAtZero) {
  std::vector<Tensor> r = runF(R"mlir(
    func.func @f(%g: tensor<3xf64>, %x: tensor<3xf64>) -> (tensor<3xf64>, tensor<3xf64>) {
      %0 = nn.relu_grad %g, %x : tensor<3xf64>
      %1 = nn.leaky_relu_grad %g, %x {alpha = 0.2 : f64} : tensor<3xf64>
      return %0, %1 : tensor<3xf64>, tensor<3xf64>
    })mlir",
                               {f64({3}, {2, 2, 2}), f64({3}, {1, -1, 0})});
  ASSERT_EQ(r.size(), 2u);
  expectTensor(r[0], {3}, {2, 0, 0});
  expectTensor(r[1], {3}, {2, 0.4, 0.4});
}

TEST_F(InterpreterTest, MatmulTransposesBatchesAndSharedRhs) {
  std::vector<Tensor> r =
      runF(R"mlir(
    func.func @f(%a: tensor<2x3xf64>, %b: tensor<3x2xf64>, %x: tensor<2x2x3xf64>)
        -> (tensor<2x2xf64>, tensor<2x2xf64>, tensor<3x3xf64>, tensor<2x2x2xf64>) {
      %0 = nn.matmul %a, %b : tensor<2x3xf64>, tensor<3x2xf64> -> tensor<2x2xf64>
      %1 = nn.matmul %a, %a {transpose_b} : tensor<2x3xf64>, tensor<2x3xf64> -> tensor<2x2xf64>
      %2 = nn.matmul %a, %a {transpose_a} : tensor<2x3xf64>, tensor<2x3xf64> -> tensor<3x3xf64>
      %3 = nn.matmul %x, %b : tensor<2x2x3xf64>, tensor<3x2xf64> -> tensor<2x2x2xf64>
      return %0, %1, %2, %3 : tensor<2x2xf64>, tensor<2x2xf64>, tensor<3x3xf64>, tensor<2x2x2xf64>
    })mlir",
           {f64({2, 3}, {1, 2, 3, 4, 5, 6}), f64({3, 2}, {1, 2, 3, 4, 5, 6}),
            f64({2, 2, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})});
  ASSERT_EQ(r.size(), 4u);
  expectTensor(r[0], {2, 2}, {22, 28, 49, 64});
  expectTensor(r[1], {2, 2}, {14, 32, 32, 77});
  expectTensor(r[2], {3, 3}, {17, 22, 27, 22, 29, 36, 27, 36, 45});
  expectTensor(r[3], {2, 2, 2}, {22, 28, 49, 64, 76, 100, 103, 136});
}

TEST_F(InterpreterTest, LinearIsXWTransposedPlusBias) {
  std::vector<Tensor> r =
      runF(R"mlir(
    func.func @f(%x: tensor<1x3xf64>, %w: tensor<2x3xf64>, %b: tensor<2xf64>) -> tensor<1x2xf64> {
      %0 = nn.linear %x, %w, %b : tensor<1x3xf64>, tensor<2x3xf64>, tensor<2xf64> -> tensor<1x2xf64>
      return %0 : tensor<1x2xf64>
    })mlir",
           {f64({1, 3}, {1, 2, 3}), f64({2, 3}, {1, 0, -1, 0.5, 0.5, 0.5}),
            f64({2}, {10, 20})});
  ASSERT_EQ(r.size(), 1u);
  expectTensor(r[0], {1, 2}, {8, 23});
}

TEST_F(InterpreterTest, ShapeOps) {
  std::vector<Tensor> r =
      runF(R"mlir(
    func.func @f(%x: tensor<2x3xf64>, %y: tensor<2x2xf64>, %v: tensor<10xf64>,
                 %p: tensor<2xf64>)
        -> (tensor<3x2xf64>, tensor<3xf64>, tensor<5xf64>, tensor<2x5xf64>,
            tensor<3x2xf64>, tensor<2x2x3xf64>, tensor<6x1xf64>) {
      %0 = nn.transpose %x [1, 0] : tensor<2x3xf64> -> tensor<3x2xf64>
      %1 = nn.slice %v starts [1] sizes [3] strides [3] : tensor<10xf64> -> tensor<3xf64>
      %2 = nn.pad %p starts [1] strides [2] shape [5] : tensor<2xf64> -> tensor<5xf64>
      %3 = nn.concat %x, %y {axis = -1} : tensor<2x3xf64>, tensor<2x2xf64> -> tensor<2x5xf64>
      %4 = nn.reshape %x [-1, 2] : tensor<2x3xf64> -> tensor<3x2xf64>
      %5 = nn.broadcast_to %x [2, 2, 3] : tensor<2x3xf64> -> tensor<2x2x3xf64>
      %6 = nn.flatten %x {axis = 2} : tensor<2x3xf64> -> tensor<6x1xf64>
      return %0, %1, %2, %3, %4, %5, %6 : tensor<3x2xf64>, tensor<3xf64>, tensor<5xf64>, tensor<2x5xf64>, tensor<3x2xf64>, tensor<2x2x3xf64>, tensor<6x1xf64>
    })mlir",
           {f64({2, 3}, {1, 2, 3, 4, 5, 6}), f64({2, 2}, {7, 8, 9, 10}),
            f64({10}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}), f64({2}, {1, 2})});
  ASSERT_EQ(r.size(), 7u);
  expectTensor(r[0], {3, 2}, {1, 4, 2, 5, 3, 6});
  expectTensor(r[1], {3}, {1, 4, 7});
  expectTensor(r[2], {5}, {0, 1, 0, 2, 0});
  expectTensor(r[3], {2, 5}, {1, 2, 3, 7, 8, 4, 5, 6, 9, 10});
  expectTensor(r[4], {3, 2}, {1, 2, 3, 4, 5, 6});
  expectTensor(r[5], {2, 2, 3}, {1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6});
  expectTensor(r[6], {6, 1}, {1, 2, 3, 4, 5, 6});
}

//===----------------------------------------------------------------------===//
// Reductions, softmax and losses
//===----------------------------------------------------------------------===//

TEST_F(InterpreterTest, Reductions) {
  std::vector<Tensor> r = runF(R"mlir(
    func.func @f(%x: tensor<2x3xf64>) -> (tensor<2xf64>, tensor<1x3xf64>, tensor<f64>, tensor<2x1xf64>) {
      %0 = nn.reduce_sum %x [1] : tensor<2x3xf64> -> tensor<2xf64>
      %1 = nn.reduce_mean %x [0] {keepdims} : tensor<2x3xf64> -> tensor<1x3xf64>
      %2 = nn.reduce_max %x [] : tensor<2x3xf64> -> tensor<f64>
      %3 = nn.reduce_max %x [-1] {keepdims} : tensor<2x3xf64> -> tensor<2x1xf64>
      return %0, %1, %2, %3 : tensor<2xf64>, tensor<1x3xf64>, tensor<f64>, tensor<2x1xf64>
    })mlir",
                               {f64({2, 3}, {1, 5, 3, 4, 2, 6})});
  ASSERT_EQ(r.size(), 4u);
  expectTensor(r[0], {2}, {9, 12});
  expectTensor(r[1], {1, 3}, {2.5, 3.5, 4.5});
  expectTensor(r[2], {}, {6});
  expectTensor(r[3], {2, 1}, {5, 6});
}

TEST_F(InterpreterTest, ReduceMaxGradSplitsEvenlyBetweenTies) {
  std::vector<Tensor> r =
      runF(R"mlir(
    func.func @f(%g: tensor<2xf64>, %x: tensor<2x3xf64>) -> tensor<2x3xf64> {
      %0 = nn.reduce_max_grad %g, %x [1] : tensor<2xf64>, tensor<2x3xf64> -> tensor<2x3xf64>
      return %0 : tensor<2x3xf64>
    })mlir",
           {f64({2}, {1, 6}), f64({2, 3}, {1, 3, 3, 2, 2, 2})});
  ASSERT_EQ(r.size(), 1u);
  expectTensor(r[0], {2, 3}, {0, 0.5, 0.5, 2, 2, 2});
}

TEST_F(InterpreterTest, SoftmaxAndLogSoftmax) {
  std::vector<Tensor> r = runF(R"mlir(
    func.func @f(%x: tensor<2x3xf64>) -> (tensor<2x3xf64>, tensor<2x3xf64>) {
      %0 = nn.softmax %x {axis = 1} : tensor<2x3xf64>
      %1 = nn.log_softmax %x {axis = 0} : tensor<2x3xf64>
      return %0, %1 : tensor<2x3xf64>, tensor<2x3xf64>
    })mlir",
                               {f64({2, 3}, {1, 2, 3, 1001, 1002, 1003})});
  ASSERT_EQ(r.size(), 2u);
  // Shift invariance: the second row is computed stably.
  double p[3] = {0.09003057317038046, 0.24472847105479767, 0.6652409557748219};
  expectTensor(r[0], {2, 3}, {p[0], p[1], p[2], p[0], p[1], p[2]});
  // Along axis 0 each column is log_softmax([a, a + 1000]).
  double lo = -1000.0, hi = -std::log1p(std::exp(-1000.0));
  expectTensor(r[1], {2, 3}, {lo, lo, lo, hi, hi, hi});
}

TEST_F(InterpreterTest, AttentionEqualsItsDecomposition) {
  // Scale, additive mask and causal mask together, in the op's order; key
  // and value of another length than the query (the causal mask is then
  // top-left aligned, j > i).
  std::vector<double> q, k, v, m;
  for (int i = 0; i < 2 * 3 * 4; ++i)
    q.push_back(std::sin(1.3 * i));
  for (int i = 0; i < 2 * 5 * 4; ++i)
    k.push_back(std::cos(0.7 * i));
  for (int i = 0; i < 2 * 5 * 2; ++i)
    v.push_back(0.1 * i - 1);
  for (int i = 0; i < 2 * 5; ++i)
    m.push_back(i % 3 == 1 ? -std::numeric_limits<double>::infinity()
                           : 0.25 * i);
  std::vector<Tensor> r = runF(R"mlir(
    func.func @f(%q: tensor<2x3x4xf64>, %k: tensor<2x5x4xf64>,
                 %v: tensor<2x5x2xf64>, %m: tensor<2x1x5xf64>)
        -> (tensor<2x3x2xf64>, tensor<2x3x2xf64>) {
      %0 = nn.attention %q, %k, %v, %m {scale = 1.5 : f64, scale_is_divisor, causal} : tensor<2x3x4xf64>, tensor<2x5x4xf64>, tensor<2x5x2xf64>, tensor<2x1x5xf64> -> tensor<2x3x2xf64>
      %c = arith.constant dense<1.5> : tensor<f64>
      %above = arith.constant dense<[[0.0, 1.0, 1.0, 1.0, 1.0], [0.0, 0.0, 1.0, 1.0, 1.0], [0.0, 0.0, 0.0, 1.0, 1.0]]> : tensor<3x5xf64>
      %inf = arith.constant dense<0xFFF0000000000000> : tensor<f64>
      %s = nn.matmul %q, %k {transpose_b} : tensor<2x3x4xf64>, tensor<2x5x4xf64> -> tensor<2x3x5xf64>
      %d = nn.div %s, %c : tensor<2x3x5xf64>, tensor<f64> -> tensor<2x3x5xf64>
      %a = nn.add %d, %m : tensor<2x3x5xf64>, tensor<2x1x5xf64> -> tensor<2x3x5xf64>
      %w = nn.where %above, %inf, %a : tensor<3x5xf64>, tensor<f64>, tensor<2x3x5xf64> -> tensor<2x3x5xf64>
      %p = nn.softmax %w : tensor<2x3x5xf64>
      %o = nn.matmul %p, %v : tensor<2x3x5xf64>, tensor<2x5x2xf64> -> tensor<2x3x2xf64>
      return %0, %o : tensor<2x3x2xf64>, tensor<2x3x2xf64>
    })mlir",
                               {f64({2, 3, 4}, q), f64({2, 5, 4}, k),
                                f64({2, 5, 2}, v), f64({2, 1, 5}, m)});
  ASSERT_EQ(r.size(), 2u);
  expectTensor(r[0], {2, 3, 2}, r[1].toDoubles());
  // The first query sees the first key alone; the third mixes two values
  // (the second key is masked out).
  EXPECT_EQ(r[0].getDouble(0), v[0]);
  EXPECT_GT(r[0].getDouble(4), v[0]);
  EXPECT_LT(r[0].getDouble(4), v[4]);
}

TEST_F(InterpreterTest, AttentionDropoutEqualsItsDecomposition) {
  // Dropout on the probabilities draws nn.dropout's mask over [..., T, S],
  // element by element in row-major order: the same bits as the spelt-out
  // ops, and some probabilities dropped (the outputs differ from those
  // without dropout).
  std::vector<double> q, k, v;
  for (int i = 0; i < 2 * 6 * 4; ++i)
    q.push_back(std::sin(1.3 * i));
  for (int i = 0; i < 2 * 6 * 4; ++i)
    k.push_back(std::cos(0.7 * i));
  for (int i = 0; i < 2 * 6 * 3; ++i)
    v.push_back(0.1 * i - 1);
  std::vector<Tensor> r = runF(
      R"mlir(
    func.func @f(%q: tensor<2x6x4xf64>, %k: tensor<2x6x4xf64>,
                 %v: tensor<2x6x3xf64>, %seed: tensor<i64>)
        -> (tensor<2x6x3xf64>, tensor<2x6x3xf64>, tensor<2x6x3xf64>) {
      %0 = nn.attention %q, %k, %v dropout(%seed : tensor<i64>) {scale = 0.5 : f64, dropout_ratio = 0.3 : f64, dropout_stream = 5 : i64} : tensor<2x6x4xf64>, tensor<2x6x4xf64>, tensor<2x6x3xf64> -> tensor<2x6x3xf64>
      %c = arith.constant dense<0.5> : tensor<f64>
      %s = nn.matmul %q, %k {transpose_b} : tensor<2x6x4xf64>, tensor<2x6x4xf64> -> tensor<2x6x6xf64>
      %m = nn.mul %s, %c : tensor<2x6x6xf64>, tensor<f64> -> tensor<2x6x6xf64>
      %p = nn.softmax %m : tensor<2x6x6xf64>
      %d = nn.dropout %p, %seed {ratio = 0.3 : f64, stream = 5} : tensor<2x6x6xf64>, tensor<i64> -> tensor<2x6x6xf64>
      %o = nn.matmul %d, %v : tensor<2x6x6xf64>, tensor<2x6x3xf64> -> tensor<2x6x3xf64>
      %n = nn.attention %q, %k, %v {scale = 0.5 : f64} : tensor<2x6x4xf64>, tensor<2x6x4xf64>, tensor<2x6x3xf64> -> tensor<2x6x3xf64>
      return %0, %o, %n : tensor<2x6x3xf64>, tensor<2x6x3xf64>, tensor<2x6x3xf64>
    })mlir",
      {f64({2, 6, 4}, q), f64({2, 6, 4}, k), f64({2, 6, 3}, v), i64({}, {9})});
  ASSERT_EQ(r.size(), 3u);
  expectTensor(r[0], {2, 6, 3}, r[1].toDoubles());
  int64_t differs = 0;
  for (int64_t i = 0; i < 2 * 6 * 3; ++i)
    differs += r[0].getDouble(i) != r[2].getDouble(i);
  EXPECT_GT(differs, 18);
}

TEST_F(InterpreterTest, AttentionIsNotEmulatedInBf16) {
  std::string errors;
  module = test::parseModule(ctx.get(), R"mlir(
    func.func @f(%q: tensor<2x4xf32>) -> tensor<2x4xf32> {
      %0 = nn.attention %q, %q, %q : tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
      return %0 : tensor<2x4xf32>
    })mlir",
                             &errors);
  ASSERT_TRUE(module) << errors;
  test::DiagnosticCollector diags(ctx.get());
  interp::InterpretOptions options;
  options.roundsOperandsToBf16 = [](Operation *) { return true; };
  auto f = module->lookupSymbol<func::FuncOp>("f");
  Tensor q = Tensor::fromDoubles(DType::f32, {2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  EXPECT_TRUE(failed(interp::interpret(f, {q}, state, options)));
  EXPECT_NE(diags.str().find("is not emulated in bf16: decompose it first"),
            std::string::npos)
      << diags.str();
}

TEST_F(InterpreterTest, CrossEntropyReductions) {
  const char *src = R"mlir(
    func.func @f(%x: tensor<2x3xf64>, %l: tensor<2xi64>) -> (tensor<2xf64>, tensor<f64>, tensor<f64>) {
      %0 = nn.cross_entropy %x, %l {reduction = #nn.reduction<none>} : tensor<2x3xf64>, tensor<2xi64> -> tensor<2xf64>
      %1 = nn.cross_entropy %x, %l {reduction = #nn.reduction<sum>} : tensor<2x3xf64>, tensor<2xi64> -> tensor<f64>
      %2 = nn.cross_entropy %x, %l : tensor<2x3xf64>, tensor<2xi64> -> tensor<f64>
      return %0, %1, %2 : tensor<2xf64>, tensor<f64>, tensor<f64>
    })mlir";
  std::vector<Tensor> r =
      runF(src, {f64({2, 3}, {1, 2, 3, 1, 1, 1}), i64({2}, {2, 0})});
  ASSERT_EQ(r.size(), 3u);
  // log(e + e^2 + e^3) - 3 and log(3).
  double l0 = 0.40760596444438013, l1 = 1.0986122886681098;
  expectTensor(r[0], {2}, {l0, l1});
  expectTensor(r[1], {}, {l0 + l1});
  expectTensor(r[2], {}, {(l0 + l1) / 2});
  expectError(src, {f64({2, 3}, {1, 2, 3, 1, 1, 1}), i64({2}, {2, 3})},
              "label 3 of sample 1 is out of range [0, 3)");
}

TEST_F(InterpreterTest, OneHotLeavesOutOfRangeLabelsZero) {
  std::vector<Tensor> r = runF(R"mlir(
    func.func @f(%l: tensor<3xi64>) -> tensor<3x2xf64> {
      %0 = nn.one_hot %l {num_classes = 2, dtype = f64} : tensor<3xi64> -> tensor<3x2xf64>
      return %0 : tensor<3x2xf64>
    })mlir",
                               {i64({3}, {1, 2, -1})});
  ASSERT_EQ(r.size(), 1u);
  expectTensor(r[0], {3, 2}, {0, 1, 0, 0, 0, 0});
}

TEST_F(InterpreterTest, MseLossReductions) {
  std::vector<Tensor> r =
      runF(R"mlir(
    func.func @f(%x: tensor<2x2xf64>, %t: tensor<2x2xf64>) -> (tensor<2xf64>, tensor<f64>, tensor<f64>) {
      %0 = nn.mse_loss %x, %t {reduction = #nn.reduction<none>} : tensor<2x2xf64>, tensor<2x2xf64> -> tensor<2xf64>
      %1 = nn.mse_loss %x, %t {reduction = #nn.reduction<sum>} : tensor<2x2xf64>, tensor<2x2xf64> -> tensor<f64>
      %2 = nn.mse_loss %x, %t : tensor<2x2xf64>, tensor<2x2xf64> -> tensor<f64>
      return %0, %1, %2 : tensor<2xf64>, tensor<f64>, tensor<f64>
    })mlir",
           {f64({2, 2}, {1, 2, 3, 4}), f64({2, 2}, {0, 0, 1, 1})});
  ASSERT_EQ(r.size(), 3u);
  expectTensor(r[0], {2}, {2.5, 6.5});
  expectTensor(r[1], {}, {9});
  expectTensor(r[2], {}, {4.5});
}

//===----------------------------------------------------------------------===//
// Convolution and pooling
//===----------------------------------------------------------------------===//

TEST_F(InterpreterTest, ConvolutionPaddingStrideDilationGroups) {
  std::vector<Tensor> r = runF(
      R"mlir(
    func.func @f(%x: tensor<1x1x3x3xf64>, %w: tensor<1x1x2x2xf64>, %b: tensor<1xf64>,
                 %x2: tensor<1x2x2x2xf64>, %w2: tensor<2x1x1x1xf64>)
        -> (tensor<1x1x2x2xf64>, tensor<1x1x1x1xf64>, tensor<1x2x2x2xf64>) {
      %0 = nn.conv2d %x, %w, %b {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 0, 0>} : tensor<1x1x3x3xf64>, tensor<1x1x2x2xf64>, tensor<1xf64> -> tensor<1x1x2x2xf64>
      %1 = nn.conv2d %x, %w {dilations = array<i64: 2, 2>} : tensor<1x1x3x3xf64>, tensor<1x1x2x2xf64> -> tensor<1x1x1x1xf64>
      %2 = nn.conv2d %x2, %w2 {groups = 2} : tensor<1x2x2x2xf64>, tensor<2x1x1x1xf64> -> tensor<1x2x2x2xf64>
      return %0, %1, %2 : tensor<1x1x2x2xf64>, tensor<1x1x1x1xf64>, tensor<1x2x2x2xf64>
    })mlir",
      {f64({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}),
       f64({1, 1, 2, 2}, {1, 1, 1, 1}), f64({1}, {100}),
       f64({1, 2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8}), f64({2, 1, 1, 1}, {2, 3})});
  ASSERT_EQ(r.size(), 3u);
  // Padding is [top, left, bottom, right]: windows start at -1 and 1.
  expectTensor(r[0], {1, 1, 2, 2}, {101, 105, 111, 128});
  expectTensor(r[1], {1, 1, 1, 1}, {1 + 3 + 7 + 9});
  expectTensor(r[2], {1, 2, 2, 2}, {2, 4, 6, 8, 15, 18, 21, 24});
}

TEST_F(InterpreterTest, ConvolutionGradientsAreAdjoints) {
  // <conv(x, w), g> = <x, grad_input(g, w)> = <w, grad_weight(g, x)>.
  std::mt19937_64 rng(7);
  Tensor x = test::randomTensor(rng, DType::f64, {2, 4, 5, 6}, -1, 1);
  Tensor w = test::randomTensor(rng, DType::f64, {6, 2, 2, 3}, -1, 1);
  Tensor g = test::randomTensor(rng, DType::f64, {2, 6, 2, 3}, -1, 1);
  std::vector<Tensor> r = runF(R"mlir(
    func.func @f(%x: tensor<2x4x5x6xf64>, %w: tensor<6x2x2x3xf64>, %g: tensor<2x6x2x3xf64>)
        -> (tensor<2x6x2x3xf64>, tensor<2x4x5x6xf64>, tensor<6x2x2x3xf64>) {
      %0 = nn.conv2d %x, %w {strides = array<i64: 2, 2>, padding = array<i64: 1, 0, 0, 2>, dilations = array<i64: 2, 1>, groups = 2} : tensor<2x4x5x6xf64>, tensor<6x2x2x3xf64> -> tensor<2x6x2x3xf64>
      %1 = nn.conv2d_grad_input %g, %w {input_size = array<i64: 5, 6>, strides = array<i64: 2, 2>, padding = array<i64: 1, 0, 0, 2>, dilations = array<i64: 2, 1>, groups = 2} : tensor<2x6x2x3xf64>, tensor<6x2x2x3xf64> -> tensor<2x4x5x6xf64>
      %2 = nn.conv2d_grad_weight %g, %x {kernel_size = array<i64: 2, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 0, 0, 2>, dilations = array<i64: 2, 1>, groups = 2} : tensor<2x6x2x3xf64>, tensor<2x4x5x6xf64> -> tensor<6x2x2x3xf64>
      return %0, %1, %2 : tensor<2x6x2x3xf64>, tensor<2x4x5x6xf64>, tensor<6x2x2x3xf64>
    })mlir",
                               {x, w, g});
  ASSERT_EQ(r.size(), 3u);
  auto dot = [](const Tensor &a, const Tensor &b) {
    double s = 0;
    for (int64_t i = 0; i < a.getNumElements(); ++i)
      s += a.getDouble(i) * b.getDouble(i);
    return s;
  };
  double yg = dot(r[0], g);
  EXPECT_NEAR(dot(x, r[1]), yg, 1e-12 * std::fabs(yg));
  EXPECT_NEAR(dot(w, r[2]), yg, 1e-12 * std::fabs(yg));
}

TEST_F(InterpreterTest, MaxPoolPaddingNeverWinsAndCeilMode) {
  std::vector<Tensor> r =
      runF(R"mlir(
    func.func @f(%x: tensor<1x1x3x3xf64>) -> (tensor<1x1x2x2xf64>, tensor<1x1x2x2xf64>) {
      %0 = nn.max_pool2d %x {kernel_size = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : tensor<1x1x3x3xf64> -> tensor<1x1x2x2xf64>
      %1 = nn.max_pool2d %x {kernel_size = array<i64: 2, 2>, ceil_mode} : tensor<1x1x3x3xf64> -> tensor<1x1x2x2xf64>
      return %0, %1 : tensor<1x1x2x2xf64>, tensor<1x1x2x2xf64>
    })mlir",
           {f64({1, 1, 3, 3}, {-1, -2, -3, -4, -5, -6, -7, -8, -9})});
  ASSERT_EQ(r.size(), 2u);
  // All inputs are negative: a zero from the padding would win otherwise.
  expectTensor(r[0], {1, 1, 2, 2}, {-1, -2, -4, -5});
  // Ceil mode adds the partial windows {3, 6}, {7, 8} and {9}.
  expectTensor(r[1], {1, 1, 2, 2}, {-1, -3, -7, -9});
}

TEST_F(InterpreterTest, MaxPoolGradRoutesToTheFirstMaximum) {
  std::vector<Tensor> r = runF(R"mlir(
    func.func @f(%g: tensor<1x1x1x2xf64>, %x: tensor<1x1x2x4xf64>) -> tensor<1x1x2x4xf64> {
      %0 = nn.max_pool2d_grad %g, %x {kernel_size = array<i64: 2, 2>} : tensor<1x1x1x2xf64>, tensor<1x1x2x4xf64> -> tensor<1x1x2x4xf64>
      return %0 : tensor<1x1x2x4xf64>
    })mlir",
                               {f64({1, 1, 1, 2}, {10, 20}),
                                f64({1, 1, 2, 4}, {1, 1, 0, 3, 1, 1, 3, 3})});
  ASSERT_EQ(r.size(), 1u);
  // Window 1 ties everywhere: the first element wins. Window 2 ties three
  // 3s: row-major order picks the top-right one.
  expectTensor(r[0], {1, 1, 2, 4}, {10, 0, 0, 20, 0, 0, 0, 0});
}

TEST_F(InterpreterTest, AvgPoolDivisors) {
  std::vector<Tensor> r =
      runF(R"mlir(
    func.func @f(%x: tensor<1x1x3x3xf64>)
        -> (tensor<1x1x2x2xf64>, tensor<1x1x2x2xf64>, tensor<1x1x2x2xf64>, tensor<1x1x2x2xf64>) {
      %0 = nn.avg_pool2d %x {kernel_size = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : tensor<1x1x3x3xf64> -> tensor<1x1x2x2xf64>
      %1 = nn.avg_pool2d %x {kernel_size = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, count_include_pad} : tensor<1x1x3x3xf64> -> tensor<1x1x2x2xf64>
      %2 = nn.avg_pool2d %x {kernel_size = array<i64: 2, 2>, ceil_mode} : tensor<1x1x3x3xf64> -> tensor<1x1x2x2xf64>
      %3 = nn.avg_pool2d %x {kernel_size = array<i64: 2, 2>, ceil_mode, count_include_pad} : tensor<1x1x3x3xf64> -> tensor<1x1x2x2xf64>
      return %0, %1, %2, %3 : tensor<1x1x2x2xf64>, tensor<1x1x2x2xf64>, tensor<1x1x2x2xf64>, tensor<1x1x2x2xf64>
    })mlir",
           {f64({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9})});
  ASSERT_EQ(r.size(), 4u);
  expectTensor(r[0], {1, 1, 2, 2}, {1, 2.5, 5.5, 7});
  expectTensor(r[1], {1, 1, 2, 2}, {0.25, 1.25, 2.75, 7});
  expectTensor(r[2], {1, 1, 2, 2}, {3, 4.5, 7.5, 9});
  // The divisor with count_include_pad is the window size, also for the
  // ceil-mode overhang (see nn.avg_pool2d).
  expectTensor(r[3], {1, 1, 2, 2}, {3, 2.25, 3.75, 2.25});
}

TEST_F(InterpreterTest, GlobalAvgPool) {
  std::vector<Tensor> r = runF(R"mlir(
    func.func @f(%x: tensor<1x2x2x2xf64>) -> tensor<1x2x1x1xf64> {
      %0 = nn.global_avg_pool %x : tensor<1x2x2x2xf64> -> tensor<1x2x1x1xf64>
      return %0 : tensor<1x2x1x1xf64>
    })mlir",
                               {f64({1, 2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 9})});
  ASSERT_EQ(r.size(), 1u);
  expectTensor(r[0], {1, 2, 1, 1}, {2.5, 6.75});
}

//===----------------------------------------------------------------------===//
// Normalisation, dropout, embedding
//===----------------------------------------------------------------------===//

TEST_F(InterpreterTest, BatchNormTrainingUpdatesRunningStatistics) {
  std::vector<Tensor> r = runF(R"mlir(
    func.func @f(%x: tensor<4x1xf64>, %g: tensor<1xf64>, %b: tensor<1xf64>,
                 %m: tensor<1xf64>, %v: tensor<1xf64>)
        -> (tensor<4x1xf64>, tensor<1xf64>, tensor<1xf64>, tensor<4x1xf64>, tensor<1xf64>, tensor<1xf64>) {
      %y, %m2, %v2 = nn.batch_norm %x, %g, %b, %m, %v {training} : tensor<4x1xf64>, tensor<1xf64>, tensor<1xf64>, tensor<1xf64>, tensor<1xf64> -> tensor<4x1xf64>, tensor<1xf64>, tensor<1xf64>
      %z, %m3, %v3 = nn.batch_norm %x, %g, %b, %m, %v : tensor<4x1xf64>, tensor<1xf64>, tensor<1xf64>, tensor<1xf64>, tensor<1xf64> -> tensor<4x1xf64>, tensor<1xf64>, tensor<1xf64>
      return %y, %m2, %v2, %z, %m3, %v3 : tensor<4x1xf64>, tensor<1xf64>, tensor<1xf64>, tensor<4x1xf64>, tensor<1xf64>, tensor<1xf64>
    })mlir",
                               {f64({4, 1}, {1, 2, 3, 4}), f64({1}, {2}),
                                f64({1}, {0.5}), f64({1}, {1}), f64({1}, {4})});
  ASSERT_EQ(r.size(), 6u);
  // Batch mean 2.5, biased variance 1.25 normalise; the running variance
  // takes the unbiased 5/3.
  double s = 2 / std::sqrt(1.25 + 1e-5);
  expectTensor(r[0], {4, 1},
               {-1.5 * s + 0.5, -0.5 * s + 0.5, 0.5 * s + 0.5, 1.5 * s + 0.5});
  expectTensor(r[1], {1}, {0.9 * 1 + 0.1 * 2.5});
  expectTensor(r[2], {1}, {0.9 * 4 + 0.1 * 5.0 / 3.0});
  double t = 2 / std::sqrt(4 + 1e-5);
  expectTensor(r[3], {4, 1}, {0.5, t + 0.5, 2 * t + 0.5, 3 * t + 0.5});
  expectTensor(r[4], {1}, {1});
  expectTensor(r[5], {1}, {4});
}

TEST_F(InterpreterTest, LayerNorm) {
  std::vector<Tensor> r = runF(R"mlir(
    func.func @f(%x: tensor<2x3xf64>, %g: tensor<3xf64>, %b: tensor<3xf64>) -> (tensor<2x3xf64>, tensor<2x3xf64>) {
      %0 = nn.layer_norm %x, %g bias %b : tensor<2x3xf64>, tensor<3xf64>, tensor<3xf64> -> tensor<2x3xf64>
      %1 = nn.layer_norm %x {axis = 0} : tensor<2x3xf64> -> tensor<2x3xf64>
      return %0, %1 : tensor<2x3xf64>, tensor<2x3xf64>
    })mlir",
                               {f64({2, 3}, {1, 2, 3, 4, 4, 4}),
                                f64({3}, {1, 2, 3}), f64({3}, {0, 0, 1})});
  ASSERT_EQ(r.size(), 2u);
  double s = 1 / std::sqrt(2.0 / 3.0 + 1e-5);
  expectTensor(r[0], {2, 3}, {-s, 0, 3 * s + 1, 0, 0, 1});
  // Over all six elements: mean 3, variance 4/3.
  double u = 1 / std::sqrt(4.0 / 3.0 + 1e-5);
  expectTensor(r[1], {2, 3}, {-2 * u, -u, 0, u, u, u});
}

TEST_F(InterpreterTest, DropoutFollowsTheCounterBasedMask) {
  const char *src = R"mlir(
    func.func @f(%x: tensor<40x50xf64>, %s: tensor<i64>) -> (tensor<40x50xf64>, tensor<40x50xf64>) {
      %0 = nn.dropout %x, %s {ratio = 0.25 : f64, stream = 3} : tensor<40x50xf64>, tensor<i64> -> tensor<40x50xf64>
      %1 = nn.dropout %x, %s {ratio = 0.25 : f64, stream = 4} : tensor<40x50xf64>, tensor<i64> -> tensor<40x50xf64>
      return %0, %1 : tensor<40x50xf64>, tensor<40x50xf64>
    })mlir";
  std::vector<Tensor> r = runF(src, {Tensor::splat(DType::f64, {40, 50}, 3.0),
                                     Tensor::fromInts(DType::i64, {}, {42})});
  ASSERT_EQ(r.size(), 2u);
  uint64_t key = nn::DropoutOp::streamKey(42, 3);
  int64_t kept = 0, differs = 0;
  for (int64_t i = 0; i < 2000; ++i) {
    bool keep = nn::DropoutOp::keeps(key, i, 0.25);
    EXPECT_EQ(r[0].getDouble(i), keep ? 4.0 : 0.0) << "element " << i;
    kept += keep;
    differs += (r[0].getDouble(i) != r[1].getDouble(i));
  }
  // About 75% kept; another stream draws another mask.
  EXPECT_GT(kept, 1400);
  EXPECT_LT(kept, 1600);
  EXPECT_GT(differs, 100);
}

TEST_F(InterpreterTest, EmbeddingAndItsGradient) {
  const char *src = R"mlir(
    func.func @f(%ids: tensor<3xi64>, %t: tensor<3x2xf64>, %g: tensor<3x2xf64>) -> (tensor<3x2xf64>, tensor<3x2xf64>) {
      %0 = nn.embedding %ids, %t : tensor<3xi64>, tensor<3x2xf64> -> tensor<3x2xf64>
      %1 = nn.embedding_grad %g, %ids {num_embeddings = 3} : tensor<3x2xf64>, tensor<3xi64> -> tensor<3x2xf64>
      return %0, %1 : tensor<3x2xf64>, tensor<3x2xf64>
    })mlir";
  Tensor table = f64({3, 2}, {1, 2, 3, 4, 5, 6});
  Tensor g = f64({3, 2}, {1, 1, 1, 1, 1, 1});
  std::vector<Tensor> r = runF(src, {i64({3}, {2, 0, 2}), table, g});
  ASSERT_EQ(r.size(), 2u);
  expectTensor(r[0], {3, 2}, {5, 6, 1, 2, 5, 6});
  expectTensor(r[1], {3, 2}, {1, 1, 0, 0, 2, 2});
  expectError(src, {i64({3}, {0, 3, 1}), table, g},
              "index 3 at position 1 is out of range [0, 3)");
}

//===----------------------------------------------------------------------===//
// Optimizers and clipping
//===----------------------------------------------------------------------===//

TEST_F(InterpreterTest, SgdAndMomentum) {
  std::vector<Tensor> r =
      runF(R"mlir(
    func.func @f(%p: tensor<2xf64>, %g: tensor<2xf64>, %buf: tensor<2xf64>,
                 %lr: tensor<f64>, %m: tensor<f64>, %wd: tensor<f64>, %zero: tensor<f64>)
        -> (tensor<2xf64>, tensor<2xf64>, tensor<2xf64>, tensor<2xf64>, tensor<2xf64>) {
      %0 = train.sgd %p, %g lr %lr weight_decay %wd : tensor<2xf64>, tensor<f64>
      %1, %2 = train.momentum %p, %g, %buf lr %lr momentum %m weight_decay %zero : tensor<2xf64>, tensor<f64>
      %3, %4 = train.momentum %p, %g, %buf lr %lr momentum %m weight_decay %zero {nesterov} : tensor<2xf64>, tensor<f64>
      return %0, %1, %2, %3, %4 : tensor<2xf64>, tensor<2xf64>, tensor<2xf64>, tensor<2xf64>, tensor<2xf64>
    })mlir",
           {f64({2}, {1, -2}), f64({2}, {0.5, 0.25}), f64({2}, {0.1, 0.2}),
            scalar(0.1), scalar(0.9), scalar(0.01), scalar(0)});
  ASSERT_EQ(r.size(), 5u);
  // g' = g + wd p = [0.51, 0.23].
  expectTensor(r[0], {2}, {1 - 0.1 * 0.51, -2 - 0.1 * 0.23});
  // buf' = 0.9 buf + g = [0.59, 0.43].
  expectTensor(r[1], {2}, {1 - 0.059, -2 - 0.043});
  expectTensor(r[2], {2}, {0.59, 0.43});
  // Nesterov steps along g + 0.9 buf' = [1.031, 0.637].
  expectTensor(r[3], {2}, {1 - 0.1031, -2 - 0.0637});
  expectTensor(r[4], {2}, {0.59, 0.43});
}

/// One step of torch.optim.Adam / AdamW (`_single_tensor_adam`), written
/// out as PyTorch does it.
struct TorchAdam {
  double lr, beta1, beta2, eps, weightDecay;
  bool decoupled;
  std::vector<double> param, expAvg, expAvgSq;
  int step = 0;

  void update(const std::vector<double> &grad) {
    ++step;
    double bc1 = 1 - std::pow(beta1, step), bc2 = 1 - std::pow(beta2, step);
    for (size_t i = 0; i < param.size(); ++i) {
      double g = grad[i];
      if (decoupled)
        param[i] *= 1 - lr * weightDecay;
      else
        g += weightDecay * param[i];
      expAvg[i] = expAvg[i] * beta1 + (1 - beta1) * g;
      expAvgSq[i] = expAvgSq[i] * beta2 + (1 - beta2) * g * g;
      double denom = std::sqrt(expAvgSq[i]) / std::sqrt(bc2) + eps;
      param[i] -= lr / bc1 * expAvg[i] / denom;
    }
  }
};

TEST_F(InterpreterTest, AdamAndAdamWMatchPyTorch) {
  const char *src = R"mlir(
    func.func @f(%p: tensor<2xf64>, %g: tensor<2xf64>, %m: tensor<2xf64>, %v: tensor<2xf64>,
                 %t: tensor<i64>, %lr: tensor<f64>, %b1: tensor<f64>, %b2: tensor<f64>,
                 %eps: tensor<f64>, %wd: tensor<f64>)
        -> (tensor<2xf64>, tensor<2xf64>, tensor<2xf64>, tensor<2xf64>, tensor<2xf64>, tensor<2xf64>) {
      %0, %1, %2 = train.adam %p, %g, %m, %v step %t lr %lr betas %b1, %b2 eps %eps weight_decay %wd : tensor<2xf64>, tensor<f64>
      %3, %4, %5 = train.adam %p, %g, %m, %v step %t lr %lr betas %b1, %b2 eps %eps weight_decay %wd {decoupled} : tensor<2xf64>, tensor<f64>
      return %0, %1, %2, %3, %4, %5 : tensor<2xf64>, tensor<2xf64>, tensor<2xf64>, tensor<2xf64>, tensor<2xf64>, tensor<2xf64>
    })mlir";
  std::vector<std::vector<double>> grads = {{0.5, -0.1}, {0.2, 0.3}, {-1, 2}};
  TorchAdam adam{0.1, 0.9, 0.999, 1e-8, 0.01, false, {1, -2}, {0, 0}, {0, 0}};
  TorchAdam adamw = adam;
  adamw.decoupled = true;
  Tensor p = f64({2}, adam.param), m = f64({2}, {0, 0}), v = m;
  Tensor pw = p, mw = m, vw = v;
  for (size_t step = 0; step < grads.size(); ++step) {
    // An index, not llvm::enumerate's structured binding: a lambda cannot
    // capture one before C++20, and Clang (the sanitizer build) refuses.
    const std::vector<double> &grad = grads[step];
    auto call = [&](const Tensor &param, const Tensor &exp, const Tensor &sq) {
      return runF(src, {param, f64({2}, grad), exp, sq,
                        Tensor::fromInts(DType::i64, {}, {int64_t(step) + 1}),
                        scalar(0.1), scalar(0.9), scalar(0.999), scalar(1e-8),
                        scalar(0.01)});
    };
    std::vector<Tensor> r = call(p, m, v), rw = call(pw, mw, vw);
    ASSERT_EQ(r.size(), 6u);
    ASSERT_EQ(rw.size(), 6u);
    adam.update(grad);
    adamw.update(grad);
    p = r[0], m = r[1], v = r[2];
    pw = rw[3], mw = rw[4], vw = rw[5];
    expectTensor(p, {2}, adam.param);
    expectTensor(m, {2}, adam.expAvg);
    expectTensor(v, {2}, adam.expAvgSq);
    expectTensor(pw, {2}, adamw.param);
    expectTensor(mw, {2}, adamw.expAvg);
  }
  // The first step, by hand: m' = 0.05, v' = 0.00025, so the bias-corrected
  // ratio is 0.5 / (0.5 + eps) and the first parameter moves by ~lr.
  TorchAdam first{0.1, 0.9, 0.999, 1e-8, 0, false, {1}, {0}, {0}};
  first.update({0.5});
  EXPECT_NEAR(first.param[0], 1 - 0.1 * 0.5 / (0.5 + 1e-8), 1e-15);

  expectError(src,
              {p, f64({2}, {1, 1}), m, v, Tensor::fromInts(DType::i64, {}, {0}),
               scalar(0.1), scalar(0.9), scalar(0.999), scalar(1e-8),
               scalar(0)},
              "step must be >= 1");
}

/// torch.optim.RMSprop (momentum 0, not centred) and torch.optim.Adagrad
/// (`_single_tensor_rmsprop`, `_single_tensor_adagrad`), written out as
/// PyTorch does them.
struct TorchRmspropAdagrad {
  double lr, alpha, lrDecay, eps, weightDecay;
  std::vector<double> rmsParam, squareAvg, adaParam, sum;
  int step = 0;

  void update(const std::vector<double> &grad) {
    ++step;
    double clr = lr / (1 + (step - 1) * lrDecay);
    for (size_t i = 0; i < grad.size(); ++i) {
      double g = grad[i] + weightDecay * rmsParam[i];
      squareAvg[i] = alpha * squareAvg[i] + (1 - alpha) * g * g;
      rmsParam[i] -= lr * g / (std::sqrt(squareAvg[i]) + eps);
      double ga = grad[i] + weightDecay * adaParam[i];
      sum[i] += ga * ga;
      adaParam[i] -= clr * ga / (std::sqrt(sum[i]) + eps);
    }
  }
};

TEST_F(InterpreterTest, RmspropAndAdagradMatchPyTorch) {
  const char *src = R"mlir(
    func.func @f(%p: tensor<2xf64>, %g: tensor<2xf64>, %sq: tensor<2xf64>,
                 %q: tensor<2xf64>, %s: tensor<2xf64>, %t: tensor<i64>,
                 %lr: tensor<f64>, %alpha: tensor<f64>, %decay: tensor<f64>,
                 %eps: tensor<f64>, %wd: tensor<f64>)
        -> (tensor<2xf64>, tensor<2xf64>, tensor<2xf64>, tensor<2xf64>) {
      %0, %1 = train.rmsprop %p, %g, %sq lr %lr alpha %alpha eps %eps weight_decay %wd : tensor<2xf64>, tensor<f64>
      %2, %3 = train.adagrad %q, %g, %s step %t lr %lr lr_decay %decay eps %eps weight_decay %wd : tensor<2xf64>, tensor<f64>
      return %0, %1, %2, %3 : tensor<2xf64>, tensor<2xf64>, tensor<2xf64>, tensor<2xf64>
    })mlir";
  std::vector<std::vector<double>> grads = {{0.5, -0.1}, {0.2, 0.3}, {-1, 2}};
  TorchRmspropAdagrad ref{0.1,     0.9,    0.5,     1e-8,  0.01,
                          {1, -2}, {0, 0}, {1, -2}, {0, 0}};
  Tensor p = f64({2}, ref.rmsParam), sq = f64({2}, {0, 0}), q = p, s = sq;
  for (auto [step, grad] : llvm::enumerate(grads)) {
    std::vector<Tensor> r =
        runF(src, {p, f64({2}, grad), sq, q, s,
                   Tensor::fromInts(DType::i64, {}, {int64_t(step) + 1}),
                   scalar(0.1), scalar(0.9), scalar(0.5), scalar(1e-8),
                   scalar(0.01)});
    ASSERT_EQ(r.size(), 4u);
    ref.update(grad);
    p = r[0], sq = r[1], q = r[2], s = r[3];
    expectTensor(p, {2}, ref.rmsParam);
    expectTensor(sq, {2}, ref.squareAvg);
    expectTensor(q, {2}, ref.adaParam);
    expectTensor(s, {2}, ref.sum);
  }
  expectError(src,
              {p, f64({2}, {1, 1}), sq, q, s,
               Tensor::fromInts(DType::i64, {}, {0}), scalar(0.1), scalar(0.9),
               scalar(0), scalar(1e-8), scalar(0)},
              "step must be >= 1");
}

double l2(const std::vector<double> &x) {
  double s = 0;
  for (double v : x)
    s += v * v;
  return std::sqrt(s);
}

TEST_F(InterpreterTest, LambMatchesItsDefinition) {
  const char *src = R"mlir(
    func.func @f(%p: tensor<2x2xf64>, %g: tensor<2x2xf64>, %m: tensor<2x2xf64>,
                 %v: tensor<2x2xf64>, %t: tensor<i64>, %lr: tensor<f64>,
                 %b1: tensor<f64>, %b2: tensor<f64>, %eps: tensor<f64>,
                 %wd: tensor<f64>)
        -> (tensor<2x2xf64>, tensor<2x2xf64>, tensor<2x2xf64>, tensor<2x2xf64>) {
      %0, %1, %2 = train.lamb %p, %g, %m, %v step %t lr %lr betas %b1, %b2 eps %eps weight_decay %wd : tensor<2x2xf64>, tensor<f64>
      %3, %4, %5 = train.lamb %p, %g, %m, %v step %t lr %lr betas %b1, %b2 eps %eps weight_decay %wd {no_adapt} : tensor<2x2xf64>, tensor<f64>
      return %0, %1, %2, %3 : tensor<2x2xf64>, tensor<2x2xf64>, tensor<2x2xf64>, tensor<2x2xf64>
    })mlir";
  const double lr = 0.1, b1 = 0.9, b2 = 0.999, eps = 1e-6, wd = 0.01;
  std::vector<double> param = {1, -2, 0.5, 3}, m(4, 0), v(4, 0);
  std::vector<std::vector<double>> grads = {
      {0.5, -0.1, 0.2, 0.3}, {0.2, 0.3, -1, 2}, {-1, 2, 0.1, 0.1}};
  Tensor p = f64({2, 2}, param), mt = f64({2, 2}, m), vt = mt;
  for (auto [i, grad] : llvm::enumerate(grads)) {
    int step = i + 1;
    std::vector<Tensor> r =
        runF(src, {p, f64({2, 2}, grad), mt, vt,
                   Tensor::fromInts(DType::i64, {}, {step}), scalar(lr),
                   scalar(b1), scalar(b2), scalar(eps), scalar(wd)});
    ASSERT_EQ(r.size(), 4u);
    // You et al. 2019, algorithm 2, for one layer.
    std::vector<double> update(4), plain(4), next(4), nextPlain(4);
    for (int j = 0; j < 4; ++j) {
      m[j] = b1 * m[j] + (1 - b1) * grad[j];
      v[j] = b2 * v[j] + (1 - b2) * grad[j] * grad[j];
      plain[j] = m[j] / (1 - std::pow(b1, step)) /
                 (std::sqrt(v[j] / (1 - std::pow(b2, step))) + eps);
      update[j] = plain[j] + wd * param[j];
    }
    double trust = l2(param) / l2(update);
    EXPECT_NE(trust, 1.0);
    for (int j = 0; j < 4; ++j) {
      next[j] = param[j] - lr * trust * update[j];
      nextPlain[j] = param[j] - lr * plain[j];
    }
    expectTensor(r[1], {2, 2}, m);
    expectTensor(r[2], {2, 2}, v);
    expectTensor(r[3], {2, 2}, nextPlain);
    expectTensor(r[0], {2, 2}, next);
    param = next;
    p = r[0], mt = r[1], vt = r[2];
  }
  // A zero parameter has no scale to adapt to: the trust ratio is 1.
  std::vector<Tensor> r =
      runF(src, {f64({2, 2}, {0, 0, 0, 0}), f64({2, 2}, {1, -1, 1, -1}),
                 f64({2, 2}, {0, 0, 0, 0}), f64({2, 2}, {0, 0, 0, 0}),
                 Tensor::fromInts(DType::i64, {}, {1}), scalar(lr), scalar(b1),
                 scalar(b2), scalar(0), scalar(wd)});
  ASSERT_EQ(r.size(), 4u);
  expectTensor(r[0], {2, 2}, {-lr, lr, -lr, lr});
}

TEST_F(InterpreterTest, LarsMatchesItsDefinition) {
  const char *src = R"mlir(
    func.func @f(%p: tensor<3xf64>, %g: tensor<3xf64>, %buf: tensor<3xf64>,
                 %lr: tensor<f64>, %mom: tensor<f64>, %eta: tensor<f64>,
                 %wd: tensor<f64>)
        -> (tensor<3xf64>, tensor<3xf64>, tensor<3xf64>, tensor<3xf64>) {
      %0, %1 = train.lars %p, %g, %buf lr %lr momentum %mom eta %eta weight_decay %wd : tensor<3xf64>, tensor<f64>
      %2, %3 = train.lars %p, %g, %buf lr %lr momentum %mom eta %eta weight_decay %wd {no_adapt} : tensor<3xf64>, tensor<f64>
      return %0, %1, %2, %3 : tensor<3xf64>, tensor<3xf64>, tensor<3xf64>, tensor<3xf64>
    })mlir";
  const double lr = 0.5, mom = 0.9, eta = 0.02, wd = 0.01;
  std::vector<double> param = {3, 0, -4}, grad = {0.6, 0.8, 0},
                      buf = {0.1, 0, 0};
  std::vector<Tensor> r =
      runF(src, {f64({3}, param), f64({3}, grad), f64({3}, buf), scalar(lr),
                 scalar(mom), scalar(eta), scalar(wd)});
  ASSERT_EQ(r.size(), 4u);
  // |p| = 5, |g| = 1: trust = 0.02 * 5 / (1 + 0.01 * 5).
  double trust = eta * 5 / (1 + wd * 5);
  std::vector<double> newBuf(3), newP(3), plainBuf(3), plainP(3);
  for (int j = 0; j < 3; ++j) {
    newBuf[j] = mom * buf[j] + trust * (grad[j] + wd * param[j]);
    newP[j] = param[j] - lr * newBuf[j];
    plainBuf[j] = mom * buf[j] + grad[j];
    plainP[j] = param[j] - lr * plainBuf[j];
  }
  expectTensor(r[0], {3}, newP);
  expectTensor(r[1], {3}, newBuf);
  expectTensor(r[2], {3}, plainP);
  expectTensor(r[3], {3}, plainBuf);
  // A zero gradient leaves the trust ratio at 1 (no division by zero).
  r = runF(src, {f64({3}, param), f64({3}, {0, 0, 0}), f64({3}, {0, 0, 0}),
                 scalar(lr), scalar(mom), scalar(eta), scalar(wd)});
  ASSERT_EQ(r.size(), 4u);
  expectTensor(r[0], {3}, {3 - lr * wd * 3, 0, -4 + lr * wd * 4});
}

TEST_F(InterpreterTest, ClipByGlobalNorm) {
  const char *src = R"mlir(
    func.func @f(%a: tensor<2xf64>, %b: tensor<1xf64>, %c: tensor<f64>) -> (tensor<2xf64>, tensor<1xf64>, tensor<f64>) {
      %0, %1, %n = train.clip_by_global_norm %a, %b max_norm %c : tensor<2xf64>, tensor<1xf64>, tensor<f64>
      return %0, %1, %n : tensor<2xf64>, tensor<1xf64>, tensor<f64>
    })mlir";
  Tensor a = f64({2}, {3, 4}), b = f64({1}, {12});
  // Norm 13; clipped to 6.5 with PyTorch's 1e-6 guard.
  std::vector<Tensor> r = runF(src, {a, b, scalar(6.5)});
  ASSERT_EQ(r.size(), 3u);
  double k = 6.5 / (13 + 1e-6);
  expectTensor(r[0], {2}, {3 * k, 4 * k});
  expectTensor(r[1], {1}, {12 * k});
  expectTensor(r[2], {}, {13});
  // Below the bound, and with clipping disabled, nothing changes.
  for (double maxNorm : {20.0, 0.0, -1.0}) {
    r = runF(src, {a, b, scalar(maxNorm)});
    ASSERT_EQ(r.size(), 3u);
    expectTensor(r[0], {2}, {3, 4});
    expectTensor(r[1], {1}, {12});
  }
}

//===----------------------------------------------------------------------===//
// State
//===----------------------------------------------------------------------===//

TEST_F(InterpreterTest, StateInitialisesGlobalsAndStepsUpdateIt) {
  std::string errors;
  module = test::parseModule(ctx.get(), R"mlir(
    train.global param @w : tensor<2xf64> = dense<[1.0, 2.0]> : tensor<2xf64>
    train.global param @c : tensor<2xf32> = #train.init<constant, 0.5>
    train.global param @o : tensor<2xf64> = #train.init<ones>
    train.global param @k : tensor<2x2xf64> = #train.init<kaiming_uniform>
    train.global accumulator @w.grad of @w : tensor<2xf64>
    train.global counter @t : tensor<i64>
    func.func @f(%g: tensor<2xf64>) -> tensor<2xf64> {
      train.accumulate %g, @w.grad : tensor<2xf64>
      %w = train.load @w : tensor<2xf64>
      %acc = train.load @w.grad : tensor<2xf64>
      %w2 = nn.sub %w, %acc : tensor<2xf64>, tensor<2xf64> -> tensor<2xf64>
      train.store %w2, @w : tensor<2xf64>
      %t = train.load @t : tensor<i64>
      %one = arith.constant dense<1> : tensor<i64>
      %two = arith.constant dense<2> : tensor<i64>
      %t1 = arith.addi %t, %one : tensor<i64>
      %t2 = arith.muli %t1, %two : tensor<i64>
      train.store %t2, @t : tensor<i64>
      return %w : tensor<2xf64>
    })mlir",
                             &errors);
  ASSERT_TRUE(module) << errors;
  FailureOr<State> init = State::fromModule(*module);
  ASSERT_TRUE(succeeded(init));
  state = std::move(*init);
  EXPECT_EQ(state.getNames(),
            (std::vector<std::string>{"c", "k", "o", "t", "w", "w.grad"}));
  expectTensor(*state.lookup("w"), {2}, {1, 2});
  ASSERT_EQ(state.lookup("c")->getDType(), DType::f32);
  expectTensor(*state.lookup("c"), {2}, {0.5, 0.5});
  expectTensor(*state.lookup("o"), {2}, {1, 1});
  // Random initialisers are the runtime's: the interpreter leaves zeros.
  expectTensor(*state.lookup("k"), {2, 2}, {0, 0, 0, 0});

  std::vector<Tensor> r =
      test::run(*module, "f", {f64({2}, {0.5, 0.25})}, state);
  ASSERT_EQ(r.size(), 1u);
  expectTensor(r[0], {2}, {1, 2});
  r = test::run(*module, "f", {f64({2}, {0.5, 0.25})}, state);
  ASSERT_EQ(r.size(), 1u);
  // The accumulator keeps growing: w = [1, 2] - [0.5, 0.25] - [1, 0.5].
  expectTensor(*state.lookup("w.grad"), {2}, {1, 0.5});
  expectTensor(*state.lookup("w"), {2}, {-0.5, 1.25});
  EXPECT_EQ(state.lookup("t")->getInt(0), 6);

  State empty;
  test::DiagnosticCollector diags(ctx.get());
  EXPECT_TRUE(failed(interp::interpret(module->lookupSymbol<func::FuncOp>("f"),
                                       {f64({2}, {0, 0})}, empty)));
  EXPECT_NE(diags.str().find("global @w.grad has no value in the interpreter "
                             "state"),
            std::string::npos)
      << diags.str();
}

} // namespace
