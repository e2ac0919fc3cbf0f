//===- ToolLibraryTest.cpp - The libraries behind cleave-train/-run -------===//
//
// Flag parsing of both tools, cleave-run's value syntax, the checkpoint
// directory's naming, ordering and pruning, and the progress display's
// duration format: the pieces the process-level tests exercise only through
// their error messages.
//
//===----------------------------------------------------------------------===//

#include "E2ETestUtil.h"

#include "CheckpointDir.h"
#include "Error.h"
#include "Progress.h"
#include "Runner.h"
#include "TrainOptions.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>

namespace cleave::e2e {
namespace {

/// argv for a parser: "tool" followed by `args`.
class Argv {
public:
  Argv(std::initializer_list<const char *> args) : strings_{"tool"} {
    strings_.insert(strings_.end(), args.begin(), args.end());
    for (std::string &s : strings_)
      pointers_.push_back(s.data());
  }
  int argc() { return int(pointers_.size()); }
  char **argv() { return pointers_.data(); }

private:
  std::vector<std::string> strings_;
  std::vector<char *> pointers_;
};

train::TrainOptions parseTrain(std::initializer_list<const char *> args) {
  Argv a(args);
  return train::parseTrainOptions(a.argc(), a.argv());
}

std::string trainUsageError(std::initializer_list<const char *> args) {
  try {
    parseTrain(args);
  } catch (const tools::UsageError &e) {
    return e.what();
  }
  ADD_FAILURE() << "no usage error";
  return "";
}

TEST(TrainOptionsTest, DefaultsAndBothFlagForms) {
  train::TrainOptions o = parseTrain({"m.cleave"});
  EXPECT_EQ(o.artifact, "m.cleave");
  EXPECT_EQ(o.dataDir, train::kDefaultDataDir);
  EXPECT_EQ(o.epochs, 1);
  EXPECT_EQ(o.seed, 0u);
  EXPECT_FALSE(o.accumulate);
  EXPECT_FALSE(o.lr);
  EXPECT_EQ(o.progress, train::ProgressMode::Auto);
  EXPECT_EQ(o.keepCheckpoints, 2);

  o = parseTrain({"--data",
                  "/d",
                  "--epochs=3",
                  "m.cleave",
                  "--seed",
                  "18446744073709551615",
                  "--accumulate",
                  "4",
                  "--lr=0.5",
                  "--hyper",
                  "momentum=0.8",
                  "--hyper=eps=1e-6",
                  "--threads=2",
                  "--checkpoint-dir=c",
                  "--checkpoint-every=9",
                  "--keep-checkpoints=5",
                  "--resume",
                  "--limit-train=10",
                  "--limit-test",
                  "5",
                  "--save-params=p",
                  "--metrics=m",
                  "--progress=lines"});
  EXPECT_EQ(o.dataDir, "/d");
  EXPECT_EQ(o.epochs, 3);
  EXPECT_EQ(o.seed, UINT64_MAX);
  EXPECT_EQ(o.accumulate, 4);
  EXPECT_EQ(o.lr, 0.5);
  ASSERT_EQ(o.hyperparameters.size(), 2u);
  EXPECT_EQ(o.hyperparameters[0],
            (std::pair<std::string, double>{"momentum", 0.8}));
  EXPECT_EQ(o.hyperparameters[1],
            (std::pair<std::string, double>{"eps", 1e-6}));
  EXPECT_EQ(o.threads, 2);
  EXPECT_EQ(o.checkpointDir, "c");
  EXPECT_EQ(o.checkpointEvery, 9);
  EXPECT_EQ(o.keepCheckpoints, 5);
  EXPECT_TRUE(o.resume);
  EXPECT_EQ(o.limitTrain, 10);
  EXPECT_EQ(o.limitTest, 5);
  EXPECT_EQ(o.saveParams, "p");
  EXPECT_EQ(o.metricsPath, "m");
  EXPECT_EQ(o.progress, train::ProgressMode::Lines);

  EXPECT_EQ(parseTrain({"m", "--quiet"}).progress, train::ProgressMode::None);
  // After "--" everything is positional, even what looks like a flag.
  EXPECT_EQ(parseTrain({"--", "--model.cleave"}).artifact, "--model.cleave");
  EXPECT_TRUE(parseTrain({"--help"}).help);
}

TEST(TrainOptionsTest, RejectsBadValues) {
  EXPECT_EQ(trainUsageError({"m", "--epochs=1.5"}),
            "invalid value '1.5' for --epochs (expected an integer)");
  EXPECT_EQ(trainUsageError({"m", "--epochs=99999999999999999999"}),
            "invalid value '99999999999999999999' for --epochs (expected an "
            "integer)");
  EXPECT_EQ(trainUsageError({"m", "--seed=-1"}),
            "invalid value '-1' for --seed (expected a non-negative integer)");
  // strtoull skips the space and negates: this must not become 2^64 - 1.
  EXPECT_EQ(trainUsageError({"m", "--seed= -1"}),
            "invalid value ' -1' for --seed (expected a non-negative integer)");
  // A value may start with one dash; two make the next flag.
  EXPECT_EQ(trainUsageError({"m", "--lr", "-0.1"}),
            "--lr must not be negative (got -0.1)");
  EXPECT_EQ(trainUsageError({"m", "--lr", "--epochs=2"}),
            "option --lr needs a value (--lr=VALUE)");
  EXPECT_EQ(trainUsageError({"m", "--lr=-0.1"}),
            "--lr must not be negative (got -0.1)");
  EXPECT_EQ(trainUsageError({"m", "--lr=inf"}),
            "invalid value 'inf' for --lr (expected a finite number)");
  EXPECT_EQ(trainUsageError({"m", "--threads=0"}),
            "--threads must be at least 1 (got 0)");
  EXPECT_EQ(trainUsageError({"m", "--hyper", "lr"}),
            "invalid value 'lr' for --hyper (expected NAME=NUMBER)");
  EXPECT_EQ(trainUsageError({"m", "--hyper=lr=x"}),
            "invalid value 'x' for --hyper lr (expected a finite number)");
  EXPECT_EQ(trainUsageError({"m", "--progress=fancy"}),
            "invalid value 'fancy' for --progress (expected auto, bar, lines "
            "or none)");
  EXPECT_EQ(trainUsageError({"m", "--resume=yes", "--checkpoint-dir=c"}),
            "option --resume takes no value");
  EXPECT_EQ(trainUsageError({"m", "--checkpoint-every=3"}),
            "--checkpoint-every needs --checkpoint-dir=DIR");
  EXPECT_EQ(trainUsageError({"a", "b"}),
            "unexpected argument 'b' (cleave-train trains one MODEL.cleave)");
  EXPECT_EQ(trainUsageError({"m", "--data="}), "--data needs a directory or file");
}

TEST(TrainOptionsTest, ScheduleAndPlotFlags) {
  train::TrainOptions o = parseTrain({"m"});
  EXPECT_FALSE(o.schedule);
  EXPECT_EQ(o.plotPath, "");
  o = parseTrain({"m", "--lr-schedule=cosine", "--warmup-steps=5",
                  "--total-steps", "100", "--min-lr=1e-4",
                  "--warmup-start-factor=0.1", "--metrics=m.jsonl",
                  "--plot=p.svg"});
  ASSERT_TRUE(o.schedule);
  EXPECT_EQ(o.schedule->kind, "cosine");
  EXPECT_EQ(o.schedule->warmupSteps, 5);
  EXPECT_EQ(o.schedule->totalSteps, 100);
  EXPECT_EQ(o.schedule->minLr, 1e-4);
  EXPECT_EQ(o.schedule->warmupStartFactor, 0.1);
  EXPECT_FALSE(o.schedule->gamma);
  EXPECT_EQ(o.plotPath, "p.svg");
  o = parseTrain(
      {"m", "--lr-gamma=0.5", "--lr-step-size=3", "--lr-schedule=step"});
  EXPECT_EQ(o.schedule->kind, "step");
  EXPECT_EQ(o.schedule->gamma, 0.5);
  EXPECT_EQ(o.schedule->stepSize, 3);
  EXPECT_EQ(parseTrain({"m", "--lr-schedule=polynomial", "--lr-power=2"})
                .schedule->power,
            2.0);

  EXPECT_EQ(trainUsageError({"m", "--lr-schedule=exp"}),
            "invalid value 'exp' for --lr-schedule (expected constant, "
            "cosine, step, linear, polynomial or one-cycle)");
  EXPECT_EQ(trainUsageError({"m", "--warmup-steps=3"}),
            "--warmup-steps, --total-steps and the other schedule options "
            "need --lr-schedule=KIND");
  EXPECT_EQ(trainUsageError({"m", "--lr-schedule=cosine", "--lr-gamma=0.5"}),
            "--lr-gamma does not apply to --lr-schedule=cosine (it applies "
            "to step)");
  EXPECT_EQ(trainUsageError({"m", "--lr-schedule=step", "--total-steps=9"}),
            "--total-steps does not apply to --lr-schedule=step (it applies "
            "to cosine, linear, polynomial and one-cycle)");
  EXPECT_EQ(trainUsageError({"m", "--lr-schedule=constant", "--min-lr=1"}),
            "--min-lr does not apply to --lr-schedule=constant (it applies to "
            "every kind but constant)");
  EXPECT_EQ(trainUsageError({"m", "--lr-schedule=cosine", "--total-steps=0"}),
            "--total-steps must be at least 1 (got 0)");
  EXPECT_EQ(
      trainUsageError({"m", "--lr-schedule=cosine", "--warmup-start-factor=2"}),
      "--warmup-start-factor must be 0 to 1 (got 2)");
  EXPECT_EQ(trainUsageError({"m", "--plot=p.svg"}),
            "--plot draws the metrics file: it needs --metrics=FILE too");
  EXPECT_EQ(trainUsageError({"m", "--metrics=m", "--plot=p.pdf"}),
            "--plot=p.pdf: the file must end in .png or .svg");
}

TEST(RunOptionsTest, ParsesAndDefaultsThePrints) {
  Argv a({"m.cleave", "--entry=micro_step", "--input", "labels=1,2",
          "--global=w=0", "--samples=2", "--repeat", "3", "--flush",
          "--precision=9", "--accumulate=1", "--checkpoint=c"});
  run::RunOptions o = run::parseRunOptions(a.argc(), a.argv());
  EXPECT_EQ(o.entry, "micro_step");
  ASSERT_EQ(o.inputs.size(), 1u);
  EXPECT_EQ(o.inputs[0].first, "labels");
  EXPECT_EQ(o.inputs[0].second, "1,2");
  ASSERT_EQ(o.globals.size(), 1u);
  EXPECT_EQ(o.globals[0].first, "w");
  EXPECT_EQ(o.samples, 2);
  EXPECT_EQ(o.repeat, 3);
  EXPECT_TRUE(o.flush);
  EXPECT_EQ(o.precision, 9);
  EXPECT_EQ(o.prints, std::vector<std::string>{"loss"});

  Argv b({"m.cleave"});
  EXPECT_EQ(run::parseRunOptions(b.argc(), b.argv()).prints,
            std::vector<std::string>{"output"});
  Argv c({"m.cleave", "--precision=30"});
  EXPECT_THROW(run::parseRunOptions(c.argc(), c.argv()), tools::UsageError);
}

TEST(RunValuesTest, InlineListsBroadcastsAndFiles) {
  std::vector<unsigned char> bytes =
      run::parseValues("--input x", "1.5,-2,3", CLEAVE_DTYPE_F32, 3);
  ASSERT_EQ(bytes.size(), 12u);
  float f[3];
  std::memcpy(f, bytes.data(), 12);
  EXPECT_EQ(f[0], 1.5f);
  EXPECT_EQ(f[1], -2.0f);
  EXPECT_EQ(f[2], 3.0f);

  bytes = run::parseValues("--input y", "7", CLEAVE_DTYPE_I64, 4);
  ASSERT_EQ(bytes.size(), 32u);
  int64_t v[4];
  std::memcpy(v, bytes.data(), 32);
  for (int64_t x : v)
    EXPECT_EQ(x, 7);

  EXPECT_THROW(run::parseValues("--input y", "1.5", CLEAVE_DTYPE_I64, 1),
               tools::Error);
  EXPECT_THROW(run::parseValues("--input y", "3000000000", CLEAVE_DTYPE_I32, 1),
               tools::Error);
  EXPECT_THROW(run::parseValues("--input x", "1,2", CLEAVE_DTYPE_F32, 3),
               tools::Error);

  TempDir dir;
  double d[2] = {0.25, -8};
  writeFile(dir / "v.bin", std::string(reinterpret_cast<char *>(d), 16));
  bytes = run::parseValues("--global g", dir / "v.bin", CLEAVE_DTYPE_F64, 2);
  EXPECT_EQ(std::memcmp(bytes.data(), d, 16), 0);
  EXPECT_THROW(
      run::parseValues("--global g", dir / "v.bin", CLEAVE_DTYPE_F64, 3),
      tools::Error);
  EXPECT_THROW(
      run::parseValues("--global g", dir / "absent", CLEAVE_DTYPE_F64, 3),
      tools::Error);
  // A file that never ends is read only as far as it must be.
  try {
    run::parseValues("--global g", "/dev/zero", CLEAVE_DTYPE_F64, 2);
    ADD_FAILURE() << "/dev/zero was accepted as 16 bytes";
  } catch (const tools::Error &e) {
    EXPECT_EQ(std::string(e.what()),
              "--global g: /dev/zero has more than 16 bytes, expected 2 f64 "
              "values = 16 bytes");
  }
}

TEST(CheckpointDirTest, NamesOrderAndPrunes) {
  EXPECT_EQ(train::CheckpointDir::parseName("checkpoint-0000000042.ckpt"), 42);
  EXPECT_EQ(train::CheckpointDir::parseName("checkpoint-12345678901.ckpt"),
            12345678901);
  EXPECT_FALSE(train::CheckpointDir::parseName("checkpoint-.ckpt"));
  EXPECT_FALSE(train::CheckpointDir::parseName("checkpoint-12.ckpt.tmp"));
  EXPECT_FALSE(train::CheckpointDir::parseName("checkpoint-1a.ckpt"));
  EXPECT_FALSE(train::CheckpointDir::parseName("other-0000000042.ckpt"));

  TempDir dir;
  train::CheckpointDir ckpt(dir / "run", 2);
  EXPECT_TRUE(ckpt.list().empty()); // the directory does not exist yet
  ckpt.create();
  EXPECT_EQ(ckpt.pathFor(7), dir / "run/checkpoint-0000000007.ckpt");
  for (int64_t steps : {100, 7, 25})
    writeFile(ckpt.pathFor(steps), "x");
  writeFile(dir / "run/checkpoint-0000000999.ckpt.tmp", "partial");
  writeFile(dir / "run/notes.txt", "unrelated");
  auto all = ckpt.list();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].first, 7);
  EXPECT_EQ(all[2].first, 100);
  EXPECT_EQ(ckpt.newest(), ckpt.pathFor(100));
  ckpt.prune();
  all = ckpt.list();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].first, 25);
  EXPECT_TRUE(std::filesystem::exists(dir / "run/notes.txt"));
  EXPECT_TRUE(
      std::filesystem::exists(dir / "run/checkpoint-0000000999.ckpt.tmp"));

  writeFile(dir / "file", "x");
  EXPECT_THROW(train::CheckpointDir(dir / "file", 1).create(), tools::Error);
}

TEST(ProgressTest, FormatsDurations) {
  EXPECT_EQ(train::formatDuration(0), "0:00");
  EXPECT_EQ(train::formatDuration(59.6), "1:00");
  EXPECT_EQ(train::formatDuration(754), "12:34");
  EXPECT_EQ(train::formatDuration(3 * 3600 + 62), "3:01:02");
  EXPECT_EQ(train::formatDuration(-1), "?");
  EXPECT_EQ(train::formatDuration(NAN), "?");
}

} // namespace
} // namespace cleave::e2e
