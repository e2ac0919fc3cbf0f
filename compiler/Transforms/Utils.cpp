//===- Utils.cpp - Helpers shared by Cleave's transformations -------------===//
//
// Type re-inference and structural checks.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/Utils.h"

#include "mlir/Interfaces/InferTypeOpInterface.h"

using namespace mlir;

LogicalResult cleave::reinferTypes(func::FuncOp func) {
  for (Operation &op : func.getBody().front()) {
    if (isa<func::ReturnOp>(op))
      continue;
    auto infer = dyn_cast<InferTypeOpInterface>(op);
    if (!infer) {
      // Ops with fixed result types (constants) are fine as long as their
      // operands did not change type.
      continue;
    }
    SmallVector<Type> types;
    if (failed(infer.inferReturnTypes(
            op.getContext(), op.getLoc(), op.getOperands(),
            op.getRawDictionaryAttrs(), op.getPropertiesStorage(),
            op.getRegions(), types)))
      return op.emitOpError("cannot be specialised to the new input shapes");
    for (auto [result, type] : llvm::zip(op.getResults(), types))
      result.setType(type);
  }
  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  func.setFunctionType(
      FunctionType::get(func.getContext(),
                        func.getBody().front().getArgumentTypes(),
                        ret.getOperandTypes()));
  return success();
}

LogicalResult cleave::requireStraightLine(func::FuncOp func, StringRef why) {
  if (func.isExternal())
    return func.emitError("@") << func.getSymName() << " has no body";
  if (!func.getBody().hasOneBlock())
    return func.emitError("@")
           << func.getSymName() << " has control flow; " << why
           << " needs a single block";
  for (Operation &op : func.getBody().front())
    if (op.getNumRegions() != 0)
      return op.emitOpError("has regions; ")
             << why << " needs straight-line code";
  return success();
}
