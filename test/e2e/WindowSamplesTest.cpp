//===- WindowSamplesTest.cpp - windows whose last micro-batch is short ----===//
//
// cleave-train with an artifact compiled for a window that its micro-batch
// does not divide (cleave-compile --global-batch=20 --micro-batch=8: N = 3,
// the last micro-batch of each window 4 samples, the manifest's
// `window_samples`): it feeds every window 8 + 8 + 4 samples, so that each
// optimizer step is exactly the update of one batch of 20, as an artifact of
// micro-batch 20 takes it; a run killed mid-window resumes to the same
// bits; the learning-rate schedule counts those windows; and --accumulate,
// which would change what a window holds, is refused. Every run uses
// --limit-train=310: 15 windows of 20 and a partial one of 10 per epoch.
//
//===----------------------------------------------------------------------===//

#include "E2ETestUtil.h"

#include "CheckpointDir.h"
#include "Trainer.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <signal.h>

#include <cmath>
#include <cstring>
#include <sstream>

namespace cleave::e2e {
namespace {

constexpr int64_t kWindowsPerEpoch = 16; // 15 of 20 samples, 1 of 10
constexpr int64_t kMicroStepsPerEpoch = 15 * 3 + 2;

std::vector<std::string> trainRun(const TempDir &dir, const std::string &name,
                                  const std::string &artifact,
                                  std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {CLEAVE_TRAIN_EXE,
                                   artifactPath(artifact),
                                   "--data=" + fashionMnistDir(),
                                   "--epochs=2",
                                   "--seed=5",
                                   "--limit-train=310",
                                   "--limit-test=64",
                                   "--threads=1",
                                   "--save-params=" +
                                       (dir / (name + ".params")),
                                   "--metrics=" + (dir / (name + ".jsonl")),
                                   "--progress=none"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

std::vector<nlohmann::json> records(const std::string &path,
                                    const std::string &event) {
  std::vector<nlohmann::json> out;
  std::istringstream lines(readFile(path));
  std::string line;
  while (std::getline(lines, line)) {
    nlohmann::json r = nlohmann::json::parse(line);
    if (r["event"] == event)
      out.push_back(r);
  }
  return out;
}

std::vector<float> floats(const std::string &bytes) {
  std::vector<float> v(bytes.size() / sizeof(float));
  std::memcpy(v.data(), bytes.data(), v.size() * sizeof(float));
  return v;
}

TEST(WindowSamplesTest, EveryWindowIsOneBatchOfItsSamples) {
  TempDir dir;
  ProcessResult ragged = run(trainRun(dir, "ragged", "mlp_g20_b8_sgd"), dir);
  ASSERT_TRUE(ragged.exited && ragged.exitCode == 0) << ragged.describe();
  EXPECT_NE(ragged.out.find("micro-batch 8, accumulate 3 (20 samples per "
                            "optimizer step: the last micro-batch of each "
                            "window holds 4)"),
            std::string::npos)
      << ragged.out;
  ProcessResult big = run(trainRun(dir, "big", "mlp_b20_n1_sgd"), dir);
  ASSERT_TRUE(big.exited && big.exitCode == 0) << big.describe();

  // Each epoch: 15 windows of 3 micro-steps (8 + 8 + 4 samples) and the
  // flushed rest, 10 samples in micro-batches of 8 and 2.
  std::vector<nlohmann::json> steps = records(dir / "ragged.jsonl", "step");
  ASSERT_EQ(steps.size(), size_t(2 * kWindowsPerEpoch));
  for (size_t i = 0; i < steps.size(); ++i) {
    bool last = (i + 1) % kWindowsPerEpoch == 0;
    EXPECT_EQ(steps[i]["window_samples"], last ? 10 : 20) << steps[i];
    EXPECT_EQ(steps[i]["window"], last ? 2 : 3) << steps[i];
    EXPECT_EQ(steps[i]["step"], int64_t(i + 1)) << steps[i];
  }
  EXPECT_EQ(steps.back()["micro_steps"], 2 * kMicroStepsPerEpoch);
  EXPECT_EQ(records(dir / "ragged.jsonl", "start").at(0)["window_samples"], 20);
  std::vector<nlohmann::json> bigSteps = records(dir / "big.jsonl", "step");
  ASSERT_EQ(bigSteps.size(), steps.size());

  // The same updates as batches of 20: the same parameters to float32
  // rounding of the sums' order, and the same per-window losses.
  std::vector<float> a = floats(readFile(dir / "ragged.params"));
  std::vector<float> b = floats(readFile(dir / "big.params"));
  ASSERT_EQ(a.size(), b.size());
  ASSERT_FALSE(a.empty());
  double diff = 0, norm = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::fabs(double(a[i]) - double(b[i])));
    norm = std::max(norm, std::fabs(double(b[i])));
  }
  EXPECT_LE(diff, 1e-5 * norm);
  for (size_t i = 0; i < steps.size(); ++i)
    EXPECT_NEAR(double(steps[i]["loss"]), double(bigSteps[i]["loss"]), 1e-5)
        << "window " << i + 1;
}

TEST(WindowSamplesTest, KilledMidWindowResumesToTheSameBits) {
  TempDir dir;
  auto withCheckpoints = [&](const std::string &name) {
    return trainRun(dir, name, "mlp_g20_b8_sgd",
                    {"--checkpoint-dir=" + (dir / (name + ".ckpt")),
                     "--checkpoint-every=2"});
  };
  ProcessResult reference = run(withCheckpoints("reference"), dir);
  ASSERT_TRUE(reference.exited && reference.exitCode == 0)
      << reference.describe();
  const std::string expected = readFile(dir / "reference.params");
  ASSERT_FALSE(expected.empty());
  // Each position in a window (after its first, second and short third
  // micro-step) against each phase of the checkpoints every 2, and the
  // epoch's partial last window.
  for (int64_t k :
       {int64_t(7), int64_t(8), int64_t(9), int64_t(10), int64_t(11),
        int64_t(12), kMicroStepsPerEpoch - 1, kMicroStepsPerEpoch + 4}) {
    SCOPED_TRACE("killed after micro-step " + std::to_string(k));
    std::string name = "kill" + std::to_string(k);
    ProcessResult killed =
        run(withCheckpoints(name), dir,
            {std::string(train::kKillAtEnv) + "=" + std::to_string(k)});
    ASSERT_FALSE(killed.exited) << killed.describe();
    ASSERT_EQ(killed.signal, SIGKILL) << killed.describe();
    std::vector<std::string> args = withCheckpoints(name);
    args.push_back("--resume");
    ProcessResult resumed = run(args, dir);
    ASSERT_TRUE(resumed.exited && resumed.exitCode == 0) << resumed.describe();
    EXPECT_TRUE(readFile(dir / (name + ".params")) == expected)
        << "the resumed run's parameters differ from the uninterrupted "
           "run's";
  }
}

TEST(WindowSamplesTest, TheScheduleCountsTheWindows) {
  TempDir dir;
  ProcessResult r = run(
      trainRun(dir, "cosine", "mlp_g20_b8_sgd", {"--lr-schedule=cosine"}), dir);
  ASSERT_TRUE(r.exited && r.exitCode == 0) << r.describe();
  nlohmann::json start = records(dir / "cosine.jsonl", "start").at(0);
  EXPECT_EQ(start["lr_schedule"]["total_steps"], 2 * kWindowsPerEpoch) << start;
}

TEST(WindowSamplesTest, AccumulateIsRefused) {
  TempDir dir;
  ProcessResult r =
      run(trainRun(dir, "n2", "mlp_g20_b8_sgd", {"--accumulate=2"}), dir);
  EXPECT_TRUE(r.exited && r.exitCode != 0) << r.describe();
  EXPECT_NE(r.err.find("--accumulate: " + artifactPath("mlp_g20_b8_sgd") +
                       "'s windows are 20 samples, 2 micro-batches of 8 and "
                       "one of 4, so N = 3 is fixed"),
            std::string::npos)
      << r.err;
}

} // namespace
} // namespace cleave::e2e
