//===- GradAccumulatorTest.cpp - Exact accumulation in a traced loop ------===//
//
// cleave::GradAccumulator must step with the gradient of the window's mean
// loss over all of its samples, whatever the sizes of its micro-batches: a
// window of ragged micro-batches, and a partial window flushed at the end,
// against a double-precision reference that takes one batch of the window's
// samples; with clipping and a learning-rate schedule, against the same
// reference clipping in double and following the runtime's schedule; with
// full windows, against the hand-written loop (loss / N). A whole run
// compiles two graphs.
//
//===----------------------------------------------------------------------===//

#include "TraceTestUtil.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <optional>

namespace cleave::tracetest {
namespace {

constexpr double kTolerance = 1e-5;
constexpr int64_t kSide = 4;

/// One SGD step of `lr` on `ref` from the mean loss over `window` (one
/// batch of all its samples), its gradient clipped to `clipNorm` (> 0) as
/// torch.nn.utils.clip_grad_norm_ does. Returns the scale clipping applied.
double referenceStep(ReferenceMlp &ref, const Data &window, double lr,
                     double clipNorm) {
  std::vector<std::vector<double>> grads;
  ref.meanLoss(window, &grads);
  double scale = 1.0;
  if (clipNorm > 0) {
    double squares = 0;
    for (const std::vector<double> &g : grads)
      for (double v : g)
        squares += v * v;
    scale = std::min(1.0, clipNorm / (std::sqrt(squares) + 1e-6));
  }
  for (size_t i = 0; i < grads.size(); ++i)
    for (size_t j = 0; j < grads[i].size(); ++j)
      ref.params[i][j] -= lr * scale * grads[i][j];
  return scale;
}

/// Rows [start, start + count) of `data`, as one Data.
Data window(const Data &data, int64_t start, const std::vector<int64_t> &sizes) {
  int64_t count = 0;
  for (int64_t k : sizes)
    count += k;
  return data.slice(start, count);
}

struct Windows {
  /// Micro-batch sizes of each window; a window shorter than N is flushed.
  std::vector<std::vector<int64_t>> windows;
  int64_t n = 3;
  double clipNorm = 0;
  std::optional<cleave_lr_schedule> schedule;
};

/// Trains makeMlp with SGD (lr 0.1) through a GradAccumulator and the
/// reference alongside; checks the parameters after every window.
void checkAgainstReference(const Windows &run, double *smallestScale) {
  resetTracer();
  manual_seed(5);
  Sequential model = makeMlp();
  std::vector<Tensor> params = model.parameters();
  ReferenceMlp ref = ReferenceMlp::from(params);
  SGD opt(params, 0.1);
  GradAccumulatorOptions options;
  options.clipNorm = run.clipNorm;
  options.schedule = run.schedule;
  GradAccumulator acc(opt, run.n, options);

  Data data = makeData(200, kSide * kSide, 3, 17);
  int64_t next = 0;
  *smallestScale = 1.0;
  for (size_t w = 0; w < run.windows.size(); ++w) {
    const std::vector<int64_t> &sizes = run.windows[w];
    Data all = window(data, next, sizes);
    for (size_t i = 0; i < sizes.size(); ++i) {
      Data batch = data.slice(next, sizes[i]);
      next += sizes[i];
      Tensor loss = cross_entropy(model(images(batch, kSide)), labels(batch));
      loss.backward();
      bool updated = acc.step();
      EXPECT_EQ(updated, int64_t(i + 1) == run.n) << "window " << w;
    }
    if (int64_t(sizes.size()) < run.n) {
      EXPECT_EQ(acc.microSteps(), int64_t(sizes.size()));
      EXPECT_TRUE(acc.flush());
    }
    EXPECT_EQ(acc.microSteps(), 0);
    EXPECT_FALSE(acc.flush());

    double lr = run.schedule ? lrScheduleValue(*run.schedule, int64_t(w)) : 0.1;
    EXPECT_DOUBLE_EQ(opt.lr(), lr) << "window " << w;
    *smallestScale =
        std::min(*smallestScale, referenceStep(ref, all, lr, run.clipNorm));
    for (size_t i = 0; i < params.size(); ++i)
      EXPECT_LT(maxRelativeError(params[i].toFloatVector(), ref.params[i]),
                kTolerance)
          << "window " << w << ", parameter " << i;
  }
  EXPECT_EQ(acc.optimizerSteps(), int64_t(run.windows.size()));
  // The micro-step and the update, whatever the batch sizes, the sample
  // counts, the clip norm and the learning rate.
  EXPECT_EQ(trace::stats().compilations, 2);
}

TEST(GradAccumulatorTest, RaggedWindowsStepWithTheWindowMean) {
  Windows run;
  // Full; a short micro-batch inside; a partial window of a full and a short
  // micro-batch (the end of an epoch).
  run.windows = {{8, 8, 8}, {8, 5, 8}, {8, 3}};
  double scale;
  checkAgainstReference(run, &scale);
}

TEST(GradAccumulatorTest, ClipsTheWindowGradientAndFollowsTheSchedule) {
  Windows run;
  run.windows = {{8, 8, 8}, {6, 8, 8}, {8, 8, 2}, {8, 8, 8}, {4}};
  // Small enough that every window is clipped.
  run.clipNorm = 0.05;
  cleave_lr_schedule schedule = makeLrSchedule(CLEAVE_LR_COSINE);
  schedule.lr = 0.2;
  schedule.min_lr = 0.01;
  schedule.warmup_steps = 2;
  schedule.total_steps = 5;
  run.schedule = schedule;
  double scale;
  checkAgainstReference(run, &scale);
  // Otherwise this test would not show that clipping happens.
  EXPECT_LT(scale, 0.5);
}

/// With full micro-batches `loss / N` is exact too: the accumulator and the
/// hand-written loop must agree, here with Adam.
TEST(GradAccumulatorTest, FullWindowsMatchTheHandWrittenLoop) {
  constexpr int64_t kN = 4, kB = 8, kWindows = 3;
  Data data = makeData(kN * kB * kWindows, kSide * kSide, 3, 23);
  auto train = [&](bool accumulator) {
    resetTracer();
    manual_seed(9);
    Sequential model = makeMlp();
    Adam opt(model.parameters(), 1e-2, 0.9, 0.999, 1e-4);
    std::optional<GradAccumulator> acc;
    if (accumulator)
      acc.emplace(opt, kN);
    for (int64_t i = 0; i < kN * kWindows; ++i) {
      Data batch = data.slice(i * kB, kB);
      Tensor loss = cross_entropy(model(images(batch, kSide)), labels(batch));
      if (accumulator) {
        loss.backward();
        acc->step();
        continue;
      }
      (loss / double(kN)).backward();
      mark_step();
      if ((i + 1) % kN == 0) {
        opt.step();
        opt.zero_grad();
        mark_step();
      }
    }
    EXPECT_EQ(trace::stats().compilations, 2);
    return snapshot(model.parameters());
  };
  std::vector<std::vector<float>> accumulated = train(true);
  std::vector<std::vector<float>> handWritten = train(false);
  ASSERT_EQ(accumulated.size(), handWritten.size());
  for (size_t i = 0; i < accumulated.size(); ++i)
    EXPECT_LT(maxRelativeError(accumulated[i], handWritten[i]), kTolerance)
        << "parameter " << i;
}

/// A new N takes effect from the next window, and only between windows.
TEST(GradAccumulatorTest, ChangingNBetweenWindows) {
  resetTracer();
  Sequential model = makeMlp();
  SGD opt(model.parameters(), 0.1);
  GradAccumulator acc(opt, 2);
  Data data = makeData(40, kSide * kSide, 3, 3);
  auto microStep = [&](int64_t i) {
    Data batch = data.slice(i * 4, 4);
    cross_entropy(model(images(batch, kSide)), labels(batch)).backward();
    return acc.step();
  };
  EXPECT_FALSE(microStep(0));
  EXPECT_THROW(acc.set_accumulate(3), Error);
  EXPECT_TRUE(microStep(1));
  acc.set_accumulate(3);
  EXPECT_FALSE(microStep(2));
  EXPECT_FALSE(microStep(3));
  EXPECT_TRUE(microStep(4));
  EXPECT_EQ(acc.optimizerSteps(), 2);
  EXPECT_EQ(trace::stats().compilations, 2);
}

template <typename F> std::string errorOf(F &&f) {
  try {
    f();
  } catch (const Error &e) {
    return e.what();
  }
  return "(no error)";
}

TEST(GradAccumulatorTest, Errors) {
  resetTracer();
  Sequential model = makeMlp();
  SGD opt(model.parameters(), 0.1);
  EXPECT_NE(errorOf([&] { GradAccumulator bad(opt, 0); })
                .find("n (micro-steps per window) must be >= 1, got 0"),
            std::string::npos);
  GradAccumulatorOptions negative;
  negative.clipNorm = -1;
  EXPECT_NE(errorOf([&] { GradAccumulator bad(opt, 2, negative); })
                .find("clipNorm must be a finite number >= 0"),
            std::string::npos);
  GradAccumulatorOptions badSchedule;
  badSchedule.schedule = makeLrSchedule(CLEAVE_LR_COSINE);
  badSchedule.schedule->warmup_steps = 10;
  badSchedule.schedule->total_steps = 5;
  EXPECT_THROW(GradAccumulator bad(opt, 2, badSchedule), Error);

  GradAccumulator acc(opt, 2);
  EXPECT_NE(errorOf([&] { GradAccumulator second(opt, 2); })
                .find("another accumulator exists"),
            std::string::npos);
  EXPECT_NE(errorOf([&] { acc.step(); })
                .find("no loss.backward() since the last step()"),
            std::string::npos);

  // A loss that does not depend on a batch cannot be weighted by one.
  std::vector<Tensor> params = model.parameters();
  EXPECT_NE(errorOf([&] { params[0].sum().backward(); })
                .find("does not depend on a batch"),
            std::string::npos);

  Data data = makeData(8, kSide * kSide, 3, 1);
  cross_entropy(model(images(data, kSide)), labels(data)).backward();
  EXPECT_NE(errorOf([&] { acc.flush(); })
                .find("a loss.backward() is pending; call step() first"),
            std::string::npos);
  acc.step();
  EXPECT_NE(errorOf([&] { clip_grad_norm_(params, 0); })
                .find("max_norm must be a finite positive number"),
            std::string::npos);
}

/// Without an accumulator backward() is unweighted, as before: an
/// accumulator that has gone leaves no trace in later loops.
TEST(GradAccumulatorTest, BackwardIsUnweightedWithoutAnAccumulator) {
  resetTracer();
  Sequential model = makeMlp();
  SGD opt(model.parameters(), 0.1);
  { GradAccumulator acc(opt, 2); }
  Data data = makeData(5, kSide * kSide, 3, 4);
  ReferenceMlp ref = ReferenceMlp::from(model.parameters());
  std::vector<std::vector<double>> grads;
  ref.meanLoss(data, &grads);
  cross_entropy(model(images(data, kSide)), labels(data)).backward();
  mark_step();
  std::vector<Tensor> params = model.parameters();
  for (size_t i = 0; i < params.size(); ++i)
    EXPECT_LT(maxRelativeError(params[i].grad().toFloatVector(), grads[i]),
              kTolerance);
}

} // namespace
} // namespace cleave::tracetest
