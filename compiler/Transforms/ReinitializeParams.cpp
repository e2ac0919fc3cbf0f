//===- ReinitializeParams.cpp - Fresh draws instead of embedded values ----===//
//
// An exported model carries its parameters' values; one exported before
// training holds only a random draw, which the artifact would embed byte for
// byte. This pass replaces such values by an initialiser the runtime draws,
// and keeps the constant ones (layer-norm scales, zeroed biases) constant.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/Passes.h"
#include "dialects/Train/IR/TrainDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::cleave {
#define GEN_PASS_DEF_CLEAVEREINITIALIZEPARAMS
#include "compiler/Transforms/Passes.h.inc"
} // namespace mlir::cleave

using namespace mlir;
using namespace mlir::cleave;
using train::InitializerAttr;
using train::InitKind;
using train::TrainDialect;

namespace {

/// The initialiser that replaces `values` (finite, not empty): their common
/// value if every element is equal, else a normal draw of standard
/// deviation `std`.
InitializerAttr freshInitializer(MLIRContext *ctx, DenseElementsAttr values,
                                 double std) {
  auto get = [&](InitKind kind, ArrayRef<double> params) {
    SmallVector<APFloat> p;
    for (double v : params)
      p.push_back(APFloat(v));
    return InitializerAttr::get(ctx, kind, p);
  };
  auto all = values.getValues<APFloat>();
  APFloat first = *all.begin();
  if (values.isSplat() ||
      llvm::all_of(all, [&](const APFloat &v) { return v == first; })) {
    double c = first.convertToDouble();
    if (c == 0 && !first.isNegative())
      return get(InitKind::zeros, {});
    if (c == 1)
      return get(InitKind::ones, {});
    return get(InitKind::constant, {c});
  }
  return get(InitKind::normal, {0.0, std});
}

struct ReinitializeParamsPass
    : cleave::impl::CleaveReinitializeParamsBase<ReinitializeParamsPass> {
  using CleaveReinitializeParamsBase::CleaveReinitializeParamsBase;

  void runOnOperation() override {
    if (normalStd == 0)
      return;
    if (!(normalStd > 0)) {
      getOperation().emitError("normal-std must be positive (0 keeps the "
                               "parameters' values), got ")
          << normalStd;
      return signalPassFailure();
    }
    auto f = getOperation().lookupSymbol<func::FuncOp>(function);
    if (!f) {
      getOperation().emitError("no model function @") << function;
      return signalPassFailure();
    }
    MLIRContext *ctx = &getContext();
    for (unsigned i = 0, e = f.getNumArguments(); i < e; ++i) {
      if (!f.getArgAttr(i, TrainDialect::kParamAttr))
        continue;
      auto values = dyn_cast_or_null<DenseElementsAttr>(
          f.getArgAttr(i, TrainDialect::kInitAttr));
      // An empty tensor has nothing to draw, and a constant NaN or infinity
      // has no initialiser the manifest can spell: both keep their values.
      if (!values || !isa<FloatType>(values.getElementType()) ||
          values.getNumElements() == 0 ||
          (values.isSplat() && !values.getSplatValue<APFloat>().isFinite()))
        continue;
      f.setArgAttr(i, TrainDialect::kInitAttr,
                   freshInitializer(ctx, values, normalStd));
    }
  }
};

} // namespace
