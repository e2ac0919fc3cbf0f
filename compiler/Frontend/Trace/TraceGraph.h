//===- TraceGraph.h - A traced graph, independent of MLIR -------*- C++ -*-===//
//
// The graph a `cleave::mark_step()` cuts, in the canonical form the tracer
// hashes and caches and the emitter (TraceEmitter.h) turns into nn IR. It is
// plain C++ so that the tracing library, which is built with exceptions,
// never includes MLIR to build it.
//
// Canonical means: nodes in topological (creation) order, operands as node
// indices, one argument per distinct materialised tensor in order of first
// use, and the batch dimension abstracted (kBatch), so that two traces of
// the same computation over different data, hyperparameter values or batch
// sizes are equal. docs/design/tracing.md explains the choices.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_COMPILER_FRONTEND_TRACE_TRACEGRAPH_H
#define CLEAVE_COMPILER_FRONTEND_TRACE_TRACEGRAPH_H

#include <cstdint>
#include <string>
#include <vector>

namespace mlir::cleave::trace {

/// Stands for the batch size in dimension 0 of a batched tensor (and in
/// shape attributes derived from one).
inline constexpr int64_t kBatch = -1;

enum class ElementType : uint8_t { F32, F64, I32, I64 };

/// A ranked tensor type; `shape[0] == kBatch` marks a batched tensor.
struct TensorType {
  ElementType elementType = ElementType::F32;
  std::vector<int64_t> shape;

  bool isBatched() const { return !shape.empty() && shape[0] == kBatch; }
  bool operator==(const TensorType &o) const {
    return elementType == o.elementType && shape == o.shape;
  }
};

/// What a materialised tensor the graph reads or writes is.
enum class ArgumentKind : uint8_t {
  Data,      // an input value: data, labels, values of earlier steps
  Hyper,     // a scalar input: a hyperparameter or a step count
  Parameter, // a train.global param, updated in place by an optimizer
  Gradient,  // the gradient accumulator of a Parameter (`of`)
  State,     // optimizer state of a Parameter (`of`)
};

struct Argument {
  ArgumentKind kind = ArgumentKind::Data;
  TensorType type;
  /// For Gradient and State: the index of the Parameter argument it belongs
  /// to; -1 otherwise.
  int32_t of = -1;
};

/// Whether an argument is passed as an entry input (Data, Hyper) rather
/// than as a global updated in place.
inline bool isInput(ArgumentKind kind) {
  return kind == ArgumentKind::Data || kind == ArgumentKind::Hyper;
}

/// The operations of a trace. Attributes live in Node::ints and
/// Node::floats, in the layout given for each kind.
enum class OpKind : uint8_t {
  Argument, // ints {argument index}; no operands
  Constant, // floats {value}: a splat of the result type
  // Elementwise, numpy broadcasting.
  Add,
  Sub,
  Mul,
  Div,
  Neg,
  Exp,
  Log,
  Sqrt,
  Relu,
  Sigmoid,
  Tanh,
  Gelu, // ints {1 for the tanh approximation, else 0}
  Pow,  // floats {exponent}
  // Products and shapes.
  Matmul,    // ints {transpose_a, transpose_b}
  Linear,    // operands {input, weight[, bias]}
  Reshape,   // ints {new shape, kBatch in dimension 0 when batched}
  Flatten,   // ints {axis}
  Transpose, // ints {permutation}
  // Reductions over non-batch axes.
  ReduceSum,  // ints {keepdims, axes...}
  ReduceMean, // ints {keepdims, axes...}
  ReduceMax,  // ints {keepdims, axes...}
  Softmax,    // ints {axis}
  LogSoftmax, // ints {axis}
  // Losses; operands {input, target}.
  CrossEntropy, // ints {reduction: 0 none, 1 sum, 2 mean}
  MseLoss,      // ints {reduction}
  // Convolution and pooling, NCHW.
  Conv2d,    // operands {input, weight[, bias]};
             // ints {strides[2], padding[4], dilations[2], groups}
  MaxPool2d, // ints {kernel[2], strides[2], padding[4], dilations[2], ceil}
  AvgPool2d, // ints {kernel[2], strides[2], padding[4], dilations[2], ceil,
             //       count_include_pad}
  // Reductions over the batch, weighted by the per-sample weights the
  // executable receives (0 for the padding of a short batch).
  BatchSum,   // operands {batched input}: the weighted sum of all elements
  BatchCount, // no operands: the number of real samples (sum of weights)
  // d(loss)/d(parameter): operands {scalar loss, the Parameter's Argument}.
  Gradient,
  // Optimizer updates, as the train dialect's ops.
  Sgd,      // operands {param, grad, lr, weight_decay}
  Momentum, // operands {param, grad, buf, lr, momentum, weight_decay};
            // ints {nesterov}; results {param, buf}
  Adam,     // operands {param, grad, m, v, step (i64), lr, beta1, beta2, eps,
            // weight_decay}; ints {decoupled}; results {param, m, v}
};

/// The name of an op kind, for messages and dumps.
const char *opKindName(OpKind kind);

/// Result `result` of node `node`.
struct ValueRef {
  uint32_t node = 0;
  uint32_t result = 0;
  bool operator==(const ValueRef &o) const {
    return node == o.node && result == o.result;
  }
};

struct Node {
  OpKind kind = OpKind::Constant;
  std::vector<ValueRef> operands;
  std::vector<TensorType> results;
  std::vector<int64_t> ints;
  std::vector<double> floats;
  /// Recorded with gradients enabled and depending on a parameter through
  /// differentiable ops: gradients flow through it. A node computed under
  /// no-grad (an optimizer update, an evaluation) is a constant to autodiff
  /// even when it reads a parameter.
  bool differentiable = false;
};

/// A global argument's final value, written back when the entry returns.
struct Update {
  uint32_t argument = 0;
  ValueRef value;
};

/// One traced graph.
struct Graph {
  std::vector<Argument> arguments;
  std::vector<Node> nodes;
  /// At most one per argument, only for Parameter, Gradient and State.
  std::vector<Update> updates;
  /// Fresh values the caller keeps (the loss, a prediction).
  std::vector<ValueRef> outputs;

  /// Whether some value has a batch dimension (then the graph is compiled
  /// for a batch capacity; it takes the per-sample weights if a batch
  /// reduction reads them).
  bool isBatched() const;
};

/// Names of the entry's arguments in the manifest, which is how the tracer
/// binds its buffers to an executable: an input (Data, Hyper) is "in<n>"
/// and a global "param<n>", "grad<n>" or "state<n>", numbered in argument
/// order among those of its prefix; the per-sample weights are "weights";
/// output `k` is "out<k>". `index` must be a valid argument index.
std::string argumentName(const Graph &graph, size_t index);
inline const char *weightsInputName() { return "weights"; }
std::string outputName(size_t index);

} // namespace mlir::cleave::trace

#endif // CLEAVE_COMPILER_FRONTEND_TRACE_TRACEGRAPH_H
