//===- Tensor.cpp - Recording operations ----------------------------------===//
//
// Every operation checks its operands and computes its result's shape now,
// so that a mistake is reported at the line that made it (as an eager
// library would) rather than when the graph is compiled, and records a node.
//
// Batches: dimension 0 of a tensor made by fromBatch is the batch, and every
// value computed from it keeps it there. Graphs are compiled for a batch
// capacity and short batches are padded, so an operation may not mix the
// samples of a batch except through the weighted batch reductions (sum(),
// mean() and the losses), which count real samples only.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <set>

namespace cleave {
namespace detail {

void fail(cleave_status code, const std::string &message) {
  throw Error(code, message);
}

std::shared_ptr<Storage> Storage::allocate(size_t bytes) {
  constexpr size_t kAlignment = 64;
  size_t rounded = bytes == 0
                       ? kAlignment
                       : (bytes + kAlignment - 1) / kAlignment * kAlignment;
  void *p = std::aligned_alloc(kAlignment, rounded);
  if (!p)
    fail(CLEAVE_OUT_OF_MEMORY,
         "cannot allocate " + std::to_string(bytes) + " bytes for a tensor");
  std::memset(p, 0, rounded);
  return std::shared_ptr<Storage>(
      new Storage(static_cast<unsigned char *>(p), bytes));
}

Storage::~Storage() { std::free(data_); }

size_t dtypeSize(DType dtype) { return dtype == DType::F32 ? 4 : 8; }

tg::ElementType elementType(DType dtype) {
  return dtype == DType::F32 ? tg::ElementType::F32 : tg::ElementType::I64;
}

int64_t Type::numel() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

tg::TensorType Type::canonical() const {
  tg::TensorType t{elementType(dtype), shape};
  if (batched)
    t.shape[0] = tg::kBatch;
  return t;
}

std::shared_ptr<TensorImpl> makeMaterialized(const Type &type, Role role) {
  auto impl = std::make_shared<TensorImpl>();
  impl->type = type;
  impl->role = role;
  impl->storage = Storage::allocate(type.bytes());
  return impl;
}

Node::Use valueOf(const std::shared_ptr<TensorImpl> &impl) {
  if (impl->isPending())
    return impl->pending;
  if (!impl->storage)
    fail(CLEAVE_INTERNAL, "a tensor has neither a value nor a pending node");
  if (!impl->leaf || impl->leaf->storage != impl->storage) {
    auto leaf = std::make_shared<Node>();
    leaf->kind = tg::OpKind::Argument;
    leaf->id = Tracer::get().nextNodeId();
    leaf->results = {impl->type};
    switch (impl->role) {
    case Role::Value:
      leaf->leafKind = tg::ArgumentKind::Data;
      break;
    case Role::Parameter:
      leaf->leafKind = tg::ArgumentKind::Parameter;
      break;
    case Role::Gradient:
      leaf->leafKind = tg::ArgumentKind::Gradient;
      break;
    case Role::State:
      leaf->leafKind = tg::ArgumentKind::State;
      break;
    }
    leaf->storage = impl->storage;
    leaf->ofStorage = impl->ofStorage;
    leaf->source = impl;
    leaf->differentiable = impl->requiresGrad;
    impl->leaf = std::move(leaf);
  }
  return {impl->leaf, 0};
}

Node::Use hyperLeaf(double value, DType dtype) {
  auto leaf = std::make_shared<Node>();
  leaf->kind = tg::OpKind::Argument;
  leaf->id = Tracer::get().nextNodeId();
  leaf->results = {Type{dtype, {}, false}};
  leaf->leafKind = tg::ArgumentKind::Hyper;
  leaf->hyper = value;
  return {std::move(leaf), 0};
}

std::shared_ptr<Node>
recordNode(tg::OpKind kind, const std::vector<Node::Use> &operands,
           std::vector<Type> results, std::vector<int64_t> ints,
           std::vector<double> floats, bool differentiableOp) {
  Tracer &tracer = Tracer::get();
  auto node = std::make_shared<Node>();
  node->kind = kind;
  node->id = tracer.nextNodeId();
  node->operands = operands;
  node->results = std::move(results);
  node->ints = std::move(ints);
  node->floats = std::move(floats);
  node->differentiable =
      differentiableOp && tracer.gradEnabled() &&
      std::any_of(operands.begin(), operands.end(),
                  [](const Node::Use &u) { return u.node->differentiable; });
  return node;
}

std::vector<Tensor> record(tg::OpKind kind,
                           const std::vector<Node::Use> &operands,
                           std::vector<Type> results, std::vector<int64_t> ints,
                           std::vector<double> floats, bool differentiableOp) {
  std::shared_ptr<Node> node =
      recordNode(kind, operands, std::move(results), std::move(ints),
                 std::move(floats), differentiableOp);
  std::vector<Tensor> out;
  for (uint32_t r = 0; r < node->results.size(); ++r) {
    auto impl = std::make_shared<TensorImpl>();
    impl->type = node->results[r];
    impl->pending = {node, r};
    Tracer::get().notePending(impl);
    out.emplace_back(impl);
  }
  return out;
}

void assign(const std::shared_ptr<TensorImpl> &target, Node::Use value) {
  const Type &t = value.node->results[value.result];
  if (t.dtype != target->type.dtype || t.shape != target->type.shape)
    fail(CLEAVE_INTERNAL, "an update changes the type of a state tensor");
  target->pending = std::move(value);
  Tracer::get().notePending(target);
}

} // namespace detail

using namespace detail;

namespace {

std::string shapeString(const Shape &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string describe(const Type &t) {
  return std::string(t.dtype == DType::F32 ? "f32" : "i64") +
         shapeString(t.shape) + (t.batched ? " (batched)" : "");
}

[[noreturn]] void invalid(const std::string &op, const std::string &why) {
  fail(CLEAVE_INVALID_ARGUMENT, op + ": " + why);
}

const TensorImpl &implOf(const std::string &op, const Tensor &t) {
  if (!t.defined())
    invalid(op, "the tensor is undefined");
  return *t.impl();
}

const Type &typeOf(const std::string &op, const Tensor &t) {
  return implOf(op, t).type;
}

const Type &floatType(const std::string &op, const Tensor &t) {
  const Type &type = typeOf(op, t);
  if (type.dtype != DType::F32)
    invalid(op, "needs an f32 tensor, got " + describe(type));
  return type;
}

int64_t normalizeDim(const std::string &op, int64_t d, int64_t rank) {
  if (d < -rank || d >= rank)
    invalid(op, "dimension " + std::to_string(d) +
                    " is out of range for rank " + std::to_string(rank));
  return d < 0 ? d + rank : d;
}

/// Shapes that make tensors from data: non-negative, and (as in the
/// runtime's manifests) at most 2^48 bytes of 8-byte elements in every
/// prefix, so that numel() and bytes() cannot overflow and wrap into a
/// small buffer.
void checkShape(const std::string &op, const Shape &shape) {
  constexpr int64_t kMaxElements = int64_t(1) << 45;
  int64_t elements = 1;
  for (int64_t d : shape) {
    if (d < 0)
      invalid(op, "shape " + shapeString(shape) + " has a negative dimension");
    if (d != 0 && elements > kMaxElements / d)
      invalid(op, "shape " + shapeString(shape) +
                      " is too large (more than 2^48 bytes)");
    elements *= d;
  }
}

Tensor one(tg::OpKind kind, std::vector<Node::Use> operands, Type result,
           std::vector<int64_t> ints = {}, std::vector<double> floats = {},
           bool differentiableOp = true) {
  return record(kind, operands, {std::move(result)}, std::move(ints),
                std::move(floats), differentiableOp)[0];
}

Tensor constant(double value) {
  return one(tg::OpKind::Constant, {}, Type{DType::F32, {}, false}, {}, {value},
             false);
}

/// numpy broadcasting, where a batch dimension may only meet a batch
/// dimension of the same size or a broadcast 1 that is not a batch.
Type broadcast(const std::string &op, const Type &a, const Type &b) {
  if (a.batched && b.batched && a.shape.size() != b.shape.size())
    invalid(op, "batched operands of different ranks (" + describe(a) + ", " +
                    describe(b) +
                    ") would align the batch with another dimension");
  for (const auto &[batched, other] : {std::pair(&a, &b), std::pair(&b, &a)})
    if (batched->batched && !other->batched &&
        (other->shape.size() > batched->shape.size() ||
         (other->shape.size() == batched->shape.size() &&
          other->shape[0] != 1)))
      invalid(op, "a non-batched operand (" + describe(*other) +
                      ") may not span the batch dimension of " +
                      describe(*batched));
  size_t rank = std::max(a.shape.size(), b.shape.size());
  Type r{DType::F32, Shape(rank), a.batched || b.batched};
  for (size_t i = 0; i < rank; ++i) {
    auto dim = [&](const Type &t) -> int64_t {
      size_t offset = rank - t.shape.size();
      return i < offset ? 1 : t.shape[i - offset];
    };
    int64_t x = dim(a), y = dim(b);
    if (x != y && x != 1 && y != 1)
      invalid(op, "shapes " + shapeString(a.shape) + " and " +
                      shapeString(b.shape) + " do not broadcast");
    r.shape[i] = x == 1 ? y : x;
  }
  return r;
}

Tensor binary(tg::OpKind kind, const char *op, const Tensor &a,
              const Tensor &b) {
  Type r = broadcast(op, floatType(op, a), floatType(op, b));
  return one(kind, {valueOf(a.impl()), valueOf(b.impl())}, std::move(r));
}

Tensor unary(tg::OpKind kind, const char *op, const Tensor &x,
             std::vector<int64_t> ints = {}, std::vector<double> floats = {}) {
  Type t = floatType(op, x);
  return one(kind, {valueOf(x.impl())}, std::move(t), std::move(ints),
             std::move(floats));
}

/// `dims` normalised, sorted and distinct; not the batch dimension.
std::vector<int64_t> reductionDims(const std::string &op, const Type &t,
                                   const std::vector<int64_t> &dims) {
  std::set<int64_t> set;
  for (int64_t d : dims)
    if (!set.insert(normalizeDim(op, d, int64_t(t.shape.size()))).second)
      invalid(op, "dimension " + std::to_string(d) + " is given twice");
  if (t.batched && set.count(0))
    invalid(op, "cannot reduce over the batch dimension of " + describe(t) +
                    " (sum() and mean() of all elements count real samples)");
  return std::vector<int64_t>(set.begin(), set.end());
}

Tensor reduce(tg::OpKind kind, const char *op, const Tensor &x,
              const std::vector<int64_t> &dims, bool keepDim) {
  const Type &t = floatType(op, x);
  if (dims.empty())
    invalid(op, "no dimensions to reduce");
  std::vector<int64_t> axes = reductionDims(op, t, dims);
  Type r{DType::F32, {}, t.batched};
  for (int64_t i = 0; i < int64_t(t.shape.size()); ++i) {
    bool reduced = std::binary_search(axes.begin(), axes.end(), i);
    if (!reduced)
      r.shape.push_back(t.shape[i]);
    else if (keepDim)
      r.shape.push_back(1);
  }
  std::vector<int64_t> ints = {keepDim ? 1 : 0};
  ints.insert(ints.end(), axes.begin(), axes.end());
  return one(kind, {valueOf(x.impl())}, std::move(r), std::move(ints));
}

/// The weighted sum over real samples of a batched value's elements.
Tensor batchSum(const Tensor &x) {
  return one(tg::OpKind::BatchSum, {valueOf(x.impl())},
             Type{DType::F32, {}, false});
}

Tensor batchCount() {
  return one(tg::OpKind::BatchCount, {}, Type{DType::F32, {}, false}, {}, {},
             false);
}

/// The mean over real samples of a per-sample value [B].
Tensor batchMean(const Tensor &perSample) {
  return batchSum(perSample) / batchCount();
}

void requireSameBatch(const std::string &op, const Type &a, const Type &b) {
  if (a.batched != b.batched || (a.batched && a.shape[0] != b.shape[0]))
    invalid(op, "operands " + describe(a) + " and " + describe(b) +
                    " must both be batches of one size, or neither batched");
}

std::vector<int64_t> poolInts(const std::string &op, const Type &x,
                              const Pool2dOptions &o, Shape &out,
                              bool average) {
  if (x.shape.size() != 4)
    invalid(op, "input must be NCHW (rank 4), got " + describe(x));
  auto [kh, kw] = o.kernel;
  int64_t sh = o.stride.first ? o.stride.first : kh;
  int64_t sw = o.stride.second ? o.stride.second : kw;
  auto [ph, pw] = o.padding;
  if (kh < 1 || kw < 1 || sh < 1 || sw < 1 || ph < 0 || pw < 0)
    invalid(op, "kernel and stride must be positive, padding non-negative");
  if (2 * ph > kh || 2 * pw > kw)
    invalid(op, "padding must be at most half the kernel size");
  auto size = [&](int64_t in, int64_t k, int64_t s, int64_t p) {
    int64_t span = in + 2 * p - (k - 1) - 1;
    if (span < 0)
      return int64_t(0);
    int64_t n = (o.ceilMode ? (span + s - 1) / s : span / s) + 1;
    if (o.ceilMode && (n - 1) * s >= in + p)
      --n;
    return n;
  };
  int64_t oh = size(x.shape[2], kh, sh, ph), ow = size(x.shape[3], kw, sw, pw);
  if (oh < 1 || ow < 1)
    invalid(op, "the window does not fit the input " + describe(x));
  out = {x.shape[0], x.shape[1], oh, ow};
  std::vector<int64_t> ints = {
      kh, kw, sh, sw, ph, pw, ph, pw, 1, 1, o.ceilMode ? 1 : 0};
  if (average)
    ints.push_back(o.countIncludePad ? 1 : 0);
  return ints;
}

std::shared_ptr<TensorImpl> materialize(const std::string &op, DType dtype,
                                        const void *data, const Shape &shape,
                                        bool batched) {
  checkShape(op, shape);
  if (batched && (shape.empty() || shape[0] < 1))
    invalid(op, "a batch needs a shape [samples >= 1, ...], got " +
                    shapeString(shape));
  Type t{dtype, shape, batched};
  if (!data && t.numel() > 0)
    invalid(op, "data is NULL");
  auto impl = makeMaterialized(t, Role::Value);
  if (t.bytes() > 0)
    std::memcpy(impl->storage->data(), data, t.bytes());
  return impl;
}

template <typename T>
const T *checkedData(const std::string &op, const std::vector<T> &data,
                     const Shape &shape) {
  checkShape(op, shape);
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  if (int64_t(data.size()) != n)
    invalid(op, std::to_string(data.size()) + " values for shape " +
                    shapeString(shape) + " (" + std::to_string(n) + ")");
  return data.data();
}

} // namespace

//===----------------------------------------------------------------------===//
// Construction and inspection
//===----------------------------------------------------------------------===//

Tensor::Tensor() = default;
Tensor::Tensor(std::shared_ptr<detail::TensorImpl> impl)
    : impl_(std::move(impl)) {}

Tensor Tensor::fromBatch(const float *data, const Shape &shape) {
  return Tensor(materialize("fromBatch", DType::F32, data, shape, true));
}
Tensor Tensor::fromBatch(const int64_t *data, const Shape &shape) {
  return Tensor(materialize("fromBatch", DType::I64, data, shape, true));
}
Tensor Tensor::fromBatch(const std::vector<float> &data, const Shape &shape) {
  return fromBatch(checkedData("fromBatch", data, shape), shape);
}
Tensor Tensor::fromBatch(const std::vector<int64_t> &data, const Shape &shape) {
  return fromBatch(checkedData("fromBatch", data, shape), shape);
}
Tensor Tensor::fromData(const float *data, const Shape &shape) {
  return Tensor(materialize("fromData", DType::F32, data, shape, false));
}
Tensor Tensor::fromData(const std::vector<float> &data, const Shape &shape) {
  return fromData(checkedData("fromData", data, shape), shape);
}
Tensor Tensor::zeros(const Shape &shape) {
  checkShape("zeros", shape);
  return Tensor(makeMaterialized(Type{DType::F32, shape, false}, Role::Value));
}
Tensor Tensor::parameter(const std::vector<float> &data, const Shape &shape) {
  const float *p = checkedData("parameter", data, shape);
  auto impl = makeMaterialized(Type{DType::F32, shape, false}, Role::Parameter);
  impl->requiresGrad = true;
  if (!data.empty())
    std::memcpy(impl->storage->data(), p, data.size() * sizeof(float));
  return Tensor(impl);
}

const Shape &Tensor::shape() const { return implOf("shape", *this).type.shape; }
int64_t Tensor::dim() const { return int64_t(shape().size()); }
int64_t Tensor::size(int64_t d) const {
  return shape()[normalizeDim("size", d, dim())];
}
int64_t Tensor::numel() const { return implOf("numel", *this).type.numel(); }
DType Tensor::dtype() const { return implOf("dtype", *this).type.dtype; }
bool Tensor::isBatched() const {
  return implOf("isBatched", *this).type.batched;
}
bool Tensor::isPending() const {
  return implOf("isPending", *this).isPending();
}
bool Tensor::requiresGrad() const {
  const TensorImpl &impl = implOf("requiresGrad", *this);
  return impl.isPending() ? impl.pending.node->differentiable
                          : impl.requiresGrad;
}

namespace {
/// The storage holding `t`'s current value, computing it if pending.
std::shared_ptr<Storage> currentValue(const Tensor &t) {
  if (!t.impl()->isPending())
    return t.impl()->storage;
  std::shared_ptr<Storage> out;
  Tracer::get().computeNow(t.impl(), out);
  return out;
}
} // namespace

double Tensor::item() const {
  const Type &t = typeOf("item", *this);
  if (t.numel() != 1)
    invalid("item", "needs a tensor of one element, got " + describe(t));
  std::shared_ptr<Storage> s = currentValue(*this);
  if (t.dtype == DType::F32)
    return *reinterpret_cast<const float *>(s->data());
  return double(*reinterpret_cast<const int64_t *>(s->data()));
}

std::vector<float> Tensor::toFloatVector() const {
  const Type &t = typeOf("toFloatVector", *this);
  if (t.dtype != DType::F32)
    invalid("toFloatVector", "the tensor is " + describe(t));
  std::shared_ptr<Storage> s = currentValue(*this);
  const auto *p = reinterpret_cast<const float *>(s->data());
  return std::vector<float>(p, p + t.numel());
}

std::vector<int64_t> Tensor::toInt64Vector() const {
  const Type &t = typeOf("toInt64Vector", *this);
  if (t.dtype != DType::I64)
    invalid("toInt64Vector", "the tensor is " + describe(t));
  std::shared_ptr<Storage> s = currentValue(*this);
  const auto *p = reinterpret_cast<const int64_t *>(s->data());
  return std::vector<int64_t>(p, p + t.numel());
}

//===----------------------------------------------------------------------===//
// Gradients
//===----------------------------------------------------------------------===//

void Tensor::backward() const {
  const TensorImpl &self = implOf("backward", *this);
  if (self.type.dtype != DType::F32 || !self.type.shape.empty())
    invalid("backward", "needs an f32 scalar (shape []), got " +
                            describe(self.type) +
                            "; reduce it with sum() or "
                            "mean() first");
  if (!self.isPending() || !self.pending.node->differentiable)
    invalid("backward",
            "the tensor does not depend on a parameter through operations "
            "recorded with gradients enabled (values read after mark_step() "
            "and results of optimizer steps are constants; call mark_step() "
            "after optimizer.step())");

  // The parameters reached through differentiable nodes, in the order of
  // their first use (a leaf may be cached from an earlier step, so its own
  // creation order says nothing).
  std::vector<const Node *> reached = {self.pending.node.get()};
  std::set<const Node *> seen = {self.pending.node.get()};
  for (size_t i = 0; i < reached.size(); ++i)
    for (const Node::Use &u : reached[i]->operands)
      if (u.node->differentiable && u.node->kind != tg::OpKind::Argument &&
          seen.insert(u.node.get()).second)
        reached.push_back(u.node.get());
  std::sort(reached.begin(), reached.end(),
            [](const Node *a, const Node *b) { return a->id < b->id; });
  std::vector<std::shared_ptr<Node>> params;
  std::set<const Node *> found;
  for (const Node *n : reached)
    for (const Node::Use &u : n->operands)
      if (u.node->kind == tg::OpKind::Argument && u.node->differentiable &&
          found.insert(u.node.get()).second)
        params.push_back(u.node);

  // Under a GradAccumulator the gradient is that of k * loss, k the number
  // of samples of the loss's batch (GradAccumulator in trace.h says why). k
  // is an input of the graph: a short batch does not change its structure.
  Tracer &tracer = Tracer::get();
  Node::Use weight;
  if (tracer.accumulator) {
    std::optional<int64_t> samples;
    for (const Node *n : reached)
      for (const Node::Use &u : n->operands)
        if (const Type &t = u.node->results[u.result]; t.batched)
          samples = t.shape[0];
    if (!samples)
      invalid("backward",
              "a GradAccumulator weights each micro-step by its number of "
              "samples, but this loss does not depend on a batch (make the "
              "data with Tensor::fromBatch)");
    tracer.backwardBatches.push_back(*samples);
    weight = hyperLeaf(double(*samples), DType::F32);
  }

  NoGradGuard noGrad;
  for (const std::shared_ptr<Node> &leaf : params) {
    std::shared_ptr<TensorImpl> param = leaf->source.lock();
    if (!param)
      continue; // Nobody can read this gradient any more.
    if (!param->grad) {
      param->grad = makeMaterialized(param->type, Role::Gradient);
      param->grad->ofStorage = param->storage;
    }
    std::shared_ptr<Node> g =
        recordNode(tg::OpKind::Gradient, {self.pending, {leaf, 0}},
                   {param->type}, {}, {}, false);
    Node::Use gradient = {g, 0};
    if (weight.node)
      gradient = {recordNode(tg::OpKind::Mul, {gradient, weight},
                             {param->type}, {}, {}, false),
                  0};
    std::shared_ptr<Node> sum =
        recordNode(tg::OpKind::Add, {valueOf(param->grad), gradient},
                   {param->type}, {}, {}, false);
    assign(param->grad, {sum, 0});
  }
}

Tensor Tensor::grad() const {
  const TensorImpl &self = implOf("grad", *this);
  return self.grad ? Tensor(self.grad) : Tensor();
}

//===----------------------------------------------------------------------===//
// Operations
//===----------------------------------------------------------------------===//

Tensor Tensor::operator-() const {
  return unary(tg::OpKind::Neg, "neg", *this);
}
Tensor Tensor::relu() const { return unary(tg::OpKind::Relu, "relu", *this); }
Tensor Tensor::sigmoid() const {
  return unary(tg::OpKind::Sigmoid, "sigmoid", *this);
}
Tensor Tensor::tanh() const { return unary(tg::OpKind::Tanh, "tanh", *this); }
Tensor Tensor::gelu(bool tanhApproximation) const {
  return unary(tg::OpKind::Gelu, "gelu", *this, {tanhApproximation ? 1 : 0});
}
Tensor Tensor::exp() const { return unary(tg::OpKind::Exp, "exp", *this); }
Tensor Tensor::log() const { return unary(tg::OpKind::Log, "log", *this); }
Tensor Tensor::sqrt() const { return unary(tg::OpKind::Sqrt, "sqrt", *this); }
Tensor Tensor::pow(double exponent) const {
  return unary(tg::OpKind::Pow, "pow", *this, {}, {exponent});
}

Tensor Tensor::matmul(const Tensor &other) const {
  const char *op = "matmul";
  const Type &a = floatType(op, *this), &b = floatType(op, other);
  if (a.shape.size() < 2 || b.shape.size() < 2)
    invalid(op, "operands must have rank >= 2, got " + describe(a) + " and " +
                    describe(b));
  bool plainRhs = b.shape.size() == 2 && !b.batched;
  if (!plainRhs &&
      (a.shape.size() != b.shape.size() || a.batched != b.batched ||
       !std::equal(a.shape.begin(), a.shape.end() - 2, b.shape.begin())))
    invalid(op, "leading dimensions of " + describe(a) + " and " + describe(b) +
                    " must be equal, or the right operand a matrix");
  if (a.batched && a.shape.size() == 2 && b.batched)
    invalid(op, "a product of two batches would mix samples");
  if (a.shape.back() != b.shape[b.shape.size() - 2])
    invalid(op, "inner dimensions of " + describe(a) + " and " + describe(b) +
                    " differ");
  Type r{DType::F32, a.shape, a.batched};
  r.shape.back() = b.shape.back();
  return one(tg::OpKind::Matmul, {valueOf(impl_), valueOf(other.impl())}, r,
             {0, 0});
}

Tensor Tensor::reshape(const Shape &newShape) const {
  const char *op = "reshape";
  const Type &t = floatType(op, *this);
  Shape shape = newShape;
  int64_t known = 1, unknown = -1;
  size_t first = 0;
  if (t.batched) {
    if (shape.empty() || (shape[0] != -1 && shape[0] != t.shape[0]))
      invalid(op, "a batched tensor keeps its batch: " + shapeString(newShape) +
                      " must start with " + std::to_string(t.shape[0]) +
                      " or -1");
    shape[0] = t.shape[0];
    first = 1;
  }
  for (size_t i = first; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (unknown >= 0)
        invalid(op, "more than one -1 in " + shapeString(newShape));
      unknown = int64_t(i);
    } else if (shape[i] < 0) {
      invalid(op, "bad dimension in " + shapeString(newShape));
    } else {
      known *= shape[i];
    }
  }
  int64_t total = t.numel() / (t.batched ? t.shape[0] : 1);
  if (unknown >= 0) {
    if (known == 0 || total % known != 0)
      invalid(op,
              "cannot reshape " + describe(t) + " to " + shapeString(newShape));
    shape[unknown] = total / known;
    known *= shape[unknown];
  }
  if (known != total)
    invalid(op,
            "cannot reshape " + describe(t) + " to " + shapeString(newShape));
  std::vector<int64_t> ints = shape;
  if (t.batched)
    ints[0] = tg::kBatch;
  return one(tg::OpKind::Reshape, {valueOf(impl_)},
             Type{DType::F32, shape, t.batched}, std::move(ints));
}

Tensor Tensor::flatten(int64_t startDim) const {
  const char *op = "flatten";
  const Type &t = floatType(op, *this);
  int64_t rank = int64_t(t.shape.size());
  int64_t start = normalizeDim(op, startDim, rank);
  if (t.batched && start == 0)
    invalid(op, "cannot merge the batch dimension of " + describe(t));
  if (start == 1 && rank >= 2) {
    // nn.flatten: [d0, prod(d1...)].
    int64_t rest = 1;
    for (int64_t i = 1; i < rank; ++i)
      rest *= t.shape[i];
    return one(tg::OpKind::Flatten, {valueOf(impl_)},
               Type{DType::F32, {t.shape[0], rest}, t.batched}, {1});
  }
  Shape shape(t.shape.begin(), t.shape.begin() + start);
  int64_t rest = 1;
  for (int64_t i = start; i < rank; ++i)
    rest *= t.shape[i];
  shape.push_back(rest);
  return reshape(shape);
}

Tensor Tensor::transpose(int64_t dim0, int64_t dim1) const {
  const char *op = "transpose";
  const Type &t = floatType(op, *this);
  int64_t rank = int64_t(t.shape.size());
  int64_t a = normalizeDim(op, dim0, rank), b = normalizeDim(op, dim1, rank);
  if (t.batched && (a == 0 || b == 0) && a != b)
    invalid(op, "cannot move the batch dimension of " + describe(t));
  std::vector<int64_t> perm(rank);
  for (int64_t i = 0; i < rank; ++i)
    perm[i] = i;
  std::swap(perm[a], perm[b]);
  Type r = t;
  std::swap(r.shape[a], r.shape[b]);
  return one(tg::OpKind::Transpose, {valueOf(impl_)}, r, perm);
}

Tensor Tensor::sum() const {
  const Type &t = floatType("sum", *this);
  if (t.batched)
    return batchSum(*this);
  return one(tg::OpKind::ReduceSum, {valueOf(impl_)},
             Type{DType::F32, {}, false}, {0});
}

Tensor Tensor::mean() const {
  const Type &t = floatType("mean", *this);
  if (t.batched) {
    double perSample = double(t.numel() / t.shape[0]);
    Tensor m = batchSum(*this) / batchCount();
    return perSample == 1.0 ? m : m / perSample;
  }
  return one(tg::OpKind::ReduceMean, {valueOf(impl_)},
             Type{DType::F32, {}, false}, {0});
}

Tensor Tensor::sum(const std::vector<int64_t> &dims, bool keepDim) const {
  return reduce(tg::OpKind::ReduceSum, "sum", *this, dims, keepDim);
}
Tensor Tensor::mean(const std::vector<int64_t> &dims, bool keepDim) const {
  return reduce(tg::OpKind::ReduceMean, "mean", *this, dims, keepDim);
}
Tensor Tensor::max(const std::vector<int64_t> &dims, bool keepDim) const {
  return reduce(tg::OpKind::ReduceMax, "max", *this, dims, keepDim);
}

Tensor Tensor::softmax(int64_t dim) const {
  const Type &t = floatType("softmax", *this);
  int64_t d = normalizeDim("softmax", dim, int64_t(t.shape.size()));
  if (t.batched && d == 0)
    invalid("softmax", "cannot normalise across the samples of a batch");
  return unary(tg::OpKind::Softmax, "softmax", *this, {d});
}

Tensor Tensor::logSoftmax(int64_t dim) const {
  const Type &t = floatType("logSoftmax", *this);
  int64_t d = normalizeDim("logSoftmax", dim, int64_t(t.shape.size()));
  if (t.batched && d == 0)
    invalid("logSoftmax", "cannot normalise across the samples of a batch");
  return unary(tg::OpKind::LogSoftmax, "logSoftmax", *this, {d});
}

Tensor operator+(const Tensor &a, const Tensor &b) {
  return binary(tg::OpKind::Add, "add", a, b);
}
Tensor operator-(const Tensor &a, const Tensor &b) {
  return binary(tg::OpKind::Sub, "sub", a, b);
}
Tensor operator*(const Tensor &a, const Tensor &b) {
  return binary(tg::OpKind::Mul, "mul", a, b);
}
Tensor operator/(const Tensor &a, const Tensor &b) {
  return binary(tg::OpKind::Div, "div", a, b);
}
Tensor operator+(const Tensor &a, double b) { return a + constant(b); }
Tensor operator-(const Tensor &a, double b) { return a - constant(b); }
Tensor operator*(const Tensor &a, double b) { return a * constant(b); }
Tensor operator/(const Tensor &a, double b) { return a / constant(b); }
Tensor operator+(double a, const Tensor &b) { return constant(a) + b; }
Tensor operator-(double a, const Tensor &b) { return constant(a) - b; }
Tensor operator*(double a, const Tensor &b) { return constant(a) * b; }
Tensor operator/(double a, const Tensor &b) { return constant(a) / b; }

Tensor matmul(const Tensor &a, const Tensor &b) { return a.matmul(b); }

Tensor linear(const Tensor &x, const Tensor &weight, const Tensor &bias) {
  const char *op = "linear";
  const Type &t = floatType(op, x), &w = floatType(op, weight);
  if (w.shape.size() != 2 || w.batched)
    invalid(op, "weight must be a matrix [out, in], got " + describe(w));
  if (t.shape.empty() || t.shape.back() != w.shape[1])
    invalid(op, "input " + describe(t) + " does not end in the weight's " +
                    std::to_string(w.shape[1]) + " input features");
  if (t.batched && t.shape.size() < 2)
    invalid(op, "the features of a batched input " + describe(t) +
                    " would be its samples");
  std::vector<Node::Use> operands = {valueOf(x.impl()), valueOf(weight.impl())};
  if (bias.defined()) {
    const Type &b = floatType(op, bias);
    if (b.batched || b.shape != Shape{w.shape[0]})
      invalid(op, "bias must be [" + std::to_string(w.shape[0]) + "], got " +
                      describe(b));
    operands.push_back(valueOf(bias.impl()));
  }
  Type r = t;
  r.shape.back() = w.shape[0];
  return one(tg::OpKind::Linear, operands, r);
}

Tensor conv2d(const Tensor &x, const Tensor &weight, const Tensor &bias,
              const Conv2dOptions &o) {
  const char *op = "conv2d";
  const Type &t = floatType(op, x), &w = floatType(op, weight);
  if (t.shape.size() != 4)
    invalid(op, "input must be NCHW (rank 4), got " + describe(t));
  if (w.shape.size() != 4 || w.batched)
    invalid(op, "weight must be OIHW (rank 4), got " + describe(w));
  int64_t g = o.groups;
  if (g < 1 || t.shape[1] % g != 0 || w.shape[0] % g != 0 ||
      w.shape[1] * g != t.shape[1])
    invalid(op, "channels do not match: input " + describe(t) + ", weight " +
                    describe(w) + ", groups " + std::to_string(g));
  auto [sh, sw] = o.stride;
  auto [ph, pw] = o.padding;
  auto [dh, dw] = o.dilation;
  if (sh < 1 || sw < 1 || dh < 1 || dw < 1 || ph < 0 || pw < 0)
    invalid(op, "strides and dilations must be positive, padding "
                "non-negative");
  auto size = [](int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) {
    int64_t span = in + 2 * p - d * (k - 1) - 1;
    return span < 0 ? int64_t(0) : span / s + 1;
  };
  int64_t oh = size(t.shape[2], w.shape[2], sh, ph, dh);
  int64_t ow = size(t.shape[3], w.shape[3], sw, pw, dw);
  if (oh < 1 || ow < 1)
    invalid(op, "the kernel does not fit the input " + describe(t));
  std::vector<Node::Use> operands = {valueOf(x.impl()), valueOf(weight.impl())};
  if (bias.defined()) {
    const Type &b = floatType(op, bias);
    if (b.batched || b.shape != Shape{w.shape[0]})
      invalid(op, "bias must be [" + std::to_string(w.shape[0]) + "], got " +
                      describe(b));
    operands.push_back(valueOf(bias.impl()));
  }
  return one(tg::OpKind::Conv2d, operands,
             Type{DType::F32, {t.shape[0], w.shape[0], oh, ow}, t.batched},
             {sh, sw, ph, pw, ph, pw, dh, dw, g});
}

Tensor max_pool2d(const Tensor &x, const Pool2dOptions &options) {
  const Type &t = floatType("max_pool2d", x);
  Shape out;
  std::vector<int64_t> ints = poolInts("max_pool2d", t, options, out, false);
  return one(tg::OpKind::MaxPool2d, {valueOf(x.impl())},
             Type{DType::F32, out, t.batched}, std::move(ints));
}

Tensor avg_pool2d(const Tensor &x, const Pool2dOptions &options) {
  const Type &t = floatType("avg_pool2d", x);
  Shape out;
  std::vector<int64_t> ints = poolInts("avg_pool2d", t, options, out, true);
  return one(tg::OpKind::AvgPool2d, {valueOf(x.impl())},
             Type{DType::F32, out, t.batched}, std::move(ints));
}

Tensor cross_entropy(const Tensor &logits, const Tensor &labels) {
  const char *op = "cross_entropy";
  const Type &l = floatType(op, logits);
  const Type &y = typeOf(op, labels);
  if (l.shape.size() != 2)
    invalid(op, "logits must be [samples, classes], got " + describe(l));
  if (y.dtype != DType::I64 || y.shape != Shape{l.shape[0]})
    invalid(op, "labels must be i64 [" + std::to_string(l.shape[0]) +
                    "], got " + describe(y));
  requireSameBatch(op, l, y);
  std::vector<Node::Use> operands = {valueOf(logits.impl()),
                                     valueOf(labels.impl())};
  if (!l.batched)
    return one(tg::OpKind::CrossEntropy, operands, Type{DType::F32, {}, false},
               {2});
  Tensor perSample = one(tg::OpKind::CrossEntropy, operands,
                         Type{DType::F32, {l.shape[0]}, true}, {0});
  return batchMean(perSample);
}

Tensor mse_loss(const Tensor &input, const Tensor &target) {
  const char *op = "mse_loss";
  const Type &a = floatType(op, input), &b = floatType(op, target);
  if (a.shape != b.shape)
    invalid(op, "input " + describe(a) + " and target " + describe(b) +
                    " must have one shape");
  requireSameBatch(op, a, b);
  std::vector<Node::Use> operands = {valueOf(input.impl()),
                                     valueOf(target.impl())};
  if (!a.batched) {
    if (a.shape.empty())
      invalid(op, "needs tensors of rank >= 1");
    return one(tg::OpKind::MseLoss, operands, Type{DType::F32, {}, false}, {2});
  }
  // Per-sample means over the non-batch dimensions, then the mean over real
  // samples: the mean over all elements of the real samples.
  Tensor perSample = one(tg::OpKind::MseLoss, operands,
                         Type{DType::F32, {a.shape[0]}, true}, {0});
  return batchMean(perSample);
}

//===----------------------------------------------------------------------===//
// No-grad
//===----------------------------------------------------------------------===//

NoGradGuard::NoGradGuard() { Tracer::get().pushNoGrad(); }
NoGradGuard::~NoGradGuard() { Tracer::get().popNoGrad(); }

} // namespace cleave
