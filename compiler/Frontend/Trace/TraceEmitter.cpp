//===- TraceEmitter.cpp - Traced graphs to split-level IR -----------------===//
//
// The graph is checked structurally first (indices, arities, attribute
// sizes), then built with explicit result types and verified, so that a
// malformed graph ends in a diagnostic rather than in a builder's assertion.
//
// Gradients: every distinct loss a Gradient node refers to is a request.
// Its differentiable region (the nodes between the requested parameters and
// the loss that were recorded with gradients enabled) becomes
// `@loss<k>(params..., external values..., [weights])`; cleave-autodiff
// builds `@loss<k>_grad`, whose body is inlined into the entry where the
// request's first Gradient node stands. The entry also computes the forward
// pass for whoever else reads it; CSE merges the two copies.
//
//===----------------------------------------------------------------------===//

#include "compiler/Frontend/Trace/TraceEmitter.h"
#include "compiler/Artifact/SchemaDict.h"

#include "compiler/Transforms/Passes.h"
#include "dialects/NN/IR/NNBuilders.h"
#include "dialects/NN/IR/NNOps.h"
#include "dialects/Train/IR/TrainOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/MapVector.h"

using namespace mlir;
using namespace mlir::cleave;
using namespace mlir::cleave::trace;
using train::TrainDialect;
/// `mlir::TensorType` is also in scope.
using TraceType = mlir::cleave::trace::TensorType;

namespace {

/// What a node of each kind must carry: operand and result counts and the
/// sizes of its attribute lists (-1: any).
struct Arity {
  int minOperands, maxOperands, results, ints, floats;
};

Arity arityOf(OpKind kind) {
  switch (kind) {
  case OpKind::Argument:
    return {0, 0, 1, 1, 0};
  case OpKind::Constant:
    return {0, 0, 1, 0, 1};
  case OpKind::Add:
  case OpKind::Sub:
  case OpKind::Mul:
  case OpKind::Div:
    return {2, 2, 1, 0, 0};
  case OpKind::Neg:
  case OpKind::Exp:
  case OpKind::Log:
  case OpKind::Sqrt:
  case OpKind::Relu:
  case OpKind::Sigmoid:
  case OpKind::Tanh:
    return {1, 1, 1, 0, 0};
  case OpKind::Gelu:
    return {1, 1, 1, 1, 0};
  case OpKind::Pow:
    return {1, 1, 1, 0, 1};
  case OpKind::Matmul:
    return {2, 2, 1, 2, 0};
  case OpKind::Linear:
    return {2, 3, 1, 0, 0};
  case OpKind::Reshape:
  case OpKind::Transpose:
    return {1, 1, 1, -1, 0};
  case OpKind::Flatten:
  case OpKind::Softmax:
  case OpKind::LogSoftmax:
    return {1, 1, 1, 1, 0};
  case OpKind::ReduceSum:
  case OpKind::ReduceMean:
  case OpKind::ReduceMax:
    return {1, 1, 1, -1, 0};
  case OpKind::CrossEntropy:
  case OpKind::MseLoss:
    return {2, 2, 1, 1, 0};
  case OpKind::Conv2d:
    return {2, 3, 1, 9, 0};
  case OpKind::MaxPool2d:
    return {1, 1, 1, 11, 0};
  case OpKind::AvgPool2d:
    return {1, 1, 1, 12, 0};
  case OpKind::BatchSum:
    return {1, 1, 1, 0, 0};
  case OpKind::BatchCount:
    return {0, 0, 1, 0, 0};
  case OpKind::Gradient:
    return {2, 2, 1, 0, 0};
  case OpKind::Sgd:
    return {4, 4, 1, 0, 0};
  case OpKind::Momentum:
    return {6, 6, 2, 1, 0};
  case OpKind::Adam:
    return {10, 10, 3, 1, 0};
  }
  return {0, 0, 0, 0, 0};
}

/// One gradient request: the gradients of `loss` with respect to `params`.
struct Request {
  ValueRef loss;
  /// Parameter argument indices, in order of their first Gradient node.
  SmallVector<uint32_t> params;
  /// `@loss<k>` and, after autodiff, `@loss<k>_grad`; null when the loss
  /// does not depend on the parameters (the gradients are zero).
  func::FuncOp lossFunc, gradFunc;
  /// The values `@loss<k>` takes besides the parameters, in order.
  SmallVector<ValueRef> externals;
  bool usesWeights = false;
  /// The gradients in the entry, per `params`, once inlined.
  SmallVector<Value> gradients;
};

class Emitter {
public:
  Emitter(MLIRContext *ctx, const Graph &graph, const EmitOptions &options)
      : ctx(ctx), graph(graph), options(options), b(ctx) {}

  OwningOpRef<ModuleOp> run();

private:
  LogicalResult validate();
  LogicalResult validateNode(size_t index);
  InFlightDiagnostic error(const Twine &message) {
    return emitError(UnknownLoc::get(ctx)) << "traced graph: " << message;
  }

  Type elementType(ElementType t) const;
  RankedTensorType typeOf(const TraceType &t) const;
  Location locOf(size_t node) const {
    return NameLoc::get(
        StringAttr::get(ctx, "node" + std::to_string(node) + ":" +
                                 opKindName(graph.nodes[node].kind)));
  }

  /// Emits node `index` (not an Argument or Gradient) on `operands`.
  FailureOr<SmallVector<Value>> emitOp(size_t index, ValueRange operands,
                                       Value weights);

  void collectRequests();
  LogicalResult buildLossFunction(Request &r, size_t k);
  LogicalResult buildEntry();
  LogicalResult inlineRequest(Request &r, Value weights);
  Value entryValue(ValueRef v) const {
    return entryValues.lookup({v.node, v.result});
  }

  MLIRContext *ctx;
  const Graph &graph;
  const EmitOptions &options;
  OpBuilder b;
  ModuleOp module;

  std::vector<Request> requests;
  /// The request each Gradient node belongs to, and its parameter slot.
  llvm::DenseMap<uint32_t, std::pair<size_t, size_t>> gradientSlot;
  llvm::DenseMap<std::pair<uint32_t, uint32_t>, Value> entryValues;
};

//===----------------------------------------------------------------------===//
// Validation
//===----------------------------------------------------------------------===//

LogicalResult Emitter::validate() {
  if (options.entry.empty())
    return error("the entry needs a name");
  for (auto [i, a] : llvm::enumerate(graph.arguments)) {
    if (a.type.isBatched() && a.kind != ArgumentKind::Data)
      return error("argument ") << i << " is batched but not data";
    for (int64_t d :
         ArrayRef<int64_t>(a.type.shape).drop_front(a.type.isBatched() ? 1 : 0))
      if (d < 0)
        return error("argument ") << i << " has a negative dimension";
    bool needsOf =
        a.kind == ArgumentKind::Gradient || a.kind == ArgumentKind::State;
    if (needsOf != (a.of >= 0) ||
        (a.of >= 0 && (size_t(a.of) >= graph.arguments.size() ||
                       graph.arguments[a.of].kind != ArgumentKind::Parameter)))
      return error("argument ")
             << i << ": gradients and optimizer state (and only they) "
             << "belong to a parameter argument";
    if (a.kind == ArgumentKind::Gradient &&
        !(graph.arguments[a.of].type == a.type))
      return error("argument ") << i << ": a gradient has its parameter's type";
  }
  if (graph.isBatched() && options.batch < 1)
    return error("the graph is batched; the batch capacity must be >= 1");
  if (!graph.isBatched() && llvm::any_of(graph.nodes, [](const Node &n) {
        return n.kind == OpKind::BatchSum || n.kind == OpKind::BatchCount;
      }))
    return error("batch reductions need a batched graph");
  for (size_t i = 0; i < graph.nodes.size(); ++i)
    if (failed(validateNode(i)))
      return failure();

  auto validRef = [&](ValueRef v) {
    return v.node < graph.nodes.size() &&
           v.result < graph.nodes[v.node].results.size();
  };
  llvm::DenseSet<uint32_t> updated;
  for (auto [i, u] : llvm::enumerate(graph.updates)) {
    if (u.argument >= graph.arguments.size() ||
        isInput(graph.arguments[u.argument].kind))
      return error("update ") << i << " does not write a global argument";
    if (!updated.insert(u.argument).second)
      return error("update ")
             << i << " writes argument " << u.argument << " a second time";
    if (!validRef(u.value))
      return error("update ") << i << " refers to a missing value";
    if (!(graph.nodes[u.value.node].results[u.value.result] ==
          graph.arguments[u.argument].type))
      return error("update ")
             << i << " changes the type of argument " << u.argument;
  }
  for (auto [i, o] : llvm::enumerate(graph.outputs))
    if (!validRef(o))
      return error("output ") << i << " refers to a missing value";
  return success();
}

LogicalResult Emitter::validateNode(size_t index) {
  const Node &n = graph.nodes[index];
  Arity a = arityOf(n.kind);
  auto fail = [&](const Twine &what) {
    return error("node ") << index << " (" << opKindName(n.kind)
                          << "): " << what;
  };
  if (int(n.operands.size()) < a.minOperands ||
      int(n.operands.size()) > a.maxOperands)
    return fail("has " + Twine(n.operands.size()) + " operands");
  if (int(n.results.size()) != a.results)
    return fail("has " + Twine(n.results.size()) + " results");
  if ((a.ints >= 0 && int(n.ints.size()) != a.ints) ||
      int(n.floats.size()) != a.floats)
    return fail("has the wrong number of attributes");
  for (ValueRef v : n.operands)
    if (v.node >= index || v.result >= graph.nodes[v.node].results.size())
      return fail("uses a value that is not defined before it");
  for (const TraceType &t : n.results)
    for (auto [d, dim] : llvm::enumerate(t.shape))
      if (dim < 0 && !(d == 0 && dim == kBatch))
        return fail("has a negative dimension");
  if (n.kind == OpKind::Argument) {
    if (n.ints[0] < 0 || size_t(n.ints[0]) >= graph.arguments.size())
      return fail("refers to a missing argument");
    if (!(graph.arguments[n.ints[0]].type == n.results[0]))
      return fail("does not have its argument's type");
  }
  if (n.kind == OpKind::Gradient) {
    const Node &param = graph.nodes[n.operands[1].node];
    if (param.kind != OpKind::Argument ||
        graph.arguments[param.ints[0]].kind != ArgumentKind::Parameter)
      return fail("differentiates with respect to something that is not a "
                  "parameter argument");
    const TraceType &loss =
        graph.nodes[n.operands[0].node].results[n.operands[0].result];
    if (!loss.shape.empty() || (loss.elementType != ElementType::F32 &&
                                loss.elementType != ElementType::F64))
      return fail("differentiates a value that is not a float scalar");
    if (!(n.results[0] == param.results[0]))
      return fail("does not have its parameter's type");
  }
  if ((n.kind == OpKind::BatchSum || n.kind == OpKind::BatchCount) &&
      !(n.results[0] == TraceType{ElementType::F32, {}}))
    return fail("must give an f32 scalar");
  if (n.kind == OpKind::BatchSum) {
    const TraceType &in =
        graph.nodes[n.operands[0].node].results[n.operands[0].result];
    if (!in.isBatched() || in.elementType != ElementType::F32)
      return fail("needs a batched f32 operand");
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Types and ops
//===----------------------------------------------------------------------===//

Type Emitter::elementType(ElementType t) const {
  switch (t) {
  case ElementType::F32:
    return Float32Type::get(ctx);
  case ElementType::F64:
    return Float64Type::get(ctx);
  case ElementType::I32:
    return IntegerType::get(ctx, 32);
  case ElementType::I64:
    return IntegerType::get(ctx, 64);
  }
  return {};
}

RankedTensorType Emitter::typeOf(const TraceType &t) const {
  SmallVector<int64_t> shape(t.shape.begin(), t.shape.end());
  if (t.isBatched())
    shape[0] = options.batch;
  return RankedTensorType::get(shape, elementType(t.elementType));
}

FailureOr<SmallVector<Value>> Emitter::emitOp(size_t index, ValueRange operands,
                                              Value weights) {
  const Node &n = graph.nodes[index];
  Location loc = locOf(index);
  RankedTensorType type = typeOf(n.results[0]);
  ArrayRef<int64_t> ints = n.ints;
  auto one = [](Operation *op) -> SmallVector<Value> {
    return SmallVector<Value>(op->getResults());
  };
  auto array = [&](size_t from, size_t count) {
    return b.getDenseI64ArrayAttr(ints.slice(from, count));
  };
  auto reduction = [&](int64_t r) -> FailureOr<nn::Reduction> {
    if (r < 0 || r > 2)
      return failure();
    return static_cast<nn::Reduction>(r);
  };
  Value x = operands.empty() ? Value() : operands[0];
  switch (n.kind) {
  case OpKind::Argument:
  case OpKind::Gradient:
    break;
  case OpKind::Constant: {
    Type elt = type.getElementType();
    TypedAttr value =
        isa<FloatType>(elt)
            ? TypedAttr(FloatAttr::get(elt, n.floats[0]))
            : TypedAttr(IntegerAttr::get(elt, int64_t(n.floats[0])));
    return one(arith::ConstantOp::create(b, loc, type,
                                         DenseElementsAttr::get(type, value)));
  }
  case OpKind::Add:
    return one(nn::AddOp::create(b, loc, type, x, operands[1]));
  case OpKind::Sub:
    return one(nn::SubOp::create(b, loc, type, x, operands[1]));
  case OpKind::Mul:
    return one(nn::MulOp::create(b, loc, type, x, operands[1]));
  case OpKind::Div:
    return one(nn::DivOp::create(b, loc, type, x, operands[1]));
  case OpKind::Neg:
    return one(nn::NegOp::create(b, loc, type, x));
  case OpKind::Exp:
    return one(nn::ExpOp::create(b, loc, type, x));
  case OpKind::Log:
    return one(nn::LogOp::create(b, loc, type, x));
  case OpKind::Sqrt:
    return one(nn::SqrtOp::create(b, loc, type, x));
  case OpKind::Relu:
    return one(nn::ReluOp::create(b, loc, type, x));
  case OpKind::Sigmoid:
    return one(nn::SigmoidOp::create(b, loc, type, x));
  case OpKind::Tanh:
    return one(nn::TanhOp::create(b, loc, type, x));
  case OpKind::Gelu:
    return one(nn::GeluOp::create(b, loc, type, x,
                                  ints[0] ? nn::GeluApproximation::tanh
                                          : nn::GeluApproximation::none));
  case OpKind::Pow:
    return one(
        nn::PowOp::create(b, loc, type, x, b.getF64FloatAttr(n.floats[0])));
  case OpKind::Matmul:
    return one(nn::MatmulOp::create(b, loc, type, x, operands[1], ints[0] != 0,
                                    ints[1] != 0));
  case OpKind::Linear:
    return one(
        nn::LinearOp::create(b, loc, type, x, operands[1],
                             operands.size() > 2 ? operands[2] : Value()));
  case OpKind::Reshape: {
    SmallVector<int64_t> shape(ints);
    if (!shape.empty() && shape[0] == kBatch)
      shape[0] = options.batch;
    return one(nn::ReshapeOp::create(b, loc, type, x, shape));
  }
  case OpKind::Flatten:
    return one(
        nn::FlattenOp::create(b, loc, type, x, b.getI64IntegerAttr(ints[0])));
  case OpKind::Transpose:
    return one(nn::TransposeOp::create(b, loc, type, x, ints));
  case OpKind::ReduceSum:
  case OpKind::ReduceMean:
  case OpKind::ReduceMax: {
    if (ints.empty()) {
      emitError(loc, "a reduction needs its keepdims flag");
      return failure();
    }
    bool keep = ints[0] != 0;
    ArrayRef<int64_t> axes = ints.drop_front();
    if (n.kind == OpKind::ReduceSum)
      return one(nn::ReduceSumOp::create(b, loc, type, x, axes, keep));
    if (n.kind == OpKind::ReduceMean)
      return one(nn::ReduceMeanOp::create(b, loc, type, x, axes, keep));
    return one(nn::ReduceMaxOp::create(b, loc, type, x, axes, keep));
  }
  case OpKind::Softmax:
    return one(
        nn::SoftmaxOp::create(b, loc, type, x, b.getI64IntegerAttr(ints[0])));
  case OpKind::LogSoftmax:
    return one(nn::LogSoftmaxOp::create(b, loc, type, x,
                                        b.getI64IntegerAttr(ints[0])));
  case OpKind::CrossEntropy:
  case OpKind::MseLoss: {
    FailureOr<nn::Reduction> r = reduction(ints[0]);
    if (failed(r)) {
      emitError(loc, "unknown loss reduction ") << ints[0];
      return failure();
    }
    if (n.kind == OpKind::CrossEntropy)
      return one(nn::CrossEntropyOp::create(b, loc, type, x, operands[1], *r));
    return one(nn::MseLossOp::create(b, loc, type, x, operands[1], *r));
  }
  case OpKind::Conv2d:
    return one(nn::Conv2DOp::create(b, loc, type, x, operands[1],
                                    operands.size() > 2 ? operands[2] : Value(),
                                    array(0, 2), array(2, 4), array(6, 2),
                                    b.getI64IntegerAttr(ints[8])));
  case OpKind::MaxPool2d:
    return one(nn::MaxPool2DOp::create(
        b, loc, type, x, array(0, 2), array(2, 2), array(4, 4), array(8, 2),
        ints[10] ? b.getUnitAttr() : UnitAttr()));
  case OpKind::AvgPool2d:
    return one(nn::AvgPool2DOp::create(
        b, loc, type, x, array(0, 2), array(2, 2), array(4, 4), array(8, 2),
        ints[10] ? b.getUnitAttr() : UnitAttr(),
        ints[11] ? b.getUnitAttr() : UnitAttr()));
  case OpKind::BatchSum: {
    // sum_i w_i * (sum over the non-batch dimensions of x[i]).
    auto xType = cast<RankedTensorType>(x.getType());
    auto perSample =
        RankedTensorType::get({options.batch}, xType.getElementType());
    Value rows = x;
    if (xType.getRank() > 1) {
      SmallVector<int64_t> axes =
          llvm::to_vector(llvm::seq<int64_t>(1, xType.getRank()));
      rows = nn::ReduceSumOp::create(b, loc, perSample, x, axes, false);
    } else if (xType != perSample) {
      emitError(loc, "batch_sum of ") << xType;
      return failure();
    }
    Value weighted = nn::MulOp::create(b, loc, perSample, rows, weights);
    return one(nn::ReduceSumOp::create(b, loc, type, weighted,
                                       ArrayRef<int64_t>{}, false));
  }
  case OpKind::BatchCount:
    return one(nn::ReduceSumOp::create(b, loc, type, weights,
                                       ArrayRef<int64_t>{}, false));
  case OpKind::Sgd:
    return one(train::SgdOp::create(b, loc, type, x, operands[1], operands[2],
                                    operands[3]));
  case OpKind::Momentum:
    return one(train::MomentumOp::create(
        b, loc, type, typeOf(n.results[1]), x, operands[1], operands[2],
        operands[3], operands[4], operands[5], ints[0] != 0));
  case OpKind::Adam:
    return one(train::AdamOp::create(
        b, loc, type, typeOf(n.results[1]), typeOf(n.results[2]), x,
        operands[1], operands[2], operands[3], operands[4], operands[5],
        operands[6], operands[7], operands[8], operands[9], ints[0] != 0));
  }
  emitError(loc, "cannot emit ") << opKindName(n.kind);
  return failure();
}

//===----------------------------------------------------------------------===//
// Gradient requests
//===----------------------------------------------------------------------===//

void Emitter::collectRequests() {
  for (auto [i, n] : llvm::enumerate(graph.nodes)) {
    if (n.kind != OpKind::Gradient)
      continue;
    ValueRef loss = n.operands[0];
    uint32_t param = graph.nodes[n.operands[1].node].ints[0];
    auto it = llvm::find_if(requests,
                            [&](const Request &r) { return r.loss == loss; });
    if (it == requests.end()) {
      requests.emplace_back();
      requests.back().loss = loss;
      it = std::prev(requests.end());
    }
    auto slot = llvm::find(it->params, param);
    if (slot == it->params.end()) {
      it->params.push_back(param);
      slot = std::prev(it->params.end());
    }
    gradientSlot[i] = {size_t(it - requests.begin()),
                       size_t(slot - it->params.begin())};
  }
}

LogicalResult Emitter::buildLossFunction(Request &r, size_t k) {
  size_t count = graph.nodes.size();
  // What the loss depends on.
  std::vector<bool> needed(count, false);
  needed[r.loss.node] = true;
  for (size_t i = r.loss.node + 1; i-- > 0;)
    if (needed[i])
      for (ValueRef v : graph.nodes[i].operands)
        needed[v.node] = true;
  // What depends on the requested parameters through differentiable ops.
  auto isParam = [&](size_t i) {
    const Node &n = graph.nodes[i];
    return n.kind == OpKind::Argument &&
           llvm::is_contained(r.params, uint32_t(n.ints[0]));
  };
  std::vector<bool> varied(count, false), region(count, false);
  for (size_t i = 0; i <= r.loss.node; ++i) {
    const Node &n = graph.nodes[i];
    if (isParam(i)) {
      varied[i] = true;
      continue;
    }
    varied[i] = n.differentiable && llvm::any_of(n.operands, [&](ValueRef v) {
                  return varied[v.node];
                });
    region[i] = varied[i] && needed[i];
  }
  if (!region[r.loss.node])
    return success(); // The gradients are zero.

  llvm::MapVector<std::pair<uint32_t, uint32_t>, ValueRef> externals;
  for (size_t i = 0; i <= r.loss.node; ++i) {
    if (!region[i])
      continue;
    const Node &n = graph.nodes[i];
    r.usesWeights |= n.kind == OpKind::BatchSum;
    for (ValueRef v : n.operands)
      if (!region[v.node] && !isParam(v.node))
        externals.insert({{v.node, v.result}, v});
  }

  SmallVector<Type> argTypes;
  SmallVector<DictionaryAttr> argAttrs;
  for (uint32_t p : r.params) {
    argTypes.push_back(typeOf(graph.arguments[p].type));
    argAttrs.push_back(b.getDictionaryAttr(b.getNamedAttr(
        TrainDialect::kParamAttr, b.getStringAttr(argumentName(graph, p)))));
  }
  for (auto &[key, v] : externals) {
    r.externals.push_back(v);
    argTypes.push_back(typeOf(graph.nodes[v.node].results[v.result]));
    argAttrs.push_back(b.getDictionaryAttr({}));
  }
  if (r.usesWeights) {
    argTypes.push_back(RankedTensorType::get({options.batch}, b.getF32Type()));
    argAttrs.push_back(b.getDictionaryAttr({}));
  }
  Type lossType = typeOf(graph.nodes[r.loss.node].results[r.loss.result]);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToEnd(module.getBody());
  r.lossFunc =
      func::FuncOp::create(b, locOf(r.loss.node), "loss" + std::to_string(k),
                           b.getFunctionType(argTypes, {lossType}));
  r.lossFunc.setAllArgAttrs(argAttrs);
  Block *body = r.lossFunc.addEntryBlock();
  b.setInsertionPointToStart(body);

  llvm::DenseMap<std::pair<uint32_t, uint32_t>, Value> values;
  for (size_t i = 0; i <= r.loss.node; ++i)
    if (isParam(i))
      values[{uint32_t(i), 0}] = body->getArgument(
          llvm::find(r.params, uint32_t(graph.nodes[i].ints[0])) -
          r.params.begin());
  for (auto [j, v] : llvm::enumerate(r.externals))
    values[{v.node, v.result}] = body->getArgument(r.params.size() + j);
  Value weights = r.usesWeights ? body->getArguments().back() : Value();
  for (size_t i = 0; i <= r.loss.node; ++i) {
    if (!region[i])
      continue;
    SmallVector<Value> operands;
    for (ValueRef v : graph.nodes[i].operands)
      operands.push_back(values.lookup({v.node, v.result}));
    FailureOr<SmallVector<Value>> results = emitOp(i, operands, weights);
    if (failed(results))
      return failure();
    for (auto [j, v] : llvm::enumerate(*results))
      values[{uint32_t(i), uint32_t(j)}] = v;
  }
  func::ReturnOp::create(b, locOf(r.loss.node),
                         values.lookup({r.loss.node, r.loss.result}));
  return success();
}

LogicalResult Emitter::inlineRequest(Request &r, Value weights) {
  Location loc = locOf(r.loss.node);
  if (!r.gradFunc) {
    for (uint32_t p : r.params) {
      RankedTensorType t = typeOf(graph.arguments[p].type);
      r.gradients.push_back(
          nn::splat(b, loc, 0.0, t.getElementType(), t.getShape()));
    }
    return success();
  }
  Block &body = r.gradFunc.getBody().front();
  IRMapping map;
  unsigned arg = 0;
  for (uint32_t p : r.params) {
    // The parameter's Argument node is an operand of its Gradient node, so
    // it has been emitted.
    Value v;
    for (auto [i, n] : llvm::enumerate(graph.nodes))
      if (n.kind == OpKind::Argument && uint32_t(n.ints[0]) == p)
        if ((v = entryValue({uint32_t(i), 0})))
          break;
    if (!v)
      return emitError(loc, "parameter argument ") << p << " is not read";
    map.map(body.getArgument(arg++), v);
  }
  for (ValueRef e : r.externals)
    map.map(body.getArgument(arg++), entryValue(e));
  if (r.usesWeights)
    map.map(body.getArgument(arg++), weights);
  for (Operation &op : body.without_terminator())
    b.clone(op, map);
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  // @loss<k>_grad returns the loss, then one gradient per parameter.
  for (Value g : ret.getOperands().drop_front())
    r.gradients.push_back(map.lookup(g));
  return success();
}

//===----------------------------------------------------------------------===//
// The entry
//===----------------------------------------------------------------------===//

LogicalResult Emitter::buildEntry() {
  SmallVector<Type> argTypes, resultTypes;
  SmallVector<DictionaryAttr> argAttrs, resultAttrs;
  llvm::DenseMap<uint32_t, unsigned> inputArg;
  for (auto [i, a] : llvm::enumerate(graph.arguments)) {
    if (!isInput(a.kind))
      continue;
    inputArg[i] = argTypes.size();
    argTypes.push_back(typeOf(a.type));
    argAttrs.push_back(b.getDictionaryAttr(b.getNamedAttr(
        TrainDialect::kInputAttr, b.getStringAttr(argumentName(graph, i)))));
  }
  // The per-sample weights, when a batch reduction reads them.
  bool weighted = llvm::any_of(graph.nodes, [](const Node &n) {
    return n.kind == OpKind::BatchSum || n.kind == OpKind::BatchCount;
  });
  if (weighted) {
    argTypes.push_back(RankedTensorType::get({options.batch}, b.getF32Type()));
    argAttrs.push_back(b.getDictionaryAttr(b.getNamedAttr(
        TrainDialect::kInputAttr, b.getStringAttr(weightsInputName()))));
  }
  for (auto [k, o] : llvm::enumerate(graph.outputs)) {
    resultTypes.push_back(typeOf(graph.nodes[o.node].results[o.result]));
    resultAttrs.push_back(b.getDictionaryAttr(b.getNamedAttr(
        TrainDialect::kOutputAttr, b.getStringAttr(outputName(k)))));
  }

  Location loc = NameLoc::get(b.getStringAttr(options.entry));
  b.setInsertionPointToEnd(module.getBody());
  auto entry = func::FuncOp::create(b, loc, options.entry,
                                    b.getFunctionType(argTypes, resultTypes));
  entry.setAllArgAttrs(argAttrs);
  entry.setAllResultAttrs(resultAttrs);
  entry->setAttr(TrainDialect::kEntryAttr, b.getStringAttr(options.entry));
  Block *body = entry.addEntryBlock();
  b.setInsertionPointToStart(body);
  Value weights = weighted ? body->getArguments().back() : Value();

  for (auto [i, n] : llvm::enumerate(graph.nodes)) {
    SmallVector<Value> results;
    if (n.kind == OpKind::Argument) {
      uint32_t a = n.ints[0];
      if (isInput(graph.arguments[a].kind))
        results.push_back(body->getArgument(inputArg[a]));
      else
        results.push_back(train::LoadOp::create(
            b, locOf(i), typeOf(n.results[0]), argumentName(graph, a)));
    } else if (n.kind == OpKind::Gradient) {
      auto [request, slot] = gradientSlot.lookup(i);
      Request &r = requests[request];
      if (r.gradients.empty() && failed(inlineRequest(r, weights)))
        return failure();
      results.push_back(r.gradients[slot]);
    } else {
      SmallVector<Value> operands;
      for (ValueRef v : n.operands)
        operands.push_back(entryValue(v));
      FailureOr<SmallVector<Value>> emitted = emitOp(i, operands, weights);
      if (failed(emitted))
        return failure();
      results = std::move(*emitted);
    }
    for (auto [j, v] : llvm::enumerate(results))
      entryValues[{uint32_t(i), uint32_t(j)}] = v;
  }

  // Write back the globals. A gradient that only grows becomes
  // train.accumulate, which the back end fuses into the kernel that
  // computes the increment (a weight-gradient GEMM with beta = 1).
  for (const Update &u : graph.updates) {
    std::string name = argumentName(graph, u.argument);
    const Node &n = graph.nodes[u.value.node];
    auto isSelf = [&](ValueRef v) {
      const Node &m = graph.nodes[v.node];
      return m.kind == OpKind::Argument && uint32_t(m.ints[0]) == u.argument;
    };
    if (isSelf(u.value))
      continue;
    Location uloc = locOf(u.value.node);
    if (graph.arguments[u.argument].kind == ArgumentKind::Gradient &&
        n.kind == OpKind::Add) {
      ValueRef lhs = n.operands[0], rhs = n.operands[1];
      std::optional<ValueRef> increment;
      if (isSelf(lhs))
        increment = rhs;
      else if (isSelf(rhs))
        increment = lhs;
      if (increment &&
          graph.nodes[increment->node].results[increment->result] ==
              graph.arguments[u.argument].type) {
        train::AccumulateOp::create(b, uloc, entryValue(*increment), name);
        continue;
      }
    }
    train::StoreOp::create(b, uloc, entryValue(u.value), name);
  }
  SmallVector<Value> results;
  for (ValueRef o : graph.outputs)
    results.push_back(entryValue(o));
  func::ReturnOp::create(b, loc, results);
  return success();
}

OwningOpRef<ModuleOp> Emitter::run() {
  if (failed(validate()))
    return {};
  OwningOpRef<ModuleOp> owned = ModuleOp::create(UnknownLoc::get(ctx));
  module = *owned;
  b.setInsertionPointToEnd(module.getBody());

  // Persistent state, caller-owned at run time.
  for (auto [i, a] : llvm::enumerate(graph.arguments)) {
    if (isInput(a.kind))
      continue;
    train::GlobalKind kind =
        a.kind == ArgumentKind::Parameter  ? train::GlobalKind::param
        : a.kind == ArgumentKind::Gradient ? train::GlobalKind::accumulator
                                           : train::GlobalKind::state;
    FlatSymbolRefAttr of =
        a.of >= 0 ? FlatSymbolRefAttr::get(ctx, argumentName(graph, a.of))
                  : FlatSymbolRefAttr();
    train::GlobalOp::create(b, UnknownLoc::get(ctx), argumentName(graph, i),
                            kind, typeOf(a.type), Attribute(), of);
  }

  collectRequests();
  for (auto [k, r] : llvm::enumerate(requests))
    if (failed(buildLossFunction(r, k)))
      return {};
  // The builders trust their operands' types: check them before autodiff
  // builds on them.
  if (failed(verify(module)))
    return {};
  if (llvm::any_of(requests, [](const Request &r) { return r.lossFunc; })) {
    PassManager pm(ctx);
    pm.addPass(createCleaveAutodiff());
    if (failed(pm.run(module)))
      return {};
    for (Request &r : requests)
      if (r.lossFunc)
        r.gradFunc = module.lookupSymbol<func::FuncOp>(
            (r.lossFunc.getSymName() + "_grad").str());
  }

  if (failed(buildEntry()))
    return {};
  for (Request &r : requests) {
    if (r.gradFunc)
      r.gradFunc.erase();
    if (r.lossFunc)
      r.lossFunc.erase();
  }
  ::cleave::abi::Manifest manifest;
  manifest.kind = ::cleave::abi::ArtifactKind::graph;
  module->setAttr(TrainDialect::kManifestAttr,
                  ::cleave::abi::toDict(b, manifest, {/*carriedOnly=*/true}));
  if (failed(verify(module)))
    return {};
  if (options.cleanup) {
    PassManager pm(ctx);
    pm.addPass(createCanonicalizerPass());
    pm.addPass(createCSEPass());
    if (failed(pm.run(module)))
      return {};
  }
  return owned;
}

} // namespace

OwningOpRef<ModuleOp> trace::emitTraceModule(MLIRContext &context,
                                             const Graph &graph,
                                             const EmitOptions &options) {
  context.loadDialect<nn::NNDialect, train::TrainDialect, arith::ArithDialect,
                      func::FuncDialect>();
  return Emitter(&context, graph, options).run();
}
