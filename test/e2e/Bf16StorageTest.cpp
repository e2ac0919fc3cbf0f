//===- Bf16StorageTest.cpp - bf16 micro-steps convert nothing -------------===//
//
// With --precision=bf16 the loops that compute an activation also store its
// bf16 copy, and the kernels read it (docs/design/mixed-precision.md, "bf16
// storage"); the weights are converted once per parameter generation. So a
// micro-step that follows another in the same window runs no f32-to-bf16
// conversion at all: oneDNN's verbose log (ONEDNN_VERBOSE=1, set before
// the first primitive of this process) lists no reorder from an f32 to a
// bf16 memory, while the first micro-step after an apply step lists the
// weight copies (which shows the log is read).
//
//===----------------------------------------------------------------------===//

#include "E2ETestUtil.h"

#include "cleave/runtime.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <sstream>

namespace cleave::e2e {
namespace {

/// oneDNN reads ONEDNN_VERBOSE once, when it first creates a primitive:
/// before any test of this program runs.
class VerboseOneDnn : public ::testing::Environment {
public:
  void SetUp() override { setenv("ONEDNN_VERBOSE", "1", /*overwrite=*/1); }
};
const auto *const kVerbose =
    ::testing::AddGlobalTestEnvironment(new VerboseOneDnn);

/// The reorders oneDNN executed in `log` (its verbose lines) from an f32
/// memory to a bf16 one.
int conversionsToBf16(const std::string &log) {
  std::istringstream in(log);
  std::string line;
  int count = 0;
  while (std::getline(in, line))
    if (line.find("exec,cpu,reorder") != std::string::npos &&
        line.find("src_f32") != std::string::npos &&
        line.find("dst_bf16") != std::string::npos)
      ++count;
  return count;
}

/// How many primitives oneDNN executed in `log`.
int executions(const std::string &log) {
  std::istringstream in(log);
  std::string line;
  int count = 0;
  while (std::getline(in, line))
    if (line.find("onednn_verbose,exec,") != std::string::npos)
      ++count;
  return count;
}

struct StorageCase {
  const char *name;
  const char *artifact;
  /// Weight copies made once per generation: one per parameter a bf16
  /// matmul reads as B (its forward and backward-data GEMMs share it, in the
  /// parameter's own layout), one per blocked layout a bf16 convolution
  /// reads its weights in.
  int weightCopies;
};

void PrintTo(const StorageCase &c, std::ostream *os) { *os << c.name; }

class Bf16StorageTest : public ::testing::TestWithParam<StorageCase> {};

TEST_P(Bf16StorageTest, MicroStepsConvertNothingButTheWeightsOncePerWindow) {
  CLEAVE_E2E_SKIP_WITHOUT_BF16();
  cleave::Artifact artifact =
      cleave::Artifact::load(artifactPath(GetParam().artifact));
  ASSERT_EQ(artifact.accumulate(), 4);
  cleave::SessionOptions options;
  options.seed = 5;
  cleave::Session session(artifact, options);
  std::mt19937 rng(7);
  std::vector<float> images;
  std::vector<int64_t> labels;
  auto step = [&] {
    randomImagesAndLabels(rng, artifact.microBatch(), images, labels);
    cleave::Batch batch(artifact.microBatch());
    batch.add(images).add(labels);
    session.microStep(batch);
  };
  // A window and the first micro-step of the next: the primitives exist,
  // the weights of this generation are copied.
  for (int i = 0; i < 5; ++i)
    step();
  ::testing::internal::CaptureStdout();
  step();
  step();
  const std::string midWindow = ::testing::internal::GetCapturedStdout();
  EXPECT_GT(executions(midWindow), 0) << "no oneDNN verbose output";
  EXPECT_EQ(conversionsToBf16(midWindow), 0) << midWindow;

  // The apply step, then the next window's first micro-step: the weights
  // of the new generation, each converted once.
  ::testing::internal::CaptureStdout();
  step(); // the window's last micro-step, and its apply step
  step();
  const std::string newWindow = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(conversionsToBf16(newWindow), GetParam().weightCopies) << newWindow;
}

INSTANTIATE_TEST_SUITE_P(
    Artifacts, Bf16StorageTest,
    ::testing::Values(
        // fc1-fc3, read by their forward GEMMs and fc2's also by its
        // backward-data GEMM (the same copy). fc3's backward-data, whose
        // reduction is its 10 outputs, stays f32 (as do the weight
        // gradients, whose reduction is the micro-batch of 8), by the rule
        // of compiler/Conversion/Precision/Bf16Rule.h.
        StorageCase{"mlp", "mlp_b8_n4_momentum_bf16", 3},
        // conv2 forward and backward-data (two blocked layouts), fc1 (its
        // forward and backward-data GEMMs share a copy) and fc2; conv1, with
        // its single input channel, and fc2's backward-data (K = 10) stay
        // f32.
        StorageCase{"lenet", "lenet_b8_n4_momentum_bf16", 4}),
    [](const ::testing::TestParamInfo<StorageCase> &info) {
      return std::string(info.param.name);
    });

} // namespace
} // namespace cleave::e2e
