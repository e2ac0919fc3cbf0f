//===- AccuracyTest.cpp - The MLP learns Fashion-MNIST --------------------===//
//
// Trains examples/mlp.mlir, compiled for micro-batch 32 and N = 2, for 3
// epochs on the full Fashion-MNIST training set through the trainer library
// (what cleave-train runs), and checks the test accuracy.
//
// The spec: >= 82% with plain SGD at lr 0.01, as PyTorch's own loop reaches
// 83-84% with these settings. Like that loop (torchvision's ToTensor() then
// Normalize(mean, std)), cleave-train standardises the inputs with the
// training images' mean and standard deviation; without it both Cleave and
// PyTorch reach only 78.6-81.2% in 3 epochs (a window of 2 x 32 samples is
// one SGD step on a batch of 64).
//
// Run time: about 6 s per configuration at 1 thread on an idle machine
// (30-50k samples/s).
//
// Mixed precision (--precision=bf16: matmuls and convolutions multiply
// bf16-rounded inputs, everything else is f32): the MLP and LeNet trained
// for 3 epochs from the same seed on the same batches must reach the f32
// test accuracy within 0.5 points (issue 11's bar). About 10 s per LeNet
// epoch.
//
//===----------------------------------------------------------------------===//

#include "E2ETestUtil.h"

#include "Trainer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

namespace cleave::e2e {
namespace {

struct Config {
  const char *name;
  const char *artifact;
  double minAccuracy;
};

void PrintTo(const Config &c, std::ostream *os) { *os << c.artifact; }

class AccuracyTest : public ::testing::TestWithParam<Config> {};

TEST_P(AccuracyTest, ThreeEpochsOfTheMlp) {
  train::TrainOptions options;
  options.artifact = artifactPath(GetParam().artifact);
  options.dataDir = fashionMnistDir();
  options.epochs = 3;
  options.seed = 0;
  options.lr = 0.01;
  options.threads = 1;
  options.progress = train::ProgressMode::None;

  train::TrainSummary summary = train::train(options, stdout, stderr);
  ASSERT_EQ(summary.epochs.size(), 3u);
  double seconds = 0;
  for (const train::EpochResult &e : summary.epochs) {
    seconds += e.seconds;
    RecordProperty("epoch" + std::to_string(e.epoch) + "_accuracy",
                   std::to_string(e.testAccuracy));
    RecordProperty("epoch" + std::to_string(e.epoch) + "_samples_per_sec",
                   std::to_string(e.samplesPerSecond));
    RecordProperty("epoch" + std::to_string(e.epoch) + "_seconds",
                   std::to_string(e.seconds));
  }
  std::printf("%s: %.1f s for 3 epochs\n", GetParam().name, seconds);
  // 60000 samples in micro-batches of 32 with N = 2: 937 full windows and a
  // partial one per epoch.
  EXPECT_EQ(summary.optimizerSteps, 3 * 938);
  EXPECT_LT(summary.epochs.back().trainLoss, summary.epochs.front().trainLoss);
  EXPECT_GE(summary.epochs.back().testAccuracy, GetParam().minAccuracy);
}

train::TrainSummary threeEpochs(const std::string &artifact) {
  train::TrainOptions options;
  options.artifact = artifactPath(artifact);
  options.dataDir = fashionMnistDir();
  options.epochs = 3;
  options.seed = 0;
  options.lr = 0.01;
  options.threads = 1;
  options.progress = train::ProgressMode::None;
  return train::train(options, stdout, stderr);
}

class Bf16AccuracyTest : public ::testing::TestWithParam<const char *> {};

TEST_P(Bf16AccuracyTest, MatchesF32WithinHalfAPoint) {
  CLEAVE_E2E_SKIP_WITHOUT_BF16();
  std::string model = GetParam();
  train::TrainSummary f32 = threeEpochs(model + "_b32_n2_sgd");
  train::TrainSummary bf16 = threeEpochs(model + "_b32_n2_sgd_bf16");
  ASSERT_EQ(f32.epochs.size(), 3u);
  ASSERT_EQ(bf16.epochs.size(), 3u);
  double a32 = f32.epochs.back().testAccuracy;
  double a16 = bf16.epochs.back().testAccuracy;
  std::printf("%s: test accuracy f32 %.2f%%, bf16 %.2f%%; samples/s of the "
              "last epoch f32 %.0f, bf16 %.0f\n",
              model.c_str(), 100 * a32, 100 * a16,
              f32.epochs.back().samplesPerSecond,
              bf16.epochs.back().samplesPerSecond);
  RecordProperty("f32_accuracy", std::to_string(a32));
  RecordProperty("bf16_accuracy", std::to_string(a16));
  EXPECT_LE(std::fabs(a16 - a32), 0.005);
  // bf16 must have been in effect: rounding changes the trajectory.
  EXPECT_NE(bf16.epochs.back().trainLoss, f32.epochs.back().trainLoss);
}

INSTANTIATE_TEST_SUITE_P(FashionMnist, Bf16AccuracyTest,
                         ::testing::Values("mlp", "lenet"),
                         [](const ::testing::TestParamInfo<const char *> &i) {
                           return std::string(i.param);
                         });

INSTANTIATE_TEST_SUITE_P(
    FashionMnist, AccuracyTest,
    ::testing::Values(Config{"sgd", "mlp_b32_n2_sgd", 0.82}),
    [](const ::testing::TestParamInfo<Config> &info) {
      return std::string(info.param.name);
    });

} // namespace
} // namespace cleave::e2e
