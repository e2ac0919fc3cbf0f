//===- SessionTest.cpp - Training semantics of the session ----------------===//
//
// The window contract of docs/design/runtime.md, checked on the fake
// artifacts through the public C++ wrapper: initialisation, padding, the
// automatic apply at N, N and hyperparameters changed at run time, flush,
// evaluation, train_batch, and agreement with a double-precision reference.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

using namespace cleave;
using namespace cleave::test;

namespace {

class SessionTest : public ::testing::Test {
protected:
  Artifact sgd = Artifact::load(CLEAVE_FAKE_SGD);
  Artifact adam = Artifact::load(CLEAVE_FAKE_ADAM);

  static SessionOptions seeded(uint64_t seed, int64_t accumulate = 0) {
    SessionOptions o;
    o.seed = seed;
    o.accumulate = accumulate;
    return o;
  }
};

bool sameBytes(const std::vector<float> &a, const std::vector<float> &b) {
  return a.size() == b.size() &&
         std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

//===----------------------------------------------------------------------===//
// Initialisation
//===----------------------------------------------------------------------===//

TEST_F(SessionTest, InitialisesParametersWithPyTorchBoundsAndZeroState) {
  Session s(sgd, seeded(3));
  double bound = 1.0 / std::sqrt(double(kFeatures));
  std::vector<float> w = s.readGlobal<float>("fc.weight");
  std::vector<float> b = s.readGlobal<float>("fc.bias");
  ASSERT_EQ(w.size(), size_t(kClasses * kFeatures));
  for (float v : w) {
    EXPECT_GE(v, -bound);
    EXPECT_LE(v, bound);
  }
  for (float v : b) {
    EXPECT_GE(v, -bound);
    EXPECT_LE(v, bound);
  }
  // Random draws, not a constant fill.
  EXPECT_NE(w[0], w[1]);
  for (const char *name : {"fc.weight.grad", "fc.bias.grad",
                           "fc.weight.momentum", "train.samples"})
    for (float v : s.readGlobal<float>(name))
      EXPECT_EQ(v, 0.0f) << name;
  EXPECT_EQ(s.step(), 0);
  EXPECT_EQ(s.microSteps(), 0);
  EXPECT_EQ(s.accumulation(), 4); // the manifest's default
  EXPECT_EQ(s.seed(), 3u);
  EXPECT_TRUE(std::isnan(s.lastLoss()));
}

TEST_F(SessionTest, SameSeedSameParametersOtherSeedOtherParameters) {
  Session a(sgd, seeded(11)), b(sgd, seeded(11)), c(sgd, seeded(12));
  EXPECT_TRUE(sameBytes(a.readGlobal<float>("fc.weight"),
                        b.readGlobal<float>("fc.weight")));
  EXPECT_FALSE(sameBytes(a.readGlobal<float>("fc.weight"),
                         c.readGlobal<float>("fc.weight")));
}

/// The generator and every initialiser are specified exactly
/// (Initializers.h): this recomputes the fake Adam model's initial values
/// from std::mt19937_64 and the documented formulas, globals in manifest
/// order, and requires bit equality.
TEST_F(SessionTest, InitialValuesFollowTheDocumentedGenerator) {
  const uint64_t seed = 2024;
  Session s(adam, seeded(seed));
  std::mt19937_64 engine(seed);
  auto u01 = [&] { return double(engine() >> 11) * 0x1.0p-53; };
  auto uniform = [&](double lo, double hi) { return lo + (hi - lo) * u01(); };
  auto normal = [&](double mean, double std) {
    double u1 = u01(), u2 = u01();
    return mean + std * std::sqrt(-2.0 * std::log(1.0 - u1)) *
                      std::cos(6.283185307179586476925286766559 * u2);
  };
  double bound = 1.0 / std::sqrt(double(kFeatures));
  std::vector<float> w(kClasses * kFeatures), b(kClasses), n(2000);
  std::vector<double> u(2000);
  for (float &v : w)
    v = float(uniform(-bound, bound));
  for (float &v : b)
    v = float(uniform(-bound, bound));
  for (double &v : u)
    v = uniform(-2, 3);
  for (float &v : n)
    v = float(normal(1, 2));

  EXPECT_TRUE(sameBytes(s.readGlobal<float>("fc.weight"), w));
  EXPECT_TRUE(sameBytes(s.readGlobal<float>("fc.bias"), b));
  EXPECT_EQ(s.readGlobal<double>("aux.uniform"), u);
  EXPECT_TRUE(sameBytes(s.readGlobal<float>("aux.normal"), n));
  EXPECT_EQ(s.readGlobal<float>("fc.scale"),
            (std::vector<float>{0.5f, -1.25f, 3.f, 8.f}));
  EXPECT_EQ(s.readGlobal<double>("aux.ones"), (std::vector<double>(3, 1.0)));
  EXPECT_EQ(s.readGlobal<int32_t>("aux.constant"),
            (std::vector<int32_t>(4, -5)));
  EXPECT_EQ(s.readGlobal<int64_t>("train.rng"), (std::vector<int64_t>{7}));
  EXPECT_TRUE(s.readGlobal<float>("aux.empty").empty());

  // The draws also have the distributions they claim.
  double mean = 0, var = 0;
  for (float v : n)
    mean += v / 2000.0;
  for (float v : n)
    var += (v - mean) * (v - mean) / 1999.0;
  EXPECT_NEAR(mean, 1.0, 0.15);
  EXPECT_NEAR(std::sqrt(var), 2.0, 0.15);
  for (double v : u) {
    EXPECT_GE(v, -2.0);
    EXPECT_LT(v, 3.0);
  }
}

TEST_F(SessionTest, WrittenValuesReplaceInitialValues) {
  Session s(sgd, seeded(0));
  std::vector<float> w(kClasses * kFeatures);
  for (size_t i = 0; i < w.size(); ++i)
    w[i] = 0.01f * float(i);
  s.writeGlobal("fc.weight", w);
  EXPECT_EQ(s.readGlobal<float>("fc.weight"), w);
}

//===----------------------------------------------------------------------===//
// The window
//===----------------------------------------------------------------------===//

TEST_F(SessionTest, AppliesByItselfWhenTheWindowIsFull) {
  Session s(sgd, seeded(1));
  Data data = makeData(4 * kMicroBatch, 1);
  std::vector<float> w0 = s.readGlobal<float>("fc.weight");
  for (int64_t i = 0; i < 3; ++i) {
    s.microStep(data.slice(i * kMicroBatch, kMicroBatch).batch());
    EXPECT_EQ(s.microSteps(), i + 1);
    EXPECT_EQ(s.step(), 0);
  }
  EXPECT_EQ(s.readGlobal<float>("fc.weight"), w0);
  EXPECT_EQ(s.readGlobal<float>("train.samples")[0], 3.0f * kMicroBatch);
  s.microStep(data.slice(3 * kMicroBatch, kMicroBatch).batch());
  EXPECT_EQ(s.microSteps(), 0);
  EXPECT_EQ(s.step(), 1);
  EXPECT_NE(s.readGlobal<float>("fc.weight"), w0);
  EXPECT_EQ(s.readGlobal<float>("train.samples")[0], 0.0f);
  for (float g : s.readGlobal<float>("fc.weight.grad"))
    EXPECT_EQ(g, 0.0f);
}

TEST_F(SessionTest, MatchesADoublePrecisionReference) {
  Session s(sgd, seeded(5, /*accumulate=*/3));
  ReferenceSgd ref = ReferenceSgd::fromSession(s);
  // Ragged micro-batches, including short ones that the runtime pads.
  const int64_t sizes[] = {8, 3, 5, 1, 8, 2};
  Data all = makeData(27, 5);
  int64_t start = 0;
  for (int window = 0; window < 2; ++window) {
    int64_t windowStart = start;
    for (int i = 0; i < 3; ++i) {
      int64_t k = sizes[window * 3 + i];
      Data mb = all.slice(start, k);
      double expectedLoss = ref.meanLoss(mb);
      s.microStep(mb.batch());
      EXPECT_NEAR(s.lastLoss(), expectedLoss,
                  1e-5 * std::max(1.0, expectedLoss));
      start += k;
    }
    ref.step(all.slice(windowStart, start - windowStart), 0.1, 0.9);
    EXPECT_EQ(s.step(), window + 1);
    EXPECT_LT(maxRelativeError(s.readGlobal<float>("fc.weight"), ref.weight),
              1e-5);
    EXPECT_LT(maxRelativeError(s.readGlobal<float>("fc.bias"), ref.bias), 1e-5);
    EXPECT_LT(maxRelativeError(s.readGlobal<float>("fc.weight.momentum"),
                               ref.weightMomentum),
              1e-5);
  }
}

TEST_F(SessionTest, NMicroBatchesEqualOneBatchOfNTimesTheSamples) {
  // B = 8 allows one micro-batch of 4 x 2 samples.
  Data data = makeData(kMicroBatch, 9);
  Session window(sgd, seeded(4, /*accumulate=*/4));
  Session single(sgd, seeded(4, /*accumulate=*/1));
  for (int64_t i = 0; i < 4; ++i)
    window.microStep(data.slice(2 * i, 2).batch());
  single.microStep(data.batch());
  ASSERT_EQ(window.step(), 1);
  ASSERT_EQ(single.step(), 1);
  for (const char *name : {"fc.weight", "fc.bias", "fc.weight.momentum"}) {
    std::vector<float> a = window.readGlobal<float>(name);
    std::vector<float> b = single.readGlobal<float>(name);
    EXPECT_LT(maxRelativeError(a, std::vector<double>(b.begin(), b.end())),
              1e-5)
        << name;
  }
}

TEST_F(SessionTest, RaggedWindowIsWeightedBySamples) {
  Data data = makeData(kMicroBatch, 10);
  Session ragged(sgd, seeded(6, /*accumulate=*/2));
  Session single(sgd, seeded(6, /*accumulate=*/1));
  ragged.microStep(data.slice(0, 3).batch());
  ragged.microStep(data.slice(3, 5).batch());
  single.microStep(data.batch());
  std::vector<float> a = ragged.readGlobal<float>("fc.weight");
  std::vector<float> b = single.readGlobal<float>("fc.weight");
  EXPECT_LT(maxRelativeError(a, std::vector<double>(b.begin(), b.end())), 1e-5);
}

TEST_F(SessionTest, LoweringNBelowTheWindowAppliesAtOnce) {
  Session s(sgd, seeded(2));
  Data data = makeData(3 * kMicroBatch, 2);
  for (int64_t i = 0; i < 3; ++i)
    s.microStep(data.slice(i * kMicroBatch, kMicroBatch).batch());
  ASSERT_EQ(s.microSteps(), 3);
  s.setAccumulation(8); // larger: nothing happens
  EXPECT_EQ(s.step(), 0);
  s.setAccumulation(2); // 3 >= 2: the window is over
  EXPECT_EQ(s.accumulation(), 2);
  EXPECT_EQ(s.step(), 1);
  EXPECT_EQ(s.microSteps(), 0);
  // And the new N holds from now on.
  s.microStep(data.slice(0, 4).batch());
  EXPECT_EQ(s.step(), 1);
  s.microStep(data.slice(4, 4).batch());
  EXPECT_EQ(s.step(), 2);
}

TEST_F(SessionTest, FlushAppliesAPartialWindowAsItsOwnUpdate) {
  Data data = makeData(2 * kMicroBatch, 3);
  Session flushed(sgd, seeded(7, /*accumulate=*/4));
  Session exact(sgd, seeded(7, /*accumulate=*/2));
  for (int64_t i = 0; i < 2; ++i) {
    flushed.microStep(data.slice(i * kMicroBatch, kMicroBatch).batch());
    exact.microStep(data.slice(i * kMicroBatch, kMicroBatch).batch());
  }
  EXPECT_EQ(flushed.step(), 0);
  flushed.flush();
  EXPECT_EQ(flushed.step(), 1);
  EXPECT_EQ(flushed.microSteps(), 0);
  EXPECT_EQ(flushed.readGlobal<float>("fc.weight"),
            exact.readGlobal<float>("fc.weight"));
  // Flushing an empty window changes nothing.
  std::vector<float> w = flushed.readGlobal<float>("fc.weight");
  flushed.flush();
  EXPECT_EQ(flushed.step(), 1);
  EXPECT_EQ(flushed.readGlobal<float>("fc.weight"), w);
}

TEST_F(SessionTest, HyperparametersChangeAtRunTime) {
  Session s(sgd, seeded(8, /*accumulate=*/1));
  EXPECT_DOUBLE_EQ(s.hyperparameter("lr"), 0.1);
  EXPECT_DOUBLE_EQ(s.hyperparameter("momentum"), 0.9);
  Data data = makeData(3 * kMicroBatch, 8);

  s.setHyperparameter("lr", 0.0);
  std::vector<float> w = s.readGlobal<float>("fc.weight");
  s.microStep(data.slice(0, kMicroBatch).batch());
  EXPECT_EQ(s.step(), 1);
  EXPECT_EQ(s.readGlobal<float>("fc.weight"), w) << "lr = 0 moved the weights";

  s.setHyperparameter("lr", 0.5);
  s.setHyperparameter("momentum", 0.0);
  EXPECT_DOUBLE_EQ(s.hyperparameter("lr"), 0.5);
  ReferenceSgd ref = ReferenceSgd::fromSession(s);
  Data mb = data.slice(kMicroBatch, kMicroBatch);
  s.microStep(mb.batch());
  ref.step(mb, 0.5, 0.0);
  EXPECT_LT(maxRelativeError(s.readGlobal<float>("fc.weight"), ref.weight),
            1e-5);
}

TEST_F(SessionTest, EvalComputesThePredictionAndPadsWithTheLastSample) {
  Session s(sgd, seeded(9));
  Data data = makeData(3, 9);
  Batch batch(3);
  batch.add(data.x).add(nullptr, 0); // eval_step does not read the labels
  s.eval(batch);
  std::vector<float> pred = s.output<float>("eval_step", "prediction");
  ASSERT_EQ(pred.size(), size_t(kMicroBatch * kClasses));
  std::vector<float> w = s.readGlobal<float>("fc.weight");
  std::vector<float> b = s.readGlobal<float>("fc.bias");
  for (int64_t i = 0; i < kMicroBatch; ++i)
    for (int64_t c = 0; c < kClasses; ++c) {
      double z = b[c];
      for (int64_t d = 0; d < kFeatures; ++d)
        // Padding rows repeat the last real sample.
        z += double(w[c * kFeatures + d]) *
             data.x[std::min<int64_t>(i, 2) * kFeatures + d];
      EXPECT_NEAR(pred[i * kClasses + c], z, 1e-5) << i << "," << c;
    }
  // Evaluation trains nothing.
  EXPECT_EQ(s.microSteps(), 0);
}

TEST_F(SessionTest, TrainBatchEqualsFeedingItsMicroBatchesOneByOne) {
  Data data = makeData(21, 12);
  Session whole(sgd, seeded(13));
  Session manual(sgd, seeded(13));
  whole.trainBatch(data.batch(), 4);
  double lossSum = 0;
  for (int64_t start = 0; start < 21; start += 4) {
    int64_t k = std::min<int64_t>(4, 21 - start);
    manual.microStep(data.slice(start, k).batch());
    lossSum += manual.lastLoss() * double(k);
  }
  // 6 micro-batches with N = 4: one apply, two pending micro-steps.
  EXPECT_EQ(whole.step(), 1);
  EXPECT_EQ(whole.microSteps(), 2);
  EXPECT_EQ(snapshotGlobals(whole), snapshotGlobals(manual));
  EXPECT_NEAR(whole.lastLoss(), lossSum / 21.0, 1e-6);
}

TEST_F(SessionTest, CopiesMisalignedInputsAndReadsAlignedOnesInPlace) {
  Data data = makeData(kMicroBatch, 14);
  // Full micro-batches: an aligned buffer is passed through, a misaligned one
  // must be copied (the fake poisons its loss on a misaligned pointer).
  alignas(64) static float aligned[kMicroBatch * kFeatures];
  static float storage[kMicroBatch * kFeatures + 16];
  float *misaligned = storage + 1;
  if (reinterpret_cast<uintptr_t>(misaligned) % 64 == 0)
    misaligned = storage + 2;
  std::memcpy(aligned, data.x.data(), sizeof(aligned));
  std::memcpy(misaligned, data.x.data(), sizeof(aligned));

  Session a(sgd, seeded(15)), b(sgd, seeded(15));
  Batch alignedBatch(kMicroBatch), misalignedBatch(kMicroBatch);
  alignedBatch.add(aligned, sizeof(aligned)).add(data.labels);
  misalignedBatch.add(misaligned, sizeof(aligned)).add(data.labels);
  a.microStep(alignedBatch);
  b.microStep(misalignedBatch);
  EXPECT_TRUE(std::isfinite(a.lastLoss()));
  EXPECT_EQ(a.lastLoss(), b.lastLoss());
  EXPECT_EQ(snapshotGlobals(a), snapshotGlobals(b));
}

TEST_F(SessionTest, AdamArtifactTrainsAndAdvancesItsDropoutCounter) {
  Session s(adam, seeded(16));
  EXPECT_EQ(s.accumulation(), 2);
  EXPECT_DOUBLE_EQ(s.hyperparameter("eps"), 1e-8);
  Data data = makeData(4 * kMicroBatch, 16);
  std::vector<float> w0 = s.readGlobal<float>("fc.weight");
  for (int64_t i = 0; i < 2; ++i)
    s.microStep(data.slice(i * kMicroBatch, kMicroBatch).batch());
  ASSERT_EQ(s.step(), 1);
  // Adam's first step moves each coordinate by lr * (sign(g) + wd * w):
  // bias correction makes m / sqrt(v) = g / |g| at step 1.
  std::vector<float> w1 = s.readGlobal<float>("fc.weight");
  for (size_t i = 0; i < w1.size(); ++i)
    EXPECT_NEAR(std::fabs(w1[i] - w0[i]), 0.01, 0.01 * 0.01 * 0.5) << i;
  for (int64_t i = 2; i < 4; ++i)
    s.microStep(data.slice(i * kMicroBatch, kMicroBatch).batch());
  EXPECT_EQ(s.step(), 2);
  EXPECT_EQ(s.readGlobal<int64_t>("train.rng")[0], 7 + 4);
  for (float v : s.readGlobal<float>("fc.weight"))
    EXPECT_TRUE(std::isfinite(v));
}

TEST_F(SessionTest, TrainingReducesTheLoss) {
  Session s(sgd, seeded(17, /*accumulate=*/2));
  s.setHyperparameter("lr", 0.5);
  Data data = makeData(2 * kMicroBatch, 17);
  s.trainBatch(data.batch(), kMicroBatch);
  double first = s.lastLoss();
  for (int epoch = 0; epoch < 30; ++epoch)
    s.trainBatch(data.batch(), kMicroBatch);
  EXPECT_LT(s.lastLoss(), 0.8 * first);
}

TEST_F(SessionTest, OptionsForThreadsAndDistributionInOneProcess) {
  SessionOptions o = seeded(18);
  o.numThreads = 1;
  o.distributed = true; // no MPI launcher: a single rank
  Session s(sgd, o);
  EXPECT_EQ(s.rank(), std::make_pair(0, 1));
  Session plain(sgd, seeded(18));
  Data data = makeData(4 * kMicroBatch, 18);
  s.trainBatch(data.batch(), kMicroBatch);
  plain.trainBatch(data.batch(), kMicroBatch);
  EXPECT_EQ(s.step(), 1);
  EXPECT_EQ(snapshotGlobals(s), snapshotGlobals(plain));
}

TEST_F(SessionTest, TwoSessionsOfOneArtifactAreIndependent) {
  Session a(sgd, seeded(19)), b(sgd, seeded(19));
  Data data = makeData(4 * kMicroBatch, 19);
  a.trainBatch(data.batch(), kMicroBatch);
  EXPECT_EQ(a.step(), 1);
  EXPECT_EQ(b.step(), 0);
  EXPECT_NE(a.readGlobal<float>("fc.weight"), b.readGlobal<float>("fc.weight"));
}

} // namespace
