//===- NonFiniteTest.cpp - A window that is not finite is never applied ---===//
//
// The apply step checks the window's sums (gradients, loss, sample count)
// and skips the update of a window where one is NaN or infinite: the
// parameters and optimizer state keep their values, train.step stays, the
// accumulators are zeroed and train.skipped_steps counts it
// (docs/design/numerics.md). A session stops on it (CLEAVE_NON_FINITE,
// naming the window, the optimizer step and the tensor) or goes on, and a
// run resumed from a checkpoint after a skipped window continues exactly.
// A NaN and an infinity in one pixel of window 2 of examples/mlp.mlir with
// Adam (whose moments are state) are the cases.
//
//===----------------------------------------------------------------------===//

#include "E2ETestUtil.h"

#include "cleave/runtime.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <random>

namespace cleave::e2e {
namespace {

constexpr int64_t kMicroBatch = 8;
constexpr int64_t kPixels = 28 * 28;

/// The micro-batches of a run: random images and labels, one pixel of
/// micro-step `poisoned` (counting from 0) replaced by `value`.
class Data {
public:
  Data(int64_t poisoned, float value) : poisoned_(poisoned), value_(value) {}
  const cleave::Batch &batch(int64_t microStep) {
    std::mt19937 rng(uint32_t(1000 + microStep));
    randomImagesAndLabels(rng, kMicroBatch, images_, labels_);
    if (microStep == poisoned_)
      images_[kPixels + 17] = value_;
    batch_ = cleave::Batch(kMicroBatch);
    batch_.add(images_).add(labels_);
    return batch_;
  }

private:
  int64_t poisoned_;
  float value_;
  std::vector<float> images_;
  std::vector<int64_t> labels_;
  cleave::Batch batch_;
};

using State = std::map<std::string, std::vector<float>>;

/// Every global of `kind`.
State globalsOf(const cleave::Session &session, cleave_global_kind kind) {
  State state;
  for (const cleave::GlobalInfo &g : session.artifact().globals())
    if (g.kind == kind)
      state[g.tensor.name] = session.readGlobal<float>(g.tensor.name);
  return state;
}

State paramsAndState(const cleave::Session &session) {
  State all = globalsOf(session, CLEAVE_GLOBAL_PARAM);
  for (auto &[name, values] : globalsOf(session, CLEAVE_GLOBAL_STATE))
    all[name] = values;
  return all;
}

int64_t counter(const cleave::Session &session, const char *name) {
  return session.readGlobal<int64_t>(name).at(0);
}

cleave::Session makeSession(int32_t onNonfinite) {
  cleave::SessionOptions options;
  options.onNonfinite = onNonfinite;
  return cleave::Session(
      cleave::Artifact::load(artifactPath("mlp_b8_n4_adam")), options);
}

/// Runs micro-steps [first, last) of `data`, expecting each to succeed.
void run(cleave::Session &session, Data &data, int64_t first, int64_t last) {
  for (int64_t m = first; m < last; ++m)
    session.microStep(data.batch(m));
}

/// The session has skipped window 2 (micro-steps 4 to 7): parameters and
/// optimizer state are those after window 1, the accumulators are zero.
void expectSkippedWindow2(const cleave::Session &session,
                          const State &afterWindow1) {
  EXPECT_EQ(session.step(), 1);
  EXPECT_EQ(session.microSteps(), 0);
  EXPECT_EQ(counter(session, "train.skipped_steps"), 1);
  EXPECT_NE(counter(session, "train.nonfinite"), 0);
  EXPECT_EQ(paramsAndState(session), afterWindow1);
  for (const auto &[name, values] :
       globalsOf(session, CLEAVE_GLOBAL_ACCUMULATOR))
    for (float v : values)
      ASSERT_EQ(v, 0.f) << name;
}

TEST(NonFiniteTest, StopSkipsTheWindowAndNamesIt) {
  Data data(/*poisoned=*/7, std::numeric_limits<float>::quiet_NaN());
  cleave::Session session = makeSession(CLEAVE_NONFINITE_STOP);
  run(session, data, 0, 4);
  ASSERT_EQ(session.step(), 1);
  const State afterWindow1 = paramsAndState(session);
  run(session, data, 4, 7);
  try {
    session.microStep(data.batch(7));
    FAIL() << "the window that is not finite was applied";
  } catch (const cleave::Error &e) {
    EXPECT_EQ(e.status(), CLEAVE_NON_FINITE);
    EXPECT_NE(std::string(e.what()).find(
                  ": window 2 (optimizer step 2): the gradient of "
                  "'fc1.weight' is not finite (NaN or infinite); the step "
                  "was skipped, the parameters and optimizer state are "
                  "unchanged"),
              std::string::npos)
        << e.what();
  }
  expectSkippedWindow2(session, afterWindow1);
  // The session goes on: the next window is applied as optimizer step 2.
  run(session, data, 8, 12);
  EXPECT_EQ(session.step(), 2);
  EXPECT_EQ(counter(session, "train.nonfinite"), 0);
  for (const auto &[name, values] : paramsAndState(session)) {
    EXPECT_NE(values, afterWindow1.at(name)) << name;
    for (float v : values)
      ASSERT_TRUE(std::isfinite(v)) << name;
  }
}

TEST(NonFiniteTest, SkipGoesOnAsStopWouldAfterIt) {
  const float inf = std::numeric_limits<float>::infinity();
  Data poisoned(/*poisoned=*/5, inf), again(/*poisoned=*/5, inf);
  cleave::Session skip = makeSession(CLEAVE_NONFINITE_SKIP);
  cleave::Session stop = makeSession(CLEAVE_NONFINITE_STOP);
  run(skip, poisoned, 0, 4);
  run(stop, again, 0, 4);
  const State afterWindow1 = paramsAndState(skip);
  run(skip, poisoned, 4, 8);
  expectSkippedWindow2(skip, afterWindow1);
  run(stop, again, 4, 7);
  EXPECT_THROW(stop.microStep(again.batch(7)), cleave::Error);
  run(skip, poisoned, 8, 12);
  run(stop, again, 8, 12);
  EXPECT_EQ(skip.step(), 2);
  EXPECT_EQ(paramsAndState(skip), paramsAndState(stop));
}

TEST(NonFiniteTest, ResumesAfterASkippedWindow) {
  Data data(/*poisoned=*/6, std::numeric_limits<float>::quiet_NaN());
  cleave::Session session = makeSession(CLEAVE_NONFINITE_SKIP);
  run(session, data, 0, 8);
  ASSERT_EQ(counter(session, "train.skipped_steps"), 1);
  TempDir dir;
  session.saveCheckpoint(dir / "after-skip.ckpt");
  cleave::Session resumed = makeSession(CLEAVE_NONFINITE_SKIP);
  resumed.loadCheckpoint(dir / "after-skip.ckpt");
  EXPECT_EQ(resumed.step(), 1);
  EXPECT_EQ(counter(resumed, "train.skipped_steps"), 1);
  run(session, data, 8, 14);
  run(resumed, data, 8, 14);
  EXPECT_EQ(resumed.step(), 2);
  EXPECT_EQ(paramsAndState(resumed), paramsAndState(session));
  EXPECT_EQ(globalsOf(resumed, CLEAVE_GLOBAL_ACCUMULATOR),
            globalsOf(session, CLEAVE_GLOBAL_ACCUMULATOR));
}

} // namespace
} // namespace cleave::e2e
