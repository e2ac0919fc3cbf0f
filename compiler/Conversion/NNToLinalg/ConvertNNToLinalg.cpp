//===- ConvertNNToLinalg.cpp - The nn-to-linalg lowering pass -------------===//
//
// Drives the lowering patterns with dialect conversion, so that anything left
// unlowered is reported with the op's location.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/NNToLinalg/Patterns.h"
#include "compiler/Conversion/Passes.h"
#include "dialects/NN/IR/NNDialect.h"
#include "dialects/NN/IR/NNOps.h"
#include "dialects/Train/IR/TrainOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir::cleave {
#define GEN_PASS_DEF_CLEAVECONVERTNNTOLINALG
#include "compiler/Conversion/Passes.h.inc"
} // namespace mlir::cleave

using namespace mlir;
using namespace mlir::cleave;

namespace {
/// Records on each entry-point input used as class labels or embedding
/// indices the bound the lowering clamps it to (see the pass description).
void annotateIndexBounds(func::FuncOp f) {
  if (f.isExternal())
    return;
  auto bound = [](Value v, Operation *user) -> std::optional<int64_t> {
    if (auto ce = dyn_cast<nn::CrossEntropyOp>(user);
        ce && ce.getLabels() == v)
      return cast<RankedTensorType>(ce.getLogits().getType()).getShape().back();
    if (auto e = dyn_cast<nn::EmbeddingOp>(user); e && e.getIndices() == v)
      return cast<RankedTensorType>(e.getTable().getType()).getShape().front();
    return std::nullopt;
  };
  for (BlockArgument arg : f.getArguments()) {
    if (!f.getArgAttr(arg.getArgNumber(), train::TrainDialect::kInputAttr))
      continue;
    std::optional<int64_t> least;
    // Reshapes keep the values (token labels are folded into rows before
    // their cross-entropy): follow them.
    SmallVector<Value> values = {arg};
    while (!values.empty()) {
      Value v = values.pop_back_val();
      for (Operation *user : v.getUsers()) {
        if (isa<nn::ReshapeOp, nn::FlattenOp>(user)) {
          values.push_back(user->getResult(0));
          continue;
        }
        if (std::optional<int64_t> b = bound(v, user);
            b && !ShapedType::isDynamic(*b))
          least = least ? std::min(*least, *b) : *b;
      }
    }
    if (least)
      f.setArgAttr(arg.getArgNumber(), train::TrainDialect::kIndexBoundAttr,
                   IntegerAttr::get(IntegerType::get(f.getContext(), 64),
                                    *least));
  }
}

struct ConvertNNToLinalgPass
    : cleave::impl::CleaveConvertNNToLinalgBase<ConvertNNToLinalgPass> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    for (auto f : getOperation().getOps<func::FuncOp>())
      annotateIndexBounds(f);
    if (failed(checkKernelOperands(getOperation())))
      return signalPassFailure();
    ConversionTarget target(*ctx);
    target.addLegalDialect<linalg::LinalgDialect, tensor::TensorDialect,
                           arith::ArithDialect, math::MathDialect,
                           scf::SCFDialect, rt::RtDialect, func::FuncDialect>();
    target.addIllegalDialect<nn::NNDialect>();
    // Every optimizer update (the ops of the optimizer interface) becomes
    // loops; so do these.
    target.addDynamicallyLegalDialect<train::TrainDialect>(
        [](Operation *op) { return !isa<train::OptimizerOpInterface>(op); });
    target.addIllegalOp<train::ClipByGlobalNormOp, train::CheckFiniteOp,
                        train::CrossRankReduceOp, train::ReduceScatterOp,
                        train::AllGatherOp, train::ShardOp,
                        train::WindowSumOp>();
    target.addLegalOp<train::GlobalOp, train::LoadOp, train::StoreOp,
                      train::AccumulateOp>();
    RewritePatternSet patterns(ctx);
    populateElementwisePatterns(patterns);
    populateShapePatterns(patterns);
    populateGatherPatterns(patterns);
    populateReductionPatterns(patterns);
    populateKernelPatterns(patterns);
    populateTrainPatterns(patterns);
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
