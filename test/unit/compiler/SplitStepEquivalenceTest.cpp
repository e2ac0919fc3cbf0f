//===- SplitStepEquivalenceTest.cpp - Window = union of samples -----------===//
//
// The semantics contract of the split: N micro-steps of b samples followed
// by one apply step give the parameters of one step on the N * b samples
// together. Checked in f64 with the reference interpreter, for an MLP and a
// small CNN, every optimizer, N = 1, 2 and 4, partial windows (k < N
// micro-batches, then apply), ragged micro-batches padded with zero-weight
// rows, and global-norm clipping, over several consecutive windows (so
// optimizer state and Adam's step count carry over).
//
// What a window runs is what the runtime does: @micro_step once per
// micro-batch (inputs x, labels and weights, with weight 0 on zero-filled
// padding rows), then @apply_step with the hyperparameters. The reference
// is the same pipeline compiled with micro-batch = the window's sample
// count and accumulate = 1, run as one micro-step and one apply on the
// concatenated batch, from identical initial parameters.
//
// Criterion: after every window, each parameter and optimizer-state tensor
// agrees in max norm, ||split - reference|| <= 1e-10 * ||reference||, the
// step counters are equal, and the accumulators are back to zero. The two
// runs differ only in how sums over samples are associated. A last test
// checks that the comparison does see a wrong sample count.
//
//===----------------------------------------------------------------------===//

#include "TestSupport.h"

#include "dialects/Train/IR/TrainDialect.h"
#include "dialects/Train/IR/TrainOps.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/xxhash.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <numeric>
#include <sstream>

using namespace mlir;
using namespace mlir::cleave;
using interp::DType;
using interp::State;
using interp::Tensor;

namespace {

//===----------------------------------------------------------------------===//
// Models
//===----------------------------------------------------------------------===//

/// 6-8-8-3 with ReLU.
constexpr const char *kMlp = R"mlir(
func.func @forward(
    %x: tensor<?x6xf64> {train.input = "x"},
    %w1: tensor<8x6xf64> {train.param = "fc1.weight", train.init = #train.init<kaiming_uniform>},
    %b1: tensor<8xf64> {train.param = "fc1.bias", train.init = #train.init<fan_in_uniform, 6.0>},
    %w2: tensor<8x8xf64> {train.param = "fc2.weight", train.init = #train.init<kaiming_uniform>},
    %b2: tensor<8xf64> {train.param = "fc2.bias", train.init = #train.init<fan_in_uniform, 8.0>},
    %w3: tensor<3x8xf64> {train.param = "fc3.weight", train.init = #train.init<kaiming_uniform>},
    %b3: tensor<3xf64> {train.param = "fc3.bias", train.init = #train.init<fan_in_uniform, 8.0>})
    -> tensor<?x3xf64> {
  %0 = nn.linear %x, %w1, %b1 : tensor<?x6xf64>, tensor<8x6xf64>, tensor<8xf64> -> tensor<?x8xf64>
  %1 = nn.relu %0 : tensor<?x8xf64>
  %2 = nn.linear %1, %w2, %b2 : tensor<?x8xf64>, tensor<8x8xf64>, tensor<8xf64> -> tensor<?x8xf64>
  %3 = nn.relu %2 : tensor<?x8xf64>
  %4 = nn.linear %3, %w3, %b3 : tensor<?x8xf64>, tensor<3x8xf64>, tensor<3xf64> -> tensor<?x3xf64>
  return %4 : tensor<?x3xf64>
}
)mlir";

/// conv(1 -> 2, 3x3, pad 1) -> relu -> max_pool 2 -> flatten -> linear.
constexpr const char *kCnn = R"mlir(
func.func @forward(
    %x: tensor<?x1x6x6xf64> {train.input = "x"},
    %w1: tensor<2x1x3x3xf64> {train.param = "conv.weight", train.init = #train.init<kaiming_uniform>},
    %b1: tensor<2xf64> {train.param = "conv.bias", train.init = #train.init<fan_in_uniform, 9.0>},
    %w2: tensor<3x18xf64> {train.param = "fc.weight", train.init = #train.init<kaiming_uniform>},
    %b2: tensor<3xf64> {train.param = "fc.bias", train.init = #train.init<fan_in_uniform, 18.0>})
    -> tensor<?x3xf64> {
  %0 = nn.conv2d %x, %w1, %b1 {padding = array<i64: 1, 1, 1, 1>} : tensor<?x1x6x6xf64>, tensor<2x1x3x3xf64>, tensor<2xf64> -> tensor<?x2x6x6xf64>
  %1 = nn.relu %0 : tensor<?x2x6x6xf64>
  %2 = nn.max_pool2d %1 {kernel_size = array<i64: 2, 2>} : tensor<?x2x6x6xf64> -> tensor<?x2x3x3xf64>
  %3 = nn.flatten %2 : tensor<?x2x3x3xf64> -> tensor<?x18xf64>
  %4 = nn.linear %3, %w2, %b2 : tensor<?x18xf64>, tensor<3x18xf64>, tensor<3xf64> -> tensor<?x3xf64>
  return %4 : tensor<?x3xf64>
}
)mlir";

constexpr int64_t kClasses = 3;

struct Model {
  const char *name;
  const char *source;
  /// The shape of one sample.
  std::vector<int64_t> sample;
};

const Model kModels[] = {{"mlp", kMlp, {6}}, {"cnn", kCnn, {1, 6, 6}}};

//===----------------------------------------------------------------------===//
// Scenarios
//===----------------------------------------------------------------------===//

struct Scenario {
  std::string name;
  const Model *model;
  /// Options of cleave-build-train-step (optimizer and hyperparameter
  /// defaults, which the test feeds to @apply_step).
  std::string optimizer;
  int64_t microBatch;
  int64_t accumulate;
  /// Per window, the number of real samples in each micro-batch.
  std::vector<std::vector<int64_t>> windows;
  /// The default clip norm when clipping is compiled in (0: none).
  double clipNorm = 0;
};

void PrintTo(const Scenario &s, std::ostream *os) { *os << s.name; }

std::vector<Scenario> allScenarios() {
  struct Optimizer {
    const char *name, *options;
  };
  const Optimizer optimizers[] = {
      {"sgd", "optimizer=sgd lr=0.1 weight-decay=0.01"},
      {"momentum", "optimizer=momentum lr=0.1 momentum=0.9 weight-decay=0.01"},
      {"nesterov", "optimizer=nesterov lr=0.1 momentum=0.9 weight-decay=0.01"},
      {"adam", "optimizer=adam lr=0.01 weight-decay=0.01"},
      {"adamw", "optimizer=adamw lr=0.01 weight-decay=0.1"},
      {"rmsprop", "optimizer=rmsprop lr=0.01 alpha=0.9 weight-decay=0.01"},
      {"adagrad",
       "optimizer=adagrad lr=0.05 lr-decay=0.1 eps=1e-10 weight-decay=0.01"},
      // Norm-based: each window's trust ratio must come from the whole
      // window's gradient.
      {"lamb", "optimizer=lamb lr=0.01 weight-decay=0.01 eps=1e-6"},
      {"lars", "optimizer=lars lr=0.1 momentum=0.9 eta=0.02 weight-decay=0.01"},
  };
  std::vector<Scenario> out;
  for (const Model &m : kModels) {
    for (const Optimizer &o : optimizers) {
      std::string base = std::string(m.name) + "_" + o.name;
      for (int64_t n : {1, 2, 4})
        out.push_back(
            {base + "_accumulate" + std::to_string(n), &m, o.options, 2, n,
             std::vector<std::vector<int64_t>>(3, std::vector<int64_t>(n, 2))});
      // Full, partial (k = 2, then k = 1) and full windows again.
      out.push_back({base + "_partial_window",
                     &m,
                     o.options,
                     2,
                     4,
                     {{2, 2, 2, 2}, {2, 2}, {2}, {2, 2, 2, 2}}});
      // Micro-batches of 3, 1 and 4 samples padded to 4, vs one batch of 8.
      out.push_back({base + "_ragged",
                     &m,
                     o.options,
                     4,
                     3,
                     {{3, 1, 4}, {4, 2, 1}, {1, 1, 1}}});
    }
    for (const Optimizer &o : {optimizers[0], optimizers[3]}) {
      std::string base = std::string(m.name) + "_" + o.name + "_clip";
      std::string options = std::string(o.options) + " clip-norm=0.01";
      out.push_back({base + "_accumulate2",
                     &m,
                     options,
                     2,
                     2,
                     {{2, 2}, {2, 2}, {2, 2}},
                     0.01});
      out.push_back({base + "_ragged",
                     &m,
                     options,
                     4,
                     3,
                     {{3, 1, 4}, {4, 2, 1}, {2}},
                     0.01});
    }
  }
  return out;
}

//===----------------------------------------------------------------------===//
// Running windows
//===----------------------------------------------------------------------===//

/// The model compiled through the whole pipeline.
OwningOpRef<ModuleOp> compile(MLIRContext *ctx, const Scenario &s,
                              int64_t microBatch, int64_t accumulate) {
  std::string errors;
  OwningOpRef<ModuleOp> module =
      test::parseModule(ctx, s.model->source, &errors);
  if (!module) {
    ADD_FAILURE() << errors;
    return nullptr;
  }
  std::string pipeline =
      "cleave-attach-loss{micro-batch=" + std::to_string(microBatch) +
      "}, cleave-autodiff, cleave-build-train-step{" + s.optimizer +
      "}, canonicalize, cse, cleave-split-step{accumulate=" +
      std::to_string(accumulate) + "}";
  if (failed(test::runPipeline(*module, pipeline, &errors))) {
    ADD_FAILURE() << pipeline << " failed:\n" << errors;
    return nullptr;
  }
  return module;
}

/// One window's data: `sizes[k]` real samples in micro-batch k.
struct WindowData {
  std::vector<int64_t> sizes;
  std::vector<double> x;
  std::vector<int64_t> labels;
  int64_t total() const {
    return std::accumulate(sizes.begin(), sizes.end(), int64_t(0));
  }
};

/// Runs `@micro_step` on samples [begin, begin + count) of `data`, padded
/// to `batch` with zero rows of weight `paddingWeight`. Returns the loss.
double microStep(ModuleOp module, State &state, const Model &model,
                 const WindowData &data, int64_t begin, int64_t count,
                 int64_t batch, double paddingWeight) {
  int64_t per = 1;
  for (int64_t d : model.sample)
    per *= d;
  SmallVector<int64_t> xShape = {batch};
  xShape.append(model.sample.begin(), model.sample.end());
  Tensor x(DType::f64, xShape), labels(DType::i64, {batch});
  Tensor weights = Tensor::splat(DType::f64, {batch}, paddingWeight);
  for (int64_t i = 0; i < count; ++i) {
    for (int64_t k = 0; k < per; ++k)
      x.setDouble(i * per + k, data.x[(begin + i) * per + k]);
    labels.setInt(i, data.labels[begin + i]);
    weights.setDouble(i, 1.0);
  }
  auto f = module.lookupSymbol<func::FuncOp>("micro_step");
  std::vector<Tensor> args;
  for (unsigned i = 0; i < f.getNumArguments(); ++i) {
    auto name =
        f.getArgAttrOfType<StringAttr>(i, train::TrainDialect::kInputAttr);
    if (name && name.getValue() == "x")
      args.push_back(x);
    else if (name && name.getValue() == "labels")
      args.push_back(labels);
    else if (name && name.getValue() == "weights")
      args.push_back(weights);
    else
      ADD_FAILURE() << "unexpected @micro_step argument #" << i;
  }
  std::vector<Tensor> r = test::run(module, "micro_step", args, state);
  return r.empty() ? NAN : r[0].getDouble(0);
}

/// Runs `@apply_step` with every hyperparameter at its compiled default.
void applyStep(ModuleOp module, State &state) {
  auto f = module.lookupSymbol<func::FuncOp>("apply_step");
  std::vector<Tensor> args;
  for (unsigned i = 0; i < f.getNumArguments(); ++i) {
    auto value =
        f.getArgAttrOfType<FloatAttr>(i, train::TrainDialect::kDefaultAttr);
    auto type = cast<RankedTensorType>(f.getArgumentTypes()[i]);
    ASSERT_TRUE(value) << "hyperparameter #" << i << " has no default";
    args.push_back(Tensor::scalar(*interp::getDType(type.getElementType()),
                                  value.getValueAsDouble()));
  }
  test::run(module, "apply_step", args, state);
}

/// The globals of `kinds` in `module`.
std::vector<train::GlobalOp> globalsOf(ModuleOp module,
                                       ArrayRef<train::GlobalKind> kinds) {
  std::vector<train::GlobalOp> out;
  for (auto g : module.getOps<train::GlobalOp>())
    if (llvm::is_contained(kinds, g.getKind()))
      out.push_back(g);
  return out;
}

/// ||a - b||_inf / ||b||_inf.
double relativeError(const Tensor &a, const Tensor &b) {
  double diff = 0, norm = 0;
  for (int64_t i = 0; i < b.getNumElements(); ++i) {
    diff = std::max(diff, std::fabs(a.getDouble(i) - b.getDouble(i)));
    norm = std::max(norm, std::fabs(b.getDouble(i)));
  }
  return norm == 0 ? diff : diff / norm;
}

/// The L2 norm of the window's normalised gradient, from the accumulators.
double windowGradientNorm(ModuleOp module, const State &state) {
  double samples = state.lookup("train.samples")->getDouble(0), sq = 0;
  for (train::GlobalOp g :
       globalsOf(module, {train::GlobalKind::accumulator})) {
    if (!g.getOf())
      continue;
    const Tensor &acc = *state.lookup(g.getSymName());
    for (int64_t i = 0; i < acc.getNumElements(); ++i)
      sq += std::pow(acc.getDouble(i) / samples, 2);
  }
  return std::sqrt(sq);
}

/// How far a split run strayed from its reference, over all windows.
struct Outcome {
  /// Worst ||split - reference|| / ||reference|| over parameters and
  /// optimizer state, and where it happened.
  double maxError = 0;
  std::string worst;
  /// Worst relative difference of the window losses.
  double maxLossError = 0;
  /// Problems that are not a matter of tolerance.
  std::vector<std::string> mismatches;
  /// The smallest ratio of the window's gradient norm to the clip norm.
  double minClipRatio = INFINITY;
};

/// Runs every window of `s` split and as one batch. Padding rows get
/// `paddingWeight` (0 is correct; anything else must be detected).
void runScenario(const Scenario &s, double paddingWeight, Outcome &out) {
  auto ctx = test::makeContext();
  OwningOpRef<ModuleOp> split =
      compile(ctx.get(), s, s.microBatch, s.accumulate);
  ASSERT_TRUE(split);
  // One reference module per window size; they share the state layout.
  std::map<int64_t, OwningOpRef<ModuleOp>> references;
  for (const auto &window : s.windows) {
    ASSERT_LE(static_cast<int64_t>(window.size()), s.accumulate);
    int64_t total = std::accumulate(window.begin(), window.end(), int64_t(0));
    if (!references.count(total)) {
      references[total] = compile(ctx.get(), s, total, 1);
      ASSERT_TRUE(references[total]);
    }
  }

  FailureOr<State> splitInit = State::fromModule(*split);
  FailureOr<State> refInit = State::fromModule(*references.begin()->second);
  ASSERT_TRUE(succeeded(splitInit) && succeeded(refInit));
  State splitState = std::move(*splitInit), refState = std::move(*refInit);
  ASSERT_EQ(splitState.getNames(), refState.getNames());

  std::mt19937_64 rng(llvm::xxh3_64bits(s.name));
  for (train::GlobalOp g : globalsOf(*split, {train::GlobalKind::param})) {
    RankedTensorType type = g.getTensorType();
    double bound =
        type.getRank() > 1
            ? 1.0 /
                  std::sqrt(double(type.getNumElements() / type.getDimSize(0)))
            : 0.5;
    Tensor value =
        test::randomTensor(rng, DType::f64, type.getShape(), -bound, bound);
    splitState.set(g.getSymName(), value);
    refState.set(g.getSymName(), value);
  }

  int64_t per = 1;
  for (int64_t d : s.model->sample)
    per *= d;
  for (auto [w, sizes] : llvm::enumerate(s.windows)) {
    std::string where = "window " + std::to_string(w) + ", ";
    WindowData data{sizes, {}, {}};
    data.x = test::uniform(rng, data.total() * per, -1, 1);
    for (double u : test::uniform(rng, data.total(), 0, kClasses))
      data.labels.push_back(static_cast<int64_t>(u));

    double splitLoss = 0;
    int64_t begin = 0;
    for (int64_t count : sizes) {
      splitLoss += microStep(*split, splitState, *s.model, data, begin, count,
                             s.microBatch, paddingWeight);
      begin += count;
    }
    if (s.clipNorm > 0)
      out.minClipRatio =
          std::min(out.minClipRatio,
                   windowGradientNorm(*split, splitState) / s.clipNorm);
    applyStep(*split, splitState);

    ModuleOp ref = *references[data.total()];
    double refLoss = microStep(ref, refState, *s.model, data, 0, data.total(),
                               data.total(), 0);
    applyStep(ref, refState);
    ASSERT_FALSE(::testing::Test::HasFailure());

    // Both are the sum of the window's per-sample losses.
    out.maxLossError = std::max(
        out.maxLossError, std::fabs(splitLoss - refLoss) / std::fabs(refLoss));
    for (train::GlobalOp g :
         globalsOf(*split, {train::GlobalKind::param, train::GlobalKind::state,
                            train::GlobalKind::counter,
                            train::GlobalKind::accumulator})) {
      std::string name = g.getSymName().str();
      const Tensor *a = splitState.lookup(name), *b = refState.lookup(name);
      ASSERT_TRUE(a && b) << name;
      switch (g.getKind()) {
      case train::GlobalKind::counter:
        if (a->getInt(0) != b->getInt(0))
          out.mismatches.push_back(where + name + " differs");
        break;
      case train::GlobalKind::accumulator:
        if (relativeError(*a, Tensor(a->getDType(), a->getShape())) != 0)
          out.mismatches.push_back(where + name + " is not zero after apply");
        break;
      default:
        if (double e = relativeError(*a, *b);
            e > out.maxError || out.worst.empty()) {
          out.maxError = std::max(out.maxError, e);
          out.worst = where + name;
        }
      }
    }
    if (splitState.lookup("train.step")->getInt(0) != int64_t(w) + 1)
      out.mismatches.push_back(where + "not one optimizer step per window");
  }
}

class SplitStepEquivalence : public ::testing::TestWithParam<Scenario> {};

TEST_P(SplitStepEquivalence, WindowMatchesOneBigBatch) {
  const Scenario &s = GetParam();
  Outcome out;
  runScenario(s, /*paddingWeight=*/0, out);
  if (HasFatalFailure())
    return;
  EXPECT_LE(out.maxError, 1e-10) << "worst at " << out.worst;
  EXPECT_LE(out.maxLossError, 1e-12);
  EXPECT_TRUE(out.mismatches.empty()) << llvm::join(out.mismatches, "\n");
  // Clipping must be active for the comparison to test it.
  if (s.clipNorm > 0) {
    EXPECT_GT(out.minClipRatio, 2);
  }
  std::ostringstream error;
  error << out.maxError;
  RecordProperty("max_relative_error", error.str());
}

INSTANTIATE_TEST_SUITE_P(Pipeline, SplitStepEquivalence,
                         ::testing::ValuesIn(allScenarios()),
                         [](const ::testing::TestParamInfo<Scenario> &info) {
                           return info.param.name;
                         });

TEST(SplitStepEquivalenceSensitivity, PaddingCountedAsSamplesIsDetected) {
  // The comparison must see a wrong sample count: padding rows weighted 1
  // (zero inputs, label 0) add fake samples to the window.
  std::vector<Scenario> all = allScenarios();
  auto it = llvm::find_if(
      all, [](const Scenario &s) { return s.name == "mlp_sgd_ragged"; });
  ASSERT_NE(it, all.end());
  Outcome out;
  runScenario(*it, /*paddingWeight=*/1, out);
  if (HasFatalFailure())
    return;
  EXPECT_GT(out.maxError, 1e-4);
  EXPECT_GT(out.maxLossError, 1e-4);
}

} // namespace
