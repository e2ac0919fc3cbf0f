//===- NNGather.cpp - Gathers with run-time indices and their gradients ---===//
//
// Type inference and vector-Jacobian products of nn.gather and
// nn.gather_elements, and nn.iota, which builds per-sample indices: the
// gradient of a gather is a scatter-add of the cotangent into zeros of the
// input's shape; the indices carry none.
//
//===----------------------------------------------------------------------===//

#include "dialects/NN/IR/NNOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"

using namespace mlir;
using namespace mlir::cleave::nn;

static constexpr int64_t kDyn = ShapedType::kDynamic;

static ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

static std::string shapeStr(ArrayRef<int64_t> shape) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "[";
  llvm::interleave(
      shape, os, [&](int64_t d) { d == kDyn ? os << "?" : os << d; }, ", ");
  os << "]";
  return s;
}

/// Checks `axis` against `rank` (no negative axes: the importer normalises
/// ONNX's).
static LogicalResult checkAxis(std::optional<Location> loc, int64_t axis,
                               int64_t rank) {
  if (axis < 0 || axis >= rank)
    return emitOptionalError(loc, "axis ", axis, " is out of range for rank ",
                             rank);
  return success();
}

//===----------------------------------------------------------------------===//
// nn.gather
//===----------------------------------------------------------------------===//

LogicalResult GatherOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc, Adaptor a,
                                         SmallVectorImpl<Type> &types) {
  auto input = cast<RankedTensorType>(a.getInput().getType());
  ArrayRef<int64_t> ids = shapeOf(a.getIndices());
  int64_t axis = a.getAxis();
  if (failed(checkAxis(loc, axis, input.getRank())))
    return failure();
  SmallVector<int64_t> shape(input.getShape().take_front(axis));
  shape.append(ids.begin(), ids.end());
  llvm::append_range(shape, input.getShape().drop_front(axis + 1));
  types.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}

LogicalResult GatherOp::buildVJP(OpBuilder &b, ValueRange dys,
                                 ArrayRef<bool> needed,
                                 SmallVectorImpl<Value> &grads) {
  int64_t size = shapeOf(getInput())[getAxis()];
  if (needed[0] && ShapedType::isDynamic(size))
    return emitOpError("gradient needs a static gathered axis");
  grads.push_back(needed[0]
                      ? Value(GatherGradOp::create(
                            b, getLoc(), dys[0], getIndices(), getAxis(), size))
                      : Value());
  grads.push_back(Value());
  return success();
}

LogicalResult GatherGradOp::inferReturnTypes(MLIRContext *,
                                             std::optional<Location> loc,
                                             Adaptor a,
                                             SmallVectorImpl<Type> &types) {
  auto grad = cast<RankedTensorType>(a.getGrad().getType());
  ArrayRef<int64_t> ids = shapeOf(a.getIndices());
  int64_t axis = a.getAxis(), q = ids.size();
  if (axis < 0 || axis + q > grad.getRank())
    return emitOptionalError(loc, "grad ", shapeStr(grad.getShape()),
                             " has no room for indices ", shapeStr(ids),
                             " at axis ", axis);
  for (int64_t k = 0; k < q; ++k) {
    int64_t g = grad.getDimSize(axis + k);
    if (g != kDyn && ids[k] != kDyn && g != ids[k])
      return emitOptionalError(loc, "grad ", shapeStr(grad.getShape()),
                               " does not hold indices ", shapeStr(ids),
                               " at axis ", axis);
  }
  if (a.getDimSize() < 1)
    return emitOptionalError(loc, "dim_size must be >= 1, got ",
                             a.getDimSize());
  SmallVector<int64_t> shape(grad.getShape().take_front(axis));
  shape.push_back(a.getDimSize());
  llvm::append_range(shape, grad.getShape().drop_front(axis + q));
  types.push_back(RankedTensorType::get(shape, grad.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// nn.gather_elements
//===----------------------------------------------------------------------===//

/// Whether `ids` may index `input` elementwise along `axis`: same rank, and
/// no larger along the other axes.
static LogicalResult checkElementIndices(std::optional<Location> loc,
                                         ArrayRef<int64_t> input,
                                         ArrayRef<int64_t> ids, int64_t axis) {
  if (ids.size() != input.size())
    return emitOptionalError(loc, "indices ", shapeStr(ids),
                             " must have the rank of ", shapeStr(input));
  if (failed(checkAxis(loc, axis, input.size())))
    return failure();
  for (size_t d = 0; d < input.size(); ++d)
    if ((int64_t)d != axis && input[d] != kDyn && ids[d] != kDyn &&
        ids[d] > input[d])
      return emitOptionalError(loc, "indices ", shapeStr(ids),
                               " are larger than ", shapeStr(input),
                               " along axis ", d);
  return success();
}

LogicalResult GatherElementsOp::inferReturnTypes(MLIRContext *,
                                                 std::optional<Location> loc,
                                                 Adaptor a,
                                                 SmallVectorImpl<Type> &types) {
  auto input = cast<RankedTensorType>(a.getInput().getType());
  ArrayRef<int64_t> ids = shapeOf(a.getIndices());
  if (failed(checkElementIndices(loc, input.getShape(), ids, a.getAxis())))
    return failure();
  types.push_back(RankedTensorType::get(ids, input.getElementType()));
  return success();
}

LogicalResult GatherElementsOp::buildVJP(OpBuilder &b, ValueRange dys,
                                         ArrayRef<bool> needed,
                                         SmallVectorImpl<Value> &grads) {
  ArrayRef<int64_t> shape = shapeOf(getInput());
  if (needed[0] && ShapedType::isDynamicShape(shape))
    return emitOpError("gradient needs a static input shape");
  grads.push_back(
      needed[0] ? Value(GatherElementsGradOp::create(
                      b, getLoc(), dys[0], getIndices(), getAxis(), shape))
                : Value());
  grads.push_back(Value());
  return success();
}

LogicalResult
GatherElementsGradOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc, Adaptor a,
                                       SmallVectorImpl<Type> &types) {
  auto grad = cast<RankedTensorType>(a.getGrad().getType());
  ArrayRef<int64_t> ids = shapeOf(a.getIndices());
  ArrayRef<int64_t> shape = a.getShape();
  if (llvm::any_of(shape, [](int64_t d) { return d < 1; }))
    return emitOptionalError(loc, "shape ", shapeStr(shape),
                             " must be static and non-empty");
  if (grad.getShape() != ids)
    return emitOptionalError(loc, "grad ", shapeStr(grad.getShape()),
                             " must have the shape of the indices ",
                             shapeStr(ids));
  if (failed(checkElementIndices(loc, shape, ids, a.getAxis())))
    return failure();
  types.push_back(RankedTensorType::get(shape, grad.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// nn.iota
//===----------------------------------------------------------------------===//

LogicalResult IotaOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc, Adaptor a,
                                       SmallVectorImpl<Type> &types) {
  auto source = cast<RankedTensorType>(a.getSource().getType());
  if (failed(checkAxis(loc, a.getAxis(), source.getRank())))
    return failure();
  types.push_back(
      RankedTensorType::get({source.getDimSize(a.getAxis())}, a.getDtype()));
  return success();
}
