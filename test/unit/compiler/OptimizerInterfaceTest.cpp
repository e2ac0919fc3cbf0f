//===- OptimizerInterfaceTest.cpp - Every optimizer kind through its op ---===//
//
// The optimizer interface (docs/design/optimizer-interface.md) is what
// cleave-build-train-step, cleave-split-step and the options know of an
// optimizer: for every --optimizer kind, the op its spec names implements
// it, the update it builds verifies and returns the new parameter and one
// new value per state slot (each of the parameter's type), and what the
// spec says of sharding is what the op says.
//
//===----------------------------------------------------------------------===//

#include "TestSupport.h"

#include "dialects/Train/IR/TrainOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace mlir::cleave;

namespace {

TEST(OptimizerInterface, EveryKindBuildsItsUpdateThroughItsOp) {
  std::unique_ptr<MLIRContext> ctx = test::makeContext();
  ctx->getOrLoadDialect<train::TrainDialect>();
  ctx->getOrLoadDialect<func::FuncDialect>();
  OpBuilder b(ctx.get());
  Location loc = b.getUnknownLoc();
  auto param = RankedTensorType::get({4, 3}, b.getF32Type());
  auto scalar = RankedTensorType::get({}, b.getF32Type());
  auto counter = RankedTensorType::get({}, b.getI64Type());
  for (uint32_t k = 0; k <= train::getMaxEnumValForOptimizerKind(); ++k) {
    auto kind = train::symbolizeOptimizerKind(k);
    ASSERT_TRUE(kind);
    SCOPED_TRACE(train::stringifyOptimizerKind(*kind).str());
    train::OptimizerSpec spec = train::getOptimizerSpec(*kind);
    std::optional<RegisteredOperationName> op =
        RegisteredOperationName::lookup(spec.opName, ctx.get());
    ASSERT_TRUE(op) << spec.opName.str();
    EXPECT_TRUE(op->hasInterface<train::OptimizerOpInterface>());

    // A function taking the parameter, gradient, state, step and every
    // hyperparameter, whose body is the update.
    SmallVector<StringRef> hypers = {"lr", "weight_decay"};
    hypers.append(spec.ownHyperparameters.begin(),
                  spec.ownHyperparameters.end());
    SmallVector<Type> args(2 + spec.stateSlots.size(), param);
    args.push_back(counter);
    args.append(hypers.size(), scalar);
    OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
    b.setInsertionPointToEnd(module->getBody());
    auto f =
        func::FuncOp::create(b, loc, "update", b.getFunctionType(args, {}));
    Block *body = f.addEntryBlock();
    b.setInsertionPointToEnd(body);
    auto hyper = [&](StringRef name) -> Value {
      for (auto [i, h] : llvm::enumerate(hypers))
        if (h == name)
          return body->getArgument(3 + spec.stateSlots.size() + i);
      ADD_FAILURE() << "the update asked for hyperparameter '" << name.str()
                    << "', which its op does not list";
      return body->getArgument(3 + spec.stateSlots.size());
    };
    train::OptimizerUpdate update{
        body->getArgument(0),
        body->getArgument(1),
        body->getArguments().slice(2, spec.stateSlots.size()),
        body->getArgument(2 + spec.stateSlots.size()),
        hyper,
        *kind,
        /*excludedFromAdaptation=*/false};
    SmallVector<Value> updated = spec.buildUpdate(b, loc, update);
    func::ReturnOp::create(b, loc);
    ASSERT_EQ(updated.size(), 1 + spec.stateSlots.size());
    for (Value v : updated)
      EXPECT_EQ(v.getType(), Type(param));
    ASSERT_TRUE(succeeded(verify(*module)));

    Operation *built = updated[0].getDefiningOp();
    ASSERT_TRUE(built);
    EXPECT_EQ(built->getName().getStringRef(), spec.opName);
    auto iface = cast<train::OptimizerOpInterface>(built);
    EXPECT_EQ(iface.shardsElementwise(), spec.shardsElementwise);
    EXPECT_EQ(iface.getStateSlots().size(), spec.stateSlots.size());
    // The layer-wise ones alone need whole parameters.
    EXPECT_EQ(spec.shardsElementwise, *kind != train::OptimizerKind::lamb &&
                                          *kind != train::OptimizerKind::lars);
  }
}

} // namespace
