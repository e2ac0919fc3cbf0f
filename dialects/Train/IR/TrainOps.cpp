//===- TrainOps.cpp - train dialect ops -----------------------------------===//
//
// Verifiers of the train ops.
//
//===----------------------------------------------------------------------===//

#include "dialects/Train/IR/TrainOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace mlir::cleave::train;

//===----------------------------------------------------------------------===//
// train.global
//===----------------------------------------------------------------------===//

LogicalResult GlobalOp::verify() {
  RankedTensorType type = getTensorType();
  bool isFloat = isa<FloatType>(type.getElementType());
  if (getKind() == GlobalKind::counter) {
    if (!type.getElementType().isInteger(64) || type.getRank() != 0)
      return emitOpError("a counter must be tensor<i64>, got ") << type;
  } else if (!isFloat) {
    return emitOpError("a ") << stringifyGlobalKind(getKind())
                             << " must have a floating-point type, got "
                             << type;
  }
  if (!type.hasStaticShape())
    return emitOpError("globals need a static shape, got ") << type;
  if (auto init = getInitialValueAttr()) {
    if (auto elements = dyn_cast<ElementsAttr>(init)) {
      if (elements.getType() != type)
        return emitOpError("initial value has type ")
               << elements.getType() << ", expected " << type;
    } else if (!isa<InitializerAttr>(init)) {
      return emitOpError("initial value must be a #train.init or an elements "
                         "attribute");
    }
  }
  if (getOf()) {
    if (getKind() != GlobalKind::accumulator && getKind() != GlobalKind::state)
      return emitOpError("only accumulators and optimizer state belong to a "
                         "parameter ('of')");
    auto target = SymbolTable::lookupNearestSymbolFrom<GlobalOp>(
        getOperation(), getOfAttr());
    if (!target || target.getKind() != GlobalKind::param)
      return emitOpError("'of' must name a param global, got ") << getOfAttr();
    if (target.getType() != type)
      return emitOpError("has type ") << type << " but its parameter "
                                      << getOfAttr() << " has type "
                                      << target.getType();
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Accessors
//===----------------------------------------------------------------------===//

/// Resolves the global an accessor names and checks its type.
static FailureOr<GlobalOp> resolveGlobal(Operation *op,
                                         SymbolTableCollection &tables,
                                         FlatSymbolRefAttr name, Type type) {
  auto global = tables.lookupNearestSymbolFrom<GlobalOp>(op, name);
  if (!global)
    return op->emitOpError("refers to ")
           << name << ", which is not a train.global";
  if (global.getType() != type)
    return op->emitOpError("uses type ")
           << type << " but " << name << " has type " << global.getType();
  return global;
}

LogicalResult LoadOp::verifySymbolUses(SymbolTableCollection &tables) {
  return resolveGlobal(*this, tables, getGlobalAttr(), getType());
}

LogicalResult StoreOp::verifySymbolUses(SymbolTableCollection &tables) {
  return resolveGlobal(*this, tables, getGlobalAttr(), getValue().getType());
}

LogicalResult AccumulateOp::verifySymbolUses(SymbolTableCollection &tables) {
  auto global =
      resolveGlobal(*this, tables, getGlobalAttr(), getValue().getType());
  if (failed(global))
    return failure();
  if (global->getKind() != GlobalKind::accumulator)
    return emitOpError("accumulates into ")
           << getGlobalAttr() << ", which is a "
           << stringifyGlobalKind(global->getKind()) << ", not an accumulator";
  return success();
}

//===----------------------------------------------------------------------===//
// train.window_sum
//===----------------------------------------------------------------------===//

LogicalResult WindowSumOp::verify() {
  ArrayAttr targets = getTargetsAttr();
  if (!targets)
    return success();
  if (targets.size() != getValues().size())
    return emitOpError("has ") << targets.size() << " targets for "
                               << getValues().size() << " values";
  for (Attribute t : targets)
    if (!isa<FlatSymbolRefAttr, StringAttr>(t))
      return emitOpError("targets must be parameter symbols or strings, got ")
             << t;
  return success();
}

//===----------------------------------------------------------------------===//
// Optimizers
//===----------------------------------------------------------------------===//

/// Hyperparameters must have the parameters' element type.
static LogicalResult checkHyperType(Operation *op, Type param, Type hyper) {
  if (getElementTypeOrSelf(param) != getElementTypeOrSelf(hyper))
    return op->emitOpError("hyperparameters have element type ")
           << getElementTypeOrSelf(hyper) << ", expected "
           << getElementTypeOrSelf(param) << " as the parameter";
  return success();
}

LogicalResult SgdOp::verify() {
  return checkHyperType(*this, getParam().getType(), getLr().getType());
}

LogicalResult MomentumOp::verify() {
  return checkHyperType(*this, getParam().getType(), getLr().getType());
}

LogicalResult AdamOp::verify() {
  return checkHyperType(*this, getParam().getType(), getLr().getType());
}

LogicalResult ClipByGlobalNormOp::verify() {
  if (getGrads().empty())
    return emitOpError("needs at least one gradient");
  for (Value g : getGrads())
    if (failed(checkHyperType(*this, g.getType(), getMaxNorm().getType())))
      return failure();
  if (getNorm().getType() != getMaxNorm().getType())
    return emitOpError("norm result must have the type of max_norm");
  return success();
}

#define GET_OP_CLASSES
#include "dialects/Train/IR/TrainOps.cpp.inc"
