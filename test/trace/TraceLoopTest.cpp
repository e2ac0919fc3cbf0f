//===- TraceLoopTest.cpp - The RATEX loop compiles two graphs -------------===//
//
// The loop of docs/design/tracing.md, verbatim, over several epochs whose
// last micro-batch is short and with the learning rate changed between
// epochs, compiles exactly two graphs; the counters of trace::stats() say
// so. Then the cache: equal structures share compiled graphs whatever the
// data, hyperparameter values or parameter tensors; a different structure
// compiles anew; a batch larger than the compiled capacity recompiles once.
//
//===----------------------------------------------------------------------===//

#include "TraceTestUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

namespace cleave::tracetest {
namespace {

struct LoopConfig {
  int64_t epochs = 3;
  /// 45 samples in micro-batches of 8: five full ones and one of 5.
  int64_t samples = 45;
  int64_t microBatch = 8;
  /// N: micro-batches per optimizer step (windows span epochs).
  int64_t accumulate = 4;
  /// Multiplies the learning rate at the start of every epoch after the
  /// first.
  double lrDecay = 1.0;
  uint64_t dataSeed = 1;
};

struct LoopResult {
  int64_t microSteps = 0;
  int64_t optimizerSteps = 0;
  /// Mean loss of each epoch.
  std::vector<double> epochLoss;
};

LoopResult runLoop(Module &model, Optimizer &opt, const LoopConfig &c) {
  Data data = makeData(c.samples, 16, 3, c.dataSeed);
  const int64_t N = c.accumulate;
  LoopResult r;
  for (int64_t epoch = 0; epoch < c.epochs; ++epoch) {
    if (epoch > 0)
      opt.set_lr(opt.lr() * c.lrDecay);
    double sum = 0;
    for (int64_t start = 0; start < c.samples; start += c.microBatch) {
      Data batch = data.slice(start, std::min(c.microBatch, c.samples - start));
      // The loop, as a user writes it.
      Tensor x = images(batch, 4);
      Tensor y = labels(batch);
      Tensor loss = cross_entropy(model(x), y) / N;
      loss.backward();
      mark_step();
      if (++r.microSteps % N == 0) {
        opt.step();
        opt.zero_grad();
        mark_step();
        ++r.optimizerSteps;
      }
      sum += loss.item() * N * double(batch.samples);
    }
    r.epochLoss.push_back(sum / double(c.samples));
  }
  return r;
}

TEST(TraceLoopTest, RatexLoopCompilesTwoGraphs) {
  resetTracer();
  Sequential model = makeMlp();
  SGD opt(model.parameters(), /*lr=*/0.2, /*momentum=*/0.9);
  LoopConfig config;
  config.epochs = 4;
  config.lrDecay = 0.5;
  LoopResult r = runLoop(model, opt, config);

  // 6 micro-batches per epoch (the last of 5 samples), one step every 4,
  // and three learning rates after the first.
  EXPECT_EQ(r.microSteps, 24);
  EXPECT_DOUBLE_EQ(opt.lr(), 0.2 * 0.5 * 0.5 * 0.5);
  EXPECT_EQ(r.optimizerSteps, 6);
  trace::Stats s = trace::stats();
  EXPECT_EQ(s.compilations, 2);
  EXPECT_EQ(s.markSteps, r.microSteps + r.optimizerSteps);
  EXPECT_EQ(s.graphsRun, s.markSteps);
  EXPECT_EQ(s.cacheHits, s.graphsRun - 2);
  // loss.item() after mark_step reads a computed value: no implicit cut.
  EXPECT_EQ(s.implicitCuts, 0);
  // It trained.
  for (double loss : r.epochLoss)
    EXPECT_TRUE(std::isfinite(loss));
  EXPECT_LT(r.epochLoss.back(), r.epochLoss.front());
}

TEST(TraceLoopTest, AdamLoopCompilesTwoGraphs) {
  resetTracer();
  Sequential model = makeMlp();
  Adam opt(model.parameters(), /*lr=*/0.01);
  LoopConfig config;
  config.lrDecay = 0.3;
  LoopResult r = runLoop(model, opt, config);
  trace::Stats s = trace::stats();
  EXPECT_EQ(s.compilations, 2);
  EXPECT_EQ(s.graphsRun, r.microSteps + r.optimizerSteps);
  EXPECT_EQ(opt.stepCount(), r.optimizerSteps);
  EXPECT_LT(r.epochLoss.back(), r.epochLoss.front());
}

TEST(TraceLoopTest, ConvNetLoopCompilesTwoGraphs) {
  resetTracer();
  Sequential model = makeCnn();
  SGD opt(model.parameters(), /*lr=*/0.1, /*momentum=*/0.9);
  Data data = makeData(21, 36, 3, 5);
  for (int64_t epoch = 0; epoch < 2; ++epoch)
    for (int64_t start = 0, i = 0; start < data.samples; start += 8, ++i) {
      Data batch =
          data.slice(start, std::min<int64_t>(8, data.samples - start));
      Tensor loss = cross_entropy(model(images(batch, 6)), labels(batch)) / 2;
      loss.backward();
      mark_step();
      if (i % 2 == 1) {
        opt.step();
        opt.zero_grad();
        mark_step();
      }
    }
  EXPECT_EQ(trace::stats().compilations, 2);
}

TEST(TraceLoopTest, OneGraphPerStepMatchesTheRatexLoop) {
  // PyTorch's usual loop, with one mark_step per step: forward, backward and
  // update in one graph, the update reading the gradient computed in it.
  resetTracer();
  Data data = makeData(40, 16, 3, 6);
  Sequential a = makeMlp();
  SGD optA(a.parameters(), 0.1, 0.9);
  for (int64_t start = 0; start < 40; start += 8) {
    Data batch = data.slice(start, 8);
    optA.zero_grad();
    Tensor loss = cross_entropy(a(images(batch, 4)), labels(batch));
    loss.backward();
    optA.step();
    mark_step();
  }
  // The first step has no gradient to zero yet: a graph of its own.
  EXPECT_EQ(trace::stats().compilations, 2);

  manual_seed(0);
  Sequential b = makeMlp();
  SGD optB(b.parameters(), 0.1, 0.9);
  for (int64_t start = 0; start < 40; start += 8) {
    Data batch = data.slice(start, 8);
    Tensor loss = cross_entropy(b(images(batch, 4)), labels(batch));
    loss.backward();
    mark_step();
    optB.step();
    optB.zero_grad();
    mark_step();
  }
  std::vector<Tensor> pa = a.parameters(), pb = b.parameters();
  for (size_t i = 0; i < pa.size(); ++i)
    EXPECT_LT(maxRelativeError(pa[i].toFloatVector(), pb[i].toFloatVector()),
              1e-5)
        << "parameter " << i;
}

//===----------------------------------------------------------------------===//
// The cache
//===----------------------------------------------------------------------===//

TEST(TraceCacheTest, IdenticalLoopsShareTheCache) {
  resetTracer();
  {
    Sequential model = makeMlp();
    SGD opt(model.parameters(), 0.1, 0.9);
    runLoop(model, opt, LoopConfig());
  }
  trace::Stats first = trace::stats();
  ASSERT_EQ(first.compilations, 2);

  // Other parameter tensors, initial values, data, learning rate, momentum
  // and weight decay values: the same structure.
  manual_seed(42);
  Sequential model = makeMlp();
  SGD opt(model.parameters(), 0.03, 0.5, /*weightDecay=*/1e-3);
  LoopConfig config;
  config.dataSeed = 9;
  config.lrDecay = 0.7;
  runLoop(model, opt, config);
  trace::Stats second = trace::stats();
  EXPECT_EQ(second.compilations, 2);
  EXPECT_EQ(second.cacheHits - first.cacheHits,
            second.graphsRun - first.graphsRun);

  // Hyperparameter values changed in the middle of a run.
  opt.set_momentum(0.8);
  opt.set_weight_decay(0.0);
  runLoop(model, opt, config);
  EXPECT_EQ(trace::stats().compilations, 2);
}

TEST(TraceCacheTest, DifferentLayerSizeCompilesAnew) {
  resetTracer();
  Sequential model = makeMlp(12);
  SGD opt(model.parameters(), 0.1);
  runLoop(model, opt, LoopConfig());
  EXPECT_EQ(trace::stats().compilations, 2);

  Sequential wider = makeMlp(10);
  SGD opt2(wider.parameters(), 0.1);
  runLoop(wider, opt2, LoopConfig());
  EXPECT_EQ(trace::stats().compilations, 4);

  // A structural change of the update (momentum instead of plain SGD).
  SGD opt3(model.parameters(), 0.1, 0.9);
  runLoop(model, opt3, LoopConfig());
  EXPECT_EQ(trace::stats().compilations, 5);
}

TEST(TraceCacheTest, RecordedConstantsArePartOfTheStructure) {
  resetTracer();
  Sequential model = makeMlp();
  Data data = makeData(8, 16, 3, 3);
  for (double divisor : {4.0, 4.0, 2.0}) {
    Tensor loss = cross_entropy(model(images(data, 4)), labels(data)) / divisor;
    loss.backward();
    mark_step();
  }
  // `/ 4` twice is one graph; `/ 2` is another.
  EXPECT_EQ(trace::stats().compilations, 2);
  EXPECT_EQ(trace::stats().cacheHits, 1);
}

TEST(TraceCacheTest, LargerBatchRecompilesOnce) {
  resetTracer();
  Sequential model = makeMlp();
  Data data = makeData(40, 16, 3, 4);
  auto microStep = [&](int64_t start, int64_t k) {
    Data batch = data.slice(start, k);
    Tensor loss = cross_entropy(model(images(batch, 4)), labels(batch));
    loss.backward();
    mark_step();
  };
  microStep(0, 8); // compiled for 8
  microStep(8, 5); // padded to 8
  EXPECT_EQ(trace::stats().compilations, 1);
  microStep(13, 12); // more than the capacity: compiled again for 12
  EXPECT_EQ(trace::stats().compilations, 2);
  microStep(25, 8); // the capacity is now 12
  microStep(33, 7);
  EXPECT_EQ(trace::stats().compilations, 2);
  EXPECT_EQ(trace::stats().cacheHits, 3);
}

} // namespace
} // namespace cleave::tracetest
