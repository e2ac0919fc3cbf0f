//===- ApiTest.cpp - Errors and reading values of the tracing API ---------===//
//
// Mistakes are reported where they are made, as cleave::Error with a
// message naming the operation, and record nothing. Reading a pending value
// computes just what it needs (an implicit cut) and leaves state updates to
// mark_step.
//
//===----------------------------------------------------------------------===//

#include "TraceTestUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>

namespace cleave::tracetest {
namespace {

/// Runs `fn`, expecting a cleave::Error whose message contains `text`.
void expectError(const std::function<void()> &fn, cleave_status status,
                 const std::string &text) {
  try {
    fn();
    ADD_FAILURE() << "no error; expected one containing '" << text << "'";
  } catch (const Error &e) {
    EXPECT_EQ(e.status(), status) << e.what();
    EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
  }
}

TEST(ApiTest, ShapeErrorsNameTheOperation) {
  resetTracer();
  Data data = makeData(4, 16, 3, 1);
  Tensor x = Tensor::fromBatch(data.x, {4, 16});
  Linear wrong(15, 3);
  expectError([&] { wrong(x); }, CLEAVE_INVALID_ARGUMENT,
              "linear: input f32[4, 16] (batched) does not end in the "
              "weight's 15 input features");
  expectError(
      [&] {
        x + Tensor::fromBatch(data.x, {2, 32});
      },
      CLEAVE_INVALID_ARGUMENT, "add: shapes [4, 16] and [2, 32]");
  expectError([&] { x.sum({0}); }, CLEAVE_INVALID_ARGUMENT,
              "sum: cannot reduce over the batch dimension");
  expectError([&] { x.transpose(0, 1); }, CLEAVE_INVALID_ARGUMENT,
              "transpose: cannot move the batch dimension");
  expectError(
      [&] {
        x + Tensor::zeros({4, 16});
      },
      CLEAVE_INVALID_ARGUMENT, "may not span the batch dimension");
  expectError(
      [&] {
        x.reshape({2, 32});
      },
      CLEAVE_INVALID_ARGUMENT, "reshape: a batched tensor keeps its batch");
  expectError(
      [&] {
        Tensor::fromBatch(data.x, {5, 16});
      },
      CLEAVE_INVALID_ARGUMENT, "fromBatch: 64 values for shape");
  Tensor y = labels(data);
  expectError([&] { y * 2.0; }, CLEAVE_INVALID_ARGUMENT,
              "mul: needs an f32 tensor, got i64[4] (batched)");
  expectError([&] { cross_entropy(x, x); }, CLEAVE_INVALID_ARGUMENT,
              "cross_entropy: labels must be i64 [4], got f32[4, 16]");
  expectError([&] { Tensor().relu(); }, CLEAVE_INVALID_ARGUMENT,
              "relu: the tensor is undefined");
  // Nothing was recorded: nothing to run.
  mark_step();
  EXPECT_EQ(trace::stats().graphsRun, 0);
}

TEST(ApiTest, BackwardNeedsAScalarThatDependsOnParameters) {
  resetTracer();
  Sequential model = makeMlp();
  Data data = makeData(4, 16, 3, 2);
  Tensor logits = model(images(data, 4));
  expectError([&] { logits.backward(); }, CLEAVE_INVALID_ARGUMENT,
              "backward: needs an f32 scalar (shape [])");
  Tensor constant = (images(data, 4) * 2.0).sum();
  expectError([&] { constant.backward(); }, CLEAVE_INVALID_ARGUMENT,
              "backward: the tensor does not depend on a parameter");
  Tensor loss = cross_entropy(logits, labels(data));
  mark_step();
  // A value read after mark_step is a constant.
  expectError([&] { loss.backward(); }, CLEAVE_INVALID_ARGUMENT,
              "does not depend on a parameter");
}

TEST(ApiTest, MixedBatchSizesInOneGraph) {
  resetTracer();
  Sequential model = makeMlp();
  Data data = makeData(12, 16, 3, 3);
  Data a = data.slice(0, 8), b = data.slice(8, 4);
  Tensor la = cross_entropy(model(images(a, 4)), labels(a));
  Tensor lb = cross_entropy(model(images(b, 4)), labels(b));
  expectError([] { mark_step(); }, CLEAVE_INVALID_ARGUMENT,
              "the graph mixes batches of 8 and 4 samples");
  // Each can still be computed on its own.
  EXPECT_GT(la.item(), 0.0);
  EXPECT_GT(lb.item(), 0.0);
}

TEST(ApiTest, ReadingAPendingValueIsAnImplicitCut) {
  resetTracer();
  Sequential model = makeMlp();
  Data data = makeData(8, 16, 3, 4);
  Tensor loss = cross_entropy(model(images(data, 4)), labels(data));
  EXPECT_TRUE(loss.isPending());
  double value = loss.item();
  EXPECT_FALSE(loss.isPending());
  EXPECT_EQ(trace::stats().implicitCuts, 1);
  EXPECT_EQ(trace::stats().markSteps, 0);
  EXPECT_EQ(loss.item(), value); // materialised now: no second cut
  EXPECT_EQ(trace::stats().implicitCuts, 1);

  // A pending gradient can be read, but only mark_step writes it back.
  Tensor again = cross_entropy(model(images(data, 4)), labels(data));
  again.backward();
  Tensor w = model.parameters()[0];
  ASSERT_TRUE(w.grad().defined());
  std::vector<float> early = w.grad().toFloatVector();
  EXPECT_TRUE(w.grad().isPending());
  mark_step();
  EXPECT_FALSE(w.grad().isPending());
  EXPECT_EQ(w.grad().toFloatVector(), early);
}

TEST(ApiTest, UpdatesAreVisibleBeforeMarkStep) {
  resetTracer();
  Tensor w = Tensor::parameter({1.0f, 2.0f}, {2});
  Tensor loss = (w * w).sum(); // d/dw = 2 w
  loss.backward();
  SGD opt({w}, 0.25);
  opt.step(); // w - 0.25 * 2 w = w / 2
  opt.zero_grad();
  // Reads after the recorded update see the new value, before mark_step.
  Tensor doubled = w * 2.0;
  mark_step();
  EXPECT_EQ(w.toFloatVector(), (std::vector<float>{0.5f, 1.0f}));
  EXPECT_EQ(doubled.toFloatVector(), (std::vector<float>{1.0f, 2.0f}));
  EXPECT_EQ(w.grad().toFloatVector(), (std::vector<float>{0.0f, 0.0f}));
}

TEST(ApiTest, OptimizersTakeParametersOnly) {
  resetTracer();
  expectError([] { SGD({Tensor::zeros({2})}, 0.1); }, CLEAVE_INVALID_ARGUMENT,
              "optimizer: params[0] is not a parameter");
  Tensor w = Tensor::parameter({1.0f}, {1});
  expectError([&] { SGD({w}, -1.0); }, CLEAVE_INVALID_ARGUMENT,
              "SGD: lr must be a finite non-negative number");
  expectError([&] { SGD({w}, 0.1, 0.0, 0.0, /*nesterov=*/true); },
              CLEAVE_INVALID_ARGUMENT, "Nesterov momentum needs momentum > 0");
}

TEST(ApiTest, DevicesAreCheckedWhenSet) {
  resetTracer();
  trace::Options options;
  for (const char *device : {"tpu", "cuda:", "cuda:x", "cuda0", "CPU"}) {
    options.device = device;
    expectError([&] { trace::set_options(options); }, CLEAVE_INVALID_ARGUMENT,
                std::string("set_options: device is '") + device +
                    "', expected cpu, cuda or cuda:N");
  }
  options.device = "cpu";
  options.gpuArch = "sm_90";
  expectError([&] { trace::set_options(options); }, CLEAVE_INVALID_ARGUMENT,
              "set_options: gpuArch is for a cuda device; device is 'cpu'");
  options.device = "cuda";
  options.gpuArch = "sm_13";
  expectError([&] { trace::set_options(options); }, CLEAVE_FAILED_PRECONDITION,
              "unknown GPU architecture 'sm_13' in gpu-arch");
  // Nothing was set by the refusals.
  EXPECT_EQ(trace::options().device, "cpu");
  EXPECT_EQ(trace::options().gpuArch, "");
}

/// SGD on a small MLP for one micro-step, on `device`; the first weight
/// after it.
std::vector<float> oneSgdStep(const std::string &device) {
  resetTracer();
  trace::Options options;
  options.device = device;
  trace::set_options(options);
  Sequential model = makeMlp();
  SGD opt(model.parameters(), 0.1);
  Data data = makeData(8, 16, 3, 5);
  Tensor loss = cross_entropy(model(images(data, 4)), labels(data));
  loss.backward();
  opt.step();
  opt.zero_grad();
  mark_step();
  return model.parameters()[0].toFloatVector();
}

TEST(ApiTest, GraphsCompileForCudaAndRunWhereAGpuIs) {
  const std::vector<float> cpu = oneSgdStep("cpu");
  // Where the CUDA toolkit is missing, a cuda device is refused when set;
  // where it is present but no driver is, the graph compiles for the GPU
  // and loading it says why it cannot run; on a GPU it trains as on the CPU.
  trace::Options options;
  options.device = "cuda";
  std::string refused;
  try {
    trace::set_options(options);
  } catch (const Error &e) {
    refused = e.what();
  }
  if (!refused.empty()) {
    EXPECT_NE(refused.find("CUDA toolkit"), std::string::npos) << refused;
    return;
  }
  std::vector<float> gpu;
  try {
    gpu = oneSgdStep("cuda");
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("loading the compiled graph ("),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("no CUDA driver"), std::string::npos)
        << "the graph compiled for cuda and failed to load for another "
           "reason: "
        << e.what();
    trace::set_options(trace::Options());
    return;
  }
  trace::set_options(trace::Options());
  ASSERT_EQ(gpu.size(), cpu.size());
  for (size_t i = 0; i < cpu.size(); ++i)
    EXPECT_NEAR(gpu[i], cpu[i], 1e-5 * (1 + std::abs(cpu[i]))) << i;
}

TEST(ApiTest, PendingIrShowsTheGraph) {
  resetTracer();
  EXPECT_EQ(trace::pending_ir(), "");
  Tensor w = Tensor::parameter({1.0f, 2.0f}, {2});
  (w * w).sum().backward();
  std::string ir = trace::pending_ir();
  EXPECT_NE(ir.find("train.accumulate"), std::string::npos) << ir;
  EXPECT_EQ(trace::stats().compilations, 0);
}

} // namespace
} // namespace cleave::tracetest
