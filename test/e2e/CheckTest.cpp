//===- CheckTest.cpp - cleave-check's comparison and exit statuses --------===//
//
// The checker library on artifacts the build compiled (test/e2e/
// CMakeLists.txt): a true pair agrees, a pair whose training differs is a
// mismatch, pairs that are not N micro-batches against one batch are
// refused, random data is reproducible, a dataset is read as cleave-train
// reads it. And the cleave-check executable's exit statuses: 2 for a check
// that cannot run, 3 for a model whose split is observable. The output
// format is checked by test/e2e/cleave-check.mlir.
//
//===----------------------------------------------------------------------===//

#include "E2ETestUtil.h"

#include "Checker.h"

#include <gtest/gtest.h>

#include <cmath>

namespace cleave::e2e {
namespace {

using checker::CheckOptions;
using checker::CheckResult;
using checker::Verdict;

CheckOptions pair(const std::string &accumulating, const std::string &reference,
                  int64_t windows = 3) {
  CheckOptions o;
  o.accumulating = artifactPath(accumulating);
  o.reference = artifactPath(reference);
  o.windows = windows;
  return o;
}

TEST(CheckTest, RelativeDifferenceIsMaxNormWise) {
  EXPECT_EQ(checker::relativeDifference({1, -2, 4}, {1, -2, 4}), 0);
  // max |a - b| = 0.5, max |a|, |b| = 4.
  EXPECT_DOUBLE_EQ(checker::relativeDifference({1, -2, 4}, {1.5, -2, 4}),
                   0.125);
  // A difference on a tiny element counts against the tensor's scale.
  EXPECT_DOUBLE_EQ(checker::relativeDifference({1e-9, 1}, {-1e-9, 1}), 2e-9);
  EXPECT_EQ(checker::relativeDifference({0, 0}, {0, 0}), 0);
  EXPECT_TRUE(std::isnan(checker::relativeDifference({NAN, 1}, {0, 1})));
}

TEST(CheckTest, AccumulatedAndBigBatchRunsAgree) {
  for (const char *model : {"mlp", "lenet"}) {
    std::string m = model;
    CheckResult r =
        checker::compareArtifacts(pair(m + "_b8_n4_sgd", m + "_b32_n1_sgd"));
    EXPECT_EQ(r.verdict, Verdict::Agree) << model << ": " << r.largest;
    EXPECT_LE(r.largest, checker::kDefaultRtol) << model;
    EXPECT_TRUE(r.parametersMoved) << model;
    EXPECT_EQ(r.microBatch, 8);
    EXPECT_EQ(r.accumulate, 4);
    EXPECT_TRUE(r.splitObservable.empty());
    ASSERT_GE(r.differences.size(), 2u);
    EXPECT_EQ(r.differences[0].name, "loss");
    for (const checker::Difference &d : r.differences)
      EXPECT_EQ(d.perWindow.size(), 3u) << d.name;
    ASSERT_EQ(r.lossAccumulating.size(), 3u);
    // The losses are real (not NaN, not equal across windows of different
    // samples).
    EXPECT_TRUE(std::isfinite(r.lossAccumulating[0]));
    EXPECT_NE(r.lossAccumulating[0], r.lossAccumulating[1]);
    EXPECT_EQ(checker::exitStatus(r.verdict), 0);
  }
}

/// Momentum's first step is SGD's (the velocity starts at the gradient), its
/// later ones are not: the checker sees the runs agree after window 1 and
/// part after window 2, and calls it a mismatch (no op of the MLP makes the
/// split observable).
TEST(CheckTest, DetectsARealMismatch) {
  CheckResult r = checker::compareArtifacts(
      pair("mlp_b8_n4_sgd", "mlp_b32_n1_momentum", /*windows=*/2));
  EXPECT_EQ(r.verdict, Verdict::Mismatch);
  EXPECT_EQ(checker::exitStatus(r.verdict), 1);
  EXPECT_GT(r.largest, 100 * checker::kDefaultRtol);
  EXPECT_EQ(r.largestWindow, 1);
  for (const checker::Difference &d : r.differences)
    EXPECT_LE(d.perWindow[0], checker::kDefaultRtol) << d.name;
}

TEST(CheckTest, RefusesArtifactsThatAreNoPair) {
  // The reference must take N*B = 32 samples.
  CheckOptions o = pair("mlp_b8_n4_sgd", "mlp_b8_n4_momentum");
  try {
    checker::compareArtifacts(o);
    FAIL() << "no error";
  } catch (const std::exception &e) {
    EXPECT_NE(std::string(e.what()).find("so the reference must take 32"),
              std::string::npos)
        << e.what();
  }
  // Different models.
  o = pair("lenet_b8_n4_sgd", "mlp_b32_n1_sgd");
  EXPECT_THROW(checker::compareArtifacts(o), std::exception);
  // runCheck turns the error into one line and status 2.
  std::FILE *out = std::tmpfile(), *err = std::tmpfile();
  EXPECT_EQ(checker::runCheck(o, out, err), 2);
  std::fclose(out);
  std::fclose(err);
}

TEST(CheckTest, RandomDataFollowsTheSeed) {
  CheckOptions o = pair("mlp_b8_n4_sgd", "mlp_b32_n1_sgd", 1);
  CheckResult a = checker::compareArtifacts(o);
  CheckResult b = checker::compareArtifacts(o);
  o.seed = 1;
  CheckResult c = checker::compareArtifacts(o);
  EXPECT_EQ(a.lossAccumulating, b.lossAccumulating);
  EXPECT_EQ(a.lossReference, b.lossReference);
  EXPECT_NE(a.lossAccumulating, c.lossAccumulating);
}

TEST(CheckTest, ReadsADatasetAsCleaveTrainDoes) {
  TempDir dir;
  writeDataset(dir.path(), /*trainCount=*/64, /*testCount=*/8, 28, 28,
               /*gzip=*/false);
  CheckOptions o = pair("mlp_b8_n4_sgd", "mlp_b32_n1_sgd", 2);
  o.data = dir.path();
  CheckResult r = checker::compareArtifacts(o);
  EXPECT_EQ(r.verdict, Verdict::Agree) << r.largest;
  EXPECT_NE(r.data.find("(idx"), std::string::npos) << r.data;
  // Two windows need 64 samples; three need more than the split has.
  o.windows = 3;
  try {
    checker::compareArtifacts(o);
    FAIL() << "no error";
  } catch (const std::exception &e) {
    EXPECT_NE(std::string(e.what()).find("the training split has 64 samples"),
              std::string::npos)
        << e.what();
  }
}

/// The executable: the exit statuses that the lit test cannot tell apart.
TEST(CheckToolTest, ExitStatuses) {
  TempDir dir;
  const std::string exe = CLEAVE_CHECK_EXE;
  const std::string mlp = std::string(CLEAVE_SOURCE_DIR) + "/examples/mlp.mlir";
  ProcessResult r = run({exe, mlp, "--micro-batch=8", "--accumulate=1"}, dir);
  EXPECT_TRUE(r.exited && r.exitCode == 2) << r.describe();
  r = run({exe, mlp, "--micro-batch=8", "--accumulate=2", "--optimizer=lion"},
          dir);
  EXPECT_TRUE(r.exited && r.exitCode == 2) << r.describe();
  r = run({exe, dir / "missing.mlir", "--micro-batch=8", "--accumulate=2"},
          dir);
  EXPECT_TRUE(r.exited && r.exitCode == 2) << r.describe();
  EXPECT_NE(r.err.find("missing.mlir"), std::string::npos) << r.err;

  // Dropout: a new mask per micro-batch. Reported, different, status 3.
  writeFile(dir / "dropout.mlir", R"mlir(
func.func @forward(
    %x: tensor<?x8xf32> {train.input = "x"},
    %w: tensor<4x8xf32> {train.param = "fc.weight", train.init = #train.init<kaiming_uniform>},
    %b: tensor<4xf32> {train.param = "fc.bias", train.init = #train.init<zeros>},
    %seed: tensor<i64> {train.rng}) -> tensor<?x4xf32> {
  %0 = nn.dropout %x, %seed {ratio = 0.5} : tensor<?x8xf32>, tensor<i64> -> tensor<?x8xf32>
  %1 = nn.linear %0, %w, %b : tensor<?x8xf32>, tensor<4x8xf32>, tensor<4xf32> -> tensor<?x4xf32>
  return %1 : tensor<?x4xf32>
}
)mlir");
  r = run({exe, dir / "dropout.mlir", "--micro-batch=4", "--accumulate=2",
           "--windows=1"},
          dir);
  EXPECT_TRUE(r.exited && r.exitCode == 3) << r.describe();
  EXPECT_NE(r.out.find("split-observable: nn.dropout"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("differ as expected"), std::string::npos) << r.out;
}

} // namespace
} // namespace cleave::e2e
