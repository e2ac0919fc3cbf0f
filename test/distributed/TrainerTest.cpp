//===- TrainerTest.cpp - cleave-train under mpirun ------------------------===//
//
// cleave-train as a data-parallel job (`mpirun -np R cleave-train ...`) on a
// few hundred Fashion-MNIST samples: the distributed sampler's shares, rank
// 0 alone printing and writing metrics and checkpoints (one file holding
// every rank's state), a job killed mid-window resuming on the same R to the
// same parameters (and refusing another R), a killed or a stalled rank
// ending the job with a clear error instead of a hang, and an artifact
// without a cross-rank reduction refused.
//
//===----------------------------------------------------------------------===//

#include "E2ETestUtil.h"

#include "Trainer.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <regex>
#include <set>
#include <sstream>
#include <unistd.h>

namespace cleave::e2e {
namespace {

std::string distributedArtifact(const std::string &name) {
  return std::string(CLEAVE_DISTRIBUTED_ARTIFACT_DIR) + "/" + name + ".cleave";
}

/// `mpirun -np ranks` of cleave-train with `args`, passing `env` (NAME=VALUE,
/// also set for mpirun itself) to every rank. Each test process (ctest runs
/// them side by side) gives OpenMPI a session folder of its own, through the
/// environment mpirun inherits: cmake/CleaveMpiTests.cmake says why.
std::vector<std::string> mpirun(int ranks, const std::vector<std::string> &args,
                                const std::vector<std::string> &env = {}) {
  static const bool isolated = [] {
    std::string dir =
        std::string(CLEAVE_MPI_TMPDIR) + "/trainer-" + std::to_string(getpid());
    return ::setenv("OMPI_MCA_orte_tmpdir_base", dir.c_str(), 1) == 0 &&
           ::setenv("PRTE_MCA_prte_tmpdir_base", dir.c_str(), 1) == 0;
  }();
  EXPECT_TRUE(isolated);
  std::vector<std::string> argv = {CLEAVE_MPIEXEC, "--allow-run-as-root",
                                   "--oversubscribe", "-np",
                                   std::to_string(ranks)};
  for (const std::string &e : env) {
    argv.push_back("-x");
    argv.push_back(e.substr(0, e.find('=')));
  }
  argv.push_back(CLEAVE_TRAIN_PATH);
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

/// 203 training samples: with 2 ranks, 101 each (one left out per epoch),
/// 13 micro-steps of 8 (the last of 5), N = 2: six windows and a flushed one.
std::vector<std::string>
smallRun(const TempDir &dir, const std::string &name,
         const std::string &artifact = "mean_b8_n2_momentum") {
  return {distributedArtifact(artifact),
          "--data=" + fashionMnistDir(),
          "--epochs=2",
          "--seed=3",
          "--lr=0.05",
          "--limit-train=203",
          "--limit-test=64",
          "--threads=1",
          "--checkpoint-dir=" + (dir / (name + ".ckpt")),
          "--save-params=" + (dir / (name + ".params")),
          "--metrics=" + (dir / (name + ".jsonl")),
          "--progress=none"};
}

size_t count(const std::string &text, const std::string &what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos;
       at = text.find(what, at + 1))
    ++n;
  return n;
}

std::vector<nlohmann::json> records(const std::string &path) {
  std::vector<nlohmann::json> out;
  std::istringstream lines(readFile(path));
  for (std::string line; std::getline(lines, line);)
    out.push_back(nlohmann::json::parse(line));
  return out;
}

std::set<std::string> filesIn(const std::string &dir) {
  std::set<std::string> names;
  for (const auto &entry : std::filesystem::directory_iterator(dir))
    names.insert(entry.path().filename().string());
  return names;
}

TEST(SamplerTest, EqualDisjointSharesInRankOrder) {
  for (int64_t samples : {1, 2, 7, 64, 203, 1000})
    for (int ranks = 1; ranks <= 5; ++ranks) {
      int64_t next = 0;
      for (int rank = 0; rank < ranks; ++rank) {
        train::SamplerShare s = train::samplerShare(samples, rank, ranks);
        EXPECT_EQ(s.begin, next) << samples << " samples, rank " << rank;
        EXPECT_EQ(s.end - s.begin, samples / ranks);
        next = s.end;
      }
      // Every position but the last samples % R is someone's.
      EXPECT_EQ(next, samples - samples % ranks);
    }
}

TEST(DistributedTrainerTest, RankZeroReportsAndCheckpoints) {
  TempDir dir;
  ProcessResult r = run(mpirun(2, smallRun(dir, "run")), dir);
  ASSERT_TRUE(r.exited && r.exitCode == 0) << r.describe();
  // One report, not one per rank.
  EXPECT_EQ(count(r.out, "epoch 1/2:"), 1u) << r.out;
  EXPECT_EQ(count(r.out, "epoch 2/2:"), 1u) << r.out;
  EXPECT_EQ(count(r.out, "data-parallel: 2 ranks (reduce mean), 101 training "
                         "samples each per epoch, 1 left out of each epoch's "
                         "shuffled order; 32 samples per optimizer step"),
            1u)
      << r.out;

  std::vector<nlohmann::json> metrics = records(dir / "run.jsonl");
  ASSERT_FALSE(metrics.empty());
  EXPECT_EQ(metrics.front()["event"], "start");
  EXPECT_EQ(metrics.front()["ranks"], 2);
  int64_t windowSamples = 0, windows = 0;
  std::set<uint64_t> fullWindowBytes;
  for (const nlohmann::json &m : metrics) {
    if (m["event"] == "step" && m["epoch"] == 1) {
      windowSamples += m["window_samples"].get<int64_t>();
      ++windows;
      if (m["window"] == 2)
        fullWindowBytes.insert(m["bytes_sent"].get<uint64_t>());
    }
    if (m["event"] == "epoch") {
      EXPECT_EQ(m["train_samples"], 202);
    }
  }
  // Both ranks' samples, in 6 full windows and a flushed one.
  EXPECT_EQ(windowSamples, 202);
  EXPECT_EQ(windows, 7);
  // The traffic of a window does not depend on the window.
  ASSERT_EQ(fullWindowBytes.size(), 1u);
  EXPECT_GT(*fullWindowBytes.begin(), 0u);

  // The end-of-epoch checkpoints (the default keeps 2), one file each for the
  // whole job, written by rank 0.
  EXPECT_EQ(filesIn(dir / "run.ckpt"),
            (std::set<std::string>{"checkpoint-0000000013.ranks-2.ckpt",
                                   "checkpoint-0000000026.ranks-2.ckpt"}));
  EXPECT_EQ(readFile(dir / "run.params").size(),
            (32 * 784 + 32 + 10 * 32 + 10) * sizeof(float));
}

TEST(DistributedTrainerTest, KilledJobResumesOnTheSameRanks) {
  TempDir dir;
  ProcessResult straight = run(mpirun(2, smallRun(dir, "straight")), dir);
  ASSERT_TRUE(straight.exited && straight.exitCode == 0) << straight.describe();

  // A checkpoint every 3 micro-steps (mid-window, N = 2); every rank kills
  // itself after micro-step 5, so the job resumes from micro-step 3 with
  // one micro-step in each rank's accumulators.
  std::vector<std::string> args = smallRun(dir, "killed");
  args.push_back("--checkpoint-every=3");
  const std::vector<std::string> kill = {std::string(train::kKillAtEnv) + "=5"};
  ProcessResult killed = run(mpirun(2, args, kill), dir, kill);
  ASSERT_FALSE(killed.exited && killed.exitCode == 0) << killed.describe();
  EXPECT_FALSE(std::filesystem::exists(dir / "killed.params"));

  args.push_back("--resume");
  ProcessResult resumed = run(mpirun(2, args), dir);
  ASSERT_TRUE(resumed.exited && resumed.exitCode == 0) << resumed.describe();
  EXPECT_NE(resumed.out.find("resumed from"), std::string::npos) << resumed.out;
  EXPECT_EQ(readFile(dir / "killed.params"), readFile(dir / "straight.params"))
      << "resuming changed the parameters";

  // The checkpoints belong to a 2-rank job.
  std::vector<std::string> alone = {CLEAVE_TRAIN_PATH};
  alone.insert(alone.end(), args.begin(), args.end());
  ProcessResult single = run(alone, dir);
  EXPECT_TRUE(single.exited && single.exitCode == 1) << single.describe();
  EXPECT_NE(single.err.find("holds checkpoints of a run on 2 ranks, this job "
                            "has 1; resume with the same number of ranks "
                            "(mpirun -np 2)"),
            std::string::npos)
      << single.err;
}

TEST(DistributedTrainerTest, DeadRankEndsTheJobWithAnError) {
  TempDir dir;
  std::vector<std::string> args = smallRun(dir, "dead");
  const std::vector<std::string> env = {std::string(train::kKillAtEnv) + "=3",
                                        std::string(train::kKillRankEnv) + "=1",
                                        "CLEAVE_COLLECTIVE_TIMEOUT_S=5"};
  // The wait's limit only tells a hang from an ending job.
  ProcessResult r = run(mpirun(3, args, env), dir, env, 120);
  ASSERT_FALSE(r.timedOut) << "the job hung: " << r.describe();
  EXPECT_FALSE(r.exited && r.exitCode == 0) << r.describe();
  // Either the survivors' collective timed out or mpirun saw the rank die
  // first; both say what happened.
  const std::regex explained("timed out after 5 s waiting for peers; a rank "
                             "probably died|exited on signal 9|rank 1 with "
                             "PID [0-9]+ .*signal 9|noticed that process rank "
                             "1");
  EXPECT_TRUE(std::regex_search(r.out + r.err, explained)) << r.describe();
  EXPECT_FALSE(std::filesystem::exists(dir / "dead.params"));
}

TEST(DistributedTrainerTest, StalledRankEndsTheJobWithAnError) {
  // A rank that stops answering (SIGSTOP) is noticed by no launcher: the
  // other ranks' next collective times out and ends the job.
  TempDir dir;
  std::vector<std::string> args = smallRun(dir, "stalled");
  const std::vector<std::string> env = {std::string(train::kKillAtEnv) + "=3",
                                        std::string(train::kKillRankEnv) + "=1",
                                        std::string(train::kKillSignalEnv) +
                                            "=STOP",
                                        "CLEAVE_COLLECTIVE_TIMEOUT_S=5"};
  ProcessResult r = run(mpirun(3, args, env), dir, env, 120);
  ASSERT_FALSE(r.timedOut) << "the job hung: " << r.describe();
  EXPECT_FALSE(r.exited && r.exitCode == 0) << r.describe();
  const std::regex explained("rank [02]: collective '[a-z-]+' timed out after "
                             "5 s waiting for peers; a rank probably died");
  EXPECT_TRUE(std::regex_search(r.out + r.err, explained)) << r.describe();
}

TEST(DistributedTrainerTest, RefusesAnArtifactWithoutReduction) {
  TempDir dir;
  ProcessResult r =
      run(mpirun(2, smallRun(dir, "none", "none_b8_n2_momentum")), dir);
  EXPECT_FALSE(r.exited && r.exitCode == 0) << r.describe();
  EXPECT_NE(r.err.find("was compiled without a cross-rank reduction "
                       "(--reduce=none): its 2 ranks would train separate "
                       "models"),
            std::string::npos)
      << r.err;
}

TEST(DistributedTrainerTest, AUsageErrorIsReportedOnce) {
  // Every rank parses the same flags; the job's stderr says it once.
  TempDir dir;
  std::vector<std::string> args = smallRun(dir, "usage");
  args.push_back("--epochs=0");
  ProcessResult r = run(mpirun(3, args), dir);
  EXPECT_FALSE(r.exited && r.exitCode == 0) << r.describe();
  EXPECT_EQ(count(r.err, "cleave-train: error: --epochs must be at least 1"),
            1u)
      << r.err;
}

} // namespace
} // namespace cleave::e2e
