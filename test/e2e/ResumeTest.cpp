//===- ResumeTest.cpp - kill -9 cleave-train, resume, same bits -----------===//
//
// A run killed with SIGKILL at any point after a checkpoint exists and then
// resumed with --resume ends with the same parameters, byte for byte, as the
// run never interrupted, and with the same metrics records (timings aside).
// The kill points include the middle of a window, the moment after an
// epoch's last micro-step (before its flush, evaluation and checkpoint) and a
// second kill of a resumed run. The deterministic kill points come from
// cleave-train's testing hook (it sends itself SIGKILL after micro-step K);
// one test kills the process from outside at whatever point it has reached.
// Every run uses --limit-train: a few hundred to a few thousand samples.
//
//===----------------------------------------------------------------------===//

#include "E2ETestUtil.h"

#include "CheckpointDir.h"
#include "Trainer.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <signal.h>

#include <chrono>
#include <random>
#include <sstream>
#include <thread>

namespace cleave::e2e {
namespace {

/// A small Adam run: 300 samples in micro-batches of 8 (38 micro-steps per
/// epoch, the last of 4 samples), N = 3 (so windows straddle checkpoints and
/// each epoch ends with a partial window of 2), 2 epochs = 76 micro-steps, a
/// checkpoint every 5 micro-steps.
constexpr int64_t kMicroStepsPerEpoch = 38;
constexpr int64_t kTotalMicroSteps = 2 * kMicroStepsPerEpoch;
constexpr int64_t kCheckpointEvery = 5;

std::vector<std::string> smallRun(const TempDir &dir, const std::string &name,
                                  int64_t epochs = 2) {
  return {CLEAVE_TRAIN_EXE,
          artifactPath("mlp_b8_n4_adam"),
          "--data=" + fashionMnistDir(),
          "--epochs=" + std::to_string(epochs),
          "--seed=3",
          "--accumulate=3",
          "--limit-train=300",
          "--limit-test=64",
          "--threads=1",
          "--checkpoint-dir=" + (dir / (name + ".ckpt")),
          "--checkpoint-every=" + std::to_string(kCheckpointEvery),
          "--save-params=" + (dir / (name + ".params")),
          "--metrics=" + (dir / (name + ".jsonl")),
          "--progress=none"};
}

std::vector<std::string> withResume(std::vector<std::string> args) {
  args.push_back("--resume");
  return args;
}

std::string killAt(int64_t microStep) {
  return std::string(train::kKillAtEnv) + "=" + std::to_string(microStep);
}

/// The metrics records with what differs between runs removed: timings, and
/// the records a resume adds.
std::vector<nlohmann::json> comparableMetrics(const std::string &path) {
  std::vector<nlohmann::json> records;
  std::istringstream lines(readFile(path));
  std::string line;
  while (std::getline(lines, line)) {
    nlohmann::json r = nlohmann::json::parse(line);
    if (r["event"] == "resume")
      continue;
    for (const char *timing : {"elapsed", "samples_per_sec", "epoch_seconds"})
      r.erase(timing);
    records.push_back(r);
  }
  return records;
}

class ResumeTest : public ::testing::Test {
protected:
  /// The uninterrupted reference run.
  void SetUp() override {
    ProcessResult r = run(smallRun(dir_, "reference"), dir_);
    ASSERT_TRUE(r.exited && r.exitCode == 0) << r.describe();
    reference_ = readFile(dir_ / "reference.params");
    ASSERT_FALSE(reference_.empty());
    referenceMetrics_ = comparableMetrics(dir_ / "reference.jsonl");
    // 2 x (12 full windows + 1 partial), 2 epoch records, 1 start record.
    ASSERT_EQ(referenceMetrics_.size(), 2u * 13u + 2u + 1u);
  }

  /// Runs `name` with the kill hook at `microStep` and checks it died of
  /// SIGKILL with a checkpoint on disk.
  void killedRun(const std::string &name, int64_t microStep, bool resume) {
    auto args = smallRun(dir_, name);
    ProcessResult r =
        run(resume ? withResume(args) : args, dir_, {killAt(microStep)});
    ASSERT_FALSE(r.exited) << r.describe();
    ASSERT_EQ(r.signal, SIGKILL) << r.describe();
    auto checkpoints = train::CheckpointDir(dir_ / (name + ".ckpt"), 2).list();
    ASSERT_FALSE(checkpoints.empty());
    EXPECT_LT(checkpoints.back().first, microStep);
  }

  /// Resumes `name` to the end and compares it with the reference.
  void resumeAndCompare(const std::string &name) {
    ProcessResult r = run(withResume(smallRun(dir_, name)), dir_);
    ASSERT_TRUE(r.exited && r.exitCode == 0) << r.describe();
    EXPECT_NE(r.out.find("resumed from "), std::string::npos) << r.out;
    std::string params = readFile(dir_ / (name + ".params"));
    ASSERT_EQ(params.size(), reference_.size());
    EXPECT_TRUE(params == reference_)
        << name << ": the resumed run's parameters differ from the "
        << "uninterrupted run's";
    EXPECT_EQ(comparableMetrics(dir_ / (name + ".jsonl")), referenceMetrics_);
  }

  TempDir dir_;
  std::string reference_;
  std::vector<nlohmann::json> referenceMetrics_;
};

TEST_F(ResumeTest, KillAtChosenMicroStepsThenResume) {
  // Right after the first checkpoint; mid-window (micro-step 17 is the 2nd
  // of window 6); after an epoch's last micro-step, before its flush,
  // evaluation and checkpoint; early in the second epoch.
  for (int64_t k : {int64_t(kCheckpointEvery + 1), int64_t(17),
                    kMicroStepsPerEpoch, kMicroStepsPerEpoch + 3}) {
    SCOPED_TRACE("killed after micro-step " + std::to_string(k));
    std::string name = "kill" + std::to_string(k);
    killedRun(name, k, /*resume=*/false);
    resumeAndCompare(name);
  }
}

TEST_F(ResumeTest, KillAtARandomMicroStepThenResume) {
  std::random_device device;
  std::uniform_int_distribution<int64_t> pick(kCheckpointEvery + 1,
                                              kTotalMicroSteps - 1);
  int64_t k = pick(device);
  SCOPED_TRACE("killed after micro-step " + std::to_string(k));
  std::printf("killing after micro-step %lld\n", (long long)k);
  killedRun("random", k, false);
  resumeAndCompare("random");
}

TEST_F(ResumeTest, KillTheResumedRunTooThenResumeAgain) {
  killedRun("twice", 12, false);
  killedRun("twice", 53, /*resume=*/true);
  resumeAndCompare("twice");
}

TEST_F(ResumeTest, ResumingACompletedRunTrainsNothingOrExtendsIt) {
  // The reference run is complete: resuming it with the same --epochs does
  // nothing and leaves the same parameters.
  ProcessResult again = run(withResume(smallRun(dir_, "reference")), dir_);
  ASSERT_TRUE(again.exited && again.exitCode == 0) << again.describe();
  EXPECT_NE(again.out.find("nothing to train"), std::string::npos) << again.out;
  EXPECT_TRUE(readFile(dir_ / "reference.params") == reference_);

  // Resuming it with --epochs=3 trains a third epoch: the same as a 3-epoch
  // run from the start.
  ProcessResult three = run(smallRun(dir_, "three", 3), dir_);
  ASSERT_TRUE(three.exited && three.exitCode == 0) << three.describe();
  ProcessResult extended =
      run(withResume(smallRun(dir_, "reference", 3)), dir_);
  ASSERT_TRUE(extended.exited && extended.exitCode == 0) << extended.describe();
  EXPECT_TRUE(readFile(dir_ / "reference.params") ==
              readFile(dir_ / "three.params"));
  EXPECT_FALSE(readFile(dir_ / "three.params") == reference_);
}

TEST(ExternalKillTest, KillFromOutsideThenResume) {
  TempDir dir;
  // Long enough a run (3 epochs of 3000 samples, 282 micro-steps) that it is
  // still going when the first checkpoint (after 10 micro-steps) appears: it
  // is killed at whatever point it has reached 0-20 ms later, most of a
  // second before it would end on an idle machine.
  auto args = [&](const std::string &name) {
    return std::vector<std::string>{
        CLEAVE_TRAIN_EXE,
        artifactPath("mlp_b32_n1_adam"),
        "--data=" + fashionMnistDir(),
        "--epochs=3",
        "--accumulate=3",
        "--limit-train=3000",
        "--limit-test=64",
        "--threads=1",
        "--checkpoint-dir=" + (dir / (name + ".ckpt")),
        "--checkpoint-every=10",
        "--save-params=" + (dir / (name + ".params")),
        "--progress=none"};
  };
  ProcessResult ref = run(args("long"), dir);
  ASSERT_TRUE(ref.exited && ref.exitCode == 0) << ref.describe();

  const std::string out = dir / "killed.out", err = dir / "killed.err";
  pid_t pid = spawn(args("killed"), out, err);
  train::CheckpointDir checkpoints(dir / "killed.ckpt", 2);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (checkpoints.list().empty() &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::random_device device;
  std::this_thread::sleep_for(std::chrono::milliseconds(
      std::uniform_int_distribution<int>(0, 20)(device)));
  ::kill(pid, SIGKILL);
  ProcessResult killed = wait(pid, out, err, 60);
  ASSERT_FALSE(killed.exited)
      << "the run ended before it could be killed: " << killed.describe();
  ASSERT_EQ(killed.signal, SIGKILL) << killed.describe();
  ASSERT_FALSE(checkpoints.list().empty());

  auto resumeArgs = args("killed");
  resumeArgs.push_back("--resume");
  ProcessResult resumed = run(resumeArgs, dir);
  ASSERT_TRUE(resumed.exited && resumed.exitCode == 0) << resumed.describe();
  EXPECT_TRUE(readFile(dir / "killed.params") == readFile(dir / "long.params"))
      << "the resumed run's parameters differ from the uninterrupted run's";
}

} // namespace
} // namespace cleave::e2e
