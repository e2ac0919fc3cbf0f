//===- NNToLinalg.cpp - The nn-to-linalg lowering pass --------------------===//
//
// Drives the lowering patterns with dialect conversion, so that anything left
// unlowered is reported with the op's location.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/NNToLinalg/Patterns.h"
#include "compiler/Conversion/Passes.h"
#include "dialects/NN/IR/NNDialect.h"
#include "dialects/Train/IR/TrainOps.h"

#include "mlir/Transforms/DialectConversion.h"

namespace mlir::cleave {
#define GEN_PASS_DEF_CLEAVECONVERTNNTOLINALG
#include "compiler/Conversion/Passes.h.inc"
} // namespace mlir::cleave

using namespace mlir;
using namespace mlir::cleave;

namespace {
struct ConvertNNToLinalgPass
    : cleave::impl::CleaveConvertNNToLinalgBase<ConvertNNToLinalgPass> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    ConversionTarget target(*ctx);
    target.addLegalDialect<linalg::LinalgDialect, tensor::TensorDialect,
                           arith::ArithDialect, math::MathDialect,
                           scf::SCFDialect, rt::RtDialect, func::FuncDialect>();
    target.addIllegalDialect<nn::NNDialect>();
    target.addIllegalOp<train::SgdOp, train::MomentumOp, train::AdamOp,
                        train::ClipByGlobalNormOp, train::CrossRankReduceOp,
                        train::ReduceScatterOp, train::AllGatherOp,
                        train::ShardOp, train::WindowSumOp>();
    target.addLegalOp<train::GlobalOp, train::LoadOp, train::StoreOp,
                      train::AccumulateOp>();
    RewritePatternSet patterns(ctx);
    populateElementwisePatterns(patterns);
    populateShapePatterns(patterns);
    populateReductionPatterns(patterns);
    populateKernelPatterns(patterns);
    populateTrainPatterns(patterns);
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
