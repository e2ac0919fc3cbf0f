//===- LrScheduleTest.cpp - Learning-rate schedules -----------------------===//
//
// The schedule formulas against closed-form references written out here at
// every step (edge cases included), the errors of invalid schedules, and the
// session's use of a schedule: the lr the apply graph used (read back from
// SGD's parameter update against a double-precision reference), one value
// per optimizer step whatever N, and checkpoints that resume it exactly.
// lr_schedule_oracle.py checks the same formulas against PyTorch itself.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>

using namespace cleave;
using namespace cleave::test;

namespace {

const double kPi = std::acos(-1.0);

cleave_lr_schedule schedule(cleave_lr_schedule_kind kind, double lr,
                            int64_t warmup, int64_t total, double minLr = 0.0) {
  cleave_lr_schedule s = makeLrSchedule(kind);
  s.lr = lr;
  s.warmup_steps = warmup;
  s.total_steps = total;
  s.min_lr = minLr;
  return s;
}

/// Checks `s` at steps 0 to `last` against `reference`, relative 1e-12.
void expectFollows(const cleave_lr_schedule &s, int64_t last,
                   const std::function<double(int64_t)> &reference) {
  for (int64_t step = 0; step <= last; ++step) {
    double expected = reference(step);
    EXPECT_NEAR(lrScheduleValue(s, step), expected,
                1e-12 * std::max(1.0, std::abs(expected)))
        << cleave_lr_schedule_kind_name(s.kind) << " at step " << step;
  }
}

//===----------------------------------------------------------------------===//
// Formulas
//===----------------------------------------------------------------------===//

TEST(LrScheduleFormulaTest, ConstantWithAndWithoutLinearWarmup) {
  expectFollows(schedule(CLEAVE_LR_CONSTANT, 0.3, 0, 0), 20,
                [](int64_t) { return 0.3; });
  // Warmup from 0: 0, 0.06, 0.12, ... reaching 0.3 at step 5 and staying.
  expectFollows(schedule(CLEAVE_LR_CONSTANT, 0.3, 5, 0), 20,
                [](int64_t s) { return s < 5 ? 0.3 * double(s) / 5.0 : 0.3; });
  // PyTorch's LinearLR start_factor: the warmup starts at 0.3 / 4.
  cleave_lr_schedule from = schedule(CLEAVE_LR_CONSTANT, 0.3, 4, 0);
  from.warmup_start_factor = 0.25;
  expectFollows(from, 10, [](int64_t s) {
    return s < 4 ? 0.3 * (0.25 + 0.75 * double(s) / 4.0) : 0.3;
  });
}

TEST(LrScheduleFormulaTest, CosineWithWarmupAndFloor) {
  const double lr = 0.5, floor = 0.01;
  const int64_t warmup = 10, total = 110;
  expectFollows(schedule(CLEAVE_LR_COSINE, lr, warmup, total, floor), 200,
                [&](int64_t s) {
                  if (s < warmup)
                    return lr * double(s) / double(warmup);
                  if (s >= total)
                    return floor;
                  double t = double(s - warmup), d = double(total - warmup);
                  return floor +
                         (lr - floor) * 0.5 * (1 + std::cos(kPi * t / d));
                });
  cleave_lr_schedule s = schedule(CLEAVE_LR_COSINE, lr, warmup, total, floor);
  EXPECT_DOUBLE_EQ(lrScheduleValue(s, warmup), lr);             // the peak
  EXPECT_NEAR(lrScheduleValue(s, 60), (lr + floor) / 2, 1e-15); // half-way
  EXPECT_DOUBLE_EQ(lrScheduleValue(s, total), floor);
  EXPECT_DOUBLE_EQ(lrScheduleValue(s, 1000000000), floor); // stays there
}

TEST(LrScheduleFormulaTest, CosineWithoutWarmupAndWithNothingAfterIt) {
  // warmup 0: step 0 is the peak.
  expectFollows(schedule(CLEAVE_LR_COSINE, 1.0, 0, 8), 12, [](int64_t s) {
    return s >= 8 ? 0.0 : 0.5 * (1 + std::cos(kPi * double(s) / 8.0));
  });
  // total = warmup: the warmup, then the floor at once (no decay steps).
  expectFollows(schedule(CLEAVE_LR_COSINE, 1.0, 4, 4, 0.1), 8,
                [](int64_t s) { return s < 4 ? double(s) / 4.0 : 0.1; });
  // total = warmup = 0: the floor from the first step.
  expectFollows(schedule(CLEAVE_LR_COSINE, 1.0, 0, 0, 0.2), 3,
                [](int64_t) { return 0.2; });
}

TEST(LrScheduleFormulaTest, StepDecayAfterWarmupDownToTheFloor) {
  cleave_lr_schedule s = schedule(CLEAVE_LR_STEP, 0.8, 2, 0, 0.01);
  s.step_size = 3;
  s.gamma = 0.5;
  expectFollows(s, 40, [](int64_t step) {
    if (step < 2)
      return 0.8 * double(step) / 2.0;
    return std::max(0.01, 0.8 * std::pow(0.5, double((step - 2) / 3)));
  });
  EXPECT_DOUBLE_EQ(lrScheduleValue(s, 4), 0.8);   // 2 steps after warmup
  EXPECT_DOUBLE_EQ(lrScheduleValue(s, 5), 0.4);   // the first decay
  EXPECT_DOUBLE_EQ(lrScheduleValue(s, 40), 0.01); // the floor
}

TEST(LrScheduleFormulaTest, PolynomialAndLinearDecay) {
  cleave_lr_schedule s = schedule(CLEAVE_LR_POLYNOMIAL, 1.0, 3, 23, 0.05);
  s.power = 2.0;
  expectFollows(s, 40, [](int64_t step) {
    if (step < 3)
      return double(step) / 3.0;
    if (step >= 23)
      return 0.05;
    return 0.05 + 0.95 * std::pow(1.0 - double(step - 3) / 20.0, 2.0);
  });
  // power 1, no floor, no warmup: PyTorch's PolynomialLR is a linear decay.
  expectFollows(schedule(CLEAVE_LR_POLYNOMIAL, 0.4, 0, 10), 15, [](int64_t t) {
    return t >= 10 ? 0.0 : 0.4 * (1.0 - double(t) / 10.0);
  });
}

/// PyTorch's OneCycleLR.get_lr (anneal_strategy "cos", two phases),
/// transcribed step for step, with pct_start = warmup / total.
double torchOneCycle(double maxLr, double initialLr, double minLr,
                     int64_t total, double pctStart, int64_t step) {
  struct Phase {
    double endStep, startLr, endLr;
  };
  const Phase phases[] = {{pctStart * double(total) - 1, initialLr, maxLr},
                          {double(total) - 1, maxLr, minLr}};
  double startStep = 0;
  for (int i = 0; i < 2; ++i) {
    if (double(step) <= phases[i].endStep || i == 1) {
      double pct = (double(step) - startStep) / (phases[i].endStep - startStep);
      double cosOut = std::cos(kPi * pct) + 1;
      return phases[i].endLr +
             (phases[i].startLr - phases[i].endLr) / 2.0 * cosOut;
    }
    startStep = phases[i].endStep;
  }
  return 0;
}

TEST(LrScheduleFormulaTest, OneCycleIsPyTorchsOneCycleLR) {
  // PyTorch's defaults: div_factor 25, final_div_factor 1e4, pct_start 0.3.
  const double maxLr = 0.1, initial = maxLr / 25, floor = initial / 1e4;
  cleave_lr_schedule s = schedule(CLEAVE_LR_ONE_CYCLE, maxLr, 30, 100, floor);
  s.warmup_start_factor = 1.0 / 25;
  expectFollows(s, 99, [&](int64_t step) {
    return torchOneCycle(maxLr, initial, floor, 100, 0.3, step);
  });
  EXPECT_NEAR(lrScheduleValue(s, 0), initial, 1e-15);
  EXPECT_DOUBLE_EQ(lrScheduleValue(s, 29), maxLr);
  EXPECT_DOUBLE_EQ(lrScheduleValue(s, 99), floor);
  // PyTorch raises past total_steps; Cleave stays at the final lr.
  EXPECT_DOUBLE_EQ(lrScheduleValue(s, 100), floor);
  EXPECT_DOUBLE_EQ(lrScheduleValue(s, 5000), floor);
  // The shortest one: a rising phase of 2 steps, a falling one of 1.
  cleave_lr_schedule shortest = schedule(CLEAVE_LR_ONE_CYCLE, 1.0, 2, 3, 0.0);
  expectFollows(shortest, 5,
                [](int64_t step) { return step == 1 ? 1.0 : 0.0; });
}

TEST(LrScheduleFormulaTest, InvalidSchedulesAreRefusedWithTheField) {
  struct Case {
    std::function<void(cleave_lr_schedule &)> change;
    const char *message;
  };
  const Case cases[] = {
      {[](auto &s) { s.kind = cleave_lr_schedule_kind(9); }, "unknown kind 9"},
      {[](auto &s) { s.lr = NAN; }, "lr is nan"},
      {[](auto &s) { s.lr = -1; }, "lr is -1"},
      {[](auto &s) { s.min_lr = 2; },
       "min_lr is 2, expected 0 <= min_lr <= lr"},
      {[](auto &s) { s.warmup_steps = -1; }, "warmup_steps is -1"},
      {[](auto &s) { s.warmup_start_factor = 1.5; }, "warmup_start_factor"},
      {[](auto &s) { s.total_steps = 5; }, "total_steps is 5, expected a "
                                           "count >= warmup_steps"},
      {[](auto &s) {
         s.kind = CLEAVE_LR_STEP;
         s.step_size = 0;
       },
       "step_size is 0"},
      {[](auto &s) {
         s.kind = CLEAVE_LR_STEP;
         s.gamma = 0;
       },
       "gamma is 0"},
      {[](auto &s) {
         s.kind = CLEAVE_LR_POLYNOMIAL;
         s.power = -1;
       },
       "power is -1"},
      {[](auto &s) {
         s.kind = CLEAVE_LR_ONE_CYCLE;
         s.warmup_steps = 1;
       },
       "expected 2 <= warmup_steps < total_steps"},
      {[](auto &s) {
         s.kind = CLEAVE_LR_ONE_CYCLE;
         s.warmup_steps = 100;
       },
       "expected 2 <= warmup_steps < total_steps"},
  };
  for (const Case &c : cases) {
    cleave_lr_schedule s = schedule(CLEAVE_LR_COSINE, 1.0, 10, 100);
    c.change(s);
    double lr = 0;
    CallResult r = result(cleave_lr_schedule_value(&s, 0, &lr));
    EXPECT_EQ(r.status, CLEAVE_INVALID_ARGUMENT) << c.message;
    EXPECT_NE(r.message.find(c.message), std::string::npos) << r.message;
  }
  cleave_lr_schedule s = schedule(CLEAVE_LR_COSINE, 1.0, 10, 100);
  double lr = 0;
  EXPECT_EQ(cleave_lr_schedule_value(&s, -1, &lr), CLEAVE_INVALID_ARGUMENT);
  EXPECT_EQ(cleave_lr_schedule_value(nullptr, 0, &lr), CLEAVE_INVALID_ARGUMENT);
  EXPECT_STREQ(cleave_lr_schedule_kind_name(CLEAVE_LR_ONE_CYCLE), "one-cycle");
  EXPECT_STREQ(cleave_lr_schedule_kind_name(cleave_lr_schedule_kind(42)), "?");
}

//===----------------------------------------------------------------------===//
// Sessions
//===----------------------------------------------------------------------===//

SessionOptions options(uint64_t seed, int64_t accumulate) {
  SessionOptions o;
  o.seed = seed;
  o.accumulate = accumulate;
  return o;
}

/// Plain SGD (momentum 0), so that each update is exactly -lr * gradient.
Session plainSgd(const Artifact &artifact, int64_t accumulate) {
  Session s(artifact, options(11, accumulate));
  s.setHyperparameter("momentum", 0.0);
  return s;
}

TEST(LrScheduleSessionTest, EachApplyUsesTheScheduleAtItsOptimizerStep) {
  Artifact sgd = Artifact::load(CLEAVE_FAKE_SGD);
  Session s = plainSgd(sgd, 2);
  const cleave_lr_schedule cosine = schedule(CLEAVE_LR_COSINE, 0.8, 3, 9, 0.05);
  s.setLrSchedule(cosine);
  ReferenceSgd ref = ReferenceSgd::fromSession(s);
  Data data = makeData(40 * kMicroBatch, 12);
  // N changes at run time (2, then 3, then 1): the schedule counts optimizer
  // steps, never micro-steps, so it neither stretches nor shrinks.
  const int64_t ns[] = {2, 2, 2, 3, 3, 1, 1, 1, 2, 2, 1, 1};
  int64_t next = 0;
  for (int64_t step = 0; step < int64_t(std::size(ns)); ++step) {
    s.setAccumulation(ns[step]);
    const double expected = lrScheduleValue(cosine, step);
    // The lr the next apply will use, before it runs.
    EXPECT_NEAR(s.hyperparameter("lr"), expected, 1e-15) << "step " << step;
    Data window = data.slice(next * kMicroBatch, ns[step] * kMicroBatch);
    for (int64_t i = 0; i < ns[step]; ++i, ++next)
      s.microStep(data.slice(next * kMicroBatch, kMicroBatch).batch());
    ASSERT_EQ(s.step(), step + 1);
    // The f32 hyperparameter slot holds the lr rounded to float.
    ref.step(window, double(float(expected)), 0.0);
    EXPECT_LT(maxRelativeError(s.readGlobal<float>("fc.weight"), ref.weight),
              1e-5)
        << "step " << step;
    EXPECT_LT(maxRelativeError(s.readGlobal<float>("fc.bias"), ref.bias), 1e-5)
        << "step " << step;
  }
  // Past total_steps: the floor.
  EXPECT_DOUBLE_EQ(s.hyperparameter("lr"), 0.05);
}

TEST(LrScheduleSessionTest, AFlushedPartialWindowIsOneStepOfTheSchedule) {
  Artifact sgd = Artifact::load(CLEAVE_FAKE_SGD);
  Session s = plainSgd(sgd, 4);
  cleave_lr_schedule step = schedule(CLEAVE_LR_STEP, 0.4, 0, 0);
  step.step_size = 1;
  step.gamma = 0.5;
  s.setLrSchedule(step);
  Data data = makeData(3 * kMicroBatch, 4);
  s.microStep(data.slice(0, kMicroBatch).batch());
  EXPECT_DOUBLE_EQ(s.hyperparameter("lr"), 0.4); // micro-steps change nothing
  s.flush();
  EXPECT_DOUBLE_EQ(s.hyperparameter("lr"), 0.2);
  s.microStep(data.slice(kMicroBatch, kMicroBatch).batch());
  s.setAccumulation(1); // ends the window: another step
  EXPECT_EQ(s.step(), 2);
  EXPECT_DOUBLE_EQ(s.hyperparameter("lr"), 0.1);
}

TEST(LrScheduleSessionTest, LrFollowsTheScheduleUntilItIsRemoved) {
  Artifact sgd = Artifact::load(CLEAVE_FAKE_SGD);
  Session s(sgd);
  // A NaN peak takes the current lr: the artifact's default, 0.1.
  s.setLrSchedule(makeLrSchedule(CLEAVE_LR_COSINE));
  std::optional<cleave_lr_schedule> got = s.lrSchedule();
  ASSERT_TRUE(got);
  EXPECT_DOUBLE_EQ(got->lr, 0.1);
  EXPECT_EQ(got->kind, CLEAVE_LR_COSINE);
  // cosine with total 0 = warmup: the floor, 0, at once.
  EXPECT_EQ(s.hyperparameter("lr"), 0.0);

  CallResult refused =
      result(cleave_session_set_hyperparameter(s.get(), "lr", 0.5));
  EXPECT_EQ(refused.status, CLEAVE_FAILED_PRECONDITION);
  EXPECT_NE(refused.message.find("follows the session's cosine"),
            std::string::npos)
      << refused.message;
  s.setHyperparameter("momentum", 0.5); // other hyperparameters are free

  cleave_lr_schedule bad = schedule(CLEAVE_LR_STEP, 0.1, 0, 0);
  bad.gamma = -2;
  CallResult invalid = result(cleave_session_set_lr_schedule(s.get(), &bad));
  EXPECT_EQ(invalid.status, CLEAVE_INVALID_ARGUMENT);
  EXPECT_EQ(s.lrSchedule()->kind, CLEAVE_LR_COSINE) << "a refused schedule "
                                                       "replaced the old one";

  s.clearLrSchedule();
  EXPECT_FALSE(s.lrSchedule());
  EXPECT_EQ(s.hyperparameter("lr"), 0.0); // keeps its value
  s.setHyperparameter("lr", 0.5);
  EXPECT_DOUBLE_EQ(s.hyperparameter("lr"), 0.5);
}

uint32_t formatVersion(const std::string &path) {
  std::string bytes = readFile(path);
  uint32_t v = 0;
  std::memcpy(&v, bytes.data() + 8, sizeof(v));
  return v;
}

TEST(LrScheduleSessionTest, ACheckpointResumesTheScheduleExactly) {
  Artifact sgd = Artifact::load(CLEAVE_FAKE_SGD);
  cleave_lr_schedule cycle = schedule(CLEAVE_LR_ONE_CYCLE, 0.6, 3, 8, 1e-4);
  cycle.warmup_start_factor = 0.1;
  Data data = makeData(30 * kMicroBatch, 13);
  auto feed = [&](Session &s, int64_t first, int64_t last) {
    for (int64_t i = first; i < last; ++i)
      s.microStep(data.slice(i * kMicroBatch, kMicroBatch).batch());
  };
  const std::string dir = makeTempDir("lr-schedule");

  Session straight(sgd, options(5, 3));
  straight.setLrSchedule(cycle);
  feed(straight, 0, 30);

  // Stopped in the middle of a window (micro-step 14 of a window of 3),
  // resumed in a fresh session that knows nothing of the schedule.
  Session first(sgd, options(5, 3));
  first.setLrSchedule(cycle);
  feed(first, 0, 14);
  first.saveCheckpoint(dir + "/run.ckpt");
  EXPECT_EQ(formatVersion(dir + "/run.ckpt"), 3u);
  Session resumed(sgd, options(99, 1));
  resumed.loadCheckpoint(dir + "/run.ckpt");
  std::optional<cleave_lr_schedule> restored = resumed.lrSchedule();
  ASSERT_TRUE(restored);
  EXPECT_EQ(restored->kind, cycle.kind);
  EXPECT_EQ(restored->lr, cycle.lr);
  EXPECT_EQ(restored->min_lr, cycle.min_lr);
  EXPECT_EQ(restored->warmup_steps, cycle.warmup_steps);
  EXPECT_EQ(restored->warmup_start_factor, cycle.warmup_start_factor);
  EXPECT_EQ(restored->total_steps, cycle.total_steps);
  EXPECT_EQ(resumed.hyperparameter("lr"), first.hyperparameter("lr"));
  feed(resumed, 14, 30);

  EXPECT_EQ(resumed.step(), straight.step());
  EXPECT_EQ(snapshotGlobals(resumed), snapshotGlobals(straight));
  EXPECT_EQ(resumed.hyperparameter("lr"), straight.hyperparameter("lr"));
}

TEST(LrScheduleSessionTest, ACheckpointWithoutAScheduleClearsIt) {
  Artifact sgd = Artifact::load(CLEAVE_FAKE_SGD);
  const std::string dir = makeTempDir("lr-schedule-none");
  Session plain(sgd, options(5, 2));
  plain.setHyperparameter("lr", 0.25);
  plain.saveCheckpoint(dir + "/plain.ckpt");
  // The same format, without the lr_schedule key.
  EXPECT_EQ(formatVersion(dir + "/plain.ckpt"), 3u);

  Session scheduled(sgd, options(5, 2));
  scheduled.setLrSchedule(schedule(CLEAVE_LR_COSINE, 1.0, 2, 10));
  scheduled.loadCheckpoint(dir + "/plain.ckpt");
  EXPECT_FALSE(scheduled.lrSchedule());
  EXPECT_DOUBLE_EQ(scheduled.hyperparameter("lr"), 0.25);
}

} // namespace
