//===- TrainOps.cpp - train dialect ops -----------------------------------===//
//
// Verifiers and custom assembly directives of the train ops.
//
//===----------------------------------------------------------------------===//

#include "dialects/Train/IR/TrainOps.h"
#include "dialects/Common/EnumKeyword.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/TypeUtilities.h"

#include <string>
#include <utility>

using namespace mlir;
using namespace mlir::cleave;
using namespace mlir::cleave::train;

//===----------------------------------------------------------------------===//
// custom<TypesThenLast>
//===----------------------------------------------------------------------===//

/// Parses `t1, ..., tn, last` with n >= 1: the types of a variadic operand
/// followed by the type of one more operand.
static ParseResult parseTypesThenLast(OpAsmParser &parser,
                                      SmallVectorImpl<Type> &types,
                                      Type &last) {
  SMLoc loc = parser.getCurrentLocation();
  if (parser.parseTypeList(types))
    return failure();
  if (types.size() < 2)
    return parser.emitError(loc, "expected at least two types, got ")
           << types.size();
  last = types.pop_back_val();
  return success();
}

static void printTypesThenLast(OpAsmPrinter &printer, Operation *,
                               TypeRange types, Type last) {
  for (Type t : types)
    printer << t << ", ";
  printer << last;
}

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
    return emitOpError("a ")
           << stringifyGlobalKind(getKind())
           << " must have a floating-point type, got " << type;
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
  if (getOf() && getKind() != GlobalKind::accumulator &&
      getKind() != GlobalKind::state)
    return emitOpError("only accumulators and optimizer state belong to a "
                       "parameter ('of'), not a ")
           << stringifyGlobalKind(getKind());
  if (getShards() && (getKind() != GlobalKind::state || !getOf()))
    return emitOpError("has 'shards', which only optimizer state of a "
                       "parameter ('of') may have");
  return success();
}

/// Checks that `name` refers to a param global of type `type`; `what` names
/// the referring entity in diagnostics.
static LogicalResult verifyParamRef(Operation *op,
                                    SymbolTableCollection &tables,
                                    FlatSymbolRefAttr name, Type type,
                                    StringRef what) {
  Operation *symbol = tables.lookupNearestSymbolFrom(op, name);
  auto target = dyn_cast_or_null<GlobalOp>(symbol);
  if (!target)
    return op->emitOpError()
           << what << " " << name << " does not name a train.global";
  if (target.getKind() != GlobalKind::param)
    return op->emitOpError()
           << what << " " << name << " must name a param, not a "
           << stringifyGlobalKind(target.getKind());
  if (target.getType() != type)
    return op->emitOpError() << what << " " << name << " has type "
                             << target.getType() << ", expected " << type;
  return success();
}

LogicalResult GlobalOp::verifySymbolUses(SymbolTableCollection &tables) {
  if (!getOfAttr())
    return success();
  if (std::optional<uint64_t> shards = getShards()) {
    // The parameter's type is whatever the shard type is derived from.
    auto param = tables.lookupNearestSymbolFrom<GlobalOp>(*this, getOfAttr());
    if (!param || param.getKind() != GlobalKind::param)
      return verifyParamRef(*this, tables, getOfAttr(), getType(), "'of'");
    RankedTensorType expected =
        ShardOp::getShardType(param.getTensorType(), int64_t(*shards));
    if (getType() != expected)
      return emitOpError("a shard of ")
             << getOfAttr() << " (" << param.getType() << ") over " << *shards
             << " ranks has type " << expected << ", not " << getType();
    return success();
  }
  return verifyParamRef(*this, tables, getOfAttr(), getType(), "'of'");
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

LogicalResult WindowSumOp::verifySymbolUses(SymbolTableCollection &tables) {
  ArrayAttr targets = getTargetsAttr();
  if (!targets)
    return success();
  for (auto [i, target, value] : llvm::enumerate(targets, getValues())) {
    auto param = dyn_cast<FlatSymbolRefAttr>(target);
    if (param && failed(verifyParamRef(*this, tables, param, value.getType(),
                                       "target #" + std::to_string(i))))
      return failure();
  }
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

LogicalResult RmspropOp::verify() {
  return checkHyperType(*this, getParam().getType(), getLr().getType());
}

LogicalResult AdagradOp::verify() {
  return checkHyperType(*this, getParam().getType(), getLr().getType());
}

LogicalResult LambOp::verify() {
  return checkHyperType(*this, getParam().getType(), getLr().getType());
}

LogicalResult LarsOp::verify() {
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

LogicalResult CheckFiniteOp::verify() {
  if (getValues().empty())
    return emitOpError("needs at least one value");
  return success();
}

//===----------------------------------------------------------------------===//
// ZeRO-1 sharding
//===----------------------------------------------------------------------===//

RankedTensorType ShardOp::getShardType(RankedTensorType full, int64_t ranks) {
  int64_t n = full.getNumElements();
  return RankedTensorType::get({(n + ranks - 1) / ranks},
                               full.getElementType());
}

/// Checks that `shard` is the shard type of `full` for `ranks` ranks; `what`
/// names the pair in diagnostics.
static LogicalResult checkShardPair(Operation *op, Type full, Type shard,
                                    int64_t ranks, const Twine &what) {
  auto fullType = cast<RankedTensorType>(full);
  if (!fullType.hasStaticShape())
    return op->emitOpError()
           << what << ": sharding needs a static shape, got " << full;
  RankedTensorType expected = ShardOp::getShardType(fullType, ranks);
  if (shard != expected)
    return op->emitOpError()
           << what << ": a shard of " << full << " over " << ranks
           << " ranks is " << expected << ", got " << shard;
  return success();
}

/// Checks full/shard type pairs of a variadic collective.
static LogicalResult checkShardPairs(Operation *op, TypeRange full,
                                     TypeRange shards, int64_t ranks,
                                     StringRef fullName) {
  if (full.empty())
    return op->emitOpError("needs at least one ") << fullName;
  if (full.size() != shards.size())
    return op->emitOpError("has ")
           << op->getNumOperands() << " operands and " << op->getNumResults()
           << " results; expected one result per operand";
  for (auto [i, f, s] : llvm::enumerate(full, shards))
    if (failed(checkShardPair(op, f, s, ranks, fullName + " #" + Twine(i))))
      return failure();
  return success();
}

LogicalResult ReduceScatterOp::verify() {
  return checkShardPairs(*this, getValues().getTypes(), getResults().getTypes(),
                         getRanks(), "value");
}

LogicalResult AllGatherOp::verify() {
  return checkShardPairs(*this, getResults().getTypes(), getShards().getTypes(),
                         getRanks(), "result");
}

LogicalResult ShardOp::verify() {
  return checkShardPair(*this, getInput().getType(), getResult().getType(),
                        getRanks(), "input");
}

#define GET_OP_CLASSES
#include "dialects/Train/IR/TrainOps.cpp.inc"
