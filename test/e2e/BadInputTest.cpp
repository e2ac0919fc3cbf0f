//===- BadInputTest.cpp - cleave-train and cleave-run refuse bad input ----===//
//
// Every bad input (missing or corrupt data files, an image size the artifact
// does not take, a truncated, damaged or foreign artifact, bad flags, a
// checkpoint directory in the way) makes the tool exit with a non-zero code,
// by exit() rather than a signal, within a time limit (no hang), and with
// exactly one line on stderr that says what is wrong and where.
//
//===----------------------------------------------------------------------===//

#include "E2ETestUtil.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>

namespace cleave::e2e {
namespace {

class BadInputTest : public ::testing::Test {
protected:
  void SetUp() override {
    data_ = dir_ / "data";
    writeDataset(data_, 64, 32, 28, 28, /*gzip=*/true);
    model_ = artifactPath("mlp_b32_n2_sgd");
  }

  /// cleave-train on `model` with `flags`, on the synthetic data unless a
  /// flag names other data.
  ProcessResult train(const std::string &model,
                      std::vector<std::string> flags = {}) {
    std::vector<std::string> argv = {CLEAVE_TRAIN_EXE, model};
    bool hasData = false;
    for (const std::string &f : flags)
      hasData |= f.rfind("--data", 0) == 0;
    if (!hasData)
      argv.push_back("--data=" + data_);
    argv.insert(argv.end(), flags.begin(), flags.end());
    return run(argv, dir_, {}, 120);
  }

  /// The tool failed cleanly with one stderr line matching `pattern`
  /// (std::regex, ECMAScript, searched anywhere in the line).
  void expectError(const ProcessResult &r, const std::string &pattern,
                   const std::string &tool = "cleave-train") {
    ASSERT_FALSE(r.timedOut) << r.describe();
    ASSERT_TRUE(r.exited) << "not a clean exit: " << r.describe();
    EXPECT_NE(r.exitCode, 0) << r.describe();
    ASSERT_FALSE(r.err.empty()) << r.describe();
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1)
        << "expected exactly one line on stderr: " << r.describe();
    EXPECT_EQ(r.err.rfind(tool + ": error: ", 0), 0u) << r.describe();
    const std::string line = r.err.substr(0, r.err.size() - 1);
    EXPECT_TRUE(std::regex_search(line, std::regex(pattern)))
        << "stderr does not match /" << pattern << "/: " << r.err;
  }

  /// Replaces one data file with `bytes`.
  void replaceDataFile(const std::string &name, const std::string &bytes) {
    std::filesystem::remove(data_ + "/" + name + ".gz");
    writeFile(data_ + "/" + name, bytes);
  }

  TempDir dir_;
  std::string data_, model_;
};

//===----------------------------------------------------------------------===//
// Data
//===----------------------------------------------------------------------===//

TEST_F(BadInputTest, MissingDataDirectory) {
  expectError(train(model_, {"--data=" + (dir_ / "nowhere")}),
              "nowhere: cannot open the dataset \\(No such file or "
              "directory\\)$");
}

TEST_F(BadInputTest, DataPathIsAFile) {
  expectError(train(model_, {"--data=" + model_}),
              "mlp_b32_n2_sgd.cleave: not a dataset \\(expected an \\.npz "
              "file");
}

TEST_F(BadInputTest, MissingDataFile) {
  std::filesystem::remove(data_ + "/t10k-labels-idx1-ubyte.gz");
  expectError(train(model_),
              "t10k-labels-idx1-ubyte\\[\\.gz\\]: no such file \\(expected "
              "the idx files of MNIST or Fashion-MNIST in .*data\\)$");
}

TEST_F(BadInputTest, CorruptGzip) {
  std::string gz = readFile(data_ + "/train-images-idx3-ubyte.gz");
  for (size_t i = gz.size() / 2; i < gz.size() / 2 + 32; ++i)
    gz[i] = char(gz[i] ^ 0x5a);
  writeFile(data_ + "/train-images-idx3-ubyte.gz", gz);
  expectError(train(model_),
              "train-images-idx3-ubyte\\.gz: corrupt gzip data \\(.+\\)$");
}

TEST_F(BadInputTest, TruncatedGzip) {
  std::string gz = readFile(data_ + "/train-labels-idx1-ubyte.gz");
  writeFile(data_ + "/train-labels-idx1-ubyte.gz", gz.substr(0, gz.size() - 9));
  expectError(train(model_),
              "train-labels-idx1-ubyte\\.gz: truncated gzip data");
}

TEST_F(BadInputTest, TruncatedIdx) {
  IdxFiles f = makeIdx(64, 28, 28);
  replaceDataFile("train-images-idx3-ubyte",
                  f.images.substr(0, f.images.size() - 100));
  expectError(train(model_),
              "train-images-idx3-ubyte: truncated idx file \\(images of shape "
              "64x28x28 need 50192 bytes, the file has 50092\\)$");
}

TEST_F(BadInputTest, WrongMagic) {
  IdxFiles f = makeIdx(64, 28, 28);
  replaceDataFile("train-labels-idx1-ubyte", f.images);
  expectError(train(model_),
              "train-labels-idx1-ubyte: bad idx magic 0x00000803, expected "
              "0x00000801 \\(unsigned-byte labels with 1 dimension\\)$");
}

TEST_F(BadInputTest, LabelOutOfRange) {
  IdxFiles f = makeIdx(32, 28, 28);
  f.labels[8 + 5] = char(12);
  replaceDataFile("t10k-labels-idx1-ubyte", f.labels);
  expectError(train(model_),
              "t10k-labels-idx1-ubyte: label 12 of sample 5 is out of range "
              "\\(expected 0 to 9\\)$");
}

TEST_F(BadInputTest, LabelCountMismatch) {
  replaceDataFile("train-labels-idx1-ubyte", makeIdx(63, 28, 28).labels);
  expectError(train(model_), "63 labels for the 64 samples of .*"
                             "train-images-idx3-ubyte\\.gz");
}

TEST_F(BadInputTest, WrongImageSize) {
  writeDataset(data_, 64, 32, 32, 32, /*gzip=*/true);
  expectError(train(model_),
              "mlp_b32_n2_sgd\\.cleave: input 'image' takes "
              "samples of \\[1, 28, 28\\], the data has "
              "\\[32, 32\\] \\(.*train-images-idx3-ubyte\\.gz\\)$");
}

//===----------------------------------------------------------------------===//
// Artifacts
//===----------------------------------------------------------------------===//

TEST_F(BadInputTest, NonexistentArtifact) {
  expectError(train(dir_ / "absent.cleave"),
              "absent\\.cleave: cannot open \\(No such file or directory\\)$");
}

TEST_F(BadInputTest, TruncatedArtifact) {
  std::string bytes = readFile(model_);
  writeFile(dir_ / "truncated.cleave", bytes.substr(0, bytes.size() / 2));
  expectError(train(dir_ / "truncated.cleave"),
              "truncated\\.cleave: truncated or corrupt ELF file");
}

TEST_F(BadInputTest, DamagedArtifact) {
  // Bytes of the code changed (the ELF structure intact): the seal's
  // checksum catches it before any of the code is loaded or run.
  std::string bytes = readFile(model_);
  ASSERT_GT(bytes.size(), 4096u);
  for (size_t i = bytes.size() / 2; i < bytes.size() / 2 + 2000; ++i)
    bytes[i] = char(bytes[i] ^ 0x5a);
  writeFile(dir_ / "damaged.cleave", bytes);
  expectError(train(dir_ / "damaged.cleave"),
              "damaged\\.cleave: damaged artifact \\(its contents do not match "
              "the checksum written by cleave-compile\\); compile it again$");
}

TEST_F(BadInputTest, ArtifactWithoutItsSeal) {
  // The last 24 bytes (the seal) cut off, or bytes appended after it.
  std::string bytes = readFile(model_);
  writeFile(dir_ / "unsealed.cleave", bytes.substr(0, bytes.size() - 24));
  expectError(train(dir_ / "unsealed.cleave"),
              "unsealed\\.cleave: damaged artifact \\(the checksum seal "
              "cleave-compile writes at its end is missing\\)");
  writeFile(dir_ / "appended.cleave", bytes + "trailing bytes");
  expectError(train(dir_ / "appended.cleave"),
              "appended\\.cleave: damaged artifact \\(the checksum seal");
}

TEST_F(BadInputTest, ArtifactWithAnOlderSeal) {
  // The seal of cleave-compile before it used CRC-32: refused as such, not
  // as a damaged file.
  std::string bytes = readFile(model_);
  ASSERT_EQ(bytes.substr(bytes.size() - 24, 8), "CLVSEAL2");
  bytes.replace(bytes.size() - 24, 8, "CLVSEAL1");
  writeFile(dir_ / "old.cleave", bytes);
  expectError(train(dir_ / "old.cleave"),
              "old\\.cleave: compiled by an older cleave-compile \\(its seal "
              "is of another kind\\); compile it again$");
}

TEST_F(BadInputTest, ArtifactForAnotherCpu) {
  // Code for a feature this machine lacks would die with SIGILL in the
  // middle of a step: the loader refuses it first. XOP (AMD Bulldozer only)
  // and FMA4 are in no CPU this runs on; AMX in few.
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line, flags;
  while (std::getline(cpuinfo, line))
    if (line.rfind("flags", 0) == 0) {
      flags = line + " ";
      break;
    }
  ASSERT_FALSE(flags.empty()) << "no flags line in /proc/cpuinfo";
  std::string feature;
  for (auto [llvmName, linuxName] :
       {std::pair{"xop", "xop"}, {"fma4", "fma4"}, {"amx-tile", "amx_tile"}})
    if (flags.find(" " + std::string(linuxName) + " ") == std::string::npos) {
      feature = llvmName;
      break;
    }
  ASSERT_FALSE(feature.empty()) << "this CPU has every candidate: " << flags;
  const std::string artifact = dir_ / "other-cpu.cleave";
  ProcessResult compiled =
      run({CLEAVE_COMPILE_EXE, CLEAVE_SOURCE_DIR "/examples/mlp.mlir",
           "--micro-batch=32", "--target-features=+" + feature, "-o", artifact},
          dir_, {}, 300);
  ASSERT_TRUE(compiled.exited && compiled.exitCode == 0) << compiled.describe();
  expectError(train(artifact),
              "other-cpu\\.cleave: compiled for CPU '[^']+', whose features "
              "([a-z0-9.-]+, )*" +
                  feature +
                  "(, [a-z0-9.-]+)* this machine's CPU lacks; compile it with "
                  "a --target-cpu this machine has");
}

TEST_F(BadInputTest, ForeignSharedObject) {
  // A real shared library that is not an artifact.
  std::string foreign;
  for (const char *candidate :
       {"/lib/x86_64-linux-gnu/libz.so.1",
        "/usr/lib/x86_64-linux-gnu/libz.so.1", "/lib64/libz.so.1"})
    if (std::filesystem::exists(candidate)) {
      foreign = candidate;
      break;
    }
  ASSERT_FALSE(foreign.empty()) << "no libz.so.1 to use as a foreign library";
  expectError(train(foreign), "libz\\.so\\.1: not a Cleave artifact \\(missing "
                              "symbol cleave_abi_version\\)$");
}

TEST_F(BadInputTest, NotAnElfFile) {
  writeFile(dir_ / "text.cleave", "this is not a shared object\n");
  expectError(train(dir_ / "text.cleave"),
              "text\\.cleave: not a Cleave artifact \\(not an ELF file\\)$");
}

//===----------------------------------------------------------------------===//
// Flags
//===----------------------------------------------------------------------===//

TEST_F(BadInputTest, UnknownFlag) {
  expectError(train(model_, {"--frobnicate=3"}),
              "unknown option '--frobnicate' \\(cleave-train --help lists the "
              "options\\)$");
}

TEST_F(BadInputTest, ZeroEpochs) {
  expectError(train(model_, {"--epochs=0"}),
              "--epochs must be at least 1 \\(got 0\\)$");
}

TEST_F(BadInputTest, NegativeAccumulate) {
  expectError(train(model_, {"--accumulate=-1"}),
              "--accumulate must be at least 1 \\(got -1\\)$");
}

TEST_F(BadInputTest, NonNumericLearningRate) {
  expectError(train(model_, {"--lr=abc"}),
              "invalid value 'abc' for --lr \\(expected a finite number\\)$");
}

TEST_F(BadInputTest, FlagWithoutValue) {
  expectError(train(model_, {"--epochs"}),
              "option --epochs needs a value \\(--epochs=VALUE\\)$");
}

TEST_F(BadInputTest, NoModel) {
  expectError(run({CLEAVE_TRAIN_EXE, "--epochs=1"}, dir_),
              "no model given \\(usage: cleave-train MODEL\\.cleave");
}

TEST_F(BadInputTest, ResumeWithoutCheckpointDirectory) {
  expectError(train(model_, {"--resume"}),
              "--resume needs --checkpoint-dir=DIR");
}

TEST_F(BadInputTest, UnknownHyperparameter) {
  expectError(train(model_, {"--hyper", "momentum=0.9"}),
              "mlp_b32_n2_sgd\\.cleave has no hyperparameter 'momentum' \\(it "
              "has: lr, weight_decay\\)$");
}

TEST_F(BadInputTest, CheckpointDirectoryOfAnotherRun) {
  std::filesystem::create_directories(dir_ / "ckpt");
  writeFile(dir_ / "ckpt/checkpoint-0000000004.ckpt", "old");
  expectError(train(model_, {"--checkpoint-dir=" + (dir_ / "ckpt")}),
              "ckpt already holds checkpoints \\(.*checkpoint-0000000004\\.ckpt"
              "\\); pass --resume to continue that run");
}

TEST_F(BadInputTest, CorruptCheckpoint) {
  std::filesystem::create_directories(dir_ / "ckpt");
  writeFile(dir_ / "ckpt/checkpoint-0000000004.ckpt",
            std::string("CLEAVECK") + std::string(100, '\x01'));
  expectError(
      train(model_, {"--checkpoint-dir=" + (dir_ / "ckpt"), "--resume"}),
      "checkpoint-0000000004\\.ckpt: ");
}

TEST_F(BadInputTest, UnwritableMetricsFile) {
  expectError(train(model_, {"--metrics=" + (dir_ / "no/such/dir/m.jsonl")}),
              "m\\.jsonl: cannot write the metrics file \\(No such file or "
              "directory\\)$");
}

//===----------------------------------------------------------------------===//
// cleave-run
//===----------------------------------------------------------------------===//

TEST_F(BadInputTest, RunUnknownEntry) {
  expectError(run({CLEAVE_RUN_EXE, model_, "--entry=apply"}, dir_),
              "invalid value 'apply' for --entry \\(expected eval_step or "
              "micro_step\\)$",
              "cleave-run");
}

TEST_F(BadInputTest, RunUnknownInput) {
  expectError(run({CLEAVE_RUN_EXE, model_, "--input", "pixels=1"}, dir_),
              "has no data input 'pixels' \\(its inputs: image, labels\\)$",
              "cleave-run");
}

TEST_F(BadInputTest, RunWrongNumberOfValues) {
  expectError(run({CLEAVE_RUN_EXE, model_, "--entry=micro_step", "--samples=2",
                   "--input", "labels=1,2,3"},
                  dir_),
              "--input labels: 3 values, expected 2 \\(or one for all\\)$",
              "cleave-run");
}

TEST_F(BadInputTest, RunInputFileOfTheWrongSize) {
  writeFile(dir_ / "image.bin", std::string(100, '\0'));
  expectError(run({CLEAVE_RUN_EXE, model_, "--samples=1", "--input",
                   "image=" + (dir_ / "image.bin")},
                  dir_),
              "--input image: .*image\\.bin has 100 bytes, expected 784 f32 "
              "values = 3136 bytes$",
              "cleave-run");
}

TEST_F(BadInputTest, RunForeignArtifact) {
  writeFile(dir_ / "text.cleave", "#!/bin/sh\n");
  expectError(run({CLEAVE_RUN_EXE, dir_ / "text.cleave"}, dir_),
              "not a Cleave artifact", "cleave-run");
}

} // namespace
} // namespace cleave::e2e
