//===- CheckpointTest.cpp - Saving, resuming, rejecting checkpoints -------===//
//
// Resuming from a checkpoint, even in the middle of a window, gives
// parameters bit-identical to a run that never stopped; a checkpoint write
// that fails leaves the previous file intact; truncated, corrupt or foreign
// checkpoints are refused with a clear message and change nothing.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include <gtest/gtest.h>

#include <zlib.h>

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <cstring>
#include <filesystem>

using namespace cleave;
using namespace cleave::test;

namespace {

SessionOptions seeded(uint64_t seed) {
  SessionOptions o;
  o.seed = seed;
  return o;
}

/// Feeds micro-batches [first, last) of `data` (ragged sizes 8, 5, 8, 3, ...).
void feed(Session &s, const Data &data, int first, int last) {
  for (int i = first; i < last; ++i) {
    int64_t k = i % 2 == 0 ? kMicroBatch : 3 + i % 5;
    s.microStep(data.slice(i * kMicroBatch, k).batch());
  }
}

struct ResumeCase {
  const char *name;
  const char *artifact;
  int stopAfter; // micro-steps before the checkpoint
};

void PrintTo(const ResumeCase &c, std::ostream *os) { *os << c.name; }

class ResumeTest : public ::testing::TestWithParam<ResumeCase> {};

TEST_P(ResumeTest, ResumingGivesBitIdenticalState) {
  const ResumeCase &c = GetParam();
  Artifact artifact = Artifact::load(c.artifact);
  const int total = 11;
  Data data = makeData(total * kMicroBatch, 77);
  std::string path = makeTempDir("ckpt") + "/run.ckpt";

  Session straight(artifact, seeded(21));
  straight.setAccumulation(3);
  straight.setHyperparameter("lr", 0.05);
  feed(straight, data, 0, total);

  {
    Session first(artifact, seeded(21));
    first.setAccumulation(3);
    first.setHyperparameter("lr", 0.05);
    feed(first, data, 0, c.stopAfter);
    first.setUserState("epoch", "3");
    first.setUserState("blob", std::string("\0\x01\xff", 3));
    first.saveCheckpoint(path);
  } // the first session is gone

  // Another seed and the defaults: everything must come from the checkpoint.
  Session resumed(artifact, seeded(99));
  resumed.loadCheckpoint(path);
  EXPECT_EQ(resumed.accumulation(), 3);
  EXPECT_DOUBLE_EQ(resumed.hyperparameter("lr"), 0.05);
  EXPECT_EQ(resumed.seed(), 21u);
  EXPECT_EQ(resumed.userState("epoch"), "3");
  EXPECT_EQ(resumed.userState("blob"), std::string("\0\x01\xff", 3));
  EXPECT_EQ(resumed.microSteps(), c.stopAfter % 3);
  feed(resumed, data, c.stopAfter, total);

  EXPECT_EQ(resumed.step(), straight.step());
  EXPECT_EQ(resumed.microSteps(), straight.microSteps());
  auto expected = snapshotGlobals(straight);
  auto actual = snapshotGlobals(resumed);
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i)
    EXPECT_TRUE(actual[i].second == expected[i].second)
        << "global '" << expected[i].first << "' differs after resuming";
}

INSTANTIATE_TEST_SUITE_P(
    Artifacts, ResumeTest,
    ::testing::Values(ResumeCase{"SgdMidWindow", CLEAVE_FAKE_SGD, 4},
                      ResumeCase{"SgdWindowBoundary", CLEAVE_FAKE_SGD, 6},
                      ResumeCase{"AdamMidWindow", CLEAVE_FAKE_ADAM, 5},
                      ResumeCase{"AdamAtStart", CLEAVE_FAKE_ADAM, 0}),
    [](const ::testing::TestParamInfo<ResumeCase> &info) {
      return std::string(info.param.name);
    });

class CheckpointTest : public ::testing::Test {
protected:
  void SetUp() override {
    dir = makeTempDir("ckpt");
    path = dir + "/model.ckpt";
    session.setHyperparameter("lr", 0.25);
    feed(session, data, 0, 5);
    session.saveCheckpoint(path);
    saved = snapshotGlobals(session);
  }

  /// Trains on, so that the session differs from the checkpoint.
  void moveOn() {
    feed(session, data, 5, 8);
    ASSERT_NE(snapshotGlobals(session), saved);
  }

  Artifact sgd = Artifact::load(CLEAVE_FAKE_SGD);
  Session session{sgd, seeded(31)};
  Data data = makeData(8 * kMicroBatch, 31);
  std::string dir, path;
  std::vector<std::pair<std::string, std::string>> saved;
};

TEST_F(CheckpointTest, LoadRestoresTheSavedState) {
  moveOn();
  session.setHyperparameter("lr", 1.0);
  session.loadCheckpoint(path);
  EXPECT_EQ(snapshotGlobals(session), saved);
  EXPECT_DOUBLE_EQ(session.hyperparameter("lr"), 0.25);
  EXPECT_FALSE(fileExists(path + ".tmp"));
}

TEST_F(CheckpointTest, RefusesACheckpointOfAnotherModel) {
  Session other(Artifact::load(CLEAVE_FAKE_ADAM), seeded(1));
  auto before = snapshotGlobals(other);
  CallResult r =
      result(cleave_session_load_checkpoint(other.get(), path.c_str()));
  EXPECT_EQ(r.status, CLEAVE_INVALID_CHECKPOINT);
  EXPECT_NE(r.message.find("model.ckpt: written by a session of a different "
                           "model (manifest hash"),
            std::string::npos)
      << r.message;
  EXPECT_EQ(snapshotGlobals(other), before);
}

TEST_F(CheckpointTest, RefusesCorruptTruncatedAndForeignFiles) {
  moveOn();
  auto state = snapshotGlobals(session);
  std::string good = readFile(path);
  struct Case {
    std::string bytes;
    cleave_status status;
    std::string message;
  };
  // The layout of docs/design/runtime.md: the first blob (fc.weight) starts
  // at the first multiple of 64 after the header and the index.
  uint64_t indexBytes = 0;
  std::memcpy(&indexBytes, good.data() + 16, sizeof(indexBytes));
  size_t dataStart = (64 + indexBytes + 63) / 64 * 64;
  std::string flippedData = good;
  flippedData[dataStart + 1] ^= 0x10;
  std::string flippedIndex = good;
  flippedIndex[80] ^= 0x01;
  std::string flippedHeader = good;
  flippedHeader[17] ^= 0x01; // index size
  // A header from the future, with a valid CRC: refused for its version.
  // Another format version with a valid header CRC: a later one, and 1,
  // whose model identity was another hash.
  auto withVersion = [&](char version) {
    std::string file = good;
    file[8] = version;
    uint32_t crc =
        uint32_t(::crc32(0, reinterpret_cast<const Bytef *>(file.data()), 36));
    std::memcpy(file.data() + 36, &crc, sizeof(crc));
    return file;
  };
  std::string futureVersion = withVersion(4), pastVersion = withVersion(2);
  std::vector<Case> cases = {
      {good.substr(0, good.size() / 2), CLEAVE_INVALID_CHECKPOINT,
       "truncated checkpoint (" + std::to_string(good.size() / 2) + " bytes"},
      {good.substr(0, 40), CLEAVE_INVALID_CHECKPOINT,
       "truncated checkpoint (40 bytes, the header alone has 64)"},
      {good + "x", CLEAVE_INVALID_CHECKPOINT,
       "corrupt checkpoint (the file has"},
      {flippedData, CLEAVE_INVALID_CHECKPOINT,
       "corrupt checkpoint (global 'fc.weight' fails its CRC32 check)"},
      {flippedIndex, CLEAVE_INVALID_CHECKPOINT,
       "corrupt checkpoint (the index fails its CRC32 check)"},
      {flippedHeader, CLEAVE_INVALID_CHECKPOINT,
       "corrupt checkpoint (the header fails its CRC32 check)"},
      {futureVersion, CLEAVE_INVALID_CHECKPOINT,
       "checkpoint format version 4, this runtime reads version 3"},
      {pastVersion, CLEAVE_INVALID_CHECKPOINT,
       "checkpoint format version 2, this runtime reads version 3"},
      {"", CLEAVE_INVALID_CHECKPOINT, "not a Cleave checkpoint (bad magic)"},
      {"PK\x03\x04 some zip file", CLEAVE_INVALID_CHECKPOINT,
       "not a Cleave checkpoint (bad magic)"},
  };
  for (const Case &c : cases) {
    std::string bad = dir + "/bad.ckpt";
    writeFile(bad, c.bytes);
    CallResult r =
        result(cleave_session_load_checkpoint(session.get(), bad.c_str()));
    EXPECT_EQ(r.status, c.status) << c.message;
    EXPECT_NE(r.message.find(c.message), std::string::npos)
        << "got: " << r.message << "\nwant: " << c.message;
    EXPECT_EQ(r.message.rfind(bad + ": ", 0), 0u) << r.message;
    EXPECT_EQ(snapshotGlobals(session), state) << "a failed load changed state";
  }
  CallResult missing = result(cleave_session_load_checkpoint(
      session.get(), (dir + "/nonexistent.ckpt").c_str()));
  EXPECT_EQ(missing.status, CLEAVE_IO_ERROR);
  EXPECT_NE(missing.message.find("cannot open (No such file or directory)"),
            std::string::npos)
      << missing.message;
}

TEST_F(CheckpointTest, RefusesWindowCountersNoSessionCanHave) {
  // Well-formed files (every CRC right) whose counters are out of range: a
  // negative train.micro_steps would stretch the window silently.
  moveOn();
  auto state = snapshotGlobals(session);
  const int64_t n = session.accumulation();
  for (auto [microSteps, step] : {std::pair<int64_t, int64_t>{-1, 0},
                                  {n, 0},
                                  {0, -5}}) {
    Session forger(sgd, seeded(31));
    forger.writeGlobal("train.micro_steps", std::vector<int64_t>{microSteps});
    forger.writeGlobal("train.step", std::vector<int64_t>{step});
    std::string bad = dir + "/counters.ckpt";
    forger.saveCheckpoint(bad);
    CallResult r =
        result(cleave_session_load_checkpoint(session.get(), bad.c_str()));
    EXPECT_EQ(r.status, CLEAVE_INVALID_CHECKPOINT) << r.message;
    EXPECT_EQ(r.message, bad + ": train.micro_steps is " +
                             std::to_string(microSteps) + " and train.step " +
                             std::to_string(step) + ", expected 0 to " +
                             std::to_string(n - 1) +
                             " micro-steps (the accumulation count is " +
                             std::to_string(n) + ") and a non-negative step");
    EXPECT_EQ(snapshotGlobals(session), state) << "a failed load changed state";
  }
}

TEST_F(CheckpointTest, AFailedWriteLeavesThePreviousCheckpointIntact) {
  moveOn();
  // The temporary file cannot be created: a directory is in its way.
  std::filesystem::create_directory(path + ".tmp");
  CallResult r =
      result(cleave_session_save_checkpoint(session.get(), path.c_str()));
  EXPECT_EQ(r.status, CLEAVE_IO_ERROR);
  EXPECT_NE(r.message.find("model.ckpt.tmp: cannot create (Is a directory)"),
            std::string::npos)
      << r.message;
  std::filesystem::remove(path + ".tmp");

  Session check(sgd, seeded(0));
  check.loadCheckpoint(path);
  EXPECT_EQ(snapshotGlobals(check), saved);
}

TEST_F(CheckpointTest, AWriteThatFailsMidwayLeavesThePreviousCheckpointIntact) {
  moveOn();
  std::string before = readFile(path);
  // The file size limit makes write() fail with EFBIG part-way through the
  // data (SIGXFSZ, which would kill the process, is ignored meanwhile).
  struct rlimit old;
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  struct rlimit small = old;
  small.rlim_cur = before.size() / 2;
  void (*oldHandler)(int) = ::signal(SIGXFSZ, SIG_IGN);
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  CallResult r =
      result(cleave_session_save_checkpoint(session.get(), path.c_str()));
  ::setrlimit(RLIMIT_FSIZE, &old);
  ::signal(SIGXFSZ, oldHandler);

  EXPECT_EQ(r.status, CLEAVE_IO_ERROR);
  EXPECT_NE(r.message.find("model.ckpt.tmp: cannot write (File too large)"),
            std::string::npos)
      << r.message;
  EXPECT_FALSE(fileExists(path + ".tmp")) << "the partial file was left behind";
  EXPECT_EQ(readFile(path), before);
  Session check(sgd, seeded(0));
  check.loadCheckpoint(path);
  EXPECT_EQ(snapshotGlobals(check), saved);
}

TEST_F(CheckpointTest, SavingReplacesTheFileAndIsReproducible) {
  moveOn();
  session.saveCheckpoint(path);
  std::string first = readFile(path);
  session.saveCheckpoint(path);
  EXPECT_EQ(readFile(path), first) << "checkpoints of one state differ";
  Session check(sgd, seeded(0));
  check.loadCheckpoint(path);
  EXPECT_EQ(snapshotGlobals(check), snapshotGlobals(session));
}

TEST_F(CheckpointTest, UserStateCanBeErased) {
  session.setUserState("position", "120");
  session.saveCheckpoint(path);
  session.eraseUserState("position");
  CallResult r = result(
      cleave_session_user_state(session.get(), "position", nullptr, nullptr));
  EXPECT_EQ(r.status, CLEAVE_INVALID_ARGUMENT);
  const void *value = nullptr;
  size_t bytes = 0;
  r = result(
      cleave_session_user_state(session.get(), "position", &value, &bytes));
  EXPECT_EQ(r.status, CLEAVE_NOT_FOUND);
  EXPECT_EQ(r.message, "no user state under key 'position'");
  session.loadCheckpoint(path);
  EXPECT_EQ(session.userState("position"), "120");
}

TEST_F(CheckpointTest, UserStateIsReadableWithoutASession) {
  session.setUserState("artifact", std::string("/a/b\0c", 6));
  session.saveCheckpoint(path);
  size_t bytes = 0;
  ASSERT_EQ(cleave_checkpoint_user_state(path.c_str(), "artifact", nullptr, 0,
                                         &bytes),
            CLEAVE_OK);
  EXPECT_EQ(bytes, 6u);
  std::string value(bytes, '?');
  ASSERT_EQ(cleave_checkpoint_user_state(path.c_str(), "artifact", value.data(),
                                         value.size(), &bytes),
            CLEAVE_OK);
  EXPECT_EQ(value, std::string("/a/b\0c", 6));

  CallResult r = result(cleave_checkpoint_user_state(
      path.c_str(), "absent", value.data(), value.size(), &bytes));
  EXPECT_EQ(r.status, CLEAVE_NOT_FOUND);
  EXPECT_EQ(r.message, path + ": no user-state key 'absent'");

  // The file is verified as a load verifies it.
  std::string bytesOnDisk = readFile(path);
  bytesOnDisk[bytesOnDisk.size() / 2] ^= 0x10;
  std::string corrupt = dir + "/corrupt.ckpt";
  writeFile(corrupt, bytesOnDisk);
  r = result(cleave_checkpoint_user_state(corrupt.c_str(), "artifact",
                                          value.data(), value.size(), &bytes));
  EXPECT_EQ(r.status, CLEAVE_INVALID_CHECKPOINT) << r.message;
}

TEST_F(CheckpointTest, KeysOfTheDataParallelCheckpointAreReserved) {
  // A data-parallel checkpoint stores each rank's tag and image under them.
  for (const char *key : {"cleave.rank", "cleave.rank.1", "cleave.ranks"}) {
    CallResult r = result(
        cleave_session_set_user_state(session.get(), key, "x", 1));
    EXPECT_EQ(r.status, CLEAVE_INVALID_ARGUMENT) << key;
    EXPECT_EQ(r.message, std::string("user-state key '") + key +
                             "' is reserved for the session (keys starting "
                             "with 'cleave.rank')");
  }
  session.setUserState("cleave.other", "fine");
  EXPECT_EQ(session.userState("cleave.other"), "fine");
}

} // namespace
