//===- BackendHarness.h - Compiled artifacts vs the reference interpreter -===//
//
// The machinery behind the back-end op tests: building small f32 models
// around the ops under test, compiling them twice (to split-level IR for the
// reference interpreter and through the CPU back end into an artifact that
// the runtime loads), driving both with the same state and data, and
// comparing every result the runtime exposes.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_TEST_UNIT_BACKEND_BACKENDHARNESS_H
#define CLEAVE_TEST_UNIT_BACKEND_BACKENDHARNESS_H

#include "compiler/Interpreter/Interpreter.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"

#include <functional>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace mlir::cleave::backend_test {

//===----------------------------------------------------------------------===//
// Models
//===----------------------------------------------------------------------===//

/// A data input the harness draws random values for.
struct InputSpec {
  std::string name;
  interp::DType dtype = interp::DType::f32;
  /// The shape of one sample (the input is [B, sample...]).
  std::vector<int64_t> sample;
  /// Floats: uniform in [lo, hi). Integers: uniform integers in [lo, hi).
  double lo = -1, hi = 1;
};

/// A model function `@forward` ready for the training pipeline, with the
/// inputs a micro-step reads.
struct Model {
  OwningOpRef<ModuleOp> module;
  int64_t batch = 0;
  std::vector<InputSpec> inputs;
};

/// A random size in [lo, hi].
int64_t randomDim(std::mt19937_64 &rng, int64_t lo, int64_t hi);

/// Builds `@forward` for `loss=none`: data inputs feed the ops under test,
/// every differentiable operand is a `train.param` with explicit random
/// values (`train.init = dense<...>`, so the artifact and the interpreter
/// start from identical state), and the prediction is the per-sample loss
/// `[B]`: for every observed tensor `y`, the sum over its non-batch
/// dimensions of `y * probe`, where `probe` is a random parameter of its
/// own. The probe's gradient is the weighted sum of `y` over the samples,
/// so comparing gradients compares every observed forward value too.
class ModelBuilder {
public:
  ModelBuilder(MLIRContext *ctx, std::mt19937_64 &rng, int64_t batch);

  OpBuilder &b() { return builder; }
  Location loc() const { return location; }
  int64_t batch() const { return batchSize; }
  std::mt19937_64 &rng() { return random; }
  /// A random size in [lo, hi].
  int64_t dim(int64_t lo, int64_t hi);

  /// An f32 input `[B, sample...]` with values uniform in [lo, hi).
  Value input(StringRef name, ArrayRef<int64_t> sample, double lo = -1,
              double hi = 1);
  /// An integer input `[B, sample...]` with values in [0, bound).
  Value indexInput(StringRef name, ArrayRef<int64_t> sample, int64_t bound,
                   bool i32 = false);
  /// A parameter with explicit random values uniform in [lo, hi).
  Value param(StringRef name, ArrayRef<int64_t> shape, double lo = -1,
              double hi = 1);
  /// A non-trainable buffer with explicit random values.
  Value buffer(StringRef name, ArrayRef<int64_t> shape, double lo, double hi);
  /// The dropout seed (`train.rng`).
  Value seed();

  /// Adds `sum over non-batch dims (y * probe)` to the per-sample loss;
  /// `y` is `[B, ...]`.
  void observe(StringRef name, Value y);
  /// Adds `sum(y * probe)` to every sample's loss; for values without a
  /// batch dimension (or whose batch dimension is not the first).
  void observeGlobal(StringRef name, Value y);
  /// Returns `v` as the new value of buffer `name` (running statistics).
  void updateBuffer(StringRef name, Value v);

  /// `x * s` for a fresh parameter `s` of `shape` with values in [lo, hi):
  /// makes a data-derived value differentiable, so that the op it feeds
  /// must also produce the gradient with respect to its input.
  Value scaled(StringRef name, Value x, ArrayRef<int64_t> shape,
               double lo = 0.5, double hi = 1.5);

  Model finish();

private:
  Value addArgument(Type type, ArrayRef<NamedAttribute> attrs);
  DenseElementsAttr randomValues(RankedTensorType type, double lo, double hi);

  MLIRContext *ctx;
  std::mt19937_64 &random;
  int64_t batchSize;
  Location location;
  OpBuilder builder;
  OwningOpRef<ModuleOp> module;
  func::FuncOp forward;
  std::vector<InputSpec> inputs;
  std::vector<DictionaryAttr> argAttrs;
  std::set<std::string> names;
  SmallVector<Value> batchTerms, globalTerms;
  SmallVector<std::pair<std::string, Value>> buffers;
};

//===----------------------------------------------------------------------===//
// Cases
//===----------------------------------------------------------------------===//

/// One artifact: a model, the training options it is compiled with and how
/// long it is driven.
struct Case {
  std::string name;
  /// Builds the model; shapes and values are drawn from `rng`.
  std::function<Model(MLIRContext *, std::mt19937_64 &rng)> build;
  std::string loss = "none";
  std::string optimizer = "sgd";
  double lr = 0.1, momentum = 0.9, weightDecay = 0.01, clipNorm = 0;
  std::string reduce = "none";
  /// Windows of two micro-steps (a full and a short micro-batch) each.
  int windows = 2;
  /// The smallest short micro-batch drawn (it is drawn in [this, B - 1]).
  int64_t minShortBatch = 1;
};

/// gtest prints a case by its name.
inline void PrintTo(const Case &c, std::ostream *os) { *os << c.name; }

/// Every case, in a fixed order.
const std::vector<Case> &allCases();

//===----------------------------------------------------------------------===//
// Running and comparing
//===----------------------------------------------------------------------===//

/// What each comparison is allowed, relative to the magnitude of what is
/// compared (see BackendOpTest.cpp for the reasoning).
struct Tolerances {
  /// Loss, eval prediction, gradients, buffers: results of f32 kernels
  /// that sum in a different order than the interpreter.
  double kernels = 1e-4;
  /// The optimizer update from identical gradients and state: elementwise
  /// f32 arithmetic only.
  double update = 1e-5;
};

/// Deliberately wrong reference, to show that the comparison can fail.
struct Perturbation {
  /// A global of the interpreter's state multiplied by `1 + relative`
  /// whenever the state is synchronised from the runtime.
  std::string global;
  double relative = 0;
};

struct RunOptions {
  Tolerances tolerances;
  Perturbation perturbation;
  /// Extra seed mixed into the case's (CLEAVE_BACKEND_SEED overrides it).
  uint64_t seed = 0;
  /// Lower the loop nests as the cuda target does and run its kernels on
  /// the host (`buildGpuKernelsOnHostPipeline`) instead of the CPU back
  /// end's loops.
  bool gpuKernelsOnHost = false;
  /// Compile with precision=bf16: the matmuls and convolutions multiply in
  /// bf16 on operands stored in bf16, as the target's pipeline makes them
  /// (with `gpuKernelsOnHost`, the convolutions' results too; needs
  /// AVX512-BF16 to run).
  bool bf16 = false;
};

/// The result of one case.
struct Outcome {
  /// Comparisons beyond tolerance and anything else that went wrong.
  std::vector<std::string> failures;
  /// Worst relative error per kind of comparison.
  std::map<std::string, double> worst;
  /// Comparisons made.
  int64_t comparisons = 0;
  /// Wall time per phase: split (the training pipeline), artifact (back
  /// end, machine code, link), runtime, interpreter.
  std::map<std::string, double> seconds;
  /// The model as built (printed on failure).
  std::string modelText;
};

/// Compiles `c`, runs it in the runtime and the interpreter and compares.
Outcome runCase(const Case &c, const RunOptions &options);

/// The seed a case's shapes and values are drawn from.
uint64_t caseSeed(const Case &c, uint64_t extra);

/// Builds the case's model and runs the training pipeline up to the split;
/// null (with `errors`) on failure. `cudaBf16`: the pipeline of
/// target=cuda precision=bf16, which keeps attention fused where cuDNN's
/// kernel takes it.
OwningOpRef<ModuleOp> buildSplit(MLIRContext *ctx, const Case &c, uint64_t seed,
                                 Model *model, std::string &errors,
                                 bool cudaBf16 = false);

} // namespace mlir::cleave::backend_test

#endif // CLEAVE_TEST_UNIT_BACKEND_BACKENDHARNESS_H
