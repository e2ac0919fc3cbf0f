//===- TraceGraph.cpp - A traced graph, independent of MLIR ---------------===//
//
// Names shared by the emitter and the tracer: the manifest names of an
// entry's arguments are the contract by which the tracer binds its buffers.
//
//===----------------------------------------------------------------------===//

#include "compiler/Frontend/Trace/TraceGraph.h"

#include <cstring>

using namespace mlir::cleave::trace;

const char *mlir::cleave::trace::opKindName(OpKind kind) {
  switch (kind) {
  case OpKind::Argument:
    return "argument";
  case OpKind::Constant:
    return "constant";
  case OpKind::Add:
    return "add";
  case OpKind::Sub:
    return "sub";
  case OpKind::Mul:
    return "mul";
  case OpKind::Div:
    return "div";
  case OpKind::Neg:
    return "neg";
  case OpKind::Exp:
    return "exp";
  case OpKind::Log:
    return "log";
  case OpKind::Sqrt:
    return "sqrt";
  case OpKind::Relu:
    return "relu";
  case OpKind::Sigmoid:
    return "sigmoid";
  case OpKind::Tanh:
    return "tanh";
  case OpKind::Gelu:
    return "gelu";
  case OpKind::Pow:
    return "pow";
  case OpKind::Matmul:
    return "matmul";
  case OpKind::Linear:
    return "linear";
  case OpKind::Reshape:
    return "reshape";
  case OpKind::Flatten:
    return "flatten";
  case OpKind::Transpose:
    return "transpose";
  case OpKind::ReduceSum:
    return "reduce_sum";
  case OpKind::ReduceMean:
    return "reduce_mean";
  case OpKind::ReduceMax:
    return "reduce_max";
  case OpKind::Softmax:
    return "softmax";
  case OpKind::LogSoftmax:
    return "log_softmax";
  case OpKind::CrossEntropy:
    return "cross_entropy";
  case OpKind::MseLoss:
    return "mse_loss";
  case OpKind::Conv2d:
    return "conv2d";
  case OpKind::MaxPool2d:
    return "max_pool2d";
  case OpKind::AvgPool2d:
    return "avg_pool2d";
  case OpKind::BatchSum:
    return "batch_sum";
  case OpKind::BatchCount:
    return "batch_count";
  case OpKind::Gradient:
    return "gradient";
  case OpKind::Sgd:
    return "sgd";
  case OpKind::Momentum:
    return "momentum";
  case OpKind::Adam:
    return "adam";
  }
  return "unknown";
}

bool Graph::isBatched() const {
  for (const Argument &a : arguments)
    if (a.type.isBatched())
      return true;
  for (const Node &n : nodes)
    for (const TensorType &t : n.results)
      if (t.isBatched())
        return true;
  return false;
}

/// Inputs are "in", the globals "param", "grad" and "state".
static const char *argumentPrefix(ArgumentKind kind) {
  switch (kind) {
  case ArgumentKind::Data:
  case ArgumentKind::Hyper:
    return "in";
  case ArgumentKind::Parameter:
    return "param";
  case ArgumentKind::Gradient:
    return "grad";
  case ArgumentKind::State:
    return "state";
  }
  return "in";
}

std::string mlir::cleave::trace::argumentName(const Graph &graph,
                                              size_t index) {
  const char *prefix = argumentPrefix(graph.arguments[index].kind);
  // Numbered among the arguments of the same prefix, in argument order.
  size_t n = 0;
  for (size_t i = 0; i < index; ++i)
    n += std::strcmp(argumentPrefix(graph.arguments[i].kind), prefix) == 0;
  return prefix + std::to_string(n);
}

std::string mlir::cleave::trace::outputName(size_t index) {
  return "out" + std::to_string(index);
}
