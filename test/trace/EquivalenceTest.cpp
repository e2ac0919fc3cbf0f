//===- EquivalenceTest.cpp - The traced loop equals the compiled step -----===//
//
// The same model written twice: as nn MLIR (Inputs/*.mlir) compiled by
// cleave-compile with attach-loss, autodiff, build-train-step and split-step
// and trained by a runtime session, and as a traced C++ model trained by the
// RATEX loop. With full micro-batches, the loop's sum over N micro-batches
// of mean-loss / N is the window's mean loss, so both must end with the same
// parameters (float rounding aside: 1e-5 relative), through learning-rate
// changes. The two start from the same parameters because both draw them
// from the runtime's generator with the same seed, which is checked too.
//
//===----------------------------------------------------------------------===//

#include "TraceTestUtil.h"

#include <gtest/gtest.h>

#include <functional>
#include <memory>

namespace cleave::tracetest {
namespace {

constexpr int64_t kMicroBatch = 8;
constexpr int64_t kN = 4;
constexpr double kTolerance = 1e-5;
constexpr uint64_t kSeed = 3;

struct Case {
  const char *name;
  const char *artifact;
  /// Side of the square single-channel images.
  int64_t side;
  std::function<Sequential()> model;
  std::function<std::unique_ptr<Optimizer>(std::vector<Tensor>)> optimizer;
  /// The session's hyperparameters, the optimizer's equivalents.
  std::vector<std::pair<const char *, double>> hypers;
  /// The learning rate from the second window on.
  double laterLr;
};

std::string caseName(const ::testing::TestParamInfo<Case> &info) {
  return info.param.name;
}

/// How gtest (and so ctest's test list) shows a case.
void PrintTo(const Case &c, std::ostream *os) { *os << c.name; }

class EquivalenceTest : public ::testing::TestWithParam<Case> {};

TEST_P(EquivalenceTest, TracedLoopMatchesTheSession) {
  const Case &c = GetParam();
  resetTracer();
  Artifact artifact = Artifact::load(c.artifact);
  ASSERT_EQ(artifact.microBatch(), kMicroBatch);
  SessionOptions options;
  options.seed = kSeed;
  options.accumulate = kN;
  Session session(artifact, options);
  for (auto [name, value] : c.hypers)
    session.setHyperparameter(name, value);

  manual_seed(kSeed);
  Sequential model = c.model();
  std::vector<std::pair<std::string, Tensor>> params = model.namedParameters();
  std::vector<std::string> names;
  for (const GlobalInfo &g : artifact.globals())
    if (g.kind == CLEAVE_GLOBAL_PARAM)
      names.push_back(g.tensor.name);
  ASSERT_EQ(names.size(), params.size());
  // The same generator, seed and order: bit-identical initial parameters.
  for (size_t i = 0; i < params.size(); ++i)
    EXPECT_EQ(params[i].second.toFloatVector(),
              session.readGlobal<float>(names[i]))
        << names[i];

  std::unique_ptr<Optimizer> opt = c.optimizer(model.parameters());
  Data data = makeData(3 * kN * kMicroBatch, c.side * c.side, 3, 11);
  for (int64_t i = 0; i < 3 * kN; ++i) {
    if (i == kN) {
      session.setHyperparameter("lr", c.laterLr);
      opt->set_lr(c.laterLr);
    }
    Data batch = data.slice(i * kMicroBatch, kMicroBatch);
    Batch b(kMicroBatch);
    b.add(batch.x).add(batch.labels);
    session.microStep(b);

    Tensor loss =
        cross_entropy(model(images(batch, c.side)), labels(batch)) / kN;
    loss.backward();
    mark_step();
    if ((i + 1) % kN == 0) {
      opt->step();
      opt->zero_grad();
      mark_step();
    }
    EXPECT_NEAR(loss.item() * kN, session.lastLoss(), 1e-5) << "step " << i;
  }
  EXPECT_EQ(session.step(), 3);
  for (size_t i = 0; i < params.size(); ++i)
    EXPECT_LT(maxRelativeError(params[i].second.toFloatVector(),
                               session.readGlobal<float>(names[i])),
              kTolerance)
        << names[i];
  EXPECT_EQ(trace::stats().compilations, 2);
}

std::unique_ptr<Optimizer> sgd(std::vector<Tensor> p) {
  return std::make_unique<SGD>(std::move(p), 0.1);
}
std::unique_ptr<Optimizer> momentum(std::vector<Tensor> p) {
  return std::make_unique<SGD>(std::move(p), 0.1, 0.9);
}
/// eps 1e-4 rather than 1e-8: Adam amplifies float rounding of near-zero
/// gradients by lr / eps (test/e2e/EquivalenceTest.cpp explains).
std::unique_ptr<Optimizer> adam(std::vector<Tensor> p) {
  return std::make_unique<Adam>(std::move(p), 1e-2, 0.9, 0.999, 1e-4);
}

INSTANTIATE_TEST_SUITE_P(
    Models, EquivalenceTest,
    ::testing::Values(Case{"MlpSgd",
                           CLEAVE_TRACE_ARTIFACT_DIR "/mlp_sgd.cleave",
                           4,
                           [] { return makeMlp(); },
                           sgd,
                           {{"lr", 0.1}},
                           0.05},
                      Case{"MlpMomentum",
                           CLEAVE_TRACE_ARTIFACT_DIR "/mlp_momentum.cleave",
                           4,
                           [] { return makeMlp(); },
                           momentum,
                           {{"lr", 0.1}, {"momentum", 0.9}},
                           0.03},
                      Case{"MlpAdam",
                           CLEAVE_TRACE_ARTIFACT_DIR "/mlp_adam.cleave",
                           4,
                           [] { return makeMlp(); },
                           adam,
                           {{"lr", 1e-2}, {"eps", 1e-4}},
                           3e-3},
                      Case{"CnnMomentum",
                           CLEAVE_TRACE_ARTIFACT_DIR "/cnn_momentum.cleave",
                           6,
                           [] { return makeCnn(); },
                           momentum,
                           {{"lr", 0.1}, {"momentum", 0.9}},
                           0.03}),
    caseName);

} // namespace
} // namespace cleave::tracetest
