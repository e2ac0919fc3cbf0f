//===- EquivalenceTest.cpp - N micro-batches of b = one batch of N*b ------===//
//
// The semantics contract (docs/design/split.md), checked on compiled example
// models through the runtime: a session of an artifact compiled for
// micro-batch b that accumulates N micro-steps per optimizer step ends with
// the parameters of a session of an artifact compiled for micro-batch N*b
// stepping once per batch, from the same initial parameters on the same
// samples. Also a flushed partial window (k < N micro-batches), a ragged one
// (a short last micro-batch), N changed at run time on the same session
// without recompiling, train_batch splitting a large batch itself, and what
// the runtime pads a short micro-batch with. Fashion-MNIST test images are
// the data.
//
//===----------------------------------------------------------------------===//

#include "E2ETestUtil.h"

#include "cleave/runtime.hpp"
#include "data/Dataset.h"
#include "data/MicroBatcher.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

namespace cleave::e2e {
namespace {

constexpr int64_t kSmall = 8; // micro-batch of the accumulating artifact
constexpr int64_t kN = 4;     // its default N
constexpr int64_t kBig = kSmall * kN;
/// float32 parameters after several optimizer steps.
constexpr double kRelativeTolerance = 1e-5;

struct Case {
  const char *model;
  const char *optimizer;
  /// Set on both sessions (the artifacts' defaults otherwise).
  std::vector<std::pair<const char *, double>> hyperparameters;
};

/// How gtest (and so ctest's test list) shows a case.
void PrintTo(const Case &c, std::ostream *os) {
  *os << c.model << " with " << c.optimizer;
}

/// Adam with its usual learning rate, and eps = 1e-4 rather than 1e-8. At
/// step t Adam moves a parameter by about lr * g / (|g| + eps): near g = 0 a
/// change of the gradient by d changes the update by up to lr / eps * d.
/// Summing the gradient of 32 samples in 4 groups of 8 instead of one group
/// changes it by float32 rounding (d ~ 1e-7 of the summed terms), which
/// lr / eps = 1e5 (1e-3 / 1e-8) turns into relative parameter differences of
/// 1e-4 to 1e-3 on the elements whose gradient is near 0: a property of
/// Adam's update, not of the split. With eps = 1e-4 the amplification is 10,
/// and the comparison checks the window's gradient, the moments, the bias
/// correction per optimizer step and the step counter at 1e-5.
const std::vector<std::pair<const char *, double>> kAdam = {{"lr", 1e-3},
                                                            {"eps", 1e-4}};

std::string caseName(const ::testing::TestParamInfo<Case> &info) {
  return std::string(info.param.model) + "_" + info.param.optimizer;
}

/// Relative difference of two parameter tensors: the largest elementwise
/// |a - b| over the largest |b| of the tensor. Elementwise relative errors
/// would divide rounding noise by values near zero; this measures it against
/// the tensor's scale.
double relativeDifference(const std::vector<float> &a,
                          const std::vector<float> &b) {
  double maxDiff = 0, maxRef = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    maxDiff = std::max(maxDiff, std::fabs(double(a[i]) - double(b[i])));
    maxRef = std::max(maxRef, std::fabs(double(b[i])));
  }
  return maxRef > 0 ? maxDiff / maxRef : maxDiff;
}

class EquivalenceTest : public ::testing::TestWithParam<Case> {
protected:
  void SetUp() override {
    data::DatasetOptions options;
    options.limit = 512;
    rt::Status status = data::loadIdxDataset(
        fashionMnistDir(), data::Split::Test, options, dataset_);
    ASSERT_TRUE(status.ok()) << status.message();
    ASSERT_TRUE(data::MicroBatcher::create(dataset_, kBig, batcher_).ok());

    const std::string base = std::string(GetParam().model);
    const std::string opt = GetParam().optimizer;
    small_.emplace(
        cleave::Artifact::load(artifactPath(base + "_b8_n4_" + opt)));
    big_.emplace(cleave::Artifact::load(artifactPath(base + "_b32_n1_" + opt)));
    ASSERT_EQ(small_->microBatch(), kSmall);
    ASSERT_EQ(small_->accumulate(), kN);
    ASSERT_EQ(big_->microBatch(), kBig);

    cleave::SessionOptions a, b;
    a.seed = 7;
    b.seed = 1234; // different initial values, overwritten below
    accumulating_.emplace(*small_, a);
    reference_.emplace(*big_, b);
    for (const cleave::GlobalInfo &g : small_->globals())
      if (g.kind == CLEAVE_GLOBAL_PARAM) {
        params_.push_back(g.tensor.name);
        reference_->writeGlobal(
            g.tensor.name, accumulating_->readGlobal<float>(g.tensor.name));
      }
    ASSERT_FALSE(params_.empty());
    for (const auto &[name, value] : GetParam().hyperparameters) {
      accumulating_->setHyperparameter(name, value);
      reference_->setHyperparameter(name, value);
    }
    // The reference now starts from the same parameters, and a different
    // seed would have given different ones: the copy is what makes them
    // equal.
    ASSERT_NE(reference_->readGlobal<float>(params_[0]),
              cleave::Session(*big_, b).readGlobal<float>(params_[0]));
  }

  /// Feeds samples [first, first + k) to `session` as one micro-step.
  void microStep(cleave::Session &session, int64_t first, int64_t k) {
    ASSERT_TRUE(batcher_->gatherRange(first, k).ok());
    cleave::Batch batch(k);
    batch.add(batcher_->inputs(), batcher_->inputBytes())
        .add(batcher_->labels(), batcher_->targetBytes());
    session.microStep(batch);
  }

  /// Trains the accumulating session on micro-batches of the given sizes
  /// starting at sample `first`, and the reference on all of them at once.
  void window(int64_t first, const std::vector<int64_t> &sizes, bool flush) {
    int64_t total = 0;
    for (int64_t k : sizes) {
      microStep(*accumulating_, first + total, k);
      total += k;
    }
    if (flush)
      accumulating_->flush();
    ASSERT_LE(total, kBig);
    microStep(*reference_, first, total);
  }

  void expectSameParameters(const std::string &when) {
    EXPECT_EQ(accumulating_->step(), reference_->step()) << when;
    EXPECT_EQ(accumulating_->microSteps(), 0) << when;
    for (const std::string &name : params_) {
      std::vector<float> a = accumulating_->readGlobal<float>(name);
      std::vector<float> b = reference_->readGlobal<float>(name);
      ASSERT_EQ(a.size(), b.size());
      double diff = relativeDifference(a, b);
      EXPECT_LE(diff, kRelativeTolerance) << name << " " << when;
      worst_ = std::max(worst_, diff);
    }
  }

  void TearDown() override {
    RecordProperty("max_relative_difference", std::to_string(worst_));
    std::printf("largest relative difference: %.3g\n", worst_);
  }

  data::Dataset dataset_;
  std::unique_ptr<data::MicroBatcher> batcher_;
  std::optional<cleave::Artifact> small_, big_;
  std::optional<cleave::Session> accumulating_, reference_;
  std::vector<std::string> params_;
  double worst_ = 0;
};

TEST_P(EquivalenceTest, FullWindowsEqualOneBigBatch) {
  for (int64_t w = 0; w < 4; ++w) {
    window(w * kBig, {kSmall, kSmall, kSmall, kSmall}, /*flush=*/false);
    expectSameParameters("after window " + std::to_string(w + 1));
  }
  EXPECT_EQ(accumulating_->step(), 4);
  // The parameters moved: the comparison is not of two untouched copies.
  cleave::Session untouched(*small_, [] {
    cleave::SessionOptions o;
    o.seed = 7;
    return o;
  }());
  EXPECT_GT(relativeDifference(accumulating_->readGlobal<float>(params_[0]),
                               untouched.readGlobal<float>(params_[0])),
            100 * kRelativeTolerance);
}

TEST_P(EquivalenceTest, PartialAndRaggedWindowsEqualTheirSamples) {
  window(0, {kSmall, kSmall, kSmall, kSmall}, false);
  expectSameParameters("after a full window");
  // k = 2 < N micro-batches, then flush: one update of their 16 samples.
  window(kBig, {kSmall, kSmall}, /*flush=*/true);
  expectSameParameters("after a flushed window of 2 micro-batches");
  // A short last micro-batch (5 of 8, padded by the runtime) and a flush.
  window(kBig + 2 * kSmall, {kSmall, kSmall, 5}, /*flush=*/true);
  expectSameParameters("after a ragged window of 8 + 8 + 5 samples");
  // A single short micro-batch.
  window(3 * kBig, {3}, /*flush=*/true);
  expectSameParameters("after a window of 3 samples");
  EXPECT_EQ(accumulating_->step(), 4);
}

TEST_P(EquivalenceTest, ChangingNAtRunTime) {
  window(0, {kSmall, kSmall, kSmall, kSmall}, false);
  expectSameParameters("with N = 4");
  // N = 2 on the same session: windows of 2 micro-batches apply by themselves.
  accumulating_->setAccumulation(2);
  window(kBig, {kSmall, kSmall}, false);
  expectSameParameters("with N = 2");
  window(kBig + 2 * kSmall, {kSmall, kSmall}, false);
  expectSameParameters("with N = 2, second window");
  // N = 3, and lowering N mid-window applies at once.
  accumulating_->setAccumulation(3);
  window(2 * kBig, {kSmall, kSmall, kSmall}, false);
  expectSameParameters("with N = 3");
  window(3 * kBig, {kSmall, kSmall}, false);
  EXPECT_EQ(accumulating_->microSteps(), 2);
  accumulating_->setAccumulation(2); // the window holds 2 >= N: applies now
  expectSameParameters("after lowering N to the window's length");
  EXPECT_EQ(accumulating_->step(), 5);
}

TEST_P(EquivalenceTest, TrainBatchSplitsLikeFeedingMicroBatches) {
  // The same start as the accumulating session, fed micro-batch by
  // micro-batch by hand: train_batch must match it bit for bit.
  cleave::SessionOptions o;
  o.seed = 7;
  cleave::Session byHand(*small_, o);
  for (const auto &[name, value] : GetParam().hyperparameters)
    byHand.setHyperparameter(name, value);

  auto trainBatch = [&](int64_t first, int64_t k) {
    ASSERT_TRUE(batcher_->gatherRange(first, k).ok());
    cleave::Batch batch(k);
    batch.add(batcher_->inputs(), batcher_->inputBytes())
        .add(batcher_->labels(), batcher_->targetBytes());
    accumulating_->trainBatch(batch, kSmall);
    microStep(*reference_, first, k);
    for (int64_t start = 0; start < k; start += kSmall)
      microStep(byHand, first + start, std::min(kSmall, k - start));
  };
  // One batch of a whole window (4 micro-batches of 8: applies), then one of
  // 20 samples (8 + 8 + 4: a partial window, flushed).
  trainBatch(0, kBig);
  expectSameParameters("after a batch of 32 in micro-batches of 8");
  trainBatch(kBig, 20);
  EXPECT_EQ(accumulating_->microSteps(), 3);
  accumulating_->flush();
  byHand.flush();
  expectSameParameters("after a flushed batch of 20");
  for (const std::string &name : params_)
    EXPECT_EQ(accumulating_->readGlobal<float>(name),
              byHand.readGlobal<float>(name))
        << name;
  EXPECT_EQ(byHand.step(), 2);
}

TEST_P(EquivalenceTest, ShortMicroBatchIsPaddedWithItsLastRowAtWeightZero) {
  // docs/design/runtime.md, "Inputs, padding and alignment": of a short
  // micro-batch the runtime reads exactly the k rows the caller passes,
  // stages them and fills rows k..B-1 with the last of them, at sample
  // weight 0. So whatever lies in the caller's memory past its k rows (NaN,
  // labels out of range) changes nothing, bit for bit, and eval_step
  // predicts for each padding row what it predicts for the last real one.
  constexpr int64_t k = 5;
  ASSERT_TRUE(batcher_->gatherRange(0, kSmall).ok());
  const size_t pixels = batcher_->inputBytes() / sizeof(float) / kSmall;
  const float *inputs = batcher_->inputs();
  std::vector<float> images(inputs, inputs + kSmall * pixels);
  std::vector<int64_t> labels(batcher_->labels(), batcher_->labels() + kSmall);
  std::vector<float> exactImages(images.begin(), images.begin() + k * pixels);
  std::vector<int64_t> exactLabels(labels.begin(), labels.begin() + k);
  std::fill(images.begin() + k * pixels, images.end(),
            std::numeric_limits<float>::quiet_NaN());
  std::fill(labels.begin() + k, labels.end(), int64_t(1) << 40);
  auto firstK = [&](const std::vector<float> &x,
                    const std::vector<int64_t> &y) {
    cleave::Batch batch(k);
    batch.add(x.data(), k * pixels * sizeof(float))
        .add(y.data(), k * sizeof(int64_t));
    return batch;
  };

  cleave::SessionOptions o;
  o.seed = 7;
  cleave::Session exact(*small_, o), dirty(*small_, o);
  for (const auto &[name, value] : GetParam().hyperparameters) {
    exact.setHyperparameter(name, value);
    dirty.setHyperparameter(name, value);
  }
  exact.microStep(firstK(exactImages, exactLabels));
  dirty.microStep(firstK(images, labels));
  ASSERT_TRUE(std::isfinite(dirty.lastLoss()));
  EXPECT_EQ(dirty.lastLoss(), exact.lastLoss());
  exact.flush();
  dirty.flush();
  ASSERT_EQ(dirty.step(), 1);
  for (const std::string &name : params_) {
    std::vector<float> a = dirty.readGlobal<float>(name);
    ASSERT_TRUE(std::all_of(a.begin(), a.end(), [](float v) {
      return std::isfinite(v);
    })) << name;
    EXPECT_EQ(a, exact.readGlobal<float>(name)) << name;
  }

  dirty.eval(firstK(images, labels));
  std::vector<float> prediction =
      dirty.output<float>("eval_step", "prediction");
  ASSERT_EQ(prediction.size() % kSmall, 0u);
  const size_t classes = prediction.size() / kSmall;
  for (int64_t row = k; row < kSmall; ++row)
    for (size_t c = 0; c < classes; ++c) {
      // Rows of one GEMM need not round alike, hence not bit for bit.
      float last = prediction[(k - 1) * classes + c];
      EXPECT_NEAR(prediction[row * classes + c], last,
                  1e-5 * std::max(1.0f, std::fabs(last)))
          << "row " << row << ", class " << c;
    }
}

INSTANTIATE_TEST_SUITE_P(Models, EquivalenceTest,
                         ::testing::Values(Case{"mlp", "sgd", {}},
                                           Case{"mlp", "momentum", {}},
                                           Case{"mlp", "adam", kAdam},
                                           Case{"lenet", "sgd", {}},
                                           Case{"lenet", "momentum", {}},
                                           Case{"lenet", "adam", kAdam}),
                         caseName);

} // namespace
} // namespace cleave::e2e
