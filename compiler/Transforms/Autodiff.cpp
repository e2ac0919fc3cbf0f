//===- Autodiff.cpp - Reverse-mode automatic differentiation --------------===//
//
// One generic reverse sweep over DifferentiableOpInterface: every op builds
// its own vector-Jacobian product, this pass decides which ones are needed,
// orders them and sums cotangents of values used more than once.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/Passes.h"
#include "compiler/Transforms/Utils.h"
#include "dialects/NN/IR/NNBuilders.h"
#include "dialects/NN/IR/NNOps.h"
#include "dialects/Train/IR/TrainDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/DenseSet.h"

namespace mlir::cleave {
#define GEN_PASS_DEF_CLEAVEAUTODIFF
#include "compiler/Transforms/Passes.h.inc"
} // namespace mlir::cleave

using namespace mlir;
using namespace mlir::cleave;
using train::TrainDialect;

namespace {

/// Differentiates `grad` (a copy of the source function) in place.
class ReverseSweep {
public:
  /// `grad` is a copy of `source`; diagnostics name the source.
  ReverseSweep(func::FuncOp grad, StringRef source)
      : func(grad), source(source) {}

  LogicalResult run() {
    Block &body = func.getBody().front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    if (ret.getNumOperands() == 0)
      return func.emitError("@") << source
                                 << " returns nothing to differentiate";
    Value loss = ret.getOperand(0);
    auto lossType = dyn_cast<RankedTensorType>(loss.getType());
    if (!lossType || lossType.getRank() != 0 ||
        !isa<FloatType>(lossType.getElementType()))
      return func.emitError("the first result of @")
             << source
             << " must be a scalar loss (a rank-0 float tensor), got "
             << loss.getType();

    for (BlockArgument arg : func.getArguments()) {
      if (!func.getArgAttr(arg.getArgNumber(), TrainDialect::kParamAttr))
        continue;
      // Cotangents (and the zero gradient of an unused parameter) are float
      // tensors of the argument's type.
      auto type = dyn_cast<RankedTensorType>(arg.getType());
      if (!type || !isa<FloatType>(type.getElementType()))
        return func.emitError("argument #")
               << arg.getArgNumber() << " of @" << source
               << " is marked train.param but is not a float tensor: "
               << arg.getType();
      wrt.push_back(arg);
    }
    if (wrt.empty())
      return func.emitError("@") << source
                                 << " has no argument marked train.param";

    markVaried();
    markUseful(loss);

    OpBuilder b(ret);
    cotangents[loss] = nn::splat(b, ret.getLoc(), 1.0,
                                 lossType.getElementType());
    SmallVector<Operation *> ops;
    for (Operation &op : body.without_terminator())
      ops.push_back(&op);
    for (Operation *op : llvm::reverse(ops))
      if (isActive(op) && failed(differentiate(b, op)))
        return failure();

    SmallVector<Value> results(ret.getOperands());
    SmallVector<DictionaryAttr> resultAttrs;
    for (unsigned i = 0; i < ret.getNumOperands(); ++i)
      resultAttrs.push_back(func.getResultAttrDict(i));
    for (BlockArgument arg : wrt) {
      Value g = cotangents.lookup(arg);
      if (!g)
        g = nn::splatLike(b, ret.getLoc(), 0.0, arg);
      results.push_back(g);
      auto name = func.getArgAttr(arg.getArgNumber(), TrainDialect::kParamAttr);
      resultAttrs.push_back(DictionaryAttr::get(
          func.getContext(),
          {b.getNamedAttr(TrainDialect::kGradOfAttr, name)}));
    }
    ret->setOperands(results);
    func.setFunctionType(FunctionType::get(
        func.getContext(), func.getArgumentTypes(), ValueRange(results).getTypes()));
    func.setAllResultAttrs(resultAttrs);
    return success();
  }

private:
  /// Whether `op`'s results are constants whatever its operands. A
  /// comparison's mask, a rounded value and a cast from or to an integer
  /// type are piecewise constant: their derivative is 0 wherever it exists,
  /// so they do not vary with the parameters; nor do the positions nn.iota
  /// reads from its source's shape.
  static bool endsDependence(Operation &op) {
    if (auto cast = dyn_cast<nn::CastOp>(op))
      return !cast.isFloatToFloat();
    return isa<nn::CompareOp, nn::FloorOp, nn::CeilOp, nn::RoundOp, nn::IotaOp>(
        op);
  }

  /// Values that depend on a differentiated argument. Integer tensors never
  /// do: they have no tangent space.
  void markVaried() {
    for (BlockArgument a : wrt)
      varied.insert(a);
    for (Operation &op : func.getBody().front())
      if (!endsDependence(op) && llvm::any_of(op.getOperands(), [&](Value v) {
            return varied.contains(v);
          }))
        for (Value r : op.getResults())
          if (isa<FloatType>(getElementTypeOrSelf(r.getType())))
            varied.insert(r);
  }

  /// Values the loss depends on.
  void markUseful(Value loss) {
    useful.insert(loss);
    Block &body = func.getBody().front();
    for (Operation &op : llvm::reverse(body.without_terminator()))
      if (llvm::any_of(op.getResults(),
                       [&](Value v) { return useful.contains(v); }))
        for (Value v : op.getOperands())
          useful.insert(v);
  }

  bool isActive(Operation *op) {
    return llvm::any_of(op->getResults(), [&](Value r) {
      return varied.contains(r) && useful.contains(r);
    });
  }

  LogicalResult differentiate(OpBuilder &b, Operation *op) {
    SmallVector<Value> dys;
    bool any = false;
    for (Value r : op->getResults()) {
      dys.push_back(cotangents.lookup(r));
      any |= static_cast<bool>(dys.back());
    }
    if (!any)
      return success();
    auto diff = dyn_cast<nn::DifferentiableOpInterface>(op);
    if (!diff)
      return op->emitOpError("is on the path from a train.param argument to "
                             "the loss but has no gradient "
                             "(DifferentiableOpInterface)");
    SmallVector<bool> needed;
    for (auto [i, v] : llvm::enumerate(op->getOperands())) {
      bool active = varied.contains(v) && useful.contains(v);
      if (active && !diff.isDifferentiableOperand(i))
        return op->emitOpError("operand #")
               << i << " depends on a train.param argument but is not "
               << "differentiable";
      needed.push_back(active);
    }
    // VJPs build ops whose shapes are attributes (broadcast_to, reshape):
    // they need the sizes of every dimension.
    SmallVector<Type> types(op->getOperandTypes());
    llvm::append_range(types, op->getResultTypes());
    for (Type type : types)
      if (auto t = dyn_cast<ShapedType>(type); t && !t.hasStaticShape())
        return op->emitOpError("has the dynamic type ")
               << t << ": cleave-autodiff needs static shapes; specialise the "
               << "batch dimension first (micro-batch=B in cleave-attach-loss "
               << "or the training pipeline)";
    SmallVector<Value> grads;
    if (failed(diff.buildVJP(b, dys, needed, grads)))
      return failure();
    if (grads.size() != op->getNumOperands())
      return op->emitOpError("VJP returned ")
             << grads.size() << " cotangents for " << op->getNumOperands()
             << " operands";
    for (auto [i, v, g, need] :
         llvm::enumerate(op->getOperands(), grads, needed)) {
      if (!need)
        continue;
      if (!g)
        return op->emitOpError("VJP left a needed cotangent empty");
      // A cotangent may be more or less static than its value, never of
      // another shape: that would be a bug in the op's VJP.
      if (getElementTypeOrSelf(g) != getElementTypeOrSelf(v) ||
          failed(verifyCompatibleShape(g.getType(), v.getType())))
        return op->emitOpError("VJP returned a cotangent of type ")
               << g.getType() << " for operand #" << i << " of type "
               << v.getType();
      Value &acc = cotangents[v];
      acc = acc ? Value(nn::AddOp::create(b, op->getLoc(), acc, g)) : g;
    }
    return success();
  }

  func::FuncOp func;
  StringRef source;
  SmallVector<BlockArgument> wrt;
  llvm::DenseSet<Value> varied, useful;
  llvm::DenseMap<Value, Value> cotangents;
};

struct AutodiffPass : cleave::impl::CleaveAutodiffBase<AutodiffPass> {
  using CleaveAutodiffBase::CleaveAutodiffBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> targets;
    for (auto f : module.getOps<func::FuncOp>()) {
      if (!function.empty()) {
        if (f.getSymName() == function)
          targets.push_back(f);
        continue;
      }
      if (f.isExternal() || f->hasAttr(TrainDialect::kGradientOfAttr) ||
          f.getNumResults() == 0)
        continue;
      auto first = dyn_cast<RankedTensorType>(f.getResultTypes()[0]);
      if (!first || first.getRank() != 0)
        continue;
      for (unsigned i = 0; i < f.getNumArguments(); ++i)
        if (f.getArgAttr(i, TrainDialect::kParamAttr)) {
          targets.push_back(f);
          break;
        }
    }
    if (!function.empty() && targets.empty()) {
      module.emitError("no function named @") << function;
      return signalPassFailure();
    }
    SymbolTable symbols(module);
    for (func::FuncOp f : targets) {
      if (failed(requireStraightLine(f, "autodiff")))
        return signalPassFailure();
      auto grad = cast<func::FuncOp>(f->clone());
      grad.setSymName((f.getSymName() + "_grad").str());
      grad->setAttr(TrainDialect::kGradientOfAttr, FlatSymbolRefAttr::get(f));
      symbols.insert(grad, std::next(Block::iterator(f)));
      if (failed(ReverseSweep(grad, f.getSymName()).run()))
        return signalPassFailure();
    }
  }
};

} // namespace
