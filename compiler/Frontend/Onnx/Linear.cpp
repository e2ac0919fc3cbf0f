//===- Linear.cpp - Gemm and MatMul ---------------------------------------===//
//
// Gemm in the layout PyTorch exports nn.Linear with (transB = 1, unit
// alpha and beta, a vector bias) is nn.linear; any other Gemm is a matmul
// with transpose flags, scaled and offset. MatMul follows numpy, including
// vector operands.
//
//===----------------------------------------------------------------------===//

#include "compiler/Frontend/Onnx/Importer.h"

#include "dialects/NN/IR/NNOps.h"

using namespace mlir;
using namespace mlir::cleave;
using namespace mlir::cleave::importer;

namespace {

/// A rank-0 constant of `like`'s element type.
Value scalarLike(NodeImporter &n, double value, Value like) {
  Type elt = cast<RankedTensorType>(like.getType()).getElementType();
  auto type = RankedTensorType::get({}, elt);
  return n.getGraph().materialize(
      DenseElementsAttr::get(type, FloatAttr::get(elt, value).getValue()),
      n.getLoc());
}

LogicalResult importGemm(NodeImporter &n) {
  if (failed(n.checkAttrs({"alpha", "beta", "transA", "transB"})))
    return failure();
  FailureOr<double> alpha = n.getFloat("alpha", 1.0);
  FailureOr<double> beta = n.getFloat("beta", 1.0);
  FailureOr<int64_t> transA = n.getInt("transA", 0);
  FailureOr<int64_t> transB = n.getInt("transB", 0);
  FailureOr<Value> a = n.floatTensor(0);
  FailureOr<Value> b = n.floatTensor(1);
  if (failed(alpha) || failed(beta) || failed(transA) || failed(transB) ||
      failed(a) || failed(b))
    return failure();
  for (Value v : {*a, *b})
    if (cast<RankedTensorType>(v.getType()).getRank() != 2)
      return n.emitError() << "Gemm operands must be matrices, got "
                           << v.getType();
  Value c;
  if (n.hasInput(2) && *beta != 0.0) {
    FailureOr<Value> bias = n.floatTensor(2);
    if (failed(bias))
      return failure();
    c = *bias;
  }

  bool vectorBias = !c || (*beta == 1.0 &&
                           cast<RankedTensorType>(c.getType()).getRank() == 1);
  if (!*transA && *transB && *alpha == 1.0 && vectorBias)
    return n.createOutput<nn::LinearOp>(*a, *b, c);

  auto product = n.create<nn::MatmulOp>(*a, *b, *transA != 0, *transB != 0);
  if (failed(product))
    return failure();
  Value y = product->getResult();
  if (*alpha != 1.0) {
    auto scaled = n.create<nn::MulOp>(y, scalarLike(n, *alpha, y));
    if (failed(scaled))
      return failure();
    y = scaled->getResult();
  }
  if (c) {
    if (*beta != 1.0) {
      auto scaled = n.create<nn::MulOp>(c, scalarLike(n, *beta, c));
      if (failed(scaled))
        return failure();
      c = scaled->getResult();
    }
    auto sum = n.create<nn::AddOp>(y, c);
    if (failed(sum))
      return failure();
    y = sum->getResult();
  }
  n.setOutput(0, y);
  return success();
}

LogicalResult importMatMul(NodeImporter &n) {
  if (failed(n.checkAttrs({})))
    return failure();
  FailureOr<Value> a = n.floatTensor(0);
  FailureOr<Value> b = n.floatTensor(1);
  if (failed(a) || failed(b))
    return failure();
  GraphImporter &g = n.getGraph();
  auto aShape = g.symbolicShape(*a, n.getLoc());
  auto bShape = g.symbolicShape(*b, n.getLoc());
  if (failed(aShape) || failed(bShape))
    return failure();
  if (aShape->empty() || bShape->empty())
    return n.emitError() << "MatMul of a scalar";

  // numpy: a vector lhs is a row, a vector rhs a column, and the unit
  // dimension goes again afterwards.
  bool rowVector = aShape->size() == 1, columnVector = bShape->size() == 1;
  if (rowVector) {
    a = n.reshape(*a, {SymInt::constant(1), (*aShape)[0]});
    if (failed(a))
      return failure();
  }
  if (columnVector) {
    b = n.reshape(*b, {(*bShape)[0], SymInt::constant(1)});
    if (failed(b))
      return failure();
  }
  auto product = n.create<nn::MatmulOp>(*a, *b);
  if (failed(product))
    return failure();
  Value y = product->getResult();
  if (rowVector || columnVector) {
    auto shape = g.symbolicShape(y, n.getLoc());
    if (failed(shape))
      return failure();
    if (columnVector)
      shape->pop_back();
    if (rowVector)
      shape->erase(shape->end() - (columnVector ? 1 : 2));
    FailureOr<Value> r = n.reshape(y, *shape);
    if (failed(r))
      return failure();
    y = *r;
  }
  n.setOutput(0, y);
  return success();
}

} // namespace

void importer::populateLinearImporters(ImporterTable &table) {
  table["Gemm"] = {importGemm};
  table["MatMul"] = {importMatMul};
}
