//===- TraceTestUtil.h - Helpers of the tracing tests -----------*- C++ -*-===//
//
// Deterministic synthetic data, the small models the tests trace (the same
// as test/trace/Inputs/*.mlir), and comparisons.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_TEST_TRACE_TRACETESTUTIL_H
#define CLEAVE_TEST_TRACE_TRACETESTUTIL_H

#include "cleave/trace.h"

#include <cstdint>
#include <string>
#include <vector>

namespace cleave::tracetest {

/// `samples` rows of `features` values in [-1, 1), from a fixed generator,
/// and learnable labels in [0, classes): the segment (of `classes` equal
/// contiguous segments of the row) with the largest sum.
struct Data {
  std::vector<float> x;
  std::vector<int64_t> labels;
  int64_t samples = 0;
  int64_t features = 0;

  /// Rows [start, start + count).
  Data slice(int64_t start, int64_t count) const;
};
Data makeData(int64_t samples, int64_t features, int64_t classes,
              uint64_t seed);

/// Inputs/mlp.mlir: 1x4x4 -> 16 -> 12 (ReLU) -> 3.
Sequential makeMlp(int64_t hidden = 12);
/// Inputs/cnn.mlir: conv 1->2 3x3 pad 1, ReLU, max-pool 2, 18 -> 3.
Sequential makeCnn();

/// The image tensor of `data` ([samples, 1, side, side]) and its labels.
Tensor images(const Data &data, int64_t side);
Tensor labels(const Data &data);

/// makeMlp's model in double precision, from the traced model's values.
struct ReferenceMlp {
  /// W1 [hidden, 16], b1, W2 [3, hidden], b2.
  std::vector<std::vector<double>> params;
  int64_t hidden = 0;

  static ReferenceMlp from(const std::vector<Tensor> &params);
  /// Logits [samples, 3], row-major.
  std::vector<double> forward(const Data &d) const;
  /// The mean cross-entropy over d's samples; `grads` receives its gradient
  /// with respect to each parameter.
  double meanLoss(const Data &d,
                  std::vector<std::vector<double>> *grads = nullptr) const;
};

/// Max over i of |a[i] - b[i]| / max(1, |b[i]|).
double maxRelativeError(const std::vector<float> &a,
                        const std::vector<float> &b);
double maxRelativeError(const std::vector<float> &a,
                        const std::vector<double> &b);

/// Every parameter's values, in order.
std::vector<std::vector<float>> snapshot(const std::vector<Tensor> &params);

/// Starts a test from a clean tracer: no compiled graphs, zero counters.
void resetTracer();

} // namespace cleave::tracetest

#endif // CLEAVE_TEST_TRACE_TRACETESTUTIL_H
