//===- InferenceTest.cpp - Forward-only artifacts through the C API -------===//
//
// An artifact compiled with --inference (examples/mlp.mlir, micro-batch 8)
// has eval_step alone. Given the parameters a training session ends with,
// it evaluates exactly as that session's own eval_step does: the same
// model, the same kernels, only what serves training left out. Everything
// that trains is refused with a status naming why.
//
//===----------------------------------------------------------------------===//

#include "E2ETestUtil.h"

#include "cleave/runtime.hpp"

#include <gtest/gtest.h>

#include <random>

namespace cleave::e2e {
namespace {

constexpr int64_t kMicroBatch = 8;
constexpr int64_t kPixels = 28 * 28;

/// Expects `fn` to throw a cleave::Error with `status` whose message
/// contains `what`.
template <typename Fn>
void expectRefused(Fn fn, cleave_status status, const std::string &what) {
  try {
    fn();
    ADD_FAILURE() << "expected an error containing '" << what << "'";
  } catch (const cleave::Error &e) {
    EXPECT_EQ(e.status(), status) << e.what();
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

TEST(InferenceTest, EvaluatesAsTheTrainingSessionDoes) {
  cleave::Artifact trainArtifact =
      cleave::Artifact::load(artifactPath("mlp_b8_n4_sgd"));
  cleave::Artifact inferArtifact =
      cleave::Artifact::load(artifactPath("mlp_b8_inference"));
  ASSERT_FALSE(inferArtifact.hasEntry("micro_step"));
  ASSERT_FALSE(inferArtifact.hasEntry("apply_step"));
  ASSERT_TRUE(inferArtifact.hasEntry("eval_step"));
  EXPECT_TRUE(inferArtifact.hyperparameters().empty());
  // Parameters only: no optimizer state, accumulators or counters.
  for (const cleave::GlobalInfo &g : inferArtifact.globals())
    EXPECT_EQ(g.kind, CLEAVE_GLOBAL_PARAM) << g.tensor.name;

  std::mt19937 rng(7);
  std::vector<float> images;
  std::vector<int64_t> labels;
  cleave::Session training(trainArtifact);
  for (int step = 0; step < 8; ++step) {
    randomImagesAndLabels(rng, kMicroBatch, images, labels);
    training.microStep(cleave::Batch(kMicroBatch).add(images).add(labels));
  }
  ASSERT_EQ(training.step(), 2);

  cleave::Session inference(inferArtifact);
  for (const cleave::GlobalInfo &g : inferArtifact.globals())
    inference.writeGlobal(g.tensor.name,
                          training.readGlobal<float>(g.tensor.name));
  std::vector<int64_t> unusedLabels;
  randomImagesAndLabels(rng, kMicroBatch, images, unusedLabels);
  // A training artifact's batches carry every input, the labels too.
  training.eval(cleave::Batch(kMicroBatch).add(images).add(labels));
  inference.eval(cleave::Batch(kMicroBatch).add(images));
  std::vector<float> expected =
      training.output<float>("eval_step", "prediction");
  std::vector<float> got = inference.output<float>("eval_step", "prediction");
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_EQ(got[i], expected[i]) << "element " << i;
}

TEST(InferenceTest, RefusesToTrain) {
  cleave::Artifact artifact =
      cleave::Artifact::load(artifactPath("mlp_b8_inference"));
  cleave::Session session(artifact);
  std::vector<float> images(kMicroBatch * kPixels, 0.5f);
  cleave::Batch batch(kMicroBatch);
  batch.add(images);
  const std::string why = "an inference artifact (compiled forward-only) "
                          "cannot ";
  expectRefused([&] { session.microStep(batch); },
                CLEAVE_FAILED_PRECONDITION, why + "run a micro-step");
  expectRefused([&] { session.trainBatch(batch, kMicroBatch); },
                CLEAVE_FAILED_PRECONDITION, why + "train");
  expectRefused([&] { session.flush(); }, CLEAVE_FAILED_PRECONDITION,
                why + "apply a window");
  expectRefused([&] { session.setAccumulation(2); },
                CLEAVE_FAILED_PRECONDITION, why + "accumulate");
  TempDir dir;
  expectRefused([&] { session.saveCheckpoint(dir / "x.ckpt"); },
                CLEAVE_FAILED_PRECONDITION, why + "save a checkpoint");
  // Refusals leave the session usable.
  session.eval(batch);
  EXPECT_EQ(session.output<float>("eval_step", "prediction").size(),
            size_t(kMicroBatch * 10));
  EXPECT_EQ(session.step(), 0);
  EXPECT_EQ(session.microSteps(), 0);
}

} // namespace
} // namespace cleave::e2e
