//===- OptimizerOpInterface.cpp - What each optimizer is ------------------===//
//
// Each update op's answers to the optimizer interface: its state slots, its
// hyperparameters, how its update is built, whether it shards elementwise;
// and the one table from --optimizer's kinds to those ops.
//
//===----------------------------------------------------------------------===//

#include "dialects/Train/IR/OptimizerOpInterface.h"

#include "dialects/Train/IR/TrainOps.h"

using namespace mlir;
using namespace mlir::cleave;
using namespace mlir::cleave::train;

#include "dialects/Train/IR/OptimizerOpInterface.cpp.inc"

namespace {
template <typename Op> OptimizerSpec specOf() {
  return {Op::getOperationName(), Op::getStateSlots(),
          Op::getOwnHyperparameters(), Op::shardsElementwise(),
          &Op::buildUpdate};
}
} // namespace

OptimizerSpec train::getOptimizerSpec(OptimizerKind kind) {
  switch (kind) {
  case OptimizerKind::sgd:
    return specOf<SgdOp>();
  case OptimizerKind::momentum:
  case OptimizerKind::nesterov:
    return specOf<MomentumOp>();
  case OptimizerKind::adam:
  case OptimizerKind::adamw:
    return specOf<AdamOp>();
  case OptimizerKind::rmsprop:
    return specOf<RmspropOp>();
  case OptimizerKind::adagrad:
    return specOf<AdagradOp>();
  case OptimizerKind::lamb:
    return specOf<LambOp>();
  case OptimizerKind::lars:
    return specOf<LarsOp>();
  }
  llvm_unreachable("unknown optimizer kind");
}

//===- train.sgd ----------------------------------------------------------===//

ArrayRef<StringRef> SgdOp::getStateSlots() { return {}; }
ArrayRef<StringRef> SgdOp::getOwnHyperparameters() { return {}; }
bool SgdOp::shardsElementwise() { return true; }
SmallVector<Value> SgdOp::buildUpdate(OpBuilder &b, Location loc,
                                      const OptimizerUpdate &u) {
  return {SgdOp::create(b, loc, u.param, u.grad, u.hyper("lr"),
                        u.hyper("weight_decay"))};
}

//===- train.momentum -----------------------------------------------------===//

ArrayRef<StringRef> MomentumOp::getStateSlots() {
  static const StringRef slots[] = {"momentum_buffer"};
  return slots;
}
ArrayRef<StringRef> MomentumOp::getOwnHyperparameters() {
  static const StringRef hypers[] = {"momentum"};
  return hypers;
}
bool MomentumOp::shardsElementwise() { return true; }
SmallVector<Value> MomentumOp::buildUpdate(OpBuilder &b, Location loc,
                                           const OptimizerUpdate &u) {
  auto op = MomentumOp::create(
      b, loc, u.param, u.grad, u.state[0], u.hyper("lr"), u.hyper("momentum"),
      u.hyper("weight_decay"), u.kind == OptimizerKind::nesterov);
  return {op.getNewParam(), op.getNewBuf()};
}

//===- train.adam ---------------------------------------------------------===//

ArrayRef<StringRef> AdamOp::getStateSlots() {
  static const StringRef slots[] = {"exp_avg", "exp_avg_sq"};
  return slots;
}
ArrayRef<StringRef> AdamOp::getOwnHyperparameters() {
  static const StringRef hypers[] = {"beta1", "beta2", "eps"};
  return hypers;
}
bool AdamOp::shardsElementwise() { return true; }
SmallVector<Value> AdamOp::buildUpdate(OpBuilder &b, Location loc,
                                       const OptimizerUpdate &u) {
  auto op = AdamOp::create(
      b, loc, u.param, u.grad, u.state[0], u.state[1], u.step, u.hyper("lr"),
      u.hyper("beta1"), u.hyper("beta2"), u.hyper("eps"),
      u.hyper("weight_decay"), u.kind == OptimizerKind::adamw);
  return {op.getNewParam(), op.getNewM(), op.getNewV()};
}

//===- train.rmsprop ------------------------------------------------------===//

ArrayRef<StringRef> RmspropOp::getStateSlots() {
  static const StringRef slots[] = {"square_avg"};
  return slots;
}
ArrayRef<StringRef> RmspropOp::getOwnHyperparameters() {
  static const StringRef hypers[] = {"alpha", "eps"};
  return hypers;
}
bool RmspropOp::shardsElementwise() { return true; }
SmallVector<Value> RmspropOp::buildUpdate(OpBuilder &b, Location loc,
                                          const OptimizerUpdate &u) {
  auto op = RmspropOp::create(b, loc, u.param, u.grad, u.state[0],
                              u.hyper("lr"), u.hyper("alpha"), u.hyper("eps"),
                              u.hyper("weight_decay"));
  return {op.getNewParam(), op.getNewSquareAvg()};
}

//===- train.adagrad ------------------------------------------------------===//

ArrayRef<StringRef> AdagradOp::getStateSlots() {
  static const StringRef slots[] = {"sum"};
  return slots;
}
ArrayRef<StringRef> AdagradOp::getOwnHyperparameters() {
  static const StringRef hypers[] = {"lr_decay", "eps"};
  return hypers;
}
bool AdagradOp::shardsElementwise() { return true; }
SmallVector<Value> AdagradOp::buildUpdate(OpBuilder &b, Location loc,
                                          const OptimizerUpdate &u) {
  auto op = AdagradOp::create(b, loc, u.param, u.grad, u.state[0], u.step,
                              u.hyper("lr"), u.hyper("lr_decay"),
                              u.hyper("eps"), u.hyper("weight_decay"));
  return {op.getNewParam(), op.getNewSum()};
}

//===- train.lamb ---------------------------------------------------------===//

ArrayRef<StringRef> LambOp::getStateSlots() {
  static const StringRef slots[] = {"exp_avg", "exp_avg_sq"};
  return slots;
}
ArrayRef<StringRef> LambOp::getOwnHyperparameters() {
  static const StringRef hypers[] = {"beta1", "beta2", "eps"};
  return hypers;
}
// The layer-wise trust ratio takes norms of the whole parameter.
bool LambOp::shardsElementwise() { return false; }
SmallVector<Value> LambOp::buildUpdate(OpBuilder &b, Location loc,
                                       const OptimizerUpdate &u) {
  auto op = LambOp::create(b, loc, u.param, u.grad, u.state[0], u.state[1],
                           u.step, u.hyper("lr"), u.hyper("beta1"),
                           u.hyper("beta2"), u.hyper("eps"),
                           u.hyper("weight_decay"), u.excludedFromAdaptation);
  return {op.getNewParam(), op.getNewM(), op.getNewV()};
}

//===- train.lars ---------------------------------------------------------===//

ArrayRef<StringRef> LarsOp::getStateSlots() {
  static const StringRef slots[] = {"momentum_buffer"};
  return slots;
}
ArrayRef<StringRef> LarsOp::getOwnHyperparameters() {
  static const StringRef hypers[] = {"momentum", "eta"};
  return hypers;
}
// The layer-wise trust ratio takes norms of the whole parameter.
bool LarsOp::shardsElementwise() { return false; }
SmallVector<Value> LarsOp::buildUpdate(OpBuilder &b, Location loc,
                                       const OptimizerUpdate &u) {
  auto op = LarsOp::create(b, loc, u.param, u.grad, u.state[0], u.hyper("lr"),
                           u.hyper("momentum"), u.hyper("eta"),
                           u.hyper("weight_decay"), u.excludedFromAdaptation);
  return {op.getNewParam(), op.getNewBuf()};
}
