//===- GatherKernels.cpp - Reference gathers and their scatter-adds -------===//
//
// nn.gather, nn.gather_elements, their gradients and nn.iota as direct loops
// over row-major positions, accumulated in double. Indices are checked: a
// negative one counts from the end of the axis, anything else out of range
// (or a float index that is not an integer) is an error naming the op.
//
//===----------------------------------------------------------------------===//

#include "compiler/Interpreter/Kernels.h"

#include "dialects/NN/IR/NNOps.h"

#include <cmath>

using namespace mlir;
using namespace mlir::cleave;
using namespace mlir::cleave::interp;
using namespace mlir::cleave::interp::kernels;

namespace {

/// Index `i` of `ids` resolved against an axis of `size` entries.
FailureOr<int64_t> indexAt(Operation *op, const Tensor &ids, int64_t i,
                           int64_t size) {
  double raw = ids.getDouble(i);
  if (std::trunc(raw) != raw)
    return op->emitOpError("index ")
           << raw << " at position " << i << " is not an integer";
  int64_t id = ids.getInt(i);
  if (id < -size || id >= size)
    return op->emitOpError("index ")
           << id << " at position " << i << " is out of range [" << -size
           << ", " << size << ")";
  return id < 0 ? id + size : id;
}

/// The product of `shape[from, to)`.
int64_t product(ArrayRef<int64_t> shape, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t d = from; d < to; ++d)
    p *= shape[d];
  return p;
}

/// Calls `fn(outer, id, k, inner)` for every (gathered position, index):
/// the gather reads input[outer, id, inner] into result[outer, k, inner].
/// `dataShape` is the gather's input, `ids` its indices.
template <typename Fn>
LogicalResult forEachGathered(Operation *op, ArrayRef<int64_t> dataShape,
                              const Tensor &ids, int64_t axis, Fn fn) {
  int64_t outer = product(dataShape, 0, axis);
  int64_t inner = product(dataShape, axis + 1, dataShape.size());
  int64_t size = dataShape[axis], count = ids.getNumElements();
  for (int64_t k = 0; k < count; ++k) {
    FailureOr<int64_t> id = indexAt(op, ids, k, size);
    if (failed(id))
      return failure();
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < inner; ++j)
        fn((o * size + *id) * inner + j, (o * count + k) * inner + j);
  }
  return success();
}

LogicalResult runGather(nn::GatherOp op, Frame &f) {
  const Tensor &x = f.get(op.getInput()), &ids = f.get(op.getIndices());
  int64_t axis = op.getAxis();
  SmallVector<int64_t> shape(x.getShape().take_front(axis));
  llvm::append_range(shape, ids.getShape());
  llvm::append_range(shape, x.getShape().drop_front(axis + 1));
  Tensor out(x.getDType(), shape);
  if (failed(forEachGathered(op, x.getShape(), ids, axis,
                             [&](int64_t from, int64_t to) {
                               out.setDouble(to, x.getDouble(from));
                             })))
    return failure();
  f.set(op.getResult(), std::move(out));
  return success();
}

LogicalResult runGatherGrad(nn::GatherGradOp op, Frame &f) {
  const Tensor &g = f.get(op.getGrad()), &ids = f.get(op.getIndices());
  auto type = cast<RankedTensorType>(op.getType());
  ArrayRef<int64_t> shape = type.getShape();
  std::vector<double> acc(ShapedType::getNumElements(shape), 0.0);
  if (failed(forEachGathered(
          op, shape, ids, op.getAxis(),
          [&](int64_t to, int64_t from) { acc[to] += g.getDouble(from); })))
    return failure();
  f.set(op.getResult(), Tensor::fromDoubles(g.getDType(), shape, acc));
  return success();
}

/// Calls `fn(source, position)` for each element of `ids`: position is its
/// row-major offset in `ids`, source the offset in a tensor of `dataShape`
/// it selects along `axis`.
template <typename Fn>
LogicalResult forEachElement(Operation *op, ArrayRef<int64_t> dataShape,
                             const Tensor &ids, int64_t axis, Fn fn) {
  SmallVector<int64_t> dataStrides(dataShape.size(), 1);
  for (int64_t d = (int64_t)dataShape.size() - 2; d >= 0; --d)
    dataStrides[d] = dataStrides[d + 1] * dataShape[d + 1];
  SmallVector<int64_t> idStrides = ids.getStrides();
  ArrayRef<int64_t> idShape = ids.getShape();
  for (int64_t p = 0, e = ids.getNumElements(); p < e; ++p) {
    FailureOr<int64_t> id = indexAt(op, ids, p, dataShape[axis]);
    if (failed(id))
      return failure();
    int64_t source = 0;
    for (size_t d = 0; d < idShape.size(); ++d) {
      int64_t coord = p / idStrides[d] % idShape[d];
      source += ((int64_t)d == axis ? *id : coord) * dataStrides[d];
    }
    fn(source, p);
  }
  return success();
}

LogicalResult runGatherElements(nn::GatherElementsOp op, Frame &f) {
  const Tensor &x = f.get(op.getInput()), &ids = f.get(op.getIndices());
  Tensor out(x.getDType(), ids.getShape());
  if (failed(forEachElement(op, x.getShape(), ids, op.getAxis(),
                            [&](int64_t from, int64_t to) {
                              out.setDouble(to, x.getDouble(from));
                            })))
    return failure();
  f.set(op.getResult(), std::move(out));
  return success();
}

LogicalResult runGatherElementsGrad(nn::GatherElementsGradOp op, Frame &f) {
  const Tensor &g = f.get(op.getGrad()), &ids = f.get(op.getIndices());
  ArrayRef<int64_t> shape = op.getShape();
  std::vector<double> acc(ShapedType::getNumElements(shape), 0.0);
  if (failed(forEachElement(
          op, shape, ids, op.getAxis(),
          [&](int64_t to, int64_t from) { acc[to] += g.getDouble(from); })))
    return failure();
  f.set(op.getResult(), Tensor::fromDoubles(g.getDType(), shape, acc));
  return success();
}

LogicalResult runIota(nn::IotaOp op, Frame &f) {
  int64_t n = f.get(op.getSource()).getShape()[op.getAxis()];
  auto dtype = getDType(op.getDtype());
  if (!dtype)
    return op.emitOpError("unsupported dtype");
  Tensor out(*dtype, {n});
  for (int64_t i = 0; i < n; ++i)
    out.setDouble(i, static_cast<double>(i));
  f.set(op.getResult(), std::move(out));
  return success();
}

} // namespace

void kernels::registerGatherKernels(KernelTable &t) {
  t.add<nn::GatherOp, runGather>();
  t.add<nn::GatherGradOp, runGatherGrad>();
  t.add<nn::GatherElementsOp, runGatherElements>();
  t.add<nn::GatherElementsGradOp, runGatherElementsGrad>();
  t.add<nn::IotaOp, runIota>();
}
