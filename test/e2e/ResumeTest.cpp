//===- ResumeTest.cpp - kill -9 cleave-train, resume, same bits -----------===//
//
// A run killed with SIGKILL at any point after a checkpoint exists and then
// resumed with --resume ends with the same parameters, byte for byte, as the
// run never interrupted, and with the same metrics records (timings aside).
// The kill points include every position in a window against every position
// between two checkpoints, the moment after an epoch's last micro-step
// (before its flush, evaluation and checkpoint), a checkpoint written but
// older ones not yet pruned, a checkpoint write cut short, and a second kill
// of a resumed run. Every kill point is exact: cleave-train's testing hook
// sends the process SIGKILL right after micro-step K or right after the
// checkpoint of micro-step K, so no test sleeps or races the process. Every
// run uses --limit-train=300.
//
//===----------------------------------------------------------------------===//

#include "E2ETestUtil.h"

#include "CheckpointDir.h"
#include "Trainer.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <signal.h>

#include <filesystem>
#include <sstream>

namespace cleave::e2e {
namespace {

/// A small Adam run: 300 samples in micro-batches of 8 (38 micro-steps per
/// epoch, the last of 4 samples), N = 3 (so windows straddle checkpoints and
/// each epoch ends with a partial window of 2), 2 epochs = 76 micro-steps, a
/// checkpoint every 5 micro-steps.
constexpr int64_t kMicroStepsPerEpoch = 38;
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

/// Where around micro-step K the testing hook kills the run.
enum class KillPoint {
  /// Right after micro-step K.
  MicroStep,
  /// Right after the checkpoint of micro-step K is on disk, before older
  /// checkpoints are pruned.
  Checkpoint,
};

std::vector<std::string> killAt(int64_t microStep, KillPoint point) {
  return {std::string(train::kKillAtEnv) + "=" + std::to_string(microStep),
          std::string(train::kKillPointEnv) + "=" +
              (point == KillPoint::Checkpoint ? "checkpoint" : "micro-step")};
}

/// The micro-step counts of the checkpoints in `dir`, oldest first.
std::vector<int64_t> checkpointSteps(const std::string &dir) {
  std::vector<int64_t> steps;
  for (const auto &[microSteps, path] : train::CheckpointDir(dir, 2).list())
    steps.push_back(microSteps);
  return steps;
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
  /// SIGKILL with a checkpoint on disk, the newest one taken before the kill
  /// point.
  void killedRun(const std::string &name, int64_t microStep, bool resume,
                 KillPoint point = KillPoint::MicroStep) {
    auto args = smallRun(dir_, name);
    ProcessResult r =
        run(resume ? withResume(args) : args, dir_, killAt(microStep, point));
    ASSERT_FALSE(r.exited) << r.describe();
    ASSERT_EQ(r.signal, SIGKILL) << r.describe();
    std::vector<int64_t> steps = checkpointSteps(dir_ / (name + ".ckpt"));
    ASSERT_FALSE(steps.empty());
    if (point == KillPoint::MicroStep)
      EXPECT_LT(steps.back(), microStep);
    else
      EXPECT_EQ(steps.back(), microStep);
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

TEST_F(ResumeTest, KillAroundAnEpochEndThenResume) {
  // After an epoch's last micro-step, before its flush, evaluation and
  // checkpoint; early in the second epoch.
  for (int64_t k : {kMicroStepsPerEpoch, kMicroStepsPerEpoch + 3}) {
    SCOPED_TRACE("killed after micro-step " + std::to_string(k));
    std::string name = "kill" + std::to_string(k);
    killedRun(name, k, /*resume=*/false);
    resumeAndCompare(name);
  }
}

TEST_F(ResumeTest, KillAtEveryPhaseOfWindowsAndCheckpointsThenResume) {
  // Windows of N = 3 and checkpoints every 5 micro-steps repeat together
  // every 15 micro-steps: micro-steps 6 to 20 are each position in a window
  // paired with each position after a checkpoint (the 1st to 5th micro-step
  // since the last one), once.
  for (int64_t k = kCheckpointEvery + 1; k <= kCheckpointEvery + 15; ++k) {
    SCOPED_TRACE("killed after micro-step " + std::to_string(k));
    std::string name = "phase" + std::to_string(k);
    killedRun(name, k, /*resume=*/false);
    resumeAndCompare(name);
  }
}

TEST_F(ResumeTest, KillAfterACheckpointIsWrittenBeforeOlderOnesGo) {
  // Killed with checkpoints 5, 10 and 15 on disk, one more than the run
  // keeps: the resume starts from the newest and prunes the others later.
  killedRun("unpruned", 15, /*resume=*/false, KillPoint::Checkpoint);
  EXPECT_EQ(checkpointSteps(dir_ / "unpruned.ckpt"),
            (std::vector<int64_t>{5, 10, 15}));
  resumeAndCompare("unpruned");
  EXPECT_EQ(checkpointSteps(dir_ / "unpruned.ckpt").size(), 2u);

  // At the end of an epoch: after its flush, evaluation, record and
  // checkpoint.
  killedRun("epochEnd", kMicroStepsPerEpoch, /*resume=*/false,
            KillPoint::Checkpoint);
  resumeAndCompare("epochEnd");
}

TEST_F(ResumeTest, KillDuringACheckpointWriteThenResume) {
  // The runtime writes a checkpoint to `path`.tmp and renames it: a kill
  // during the write leaves a partial `path`.tmp beside the older
  // checkpoints. That is what the run is left with here: killed right
  // before checkpoint 20, with the first half of a checkpoint written as
  // checkpoint 20's temporary file.
  killedRun("torn", 20, /*resume=*/false);
  train::CheckpointDir checkpoints(dir_ / "torn.ckpt", 2);
  const std::string newest = readFile(checkpoints.pathFor(15));
  ASSERT_FALSE(newest.empty());
  const std::string tmp = checkpoints.pathFor(20) + ".tmp";
  writeFile(tmp, newest.substr(0, newest.size() / 2));
  resumeAndCompare("torn");
  // The resumed run wrote checkpoint 20 through the same temporary file.
  EXPECT_FALSE(std::filesystem::exists(tmp));
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

} // namespace
} // namespace cleave::e2e
