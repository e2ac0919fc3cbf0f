//===- LayoutCacheTest.cpp - Cached weights are never stale ---------------===//
//
// A CPU session lets its convolutions keep blocked copies of the weights
// from one call to the next, and hold the window's weight gradients back in
// the blocked layout until the apply step (docs/design/cpu-lowering.md, "The
// weight cache"). Every way the parameters or accumulators change under the
// cache must reach it: an apply step (full or flushed partial window), a
// write through the API, a checkpoint loaded mid-window. Most tests take a
// session through one of them and then compare it, bit for bit, with a
// fresh session given the same state through a checkpoint (whose cache is
// empty, so nothing of it can be stale). A mistake both sessions would make
// alike (an apply that misses the gradients held back) is caught by SGD at
// lr = 1 instead, whose update is minus the window's gradient: it must be
// the gradient a read of the accumulator returns. LeNet's second
// convolution (16x6x5x5) runs on oneDNN's blocked layouts, so its weights
// and their gradients are cached. With --precision=bf16 the matmuls' (and
// convolutions') weights are cached as bf16 copies, made once per parameter
// generation: the weight tests run on the MLP and LeNet in bf16 too, where
// the CPU has AVX512-BF16.
//
//===----------------------------------------------------------------------===//

#include "E2ETestUtil.h"

#include "cleave/runtime.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <random>

namespace cleave::e2e {
namespace {

constexpr int64_t kMicroBatch = 8;

/// Random images and labels, a micro-batch at a time.
class Samples {
public:
  explicit Samples(uint32_t seed) : rng_(seed) {}
  /// The next micro-batch; the Batch points into this object.
  const cleave::Batch &next() {
    randomImagesAndLabels(rng_, kMicroBatch, images_, labels_);
    batch_ = cleave::Batch(kMicroBatch);
    batch_.add(images_).add(labels_);
    return batch_;
  }

private:
  std::mt19937 rng_;
  std::vector<float> images_;
  std::vector<int64_t> labels_;
  cleave::Batch batch_;
};

class LayoutCacheTest : public ::testing::Test {
protected:
  void SetUp() override { load("lenet_b8_n4_momentum"); }

  void load(const std::string &name) {
    artifact_.emplace(cleave::Artifact::load(artifactPath(name)));
    ASSERT_EQ(artifact_->microBatch(), kMicroBatch);
    ASSERT_EQ(artifact_->accumulate(), 4);
    session_.emplace(*artifact_, options());
  }

  static cleave::SessionOptions options() {
    cleave::SessionOptions o;
    o.seed = 3;
    return o;
  }

  /// A fresh session holding `session_`'s state now.
  cleave::Session freshCopy() {
    const std::string path = dir_ / "state.ckpt";
    session_->saveCheckpoint(path);
    cleave::SessionOptions o = options();
    o.seed = 99; // its own initial values, all replaced
    cleave::Session copy(*artifact_, o);
    copy.loadCheckpoint(path);
    return copy;
  }

  /// Runs `count` micro-steps on `session` and on the same samples on
  /// `other`.
  void trainBoth(cleave::Session &a, cleave::Session &b, int count,
                 uint32_t seed) {
    Samples sa(seed), sb(seed);
    for (int i = 0; i < count; ++i) {
      a.microStep(sa.next());
      b.microStep(sb.next());
    }
  }

  /// Every global of the two sessions, parameters, accumulators, optimizer
  /// state and counters, is the same bit for bit.
  void expectSameState(const cleave::Session &a, const cleave::Session &b) {
    EXPECT_EQ(a.step(), b.step());
    EXPECT_EQ(a.microSteps(), b.microSteps());
    for (const cleave::GlobalInfo &g : artifact_->globals()) {
      if (g.tensor.dtype != CLEAVE_DTYPE_F32)
        continue;
      EXPECT_EQ(a.readGlobal<float>(g.tensor.name),
                b.readGlobal<float>(g.tensor.name))
          << g.tensor.name;
    }
  }

  TempDir dir_;
  std::optional<cleave::Artifact> artifact_;
  std::optional<cleave::Session> session_;
};

/// An artifact whose weights are cached, and one of those weights.
struct CacheCase {
  const char *name;
  const char *artifact;
  const char *weight;
  bool bf16;
};

void PrintTo(const CacheCase &c, std::ostream *os) { *os << c.name; }

class WeightCopiesTest : public LayoutCacheTest,
                         public ::testing::WithParamInterface<CacheCase> {
protected:
  void SetUp() override {
    if (GetParam().bf16)
      CLEAVE_E2E_SKIP_WITHOUT_BF16();
    load(GetParam().artifact);
  }
};

INSTANTIATE_TEST_SUITE_P(
    Artifacts, WeightCopiesTest,
    ::testing::Values(
        CacheCase{"lenet", "lenet_b8_n4_momentum", "conv2.weight", false},
        CacheCase{"mlp_bf16", "mlp_b8_n4_momentum_bf16", "fc1.weight", true},
        CacheCase{"lenet_bf16", "lenet_b8_n4_momentum_bf16", "conv2.weight",
                  true}),
    [](const ::testing::TestParamInfo<CacheCase> &info) {
      return std::string(info.param.name);
    });

TEST_P(WeightCopiesTest, AWeightWrittenMidWindowIsWhatTheRestOfItUses) {
  Samples samples(1);
  for (int i = 0; i < 6; ++i) // an apply, then half a window
    session_->microStep(samples.next());
  std::vector<float> w = session_->readGlobal<float>(GetParam().weight);
  for (float &x : w)
    x = 0.5f - x;
  session_->writeGlobal(GetParam().weight, w);
  cleave::Session fresh = freshCopy();
  trainBoth(*session_, fresh, 7, 2); // across the next apply
  expectSameState(*session_, fresh);
}

TEST_P(WeightCopiesTest, ACheckpointLoadedMidWindowReplacesCopiesAndSums) {
  Samples samples(1);
  for (int i = 0; i < 6; ++i)
    session_->microStep(samples.next());
  const std::string path = dir_ / "mid.ckpt";
  session_->saveCheckpoint(path);
  // Later parameters in the copies, and gradients held back mid-window...
  for (int i = 0; i < 5; ++i)
    session_->microStep(samples.next());
  ASSERT_EQ(session_->microSteps(), 3);
  // ...that the checkpoint's state replaces.
  session_->loadCheckpoint(path);
  cleave::SessionOptions o = options();
  o.seed = 99;
  cleave::Session fresh(*artifact_, o);
  fresh.loadCheckpoint(path);
  trainBoth(*session_, fresh, 6, 3);
  expectSameState(*session_, fresh);
}

TEST_P(WeightCopiesTest, EvaluationAfterAnApplySeesTheNewWeights) {
  Samples samples(1);
  const cleave::Batch &batch = samples.next();
  // Copies of the initial weights, for the evaluation's kernels too.
  session_->eval(batch);
  const std::vector<float> before =
      session_->output<float>("eval_step", "prediction");
  Samples training(4);
  for (int i = 0; i < 4; ++i) // one window: an apply
    session_->microStep(training.next());
  session_->eval(batch);
  const std::vector<float> after =
      session_->output<float>("eval_step", "prediction");
  EXPECT_NE(after, before);
  cleave::Session fresh = freshCopy();
  fresh.eval(batch);
  EXPECT_EQ(fresh.output<float>("eval_step", "prediction"), after);
}

TEST_P(WeightCopiesTest, AFlushedPartialWindowUpdatesTheCopies) {
  Samples samples(1);
  for (int i = 0; i < 2; ++i)
    session_->microStep(samples.next());
  session_->flush();
  ASSERT_EQ(session_->step(), 1);
  cleave::Session fresh = freshCopy();
  trainBoth(*session_, fresh, 5, 5);
  expectSameState(*session_, fresh);
}

/// With SGD and lr = 1, an apply moves a parameter by minus its
/// accumulated gradient over the window's samples.
std::vector<double> appliedGradient(const std::vector<float> &before,
                                    const std::vector<float> &after,
                                    int64_t samples) {
  std::vector<double> g(before.size());
  for (size_t i = 0; i < g.size(); ++i)
    g[i] = (double(before[i]) - after[i]) * double(samples);
  return g;
}

/// Whether `got` equals `want` to 1e-4 of `want`'s largest element, which
/// must not be 0.
::testing::AssertionResult sameGradient(const std::vector<double> &got,
                                        const std::vector<float> &want) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << "sizes differ";
  double largest = 0, worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    largest = std::max(largest, std::fabs(double(want[i])));
    worst = std::max(worst, std::fabs(got[i] - want[i]));
  }
  if (largest == 0)
    return ::testing::AssertionFailure() << "the expected gradient is 0";
  if (worst > 1e-4 * largest)
    return ::testing::AssertionFailure()
           << "differs by " << worst << " (largest element " << largest << ")";
  return ::testing::AssertionSuccess();
}

TEST_F(LayoutCacheTest, AnApplyUsesEveryGradientOfTheWindow) {
  cleave::Artifact sgd =
      cleave::Artifact::load(artifactPath("lenet_b8_n4_sgd"));
  cleave::Session applying(sgd, options()), holding(sgd, options());
  applying.setHyperparameter("lr", 1.0);
  // The same window, whose accumulated gradient is read instead of applied.
  holding.setAccumulation(5);
  const std::vector<float> before = applying.readGlobal<float>("conv2.weight");
  trainBoth(applying, holding, 4, 7);
  ASSERT_EQ(applying.step(), 1);
  ASSERT_EQ(holding.step(), 0);
  EXPECT_TRUE(sameGradient(
      appliedGradient(before, applying.readGlobal<float>("conv2.weight"),
                      4 * kMicroBatch),
      holding.readGlobal<float>("conv2.weight.grad")));
}

TEST_F(LayoutCacheTest, AnAccumulatorReadMidWindowHoldsEveryGradient) {
  // The gradient a read returns is the one the apply then uses.
  cleave::Artifact sgd =
      cleave::Artifact::load(artifactPath("lenet_b8_n4_sgd"));
  cleave::Session session(sgd, options());
  session.setHyperparameter("lr", 1.0);
  Samples samples(6);
  session.microStep(samples.next());
  session.microStep(samples.next());
  const std::vector<float> grad =
      session.readGlobal<float>("conv2.weight.grad");
  const std::vector<float> before = session.readGlobal<float>("conv2.weight");
  session.flush();
  EXPECT_TRUE(sameGradient(
      appliedGradient(before, session.readGlobal<float>("conv2.weight"),
                      2 * kMicroBatch),
      grad));
}

} // namespace
} // namespace cleave::e2e
