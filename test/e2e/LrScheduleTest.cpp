//===- LrScheduleTest.cpp - cleave-train --lr-schedule --------------------===//
//
// Learning-rate schedules through the real cleave-train: the metrics record
// the learning rate of every optimizer step, which must be the closed form
// at that step; --total-steps defaults to the run's optimizer steps (partial
// windows included); a run killed with SIGKILL and resumed ends with the
// same bits as one never stopped; and a resume with another N keeps the
// schedule in optimizer steps unless the schedule is given again.
//
//===----------------------------------------------------------------------===//

#include "E2ETestUtil.h"

#include "Trainer.h"

#include "cleave/runtime.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <signal.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <sstream>

namespace cleave::e2e {
namespace {

using nlohmann::json;

/// 300 samples in micro-batches of 8: 38 micro-steps per epoch (the last of
/// 4 samples); N = 3 makes 13 optimizer steps per epoch, the last of a
/// partial window of 2 micro-steps; 2 epochs = 26 optimizer steps.
constexpr int64_t kStepsPerEpoch = 13;
constexpr double kPeak = 0.2, kFloor = 0.01;
constexpr int64_t kWarmup = 4;

std::vector<std::string> cosineRun(const TempDir &dir, const std::string &name,
                                   std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {
      CLEAVE_TRAIN_EXE,
      artifactPath("mlp_b8_n4_sgd"),
      "--data=" + fashionMnistDir(),
      "--epochs=2",
      "--seed=3",
      "--accumulate=3",
      "--limit-train=300",
      "--limit-test=64",
      "--threads=1",
      "--lr=" + std::to_string(kPeak),
      "--lr-schedule=cosine",
      "--warmup-steps=" + std::to_string(kWarmup),
      "--min-lr=" + std::to_string(kFloor),
      "--checkpoint-dir=" + (dir / (name + ".ckpt")),
      "--checkpoint-every=5",
      "--save-params=" + (dir / (name + ".params")),
      "--metrics=" + (dir / (name + ".jsonl")),
      "--progress=none"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

/// The closed form of the cosine schedule of cosineRun, written out.
double cosineLr(int64_t step, int64_t total) {
  if (step < kWarmup)
    return kPeak * double(step) / double(kWarmup);
  if (step >= total)
    return kFloor;
  const double t = double(step - kWarmup), d = double(total - kWarmup);
  return kFloor + (kPeak - kFloor) * 0.5 * (1 + std::cos(M_PI * t / d));
}

std::vector<json> records(const std::string &path, const std::string &event) {
  std::vector<json> out;
  std::istringstream lines(readFile(path));
  std::string line;
  while (std::getline(lines, line)) {
    json r = json::parse(line);
    if (r["event"] == event)
      out.push_back(r);
  }
  return out;
}

/// Every step record's lr is `expected(step index)`; the record's "step" is
/// the count after the apply, so the step it took is one less.
void expectStepLrs(const std::string &metrics,
                   const std::function<double(int64_t)> &expected) {
  for (const json &r : records(metrics, "step")) {
    const int64_t step = r["step"].get<int64_t>() - 1;
    EXPECT_NEAR(r["lr"].get<double>(), expected(step), 1e-12)
        << "optimizer step " << step;
  }
}

void expectSuccess(const ProcessResult &r) {
  ASSERT_TRUE(r.exited && r.exitCode == 0) << r.describe();
}

void killAt(const TempDir &dir, const std::vector<std::string> &args,
            int64_t microStep) {
  ProcessResult r =
      run(args, dir,
          {std::string(train::kKillAtEnv) + "=" + std::to_string(microStep)});
  ASSERT_FALSE(r.exited) << r.describe();
  ASSERT_EQ(r.signal, SIGKILL) << r.describe();
}

std::vector<json> withoutTimings(std::vector<json> rs) {
  for (json &r : rs)
    for (const char *timing : {"elapsed", "samples_per_sec", "epoch_seconds"})
      r.erase(timing);
  return rs;
}

TEST(LrScheduleTrainTest, EveryStepUsesTheScheduleAndAResumeIsExact) {
  TempDir dir;
  expectSuccess(run(cosineRun(dir, "straight"), dir));
  const std::string metrics = dir / "straight.jsonl";

  // --total-steps defaults to the run's optimizer steps, partial windows
  // included.
  std::vector<json> start = records(metrics, "start");
  ASSERT_EQ(start.size(), 1u);
  const json &schedule = start[0]["lr_schedule"];
  EXPECT_EQ(schedule["kind"], "cosine");
  EXPECT_EQ(schedule["total_steps"], 2 * kStepsPerEpoch);
  EXPECT_EQ(schedule["warmup_steps"], kWarmup);
  EXPECT_EQ(start[0]["lr"], 0.0); // the warmup starts from 0
  std::vector<json> steps = records(metrics, "step");
  ASSERT_EQ(steps.size(), size_t(2 * kStepsPerEpoch));
  expectStepLrs(metrics, [](int64_t s) { return cosineLr(s, 26); });
  // The schedule really moved: from 0 up to the peak and down near the floor.
  EXPECT_EQ(steps[0]["lr"], 0.0);
  EXPECT_NEAR(steps[kWarmup]["lr"].get<double>(), kPeak, 1e-12);
  EXPECT_LT(steps.back()["lr"].get<double>(), 0.02);

  // Killed mid-window in the second epoch, then resumed with the same
  // command: the same parameters, bit for bit, and the same metrics.
  killAt(dir, cosineRun(dir, "killed"), 41);
  std::vector<std::string> resume = cosineRun(dir, "killed");
  resume.push_back("--resume");
  ProcessResult resumed = run(resume, dir);
  expectSuccess(resumed);
  EXPECT_NE(resumed.out.find("resumed from "), std::string::npos);
  EXPECT_EQ(readFile(dir / "killed.params"), readFile(dir / "straight.params"))
      << "the resumed run's parameters differ from the uninterrupted run's";
  for (const char *event : {"start", "step", "epoch"})
    EXPECT_EQ(withoutTimings(records(dir / "killed.jsonl", event)),
              withoutTimings(records(metrics, event)))
        << event << " records";
}

TEST(LrScheduleTrainTest, ANewNOnResumeKeepsTheScheduleInOptimizerSteps) {
  TempDir dir;
  // Killed after micro-step 20: the newest checkpoint is at micro-step 15,
  // optimizer step 5.
  killAt(dir, cosineRun(dir, "kept"), 20);
  std::vector<std::string> resume = cosineRun(dir, "kept");
  // Drop the schedule flags: the checkpoint's schedule goes on.
  resume.erase(std::remove_if(resume.begin(), resume.end(),
                              [](const std::string &a) {
                                return a.rfind("--lr", 0) == 0 ||
                                       a.rfind("--warmup", 0) == 0 ||
                                       a.rfind("--min-lr", 0) == 0;
                              }),
               resume.end());
  resume.insert(resume.end(), {"--accumulate=2", "--resume"});
  ProcessResult r = run(resume, dir);
  expectSuccess(r);
  // 5 steps, then 23 micro-steps in 12 windows (the last of 1), then 38
  // in 19: 36.
  EXPECT_NE(r.out.find("note: the schedule ends at optimizer step 26, this "
                       "run at 36"),
            std::string::npos)
      << r.out;
  std::vector<json> steps = records(dir / "kept.jsonl", "step");
  ASSERT_EQ(steps.size(), 36u);
  // One schedule value per optimizer step whatever N: steps 26 and later
  // are at the floor.
  expectStepLrs(dir / "kept.jsonl", [](int64_t s) { return cosineLr(s, 26); });
  EXPECT_EQ(steps.back()["lr"], kFloor);

  // Given again on resume, the schedule is rebuilt, and --total-steps
  // defaults to the steps of the run with the new N.
  killAt(dir, cosineRun(dir, "rebuilt"), 20);
  std::vector<std::string> again = cosineRun(dir, "rebuilt");
  again.insert(again.end(), {"--accumulate=2", "--resume"});
  expectSuccess(run(again, dir));
  std::vector<json> resumes = records(dir / "rebuilt.jsonl", "resume");
  ASSERT_EQ(resumes.size(), 1u);
  EXPECT_EQ(resumes[0]["lr_schedule"]["total_steps"], 36);
  expectStepLrs(dir / "rebuilt.jsonl", [](int64_t s) {
    return s < 5 ? cosineLr(s, 26) : cosineLr(s, 36);
  });
}

TEST(LrScheduleTrainTest, OneCycleTakesPyTorchsDefaults) {
  TempDir dir;
  std::vector<std::string> args = {CLEAVE_TRAIN_EXE,
                                   artifactPath("mlp_b8_n4_sgd"),
                                   "--data=" + fashionMnistDir(),
                                   "--limit-train=300",
                                   "--limit-test=64",
                                   "--accumulate=3",
                                   "--threads=1",
                                   "--lr=0.1",
                                   "--lr-schedule=one-cycle",
                                   "--metrics=" + (dir / "m.jsonl"),
                                   "--progress=none"};
  expectSuccess(run(args, dir));
  std::vector<json> start = records(dir / "m.jsonl", "start");
  ASSERT_EQ(start.size(), 1u);
  const json &s = start[0]["lr_schedule"];
  EXPECT_EQ(s["kind"], "one-cycle");
  EXPECT_EQ(s["total_steps"], kStepsPerEpoch);
  EXPECT_EQ(s["warmup_steps"], 4); // round(0.3 * 13)
  EXPECT_DOUBLE_EQ(s["warmup_start_factor"].get<double>(), 1.0 / 25);
  EXPECT_DOUBLE_EQ(s["min_lr"].get<double>(), 0.1 / 25 / 1e4);
  cleave_lr_schedule cycle = makeLrSchedule(CLEAVE_LR_ONE_CYCLE);
  cycle.lr = 0.1;
  cycle.total_steps = kStepsPerEpoch;
  cycle.warmup_steps = 4;
  cycle.warmup_start_factor = 1.0 / 25;
  cycle.min_lr = 0.1 / 25 / 1e4;
  expectStepLrs(dir / "m.jsonl",
                [&](int64_t step) { return lrScheduleValue(cycle, step); });
  EXPECT_EQ(records(dir / "m.jsonl", "step").back()["lr"], cycle.min_lr);
}

TEST(LrScheduleTrainTest, AnInvalidScheduleIsAClearError) {
  TempDir dir;
  ProcessResult r = run({CLEAVE_TRAIN_EXE, artifactPath("mlp_b8_n4_sgd"),
                         "--data=" + fashionMnistDir(), "--limit-train=300",
                         "--limit-test=64", "--lr=0.1", "--lr-schedule=cosine",
                         "--min-lr=0.5", "--progress=none"},
                        dir);
  ASSERT_TRUE(r.exited) << r.describe();
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_NE(r.err.find("cleave-train: error: --lr-schedule=cosine: lr "
                       "schedule (cosine): min_lr is 0.5, expected 0 <= "
                       "min_lr <= lr"),
            std::string::npos)
      << r.err;
}

} // namespace
} // namespace cleave::e2e
