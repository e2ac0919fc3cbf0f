//===- ShortBatchTest.cpp - A short batch counts its real samples only ----===//
//
// A graph compiled for a batch capacity of 8 runs a batch of 3 padded to 8
// with sample weight 0: the loss and the gradients must be exactly those of
// the 3 real samples (checked against a double-precision reference of the
// model), and no graph is recompiled. Also the batch reductions of
// Tensor::sum/mean and mse_loss, and evaluation under NoGradGuard.
//
//===----------------------------------------------------------------------===//

#include "TraceTestUtil.h"

#include <gtest/gtest.h>

#include <cmath>

namespace cleave::tracetest {
namespace {

constexpr double kTolerance = 1e-5;

TEST(ShortBatchTest, GradientsOfTheRealSamplesOnly) {
  resetTracer();
  Sequential model = makeMlp();
  SGD opt(model.parameters(), 0.1);
  Data data = makeData(11, 16, 3, 7);

  // A full batch sets the capacity to 8.
  Data full = data.slice(0, 8);
  Tensor fullLoss = cross_entropy(model(images(full, 4)), labels(full));
  fullLoss.backward();
  mark_step();
  opt.zero_grad();
  mark_step();
  ASSERT_EQ(trace::stats().compilations, 2);

  // Three samples, padded to 8.
  Data shortBatch = data.slice(8, 3);
  Tensor loss = cross_entropy(model(images(shortBatch, 4)), labels(shortBatch));
  loss.backward();
  mark_step();
  EXPECT_EQ(trace::stats().compilations, 2) << "the short batch recompiled";

  ReferenceMlp ref = ReferenceMlp::from(model.parameters());
  std::vector<std::vector<double>> grads;
  double expectedLoss = ref.meanLoss(shortBatch, &grads);
  EXPECT_NEAR(loss.item(), expectedLoss, kTolerance * std::abs(expectedLoss));
  std::vector<Tensor> params = model.parameters();
  for (size_t i = 0; i < params.size(); ++i)
    EXPECT_LT(maxRelativeError(params[i].grad().toFloatVector(), grads[i]),
              kTolerance)
        << "parameter " << i;

  // The full batch's loss was the mean over its 8 samples.
  ReferenceMlp before = ref; // parameters did not change (no step)
  EXPECT_NEAR(fullLoss.item(), before.meanLoss(full),
              kTolerance * std::abs(fullLoss.item()));
}

TEST(ShortBatchTest, BatchSumAndMeanCountRealSamples) {
  resetTracer();
  Data data = makeData(8, 16, 3, 8);
  Tensor w = Tensor::parameter(std::vector<float>(16, 0.5f), {16});
  for (int64_t k : {8, 5}) {
    Data batch = data.slice(0, k);
    Tensor x = Tensor::fromBatch(batch.x, {k, 16});
    Tensor y = x * w; // [k, 16]
    Tensor s = y.sum(), m = y.mean(), rows = y.sum({1});
    Tensor rowMean = rows.mean();
    mark_step();
    double sum = 0;
    for (int64_t i = 0; i < k * 16; ++i)
      sum += 0.5 * batch.x[i];
    EXPECT_NEAR(s.item(), sum, 1e-4) << k;
    EXPECT_NEAR(m.item(), sum / double(k * 16), 1e-6) << k;
    EXPECT_NEAR(rowMean.item(), sum / double(k), 1e-5) << k;
    EXPECT_EQ(rows.shape(), (Shape{k}));
    EXPECT_EQ(rows.toFloatVector().size(), size_t(k));
  }
  EXPECT_EQ(trace::stats().compilations, 1);
}

TEST(ShortBatchTest, MseLossOfTheRealSamples) {
  resetTracer();
  Linear layer(16, 2);
  Data data = makeData(8, 16, 3, 9);
  std::vector<float> targets(16);
  for (size_t i = 0; i < targets.size(); ++i)
    targets[i] = float(i % 5) * 0.25f - 0.5f;
  for (int64_t k : {8, 3}) {
    Data batch = data.slice(0, k);
    Tensor x = Tensor::fromBatch(batch.x, {k, 16});
    Tensor t = Tensor::fromBatch(targets.data(), {k, 2});
    Tensor loss = mse_loss(layer(x), t);
    loss.backward();
    mark_step();

    // Reference: mean over k x 2 elements of (W x + b - t)^2, and its
    // gradient; the gradients accumulate over both batches.
    std::vector<float> w = layer.weight.toFloatVector(),
                       b = layer.bias.toFloatVector();
    double expected = 0;
    for (int64_t s = 0; s < k; ++s)
      for (int64_t o = 0; o < 2; ++o) {
        double y = b[o];
        for (int64_t i = 0; i < 16; ++i)
          y += double(w[o * 16 + i]) * batch.x[s * 16 + i];
        double d = y - targets[s * 2 + o];
        expected += d * d;
      }
    expected /= double(k * 2);
    EXPECT_NEAR(loss.item(), expected, kTolerance * expected) << k;
  }
  EXPECT_EQ(trace::stats().compilations, 1);
}

TEST(ShortBatchTest, EvaluationUnderNoGrad) {
  resetTracer();
  Sequential model = makeMlp();
  Data data = makeData(13, 16, 3, 10);
  ReferenceMlp ref = ReferenceMlp::from(model.parameters());
  for (int64_t start : {0, 8}) {
    Data batch = data.slice(start, std::min<int64_t>(8, 13 - start));
    NoGradGuard noGrad;
    Tensor logits = model(images(batch, 4));
    EXPECT_FALSE(logits.requiresGrad());
    EXPECT_THROW(logits.sum().backward(), Error);
    mark_step();
    EXPECT_EQ(logits.shape(), (Shape{batch.samples, 3}));
    EXPECT_LT(maxRelativeError(logits.toFloatVector(), ref.forward(batch)),
              kTolerance);
  }
  EXPECT_EQ(trace::stats().compilations, 1);
}

} // namespace
} // namespace cleave::tracetest
